//! The run directory's data files: `summary.json` (the whole [`RunResult`] but its
//! per-second time series), `summary.csv` (a row per config) and `timeseries.csv` (a row per
//! config per second). Writing goes through a temporary name and a rename, so a reader never
//! sees a half-written file presented as complete; a temporary file is removed when its write
//! fails (a full disk leaves nothing behind).
//!
//! Every CSV cell goes through [`safe_cell`], so a name from the user's file is never run
//! as a formula by the spreadsheet it is opened in.
//!
//! `summary.json` marks a finished run directory: [`prepare_dir`] removes a stale one before
//! anything else is written, and [`write_summary`] is the last write of a run. A directory
//! without it is unfinished, and [`read_data`] says so.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::metrics::drain::DrainWindow;
use crate::metrics::{AttemptRow, ConfigSummary, RunResult, SecondRow};

pub const SUMMARY_JSON: &str = "summary.json";
pub const SUMMARY_CSV: &str = "summary.csv";
pub const TIMESERIES_CSV: &str = "timeseries.csv";
pub const ATTEMPTS_CSV: &str = "attempts.csv";

/// What can go wrong reading or writing run files; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    /// A file that parses but cannot be what a run wrote (garbage, or cut short).
    #[error("{}:{line}: {message}", path.display())]
    Damaged {
        path: PathBuf,
        line: u64,
        message: String,
    },
    /// A run directory's file refused by the bounded reader (not a regular file, too large).
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
}

/// A `summary.csv` row: the flat headline figures of one config.
#[derive(Debug, Serialize)]
struct SummaryRow<'a> {
    config: &'a str,
    upstream_requests: u64,
    attempts: u64,
    retries: u64,
    downstream_arrivals: u64,
    amplification: f64,
    amplification_bound: Option<f64>,
    peak_amplification_1s: f64,
    peak_concurrency: u64,
    client_peak_in_flight: u64,
    budget_refusals: u64,
    first_budget_refusal_s: Option<f64>,
    breaker_refusals: u64,
    useful_retries: u64,
    wasted_retries: u64,
    hedges_sent: u64,
    hedges_cancelled: u64,
    hedges_wasted: u64,
    rate_limited_sends: u64,
    rate_limit_wait_s: f64,
    rate_limit_wait_p99_ms: f64,
    bulkhead_rejections: u64,
    limiter_rejections: u64,
    successes: u64,
    failures: u64,
    dropped: u64,
    unfinished: u64,
    latency_p50_ms: f64,
    latency_p90_ms: f64,
    latency_p99_ms: f64,
    latency_p999_ms: f64,
    latency_max_ms: f64,
    success_latency_p50_ms: f64,
    success_latency_p99_ms: f64,
    failure_latency_p50_ms: f64,
    failure_latency_p99_ms: f64,
    recovered: Option<bool>,
    recovery_time_s: Option<f64>,
    overloaded: Option<bool>,
    pre_fault_offered_rps: Option<f64>,
    pre_fault_goodput_rps: Option<f64>,
    duplicate_executions: u64,
    executions: u64,
    extra_executions: u64,
    debited: u64,
    extra_debited: u64,
    dedup_replays: u64,
    dedup_conflicts: u64,
    dedup_mismatches: u64,
    /// The config's idempotency rules in words.
    idempotency_rules: &'a str,
    /// The budget's drain thresholds and drain times (empty without a budget).
    budget_threshold_transient: Option<f64>,
    budget_threshold_throttling: Option<f64>,
    budget_threshold_timeout: Option<f64>,
    budget_drain_start_s: Option<f64>,
    budget_empty_s: Option<f64>,
    budget_refilled_s: Option<f64>,
    budget_lowest_level_pct: Option<f64>,
    /// Fault windows whose observed failure rate was above a threshold / where the budget
    /// drained, as `start-end` seconds joined by spaces.
    budget_drain_predicted_windows: String,
    budget_drain_observed_windows: String,
    /// Attempts the fault proxy answered itself, and their reasons as `reason=N` joined by
    /// spaces (empty when none).
    proxy_answered: u64,
    proxy_answered_by_reason: String,
    /// Resets the proxy relayed from the service, over HTTP/1.1 and as HTTP/2 stream resets.
    relayed_resets: u64,
    relayed_stream_resets: u64,
}

