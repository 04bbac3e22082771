//! Scale-out: one storm run by several processes (shards), each running whole client
//! instances of every config's fleet, and their results merged into the one result a single
//! process would have written.
//!
//! - [`spec`]: which instances, and so which arrivals of the seeded schedule, a shard runs;
//! - [`dump`]: the raw, mergeable record every shard run writes (`shard.json`);
//! - [`merge`]: the dumps of every shard into one [`crate::metrics::RunResult`];
//! - [`tally`]: the checks a shard's counts pass before they are added;
//! - [`k8s`]: Kubernetes manifests that run the shards as an Indexed Job and merge them.

pub mod dump;
pub mod k8s;
pub mod merge;
pub mod spec;
pub mod tally;

pub use dump::Dump;
pub use spec::{Shard, ShardError};
