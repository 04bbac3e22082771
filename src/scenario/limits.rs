//! The ceilings a scenario must stay under, checked when it is loaded (so `check`, `run` and
//! `sim` refuse the same files, before any load). Each is far above what a rehearsal on one
//! machine needs, and low enough that a slip of the keyboard (`rate = 1e12`,
//! `users = 4294967295`) is refused with the figure instead of exhausting memory or never
//! ending. README's "Limits" table lists them.

use std::time::Duration;

use super::load_shape::LoadShape;
use super::schedule;

/// Largest scenario, target or faults file read (bytes).
pub const MAX_FILE_BYTES: u64 = crate::input::Kind::Scenario.max_bytes();
/// Longest scenario, config, layer or target name (it names report folders).
pub const MAX_NAME_LEN: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_LEN: usize = 4096;
/// Most closed-loop users per config.
pub const MAX_USERS: u32 = 100_000;
/// Default ceiling on planned arrivals (logical requests over all configs); a scenario may
/// raise it with `load.max_planned_arrivals`.
pub const DEFAULT_MAX_PLANNED_ARRIVALS: u64 = 100_000_000;
/// Largest client fleet per config (`load.clients`): each instance holds its own policy state.
pub const MAX_CLIENTS: u32 = 1_000_000;
/// What one client instance of a fleet costs in memory, rounded up: measured as the growth
/// of the peak resident set of `stormrig sim` (one config, 2 s at 100 req/s) from
/// `clients = 1` to `clients = 1000000`: 105 B per instance for `naive`, 151 B for
/// `aws-standard`, 247 B for `aws-adaptive` (its rate limiter), and the same with every
/// instance used (`stormrig bench fleet-memory`). The config and its tables are shared by
/// the fleet behind one pointer, a breaker is boxed; the live engine keeps the same
/// per-instance policy state. Kept at 512 B: a breaker or a limiter adds its own.
pub const CLIENT_INSTANCE_BYTES: u64 = 512;
/// Default ceiling on client instances over all configs (`configs × load.clients`), about
/// 2 GiB of fleet state at [`CLIENT_INSTANCE_BYTES`] (the ceiling was 1,000,000 at 3 KiB an
/// instance, before the fleet shared its config); a scenario may raise it with
/// `load.max_client_instances`.
pub const DEFAULT_MAX_CLIENT_INSTANCES: u64 = 4_000_000;
/// The shortest a closed-loop user's cycle (attempt plus think time) is taken to be when
/// bounding its work: a keep-alive HTTP/1.1 request on loopback, measured with `stormrig
/// bench floor --connections 1` against nginx, took 22 µs at the median (33,872 req/s on
/// one connection). With `think_time = "0s"` a user cannot send faster than that, so
/// `users × duration / max(think_time, 20 µs)` bounds the attempts a closed loop plans.
pub const CLOSED_LOOP_FLOOR: Duration = Duration::from_micros(20);
/// Largest per-config in-flight cap.
pub const MAX_IN_FLIGHT: u32 = 1_000_000;
/// Largest client connection pool.
pub const MAX_CONNECTIONS: u32 = 65_535;
/// Largest concurrency or queue of a service model, capacity fault or layer.
pub const MAX_SLOTS: u32 = 10_000_000;
/// Most retry configs compared in one scenario.
pub const MAX_CONFIGS: usize = 32;
/// Most topology layers ((K+1)^L grows fast: 4^8 = 65,536×).
pub const MAX_LAYERS: usize = 8;
/// Most fault windows.
pub const MAX_FAULTS: usize = 1_000;

/// The fault windows the `series` faults of one scenario may expand to: a 6 h recording at
/// one step per second is 21,600. A decision looks only at the windows covering its
/// instant (`timeline::ActiveIndex`); the bound is the simulator's fault index, a `u16`,
/// with room left for the hand-written faults ([`MAX_FAULTS`]).
pub const MAX_SERIES_FAULT_WINDOWS: usize = 60_000;
/// Most rate steps.
pub const MAX_STEPS: usize = 10_000;
/// Most gate expressions in a scenario.
pub const MAX_GATES: usize = 1_000;
/// Longest gate expression.
pub const MAX_GATE_LEN: usize = 1_000;
/// Most request headers.
pub const MAX_HEADERS: usize = 100;
/// Longest header value (bytes).
pub const MAX_HEADER_VALUE: usize = 8 * 1024;
/// Longest request path (bytes).
pub const MAX_PATH_LEN: usize = 8 * 1024;
/// Largest request body (bytes).
pub const MAX_BODY: usize = 1 << 20;
/// Fastest `bandwidth` fault (bytes per second); above it the fault shapes nothing on loopback.
pub const MAX_BYTES_PER_S: u64 = 1 << 40;
/// Largest slice of a `slicer` fault (bytes).
pub const MAX_SLICE_BYTES: u32 = 1 << 20;
/// Longest `delay` of a `slow-close` or `slicer` fault: a connection held longer is a hang.
pub const MAX_CONNECTION_DELAY: Duration = Duration::from_secs(3600);
/// The most tokens one request may name (a bound that keeps every sum far from overflow).
pub const MAX_REQUEST_TOKENS: u64 = 10_000_000;
/// Longest error code of a status fault.
pub const MAX_ERROR_CODE_LEN: usize = 256;

