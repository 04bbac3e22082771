//! Reports drawn from a [`crate::metrics::RunResult`]: data files (CSV, JSON), the HTML
//! page, the console summary. Nothing here knows which engine produced the result.

pub mod files;
pub mod html;
