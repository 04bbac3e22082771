//! Shard dumps into one result. Counts add exactly and histograms merge exactly (an HDR
//! histogram's counts per bucket add, so the percentiles of the merged histogram are those
//! of one histogram fed every sample); per-second series add by second, each shard's
//! second 0 being its own start, which `--start-at` makes common. The summary is then built
//! by the very code that summarizes a single run, so every figure means the same.
//!
//! Peaks do not add: two processes' peaks need not coincide. The merged figure is their
//! sum, an upper bound, and the result says so for each such figure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::dump::{DumpError, Head};
use super::tally::{Tally, TallyError};
use crate::metrics::{Recorder, RunMeta, RunResult, TargetStats};
use crate::plan::Plan;
use crate::run_result::ResultBuilder;

/// Why a set of dumps is not one experiment's complete set of shards.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no shard directories given")]
    Empty,
    #[error("{}: {field}: {found} differs from {}'s {expected}; these shards are not of one run", .dir.display(), .first.display())]
    Mismatch {
        dir: PathBuf,
        first: PathBuf,
        field: &'static str,
        found: String,
        expected: String,
    },
    #[error("{}: shard {index}/{count} is also in {}", .dir.display(), .other.display())]
    Duplicate {
        dir: PathBuf,
        other: PathBuf,
        index: u32,
        count: u32,
    },
    #[error("shard(s) {missing} of {count} missing: every shard's directory is needed for an exact merge")]
    Missing { missing: String, count: u32 },
    #[error("{}: duration: {message}", .dir.display())]
    Duration { dir: PathBuf, message: String },
    #[error("{}: configs: {name:?} is not in the scenario file {}", .dir.display(), .scenario.display())]
    UnknownConfig {
        dir: PathBuf,
        scenario: PathBuf,
        name: String,
    },
}

/// Why a shard's dump could not be merged: unreadable, or counts no shard run writes.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Dump(#[from] DumpError),
    #[error(transparent)]
    Counts(#[from] TallyError),
}

