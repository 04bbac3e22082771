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

/// Logical requests a load plans per config over `duration` (0 for a closed loop, whose
/// work is bounded by its users instead).
pub fn planned_arrivals(shape: &LoadShape, duration: Duration) -> f64 {
    schedule::expected_count(shape, duration)
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
}
