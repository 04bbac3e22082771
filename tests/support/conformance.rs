//! stormrig's side of the tests that hold a preset against the real client library it
//! names: the preset's calls through the live engine's client against the scripted server
//! (`super::scripted`), and the delays its policy decided, replayed.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;

use super::scripted::Seen;
use stormrig::live::clock::Epoch;
use stormrig::live::driver::{ConfigRuntime, Final, RequestTemplate, RuntimeSpec};
use stormrig::live::http::{self, Reply};
use stormrig::policy::{
    preset, AttemptOutcome, Decision, Now, Permit, Response, RetryClient, TransportError,
};
use stormrig::scenario::Protocol;

/// stormrig's preset makes `calls` at once against `base` (paths `/CLIENT/CALL/...`)
/// through the live engine's client, each a `method` request; each call's end, named as
/// the SDK scripts name it.
pub async fn stormrig_calls(
    method: Method,
    preset_name: &str,
    client: &str,
    base: &str,
    epoch: &Epoch,
    calls: &[&str],
    seed: u64,
) -> BTreeMap<String, String> {
    let rt = Arc::new(runtime(preset_name, base, seed, calls.len() as u64, false));
    let tasks: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let rt = rt.clone();
            let epoch = *epoch;
            let tmpl = RequestTemplate {
                method: method.clone(),
                path: format!("/{client}/{call}/v1/call"),
                headers: HeaderMap::new(),
                body: Bytes::from_static(b"{}"),
                grpc: false,
                class: None,
                tokens: None,
            };
            let call = call.to_string();
            tokio::spawn(async move {
                let done = rt
                    .drive(&epoch, &tmpl, i as u64 + 1, epoch.elapsed(), None)
                    .await;
                let end = end_of(&done);
                (call, end)
            })
        })
        .collect();
    let mut ends = BTreeMap::new();
    for t in tasks {
        let (call, end) = t.await.unwrap();
        ends.insert(call, end);
    }
    ends
}

/// The live engine's client for `preset_name` against `base`, over HTTP/1.1 with no trace
/// headers but `x-stormrig-request`.
pub fn runtime(
    preset_name: &str,
    base: &str,
    seed: u64,
    max_in_flight: u64,
    attempt_log: bool,
) -> ConfigRuntime {
    let config = preset(preset_name).unwrap();
    ConfigRuntime::new(RuntimeSpec {
        draw_key: stormrig::draws::config_key(preset_name),
        name: preset_name,
        config: &config,
        clients: NonZeroU32::MIN,
        base_uri: base.to_string(),
        max_in_flight,
        max_connections: None,
        seed,
        propagate_deadline: false,
        attempt_log,
        wire: http::Dialer {
            protocol: Protocol::Http1,
            tls: None,
        },
        trace: None,
        classes: &[],
        class_policies: &[],
    })
}

/// How a call ended, named as the library scripts name it: `ok`, `status 503`,
/// `connection-error`.
pub fn end_of(done: &Final) -> String {
    match (&done.reply, done.ok) {
        (_, true) => "ok".to_string(),
        (Some(Reply::Response { status, .. }), false) => format!("status {status}"),
        (Some(Reply::Failed(TransportError::Reset)), false) => "connection-error".to_string(),
        (other, _) => format!("{other:?}"),
    }
}

/// A library script's calls (`SCRIPT calls ARGS... BASE CALL,...`): each call's end and the
/// delays the library decided, as the script prints them, one JSON line per call.
pub fn library_calls(
    script: &str,
    args: &[&str],
    base: &str,
    calls: &[&str],
) -> BTreeMap<String, (String, Vec<f64>)> {
    let joined = calls.join(",");
    let mut all = vec!["calls"];
    all.extend_from_slice(args);
    all.extend([base, joined.as_str()]);
    calls_by_name(super::python::json_lines(script, &all))
}

/// A client driver's printed lines (`{"call", "outcome", "delays"}`, one per call) as each
/// call's end and the delays the library decided, by call name; drivers in any language
/// print this shape.
pub fn calls_by_name(lines: Vec<serde_json::Value>) -> BTreeMap<String, (String, Vec<f64>)> {
    lines
        .into_iter()
        .map(|v| {
            let delays = v["delays"].as_array().unwrap();
            (
                v["call"].as_str().unwrap().to_string(),
                (
                    v["outcome"].as_str().unwrap().to_string(),
                    delays.iter().map(|d| d.as_f64().unwrap()).collect(),
                ),
            )
        })
        .collect()
}

/// The request id [`stormrig_calls`] gave `call`.
pub fn request_of(calls: &[&str], call: &str) -> u64 {
    calls.iter().position(|c| *c == call).expect("a call") as u64 + 1
}

