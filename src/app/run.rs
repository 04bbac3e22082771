//! `stormrig run` (the live engine, on real sockets) and `stormrig sim` (the simulator, in
//! virtual time): the plan with the command line's overrides, the run, and its warnings.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::reports::{finish, gates_of};
use super::signals::{shutdown_signal, signal_flag};
use super::{printable, shards, AppError, Exit};
use crate::cli::{CommonArgs, RunArgs, SimArgs};
use crate::live;
use crate::metrics::RunResult;
use crate::plan::{self, Plan};
use crate::report::{self, files};
use crate::scenario::units::duration;

/// Refuses planned work that the command-line overrides (`--only`, `--duration`,
/// `--scale`) took past the scenario's ceilings, naming the scenario file.
fn check_work(plan: &Plan, scale: f64) -> Result<(), AppError> {
    let sc = &plan.scenario;
    crate::scenario::validate::check_work(&sc.load, sc.duration, plan.configs.len(), scale)
        .map_err(|r| AppError::bad(format!("{}: {}: {}", sc.path.display(), r.field, r.message)))
}

/// A one-line run's flags made into `scenario.toml` in its run directory, which `common`
/// then names as its scenario and output: the run loads, validates and reports it as any
/// file, and the file repeats the run. A run with a scenario file is left as it is.
fn materialize(common: &mut CommonArgs) -> Result<(), AppError> {
    let (Some(rate), None) = (common.quick.rate, &common.scenario) else {
        return Ok(());
    };
    let quick = crate::scenario::quick::Quick {
        url: common.quick.url.clone(),
        rate,
        duration: common.duration.take().unwrap_or_else(|| "20s".into()),
        faults: common.quick.faults.clone(),
        configs: common.quick.configs.clone(),
    };
    let text = crate::scenario::quick::scenario_text(&quick).map_err(AppError::bad)?;
    let dir = out_dir(common, "quick-run");
    files::prepare_dir(&dir).map_err(AppError::failed)?;
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).map_err(AppError::failed)?;
    common.scenario = Some(path);
    common.out = Some(dir);
    Ok(())
}

/// The scenario file `run` and `sim` read, once [`materialize`] has run.
fn scenario_path(common: &CommonArgs) -> &Path {
    common
        .scenario
        .as_deref()
        .expect("clap requires a scenario or --rate, and materialize writes one")
}

/// The plan of `run` and `sim`, made with the command line's overrides.
fn prepare(common: &CommonArgs, target_url: Option<&str>) -> Result<Plan, AppError> {
    let duration = common
        .duration
        .as_deref()
        .map(duration::parse)
        .transpose()
        .map_err(|e| AppError::bad(format!("--duration: {e}")))?;
    let overrides = plan::Overrides {
        seed: common.seed,
        only: common.only.clone(),
        duration,
        target_url: target_url.map(str::to_string),
    };
    plan::load_with(scenario_path(common), &overrides).map_err(AppError::bad)
}

/// Where a run writes: `--out`, or `reports/<scenario>/<UTC timestamp>/`.
fn out_dir(common: &CommonArgs, scenario: &str) -> PathBuf {
    common.out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
            .to_string()
            .replace(':', "-");
        Path::new("reports").join(scenario).join(stamp)
    })
}

/// Panics anywhere in the process since [`count_panics`] was called.
static PANICS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts every panic (and still prints it): a request task that panicked left its counts
/// incomplete, so the run must not pass as if it were whole.
fn count_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        previous(info);
    }));
}

