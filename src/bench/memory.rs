//! `stormrig bench memory`: what each request in flight costs in resident memory, and that
//! the in-flight cap keeps the total flat once it is reached.
//!
//! An open loop runs against an in-process built-in target that hangs every request, so
//! requests pile up until the cap; RSS is sampled once a second. Over HTTP/1.1 every
//! hanging request holds a connection, two descriptors in this process (client and target
//! side), so the descriptor limit bounds how many can hang at once; the bench raises its
//! soft limit to the hard one, lowers the cap to what fits and says which limit bound it.
//! Over HTTP/2 in clear they are streams of one connection, and only the target's stream
//! limit bounds them: the in-process target allows as many as the cap.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use super::{
    config_named, one_fault_target, open_loop_run_over, rss_kib, OpenLoopOpts, OpenLoopReport,
};
use crate::live::http::Dialer;
use crate::metrics::TargetStats;
use crate::scenario::{FaultKind, Protocol};
use crate::server::{self, Listen};

/// Descriptors this process keeps besides the connections of the hanging requests, above
/// those already open when the bench starts: the target's listener, the runtime's epoll and
/// wake-up descriptors, the `/proc` files the sampler opens, a connection being replaced.
const SPARE_DESCRIPTORS: u64 = 64;

/// Options of `bench memory`.
#[derive(Debug, Clone)]
pub struct MemoryOpts {
    pub rate: f64,
    pub duration: Duration,
    /// The cap asked for; over HTTP/1.1 it is lowered to what the descriptors allow.
    pub max_in_flight: u64,
    pub per_try_timeout: Duration,
    pub config: String,
    /// HTTP/2 in clear (prior knowledge): every request a stream of one connection.
    pub h2c: bool,
}

impl MemoryOpts {
    pub fn protocol(&self) -> Protocol {
        if self.h2c {
            Protocol::H2c
        } else {
            Protocol::Http1
        }
    }
}

/// What bounded the requests in flight at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The cap asked for (`--max-in-flight`).
    Cap,
    /// The process's descriptor limit (RLIMIT_NOFILE), two per hanging HTTP/1.1 request.
    Descriptors,
    /// The local port range: one port per client connection to the one target address.
    Ports,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Cap => "max-in-flight",
            Bound::Descriptors => "descriptors",
            Bound::Ports => "ephemeral-ports",
        }
    }
}

/// The in-flight cap the run used, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceiling {
    pub max_in_flight: u64,
    pub bound: Bound,
    /// Soft and hard RLIMIT_NOFILE after raising the soft one (None where unknown).
    pub nofile: Option<(u64, u64)>,
    /// Descriptors open when the cap was worked out.
    pub open: Option<u64>,
    /// Size of the local port range.
    pub ports: Option<u64>,
}

/// The cap that fits: `asked` over HTTP/2 (one connection); over HTTP/1.1 at most what the
/// descriptors left (two per request) and the local ports (one per connection) allow.
pub fn ceiling(asked: u64, protocol: Protocol) -> Ceiling {
    let nofile = raise_nofile();
    let open = open_descriptors();
    let ports = local_ports();
    let mut c = Ceiling {
        max_in_flight: asked,
        bound: Bound::Cap,
        nofile,
        open,
        ports,
    };
    if protocol.is_h2() {
        return c;
    }
    if let Some((soft, _)) = nofile {
        let spare = soft.saturating_sub(open.unwrap_or(0) + SPARE_DESCRIPTORS);
        let fits = (spare / 2).max(1);
        if fits < c.max_in_flight {
            c.max_in_flight = fits;
            c.bound = Bound::Descriptors;
        }
    }
    if let Some(p) = ports.filter(|&p| p > 0 && p < c.max_in_flight) {
        c.max_in_flight = p;
        c.bound = Bound::Ports;
    }
    c
}

/// Raises the soft descriptor limit to the hard one (each hanging HTTP/1.1 request holds
/// two) and returns both as they are then.
#[cfg(target_os = "linux")]
fn raise_nofile() -> Option<(u64, u64)> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    if now.current != now.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: now.maximum,
                maximum: now.maximum,
            },
        );
    }
    let after = getrlimit(Resource::Nofile);
    // None is "unlimited".
    let n = |v: Option<u64>| v.unwrap_or(u64::MAX);
    Some((n(after.current), n(after.maximum)))
}

