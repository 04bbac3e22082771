//! `stormrig bench floor`: the least CPU per request a load loop can spend on this machine.
//!
//! A peer no real client can beat, measured in the same run as the generator and the open
//! loop: one thread, one epoll set, keep-alive HTTP/1.1 connections, one fixed GET, each
//! reply delimited by its head and `Content-Length` and otherwise ignored. No retry policy,
//! no recording beyond counts and two histograms, no async runtime, no allocation per
//! request. Closed, every connection sends its next request as soon as its reply is in;
//! open, arrivals come at a constant rate on an absolute timerfd and share a wake-up within
//! the same batch window as the open loop's pacing.
//!
//! What the two modes cost apart is what the machine itself charges for pacing: arming a
//! timer, sleeping between arrivals, and waking a target that went idle between requests.
//! On a virtual machine the last two are interrupts between virtual CPUs that land in the
//! sender's system time; a closed loop at full speed never pays them, an open loop below
//! the target's capacity always does. The ratio of stormrig's open loop to its closed loop
//! can then be read against this floor's own ratio.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::epoll;
use rustix::time::{
    timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId, TimerfdFlags,
    TimerfdTimerFlags, Timespec,
};

use crate::metrics::Percentiles;

/// The epoll key of the timer (connections are keyed by their index).
const TIMER: u64 = u64::MAX;
/// A reply head and body larger than this is refused rather than buffered without bound.
const MAX_REPLY: usize = 1 << 20;
/// How long replies still in flight after the load phase are waited for.
const DRAIN: Duration = Duration::from_secs(2);
/// The longest one epoll wait sleeps: the loop checks its deadlines at least this often.
const TICK: Duration = Duration::from_millis(10);

/// How requests are started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloorMode {
    /// Every connection sends its next request when its reply is in.
    Closed,
    /// `rate` arrivals per second, one every 1/rate; an arrival that finds every connection
    /// busy is dropped and counted. Arrivals due within `batch` of the next one start on
    /// its wake-up, as [`crate::live::pacer::Pacing::batch`] does in the open loop.
    Open { rate: f64, batch: Duration },
}

/// Options of `bench floor`.
#[derive(Debug, Clone)]
pub struct FloorOpts {
    /// A loopback address (checked by [`FloorOpts::new`]).
    addr: SocketAddr,
    path: String,
    pub connections: usize,
    pub duration: Duration,
    pub mode: FloorMode,
}

/// Why the floor could not run.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    #[error("--url {0}: must be http://HOST:PORT/path")]
    Url(String),
    #[error("--url {0}: loopback only (127.0.0.1, [::1] or localhost)")]
    NotLoopback(String),
    #[error("--connections must be between 1 and 100000")]
    Connections,
    #[error("--rate must be above 0 and at most 10000000")]
    Rate,
    #[error("connecting to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the target closed a keep-alive connection")]
    Closed,
    #[error("a request did not fit the socket buffer of an idle connection")]
    ShortWrite,
    #[error("a reply the floor cannot delimit: {0}")]
    Reply(&'static str),
}

impl From<rustix::io::Errno> for FloorError {
    fn from(e: rustix::io::Errno) -> Self {
        FloorError::Io(e.into())
    }
}

impl FloorOpts {
    /// Validated options: `url` is `http://HOST:PORT/path` with a loopback host by the
    /// loopback guard's rules ([`crate::scenario::host`]), so nothing is ever sent off the
    /// machine and no name is resolved.
    pub fn new(
        url: &str,
        connections: usize,
        duration: Duration,
        mode: FloorMode,
    ) -> Result<Self, FloorError> {
        let bad = || FloorError::Url(url.to_string());
        let rest = url.strip_prefix("http://").ok_or_else(bad)?;
        let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
        let (host, port) = authority.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host = crate::scenario::host::Host::parse(host);
        if !host.is_loopback() {
            return Err(FloorError::NotLoopback(url.to_string()));
        }
        // `localhost` reads as 127.0.0.1 without asking a resolver.
        let addr = SocketAddr::new(host.literal().ok_or_else(bad)?, port);
        if !(1..=100_000).contains(&connections) {
            return Err(FloorError::Connections);
        }
        if let FloorMode::Open { rate, .. } = mode {
            if !(rate.is_finite() && rate > 0.0 && rate <= 1e7) {
                return Err(FloorError::Rate);
            }
        }
        Ok(FloorOpts {
            addr,
            path: path.to_string(),
            connections,
            duration,
            mode,
        })
    }
}