pub(super) fn run_live(mut args: RunArgs) -> Result<Exit, AppError> {
    materialize(&mut args.common)?;
    let plan = prepare(&args.common, args.target_url.as_deref())?;
    check_work(&plan, 1.0)?;
    let mut gates = gates_of(&plan, &args.common.gates)?;
    let shard = shards::shard_of(&args.shard, &plan)?;
    if shard.is_some_and(|s| !s.is_whole()) && !gates.is_empty() {
        // A shard's figures are a part of the run's: its gates are judged on the merge.
        eprintln!("stormrig: gates are judged by `stormrig merge`, not by one shard");
        gates.clear();
    }
    let start_at = shards::start_at(args.shard.start_at.as_deref(), SystemTime::now())?;
    if let Some(addr) = args.metrics_listen.filter(|a| !a.ip().is_loopback()) {
        return Err(AppError::bad(
            live::telemetry::TelemetryError::NotLoopback { addr }.to_string(),
        ));
    }
    if let Some(addr) = args.push_gateway.filter(|a| !a.ip().is_loopback()) {
        return Err(AppError::bad(
            live::push::PushError::NotLoopback { addr }.to_string(),
        ));
    }
    if args.push_interval < std::time::Duration::from_millis(100) {
        return Err(AppError::bad(format!(
            "--push-interval {}: at least 100ms",
            humantime::format_duration(args.push_interval)
        )));
    }
    let push = push_options(&args)?;
    let scenario_bytes = std::fs::read(scenario_path(&args.common)).map_err(AppError::failed)?;
    // Opened now, with every input read: a path that is one of them, or a FIFO no one
    // reads, is refused before any load.
    let events = args
        .events
        .as_deref()
        .map(super::events::open)
        .transpose()?;
    let dir = out_dir(&args.common, &plan.scenario.name);
    files::prepare_dir(&dir).map_err(AppError::failed)?;
    if let Some(w) = insecure_warning(&plan) {
        eprintln!("{w}");
    }

    let rt = live::runtime(args.threads.map(usize::from)).map_err(AppError::failed)?;
    count_panics();
    if let Some(t) = start_at {
        shards::wait_until(t);
    }
    let scenario_sha256 = live::telemetry::scenario_sha256(&scenario_bytes);
    let opts = run_options(&args, &gates, shard, &scenario_sha256, events, push);
    let output = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = tx.send(true);
        });
        live::run(&plan, &opts, rx).await
    });
    let output = output.map_err(AppError::failed)?;
    print_run_notes(&plan, &output);
    let aborted = output.aborted;
    let events_error = output.events_error.clone();
    let mut result = output.result;
    if let Some(shard) = shard {
        let header = shards::DumpHeader {
            plan: &plan,
            scenario_sha256,
            shard,
            start_at,
        };
        shards::write_dump(&dir, header, &result, output.raw)?;
    }
    for warning in [
        local_resource_warning(&result),
        not_accepted_warning(&result),
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("{warning}");
    }
    let tls = tls_verdict(&plan, &result, output.tls_failure.as_deref())
        .or_else(|| unreached_verdict(&plan, &result));
    if let Some(TlsVerdict::Some(warning)) = &tls {
        eprintln!("{warning}");
    }
    if args.common.attempt_log {
        write_attempts(&dir, &output.attempts)?;
    }
    if aborted {
        eprintln!(
            "stormrig: a gate could no longer pass; the run was stopped early (--abort-on-fail)"
        );
    }
    let panics = PANICS.load(std::sync::atomic::Ordering::SeqCst);
    if panics > 0 {
        result.partial = true;
    }
    let exit = finish(&dir, &mut result, &gates, aborted)?;
    if let Some(lost) = events_error {
        // The reports are written; the events a reader was promised are not all there.
        return Err(AppError::failed(lost));
    }
    if let Some(TlsVerdict::All(message)) = tls {
        return Err(AppError::failed(message));
    }
    if panics > 0 {
        return Err(AppError::failed(format!(
            "{panics} task(s) panicked during the run; its counts are incomplete (reports marked partial)"
        )));
    }
    Ok(exit)
}

/// What the live engine is told besides the plan: the command line's logs, progress and
/// telemetry, the gates that may stop the run early, and the shard it is.
fn run_options(
    args: &RunArgs,
    gates: &[report::gates::Gate],
    shard: Option<crate::shard::Shard>,
    scenario_sha256: &str,
    events: Option<live::telemetry::EventsTo>,
    push: Option<live::push::PushOptions>,
) -> live::RunOptions {
    live::RunOptions {
        attempt_log: args.common.attempt_log,
        progress: !args.common.quiet,
        abort_when: if args.abort_on_fail {
            abort_check(gates)
        } else {
            None
        },
        scenario_sha256: Some(scenario_sha256.to_string()),
        shard: shard.unwrap_or_default(),
        telemetry: live::telemetry::TelemetryOptions {
            metrics_listen: args.metrics_listen,
            events,
            push,
        },
    }
}

/// Where the figures are pushed, if anywhere: the gateway first, then each remote-write
/// receiver in the order given. A receiver URL that is not loopback http is exit 2, before
/// anything connects.
fn push_options(args: &RunArgs) -> Result<Option<live::push::PushOptions>, AppError> {
    use live::push::Sink;
    let mut sinks: Vec<Sink> = args.push_gateway.map(Sink::Gateway).into_iter().collect();
    for url in &args.remote_write {
        let r = url
            .parse()
            .map_err(|e| AppError::bad(format!("--remote-write {e}")))?;
        sinks.push(Sink::RemoteWrite(r));
    }
    if sinks.is_empty() {
        return Ok(None);
    }
    Ok(Some(live::push::PushOptions {
        sinks,
        every: args.push_interval,
    }))
}

