//! The AWS presets held against the SDKs they name (botocore, the AWS SDK for JavaScript v3):
//! one client of each, the same calls one after another against the same loopback timeline,
//! compared call by call.
//!
//! The calls share one retry quota, as an application's calls through one client do, so a
//! timeline walks through the classification, then storms long enough to drain the quota,
//! throttled calls at the bottom, a refill by successes, and a second storm. Per call, these
//! must be equal: the attempts the server saw, how the call ended, and the quota's level
//! after it (the SDK's own figure beside stormrig's `budget_after` of the call's last
//! attempt). Each delay the SDK decided must lie in its formula's range, and so must
//! stormrig's, which are replayed from the policy with the live run's per-request seeds;
//! stormrig's measured gaps at the server must follow its decided delays within the client's
//! own work; and the SDK's unhinted delays and stormrig's (those of the run and 20 more
//! draws of each from the policy under other requests' seeds, so that one seed's sample
//! does not decide), each divided by its range, must pass a two-sample Kolmogorov-Smirnov
//! test. A run's SDK sample is a few dozen delays, so a second test holds thousands of draws
//! of the SDK's own backoff function, called directly, to as many of stormrig's: there the
//! SDK's function decides, not one run's luck. Both are tested at `ALPHA`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use tokio::net::{TcpListener, TcpStream};

use super::conformance::{end_of, runtime, Lateness};
use super::scripted;
use super::stats::{ks_two_sample, mean};
use stormrig::live::clock::Epoch;
use stormrig::live::driver::RequestTemplate;
use stormrig::policy::{
    preset, AttemptOutcome, Decision, Now, Permit, Response, RetryClient, TransportError,
};

/// What the server answers to one attempt of a call.
#[derive(Clone, Debug)]
pub enum Answer {
    /// A status, with an error code in `x-amzn-errortype` or none, and extra headers.
    Status(u16, Option<&'static str>, Vec<(&'static str, &'static str)>),
    /// Close the connection with a TCP reset, no answer.
    Reset,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&'static str> {
        match self {
            Answer::Status(_, _, extra) => extra.iter().find(|(k, _)| *k == name).map(|(_, v)| *v),
            Answer::Reset => None,
        }
    }
}

/// A status with an error code or none, and no extra header.
pub fn status(code: u16, error: Option<&'static str>) -> Answer {
    Answer::Status(code, error, vec![])
}

/// The calls every AWS timeline has, each its answers before a 200: the classification
/// (transient statuses, throttling by status and by error code, transient error codes, what
/// is not retried, an `x-amz-retry-after` hint, a reset), then `tail`.
pub fn classification() -> Vec<Vec<Answer>> {
    let s = status;
    vec![
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
        vec![Answer::Status(
            503,
            None,
            vec![("x-amz-retry-after", "300")],
        )],
        vec![Answer::Reset],
    ]
}

/// A storm that drains a quota of 500 (14 per transient retry), throttled calls at the
/// bottom (5 per throttling retry), a refill by successes, and a second storm.
pub fn storms() -> Vec<Vec<Answer>> {
    let mut calls = Vec::new();
    calls.extend(std::iter::repeat_n(vec![status(503, None); 3], 20));
    calls.extend(std::iter::repeat_n(vec![status(429, None)], 3));
    calls.extend(std::iter::repeat_n(vec![], 20));
    calls.extend(std::iter::repeat_n(vec![status(503, None); 3], 2));
    calls
}

/// One call as the server saw it: arrival instants of its attempts.
type Log = Arc<Mutex<Vec<Vec<Instant>>>>;

/// The loopback server: the calls are told apart by the header each client puts on every
/// attempt of one call (`amz-sdk-invocation-id` for the SDKs, `x-stormrig-request` for
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
pub struct Call {
    pub end: String,
    /// The quota's level after the call (none without a quota).
    pub quota: Option<f64>,
    /// The delays the client decided before each retry, in seconds.
    pub delays: Vec<f64>,
}