impl<'a> From<&'a ConfigSummary> for SummaryRow<'a> {
    fn from(c: &'a ConfigSummary) -> Self {
        let b = c.budget.as_ref();
        SummaryRow {
            config: &c.name,
            upstream_requests: c.upstream_requests,
            attempts: c.attempts,
            retries: c.retries,
            downstream_arrivals: c.downstream_arrivals,
            amplification: c.amplification,
            amplification_bound: c.amplification_bound,
            peak_amplification_1s: c.peak_amplification_1s,
            peak_concurrency: c.peak_concurrency,
            client_peak_in_flight: c.client_peak_in_flight,
            budget_refusals: c.budget_refusals,
            first_budget_refusal_s: c.first_budget_refusal_s,
            breaker_refusals: c.breaker_refusals,
            useful_retries: c.useful_retries,
            wasted_retries: c.wasted_retries,
            hedges_sent: c.hedges_sent,
            hedges_cancelled: c.hedges_cancelled,
            hedges_wasted: c.hedges_wasted,
            rate_limited_sends: c.rate_limited_sends,
            rate_limit_wait_s: c.rate_limit_wait_s,
            rate_limit_wait_p99_ms: c.rate_limit_wait_ms.p99,
            bulkhead_rejections: c.bulkhead_rejections,
            limiter_rejections: c.limiter_rejections,
            successes: c.successes,
            failures: c.failures,
            dropped: c.dropped,
            unfinished: c.unfinished,
            latency_p50_ms: c.latency_ms.p50,
            latency_p90_ms: c.latency_ms.p90,
            latency_p99_ms: c.latency_ms.p99,
            latency_p999_ms: c.latency_ms.p999,
            latency_max_ms: c.latency_ms.max,
            success_latency_p50_ms: c.success_latency_ms.p50,
            success_latency_p99_ms: c.success_latency_ms.p99,
            failure_latency_p50_ms: c.failure_latency_ms.p50,
            failure_latency_p99_ms: c.failure_latency_ms.p99,
            recovered: c.recovered,
            recovery_time_s: c.recovery_time_s,
            overloaded: c.overloaded,
            pre_fault_offered_rps: c.pre_fault_offered_rps,
            pre_fault_goodput_rps: c.pre_fault_goodput_rps,
            duplicate_executions: c.duplicate_executions,
            executions: c.idempotency.executions,
            extra_executions: c.idempotency.extra_executions,
            debited: c.idempotency.debited,
            extra_debited: c.idempotency.extra_debited,
            dedup_replays: c.idempotency.dedup_replays,
            dedup_conflicts: c.idempotency.dedup_conflicts,
            dedup_mismatches: c.idempotency.dedup_mismatches,
            idempotency_rules: &c.idempotency_rules,
            budget_threshold_transient: b.and_then(|b| b.thresholds.transient),
            budget_threshold_throttling: b.and_then(|b| b.thresholds.throttling),
            budget_threshold_timeout: b.and_then(|b| b.thresholds.timeout),
            budget_drain_start_s: b.and_then(|b| b.drain_start_s),
            budget_empty_s: b.and_then(|b| b.empty_s),
            budget_refilled_s: b.and_then(|b| b.refilled_s),
            budget_lowest_level_pct: b.and_then(|b| b.lowest_level_pct),
            budget_drain_predicted_windows: windows(c, |w| w.drain_predicted),
            budget_drain_observed_windows: windows(c, |w| w.drain_observed),
            proxy_answered: c.proxy_answered.total(),
            proxy_answered_by_reason: c.proxy_answered.described(),
            relayed_resets: c.relayed_resets.reset,
            relayed_stream_resets: c.relayed_resets.stream_reset,
        }
    }
}