/// The run's own lines after the load: how late arrivals started against the schedule, and
/// the connections each config opened.
fn print_run_notes(plan: &Plan, output: &live::LiveOutput) {
    let lag = &output.schedule_lag_us;
    if !lag.is_empty() {
        eprintln!(
            "schedule: {} arrivals in {:.1} s ({:.1} req/s offered)\n          start lag p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            lag.len(),
            output.result.duration_s,
            lag.len() as f64 / output.result.duration_s.max(1e-9),
            lag.value_at_quantile(0.5) as f64 / 1000.0,
            lag.value_at_quantile(0.99) as f64 / 1000.0,
            lag.max() as f64 / 1000.0
        );
    }
    let protocol = plan.scenario.target.wire().protocol.as_str();
    let per_config: Vec<String> = output
        .result
        .configs
        .iter()
        .zip(&output.connections)
        .map(|(c, opened)| {
            format!(
                "{} {opened} ({:.1} attempts each)",
                printable(&c.name),
                c.attempts as f64 / (*opened).max(1) as f64
            )
        })
        .collect();
    if !per_config.is_empty() {
        eprint!(
            "{}",
            report::text::wrapped(&format!(
                "connections opened over {protocol}: {}",
                per_config.join(", ")
            ))
        );
    }
}

pub(super) fn run_sim(mut args: SimArgs) -> Result<Exit, AppError> {
    materialize(&mut args.common)?;
    let plan = prepare(&args.common, None)?;
    if !args.scale.is_finite() || args.scale <= 0.0 {
        return Err(AppError::bad(format!(
            "--scale {}: must be a finite number above 0",
            args.scale
        )));
    }
    check_work(&plan, args.scale)?;
    let gates = gates_of(&plan, &args.common.gates)?;
    let opts = crate::sim::SimOptions {
        scale: args.scale,
        attempt_log: args.common.attempt_log,
        stop: Some(signal_flag()?),
        jobs: 0,
    };
    let wall = std::time::Instant::now();
    let output = crate::sim::run(&plan, &opts).map_err(AppError::bad)?;
    let secs = wall.elapsed().as_secs_f64().max(1e-9);
    let st = output.stats;
    eprintln!(
        "simulated {} attempts in {:.3} s wall ({:.2} M attempts/s; {:.0}\u{d7} real time; {} configs, {} events)",
        st.attempts,
        secs,
        st.attempts as f64 / secs / 1e6,
        st.virtual_time.as_secs_f64() / secs,
        plan.configs.len(),
        st.events
    );
    // Only now that there is a result to write does the run directory appear.
    let dir = out_dir(&args.common, &plan.scenario.name);
    files::prepare_dir(&dir).map_err(AppError::failed)?;
    let mut result = output.result;
    if args.common.attempt_log {
        write_attempts(&dir, &output.attempts)?;
    }
    finish(&dir, &mut result, &gates, false)
}

/// The run's attempts with outcome `label`, over every config.
fn attempts_labelled(result: &RunResult, label: &str) -> u64 {
    result
        .configs
        .iter()
        .filter_map(|c| c.attempts_by_outcome.get(label))
        .sum()
}

/// One line naming the cause when attempts failed on this machine's own limits (file
/// descriptors, local ports, buffers): such failures are the generator's, not the target's,
/// and every figure of the run is then suspect.
fn local_resource_warning(result: &RunResult) -> Option<String> {
    let label = crate::policy::AttemptLabel::LocalResource.as_str();
    let n = attempts_labelled(result, label);
    (n > 0).then(|| {
        format!(
            "stormrig: warning: {n} attempts failed on this machine, not at the target ({label}: too many open \
             files, or no free local port or buffer); open-file limit (ulimit -n) {}: raise it or lower the load",
            open_files_limit().unwrap_or_else(|| "unknown".into())
        )
    })
}

/// One line when the in-process target (or proxy) never read some attempts before their
/// client gave up: the kernel queued them, but this process could not accept or read them
/// (out of file descriptors, or short of CPU). Not the target's doing, so it is said apart.
fn not_accepted_warning(result: &RunResult) -> Option<String> {
    let label = crate::policy::AttemptLabel::NotAccepted.as_str();
    let n = attempts_labelled(result, label);
    (n > 0).then(|| {
        format!(
            "stormrig: warning: {n} attempts were never read by the in-process target before \
             their client gave up ({label}): this process could not accept or read them, out of \
             file descriptors (open-file limit (ulimit -n) {}) or short of CPU; they are the \
             machine's, not the target's",
            open_files_limit().unwrap_or_else(|| "unknown".into())
        )
    })
}