#[cfg(not(target_os = "linux"))]
fn raise_nofile() -> Option<(u64, u64)> {
    None
}

/// Descriptors this process holds now (`/proc/self/fd`).
fn open_descriptors() -> Option<u64> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count() as u64)
}

/// Ports in the kernel's local port range (`ip_local_port_range`).
fn local_ports() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some(hi.saturating_sub(lo) + 1)
}

#[derive(Debug, Clone)]
pub struct MemoryReport {
    /// VmRSS in KiB at each whole second of the load phase (index 0 = before the load).
    pub rss_kib: Vec<u64>,
    /// VmRSS in KiB once the load ended and the requests still hanging were dropped.
    pub rss_after_kib: u64,
    pub open: OpenLoopReport,
    pub target: TargetStats,
    /// The largest number of logical requests in flight at once at the client.
    pub peak_in_flight: u64,
    pub ceiling: Ceiling,
    /// Connections the client opened.
    pub connections: u64,
}

impl MemoryReport {
    /// The largest RSS sampled.
    pub fn peak_rss_kib(&self) -> u64 {
        self.rss_kib.iter().copied().max().unwrap_or(0)
    }

    /// (max − min) / min of the RSS over the second half of the series.
    pub fn second_half_spread(&self) -> f64 {
        let half = &self.rss_kib[self.rss_kib.len() / 2..];
        let (min, max) = half
            .iter()
            .fold((u64::MAX, 0u64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if half.is_empty() || min == 0 {
            return 0.0;
        }
        (max - min) as f64 / min as f64
    }
}

/// `bench memory`: open loop at `rate` against an in-process built-in target that hangs
/// every request; the in-flight cap and the per-try timeout must keep memory flat.
pub fn memory(opts: &MemoryOpts, threads: usize) -> Result<MemoryReport, String> {
    if opts.max_in_flight == 0 {
        return Err("--max-in-flight must be at least 1".into());
    }
    let protocol = opts.protocol();
    let ceiling = ceiling(opts.max_in_flight, protocol);
    let rt = crate::live::runtime(Some(threads)).map_err(|e| e.to_string())?;
    rt.block_on(async {
        let cfg = one_fault_target(FaultKind::Hang, opts.duration + Duration::from_secs(3600));
        let listen = Listen {
            protocol,
            tls: None,
        };
        // Every request in flight may be a stream of the one connection.
        let streams = u32::try_from(ceiling.max_in_flight).unwrap_or(u32::MAX);
        let handle = server::start_listening_streams(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            cfg,
            tokio::time::Instant::now(),
            listen,
            streams,
        )
        .await
        .map_err(|e| e.to_string())?;
        let mut config = config_named(&opts.config)?;
        config.per_try_timeout = Some(opts.per_try_timeout);
        let ol = OpenLoopOpts {
            url: format!("http://{}/", handle.addr()),
            rate: opts.rate,
            duration: opts.duration,
            config: opts.config.clone(),
            max_in_flight: ceiling.max_in_flight,
            connections: None,
            drain: Duration::ZERO,
            pacing: crate::live::pacer::Pacing::DEFAULT,
        };
        // RSS once per second of the load phase, from a task beside the open loop.
        let seconds = opts.duration.as_secs();
        let sampler = tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let mut rss = vec![rss_kib().unwrap_or(0)];
            for s in 1..=seconds {
                tokio::time::sleep_until(start + Duration::from_secs(s)).await;
                rss.push(rss_kib().unwrap_or(0));
            }
            rss
        });
        let wire = Dialer {
            protocol,
            tls: None,
        };
        let (report, crt) = open_loop_run_over(&ol, config, wire).await?;
        let rss = sampler.await.map_err(|e| e.to_string())?;
        // After the requests still hanging were dropped: apart from the series, whose
        // spread is about the load phase.
        let after = rss_kib().unwrap_or(0);
        let peak = crt.with(|g| g.recorder().client_in_flight_peak);
        let connections = crt.http.connections_opened();
        let target = handle.shutdown().await;
        Ok(MemoryReport {
            rss_kib: rss,
            rss_after_kib: after,
            open: report,
            target,
            peak_in_flight: peak,
            ceiling,
            connections,
        })
    })
}