/// The budget's fault windows that `pick` selects, as `start-end` seconds.
fn windows(c: &ConfigSummary, pick: fn(&DrainWindow) -> bool) -> String {
    c.budget
        .iter()
        .flat_map(|b| &b.windows)
        .filter(|w| pick(w))
        .map(|w| format!("{}-{}", w.start_s, w.end_s))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes `bytes` to `dir/name` atomically (temporary file, flushed to disk, then rename).
/// On any failure the temporary file is removed and the error names the file.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), FilesError> {
    use std::io::Write;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    written.map_err(|source| {
        let _ = fs::remove_file(&tmp);
        FilesError::Io { path, source }
    })
}

/// Creates the run directory `dir` and unmarks it: a `summary.json` (and any temporary file)
/// left by an earlier run there is removed first, so it never vouches for new files.
pub fn prepare_dir(dir: &Path) -> Result<(), FilesError> {
    let io_err = |source| FilesError::Io {
        path: dir.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(io_err)?;
    match fs::remove_file(dir.join(SUMMARY_JSON)) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(FilesError::Io {
                path: dir.join(SUMMARY_JSON),
                source,
            })
        }
    }
    for entry in fs::read_dir(dir).map_err(io_err)?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(())
}

/// The bytes a CSV writer wrote to memory.
fn csv_finish(path: &Path, w: csv::Writer<Vec<u8>>) -> Result<Vec<u8>, FilesError> {
    w.into_inner().map_err(|e| FilesError::Io {
        path: path.to_path_buf(),
        source: e.into_error(),
    })
}

/// A cell made safe to open in a spreadsheet (CSV or formula injection): text starting
/// with `=`, `+`, `-`, `@`, a tab or a carriage return is read as a formula by Excel,
/// LibreOffice and Google Sheets, so it gets a leading `'` as OWASP recommends, which they
/// show as text. Config names and scenario strings come from the user's file, and a file
/// passed around can carry `-cmd|...` or `@SUM(...)`. A number stays as it is (`-3.5` is a
/// number to every reader, and changing it would change the figure), and so does every
/// other cell: the files of ordinary runs are byte for byte what they were.
pub fn safe_cell(cell: &str) -> std::borrow::Cow<'_, str> {
    let risky = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && cell.parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}

/// A record's cells through [`safe_cell`], for a CSV writer: the text cells of sweep.csv
/// and capacity.csv (a config name, a `--vary` path, an objective) come from the user.
pub fn safe_cells(record: &[String]) -> impl Iterator<Item = String> + '_ {
    record.iter().map(|c| safe_cell(c).into_owned())
}

/// What [`safe_cell`] did, undone: for reading back a file stormrig wrote.
pub fn unsafe_cell(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if safe_cell(rest).starts_with('\'') => rest,
        _ => cell,
    }
}

/// The CSV bytes of `rows` (their header first), every cell passed through [`safe_cell`].
fn csv_bytes<T: Serialize>(
    path: &Path,
    rows: impl IntoIterator<Item = T>,
) -> Result<Vec<u8>, FilesError> {
    let csv_err = |source| FilesError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).map_err(csv_err)?;
    }
    let raw = csv_finish(path, w)?;
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(raw.as_slice());
    let mut w = csv::Writer::from_writer(Vec::new());
    for record in r.records() {
        let record = record.map_err(csv_err)?;
        w.write_record(record.iter().map(safe_cell).map(|c| c.into_owned()))
            .map_err(csv_err)?;
    }
    csv_finish(path, w)
}

/// Writes summary.json, summary.csv and timeseries.csv into `dir` (which must exist).
pub fn write_data(dir: &Path, run: &RunResult) -> Result<(), FilesError> {
    write_tables(dir, run)?;
    write_summary(dir, run)
}

