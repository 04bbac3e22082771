//! `stormrig bench`: the benchmarks of the policy core, the generator, the built-in target
//! and the simulator.

use super::{AppError, Exit};
use crate::scenario::units::duration;

pub(super) fn bench(cmd: crate::cli::BenchCommand) -> Result<Exit, AppError> {
    use crate::bench;
    use crate::cli::BenchCommand as B;
    match cmd {
        B::Policy { iterations } => {
            let rows = bench::policy_bench(iterations.max(1)).map_err(AppError::bad)?;
            super::out::say(bench::policy_table(&rows))?;
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
            super::out::say(bench::generator_text(&opts, &r))?;
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
                    batch: batch(batch_us),
                },
            };
            let r = bench::open_loop(&opts, threads).map_err(AppError::bad)?;
            super::out::say(bench::open_loop_text(&opts, &r))?;
        }
        B::Floor {
            url,
            rate,
            duration,
            connections,
            batch_us,
        } => floor(&url, rate, &duration, connections, batch_us)?,
        B::Target {
            listen,
            status,
            threads,
            duration,
        } => {
            let out = bench::target_bench(listen, status, threads, dur("duration", &duration)?)
                .map_err(AppError::bad)?;
            super::out::say(out)?;
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
            super::out::say(bench::memory_text(&opts, &r))?;
        }
        B::SimMemory { population } => {
            let r = crate::bench::sim_memory::run(
                population.unwrap_or(crate::bench::sim_memory::DEFAULT_POPULATION),
            )
            .map_err(AppError::bad)?;
            super::out::say(crate::bench::sim_memory::text(&r))?;
        }
        B::FleetMemory { clients, config } => {
            let r = crate::bench::fleet_memory::run(&config, clients).map_err(AppError::bad)?;
            super::out::say(crate::bench::fleet_memory::text(&r))?;
        }
        B::Sim { scale } => {
            let r = crate::bench::sim::run(scale.unwrap_or(crate::bench::sim::DEFAULT_SCALE))
                .map_err(AppError::bad)?;
            super::out::say(crate::bench::sim::text(&r))?;
        }
    }
    Ok(Exit::Ok)
}

/// `--batch-us`, or the batching `stormrig run` paces with.
fn batch(batch_us: Option<u64>) -> std::time::Duration {
    batch_us.map_or(
        crate::live::pacer::Pacing::DEFAULT.batch,
        std::time::Duration::from_micros,
    )
}

/// A `--duration`-like flag's value, or a refusal naming the flag.
fn dur(flag: &str, s: &str) -> Result<std::time::Duration, AppError> {
    duration::parse(s).map_err(|e| AppError::bad(format!("--{flag}: {e}")))
}

/// `bench floor`: the cheapest load loop this machine allows, closed or at `rate`.
fn floor(
    url: &str,
    rate: Option<f64>,
    duration: &str,
    connections: usize,
    batch_us: Option<u64>,
) -> Result<(), AppError> {
    use crate::bench::floor;
    let mode = match rate {
        Some(rate) => floor::FloorMode::Open {
            rate,
            batch: batch(batch_us),
        },
        None => floor::FloorMode::Closed,
    };
    let opts = floor::FloorOpts::new(url, connections, dur("duration", duration)?, mode)
        .map_err(AppError::bad)?;
    let r = floor::run(&opts).map_err(AppError::failed)?;
    super::out::say(floor::text(&opts, &r))?;
    Ok(())
}