impl Call {
    /// A call as an SDK script prints it: `{"outcome", "quota", "delays"}`.
    pub fn from_json(v: &serde_json::Value) -> Call {
        Call {
            end: v["outcome"].as_str().unwrap().to_string(),
            quota: v["quota"].as_f64(),
            delays: v["delays"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_f64().unwrap())
                .collect(),
        }
    }
}

const SEED: u64 = 5;

/// stormrig's preset makes the calls one after another through the live engine's client.
async fn stormrig_calls(preset_name: &str, base: &str, epoch: &Epoch, n: usize) -> Vec<Call> {
    let rt = runtime(preset_name, base, SEED, 1, true);
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
                quota: rows.last().and_then(|r| r.budget_after),
                delays: Vec::new(),
            }
        })
        .collect()
}

/// The policy's view of the answer `a`, as the live client reads it.
fn outcome_of(a: &Answer) -> AttemptOutcome<'static> {
    match a {
        Answer::Reset => AttemptOutcome::Transport(TransportError::Reset),
        Answer::Status(code, error, _) => AttemptOutcome::Response(Response {
            error_code: *error,
            amz_retry_after: a.header("x-amz-retry-after"),
            retry_after: a.header("retry-after"),
            ..Response::status(*code)
        }),
    }
}

/// The delays stormrig decides before each retry of request `request` with a full quota,
/// replayed from the policy with the request's own seed: a fresh client draws what the live
/// one drew, as the quota decides whether to retry, not what is drawn. As many as the
/// answers would be retried for with quota at hand.
fn replayed_delays(preset_name: &str, request: u64, answers: &[Answer]) -> Vec<f64> {
    let mut client = RetryClient::new(&preset(preset_name).unwrap());
    let mut rng = stormrig::draws::LazyRng::new(stormrig::draws::request_seed(
        SEED,
        stormrig::draws::config_key(preset_name),
        request,
    ));
    // The wall clock is today's, as the live client's is: an HTTP-date hint is read against it.
    let now = Now {
        mono: Duration::ZERO,
        epoch_wall: SystemTime::now(),
    };
    let mut req = client.start(now, "GET", None);
    let mut delays = Vec::new();
    for a in answers {
        assert!(matches!(
            client.before_attempt(now, &mut req),
            Permit::Send { .. }
        ));
        match client.on_outcome(now, &mut req, &outcome_of(a), &mut rng) {
            Decision::Retry { after, .. } => delays.push(after.as_secs_f64()),
            _ => break,
        }
    }
    delays
}

/// How many more draws stormrig's side of the distribution test takes per compared delay.
const EXTRA_DRAWS: u64 = 20;

/// How many draws of the SDK's backoff function, and of stormrig's policy, the direct test
/// compares per retry.
pub const DIRECT_DRAWS: usize = 2000;

/// The distribution tests' level. Several SDK tests run in every CI run, each with two
/// distribution tests: at 0.01 one CI run in about twenty would fail by chance alone (one
/// did, p = 0.006, on a run's 33 botocore delays). The direct test's thousands of draws
/// keep the power that the lower level gives up: at 2,000 against 2,000 it rejects a
/// distribution whose CDF strays by 0.062 anywhere.
const ALPHA: f64 = 0.001;

/// What the comparison needs to know of the SDK and the preset.
pub struct Rules<'a> {
    /// The preset held against the SDK.
    pub preset: &'a str,
    /// The SDK's name in messages.
    pub sdk: &'a str,
    /// The range of the k-th retry's delay (from 0) after answer `a`, unhinted: a delay
    /// lies in `[0, range)`.
    pub range: fn(&Answer, usize) -> f64,
    /// The delay decided for a hint `h` seconds and a computed backoff `t`.
    pub hinted: fn(f64, f64) -> f64,
    /// The SDK's hint, in seconds, of answer `a`, or `None`.
    pub hint: fn(&Answer) -> Option<f64>,
    /// How far below the formula's bound the SDK's hinted delay may lie: an SDK that turns
    /// the hint into a deadline when it reads the answer counts the milliseconds it spent
    /// since.
    pub hint_slack: f64,
    /// The fewest calls whose retries the quota must have refused (0 without a quota).
    pub min_refused: usize,
    /// `n` draws of the SDK's own backoff function per retry k (from 0) of a call with the
    /// default attempts, after an answer that is neither throttling nor hinted, in seconds.
    pub draws: fn(usize) -> Vec<Vec<f64>>,
}