pub fn memory_text(opts: &MemoryOpts, r: &MemoryReport) -> String {
    let na = |v: Option<u64>| v.map_or("NA".to_string(), |v| v.to_string());
    let c = &r.ceiling;
    let mut out = String::new();
    let _ = writeln!(out, "bench=memory");
    let _ = writeln!(out, "protocol={}", opts.protocol().as_str());
    let _ = writeln!(out, "config={}", opts.config);
    let _ = writeln!(out, "rate={:.0}", opts.rate);
    let _ = writeln!(out, "duration_s={:.0}", opts.duration.as_secs_f64());
    let _ = writeln!(out, "max_in_flight_asked={}", opts.max_in_flight);
    let _ = writeln!(out, "max_in_flight={}", c.max_in_flight);
    // What bounded the cap: the one asked for, or (HTTP/1.1) descriptors or local ports.
    let _ = writeln!(out, "in_flight_bound={}", c.bound.as_str());
    let _ = writeln!(
        out,
        "descriptors_per_in_flight={}",
        if opts.h2c { 0 } else { 2 }
    );
    let _ = writeln!(out, "nofile_soft={}", na(c.nofile.map(|n| n.0)));
    let _ = writeln!(out, "nofile_hard={}", na(c.nofile.map(|n| n.1)));
    let _ = writeln!(out, "descriptors_open_before={}", na(c.open));
    let _ = writeln!(out, "local_ports={}", na(c.ports));
    let _ = writeln!(
        out,
        "per_try_timeout_ms={}",
        opts.per_try_timeout.as_millis()
    );
    let _ = writeln!(out, "scheduled={}", r.open.scheduled);
    let _ = writeln!(out, "dropped={}", r.open.counted.dropped);
    let _ = writeln!(out, "requests_finished={}", r.open.counted.requests);
    let _ = writeln!(out, "attempts={}", r.open.counted.attempts);
    let _ = writeln!(out, "connections_opened={}", r.connections);
    let _ = writeln!(out, "target_arrivals={}", r.target.arrivals);
    let _ = writeln!(out, "target_hangs={}", r.target.hangs);
    let _ = writeln!(out, "target_peak_in_flight={}", r.target.peak_in_flight);
    let _ = writeln!(out, "peak_in_flight={}", r.peak_in_flight);
    let _ = writeln!(out, "lag_p99_ms={:.3}", r.open.lag.p99);
    let series: Vec<String> = r.rss_kib.iter().map(|v| v.to_string()).collect();
    let _ = writeln!(out, "rss_kib_series={}", series.join(","));
    let _ = writeln!(out, "rss_after_load_kib={}", r.rss_after_kib);
    let _ = writeln!(
        out,
        "rss_second_half_spread_pct={:.2}",
        r.second_half_spread() * 100.0
    );
    // The whole process's growth (client, pool, connections and the in-process target's
    // side of each hanging request) over the largest number in flight at once.
    let grown = r
        .peak_rss_kib()
        .saturating_sub(r.rss_kib.first().copied().unwrap_or(0));
    let _ = writeln!(out, "rss_growth_kib={grown}");
    let _ = writeln!(
        out,
        "bytes_per_in_flight={}",
        (grown * 1024)
            .checked_div(r.peak_in_flight)
            .map_or("NA".to_string(), |b| b.to_string())
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http2_keeps_the_cap_asked_and_http1_fits_its_descriptors() {
        let h2 = ceiling(100_000, Protocol::H2c);
        assert_eq!((h2.max_in_flight, h2.bound), (100_000, Bound::Cap));
        let h1 = ceiling(u64::MAX / 4, Protocol::Http1);
        assert_ne!(h1.bound, Bound::Cap, "{h1:?}");
        if let (Some((soft, _)), Bound::Descriptors) = (h1.nofile, h1.bound) {
            assert!(h1.max_in_flight * 2 < soft, "{h1:?}");
        }
        let small = ceiling(10, Protocol::Http1);
        assert_eq!((small.max_in_flight, small.bound), (10, Bound::Cap));
    }
}
