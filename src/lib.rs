//! stormrig: a load-test harness for retry storms.
//!
//! The crate is split so that the retry behaviour users compare is written once:
//! `policy` is a pure, sans-IO core (no tokio, no sockets, no wall clock, no global RNG) that
//! both engines drive: `live` on real loopback sockets and `sim` in virtual time. Both go
//! through the same `session` around every attempt, which feeds the same `metrics` recorder;
//! `report` draws CSV, JSON and HTML from its result without knowing which engine produced it.
//!
//! An item inside a private module says `pub(crate)`, not `pub`: `unreachable_pub` keeps the
//! surface a reader meets in the docs the surface the crate really offers.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod advice;
pub mod app;
pub mod bench;
pub mod calibrate;
// The flags' doc comments are clap's help texts, printed as written: `[[faults]]`,
// `faults[0].for` and `reports/<scenario>/` are what a user types, not links or tags.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
pub mod cli;
pub mod draws;
pub mod headers;
pub mod idempotency;
pub mod input;
pub mod live;
pub mod metrics;
pub mod plan;
pub mod policy;
pub mod report;
pub mod run_result;
pub mod scenario;
pub mod server;
pub mod session;
pub mod shard;
pub mod shed;
pub mod sim;
pub mod sweep;
pub mod tls;