/// The loud line of a scenario whose target certificate goes unchecked.
pub(super) fn insecure_warning(plan: &Plan) -> Option<String> {
    plan.scenario.target.wire().skips_verify().then(|| {
        format!(
            "stormrig: warning: {}: target.insecure_skip_verify = true: the target's TLS \
             certificate is NOT verified; any server answering on that address is stormed",
            printable(&plan.scenario.path.display().to_string())
        )
    })
}

/// What failed TLS handshakes say about a run.
enum TlsVerdict {
    /// Some attempts failed it: a warning.
    Some(String),
    /// Nothing reached the target (attempts the proxy's faults answered aside, every one
    /// failed it): the run could not be carried out (exit 3, reports written).
    All(String),
}

fn tls_verdict(plan: &Plan, result: &RunResult, why: Option<&str>) -> Option<TlsVerdict> {
    let label = crate::policy::AttemptLabel::TlsHandshake.as_str();
    let failed: u64 = result
        .configs
        .iter()
        .filter_map(|c| c.attempts_by_outcome.get(label))
        .sum();
    if failed == 0 {
        return None;
    }
    let attempts: u64 = result
        .configs
        .iter()
        .flat_map(|c| c.attempts_by_outcome.values())
        .sum();
    let reached: u64 = result
        .configs
        .iter()
        .map(|c| match plan.scenario.target {
            crate::scenario::Target::Url { .. } => c.target_forwarded,
            crate::scenario::Target::Builtin { .. } => c.downstream_arrivals,
        })
        .sum();
    let why = printable(why.unwrap_or("no reason given"));
    let hint = "check the url's host, target.ca_file, or the server's certificate";
    Some(if reached == 0 {
        TlsVerdict::All(format!(
            "no attempt reached the target: every TLS handshake failed ({label}: {why}); {hint}"
        ))
    } else {
        TlsVerdict::Some(format!(
            "stormrig: warning: {failed} of {attempts} attempts failed the TLS handshake \
             ({label}: {why}); they never reached the target"
        ))
    })
}

/// What the attempts the fault proxy could not hand to a `url` target say about a run: a
/// dead or unreachable service must not read as a normal run whose arrivals were the
/// proxy's own answers.
fn unreached_verdict(plan: &Plan, result: &RunResult) -> Option<TlsVerdict> {
    let crate::scenario::Target::Url { url, .. } = &plan.scenario.target else {
        return None;
    };
    let unreached: u64 = result.configs.iter().map(|c| c.target_unreached).sum();
    let mut answered = crate::metrics::ProxyAnswered::default();
    for c in &result.configs {
        answered.merge(&c.proxy_answered);
    }
    if unreached == 0 && answered.total() == 0 {
        return None;
    }
    let attempts: u64 = result.configs.iter().map(|c| c.attempts).sum();
    let reached: u64 = result.configs.iter().map(|c| c.target_forwarded).sum();
    let url = printable(url);
    if unreached == 0 {
        // Every attempt reached the service, but the proxy answered some for it.
        return Some(TlsVerdict::Some(format!(
            "stormrig: warning: {} of {attempts} attempts were answered by the proxy itself, \
             not by {url} ({}; see proxy_answered)",
            answered.total(),
            answered.described()
        )));
    }
    Some(if reached == 0 {
        TlsVerdict::All(format!(
            "{reached} of {attempts} attempts reached {url}: the proxy could not connect to it \
             ({unreached} attempts answered 502 by the proxy itself); is the service running?"
        ))
    } else {
        TlsVerdict::Some(format!(
            "stormrig: warning: {unreached} of {attempts} attempts never reached {url}: the \
             proxy could not connect to it (they are not in downstream_arrivals; see \
             target_unreached); the proxy answered {} itself ({})",
            answered.total(),
            answered.described()
        ))
    })
}

/// The soft limit on open files, as `/proc/self/limits` states it.
fn open_files_limit() -> Option<String> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3).map(str::to_string)
}

/// `--abort-on-fail`: true as soon as a gate that can no longer pass is broken for some
/// config (e.g. `attempts <= 1000` with 1001 attempts sent); `None` when no gate could ever
/// stop the run early, so the run does not summarize itself for nothing.
fn abort_check(gates: &[report::gates::Gate]) -> Option<live::AbortCheck> {
    let gates: Vec<_> = gates
        .iter()
        .filter(|g| report::gates::may_stop_early(g))
        .cloned()
        .collect();
    if gates.is_empty() {
        return None;
    }
    Some(std::sync::Arc::new(move |so_far| {
        report::gates::broken_early(&gates, so_far)
    }))
}

fn write_attempts(dir: &Path, rows: &[crate::metrics::AttemptRow]) -> Result<(), AppError> {
    files::write_attempts(dir, rows).map_err(AppError::failed)
}
