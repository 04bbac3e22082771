//! Reports drawn from a [`crate::metrics::RunResult`]: data files (CSV, JSON), the HTML
//! page, the console summary, gates, JUnit XML and run-to-run diff. Nothing here knows which
//! engine produced the result.

pub mod diff;
pub mod files;
pub mod gates;
pub mod html;
pub mod junit;
pub mod text;
