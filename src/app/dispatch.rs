//! A parsed command line handed to the command's own module.

use super::{shards, sweep, AppError, Exit};
use crate::cli::{Cli, Command};
use crate::report::{self, files};

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, AppError> {
    match cli.command {
        Command::Run(args) => super::run::run_live(*args),
        Command::Sim(args) => super::run::run_sim(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Capacity(args) => sweep::capacity(args),
        Command::Calibrate(args) => super::calibrate::calibrate(args),
        Command::New { file, force } => super::template::new(&file, force),
        Command::ReplayCheck {
            scenario,
            recorded,
            bucket_s,
            tolerance,
            json,
        } => super::replay_check::replay_check(&scenario, &recorded, bucket_s, tolerance, json),
        Command::Check {
            scenarios,
            strict,
            explain,
        } => super::check::check(&scenarios, strict, explain),
        Command::Thresholds {
            scenario,
            config,
            max_attempts,
            seed,
            json,
        } => super::check::thresholds(
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
        } => super::proxy::proxy(
            listen,
            &upstream,
            faults.as_deref(),
            seed,
            allow_remote.as_deref(),
            control_token,
        ),
        Command::Toxiproxy {
            listen,
            config,
            seed,
            allow_remote,
        } => super::proxy::toxiproxy(listen, config.as_deref(), seed, allow_remote),
        Command::Merge {
            dirs,
            out,
            scenario,
            gates,
        } => shards::merge(&dirs, &out, scenario.as_deref(), &gates),
        Command::K8s(args) => shards::k8s(&args),
        Command::Bench(b) => super::bench::bench(b),
        Command::Presets { json } => {
            if json {
                let list = serde_json::to_string_pretty(crate::policy::presets::PRESETS)
                    .expect("the preset table serializes");
                super::out::line(list)?;
            } else {
                super::out::say(super::check::presets_table())?;
            }
            Ok(Exit::Ok)
        }
        Command::Report { dir } => {
            let run = files::read_data(&dir).map_err(AppError::bad)?;
            let path = report::html::write(&dir, &run, None).map_err(AppError::failed)?;
            super::out::line(format!("wrote {}", path.display()))?;
            Ok(Exit::Ok)
        }
        Command::Diff {
            baseline,
            run,
            tolerance,
            force,
            changed_only,
        } => super::reports::diff(&baseline, &run, &tolerance, force, changed_only),
    }
}
