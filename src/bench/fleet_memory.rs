//! `stormrig bench fleet-memory`: what one client instance of a fleet costs in resident
//! memory, a million of them by default (the most one config may have).
//!
//! Every instance is used, not only built: the fleet's session runs one logical request per
//! instance (request `id` goes to instance `id mod N`, as in both engines), each answered
//! 503 once then 200, so every instance has started a request, been refused or granted a
//! retry by its own budget, and ended it. State an instance allocates only when first used
//! is therefore counted. Virtual time moves by a microsecond per attempt (two seconds in
//! all), so the recorder the fleet shares stays a few rows long. The figure is the resident set after that minus the resident set
//! before the fleet was built, over the instances: the fleet's per-instance state and its
//! share of the allocator's overhead, with nothing of the rest of a run.

use std::fmt::Write as _;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use super::{rss_kib, thread_cpu};
use crate::draws::LazyRng;
use crate::policy::{self, AttemptOutcome, Now, Response, RetryClient};
use crate::scenario::limits;
use crate::session::{Session, Step};

/// Default `--clients`: the most instances one config may have.
pub const DEFAULT_CLIENTS: u32 = limits::MAX_CLIENTS;

#[derive(Debug, thiserror::Error)]
pub enum FleetMemoryError {
    #[error("--clients {0}: must be between 1 and {max}", max = limits::MAX_CLIENTS)]
    Clients(u32),
    #[error("--config {0}")]
    Config(String),
    #[error("no resident-set figure on this system (/proc/self/status)")]
    NoProcfs,
}

/// One `bench fleet-memory` run.
#[derive(Debug, Clone)]
pub struct FleetMemoryReport {
    pub config: String,
    pub clients: u32,
    /// The size of one [`RetryClient`] as the fleet stores it inline (its boxed parts apart).
    pub inline_bytes: usize,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub requests: u64,
    pub attempts: u64,
    pub wall: Duration,
    pub cpu: Option<Duration>,
}

impl FleetMemoryReport {
    /// Resident bytes the fleet added per instance.
    pub fn bytes_per_instance(&self) -> u64 {
        self.rss_after_kib.saturating_sub(self.rss_before_kib) * 1024 / u64::from(self.clients)
    }
}

/// Builds a fleet of `clients` instances of preset `config` and sends one request through
/// each; the fleet stays alive until the resident set is read.
pub fn run(config: &str, clients: u32) -> Result<FleetMemoryReport, FleetMemoryError> {
    let size = NonZeroU32::new(clients)
        .filter(|n| n.get() <= limits::MAX_CLIENTS)
        .ok_or(FleetMemoryError::Clients(clients))?;
    let retry = policy::preset(config).map_err(|e| FleetMemoryError::Config(e.to_string()))?;
    let cpu0 = thread_cpu();
    let start = Instant::now();
    let rss_before_kib = rss_kib().ok_or(FleetMemoryError::NoProcfs)?;
    let mut session = Session::fleet(config, &retry, size, false);
    let mut rng = LazyRng::new(0);
    let (mut requests, mut attempts) = (0u64, 0u64);
    let mut clock = Duration::ZERO;
    for id in 0..u64::from(clients) {
        let now = Now::virtual_at(clock);
        rng.reseed(id);
        requests += 1;
        let mut step = session.start(now, now.mono, id, "GET", None);
        let mut status = 503;
        loop {
            step = match step {
                Step::Send(req, _) => {
                    attempts += 1;
                    clock += Duration::from_micros(1);
                    let outcome = AttemptOutcome::Response(Response::status(status));
                    status = 200;
                    let at = Now::virtual_at(clock);
                    session.outcome(at, req, Duration::from_micros(1), &outcome, &mut rng)
                }
                // The clock does not jump over the wait (as `bench policy`'s): a million
                // backoffs would stretch the run over days of virtual time, and the
                // recorder's rows per second would be counted as the fleet's.
                Step::Wait(req, _) => session.permit(Now::virtual_at(clock), req),
                Step::Done(_) => break,
            };
        }
    }
    let rss_after_kib = rss_kib().ok_or(FleetMemoryError::NoProcfs)?;
    let wall = start.elapsed();
    let cpu = thread_cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
    std::hint::black_box(&session);
    Ok(FleetMemoryReport {
        config: config.to_string(),
        clients,
        inline_bytes: std::mem::size_of::<RetryClient>(),
        rss_before_kib,
        rss_after_kib,
        requests,
        attempts,
        wall,
        cpu,
    })
}

/// The run's `key=value` lines.
pub fn text(r: &FleetMemoryReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "bench=fleet-memory");
    let _ = writeln!(out, "config={}", r.config);
    let _ = writeln!(out, "clients={}", r.clients);
    let _ = writeln!(out, "requests={}", r.requests);
    let _ = writeln!(out, "attempts={}", r.attempts);
    let _ = writeln!(out, "rss_before_kib={}", r.rss_before_kib);
    let _ = writeln!(out, "rss_after_kib={}", r.rss_after_kib);
    let _ = writeln!(out, "inline_bytes={}", r.inline_bytes);
    let _ = writeln!(out, "bytes_per_instance={}", r.bytes_per_instance());
    let _ = writeln!(out, "wall_s={:.3}", r.wall.as_secs_f64());
    if let Some(cpu) = r.cpu {
        let _ = writeln!(out, "thread_cpu_s={:.3}", cpu.as_secs_f64());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instance_sends_its_request_and_its_retry() {
        let r = run("aws-standard", 1_000).unwrap();
        // One request per instance, each a 503 then a 200: every budget granted its retry.
        assert_eq!((r.requests, r.attempts), (1_000, 2_000));
        assert!(r.rss_after_kib >= r.rss_before_kib);
    }

    #[test]
    fn refuses_zero_and_too_many_clients_and_unknown_presets() {
        assert!(matches!(run("naive", 0), Err(FleetMemoryError::Clients(0))));
        let over = limits::MAX_CLIENTS + 1;
        assert!(matches!(
            run("naive", over),
            Err(FleetMemoryError::Clients(n)) if n == over
        ));
        assert!(matches!(
            run("no-such-preset", 10),
            Err(FleetMemoryError::Config(_))
        ));
    }
}