/// The delays stormrig's live client decided for request `request` of `preset_name`, as
/// the policy draws them: the live driver seeds each request's jitter from (seed, config,
/// request) alone, so the same policy with the same seed decides the same delays. (A
/// jittered call's delays do not depend on its answer's status; its hint-free answers
/// draw one number per retry.) The live gaps are then held to these, and these, not the
/// gaps, are compared with the SDK's own as distributions: the gaps carry each client's
/// own timer and scheduling lateness, which is no part of the retry policy.
pub fn replayed_delays(preset_name: &str, seed: u64, request: u64, retries: usize) -> Vec<f64> {
    let mut client = RetryClient::new(&preset(preset_name).unwrap());
    let mut rng = stormrig::draws::LazyRng::new(stormrig::draws::request_seed(
        seed,
        stormrig::draws::config_key(preset_name),
        request,
    ));
    let now = Now::virtual_at(Duration::ZERO);
    let mut req = client.start(now, "POST", None);
    let mut delays = Vec::new();
    while delays.len() < retries {
        assert!(matches!(
            client.before_attempt(now, &mut req),
            Permit::Send { .. }
        ));
        let failed = AttemptOutcome::Response(Response::status(503));
        match client.on_outcome(now, &mut req, &failed, &mut rng) {
            Decision::Retry { after, .. } => delays.push(after.as_secs_f64()),
            other => panic!("{preset_name}: {other:?} before {retries} retries"),
        }
    }
    delays
}

/// The gaps between a call's arrivals, in seconds.
pub fn gaps(seen: &Seen) -> Vec<f64> {
    seen.arrivals
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect()
}

/// Allowance for stormrig's own work between reading an answer and sending the next attempt
/// (a new connection included), above the delay it decided: the median of a test's gaps
/// must lie within it.
pub const WORK: f64 = 0.020;
/// The most one gap may run late: a timer that fires while other tests or builds hold both
/// cores. A gap beyond it is not lateness but a wrong delay.
pub const LATE: f64 = 0.150;

/// The most a library may spend between the server sending an HTTP-date and the library
/// reading its clock to turn it into a delay: the answer's delivery and parsing, in Python or
/// Node, on a machine other builds load.
pub const CLIENT_WORK: f64 = 0.25;

/// A library's decided delay `decided` for an HTTP-date that was `ahead` seconds ahead when the
/// server sent it: measured from the library's own later now, so never longer than `ahead`
/// (2 ms of clock granularity) and shorter by at most [`CLIENT_WORK`].
pub fn assert_date_decision(what: &str, decided: f64, ahead: f64) {
    assert!(
        decided <= ahead + 0.002 && decided >= ahead - CLIENT_WORK,
        "{what}: decided {decided:.4} s for a date {ahead:.4} s ahead"
    );
}

/// How late stormrig's measured gaps ran against the delays its policy decided.
#[derive(Default)]
pub struct Lateness(Vec<f64>);

impl Lateness {
    /// Holds one gap to its decided delay: never shorter (2 ms of clock granularity), never
    /// later than [`LATE`]; `what` names the retry in a failure.
    pub fn check(&mut self, what: &str, gap: f64, decided: f64) {
        assert!(
            gap >= decided - 0.002 && gap <= decided + LATE,
            "{what}: waited {gap:.4} s, decided {decided:.4} s"
        );
        self.0.push(gap - decided);
    }

    /// The median lateness is within [`WORK`].
    pub fn assert_median(mut self, who: &str) {
        assert!(!self.0.is_empty(), "{who}: no gap was checked");
        self.0.sort_by(f64::total_cmp);
        let median = self.0[self.0.len() / 2];
        eprintln!(
            "{who}: gaps beyond the decided delays: median {:.1} ms, max {:.1} ms over {}",
            median * 1e3,
            self.0.last().unwrap() * 1e3,
            self.0.len()
        );
        assert!(median <= WORK, "{who}: median lateness {median:.4} s");
    }
}

/// One call's verdict: the library (`lib`: its name, what the server saw of it, how the call
/// ended) and stormrig's preset (`preset`, the same) each made the scripted number of
/// attempts and ended as scripted (`want`).
pub fn assert_call(
    call: &str,
    lib: (&str, &Seen, &str),
    preset: (&str, &Seen, &str),
    want: (usize, &str),
) {
    assert_eq!(
        (lib.1.arrivals.len(), lib.2),
        want,
        "{} {call}: the library's attempts and end",
        lib.0
    );
    assert_eq!(
        (preset.1.arrivals.len(), preset.2),
        want,
        "{} {call}: stormrig's attempts and end, as the library's",
        preset.0
    );
}