/// The figures of a merged result that are sums of per-shard peaks, with why.
pub fn upper_bounds() -> BTreeMap<String, String> {
    let why =
        "the sum of each shard's peak: the shards' peaks need not have come at the same moment";
    [
        ("peak_concurrency", format!("{why} (each shard's target or proxy counts its own in-flight requests; a target shared by every shard saw at most this many)")),
        ("client_peak_in_flight", why.to_string()),
        ("timeseries.target_in_flight_peak", why.to_string()),
        ("timeseries.client_in_flight_peak", why.to_string()),
        (
            "timeseries.budget_level",
            "not a sum: the lowest of the shards' levels in that second (a budget is one client instance's, and levels of different instances do not add)".to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Checks that `dumps` (with the directory each came from) are every shard of one run,
/// each once, and returns them ordered by shard index.
pub fn check_set(mut dumps: Vec<(PathBuf, Head)>) -> Result<Vec<(PathBuf, Head)>, MergeError> {
    let Some((first_dir, first)) = dumps.first().cloned() else {
        return Err(MergeError::Empty);
    };
    let names = |d: &Head| {
        d.configs
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    for (dir, d) in &dumps[1..] {
        let fields: [(&'static str, String, String); 7] = [
            (
                "scenario_sha256",
                d.scenario_sha256.clone(),
                first.scenario_sha256.clone(),
            ),
            ("seed", d.seed.to_string(), first.seed.to_string()),
            (
                "duration",
                format!("{:?}", d.duration),
                format!("{:?}", first.duration),
            ),
            ("clients", d.clients.to_string(), first.clients.to_string()),
            (
                "shard.count",
                d.shard.count().to_string(),
                first.shard.count().to_string(),
            ),
            ("configs", names(d), names(&first)),
            (
                "engine",
                d.engine.as_str().to_string(),
                first.engine.as_str().to_string(),
            ),
        ];
        for (field, found, expected) in fields {
            if found != expected {
                return Err(MergeError::Mismatch {
                    dir: dir.clone(),
                    first: first_dir.clone(),
                    field,
                    found,
                    expected,
                });
            }
        }
    }
    dumps.sort_by_key(|(_, d)| d.shard.index());
    for pair in dumps.windows(2) {
        if pair[0].1.shard == pair[1].1.shard {
            return Err(MergeError::Duplicate {
                dir: pair[1].0.clone(),
                other: pair[0].0.clone(),
                index: pair[1].1.shard.index(),
                count: pair[1].1.shard.count(),
            });
        }
    }
    let count = first.shard.count();
    // Named up to ten: a forged count of 2^32 shards must not list four billion.
    const NAMED: usize = 10;
    let mut missing: Vec<String> = (0..count)
        .filter(|i| !dumps.iter().any(|(_, d)| d.shard.index() == *i))
        .take(NAMED + 1)
        .map(|i| i.to_string())
        .collect();
    if missing.len() > NAMED {
        missing[NAMED] = "…".into();
    }
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing: missing.join(", "),
            count,
        });
    }
    Ok(dumps)
}

/// The plan the shards ran: `plan` (the scenario file, loaded) with the shards' seed,
/// duration and configs.
/// Every shard's times within what a run can have: its duration as the scenario's or a
/// `--duration` (checked the same way), its load no longer than that. These size the
/// merged per-second rows: a forged 2^32 s would ask for a terabyte.
pub fn check_times(dumps: &[(PathBuf, Head)]) -> Result<(), MergeError> {
    for (dir, d) in dumps {
        let refused = |message: String| MergeError::Duration {
            dir: dir.to_path_buf(),
            message,
        };
        crate::scenario::validate::check_duration("duration", d.duration)
            .map_err(|r| refused(r.message))?;
        // The load stops at the duration; the slack is for a late last tick.
        if d.load_ran > d.duration + Duration::from_secs(60) {
            return Err(refused(format!(
                "its load ran {} s, past its duration of {} s",
                d.load_ran.as_secs(),
                d.duration.as_secs()
            )));
        }
    }
    Ok(())
}

pub fn plan_of(mut plan: Plan, dir: &std::path::Path, d: &Head) -> Result<Plan, MergeError> {
    plan.scenario.seed = d.seed;
    plan.scenario.faults.retain(|f| f.at < d.duration);
    plan.scenario.duration = d.duration;
    for c in &d.configs {
        if !plan.configs.iter().any(|p| p.name == c.name) {
            return Err(MergeError::UnknownConfig {
                dir: dir.to_path_buf(),
                scenario: d.scenario_path.clone(),
                name: c.name.clone(),
            });
        }
    }
    plan.configs
        .retain(|p| d.configs.iter().any(|c| c.name == p.name));
    Ok(plan)
}

/// One result from every shard (as [`check_set`] returned their heads) of `plan`, reading
/// each shard's whole dump in turn and adding it in before the next is read.
/// Every count is checked ([`super::tally`]) before it is added, so a forged or corrupt
/// dump is refused rather than wrapping a sum.
pub fn merge(plan: &Plan, dumps: &[(PathBuf, Head)]) -> Result<RunResult, ReadError> {
    let first = &dumps[0].1;
    let mut sums: Vec<(Recorder, TargetStats)> = vec![Default::default(); plan.configs.len()];
    let mut tally = Tally::default();
    for (dir, _) in dumps {
        let dump: super::Dump = super::Dump::read(dir)?;
        for (planned, (rec, target)) in plan.configs.iter().zip(&mut sums) {
            if let Some(c) = dump.configs.iter().find(|c| c.name == planned.name) {
                tally.add(dir, c)?;
                rec.merge(&c.recorder);
                target.merge(&c.target);
            }
        }
    }
    let load_ran = dumps
        .iter()
        .map(|(_, d)| d.load_ran)
        .max()
        .unwrap_or(Duration::ZERO);
    let builder = ResultBuilder::new(plan, &plan.scenario.load.shape, load_ran);
    let partial = dumps.iter().any(|(_, d)| d.partial);
    let drain_s = dumps.iter().filter_map(|(_, d)| d.drain_s).reduce(f64::max);
    let mut result = builder.header(first.engine, partial, drain_s);
    for (planned, (rec, target)) in plan.configs.iter().zip(&sums) {
        let (summary, rows) = builder.config_summary(planned, rec, target);
        result.configs.push(summary);
        result.timeseries.extend(rows);
    }
    builder.judge(&mut result);
    result.run = merged_meta(dumps);
    if let Some(start) = result
        .run
        .as_ref()
        .and_then(|m| humantime::parse_rfc3339_weak(&m.started_at).ok())
    {
        for row in &mut result.timeseries {
            row.time = Some(
                humantime::format_rfc3339_millis(start + Duration::from_secs(row.second))
                    .to_string(),
            );
        }
    }
    result.shards = Some(first.shard.count());
    result.upper_bounds = upper_bounds();
    Ok(result)
}

/// Where and when the merged run ran: the earliest shard start (second 0 of the merged
/// series), the shards' hosts, and one id naming the run.
fn merged_meta(dumps: &[(PathBuf, Head)]) -> Option<RunMeta> {
    let metas: Vec<&RunMeta> = dumps.iter().filter_map(|(_, d)| d.run.as_ref()).collect();
    let earliest = metas
        .iter()
        .filter_map(|m| {
            humantime::parse_rfc3339_weak(&m.started_at)
                .ok()
                .map(|t| (t, *m))
        })
        .min_by_key(|(t, _)| *t)?;
    let mut hosts: Vec<&str> = metas.iter().map(|m| m.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Some(RunMeta {
        id: format!("{}-merged", earliest.1.id),
        started_at: humantime::format_rfc3339_millis(earliest.0).to_string(),
        host: hosts.join(","),
        scenario_sha256: Some(dumps[0].1.scenario_sha256.clone()),
    })
}

/// How far apart the shards started, in milliseconds (latest start − earliest): how well
/// their per-second series line up.
pub fn start_spread_ms(dumps: &[(PathBuf, Head)]) -> Option<f64> {
    let starts: Vec<SystemTime> = dumps
        .iter()
        .filter_map(|(_, d)| d.run.as_ref())
        .filter_map(|m| humantime::parse_rfc3339_weak(&m.started_at).ok())
        .collect();
    let (lo, hi) = (starts.iter().min()?, starts.iter().max()?);
    Some(hi.duration_since(*lo).ok()?.as_secs_f64() * 1000.0)
}
