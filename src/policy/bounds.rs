//! How much load a config can add at most, from its settings alone: the bounds the reports
//! hold a run's amplification against. Pure arithmetic on retry configs, so that the plan,
//! the run summaries and the scale-out sizing all read one definition.

use std::time::Duration;

use super::budget::{BudgetConfig, RatioConfig};
use super::config::RetryConfig;

/// The most amplification a config can cause in a run of `duration` at `mean_rate`
/// logical requests per second: its attempt cap, tightened by a ratio budget to
/// 1 + ratio + the reserve's share (min_per_sec over the run plus the initial ttl's worth,
/// spread over the requests). Other budgets have no static bound tighter than the cap.
///
/// A hedging config's cap counts its copies: its `max_attempts` is the hedging one (the
/// config validates that), so a call's copies are bounded as a call's attempts are.
///
/// A fleet of N clients has N reserves: its bound is one instance's, at the rate each
/// instance sees ([`fleet_bound`]).
pub fn amplification_bound(config: &RetryConfig, mean_rate: f64, duration: Duration) -> f64 {
    let cap = f64::from(config.max_attempts);
    match &config.budget {
        BudgetConfig::Ratio(RatioConfig {
            ratio,
            ttl,
            min_per_sec,
            ..
        }) if mean_rate > 0.0 && !duration.is_zero() => {
            let requests = mean_rate * duration.as_secs_f64();
            let reserve = f64::from(*min_per_sec) * (duration + *ttl).as_secs_f64();
            cap.min(1.0 + ratio + reserve / requests)
        }
        _ => cap,
    }
}

/// [`amplification_bound`] of a fleet of `clients` instances sharing `mean_rate` evenly: the
/// ratio's share is the same per instance, the reserve is each instance's own.
pub fn fleet_bound(
    config: &RetryConfig,
    clients: std::num::NonZeroU32,
    mean_rate: f64,
    duration: Duration,
) -> f64 {
    amplification_bound(config, mean_rate / f64::from(clients.get()), duration)
}

/// Bounds of a topology run for one compared config: `(budget_bound, worst_case)`.
///
/// `worst_case` is the product of every retrying hop's max attempts (the generator's config,
/// then each layer's): (K+1)^L when all have K retries. `budget_bound` is the product of the
/// per-hop [`amplification_bound`]s, where the rate arriving at hop i is the rate of attempts
/// hop i−1 may send (the upstream rate times the bounds so far); with a ratio budget r at
/// every hop it tends to (1+r)^L plus the minimum-per-second allowance.
pub fn topology_bounds<'a>(
    generator: &RetryConfig,
    clients: std::num::NonZeroU32,
    layers: impl IntoIterator<Item = &'a RetryConfig>,
    mean_rate: f64,
    duration: Duration,
) -> (f64, f64) {
    let mut worst = f64::from(generator.max_attempts);
    let mut bound = fleet_bound(generator, clients, mean_rate, duration);
    for l in layers {
        worst *= f64::from(l.max_attempts);
        bound *= amplification_bound(l, mean_rate * bound, duration);
    }
    (bound, worst)
}