/// Logical requests a load plans per config over `duration`. A closed loop has no
/// schedule: its bound is every user starting a request each `max(think_time,`
/// [`CLOSED_LOOP_FLOOR`]`)` (counting it as 0 let `users = 100000`, `think_time = "0s"`
/// pass `check` and simulate 909 M attempts).
pub fn planned_arrivals(shape: &LoadShape, duration: Duration) -> f64 {
    match shape {
        LoadShape::Closed { users, think_time } => {
            let cycle = (*think_time).max(CLOSED_LOOP_FLOOR).as_secs_f64();
            f64::from(*users) * duration.as_secs_f64() / cycle
        }
        _ => schedule::expected_count(shape, duration),
    }
}

/// Refuses a fleet whose state would not fit: `clients` instances for each of `configs`
/// configs above `limit` instances in all. The message gives the memory it would take and
/// how to raise the ceiling.
pub fn check_fleet(clients: u32, configs: usize, limit: u64) -> Result<(), String> {
    let total = u64::from(clients).saturating_mul(configs.max(1) as u64);
    if total > limit {
        return Err(format!(
            "{} client instances ({} per config × {} configs, about {:.1} GiB of client state \
             at {} bytes each), above the ceiling of {}; lower load.clients or the number of \
             configs (--only), or raise load.max_client_instances",
            big(total as f64),
            clients,
            configs.max(1),
            total as f64 * CLIENT_INSTANCE_BYTES as f64 / (1u64 << 30) as f64,
            CLIENT_INSTANCE_BYTES,
            big(limit as f64)
        ));
    }
    Ok(())
}

/// Refuses planned work above `limit`: `per_config` arrivals for each of `configs` configs.
/// The message gives the figure and how to raise the ceiling.
pub fn check_planned(per_config: f64, configs: usize, limit: u64) -> Result<(), String> {
    let total = per_config * configs.max(1) as f64;
    if !total.is_finite() || total > limit as f64 {
        return Err(format!(
            "plans {} arrivals ({} per config × {} configs), above the ceiling of {}; \
             lower the rate or the duration, or raise load.max_planned_arrivals",
            big(total),
            big(per_config),
            configs.max(1),
            big(limit as f64)
        ));
    }
    Ok(())
}

/// A count for a message: whole numbers as such, huge ones in scientific notation.
pub fn big(x: f64) -> String {
    if x.is_finite() && x.abs() < 1e15 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_work_is_refused_with_the_figure() {
        let shape = LoadShape::Constant { rate: 1e12 };
        let per = planned_arrivals(&shape, Duration::from_secs(1));
        let e = check_planned(per, 2, DEFAULT_MAX_PLANNED_ARRIVALS).unwrap_err();
        assert!(e.contains("2000000000000 arrivals"), "{e}");
        assert!(e.contains("max_planned_arrivals"), "{e}");
        assert!(check_planned(f64::INFINITY, 1, u64::MAX).is_err());
        assert!(check_planned(1000.0, 3, DEFAULT_MAX_PLANNED_ARRIVALS).is_ok());
    }

    #[test]
    fn a_closed_loop_plans_a_request_per_user_per_cycle() {
        let shape = |think_ms| LoadShape::Closed {
            users: 100,
            think_time: Duration::from_millis(think_ms),
        };
        let per = planned_arrivals(&shape(100), Duration::from_secs(10));
        assert_eq!(per, 100.0 * 10.0 / 0.1);
        // No think time: the floor bounds the cycle, so the work is not zero.
        let per = planned_arrivals(&shape(0), Duration::from_secs(2));
        assert_eq!(per, 100.0 * 2.0 / CLOSED_LOOP_FLOOR.as_secs_f64());
    }

    #[test]
    fn a_fleet_above_the_ceiling_is_refused_with_its_memory() {
        let e = check_fleet(1_000_000, 32, DEFAULT_MAX_CLIENT_INSTANCES).unwrap_err();
        assert!(e.contains("32000000 client instances"), "{e}");
        assert!(e.contains("15.3 GiB"), "{e}");
        assert!(e.contains("max_client_instances"), "{e}");
        assert!(check_fleet(1_000_000, 1, DEFAULT_MAX_CLIENT_INSTANCES).is_ok());
        assert!(check_fleet(u32::MAX, usize::MAX, u64::MAX).is_ok());
    }
}
