//! The `aws-standard` preset held against botocore (the AWS SDK for Python's core, pinned in
//! `tests/python/requirements.txt`) in standard retry mode: one client each, the same calls
//! one after another against the same loopback timeline, compared call by call.
//!
//! The calls share one retry quota, as an application's calls through one client do, so
//! the timeline first walks through the classification (transient statuses, throttling by
//! status and by error code, transient error codes, what is not retried, a reset, an
//! `x-amz-retry-after` hint), then a storm long enough to drain the quota, a few throttled
//! calls at the bottom, a refill by successes, and a second storm. Per call, these must be
//! equal: the attempts the server saw, how the call ended, and the quota's level after it
//! (botocore's `RetryQuota.available_capacity` beside stormrig's `budget_after` of the
//! call's last attempt). Each delay botocore decided (its own debug line) must lie in its
//! formula's range, `[0, base x 2^k)` with base 50 ms (1 s for throttling), and so must
//! stormrig's, which are replayed from the policy with the live run's per-request seeds;
//! stormrig's measured gaps at the server must follow its decided delays within the
//! client's own work; and the two sets of delays, each divided by its range, must pass a
//! two-sample Kolmogorov-Smirnov test. The hinted delay is `max(t, min(hint, t + 5 s))`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use tokio::net::{TcpListener, TcpStream};

use crate::support;
use crate::support::conformance::{end_of, runtime, Lateness};
use crate::support::scripted;
use crate::support::stats::{ks_two_sample, mean};
use stormrig::live::clock::Epoch;
use stormrig::live::driver::RequestTemplate;
use stormrig::policy::{
    preset, AttemptOutcome, Decision, Now, Permit, Response, RetryClient, TransportError,
};

/// What the server answers to one attempt of a call.
#[derive(Clone, Debug)]
enum Answer {
    /// A status, with an error code in `x-amzn-errortype` or none, and extra headers.
    Status(u16, Option<&'static str>, Vec<(&'static str, &'static str)>),
    /// Close the connection with a TCP reset, no answer.
    Reset,
}

/// The calls in order, each its answers before a 200.
fn timeline() -> Vec<Vec<Answer>> {
    use Answer::*;
    let s = |code, error: Option<&'static str>| Status(code, error, vec![]);
    let mut calls = vec![
        vec![s(503, None)],
        vec![s(500, None), s(502, None)],
        vec![s(504, None); 3],
        vec![s(429, None)],
        vec![s(400, Some("ThrottlingException"))],
        vec![s(400, Some("RequestTimeout"))],
        vec![s(400, Some("PriorRequestNotComplete"))],
        vec![s(429, Some("SomeUnmodeledError"))],
        vec![s(400, None)],
        vec![s(404, None)],
        vec![Status(503, None, vec![("x-amz-retry-after", "300")])],
        vec![Reset],
    ];
    // A storm that drains the quota (14 per transient retry, 500 to start with).
    calls.extend(std::iter::repeat_n(vec![s(503, None); 3], 20));
    // Throttled calls at the bottom (5 per throttling retry).
    calls.extend(std::iter::repeat_n(vec![s(429, None)], 3));
    // Successes refill it by one each; then a second storm.
    calls.extend(std::iter::repeat_n(vec![], 20));
    calls.extend(std::iter::repeat_n(vec![s(503, None); 3], 2));
    calls
}

/// One call as the server saw it: arrival instants of its attempts.
type Log = Arc<Mutex<Vec<Vec<Instant>>>>;

/// The loopback server: the calls are told apart by the header each client puts on every
/// attempt of one call (`amz-sdk-invocation-id` for botocore, `x-stormrig-request` for
/// stormrig), numbered in the order they first arrive (the calls are sequential).
async fn serve(listener: TcpListener, log: Log, timeline: Arc<Vec<Vec<Answer>>>) {
    let ids = Arc::new(Mutex::new(Vec::<String>::new()));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let (log, timeline, ids) = (log.clone(), timeline.clone(), ids.clone());
        tokio::spawn(async move {
            let _ = answer(stream, log, timeline, ids).await;
        });
    }
}