/// Columns `summary.csv` gains only when some config has the figure (a ladder, a priced
/// provider), so the file of a run without them keeps its shape; a config without the
/// figure leaves its cell empty.
type Extra = (&'static str, fn(&ConfigSummary) -> Option<String>);

const EXTRA_COLUMNS: [Extra; 5] = [
    ("degraded", |c| {
        c.degraded.as_ref().map(|d| d.requests.to_string())
    }),
    ("money_spent", |c| {
        c.money.as_ref().map(|m| m.total.spent.to_string())
    }),
    ("money_wasted", |c| {
        c.money.as_ref().map(|m| m.total.wasted.to_string())
    }),
    ("money_wasted_share", |c| {
        c.money.as_ref().map(|m| m.total.wasted_share.to_string())
    }),
    ("money_cost_amplification", |c| {
        c.money
            .as_ref()
            .and_then(|m| m.total.cost_amplification)
            .map(|a| a.to_string())
    }),
];

/// The `summary.csv` bytes: a [`SummaryRow`] per config, then the [`EXTRA_COLUMNS`] some
/// config has.
fn summary_csv(path: &Path, configs: &[ConfigSummary]) -> Result<Vec<u8>, FilesError> {
    let base = csv_bytes(path, configs.iter().map(SummaryRow::from))?;
    let extras: Vec<&Extra> = EXTRA_COLUMNS
        .iter()
        .filter(|(_, get)| configs.iter().any(|c| get(c).is_some()))
        .collect();
    if extras.is_empty() {
        return Ok(base);
    }
    let csv_err = |source| FilesError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut r = csv::Reader::from_reader(base.as_slice());
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = r.headers().map_err(csv_err)?.clone();
    header.extend(extras.iter().map(|(name, _)| *name));
    w.write_record(&header).map_err(csv_err)?;
    for (record, c) in r.records().zip(configs) {
        let mut record = record.map_err(csv_err)?;
        record.extend(
            extras
                .iter()
                .map(|(_, get)| safe_cell(&get(c).unwrap_or_default()).into_owned()),
        );
        w.write_record(&record).map_err(csv_err)?;
    }
    csv_finish(path, w)
}

/// Writes summary.csv and timeseries.csv into `dir` (which must exist).
pub fn write_tables(dir: &Path, run: &RunResult) -> Result<(), FilesError> {
    let summary = summary_csv(&dir.join(SUMMARY_CSV), &run.configs)?;
    let series = csv_bytes(&dir.join(TIMESERIES_CSV), &run.timeseries)?;
    // Both are tried: one that cannot be written does not cost the other.
    let first = write_atomic(dir, SUMMARY_CSV, &summary);
    let second = write_atomic(dir, TIMESERIES_CSV, &series);
    first.and(second)
}

/// Writes attempts.csv (`--attempt-log`) into `dir`: one row per attempt, a refused retry
/// included, every cell through [`safe_cell`] like the other tables (the config name comes
/// from the user's file).
pub fn write_attempts(dir: &Path, rows: &[AttemptRow]) -> Result<(), FilesError> {
    let bytes = csv_bytes(&dir.join(ATTEMPTS_CSV), rows)?;
    write_atomic(dir, ATTEMPTS_CSV, &bytes)
}

/// summary.json: the run, and the recommendation drawn from its configs (derived, so it is
/// written but not read back: a reader recomputes it from the configs).
#[derive(Serialize)]
struct SummaryFile<'a> {
    #[serde(flatten)]
    run: &'a RunResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    recommendation: Option<super::recommend::Recommendation>,
}

/// Writes summary.json: the last file of a run, whose presence marks the directory finished.
pub fn write_summary(dir: &Path, run: &RunResult) -> Result<(), FilesError> {
    let json = serde_json::to_vec_pretty(&SummaryFile {
        run,
        recommendation: super::recommend::recommend(&run.configs),
    })
    .map_err(|source| FilesError::Json {
        path: dir.join(SUMMARY_JSON),
        source,
    })?;
    write_atomic(dir, SUMMARY_JSON, &json)
}