/// What one floor run measured.
#[derive(Debug, Clone)]
pub struct FloorReport {
    /// Requests written.
    pub sent: u64,
    /// Replies read whole.
    pub received: u64,
    /// Arrivals that found every connection busy (open mode).
    pub dropped: u64,
    /// Requests still unanswered when the drain ended.
    pub abandoned: u64,
    /// Arrivals the schedule held (open mode; started or dropped).
    pub scheduled: u64,
    /// From the first request to the end of the load phase.
    pub elapsed: Duration,
    /// Reply latency from the write of its request, µs.
    pub latency: Percentiles,
    /// Start lag of each arrival (actual − intended), µs (open mode).
    pub lag: Percentiles,
    pub lag_max_us: u64,
    pub cpu_s: Option<f64>,
    pub sleeps: Option<u64>,
}

/// One keep-alive connection and the reply it is reading.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    len: usize,
    /// When its request in flight was written (ns on the monotonic clock).
    sent_at: Option<u64>,
}

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock the timerfd is armed on.
fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

/// The length of the first reply in `buf` (head plus body), if it is all there.
fn reply_len(buf: &[u8]) -> Result<Option<usize>, FloorError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut reply = httparse::Response::new(&mut headers);
    let head = match reply.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(FloorError::Reply("not an HTTP/1.1 response head")),
    };
    let mut body = None;
    for h in reply.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(FloorError::Reply("chunked body"));
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or(FloorError::Reply("bad Content-Length"))?;
            body = Some(n);
        }
    }
    let total = head.saturating_add(body.unwrap_or(0));
    if total > MAX_REPLY {
        return Err(FloorError::Reply("larger than 1 MiB"));
    }
    Ok((buf.len() >= total).then_some(total))
}

