//! The I/O edge: turns command-line arguments into runs and reports, and every outcome into
//! one of the documented exit codes. The only module that depends on everything.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use crate::cli::{Cli, Command, CommonArgs, RunArgs, SimArgs};
use crate::live;
use crate::metrics::RunResult;
use crate::plan::{self, Plan};
use crate::report::{self, files};
use crate::scenario::units::duration;

/// Exit codes, as the README documents them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything ran and every gate passed.
    Ok = 0,
    /// A gate failed, or `diff` found a regression.
    GateFailed = 1,
    /// Bad input or usage: nothing ran.
    BadInput = 2,
    /// The run itself could not be carried out.
    RunFailed = 3,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// An error at the edge, with the exit code it maps to.
#[derive(Debug)]
pub struct AppError {
    pub exit: Exit,
    pub message: String,
}

impl AppError {
    fn bad(message: impl ToString) -> Self {
        AppError {
            exit: Exit::BadInput,
            message: message.to_string(),
        }
    }
    fn failed(message: impl ToString) -> Self {
        AppError {
            exit: Exit::RunFailed,
            message: message.to_string(),
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, AppError> {
    match cli.command {
        Command::Run(args) => run_live(args),
        Command::Sim(args) => run_sim(args),
        Command::Check {
            scenarios,
            strict,
            explain,
        } => check(&scenarios, strict, explain),
        Command::Thresholds {
            scenario,
            config,
            max_attempts,
            seed,
            json,
        } => thresholds(
            scenario.as_deref(),
            config.as_deref(),
            max_attempts,
            seed,
            json,
        ),
        Command::Proxy {
            listen,
            upstream,
            faults,
            seed,
            allow_remote,
        } => proxy(
            listen,
            &upstream,
            faults.as_deref(),
            seed,
            allow_remote.as_deref(),
        ),
        Command::Bench(b) => bench(b),
        Command::Presets => {
            print!("{}", presets_table());
            Ok(Exit::Ok)
        }
        Command::Report { dir } => {
            let run = files::read_data(&dir).map_err(AppError::bad)?;
            let path = report::html::write(&dir, &run, None).map_err(AppError::failed)?;
            println!("wrote {}", path.display());
            Ok(Exit::Ok)
        }
        Command::Diff {
            baseline,
            run,
            tolerance,
        } => diff(&baseline, &run, &tolerance),
    }
}

fn check(paths: &[PathBuf], strict: bool, explain: bool) -> Result<Exit, AppError> {
    let mut warned = 0;
    for p in paths {
        let plan = plan::load(p).map_err(AppError::bad)?;
        gates_of(&plan, &[])?;
        println!(
            "{}: ok ({} configs, {} faults, {} s)",
            p.display(),
            plan.configs.len(),
            plan.scenario.faults.len(),
            plan.scenario.duration.as_secs_f64()
        );
        for w in crate::advice::warnings(&plan) {
            eprintln!(
                "{}: warning: config {}: {}",
                p.display(),
                w.config,
                w.message
            );
            warned += 1;
        }
        if explain {
            print!("{}", crate::advice::explain(&plan));
        }
    }
    if strict && warned > 0 {
        return Err(AppError::bad(format!(
            "{warned} warning(s), and --strict treats warnings as errors"
        )));
    }
    Ok(Exit::Ok)
}

/// `stormrig thresholds`: of one preset (`--config`), or of every config of a scenario
/// as resolved; one table per config, or JSON (one report, or a list for a scenario).
fn thresholds(
    scenario: Option<&Path>,
    preset: Option<&str>,
    max_attempts: Option<u32>,
    seed: u64,
    json: bool,
) -> Result<Exit, AppError> {
    let configs = match (scenario, preset) {
        (Some(p), _) => plan::load(p)
            .map_err(AppError::bad)?
            .configs
            .into_iter()
            .map(|c| c.config)
            .collect(),
        (None, Some(name)) => vec![crate::policy::preset(name).map_err(AppError::bad)?],
        (None, None) => return Err(AppError::bad("give a scenario file or --config PRESET")),
    };
    let reports: Vec<_> = configs
        .iter()
        .map(|c| crate::policy::thresholds::compute(c, max_attempts, seed))
        .collect();
    if json {
        let text = match (scenario, reports.as_slice()) {
            (None, [one]) => serde_json::to_string_pretty(one),
            _ => serde_json::to_string_pretty(&reports),
        };
        println!("{}", text.map_err(AppError::failed)?);
    } else if scenario.is_some() {
        print!("{}", thresholds_overview(&reports));
    } else {
        for r in &reports {
            print!("{}", thresholds_table(r));
        }
    }
    Ok(Exit::Ok)
}

/// One row per config: the closed form (Monte Carlo) per class, or why there is none.
fn thresholds_overview(reports: &[crate::policy::ThresholdReport]) -> String {
    let mut out = format!(
        "{:<24} {:<16} {:>8}  {:<18} {:<18} {:<18}\n",
        "config", "budget", "attempts", "transient", "throttling", "timeout"
    );
    let cell = |k: &crate::policy::thresholds::KindThreshold| match (k.closed_form, k.monte_carlo) {
        (Some(c), Some(m)) => format!("{:.1} % ({:.1} %)", c * 100.0, m * 100.0),
        (Some(c), None) => format!("{:.1} %", c * 100.0),
        _ => "-".to_string(),
    };
    for r in reports {
        let _ = writeln!(
            out,
            "{:<24} {:<16} {:>8}  {:<18} {:<18} {:<18}",
            r.config,
            r.budget,
            r.max_attempts,
            cell(&r.transient),
            cell(&r.throttling),
            cell(&r.timeout)
        );
        for (kind, k) in [
            ("transient", &r.transient),
            ("throttling", &r.throttling),
            ("timeout", &r.timeout),
        ] {
            if let (None, Some(why)) = (k.closed_form, &k.reason) {
                if why != "the config has no retry budget: nothing drains" || kind == "transient" {
                    let _ = writeln!(out, "  no {kind} threshold: {why}");
                }
            }
        }
    }
    out.push_str("closed form (Monte Carlo through the real client); the budget drains when the failure rate of first attempts stays above it\n");
    out
}

fn proxy(
    listen: std::net::SocketAddr,
    upstream: &str,
    faults: Option<&Path>,
    seed: u64,
    allow_remote: Option<&str>,
) -> Result<Exit, AppError> {
    use crate::server::proxy;
    use std::net::ToSocketAddrs;
    if !listen.ip().is_loopback() {
        return Err(AppError::bad(format!(
            "--listen {listen}: the proxy listens on loopback only (127.0.0.1 or [::1])"
        )));
    }
    let (host, port) = crate::scenario::validate::parse_url(upstream)
        .map_err(|e| AppError::bad(format!("--upstream {upstream}: {e}")))?;
    proxy::check_loopback(&host, allow_remote).map_err(AppError::bad)?;
    let upstream_addr = (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| AppError::bad(format!("--upstream {upstream}: resolves to no address")))?;
    let faults = match faults {
        Some(p) => proxy::parse_faults_file(p).map_err(AppError::bad)?,
        None => Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    rt.block_on(async {
        let server = proxy::serve_standalone(listen, upstream_addr, faults, seed)
            .await
            .map_err(AppError::failed)?;
        eprintln!(
            "stormrig proxy: {} -> {upstream_addr}; control: POST http://{}/_stormrig/faults/start|stop, metrics: GET http://{}/_stormrig/metrics",
            server.addr(),
            server.control_addr(),
            server.control_addr()
        );
        shutdown_signal().await;
        let stats = server.shutdown().await;
        eprintln!(
            "stormrig proxy: {} arrivals, {} forwarded, peak in flight {}",
            stats.arrivals, stats.forwarded, stats.peak_in_flight
        );
        Ok(Exit::Ok)
    })
}

fn thresholds_table(r: &crate::policy::ThresholdReport) -> String {
    let mut out = format!(
        "{} (budget {}, {} attempts): failure rate above which the budget drains on average\n",
        r.config, r.budget, r.max_attempts
    );
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1} %", v * 100.0));
    let _ = writeln!(
        out,
        "{:<11} {:>12} {:>12} {:>6}  note",
        "failures", "closed form", "monte carlo", "cost"
    );
    for (kind, k) in [
        ("transient", &r.transient),
        ("throttling", &r.throttling),
        ("timeout", &r.timeout),
    ] {
        let _ = writeln!(
            out,
            "{:<11} {:>12} {:>12} {:>6}  {}",
            kind,
            pct(k.closed_form),
            pct(k.monte_carlo),
            k.cost.map_or("-".into(), |c| format!("{c}")),
            k.reason.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(out, "{}", r.model);
    out
}

fn presets_table() -> String {
    let mut out = String::new();
    for p in crate::policy::presets::PRESETS {
        let _ = writeln!(
            out,
            "{:<22} {}\n{:<22} source: {}",
            p.name, p.summary, "", p.source
        );
    }
    out
}

fn diff(baseline: &Path, run: &Path, tolerance: &str) -> Result<Exit, AppError> {
    let tol = report::diff::parse_tolerance(tolerance).map_err(AppError::bad)?;
    let a = files::read_data(baseline).map_err(AppError::bad)?;
    let b = files::read_data(run).map_err(AppError::bad)?;
    let rows = report::diff::diff(&a, &b, tol);
    print!("{}", report::diff::table(&rows));
    Ok(if report::diff::has_regression(&rows) {
        Exit::GateFailed
    } else {
        Exit::Ok
    })
}

/// Scenario gates plus command-line gates, parsed (a malformed gate is bad input).
fn gates_of(plan: &Plan, extra: &[String]) -> Result<Vec<report::gates::Gate>, AppError> {
    plan.scenario
        .gates
        .iter()
        .chain(extra)
        .map(|g| report::gates::parse(g).map_err(AppError::bad))
        .collect()
}

/// Applies the command-line overrides shared by `run` and `sim`.
fn prepare(common: &CommonArgs) -> Result<Plan, AppError> {
    let mut plan = plan::load(&common.scenario).map_err(AppError::bad)?;
    if let Some(seed) = common.seed {
        plan.scenario.seed = seed;
    }
    if !common.only.is_empty() {
        for name in &common.only {
            if !plan.configs.iter().any(|c| &c.name == name) {
                return Err(AppError::bad(format!(
                    "--only {name}: the scenario has no config of that name (it has: {})",
                    plan.configs
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        plan.configs.retain(|c| common.only.contains(&c.name));
    }
    Ok(plan)
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

fn run_live(args: RunArgs) -> Result<Exit, AppError> {
    let mut plan = prepare(&args.common)?;
    if let Some(d) = &args.duration {
        let d = duration::parse(d).map_err(|e| AppError::bad(format!("--duration: {e}")))?;
        plan.scenario.faults.retain(|f| f.at < d);
        plan.scenario.duration = d;
    }
    let gates = gates_of(&plan, &args.common.gates)?;
    let dir = out_dir(&args.common, &plan.scenario.name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| AppError::failed(format!("{}: {e}", dir.display())))?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    let opts = live::RunOptions {
        attempt_log: args.common.attempt_log,
        progress: !args.common.quiet,
        abort_when: args.abort_on_fail.then(|| abort_check(gates.clone())),
    };
    let output = rt.block_on(async {
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = tx.send(true);
        });
        live::run(&plan, &opts, rx).await
    });
    let output = output.map_err(AppError::failed)?;
    let lag = &output.schedule_lag_us;
    if !lag.is_empty() {
        eprintln!(
            "schedule: {} arrivals in {:.1} s ({:.1} req/s offered); start lag p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            lag.len(),
            output.result.duration_s,
            lag.len() as f64 / output.result.duration_s.max(1e-9),
            lag.value_at_quantile(0.5) as f64 / 1000.0,
            lag.value_at_quantile(0.99) as f64 / 1000.0,
            lag.max() as f64 / 1000.0
        );
    }
    let aborted = output.aborted;
    let mut result = output.result;
    if args.common.attempt_log {
        write_attempts(&dir, &output.attempts)?;
    }
    if aborted {
        eprintln!(
            "stormrig: a gate could no longer pass; the run was stopped early (--abort-on-fail)"
        );
    }
    finish(&dir, &mut result, &gates, aborted)
}

fn run_sim(args: SimArgs) -> Result<Exit, AppError> {
    let plan = prepare(&args.common)?;
    let gates = gates_of(&plan, &args.common.gates)?;
    let opts = crate::sim::SimOptions {
        scale: args.scale,
        attempt_log: args.common.attempt_log,
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
    std::fs::create_dir_all(&dir)
        .map_err(|e| AppError::failed(format!("{}: {e}", dir.display())))?;
    let mut result = output.result;
    if args.common.attempt_log {
        write_attempts(&dir, &output.attempts)?;
    }
    finish(&dir, &mut result, &gates, false)
}

/// `--abort-on-fail`: true as soon as a gate on a count that can only grow is already
/// broken for some config (e.g. `attempts <= 1000` with 1001 attempts sent).
fn abort_check(gates: Vec<report::gates::Gate>) -> live::AbortCheck {
    use report::gates::{can_no_longer_pass, is_monotone_count, Selector};
    let gates: Vec<_> = gates
        .into_iter()
        .filter(|g| is_monotone_count(&g.figure))
        .collect();
    std::sync::Arc::new(move |snap: &live::Snapshot| {
        gates.iter().any(|g| {
            let applies = match &g.selector {
                Selector::All => true,
                Selector::Config(name) => *name == snap.config,
            };
            applies
                && snap
                    .figures
                    .iter()
                    .find(|(name, _)| *name == g.figure)
                    .is_some_and(|(_, v)| can_no_longer_pass(g, *v))
        })
    })
}

/// Waits for SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn write_attempts(dir: &Path, rows: &[crate::metrics::AttemptRow]) -> Result<(), AppError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).map_err(AppError::failed)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| AppError::failed(e.to_string()))?;
    files::write_atomic(dir, "attempts.csv", &bytes).map_err(AppError::failed)
}

/// Gates, files, page, console summary, exit code: the same for every engine. `aborted`
/// says the run was stopped on purpose by `--abort-on-fail` (partial, but the verdicts
/// decide the exit code).
fn finish(
    dir: &Path,
    result: &mut RunResult,
    gates: &[report::gates::Gate],
    aborted: bool,
) -> Result<Exit, AppError> {
    let verdicts = report::gates::evaluate(gates, result);
    let (verdicts, gate_error) = match verdicts {
        Ok(v) => (v, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    result.gates = verdicts;
    files::write_data(dir, result).map_err(AppError::failed)?;
    report::html::write(dir, result, None).map_err(AppError::failed)?;
    if !gates.is_empty() {
        report::junit::write(dir, result).map_err(AppError::failed)?;
    }
    print!("{}", report::text::summary(result));
    if !result.gates.is_empty() {
        print!("{}", report::gates::verdict_table(&result.gates));
    }
    println!("reports: {}", dir.display());
    if let Some(e) = gate_error {
        return Err(AppError::bad(e));
    }
    if result.partial && !aborted {
        eprintln!("stormrig: the run was interrupted; the reports are marked partial");
        return Ok(Exit::RunFailed);
    }
    Ok(if report::gates::all_passed(&result.gates) {
        Exit::Ok
    } else {
        Exit::GateFailed
    })
}

fn bench(cmd: crate::cli::BenchCommand) -> Result<Exit, AppError> {
    use crate::bench;
    use crate::cli::BenchCommand as B;
    let dur = |flag: &str, s: &str| {
        duration::parse(s).map_err(|e| AppError::bad(format!("--{flag}: {e}")))
    };
    match cmd {
        B::Policy { iterations } => {
            let rows = bench::policy_bench(iterations.max(1)).map_err(AppError::bad)?;
            print!("{}", bench::policy_table(&rows));
        }
        B::Generator {
            url,
            connections,
            duration,
            config,
            threads,
        } => {
            let opts = bench::GeneratorOpts {
                url,
                connections,
                duration: dur("duration", &duration)?,
                config,
            };
            let r = bench::generator(&opts, threads).map_err(AppError::bad)?;
            print!("{}", bench::generator_text(&opts, &r));
        }
        B::OpenLoop {
            url,
            rate,
            duration,
            config,
            threads,
            max_in_flight,
            connections,
        } => {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(AppError::bad("--rate must be above 0"));
            }
            let opts = bench::OpenLoopOpts {
                url,
                rate,
                duration: dur("duration", &duration)?,
                config,
                max_in_flight,
                connections: (connections > 0).then_some(connections),
                drain: std::time::Duration::from_secs(2),
            };
            let r = bench::open_loop(&opts, threads).map_err(AppError::bad)?;
            print!("{}", bench::open_loop_text(&opts, &r));
        }
        B::Target {
            listen,
            status,
            threads,
            duration,
        } => {
            let out = bench::target_bench(listen, status, threads, dur("duration", &duration)?)
                .map_err(AppError::bad)?;
            print!("{out}");
        }
        B::Memory {
            rate,
            duration,
            max_in_flight,
            per_try_timeout,
            config,
            threads,
        } => {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(AppError::bad("--rate must be above 0"));
            }
            let opts = bench::MemoryOpts {
                rate,
                duration: dur("duration", &duration)?,
                max_in_flight,
                per_try_timeout: dur("per-try-timeout", &per_try_timeout)?,
                config,
            };
            let r = bench::memory(&opts, threads).map_err(AppError::bad)?;
            print!("{}", bench::memory_text(&opts, &r));
        }
        B::Sim { scale } => {
            let r = crate::bench::sim::run(scale).map_err(AppError::bad)?;
            print!("{}", crate::bench::sim::text(&r));
        }
    }
    Ok(Exit::Ok)
}
