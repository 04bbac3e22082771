//! HTTP/2 upstreams that flood the fault proxy with frames that carry no answer: endless
//! interim (1xx) HEADERS on a request's stream, an endless CONTINUATION of one header
//! block, PING and SETTINGS floods. Each is a whole `stormrig run` against a hand-written
//! HTTP/2 server on a raw loopback socket (frames written by hand, so nothing in it holds
//! back), measured beside the same run against an upstream that answers at once: the run
//! ends on time, every attempt has an outcome, attempts equal what the proxy counted, and
//! the proxy's CPU stays below one core-second per 100 requests, and each request is
//! answered as a protocol error (the proxy's frame budget, `src/server/frame_budget.rs`).
//!
//! Measured before the frame budget (40 requests, 2 s upstream timeout, one shared
//! connection): endless interim HEADERS cost 2.44 CPU-s above the peer, each request ended
//! by the upstream timeout; PING and SETTINGS floods 0.27 and 0.55 CPU-s, likewise; the
//! CONTINUATION flood met h2's own bound (GOAWAY ENHANCE_YOUR_CALM), then relayed to the
//! client as a stream reset the service made. With the budget: 0.01 to 0.03 CPU-s above
//! the peer, every request a protocol error within milliseconds.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::http::local;
use crate::support::process::{bin, cost, tmp_dir, write};

/// What the hostile server sends once a request's HEADERS arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flood {
    /// `:status 100` HEADERS frames on the request's stream, without end.
    Interim,
    /// A HEADERS frame without END_HEADERS, then CONTINUATION frames without end.
    Continuation,
    /// PING frames on the connection, without end; the request is never answered.
    Ping,
    /// SETTINGS frames on the connection, without end; the request is never answered.
    Settings,
    /// No flood: `:status 200`, END_STREAM (the peer the others are measured beside).
    Answer,
    /// No flood: a GOAWAY ENHANCE_YOUR_CALM that processed no stream, for each request.
    GoAway,
}

/// One HTTP/2 frame: length, type, flags, stream, payload (RFC 9113 §4.1).
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(9 + payload.len());
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    f.push(kind);
    f.push(flags);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// HPACK: `:status` (static index 8) with the literal value `100`, not indexed.
const STATUS_100: &[u8] = &[0x08, 0x03, b'1', b'0', b'0'];
/// HPACK: `:status 200` (static index 8, indexed).
const STATUS_200: &[u8] = &[0x88];

/// A hand-written HTTP/2 server on loopback doing `flood` to every request; every
/// connection it serves ends within 60 s whatever its peer does.
pub(crate) async fn h2_flooding(flood: Flood) -> SocketAddr {
    let listener = TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(tokio::time::timeout(
                Duration::from_secs(60),
                serve(s, flood),
            ));
        }
    });
    addr
}