impl Conn {
    fn send(&mut self, request: &[u8], now: u64) -> Result<(), FloorError> {
        match self.stream.write(request) {
            Ok(n) if n == request.len() => {
                self.sent_at = Some(now);
                Ok(())
            }
            Ok(_) => Err(FloorError::ShortWrite),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(FloorError::ShortWrite),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads until the reply in flight is whole (true) or the socket would block (false).
    /// A whole reply ends the reads without the extra call that would only say "would
    /// block": one request is in flight at a time, so nothing more can come until the next
    /// one is sent, and Linux signals an edge-triggered socket on every arrival of data,
    /// drained or not. Bytes beyond a whole reply are a protocol error of the target.
    fn read(&mut self) -> Result<bool, FloorError> {
        loop {
            if self.len == self.buf.len() {
                if self.buf.len() >= MAX_REPLY {
                    return Err(FloorError::Reply("larger than 1 MiB"));
                }
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.stream.read(&mut self.buf[self.len..]) {
                Ok(0) => return Err(FloorError::Closed),
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            match reply_len(&self.buf[..self.len])? {
                Some(n) if n == self.len => {
                    self.len = 0;
                    return Ok(true);
                }
                Some(_) => return Err(FloorError::Reply("bytes after the reply")),
                None => {}
            }
        }
    }
}

/// Runs the floor on the calling thread (it blocks for the duration plus the drain).
pub fn run(opts: &FloorOpts) -> Result<FloorReport, FloorError> {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: stormrig-floor\r\n\r\n",
        opts.path, opts.addr
    )
    .into_bytes();
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    let mut conns = connect_all(opts, &ep)?;
    let timer: OwnedFd = timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )?;
    epoll::add(
        &ep,
        &timer,
        epoll::EventData::new_u64(TIMER),
        epoll::EventFlags::IN | epoll::EventFlags::ET,
    )?;
    let arm = |at: u64| {
        let spec = Itimerspec {
            it_interval: timespec(0),
            it_value: timespec(at),
        };
        timerfd_settime(&timer, TimerfdTimerFlags::ABSTIME, &spec)
    };

    let mut latency = crate::metrics::latency::new_histogram(3);
    let mut lag = crate::metrics::latency::new_histogram(3);
    let mut r = FloorReport::empty();
    let cpu0 = super::cpu_seconds();
    let sleeps0 = super::voluntary_switches();
    let t0 = mono_ns();
    let load_end = t0.saturating_add(opts.duration.as_nanos() as u64);
    let drain_end = load_end.saturating_add(DRAIN.as_nanos() as u64);
    // Connections without a request in flight (open mode).
    let mut idle: Vec<usize> = Vec::with_capacity(conns.len());
    let (gap, per_wake) = pacing(opts.mode);
    let mut next = t0;
    let mut armed = false;
    match opts.mode {
        FloorMode::Closed => {
            for c in &mut conns {
                c.send(&request, t0)?;
                r.sent += 1;
            }
        }
        FloorMode::Open { .. } => idle.extend(0..conns.len()),
    }
    let mut events = Vec::with_capacity(256);
    loop {
        let now = mono_ns();
        if gap > 0 && next < load_end && now >= next {
            while next < load_end && next <= now {
                r.scheduled += 1;
                lag.saturating_record((now - next) / 1000);
                match idle.pop() {
                    Some(i) => {
                        conns[i].send(&request, now)?;
                        r.sent += 1;
                    }
                    None => r.dropped += 1,
                }
                next += gap;
            }
            armed = false;
        }
        if gap > 0 && next < load_end && !armed {
            let last = next.saturating_add(per_wake * gap).min(load_end - 1);
            arm(last.max(next))?;
            armed = true;
        }
        let in_flight = r.sent - r.received;
        let schedule_done = gap == 0 || next >= load_end;
        if (now >= load_end && schedule_done && in_flight == 0) || now >= drain_end {
            r.abandoned = in_flight;
            break;
        }
        let tick = Duration::from_nanos(drain_end.saturating_sub(now)).min(TICK);
        if !wait(&ep, &mut events, tick)? {
            continue;
        }
        for ev in &events {
            let key = ev.data.u64();
            if key == TIMER {
                // Edge-triggered and re-armed before the next wait: the expiry count is
                // never read, the next arming resets it.
                armed = false;
                continue;
            }
            let i = key as usize;
            let c = &mut conns[i];
            if !c.read()? {
                continue;
            }
            let done = mono_ns();
            let at = c
                .sent_at
                .take()
                .ok_or(FloorError::Reply("a reply to no request"))?;
            latency.saturating_record(done.saturating_sub(at) / 1000);
            r.received += 1;
            if gap == 0 {
                if done < load_end {
                    c.send(&request, done)?;
                    r.sent += 1;
                }
            } else {
                idle.push(i);
            }
        }
    }
    r.elapsed = Duration::from_nanos(load_end.min(mono_ns()).saturating_sub(t0));
    r.cpu_s = super::cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    r.sleeps = super::voluntary_switches()
        .zip(sleeps0)
        .map(|(b, a)| b.saturating_sub(a));
    r.set_latencies(&latency, &lag);
    Ok(r)
}

/// One connection per `opts.connections`, non-blocking and registered with `ep` (key: its
/// index), opened before the clock starts so that connecting is never measured.
fn connect_all(opts: &FloorOpts, ep: &OwnedFd) -> Result<Vec<Conn>, FloorError> {
    let mut conns = Vec::with_capacity(opts.connections);
    for i in 0..opts.connections {
        let stream = TcpStream::connect(opts.addr).map_err(|source| FloorError::Connect {
            addr: opts.addr,
            source,
        })?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        epoll::add(
            ep,
            &stream,
            epoll::EventData::new_u64(i as u64),
            epoll::EventFlags::IN | epoll::EventFlags::ET,
        )?;
        conns.push(Conn {
            stream,
            buf: vec![0; 4096],
            len: 0,
            sent_at: None,
        });
    }
    Ok(conns)
}

/// Open mode: the gap between arrivals (ns) and the arrivals one wake-up may start beyond
/// the first; (0, 0) in closed mode, where a reply starts the next request.
fn pacing(mode: FloorMode) -> (u64, u64) {
    match mode {
        FloorMode::Open { rate, batch } => {
            let gap = ((1e9 / rate) as u64).max(1);
            (gap, batch.as_nanos() as u64 / gap)
        }
        FloorMode::Closed => (0, 0),
    }
}

/// Waits up to `tick` for readiness into `events`; false when a signal interrupted the wait.
fn wait(ep: &OwnedFd, events: &mut Vec<epoll::Event>, tick: Duration) -> Result<bool, FloorError> {
    events.clear();
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: tick.as_nanos() as i64,
    };
    match epoll::wait(ep, rustix::buffer::spare_capacity(events), Some(&timeout)) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

impl FloorReport {
    fn set_latencies(
        &mut self,
        latency: &hdrhistogram::Histogram<u64>,
        lag: &hdrhistogram::Histogram<u64>,
    ) {
        self.latency = Percentiles::of(latency);
        self.lag = Percentiles::of(lag);
        self.lag_max_us = lag.max();
    }

    fn empty() -> FloorReport {
        FloorReport {
            sent: 0,
            received: 0,
            dropped: 0,
            abandoned: 0,
            scheduled: 0,
            elapsed: Duration::ZERO,
            latency: Percentiles::default(),
            lag: Percentiles::default(),
            lag_max_us: 0,
            cpu_s: None,
            sleeps: None,
        }
    }
}

/// `bench floor` output, `key=value` per line, keys as in `bench generator` and
/// `bench open-loop` where they mean the same.
pub fn text(opts: &FloorOpts, r: &FloorReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "bench=floor");
    let _ = writeln!(out, "url=http://{}{}", opts.addr, opts.path);
    let _ = writeln!(out, "connections={}", opts.connections);
    match opts.mode {
        FloorMode::Closed => {
            let _ = writeln!(out, "mode=closed");
        }
        FloorMode::Open { rate, batch } => {
            let _ = writeln!(out, "mode=open");
            let _ = writeln!(out, "rate={rate:.0}");
            let _ = writeln!(out, "batch_us={}", batch.as_micros());
            let _ = writeln!(out, "scheduled={}", r.scheduled);
            let span = opts.duration.as_secs_f64().max(1e-9);
            super::rate_lines(&mut out, r.scheduled as f64 / span, rate);
            super::lag_lines(&mut out, &r.lag, r.lag_max_us);
        }
    }
    let _ = writeln!(out, "duration_s={:.3}", opts.duration.as_secs_f64());
    let _ = writeln!(out, "sent={}", r.sent);
    let _ = writeln!(out, "requests={}", r.received);
    let _ = writeln!(out, "dropped={}", r.dropped);
    let _ = writeln!(out, "abandoned={}", r.abandoned);
    let _ = writeln!(
        out,
        "req_per_s={:.0}",
        r.received as f64 / r.elapsed.as_secs_f64().max(1e-9)
    );
    let _ = writeln!(out, "p50_ms={:.3}", r.latency.p50);
    let _ = writeln!(out, "p99_ms={:.3}", r.latency.p99);
    super::cpu_lines(&mut out, r.cpu_s, r.received);
    super::sleeps_line(&mut out, r.sleeps, r.received);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_ip_literals_are_accepted() {
        let open = FloorMode::Open {
            rate: 100.0,
            batch: Duration::ZERO,
        };
        let ok = |u: &str| FloorOpts::new(u, 1, Duration::from_secs(1), open);
        assert!(ok("http://127.0.0.1:80/").is_ok());
        assert!(ok("http://[::1]:80/x").is_ok());
        assert!(matches!(
            ok("http://10.0.0.1:80/"),
            Err(FloorError::NotLoopback(_))
        ));
        assert_eq!(
            ok("http://localhost:80/").unwrap().addr,
            SocketAddr::from(([127, 0, 0, 1], 80))
        );
        // A name other than localhost would have to be resolved, and could go anywhere.
        assert!(matches!(
            ok("http://evil.localhost:80/"),
            Err(FloorError::NotLoopback(_))
        ));
        assert!(matches!(ok("http://127.0.0.1/"), Err(FloorError::Url(_))));
        assert!(matches!(
            ok("https://127.0.0.1:80/"),
            Err(FloorError::Url(_))
        ));
        assert!(matches!(
            FloorOpts::new("http://127.0.0.1:80/", 0, Duration::from_secs(1), open),
            Err(FloorError::Connections)
        ));
        let bad_rate = FloorMode::Open {
            rate: f64::NAN,
            batch: Duration::ZERO,
        };
        assert!(matches!(
            FloorOpts::new("http://127.0.0.1:80/", 1, Duration::from_secs(1), bad_rate),
            Err(FloorError::Rate)
        ));
    }

    #[test]
    fn a_reply_is_delimited_by_its_content_length() {
        let head = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 3\r\n\r\n";
        let mut whole = head.to_vec();
        whole.extend_from_slice(b"abc");
        assert_eq!(reply_len(&whole).unwrap(), Some(whole.len()));
        assert_eq!(reply_len(&whole[..whole.len() - 1]).unwrap(), None);
        assert_eq!(reply_len(&head[..10]).unwrap(), None);
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        assert!(reply_len(chunked).is_err());
        assert!(reply_len(b"garbage\r\n\r\n").is_err());
    }
}
