//! Counting: one recorder used by both engines, and the result type every report reads.
//! Counts are exact integers; latency lives in HDR histograms; everything merges exactly.

pub mod target;

pub use target::TargetStats;