async fn serve(s: TcpStream, flood: Flood) {
    let (mut rd, mut wr) = s.into_split();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
    // The client's preface, then its frames; the streams it opens go to the writer.
    tokio::spawn(async move {
        let mut preface = [0u8; 24];
        if rd.read_exact(&mut preface).await.is_err() {
            return;
        }
        loop {
            let mut h = [0u8; 9];
            if rd.read_exact(&mut h).await.is_err() {
                return;
            }
            let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
            let mut payload = vec![0u8; len];
            if rd.read_exact(&mut payload).await.is_err() {
                return;
            }
            if h[3] == HEADERS {
                let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                if tx.send(id).is_err() {
                    return;
                }
            }
        }
    });
    // Our (empty) SETTINGS and the ACK of the client's.
    let hello = [frame(SETTINGS, 0, 0, &[]), frame(SETTINGS, 1, 0, &[])].concat();
    if wr.write_all(&hello).await.is_err() {
        return;
    }
    let mut streams = Vec::new();
    loop {
        if streams.is_empty() {
            match rx.recv().await {
                Some(id) => streams.push(id),
                None => return,
            }
        }
        while let Ok(id) = rx.try_recv() {
            streams.push(id);
        }
        let batch: Vec<u8> = match flood {
            Flood::Answer => {
                let b: Vec<u8> = streams
                    .drain(..)
                    .flat_map(|id| frame(HEADERS, END_HEADERS | END_STREAM, id, STATUS_200))
                    .collect();
                if wr.write_all(&b).await.is_err() {
                    return;
                }
                continue;
            }
            Flood::GoAway => {
                // Last stream processed: none (0); error code ENHANCE_YOUR_CALM (0xb).
                let b: Vec<u8> = streams
                    .drain(..)
                    .flat_map(|_| frame(GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0xb]))
                    .collect();
                if wr.write_all(&b).await.is_err() {
                    return;
                }
                continue;
            }
            Flood::Interim => streams
                .iter()
                .flat_map(|&id| frame(HEADERS, END_HEADERS, id, STATUS_100).repeat(64))
                .collect(),
            Flood::Continuation => {
                // One header block on the first stream, never ended.
                let id = streams[0];
                let mut b = frame(HEADERS, 0, id, STATUS_100);
                loop {
                    b.extend(frame(CONTINUATION, 0, id, STATUS_100).repeat(64));
                    if wr.write_all(&b).await.is_err() {
                        return;
                    }
                    b.clear();
                }
            }
            Flood::Ping => frame(PING, 0, 0, &[7; 8]).repeat(64),
            Flood::Settings => frame(SETTINGS, 0, 0, &[]).repeat(64),
        };
        if wr.write_all(&batch).await.is_err() {
            return;
        }
    }
}

/// What one run against a flooding upstream cost and counted.
#[derive(Debug)]
pub(crate) struct FloodRun {
    pub code: i32,
    pub wall: Duration,
    pub cpu: Duration,
    pub max_rss_kib: u64,
    /// `duration_s + drain_s` from summary.json: how long the run itself took.
    pub ran_s: f64,
    pub config: serde_json::Value,
}

/// `stormrig run` of 2 s at 20 requests/s (drain 3 s, upstream timeout 2 s) over h2c
/// against `upstream`.
pub(crate) fn run_against(name: &str, upstream: SocketAddr) -> FloodRun {
    let dir = tmp_dir(name);
    let p = write(
        &dir,
        "s.toml",
        &format!(
            "name = \"{name}\"\nduration = \"2s\"\ndrain = \"3s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\nurl = \"http://{upstream}\"\nprotocol = \"h2c\"\nupstream_timeout = \"2s\"\n[[configs]]\npreset = \"no-retry\"\n"
        ),
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    let c = cost(cmd);
    let s: serde_json::Value = std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("{name}: no summary (exit {}): {}", c.code, c.stderr));
    FloodRun {
        code: c.code,
        wall: c.wall,
        cpu: c.cpu,
        max_rss_kib: c.max_rss_kib,
        ran_s: s["duration_s"].as_f64().unwrap() + s["drain_s"].as_f64().unwrap(),
        config: s["configs"][0].clone(),
    }
}