/// Reads a run directory back (summary.json plus timeseries.csv).
pub fn read_data(dir: &Path) -> Result<RunResult, FilesError> {
    use crate::input::{self, InputError};
    // Through the one bounded reader: a summary.json or timeseries.csv that is a FIFO or
    // /dev/zero is refused before reading, and a file above the ceiling before it fills memory.
    let read = |path: &Path| {
        input::read(path, input::Kind::RunFile).map_err(|e| match e {
            InputError::Io { path, error } if error.kind() == io::ErrorKind::NotFound => {
                FilesError::Io {
                    path,
                    source: io::Error::new(
                        io::ErrorKind::NotFound,
                        "missing: not a finished run directory (a run writes summary.json last)",
                    ),
                }
            }
            other => FilesError::Input(other),
        })
    };
    let path = dir.join(SUMMARY_JSON);
    let text = read(&path)?;
    let mut run: RunResult =
        serde_json::from_slice(&text).map_err(|source| FilesError::Json { path, source })?;
    let path = dir.join(TIMESERIES_CSV);
    let bytes = read(&path)?;
    let mut r = csv::Reader::from_reader(bytes.as_slice());
    let damaged = |line: u64, message: String| FilesError::Damaged {
        path: path.clone(),
        line,
        message,
    };
    if !bytes.is_empty() {
        let header = r.headers().map_err(|source| FilesError::Csv {
            path: path.clone(),
            source,
        })?;
        if header.get(0) != Some("config") || header.get(1) != Some("second") {
            return Err(damaged(
                1,
                "not a timeseries.csv stormrig wrote: its header starts with config,second".into(),
            ));
        }
    }
    let mut rows = Vec::new();
    for (i, row) in r.deserialize::<SecondRow>().enumerate() {
        let mut row = row.map_err(|source| FilesError::Csv {
            path: path.clone(),
            source,
        })?;
        row.config = unsafe_cell(&row.config).to_string();
        rows.push((i as u64 + 2, row));
    }
    if !bytes.is_empty() && rows.is_empty() {
        // A run with no rows writes an empty file; a header alone is a file cut after it.
        return Err(damaged(
            2,
            "a header and no rows: the file is cut short".into(),
        ));
    }
    check_series(&run, &rows).map_err(|(line, m)| damaged(line, m))?;
    run.timeseries = rows.into_iter().map(|(_, r)| r).collect();
    Ok(run)
}

/// A timeseries read back as a run writes it: each config's seconds 0, 1, 2, ... with no
/// gap or repeat, and, once there are rows at all, rows for every config of `summary.json`
/// (a file cut short at a line break loses the last configs whole). A file with no rows at
/// all is a run that kept none. The error gives the line (1-based, the header is line 1).
fn check_series(run: &RunResult, rows: &[(u64, SecondRow)]) -> Result<(), (u64, String)> {
    let mut next: std::collections::BTreeMap<&str, u64> = Default::default();
    for (line, row) in rows {
        let expected = next.entry(row.config.as_str()).or_insert(0);
        if row.second != *expected {
            return Err((
                *line,
                format!(
                    "config {:?}: second {} where {} was due; the file is damaged or cut",
                    row.config, row.second, expected
                ),
            ));
        }
        *expected += 1;
    }
    if rows.is_empty() {
        return Ok(());
    }
    let end = rows.last().map_or(1, |(l, _)| l + 1);
    for c in &run.configs {
        if !next.contains_key(c.name.as_str()) {
            return Err((
                end,
                format!(
                    "no rows for config {:?} of summary.json: the file is cut short",
                    c.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_text_is_neutralised_and_numbers_are_not() {
        for (cell, safe) in [
            ("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
            ("@SUM(1)", "'@SUM(1)"),
            ("+A1", "'+A1"),
            ("-A1", "'-A1"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("-3.5", "-3.5"),
            ("+2", "+2"),
            ("-1e-3", "-1e-3"),
            ("naive", "naive"),
            ("", ""),
        ] {
            assert_eq!(safe_cell(cell), safe, "{cell:?}");
            assert_eq!(unsafe_cell(&safe_cell(cell)), cell, "{cell:?}");
        }
        assert_eq!(unsafe_cell("'plain"), "'plain");
    }
}