async fn answer(
    mut stream: TcpStream,
    log: Log,
    timeline: Arc<Vec<Vec<Answer>>>,
    ids: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let Some(head) = scripted::read_request(&mut stream).await? else {
        return Ok(());
    };
    let arrived = Instant::now();
    let id = head
        .header("amz-sdk-invocation-id")
        .or_else(|| head.header("x-stormrig-request"))
        .expect("every attempt names its call")
        .to_string();
    let (call, attempt) = {
        let mut ids = ids.lock().unwrap();
        let call = match ids.iter().position(|i| *i == id) {
            Some(c) => c,
            None => {
                ids.push(id);
                ids.len() - 1
            }
        };
        let mut log = log.lock().unwrap();
        if log.len() <= call {
            log.resize(call + 1, Vec::new());
        }
        log[call].push(arrived);
        (call, log[call].len())
    };
    let planned = timeline.get(call).and_then(|t| t.get(attempt - 1)).cloned();
    match planned {
        None => scripted::write_answer(stream, 200, &[], b"{}").await,
        Some(Answer::Reset) => scripted::reset(stream),
        Some(Answer::Status(code, error, extra)) => {
            let mut headers: Vec<(String, String)> = extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            if let Some(e) = error {
                headers.push(("x-amzn-errortype".into(), e.into()));
            }
            let body = br#"{"message":"conformance test"}"#;
            scripted::write_answer(stream, code, &headers, body).await
        }
    }
}

/// Starts a server on loopback for one client; its base URL and log.
async fn server(timeline: &Arc<Vec<Vec<Answer>>>) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log = Log::default();
    tokio::spawn(serve(listener, log.clone(), timeline.clone()));
    (base, log)
}

/// What one client made of one call.
#[derive(Debug)]
struct Call {
    end: String,
    /// The quota's level after the call.
    quota: f64,
    /// The delays the client decided before each retry.
    delays: Vec<f64>,
}

fn botocore_calls(base: &str, n: usize) -> Vec<Call> {
    support::python::json_lines("botocore_client.py", &["calls", base, &n.to_string()])
        .into_iter()
        .map(|v| Call {
            end: v["outcome"].as_str().unwrap().to_string(),
            quota: v["quota"].as_f64().unwrap(),
            delays: v["delays"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_f64().unwrap())
                .collect(),
        })
        .collect()
}

const PRESET: &str = "aws-standard";
const SEED: u64 = 5;

/// stormrig's preset makes the calls one after another through the live engine's client.
/// Its decided delays are filled in afterwards by [`replayed_delays`].
async fn stormrig_calls(base: &str, epoch: &Epoch, n: usize) -> Vec<Call> {
    let rt = runtime(PRESET, base, SEED, 1, true);
    let tmpl = RequestTemplate {
        method: Method::GET,
        path: "/2015-03-31/functions/".to_string(),
        headers: HeaderMap::new(),
        body: Bytes::new(),
        grpc: false,
        class: None,
        tokens: None,
    };
    let mut ends = Vec::new();
    for i in 0..n {
        let done = rt
            .drive(epoch, &tmpl, i as u64 + 1, epoch.elapsed(), None)
            .await;
        ends.push(end_of(&done));
    }
    let log = rt.with(|s| s.take_log());
    ends.into_iter()
        .enumerate()
        .map(|(i, end)| {
            let rows: Vec<_> = log.iter().filter(|r| r.request == i as u64 + 1).collect();
            Call {
                end,
                quota: rows
                    .last()
                    .and_then(|r| r.budget_after)
                    .expect("aws-standard has a quota"),
                delays: Vec::new(),
            }
        })
        .collect()
}

/// The policy's view of the answer `a`, as the live client reads it.
fn outcome_of(a: &Answer) -> AttemptOutcome<'static> {
    match a {
        Answer::Reset => AttemptOutcome::Transport(TransportError::Reset),
        Answer::Status(code, error, extra) => AttemptOutcome::Response(Response {
            error_code: *error,
            amz_retry_after: extra
                .iter()
                .find(|(k, _)| *k == "x-amz-retry-after")
                .map(|(_, v)| *v),
            ..Response::status(*code)
        }),
    }
}

/// The delays stormrig decided before each retry of call `i` (from 0) that was sent,
/// replayed from the policy with the call's own seed: a fresh client with a full quota
/// draws what the live one drew, as the quota decides whether to retry, not what is drawn.
fn replayed_delays(i: usize, answers: &[Answer], retries: usize) -> Vec<f64> {
    let mut client = RetryClient::new(&preset(PRESET).unwrap());
    let mut rng = stormrig::draws::LazyRng::new(stormrig::draws::request_seed(
        SEED,
        stormrig::draws::config_key(PRESET),
        i as u64 + 1,
    ));
    let now = Now::virtual_at(Duration::ZERO);
    let mut req = client.start(now, "GET", None);
    let mut delays = Vec::new();
    for a in answers.iter().take(retries) {
        assert!(matches!(
            client.before_attempt(now, &mut req),
            Permit::Send { .. }
        ));
        match client.on_outcome(now, &mut req, &outcome_of(a), &mut rng) {
            Decision::Retry { after, .. } => delays.push(after.as_secs_f64()),
            other => panic!("call {i}: {other:?} on {a:?}"),
        }
    }
    delays
}