/// The checks every flood must pass; returns the CPU above `peer`'s per attempt.
fn bounded(name: &str, r: &FloodRun, peer: &FloodRun) -> f64 {
    let u = |k: &str| r.config[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    let attempts = u("attempts");
    let extra = r.cpu.saturating_sub(peer.cpu).as_secs_f64();
    eprintln!(
        "{name}: exit {}, wall {:.2} s, ran {:.2} s, cpu {:.2} s (peer {:.2} s), max rss {} KiB \
         (peer {} KiB), attempts {attempts}, outcomes {}, proxy_answered {}, relayed_resets {}",
        r.code,
        r.wall.as_secs_f64(),
        r.ran_s,
        r.cpu.as_secs_f64(),
        peer.cpu.as_secs_f64(),
        r.max_rss_kib,
        peer.max_rss_kib,
        r.config["attempts_by_outcome"],
        r.config["proxy_answered"],
        r.config["relayed_resets"],
    );
    assert!(attempts > 0, "{name}");
    assert!(
        r.ran_s <= 2.0 + 3.0 + 1.0,
        "{name}: the run took {} s",
        r.ran_s
    );
    let by: u64 = r.config["attempts_by_outcome"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(attempts, by, "{name}: every attempt has an outcome");
    assert_eq!(u("unfinished"), 0, "{name}");
    // Each answered by the proxy as a protocol error, marked and counted; none passed off as
    // a reset the service made (h2's own GOAWAY for the CONTINUATION flood included).
    assert_eq!(
        r.config["proxy_answered"]["protocol_error"].as_u64(),
        Some(attempts),
        "{name}"
    );
    assert_eq!(
        r.config["relayed_resets"]["stream_reset"].as_u64(),
        Some(0),
        "{name}"
    );
    assert_eq!(
        attempts,
        u("downstream_arrivals") + u("target_unreached"),
        "{name}: no attempt lost between the ends"
    );
    // One core-second per 100 requests at most, above the peer's own cost.
    let allowed = attempts as f64 * 0.01;
    assert!(
        extra <= allowed,
        "{name}: {attempts} attempts cost {extra:.2} CPU-s above the peer (allowed {allowed:.2})"
    );
    // Memory: nothing a flood sends is kept; a generous bound over the peer's own peak.
    assert!(
        r.max_rss_kib <= peer.max_rss_kib + 64 * 1024,
        "{name}: {} KiB at most resident, the peer {} KiB",
        r.max_rss_kib,
        peer.max_rss_kib
    );
    extra / attempts as f64
}

#[test]
fn http2_floods_at_the_proxy_end_on_time_with_exact_counts_and_bounded_cpu() {
    let rt = crate::support::two_worker_runtime();
    let peer = run_against("h2-answer", rt.block_on(h2_flooding(Flood::Answer)));
    assert_eq!(peer.code, 0, "{:?}", peer);
    let mut failed = Vec::new();
    for flood in [
        Flood::Interim,
        Flood::Continuation,
        Flood::Ping,
        Flood::Settings,
    ] {
        let name = format!("h2-{flood:?}").to_lowercase();
        let r = run_against(&name, rt.block_on(h2_flooding(flood)));
        if let Err(e) = std::panic::catch_unwind(|| bounded(&name, &r, &peer)) {
            failed.push((name, e.downcast_ref::<String>().cloned()));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// An HTTP/2 upstream that refuses each request with GOAWAY (no stream processed,
/// ENHANCE_YOUR_CALM): the proxy resets the client's stream with that code, so the client's
/// outcome is `stream-reset`, as for an RST_STREAM; counted as a reset the service made.
#[test]
fn an_upstream_goaway_reaches_the_client_as_a_stream_reset() {
    let rt = crate::support::two_worker_runtime();
    let r = run_against("h2-goaway", rt.block_on(h2_flooding(Flood::GoAway)));
    let attempts = r.config["attempts"].as_u64().unwrap();
    eprintln!(
        "goaway: exit {}, attempts {attempts}, outcomes {}, relayed_resets {}, proxy_answered {}",
        r.code,
        r.config["attempts_by_outcome"],
        r.config["relayed_resets"],
        r.config["proxy_answered"]
    );
    assert!(attempts > 0);
    assert_eq!(
        r.config["attempts_by_outcome"]["stream-reset"].as_u64(),
        Some(attempts),
        "{}",
        r.config["attempts_by_outcome"]
    );
    assert_eq!(
        r.config["relayed_resets"]["stream_reset"].as_u64(),
        Some(attempts)
    );
    assert_eq!(r.config["target_forwarded"].as_u64(), Some(attempts));
}
