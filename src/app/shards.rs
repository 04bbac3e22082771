//! The command-line edge of scale-out: which shard a run is (`--shard`, or `--shards` with
//! the index Kubernetes gives a pod), the common start, the dump a shard run leaves, and the
//! `merge` and `k8s` commands.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::reports::{finish, gates_of};
use super::{AppError, Exit};
use crate::cli::{K8sArgs, ShardArgs, SpreadArg};
use crate::plan::Plan;
use crate::shard::dump::{self, Head};
use crate::shard::{merge, Dump, Shard};

/// The variable a Kubernetes Indexed Job sets in each pod to its completion index.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// How far ahead `--start-at` may be: a typo of a day should not park a pod for a month.
const MAX_AHEAD: Duration = Duration::from_secs(24 * 3600);
/// How late a shard may come to the common start and still run: its second 0 is then this
/// far from the others', within the one-second buckets the series are merged in.
const LATE_TOLERANCE: Duration = Duration::from_secs(5);

/// The shard this run is, from `--shard I/N` or `--shards N` and `$JOB_COMPLETION_INDEX`,
/// checked against the plan's fleet and load.
pub fn shard_of(args: &ShardArgs, plan: &Plan) -> Result<Option<Shard>, AppError> {
    let shard = match (&args.shard, args.shards) {
        (Some(text), _) => {
            Some(Shard::parse(text).map_err(|e| AppError::bad(format!("--shard {text}: {e}")))?)
        }
        (None, Some(n)) => {
            let index = std::env::var(INDEX_VAR).map_err(|_| {
                AppError::bad(format!(
                    "--shards {n}: {INDEX_VAR} is not set (a Kubernetes Indexed Job sets it; \
                     elsewhere give --shard I/{n})"
                ))
            })?;
            let index: u32 = index.trim().parse().map_err(|_| {
                AppError::bad(format!(
                    "{INDEX_VAR}={index:?}: not a shard index (a whole number)"
                ))
            })?;
            Some(
                Shard::new(index, n)
                    .map_err(|e| AppError::bad(format!("--shards {n}, {INDEX_VAR}: {e}")))?,
            )
        }
        (None, None) => None,
    };
    if let Some(s) = &shard {
        let sc = &plan.scenario;
        s.check(sc.load.clients, &sc.load.shape, !plan.layers.is_empty())
            .map_err(|e| AppError::bad(format!("{}: --shard {s}: {e}", sc.path.display())))?;
    }
    Ok(shard)
}

/// `--start-at`, parsed and bounded against `now`.
pub fn start_at(text: Option<&str>, now: SystemTime) -> Result<Option<SystemTime>, AppError> {
    let Some(text) = text else { return Ok(None) };
    let bad = |why: String| AppError::bad(format!("--start-at {text}: {why}"));
    let t = humantime::parse_rfc3339(text).map_err(|e| {
        bad(format!(
            "{e}; write RFC 3339 in UTC, e.g. 2026-12-01T05:00:00Z"
        ))
    })?;
    if t > now + MAX_AHEAD {
        return Err(bad(format!(
            "more than {} h ahead",
            MAX_AHEAD.as_secs() / 3600
        )));
    }
    if let Ok(late) = now.duration_since(t) {
        if late > LATE_TOLERANCE {
            return Err(bad(format!(
                "already {:.1} s past; a shard this late would not line up with the others \
                 (at most {} s); start the shards again with a later time",
                late.as_secs_f64(),
                LATE_TOLERANCE.as_secs()
            )));
        }
    }
    Ok(Some(t))
}

/// Sleeps until `t` (already bounded by [`start_at`]).
pub fn wait_until(t: SystemTime) {
    if let Ok(left) = t.duration_since(SystemTime::now()) {
        eprintln!(
            "stormrig: waiting {:.1} s for the common start {}",
            left.as_secs_f64(),
            humantime::format_rfc3339_millis(t)
        );
        std::thread::sleep(left);
    }
}

/// What a shard run's dump records beyond its counts.
pub struct DumpHeader<'a> {
    pub plan: &'a Plan,
    pub scenario_sha256: String,
    pub shard: Shard,
    pub start_at: Option<SystemTime>,
}

/// Writes `dir/shard.json` from a finished live run.
pub fn write_dump(
    dir: &Path,
    h: DumpHeader<'_>,
    result: &crate::metrics::RunResult,
    raw: Vec<(crate::metrics::Recorder, crate::metrics::TargetStats)>,
) -> Result<(), AppError> {
    let sc = &h.plan.scenario;
    let d = Dump {
        format: dump::FORMAT.into(),
        version: dump::VERSION,
        stormrig_version: env!("CARGO_PKG_VERSION").into(),
        scenario: sc.name.clone(),
        scenario_path: sc.path.clone(),
        scenario_sha256: h.scenario_sha256,
        seed: sc.seed,
        duration: sc.duration,
        clients: sc.load.clients.get(),
        shard: h.shard,
        start_at: h
            .start_at
            .map(|t| humantime::format_rfc3339_millis(t).to_string()),
        engine: result.engine,
        partial: result.partial,
        load_ran: Duration::from_secs_f64(result.duration_s),
        drain_s: result.drain_s,
        run: result.run.clone(),
        configs: h
            .plan
            .configs
            .iter()
            .zip(raw)
            .map(|(c, (recorder, target))| dump::ConfigDump {
                name: c.name.clone(),
                recorder,
                target,
            })
            .collect(),
    };
    crate::report::files::write_atomic(dir, dump::FILE, &d.to_bytes()).map_err(AppError::failed)
}

