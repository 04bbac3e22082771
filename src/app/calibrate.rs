//! `stormrig calibrate`: the step load run live, one step at a time, then the fitted model
//! written and its per-step check printed.

use std::time::{Duration, SystemTime};

use super::{AppError, Exit};
use crate::calibrate::{self, file, steps, CalibrateError, CalibrateOptions, Outcome};
use crate::cli::CalibrateArgs;
use crate::scenario::units::duration;
use crate::scenario::Target;

/// Closed-loop users when neither bound is given.
const DEFAULT_MAX_CONCURRENCY: u32 = 16;

pub(super) fn calibrate(args: CalibrateArgs) -> Result<Exit, AppError> {
    let parse = |flag: &str, text: &str| {
        duration::parse(text).map_err(|e| AppError::bad(format!("{flag}: {e}")))
    };
    let opts = CalibrateOptions {
        max_concurrency: args.max_concurrency.or(match args.max_rate {
            None => Some(DEFAULT_MAX_CONCURRENCY),
            Some(_) => None,
        }),
        max_rate: args.max_rate,
        step_duration: parse("--step-duration", &args.step_duration)?,
        max_time: parse("--max-time", &args.max_time)?,
        overload: args.overload,
    };
    let base = steps::Base::read(&args.scenario).map_err(refused)?;
    let plans = steps::plan_all(&base, &opts).map_err(refused)?;
    if let Target::Url {
        host, port, url, ..
    } = &base.plan.scenario.target
    {
        reachable(host, *port).map_err(|e| {
            AppError::failed(format!(
                "cannot reach the target {url}: {e}; no model written"
            ))
        })?;
    }
    let rt = crate::live::runtime(None).map_err(AppError::failed)?;
    let started = std::time::Instant::now();
    let overload_step = |rate: f64| base.overload_step(rate, &opts);
    let overload: Option<&dyn Fn(f64) -> Result<steps::StepPlan, CalibrateError>> =
        opts.overload.then_some(&overload_step as _);
    let step_duration = opts.step_duration;
    let outcome = calibrate::calibrate(plans, step_duration, overload, |step, index, total| {
        eprintln!(
            "step {index}/{total}: {} for {}; {:.0} s elapsed",
            step.load.label(),
            humantime::format_duration(step_duration),
            started.elapsed().as_secs_f64()
        );
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let opts = crate::live::RunOptions::default();
        rt.block_on(crate::live::run(&step.plan, &opts, rx))
            .map(|o| calibrate::StepRun {
                statuses: o
                    .raw
                    .first()
                    .map(|(_, t)| t.responses_by_status.clone())
                    .unwrap_or_default(),
                result: o.result,
            })
    });
    let c = outcome.map_err(|e| match e {
        Outcome::Calibrate(e @ CalibrateError::NoSuccess { .. }) => {
            AppError::failed(format!("{e}; no model written"))
        }
        Outcome::Calibrate(e) => refused(e),
        Outcome::Live(e) => AppError::failed(format!("{e}; no model written")),
    })?;
    print!("{}", file::table(&c.fit));
    let command: Vec<String> = std::env::args().collect();
    let when = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let text = file::model_file(
        &c,
        &file::Provenance {
            command: &command.join(" "),
            when: &when,
            target: &base.target_label(),
            step: opts.step_duration,
        },
    );
    println!(
        "fitted: {} slots, {}; path overhead {:.3} ms; worst step error {:.1} %",
        c.fit.model.concurrency,
        calibrate::fit::describe(&c.fit.model.service_time),
        c.fit.path_ms,
        c.fit.error * 100.0
    );
    if let Some(q) = &c.fit.queue_fit {
        println!("queue: {}", q.describe());
    }
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| AppError::failed(format!("cannot write {}: {e}", path.display())))?;
            println!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(Exit::Ok)
}

fn refused(e: CalibrateError) -> AppError {
    match e {
        CalibrateError::Sim(m) => AppError::failed(m),
        other => AppError::bad(other),
    }
}

/// One TCP connection to the target before any load: an unreachable target is a failed
/// calibration, said at once with its reason, not a step of 502s.
fn reachable(host: &str, port: u16) -> std::io::Result<()> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = (host, port).to_socket_addrs()?.collect();
    let mut last = std::io::Error::other("no address");
    for a in addrs {
        match std::net::TcpStream::connect_timeout(&a, Duration::from_secs(3)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}