/// Reads an SDK script's `draws` lines: `{"k", "delays"}`, one per retry, in order.
pub fn draws_from_json(lines: &[serde_json::Value]) -> Vec<Vec<f64>> {
    lines
        .iter()
        .enumerate()
        .map(|(k, v)| {
            assert_eq!(v["k"].as_u64(), Some(k as u64), "{v}");
            v["delays"]
                .as_array()
                .expect("delays")
                .iter()
                .map(|d| d.as_f64().expect("a delay in seconds"))
                .collect()
        })
        .collect()
}

/// The SDK's backoff function, called directly, against stormrig's policy, retry by retry:
/// each of `DIRECT_DRAWS` draws divided by the retry's range after a bare 503.
fn direct_draws_agree(rules: &Rules) {
    let sdk = (rules.draws)(DIRECT_DRAWS);
    assert!(!sdk.is_empty(), "{}: no draws", rules.sdk);
    let answers = vec![status(503, None); sdk.len() + 1];
    for (k, sdk_k) in sdk.iter().enumerate() {
        assert_eq!(sdk_k.len(), DIRECT_DRAWS, "retry {k}");
        let range = (rules.range)(&answers[k], k);
        let sdk_norm: Vec<f64> = sdk_k.iter().map(|d| d / range).collect();
        assert!(
            sdk_norm.iter().all(|x| (0.0..1.0).contains(x)),
            "retry {k}: {} out of range",
            rules.sdk
        );
        let ours_norm: Vec<f64> = (0..DIRECT_DRAWS as u64)
            .map(|j| {
                let delays = replayed_delays(rules.preset, 1 + j, &answers);
                assert!(
                    delays.len() > k,
                    "stormrig retries {} times, the SDK {}",
                    delays.len(),
                    sdk.len()
                );
                delays[k] / range
            })
            .collect();
        let (d, p) = ks_two_sample(&sdk_norm, &ours_norm);
        eprintln!(
            "retry {k}: {DIRECT_DRAWS} {} draws / {DIRECT_DRAWS} stormrig; KS D = {d:.3}, p = {p:.3}; means {:.3} / {:.3}",
            rules.sdk,
            mean(&sdk_norm),
            mean(&ours_norm)
        );
        assert!(
            p > ALPHA,
            "retry {k}: the backoff functions differ: D = {d:.3}, p = {p:.4}"
        );
    }
}