/// `stormrig merge DIR... --out DIR`.
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    scenario: Option<&Path>,
    extra_gates: &[String],
) -> Result<Exit, AppError> {
    let wall = std::time::Instant::now();
    let mut dumps = Vec::with_capacity(dirs.len());
    for dir in dirs {
        dumps.push((dir.clone(), Head::read(dir).map_err(AppError::bad)?));
    }
    let dumps = merge::check_set(dumps).map_err(AppError::bad)?;
    merge::check_times(&dumps).map_err(AppError::bad)?;
    let (first_dir, first) = &dumps[0];
    let path = scenario.unwrap_or(&first.scenario_path);
    // The path comes from a dump, which is input: read it as any scenario, bounded.
    let bytes = crate::input::read(path, crate::input::Kind::Scenario).map_err(|e| {
        AppError::bad(format!(
            "{}: scenario_path: {e} (give the scenario file with --scenario)",
            first_dir.display(),
        ))
    })?;
    let sha = crate::live::telemetry::scenario_sha256(&bytes);
    if sha != first.scenario_sha256 {
        return Err(AppError::bad(format!(
            "{}: scenario_sha256: the shards ran {}, but {} is now {sha}; give the file they ran with --scenario",
            first_dir.display(),
            first.scenario_sha256,
            path.display()
        )));
    }
    let plan = crate::plan::load(path).map_err(AppError::bad)?;
    let plan = merge::plan_of(plan, first_dir, first).map_err(AppError::bad)?;
    let gates = gates_of(&plan, extra_gates)?;
    let mut result = merge::merge(&plan, &dumps).map_err(AppError::bad)?;
    let read_and_merged = wall.elapsed();
    crate::report::files::prepare_dir(out).map_err(AppError::failed)?;
    let exit = finish(out, &mut result, &gates, false)?;
    if let Some(ms) = merge::start_spread_ms(&dumps) {
        eprintln!(
            "merged {} shards ({} configs) in {:.3} s; the shards started within {ms:.0} ms of each other",
            dumps.len(),
            plan.configs.len(),
            read_and_merged.as_secs_f64()
        );
    }
    eprintln!(
        "upper bounds, not exact (sums of per-shard peaks): {}",
        result
            .upper_bounds
            .keys()
            .filter(|k| !k.starts_with("timeseries.budget"))
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(exit)
}

/// `stormrig k8s`: prints the manifests of [`crate::shard::k8s`].
pub fn k8s(args: &K8sArgs) -> Result<Exit, AppError> {
    use crate::shard::k8s;
    let plan = crate::plan::load(&args.scenario).map_err(AppError::bad)?;
    let sc = &plan.scenario;
    Shard::new(0, args.shards)
        .and_then(|s| s.check(sc.load.clients, &sc.load.shape, !plan.layers.is_empty()))
        .map_err(|e| {
            AppError::bad(format!(
                "{}: --shards {}: {e}",
                sc.path.display(),
                args.shards
            ))
        })?;
    let delay = crate::scenario::units::duration::parse(&args.start_delay)
        .map_err(|e| AppError::bad(format!("--start-delay: {e}")))?;
    if delay > MAX_AHEAD {
        return Err(AppError::bad(format!(
            "--start-delay {}: more than {} h",
            args.start_delay,
            MAX_AHEAD.as_secs() / 3600
        )));
    }
    let image = &args.image;
    if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AppError::bad(format!(
            "--image {image:?}: must be non-empty, without spaces"
        )));
    }
    k8s::namespace("--namespace", &args.namespace).map_err(AppError::bad)?;
    k8s::storage("--storage", &args.storage).map_err(AppError::bad)?;
    if let Some(class) = &args.storage_class {
        k8s::storage_class("--storage-class", class).map_err(AppError::bad)?;
    }
    let text = std::fs::read_to_string(&args.scenario).map_err(AppError::bad)?;
    let mean_rate =
        crate::run_result::ResultBuilder::new(&plan, &sc.load.shape, sc.duration).mean_rate();
    let attempts_per_s: f64 = plan
        .configs
        .iter()
        .map(|c| {
            mean_rate * crate::plan::fleet_bound(&c.config, sc.load.clients, mean_rate, sc.duration)
        })
        .sum();
    let ttl = crate::scenario::units::duration::parse(&args.ttl)
        .map_err(|e| AppError::bad(format!("--ttl: {e}")))?;
    if ttl.as_secs() > i32::MAX as u64 {
        return Err(AppError::bad(format!(
            "--ttl {}: more than Kubernetes' limit of {} s",
            args.ttl,
            i32::MAX
        )));
    }
    let start = SystemTime::now() + delay;
    let unix = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let spec = k8s::Spec {
        name: k8s::dns_label(&sc.name, 40),
        run_id: k8s::run_id(start),
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        scenario_text: text,
        shards: args.shards,
        start_at: humantime::format_rfc3339_seconds(start).to_string(),
        attempts_per_s_per_shard: attempts_per_s / f64::from(args.shards),
        deadline_s: (delay + sc.duration + sc.drain).as_secs() + 120,
        shards_done_by: unix(start + sc.duration + sc.drain) + 120,
        storage: args.storage.clone(),
        storage_class: args.storage_class.clone(),
        spread: match args.spread {
            SpreadArg::Soft => k8s::Spread::Soft,
            SpreadArg::Strict => k8s::Spread::Strict,
        },
        ttl_s: ttl.as_secs(),
    };
    let yaml = k8s::yaml(&k8s::manifests(&spec)).map_err(AppError::failed)?;
    super::out::say(yaml)?;
    eprintln!(
        "stormrig: run {} starts at {} (apply within {}); {} shards of about {:.0} attempts/s \
         each; merged results in /results/{}/merged on claim {}-results",
        spec.run_id,
        spec.start_at,
        args.start_delay,
        args.shards,
        spec.attempts_per_s_per_shard,
        spec.run_id,
        spec.prefix()
    );
    Ok(Exit::Ok)
}
