//! Reports drawn from a [`crate::metrics::RunResult`]: data files (CSV, JSON), the HTML
//! page, the console summary, the table of figures, gates, JUnit XML and run-to-run diff.
//! Nothing here knows which engine produced the result.

pub mod diff;
pub mod figures;
pub mod files;
pub mod gates;
pub mod html;
pub mod junit;
pub mod recommend;
pub mod retrodiction;
pub mod text;
