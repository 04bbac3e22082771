//! Counting: one recorder used by both engines, and the result type every report reads.
//! Counts are exact integers; latency lives in HDR histograms; everything merges exactly.

pub mod classes;
pub mod degraded;
pub mod drain;
pub mod histogram_v2;
pub mod judge;
pub mod labels;
pub mod latency;
pub mod numbers;
pub mod pre_fault;
pub mod provider;
pub mod proxy_answered;
pub mod rate_limited;
pub mod recorder;
pub mod relayed_resets;
pub mod result;
pub mod runs;
pub mod series;
pub mod shed;
pub mod target;
pub mod target_counts;
pub mod verdict;

pub use classes::{ClassCounts, ClassEnding, ClassSummary};
pub use latency::Percentiles;
pub use proxy_answered::{ProxyAnswer, ProxyAnswered};
pub use recorder::{breaker_level, Recorder, RetryReason};
pub use relayed_resets::RelayedResets;
pub use result::{summarize, ConfigSummary, Engine, GateVerdict, RunResult, RunShape};
pub use result::{AttemptRow, LayerSummary, RunMeta, OVERLOAD_TOLERANCE};
pub use series::{FaultBand, SecondRow};
pub use shed::{ShedCounts, ShedReason};
pub use target::TargetStats;
