//! The I/O edge: turns command-line arguments into runs and reports, and every outcome into
//! one of the documented exit codes. The only module that depends on everything.

pub mod shards;
pub mod sweep;

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
            message: printable(&message.to_string()),
        }
    }
    fn failed(message: impl ToString) -> Self {
        AppError {
            exit: Exit::RunFailed,
            message: printable(&message.to_string()),
        }
    }
}

/// `text` safe to print on a terminal: control characters (ESC, BEL, CR, ...) and the
/// Unicode controls that reorder or hide text are shown escaped (`\u{1b}`), so a scenario
/// file cannot retitle, recolour or rewrite the terminal of whoever checks it. Line breaks
/// between the lines of a message are kept.
pub fn printable(text: &str) -> String {
    let hidden = |c: char| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    if !text.chars().any(hidden) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, AppError> {
    match cli.command {
        Command::Run(args) => run_live(args),
        Command::Sim(args) => run_sim(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Capacity(args) => sweep::capacity(args),
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
            control_token,
        } => proxy(
            listen,
            &upstream,
            faults.as_deref(),
            seed,
            allow_remote.as_deref(),
            control_token,
        ),
        Command::Merge {
            dirs,
            out,
            scenario,
            gates,
        } => shards::merge(&dirs, &out, scenario.as_deref(), &gates),
        Command::K8s(args) => shards::k8s(&args),
        Command::Bench(b) => bench(b),
        Command::Presets { json } => {
            if json {
                let list = serde_json::to_string_pretty(crate::policy::presets::PRESETS)
                    .expect("the preset table serializes");
                println!("{list}");
            } else {
                print!("{}", presets_table());
            }
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
            force,
        } => diff(&baseline, &run, &tolerance, force),
    }
}

fn check(paths: &[PathBuf], strict: bool, explain: bool) -> Result<Exit, AppError> {
    let mut warned = 0;
    for p in paths {
        let plan = plan::load(p).map_err(AppError::bad)?;
        gates_of(&plan, &[])?;
        println!(
            "{}: ok ({} configs, {} faults, {} s)",
            printable(&p.display().to_string()),
            plan.configs.len(),
            plan.scenario.faults.len(),
            plan.scenario.duration.as_secs_f64()
        );
        if let Some(w) = insecure_warning(&plan) {
            eprintln!("{w}");
            warned += 1;
        }
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
    let mut clients = 1;
    let configs = match (scenario, preset) {
        (Some(p), _) => {
            let plan = plan::load(p).map_err(AppError::bad)?;
            clients = plan.scenario.load.clients.get();
            plan.configs.into_iter().map(|c| c.config).collect()
        }
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
        if clients > 1 {
            println!(
                "a fleet of {clients} clients per config: each instance has its own budget, so \
                 these thresholds hold per instance unchanged; what grows {clients}-fold is the \
                 number of retries allowed before every budget is empty"
            );
        }
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
    control_token: Option<String>,
) -> Result<Exit, AppError> {
    use crate::server::proxy;
    if let Some(t) = &control_token {
        if t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AppError::bad(
                "--control-token: use at least 16 printable characters without spaces",
            ));
        }
    }
    use std::net::ToSocketAddrs;
    if !listen.ip().is_loopback() {
        return Err(AppError::bad(format!(
            "--listen {listen}: the proxy listens on loopback only (127.0.0.1 or [::1])"
        )));
    }
    let (host, port) = crate::scenario::validate::parse_url(upstream)
        .map_err(|e| AppError::bad(format!("--upstream {upstream}: {e}")))?;
    proxy::check_loopback(&host, allow_remote).map_err(AppError::bad)?;
    // Loopback and numeric hosts are connected to as read, never through a resolver; only a
    // name the user allowed with --allow-remote is looked up.
    let upstream_addr = match crate::scenario::host::Host::parse(&host).literal() {
        Some(ip) => std::net::SocketAddr::new(ip, port),
        None => (host.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                AppError::bad(format!("--upstream {upstream}: resolves to no address"))
            })?,
    };
    let faults = match faults {
        Some(p) => proxy::parse_faults_file(p).map_err(AppError::bad)?,
        None => Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    rt.block_on(async {
        let options = proxy::ProxyOptions {
            control_token,
            ..proxy::ProxyOptions::default()
        };
        let server = proxy::serve_standalone_with(listen, upstream_addr, faults, seed, options)
            .await
            .map_err(AppError::failed)?;
        eprintln!(
            "stormrig proxy: {} -> {upstream_addr}; faults: GET|POST http://{}/_stormrig/faults (JSON), metrics: GET http://{}/_stormrig/metrics, each with `Authorization: Bearer {}`",
            server.addr(),
            server.control_addr(),
            server.control_addr(),
            server.control_token()
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
            "{:<22} {}\n{:<22} source: {}\n{:<22} library: {}; checked against: {}",
            p.name, p.summary, "", p.source, "", p.library, p.checked_against
        );
    }
    out
}

fn diff(baseline: &Path, run: &Path, tolerance: &[String], force: bool) -> Result<Exit, AppError> {
    let opts = report::diff::parse_options(tolerance).map_err(AppError::bad)?;
    let a = files::read_data(baseline).map_err(AppError::bad)?;
    let b = files::read_data(run).map_err(AppError::bad)?;
    let m = report::diff::mismatch(&a, &b);
    if !m.fatal.is_empty() && !force {
        return Err(AppError::bad(format!(
            "the two runs are not of the same experiment ({}); pass --force to compare anyway",
            m.fatal.join("; ")
        )));
    }
    for w in m.fatal.iter().chain(&m.warnings) {
        eprintln!("warning: the runs differ in {w}");
    }
    let rows = report::diff::diff(&a, &b, &opts);
    print!("{}", report::diff::table(&rows));
    Ok(if report::diff::has_regression(&rows) {
        Exit::GateFailed
    } else {
        Exit::Ok
    })
}

/// Scenario gates plus command-line gates, parsed and checked against the configs and
/// figures the run will have (a malformed gate, an unknown config or an unknown figure is
/// bad input, refused before any load). A scenario gate's error names its file and line.
fn gates_of(plan: &Plan, extra: &[String]) -> Result<Vec<report::gates::Gate>, AppError> {
    let shape = blank_result(plan);
    let sc = &plan.scenario;
    let located = |i: usize, e: report::gates::GateError| {
        let field = format!("gates[{i}]");
        let line = crate::scenario::load::read_text(&sc.path)
            .ok()
            .and_then(|text| crate::scenario::locate(&text, &field))
            .unwrap_or(1);
        AppError::bad(format!("{}:{line}: {field}: {e}", sc.path.display()))
    };
    let mut gates = Vec::with_capacity(sc.gates.len() + extra.len());
    for (i, text) in sc.gates.iter().enumerate() {
        let g = report::gates::parse(text).map_err(|e| located(i, e))?;
        report::gates::evaluate(std::slice::from_ref(&g), &shape).map_err(|e| located(i, e))?;
        gates.push(g);
    }
    for text in extra {
        let g = report::gates::parse(text).map_err(|e| AppError::bad(format!("--gate: {e}")))?;
        report::gates::evaluate(std::slice::from_ref(&g), &shape)
            .map_err(|e| AppError::bad(format!("--gate: {e}")))?;
        gates.push(g);
    }
    Ok(gates)
}

/// A result of the plan's shape with every count zero: the configs, figures and layers the
/// run will report, for checking gates before the run.
fn blank_result(plan: &Plan) -> RunResult {
    use crate::metrics::{summarize, Engine, Recorder, RunShape, TargetStats};
    let sc = &plan.scenario;
    let shape = RunShape {
        load_duration: sc.duration,
        faults: &[],
        method: &sc.load.method,
    };
    let configs = plan
        .configs
        .iter()
        .map(|c| {
            let (mut summary, _) = summarize(
                &c.name,
                &c.config,
                Some(1.0),
                &Recorder::new(),
                &TargetStats::default(),
                &shape,
            );
            if !plan.layers.is_empty() {
                summary.topology_bound = Some(1.0);
                let hop = |name: &str, max_attempts| {
                    live::layer::layer_summary(name, 0, 0, 0, 0, 0, 0, max_attempts)
                };
                summary.layers.push(hop("client", c.config.max_attempts));
                for l in &plan.layers {
                    summary.layers.push(hop(&l.name, l.config.max_attempts));
                }
            }
            summary
        })
        .collect();
    RunResult {
        scenario: sc.name.clone(),
        description: String::new(),
        seed: sc.seed,
        engine: Engine::Sim,
        partial: false,
        duration_s: sc.duration.as_secs_f64(),
        drain_s: None,
        stormrig_version: String::new(),
        run: None,
        faults: Vec::new(),
        configs,
        gates: Vec::new(),
        shards: None,
        upper_bounds: Default::default(),
        timeseries: Vec::new(),
    }
}

/// Refuses planned work that the command-line overrides (`--only`, `--duration`,
/// `--scale`) took past the scenario's ceilings, naming the scenario file.
fn check_work(plan: &Plan, scale: f64) -> Result<(), AppError> {
    let sc = &plan.scenario;
    crate::scenario::validate::check_work(&sc.load, sc.duration, plan.configs.len(), scale)
        .map_err(|r| AppError::bad(format!("{}: {}: {}", sc.path.display(), r.field, r.message)))
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
        // The baseline every verdict is judged against stays in the run, so a config's
        // verdict (like every other figure of it) is the same with or without `--only`.
        let baseline = plan.scenario.baseline.clone().or_else(|| {
            plan.configs
                .iter()
                .any(|c| c.name == "no-retry")
                .then(|| "no-retry".to_string())
        });
        plan.configs
            .retain(|c| common.only.contains(&c.name) || baseline.as_ref() == Some(&c.name));
    }
    if let Some(d) = &common.duration {
        let d = duration::parse(d).map_err(|e| AppError::bad(format!("--duration: {e}")))?;
        crate::scenario::validate::check_duration("--duration", d)
            .map_err(|r| AppError::bad(format!("{}: {}", r.field, r.message)))?;
        plan.scenario.faults.retain(|f| f.at < d);
        plan.scenario.duration = d;
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

fn run_live(args: RunArgs) -> Result<Exit, AppError> {
    let plan = prepare(&args.common)?;
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
    let scenario_bytes = std::fs::read(&args.common.scenario).map_err(AppError::failed)?;
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
    let opts = live::RunOptions {
        attempt_log: args.common.attempt_log,
        progress: !args.common.quiet,
        abort_when: if args.abort_on_fail {
            abort_check(&gates)
        } else {
            None
        },
        scenario_sha256: Some(scenario_sha256.clone()),
        shard: shard.unwrap_or_default(),
        telemetry: live::telemetry::TelemetryOptions {
            metrics_listen: args.metrics_listen,
            events: args.events.as_ref().map(|p| {
                if p.as_os_str() == "-" {
                    live::telemetry::EventsTo::Stdout
                } else {
                    live::telemetry::EventsTo::File(p.clone())
                }
            }),
        },
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
    let aborted = output.aborted;
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
    if let Some(warning) = local_resource_warning(&result) {
        eprintln!("{warning}");
    }
    let tls = tls_verdict(&plan, &result, output.tls_failure.as_deref());
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

fn run_sim(args: SimArgs) -> Result<Exit, AppError> {
    let plan = prepare(&args.common)?;
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

/// One line naming the cause when attempts failed on this machine's own limits (file
/// descriptors, local ports, buffers): such failures are the generator's, not the target's,
/// and every figure of the run is then suspect.
fn local_resource_warning(result: &RunResult) -> Option<String> {
    let label = crate::policy::AttemptLabel::LocalResource.as_str();
    let n: u64 = result
        .configs
        .iter()
        .filter_map(|c| c.attempts_by_outcome.get(label))
        .sum();
    (n > 0).then(|| {
        format!(
            "stormrig: warning: {n} attempts failed on this machine, not at the target ({label}: too many open \
             files, or no free local port or buffer); open-file limit (ulimit -n) {}: raise it or lower the load",
            open_files_limit().unwrap_or_else(|| "unknown".into())
        )
    })
}

/// The loud line of a scenario whose target certificate goes unchecked.
fn insecure_warning(plan: &Plan) -> Option<String> {
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

/// A flag that SIGINT or SIGTERM turns true, for work that runs without tokio (the
/// simulator). The handlers are in place when this returns, so a signal from then on stops
/// the work (which writes partial reports) instead of killing the process.
fn signal_flag() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, AppError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let set = std::sync::Arc::clone(&flag);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(async move {
                let mut stopped = Box::pin(shutdown_signal());
                // Polled once, the handlers are registered; then say so and wait.
                let already = poll_once(stopped.as_mut()).await;
                let _ = ready_tx.send(());
                if !already {
                    stopped.await;
                }
                set.store(true, Ordering::SeqCst);
            })
        })
        .map_err(AppError::failed)?;
    let _ = ready_rx.recv();
    Ok(flag)
}

/// Polls `fut` once (to run its set-up) without waiting for it; true if it completed.
async fn poll_once<F: std::future::Future + Unpin>(mut fut: F) -> bool {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::pin::Pin::new(&mut fut).poll(cx).is_ready())
    })
    .await
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
    // An interrupted simulation holds the configs it reached: gates on the others have
    // nothing to judge (they were checked against the plan before the run).
    let reached: Vec<report::gates::Gate> = gates
        .iter()
        .filter(|g| match &g.selector {
            report::gates::Selector::Config(name) => {
                !result.partial || result.configs.iter().any(|c| &c.name == name)
            }
            report::gates::Selector::All => true,
        })
        .cloned()
        .collect();
    let verdicts = report::gates::evaluate(&reached, result);
    let (verdicts, gate_error) = match verdicts {
        Ok(v) => (v, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    result.gates = verdicts;
    files::write_tables(dir, result).map_err(AppError::failed)?;
    report::html::write(dir, result, None).map_err(AppError::failed)?;
    if !gates.is_empty() {
        report::junit::write(dir, result).map_err(AppError::failed)?;
    }
    // Last: its presence marks the directory as a finished run.
    files::write_summary(dir, result).map_err(AppError::failed)?;
    print!("{}", report::text::summary(result));
    if !result.gates.is_empty() {
        print!("{}", report::gates::verdict_table(&result.gates));
    }
    println!("reports: {}", dir.display());
    if let Some(e) = gate_error {
        // Gates were checked against the plan before the run; the run happened, so this is
        // not "bad input, nothing ran".
        return Err(AppError::failed(e));
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
            h2c,
        } => {
            let opts = bench::GeneratorOpts {
                url,
                connections,
                duration: dur("duration", &duration)?,
                config,
                h2c,
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
            spin_us,
            batch_us,
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
                pacing: crate::live::pacer::Pacing {
                    spin: std::time::Duration::from_micros(spin_us),
                    batch: std::time::Duration::from_micros(batch_us),
                },
            };
            let r = bench::open_loop(&opts, threads).map_err(AppError::bad)?;
            print!("{}", bench::open_loop_text(&opts, &r));
        }
        B::Floor {
            url,
            rate,
            duration,
            connections,
            batch_us,
        } => {
            use crate::bench::floor;
            let mode = match rate {
                Some(rate) => floor::FloorMode::Open {
                    rate,
                    batch: std::time::Duration::from_micros(batch_us),
                },
                None => floor::FloorMode::Closed,
            };
            let opts = floor::FloorOpts::new(&url, connections, dur("duration", &duration)?, mode)
                .map_err(AppError::bad)?;
            let r = floor::run(&opts).map_err(AppError::failed)?;
            print!("{}", floor::text(&opts, &r));
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
            h2c,
        } => {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(AppError::bad("--rate must be above 0"));
            }
            if max_in_flight == 0 {
                return Err(AppError::bad("--max-in-flight must be at least 1"));
            }
            let opts = bench::MemoryOpts {
                rate,
                duration: dur("duration", &duration)?,
                max_in_flight,
                per_try_timeout: dur("per-try-timeout", &per_try_timeout)?,
                config,
                h2c,
            };
            let r = bench::memory(&opts, threads).map_err(AppError::bad)?;
            print!("{}", bench::memory_text(&opts, &r));
        }
        B::SimMemory { population } => {
            let r = crate::bench::sim_memory::run(population).map_err(AppError::bad)?;
            print!("{}", crate::bench::sim_memory::text(&r));
        }
        B::Sim { scale } => {
            let r = crate::bench::sim::run(scale).map_err(AppError::bad)?;
            print!("{}", crate::bench::sim::text(&r));
        }
    }
    Ok(Exit::Ok)
}