/// The range of the k-th retry's delay (from 0) after answer `a`: 50 ms x 2^k, or 1 s x 2^k
/// for throttling, capped at 20 s.
fn range_of(a: &Answer, k: usize) -> f64 {
    let throttling = match a {
        Answer::Status(429, ..) => true,
        Answer::Status(_, Some(code), _) => {
            matches!(*code, "ThrottlingException" | "PriorRequestNotComplete")
        }
        _ => false,
    };
    let base = if throttling { 1.0 } else { 0.05 };
    (base * 2f64.powi(k as i32)).min(20.0)
}

#[test]
fn aws_standard_retries_as_botocore_does_call_by_call() {
    let timeline = Arc::new(timeline());
    let n = timeline.len();
    let rt = crate::support::two_worker_runtime();
    let ((boto_base, boto_log), (ours_base, ours_log)) =
        rt.block_on(async { (server(&timeline).await, server(&timeline).await) });
    let boto = botocore_calls(&boto_base, n);
    let epoch = Epoch::start();
    let mut ours = rt.block_on(stormrig_calls(&ours_base, &epoch, n));
    let boto_seen = boto_log.lock().unwrap().clone();
    let ours_seen = ours_log.lock().unwrap().clone();
    assert_eq!(boto.len(), n, "botocore made every call");
    assert_eq!(boto_seen.len(), n, "the server saw every botocore call");
    assert_eq!(ours_seen.len(), n, "the server saw every stormrig call");

    let mut refused = 0;
    let (mut boto_norm, mut ours_norm) = (Vec::new(), Vec::new());
    let mut lateness = Lateness::default();
    for (i, answers) in timeline.iter().enumerate() {
        let (b, o) = (&boto[i], &mut ours[i]);
        let attempts = boto_seen[i].len();
        eprintln!(
            "call {:>2} {:<60} botocore {} attempts {:<10} quota {:>3} | stormrig {} {:<10} {:>3}",
            i + 1,
            format!("{answers:?}").chars().take(60).collect::<String>(),
            attempts,
            b.end,
            b.quota,
            ours_seen[i].len(),
            o.end,
            o.quota
        );
        assert_eq!(ours_seen[i].len(), attempts, "call {}: attempts", i + 1);
        assert_eq!(o.end, b.end, "call {}: end", i + 1);
        assert_eq!(o.quota, b.quota, "call {}: quota after", i + 1);
        assert_eq!(
            b.delays.len(),
            attempts - 1,
            "call {}: a delay per retry",
            i + 1
        );
        if attempts < 3 && answers.len() >= attempts && !b.end.starts_with("status 4") {
            refused += 1;
        }
        o.delays = replayed_delays(i, answers, attempts - 1);
        for (k, (&bd, &od)) in b.delays.iter().zip(&o.delays).enumerate() {
            let a = &answers[k];
            let range = range_of(a, k);
            let hint = match a {
                Answer::Status(_, _, extra) => extra
                    .iter()
                    .find(|(h, _)| *h == "x-amz-retry-after")
                    .map(|(_, v)| v.parse::<f64>().unwrap() / 1000.0),
                Answer::Reset => None,
            };
            match hint {
                // max(t, min(hint, t + 5 s)) with t < range < hint: the hint.
                Some(h) => {
                    assert!((bd - h).abs() < 1e-9, "call {}: botocore {bd}", i + 1);
                    assert!((od - h).abs() < 1e-9, "call {}: stormrig {od}", i + 1);
                }
                None => {
                    assert!((0.0..range).contains(&bd), "call {}: botocore {bd}", i + 1);
                    assert!((0.0..range).contains(&od), "call {}: stormrig {od}", i + 1);
                    boto_norm.push(bd / range);
                    ours_norm.push(od / range);
                }
            }
            let gap = (ours_seen[i][k + 1] - ours_seen[i][k]).as_secs_f64();
            lateness.check(&format!("call {} retry {k}", i + 1), gap, od);
        }
    }
    lateness.assert_median("aws-standard");
    // Not a vacuous agreement: the storms drained the quota until retries were refused.
    assert!(refused >= 4, "only {refused} calls had a retry refused");
    let (d, p) = ks_two_sample(&boto_norm, &ours_norm);
    eprintln!(
        "{} delays each; KS D = {d:.3}, p = {p:.3}; means {:.3} / {:.3}",
        boto_norm.len(),
        mean(&boto_norm),
        mean(&ours_norm)
    );
    assert!(p > 0.01, "full jitter differs: D = {d:.3}, p = {p:.4}");
}
