//! Scenario files: what a storm rehearsal offers, to what, with which faults, through which
//! retry configs. `model` is the file's shape; `load` validates it into a [`Scenario`] whose
//! errors name the file, line and field; `schedule` turns the load into seeded arrival times.

pub mod classes;
pub mod error;
pub mod grpc;
pub mod host;
pub mod limits;
pub mod load;
pub mod load_shape;
pub mod model;
pub mod provider;
pub mod quick;
pub mod recording;
pub mod schedule;
pub mod shape;
pub mod shedding;
pub mod source;
pub mod template;
pub mod timeline;
pub mod units;
pub mod validate;
pub mod wire;

pub use error::{ErrorKind, ScenarioError};
pub use load::{load, parse, parse_target, with_target_url};
pub use model::*;
pub use schedule::{arrivals, expected_count, Arrivals};
pub use source::locate;
pub use wire::{Protocol, Trust, Wire};

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// A validated scenario: every value has been checked for sense, and the load and faults are
/// typed so that a wrong combination of fields cannot be expressed any more.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    /// The file it came from (for messages and the report header).
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub duration: Duration,
    pub drain: Duration,
    pub load: Load,
    pub target: Target,
    pub faults: Vec<Fault>,
    pub topology: Vec<LayerSpec>,
    /// The retry configs to compare, still as written: the policy core resolves them.
    pub configs: Vec<ConfigEntry>,
    pub gates: Vec<String>,
    /// The config every other is judged against (`baseline = "NAME"`), when the scenario
    /// names one; otherwise the config named `no-retry`, if any.
    pub baseline: Option<String>,
    /// The providers the built-in target hosts (none: it is a plain service).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<provider::Provider>,
    /// What a recording's policies did, said at `check`: the retries a trace folded, what
    /// the policies of `series` faults skipped; (field, what).
    #[serde(skip)]
    pub recording_notes: Vec<(String, String)>,
}

/// One retry config as written in the scenario, with where it was written.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigEntry {
    /// The config's `name` (or its preset's name when it has none).
    pub name: String,
    /// The table as written (`name`, `preset`, overrides).
    pub table: toml::Table,
    /// Dotted path in the file, e.g. `configs[2]`, so later errors can be located.
    pub field_path: String,
    /// 1-based line of the table in the file.
    pub line: usize,
}

/// What finally receives the traffic, resolved.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Target {
    /// stormrig's own hyper server with a service model.
    Builtin {
        name: String,
        model: ServiceModel,
        dedup: Option<DedupSpec>,
        #[serde(skip_serializing_if = "Wire::is_default")]
        wire: Wire,
    },
    /// A real HTTP/1.1 server behind stormrig's counting fault proxy.
    Url {
        url: String,
        host: String,
        port: u16,
        dedup: Option<DedupSpec>,
        /// The simulator's stand-in for the real server (`model = NAME` beside `url`, a
        /// file of `targets/`, overlaid by `service`). The live engine measures the real
        /// server and does not use it.
        model: Option<ServiceModel>,
        #[serde(skip_serializing_if = "Wire::is_default")]
        wire: Wire,
        /// How long the proxy waits for the server's complete answer before it answers 504
        /// itself (`None`: the proxy's default, 30 s).
        #[serde(
            skip_serializing_if = "Option::is_none",
            with = "crate::scenario::units::duration::option"
        )]
        upstream_timeout: Option<std::time::Duration>,
    },
}

impl Target {
    /// How the traffic travels to it.
    pub fn wire(&self) -> &Wire {
        match self {
            Target::Builtin { wire, .. } | Target::Url { wire, .. } => wire,
        }
    }
}