/// Runs `sdk_calls(base, n)` and the preset through `timeline` and compares them call by
/// call, as the module notes say.
pub fn hold(
    rules: &Rules,
    timeline: Vec<Vec<Answer>>,
    sdk_calls: impl FnOnce(&str, usize) -> Vec<Call>,
) {
    let timeline = Arc::new(timeline);
    let n = timeline.len();
    let rt = super::two_worker_runtime();
    let ((sdk_base, sdk_log), (ours_base, ours_log)) =
        rt.block_on(async { (server(&timeline).await, server(&timeline).await) });
    let sdk = sdk_calls(&sdk_base, n);
    let epoch = Epoch::start();
    let mut ours = rt.block_on(stormrig_calls(rules.preset, &ours_base, &epoch, n));
    let sdk_seen = sdk_log.lock().unwrap().clone();
    let ours_seen = ours_log.lock().unwrap().clone();
    let who = rules.sdk;
    assert_eq!(sdk.len(), n, "{who} made every call");
    assert_eq!(sdk_seen.len(), n, "the server saw every {who} call");
    assert_eq!(ours_seen.len(), n, "the server saw every stormrig call");

    let mut refused = 0;
    let (mut sdk_norm, mut ours_norm) = (Vec::new(), Vec::new());
    let mut lateness = Lateness::default();
    for (i, answers) in timeline.iter().enumerate() {
        let (b, o) = (&sdk[i], &mut ours[i]);
        let attempts = sdk_seen[i].len();
        eprintln!(
            "call {:>2} {:<60} {who} {} attempts {:<10} quota {:>5?} | stormrig {} {:<10} {:>5?}",
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
        // Fewer retries than a full quota would have allowed: the quota refused one.
        let mut full = replayed_delays(rules.preset, i as u64 + 1, answers);
        if full.len() > attempts - 1 {
            refused += 1;
        }
        full.truncate(attempts - 1);
        o.delays = full;
        for (k, (&bd, &od)) in b.delays.iter().zip(&o.delays).enumerate() {
            let a = &answers[k];
            let range = (rules.range)(a, k);
            match (rules.hint)(a) {
                Some(h) => {
                    let (lo, hi) = ((rules.hinted)(h, 0.0), (rules.hinted)(h, range));
                    let within = |d: f64, slack: f64| d >= lo - slack - 1e-9 && d <= hi + 1e-9;
                    assert!(
                        within(bd, rules.hint_slack),
                        "call {}: {who} {bd} not in [{lo}, {hi}]",
                        i + 1
                    );
                    assert!(
                        within(od, 0.0),
                        "call {}: stormrig {od} not in [{lo}, {hi}]",
                        i + 1
                    );
                }
                None => {
                    assert!((0.0..range).contains(&bd), "call {}: {who} {bd}", i + 1);
                    assert!((0.0..range).contains(&od), "call {}: stormrig {od}", i + 1);
                    sdk_norm.push(bd / range);
                    ours_norm.push(od / range);
                    // More draws of the same delay from the policy, under other requests'
                    // seeds: the SDK's delays are held to stormrig's distribution, not to
                    // the one sample this run's seed happens to give.
                    for j in 1..=EXTRA_DRAWS {
                        let other = replayed_delays(rules.preset, i as u64 + 1 + 1000 * j, answers);
                        ours_norm.push(other[k] / range);
                    }
                }
            }
            let gap = (ours_seen[i][k + 1] - ours_seen[i][k]).as_secs_f64();
            lateness.check(&format!("call {} retry {k}", i + 1), gap, od);
        }
    }
    lateness.assert_median(rules.preset);
    // Not a vacuous agreement: the storms drained the quota until retries were refused.
    assert!(
        refused >= rules.min_refused,
        "only {refused} calls had a retry refused"
    );
    let (d, p) = ks_two_sample(&sdk_norm, &ours_norm);
    eprintln!(
        "{} delays / {} draws; KS D = {d:.3}, p = {p:.3}; means {:.3} / {:.3}; {refused} calls refused a retry",
        sdk_norm.len(),
        ours_norm.len(),
        mean(&sdk_norm),
        mean(&ours_norm)
    );
    assert!(p > ALPHA, "full jitter differs: D = {d:.3}, p = {p:.4}");
    direct_draws_agree(rules);
}

/// Whether `a` is throttling by the AWS 2026 rules botocore >= 1.44 and the JavaScript SDK
/// share (any 429, or a throttling code of the timelines).
pub fn throttling_2026(a: &Answer) -> bool {
    match a {
        Answer::Status(429, ..) => true,
        Answer::Status(_, Some(code), _) => {
            matches!(
                *code,
                "ThrottlingException" | "PriorRequestNotComplete" | "SlowDown"
            )
        }
        _ => false,
    }
}

/// The AWS 2026 range of the k-th retry's delay: 50 ms x 2^k, or 1 s x 2^k for
/// throttling, capped at 20 s.
pub fn range_2026(a: &Answer, k: usize) -> f64 {
    let base = if throttling_2026(a) { 1.0 } else { 0.05 };
    (base * 2f64.powi(k as i32)).min(20.0)
}

/// `max(t, min(hint, t + 5 s))`.
pub fn amz_hinted(h: f64, t: f64) -> f64 {
    t.max(h.min(t + 5.0))
}

/// The `x-amz-retry-after` hint of `a` in seconds.
pub fn amz_hint(a: &Answer) -> Option<f64> {
    a.header("x-amz-retry-after")
        .map(|v| v.parse::<f64>().unwrap() / 1000.0)
}
