//! The raw record of one shard run, written beside its reports as `shard.json`: exactly
//! what a merge needs and nothing a merge would have to guess. Each config's client
//! recorder whole (per-second counters, HDR histograms in the standard V2 form), the
//! counts its target took itself, which shard of how many ran, and the experiment it
//! belongs to (scenario file hash, seed, duration, configs), so that dumps of different
//! experiments are refused rather than added. reports/README.md documents the format.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Shard;
use crate::metrics::{Engine, Recorder, RunMeta, TargetStats};

/// The file name of a dump in a run directory.
pub const FILE: &str = "shard.json";
/// What `format` holds, so a stray JSON file is not taken for a dump.
pub const FORMAT: &str = "stormrig-shard";
/// The format version this build writes and reads. A change that a reader of the previous
/// version would misread bumps it.
pub const VERSION: u32 = 1;

/// One shard run's raw record; `C` is what is read of each config: everything
/// ([`ConfigDump`]), or only its name ([`ConfigName`], see [`Head`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dump<C = ConfigDump> {
    pub format: String,
    pub version: u32,
    pub stormrig_version: String,
    /// The scenario's name, its file as given to `run`, and the file's SHA-256.
    pub scenario: String,
    pub scenario_path: PathBuf,
    pub scenario_sha256: String,
    /// The run's seed and planned load duration (after `--seed` and `--duration`).
    pub seed: u64,
    pub duration: Duration,
    /// Client instances per config: the fleet the shards split.
    pub clients: u32,
    pub shard: Shard,
    /// The common start the shards waited for (`--start-at`), RFC 3339.
    pub start_at: Option<String>,
    pub engine: Engine,
    pub partial: bool,
    /// Offered load actually run, and how long requests drained after it (live).
    pub load_ran: Duration,
    pub drain_s: Option<f64>,
    /// When and where this shard ran; its `started_at` is the shard's second 0.
    pub run: Option<RunMeta>,
    /// Every config the run held, in the scenario's order.
    pub configs: Vec<C>,
}

/// A dump read without its counts: enough to check that dumps belong together before any
/// histogram is decoded, so a merge holds one shard's counts in memory at a time.
pub type Head = Dump<ConfigName>;

/// A config of a dump, by name only.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigName {
    pub name: String,
}

/// One config's counts in one shard.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigDump {
    pub name: String,
    pub recorder: Recorder,
    pub target: TargetStats,
}

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("{}: no {FILE} (not the directory of a shard run: `stormrig run --shard I/N` writes it)", .0.display())]
    Missing(PathBuf),
    #[error("{}: {error}", .path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: not a stormrig shard dump: {message}", .path.display())]
    Malformed { path: PathBuf, message: String },
    #[error("{}: version: {found}; this stormrig reads version {VERSION}", .path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("{}: not a regular file ({kind}); a shard run writes {FILE} as one", .path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{}: size: more than {MAX_BYTES} bytes (1 GiB); no shard run writes a dump that large", .path.display())]
    TooLarge { path: PathBuf },
}

/// The largest `shard.json` read: 1 GiB. A dump holds a few hundred bytes per config per
/// second (a 24 h shard of 16 configs is well under it), and it is read whole, so a larger
/// file is refused before a byte of it is read rather than taking the merge's memory.
pub const MAX_BYTES: u64 = crate::input::Kind::ShardDump.max_bytes();

/// Reads `path` through the one bounded reader ([`crate::input`]): a FIFO would block the
/// merge forever and a device (`/dev/zero`) never ends, so neither is opened for reading.
fn read_bounded(path: &Path) -> Result<Vec<u8>, DumpError> {
    use crate::input::{self, InputError};
    input::read(path, input::Kind::ShardDump).map_err(|e| match e {
        InputError::Io { path, error } => DumpError::Io { path, error },
        InputError::NotAFile { path, kind } => DumpError::NotAFile { path, kind },
        InputError::TooLarge { path, .. } => DumpError::TooLarge { path },
    })
}

impl<C: Serialize + serde::de::DeserializeOwned> Dump<C> {
    /// The bytes of `shard.json` (compact JSON: a dump is read by programs).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a dump holds only serializable values")
    }

    /// Reads `dir/shard.json`.
    pub fn read(dir: &Path) -> Result<Dump<C>, DumpError> {
        let path = dir.join(FILE);
        let bytes = read_bounded(&path).map_err(|e| match e {
            DumpError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound => {
                DumpError::Missing(dir.to_path_buf())
            }
            e => e,
        })?;
        // The header first, so a dump of another version says so rather than failing on a
        // field it has no more.
        #[derive(Deserialize)]
        struct Header {
            format: String,
            version: u32,
        }
        let header: Header = serde_json::from_slice(&bytes).map_err(|e| DumpError::Malformed {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if header.format != FORMAT {
            return Err(DumpError::Malformed {
                path,
                message: format!("format is {:?}, not {FORMAT:?}", header.format),
            });
        }
        if header.version != VERSION {
            return Err(DumpError::Version {
                path,
                found: header.version,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| DumpError::Malformed {
            path,
            message: e.to_string(),
        })
    }
}
