//! Named retry configs that behave as real clients do. Each function's doc comment cites its
//! source (the client's own code or specification, by upstream file) and every constant.
//! Which presets a test runs beside the real library and which rest on reading its source is
//! in `docs/presets.md`.

use super::backoff::{Backoff, Jitter};
use super::budget::{AwsQuotaConfig, EnvoyConfig, GrpcThrottlingConfig, RatioConfig};
use super::budget::{BudgetConfig, DepositOn};
use super::config::RetryConfig;
use super::error::PolicyError;
use super::grpc_status::GrpcStatus;
use super::hedging::{HedgingConfig, Shortcut};
use super::outcome::{RetryOn, StatusPattern, TransportError};
use super::rate_limiter::RateLimiterConfig;
use super::retry_after::{HintHeader, RetryAfterConfig};
use serde::Serialize;
use std::time::Duration;
use StatusPattern::{Class, Exact};
use TransportError::*;

/// One row of the preset table printed by the README and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PresetInfo {
    /// Preset name.
    pub name: &'static str,
    /// One-line behaviour summary.
    pub summary: &'static str,
    /// Where the constants come from.
    pub source: &'static str,
    /// The real client or specification the preset stands for.
    pub library: &'static str,
    /// How it was checked: the version of the real library a test runs side by side with
    /// the preset (`"openai 3.57.0"`), or `"source"` where the preset rests on reading the
    /// library's source and documents alone.
    pub checked_against: &'static str,
}

/// The version of the openai SDK `tests/suite/llm_sdk_conformance.rs` runs against
/// `openai-python` (pinned in `tests/python/requirements.txt`).
pub const OPENAI_PYTHON_CHECKED: &str = "openai 3.57.0";
/// The version of the anthropic SDK the same test runs against `anthropic-python`.
pub const ANTHROPIC_PYTHON_CHECKED: &str = "anthropic 2.16.0";
/// The previous majors the `-v1` and `-v0` presets are held against (their decisions on each
/// answer, by the SDKs' own functions; `tests/python/llm-sdk-previous.txt`).
pub const OPENAI_PYTHON_V1_CHECKED: &str = "openai 1.109.1";
pub const ANTHROPIC_PYTHON_V0_CHECKED: &str = "anthropic 0.125.0";
/// The version of google-api-core `tests/suite/google_api_core_conformance.rs` runs against
/// `google-api-core` (pinned in `tests/python/requirements.txt`).
pub const GOOGLE_API_CORE_CHECKED: &str = "google-api-core 2.44.0";
/// The version of botocore `tests/suite/aws_sdk_conformance.rs` runs against
/// `aws-standard` (pinned in `tests/python/requirements.txt`).
pub const AWS_STANDARD_CHECKED: &str = "botocore 1.44.8";
/// The version of botocore whose adaptive-mode classes `tests/suite/aws_adaptive_conformance.rs`
/// runs beside `aws-adaptive`'s rate limiter (pinned in `tests/python/requirements.txt`).
pub const AWS_ADAPTIVE_CHECKED: &str = "botocore 1.44.8";
/// The urllib3 release the `urllib3` preset is held against, side by side
/// (`tests/suite/urllib3_conformance.rs`).
pub const URLLIB3_CHECKED: &str = "urllib3 2.8.0";
/// The botocore release `tests/suite/aws_classic_conformance.rs` runs beside
/// `aws-standard-classic` (standard mode) and `aws-legacy` (legacy mode): the last 1.43,
/// pinned in `tests/python/botocore-1.43.txt`.
pub const AWS_CLASSIC_CHECKED: &str = "botocore 1.43.127";
/// The axios-retry release `tests/suite/axios_retry_conformance.rs` runs beside
/// `axios-retry` (with axios 1.21.1; both pinned in `tests/node/package-lock.json`).
pub const AXIOS_RETRY_CHECKED: &str = "axios-retry 4.5.0";
/// The release of the AWS SDK for JavaScript v3's retry package `tests/suite/aws_js_v3_conformance.rs`
/// runs beside `aws-js-v3` (pinned in `tests/node/package-lock.json`; its code lives in
/// `@smithy/core` 3.41.1, pinned there too).
pub const AWS_JS_V3_CHECKED: &str = "@smithy/util-retry 4.6.2";

/// Every preset, in display order.
pub const PRESETS: &[PresetInfo] = &[
    PresetInfo { name: "no-retry", summary: "1 attempt, never retries", source: "baseline", library: "none", checked_against: "source" },
    PresetInfo { name: "naive", summary: "4 attempts, immediate, retries 5xx/429/transport errors, no budget (the anti-pattern)", source: "anti-pattern; no real client", library: "none", checked_against: "source" },
    PresetInfo { name: "aws-standard", summary: "3 attempts, full jitter 50 ms (1 s throttling) x2 cap 20 s, quota 500 (cost 14 / throttling 5), bare 429 = throttling, x-amz-retry-after", source: "botocore >= 1.44 standard mode (retries/standard.py, quota.py); AWS 2026 retry announcement", library: "botocore >= 1.44", checked_against: AWS_STANDARD_CHECKED },
    PresetInfo { name: "aws-adaptive", summary: "aws-standard plus botocore's client-side rate limiter: off until the first throttling response, then every send waits for a token from a bucket whose fill rate CUBIC sets (x0.7 on throttling, cubic growth C 0.4 after), capped at 2x the measured send rate (0.5 s buckets, EWMA 0.8), at least 0.5/s", source: "botocore >= 1.44 adaptive mode (retries/adaptive.py, bucket.py, throttling.py; client.py registers standard + adaptive)", library: "botocore >= 1.44 adaptive mode", checked_against: AWS_ADAPTIVE_CHECKED },
    PresetInfo { name: "aws-standard-classic", summary: "3 attempts, full jitter 1 s x2 cap 20 s, quota 500 (cost 5, timeouts 10), bare 429 not retried", source: "botocore <= 1.43 standard mode (retries/standard.py, quota.py)", library: "botocore <= 1.43", checked_against: AWS_CLASSIC_CHECKED },
    PresetInfo { name: "aws-legacy", summary: "5 attempts, uncapped full jitter rand()*2^(n-1) s, no quota, 429/500/502/503/504/509 + socket errors", source: "botocore legacy mode (retryhandler.py, data/_retry.json)", library: "botocore (legacy mode)", checked_against: AWS_CLASSIC_CHECKED },
    PresetInfo { name: "grpc", summary: "4 attempts, 100 ms x2 cap 1 s, x U[0.8,1.2), UNAVAILABLE, retryThrottling 10/0.1, grpc-retry-pushback-ms", source: "gRFC A6 example policy (2024 revision); grpc-go >= 1.69", library: "gRPC (gRFC A6)", checked_against: "grpcio 1.85.3" },
    PresetInfo { name: "grpc-hedging", summary: "4 copies 500 ms apart (A6's example hedgingPolicy), non-fatal UNAVAILABLE/INTERNAL/ABORTED, first success wins and cancels the rest, a fatal status ends the call, retryThrottling 10/0.1 shared (a copy is scheduled only above 5 tokens), grpc-retry-pushback-ms: negative stops hedging; the next copy after a non-fatal status as grpc-java sends it", source: "gRFC A6 (A6-client-retries.md lines 136-157, 189-193, 205, 216-236); grpc-java RetriableStream.java (makeHedgingDecision, pushbackHedging, HedgingRunnable)", library: "gRPC (gRFC A6), grpc-java", checked_against: "source" },
    PresetInfo { name: "envoy", summary: "2 attempts, U[0, min(25 ms*2^(n-1), 250 ms)), 5xx/connect-failure/reset, route timeout 15 s, <= 3 concurrent retries", source: "Envoy route_components.proto, backoff_strategy.cc, circuit_breaker.proto", library: "Envoy", checked_against: "source" },
    PresetInfo { name: "envoy-hedging", summary: "envoy with hedge_on_per_try_timeout and a 500 ms per-try timeout (stormrig's choice: Envoy has none): a per-try timeout keeps its attempt and sends a retry beside it after the jittered backoff, within the 1 retry and <= 3 concurrent retries (an overflow still spends the retry); the first good answer of any attempt wins and resets the rest; a failure another attempt may still beat is dropped", source: "Envoy router.cc (onPerTryTimeoutCommon, onSoftPerTryTimeout, onUpstreamHeaders, resetOtherUpstreams), retry_state_impl.cc (shouldHedgeRetryPerTryTimeout, shouldRetry, resetRetry)", library: "Envoy", checked_against: "source" },
    PresetInfo { name: "istio", summary: "3 attempts, Envoy backoff, connect-failure/refused-stream/unavailable/cancelled/503, no retry limit", source: "istio/api virtual_service.proto; istio pilot retry.go", library: "Istio", checked_against: "source" },
    PresetInfo { name: "finagle", summary: "requeues only never-sent failures, zero backoff, RetryBudget 20 % / 10 s + 10/s", source: "finagle RetryBudget.scala, RequeueFilter.scala", library: "Finagle", checked_against: "source" },
    PresetInfo { name: "polly", summary: "4 attempts, constant 2 s, no jitter", source: "Polly v8 RetryStrategyOptions defaults (RetryConstants.cs)", library: "Polly v8", checked_against: "source" },
    PresetInfo { name: "resilience4j", summary: "3 attempts, fixed 500 ms", source: "resilience4j RetryConfig.ofDefaults()", library: "resilience4j", checked_against: "source" },
    PresetInfo { name: "openai-python", summary: "3 attempts, 0.5 s x2 cap 8 s x U(0.75,1], 408/409/429/5xx + connection errors and timeouts, x-should-retry obeyed; retry-after-ms then Retry-After (fractional s or HTTP-date) followed when 0 < ra <= 120 s, above 120 s no retry; per-try timeout 600 s", source: "openai-python >= 2 _constants.py (DEFAULT_MAX_RETRIES, INITIAL_RETRY_DELAY, MAX_RETRY_DELAY, MAX_RETRY_AFTER_DELAY, DEFAULT_TIMEOUT), _base_client.py (_parse_retry_after_header, _calculate_retry_timeout, _should_retry)", library: "openai (Python) >= 2", checked_against: OPENAI_PYTHON_CHECKED },
    PresetInfo { name: "openai-python-v1", summary: "as openai-python, but Retry-After followed when 0 < ra <= 60 s and a longer one ignored (computed backoff, still retried)", source: "openai-python 1.x (1.109.1) _base_client.py (_calculate_retry_timeout, _should_retry)", library: "openai (Python) 1.x", checked_against: OPENAI_PYTHON_V1_CHECKED },
    PresetInfo { name: "anthropic-python", summary: "3 attempts, 0.5 s x2 cap 8 s x U(0.75,1], 408/409/429/5xx + connection errors and timeouts, x-should-retry obeyed; retry-after-ms then Retry-After followed whenever > 0 (no upper window; stormrig clamps hints at 300 s)", source: "anthropic-sdk-python >= 1 _constants.py, _base_client.py (_parse_retry_after_header, _calculate_retry_timeout, _should_retry)", library: "anthropic (Python) >= 1", checked_against: ANTHROPIC_PYTHON_CHECKED },
    PresetInfo { name: "anthropic-python-v0", summary: "as anthropic-python, but Retry-After followed when 0 < ra <= 60 s and a longer one ignored (computed backoff, still retried)", source: "anthropic-sdk-python 0.x (0.125.0) _base_client.py (_calculate_retry_timeout)", library: "anthropic (Python) 0.x", checked_against: ANTHROPIC_PYTHON_V0_CHECKED },
    PresetInfo { name: "google-api-core", summary: "retries until 120 s have passed (no attempt limit; stormrig stops at 100), full jitter 1 s x2 cap 60 s, a retry whose wait would end past 120 s not made, 429/500/503 + connection errors (not read timeouts), every method, Retry-After ignored", source: "google-api-core retry/retry_base.py (if_transient_error, exponential_sleep_generator, _retry_error_helper, _DEFAULT_* constants), retry/retry_unary.py (retry_target)", library: "google-api-core (Python) 2.x", checked_against: GOOGLE_API_CORE_CHECKED },
    PresetInfo { name: "urllib3", summary: "4 attempts, no backoff, 413/429/503 retried only with a Retry-After (followed; stormrig clamps hints at 300 s), connection errors for every method, read errors and resets for idempotent methods only", source: "urllib3 2.x util/retry.py (Retry.DEFAULT = Retry(3), RETRY_AFTER_STATUS_CODES, is_retry, get_backoff_time, increment), connectionpool.py (urlopen)", library: "urllib3 (Python) 2.x, its default Retry", checked_against: URLLIB3_CHECKED },
    PresetInfo { name: "aws-js-v3", summary: "3 attempts, full jitter 50 ms (1 s throttling) x2 cap 20 s in whole ms, quota 500 (cost 14 / throttling 5), 429 = throttling, x-amz-retry-after or Retry-After kept within [t, t + 5 s], malformed answers not retried", source: "@smithy/core retry (Retry, DefaultRetryBackoffStrategy, StandardRetryStrategy, parseRetryAfterHeader, isThrottlingError, isTransientError), as @smithy/util-retry exports it", library: "@smithy/util-retry", checked_against: AWS_JS_V3_CHECKED },
    PresetInfo { name: "axios-retry", summary: "4 attempts, no backoff (a Retry-After in whole seconds or an HTTP-date is waited for; stormrig clamps hints at 300 s), 429/5xx for GET/HEAD/OPTIONS/PUT/DELETE, connection errors for every method, axios timeouts never", source: "axios-retry dist/cjs/index.js (DEFAULT_OPTIONS, isNetworkOrIdempotentRequestError, isRetryableError, retryAfter, noDelay); is-retry-allowed", library: "axios-retry (axios, Node)", checked_against: AXIOS_RETRY_CHECKED },];

/// The names of every preset.
pub fn preset_names() -> &'static [&'static str] {
    const NAMES: &[&str] = &[
        "no-retry",
        "naive",
        "aws-standard",
        "aws-adaptive",
        "aws-standard-classic",
        "aws-legacy",
        "grpc",
        "grpc-hedging",
        "envoy",
        "envoy-hedging",
        "istio",
        "finagle",
        "polly",
        "resilience4j",
        "openai-python",
        "openai-python-v1",
        "anthropic-python",
        "anthropic-python-v0",
        "google-api-core",
        "urllib3",
        "aws-js-v3",
        "axios-retry",
    ];
    NAMES
}

/// The named preset, or an error with a did-you-mean suggestion.
pub fn preset(name: &str) -> Result<RetryConfig, PolicyError> {
    let mut c = match name {
        "no-retry" => no_retry(),
        "naive" => naive(),
        "aws-standard" => aws_standard(),
        "aws-adaptive" => aws_adaptive(),
        "aws-standard-classic" => aws_standard_classic(),
        "aws-legacy" => aws_legacy(),
        "grpc" => grpc(),
        "grpc-hedging" => grpc_hedging(),
        "envoy" => envoy(),
        "envoy-hedging" => envoy_hedging(),
        "istio" => istio(),
        "finagle" => finagle(),
        "polly" => polly(),
        "resilience4j" => resilience4j(),
        "openai-python" => openai_python(),
        "openai-python-v1" => openai_python_v1(),
        "anthropic-python" => anthropic_python(),
        "anthropic-python-v0" => anthropic_python_v0(),
        "google-api-core" => google_api_core(),
        "urllib3" => urllib3(),
        "aws-js-v3" => aws_js_v3(),
        "axios-retry" => axios_retry(),
        _ => {
            let suggestion = preset_names()
                .iter()
                .map(|n| (strsim::levenshtein(&name.to_ascii_lowercase(), n), *n))
                .min()
                .filter(|(d, _)| *d <= 3)
                .map(|(_, n)| n.to_string());
            return Err(PolicyError::UnknownPreset {
                name: name.to_string(),
                suggestion,
                known: preset_names().join(", "),
            });
        }
    };
    c.name = name.to_string();
    c.preset = Some(name.to_string());
    Ok(c)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

const ALL_TRANSPORT: [TransportError; 6] = [
    ConnectRefused,
    ConnectTimeout,
    Reset,
    ReadTimeout,
    PerTryTimeout,
    Protocol,
];
const SOCKET_ERRORS: [TransportError; 5] = [
    ConnectRefused,
    ConnectTimeout,
    Reset,
    ReadTimeout,
    PerTryTimeout,
];

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// botocore `ThrottledRetryableChecker` codes (`botocore/retries/standard.py`).
/// `PriorRequestNotComplete` is in both botocore lists; as in botocore 2.1 it counts as throttling.
const AWS_THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];

fn base() -> RetryConfig {
    RetryConfig {
        retry_on: RetryOn::default(),
        backoff: Backoff::None,
        jitter: Jitter::None,
        ..RetryConfig::default()
    }
}

/// `no-retry`: one attempt; the baseline every comparison needs. It classifies like `naive`
/// (5xx/429/transport failures are "transient"/"throttle" in the attempt log) but never retries.
pub fn no_retry() -> RetryConfig {
    RetryConfig {
        max_attempts: 1,
        ..naive()
    }
}

/// `naive`: the anti-pattern storms are made of — 4 attempts, retried immediately (no backoff,
/// no jitter), on every 5xx, 429 and transport error, for every method, with no budget.
pub fn naive() -> RetryConfig {
    RetryConfig {
        max_attempts: 4,
        retry_on: RetryOn {
            statuses: vec![Class(5)],
            throttling_statuses: vec![Exact(429)],
            transport: ALL_TRANSPORT.to_vec(),
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        ..base()
    }
}

/// `aws-standard`: botocore ≥ 1.44 default (standard mode with the 2026 rules:
/// `botocore/retries/standard.py`, `botocore/retries/quota.py`; botocore `CHANGELOG.rst`):
/// * max attempts 3 (`DEFAULT_MAX_ATTEMPTS`);
/// * retryable: HTTP 500/502/503/504; connection errors and timeouts (`ConnectionError`,
///   `HTTPClientError`); transient codes `RequestTimeout`, `RequestTimeoutException`; the 14
///   throttling codes; a **429 without a known code is retried as throttling** (1.44);
/// * backoff `rand() · min(b·2^(n−1), 20 s)`, b = 50 ms transient, 1 s throttling (cap before
///   jitter, `_MAX_BACKOFF = 20`);
/// * `x-amz-retry-after` (ms): `delay = max(t, min(ra, t + 5 s))`;
/// * quota: capacity 500 (`INITIAL_CAPACITY`), cost 14 for every non-throttling retry
///   (timeouts included: `_RETRY_COST_V2`), 5 for throttling (`_THROTTLING_RETRY_COST`),
///   +1 on a first-try success (`_NO_RETRY_INCREMENT`), refund of the last acquisition;
/// * every method is retried (AWS APIs are mostly POST and the SDK does not look at it).
pub fn aws_standard() -> RetryConfig {
    RetryConfig {
        max_attempts: 3,
        retry_on: RetryOn {
            statuses: vec![Exact(500), Exact(502), Exact(503), Exact(504)],
            throttling_statuses: vec![Exact(429)],
            transport: ALL_TRANSPORT.to_vec(),
            throttling_codes: strings(AWS_THROTTLING_CODES),
            transient_codes: strings(&["RequestTimeout", "RequestTimeoutException"]),
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff: Backoff::Exponential {
            base: ms(50),
            multiplier: 2.0,
            cap: Some(Duration::from_secs(20)),
            throttling_base: Some(Duration::from_secs(1)),
        },
        jitter: Jitter::Full,
        retry_after: RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::XAmzRetryAfter,
            cap: Some(Duration::from_secs(5)),
        },
        budget: BudgetConfig::AwsQuota(AwsQuotaConfig {
            capacity: 500.0,
            transient_cost: 14.0,
            throttling_cost: 5.0,
            timeout_cost: 14.0,
            success_increment: 1.0,
        }),
        ..base()
    }
}

/// `aws-adaptive`: botocore ≥ 1.44 adaptive mode, which `botocore/client.py` (lines
/// 252-254) builds as standard mode's handler plus the adaptive one: `aws-standard` (same
/// attempts, conditions, backoff, quota) with botocore's client-side rate limiter
/// ([`super::rate_limiter`], `botocore/retries/adaptive.py`, `bucket.py`, `throttling.py`).
/// The limiter counts the config's throttling class as botocore's `ThrottlingErrorDetector`
/// (`retries/standard.py` lines 637-656) does: the throttling codes, or a 429 without one.
pub fn aws_adaptive() -> RetryConfig {
    RetryConfig {
        rate_limiter: RateLimiterConfig::AwsAdaptive,
        ..aws_standard()
    }
}

/// `aws-standard-classic`: botocore ≤ 1.43 standard mode ("Retry Behavior 2.0";
/// `botocore/retries/standard.py`, `botocore/retries/quota.py`):
/// as `aws-standard` but base delay 1 s for both kinds, cost 5 per retry and 10 for
/// connect/read timeouts (`_RETRY_COST`, `_TIMEOUT_RETRY_REQUEST`), a bare 429 is **not**
/// retried (only 429 with a throttling code, trap T3), and no server hint is honoured.
pub fn aws_standard_classic() -> RetryConfig {
    let mut c = aws_standard();
    c.retry_on.throttling_statuses.clear();
    c.backoff = Backoff::Exponential {
        base: Duration::from_secs(1),
        multiplier: 2.0,
        cap: Some(Duration::from_secs(20)),
        throttling_base: None,
    };
    c.retry_after = RetryAfterConfig::default();
    c.budget = BudgetConfig::AwsQuota(AwsQuotaConfig {
        capacity: 500.0,
        transient_cost: 5.0,
        throttling_cost: 5.0,
        timeout_cost: 10.0,
        success_increment: 1.0,
    });
    c
}

/// `aws-legacy`: botocore legacy mode (`botocore/data/_retry.json`, `botocore/retryhandler.py`):
/// 5 attempts (`__default__.max_attempts`); delay `rand()·2^(n−1)` s, **no cap**
/// (`delay_exponential` with base "rand", growth 2); no quota; retries HTTP 429, 500, 502,
/// 503, 504, 509, socket errors, and the five throttling codes. Simplification: botocore only
/// honours those codes with HTTP 400; here they count with any status.
pub fn aws_legacy() -> RetryConfig {
    RetryConfig {
        max_attempts: 5,
        retry_on: RetryOn {
            statuses: [500, 502, 503, 504, 509].map(Exact).to_vec(),
            throttling_statuses: vec![Exact(429)],
            transport: SOCKET_ERRORS.to_vec(),
            throttling_codes: strings(&[
                "Throttling",
                "ThrottlingException",
                "ThrottledException",
                "RequestThrottledException",
                "ProvisionedThroughputExceededException",
            ]),
            transient_codes: vec![],
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff: Backoff::Exponential {
            base: Duration::from_secs(1),
            multiplier: 2.0,
            cap: None,
            throttling_base: None,
        },
        jitter: Jitter::Full,
        ..base()
    }
}

/// `grpc`: gRFC A6 (2024 revision, grpc-go ≥ 1.69) with A6's example policy, since gRPC has no
/// default policy (grpc/proposal `A6-client-retries.md`): `maxAttempts 4`,
/// `initialBackoff 0.1s`, `maxBackoff 1s`, `backoffMultiplier 2`, `retryableStatusCodes [UNAVAILABLE]`; delay
/// `min(0.1 s·2^(n−1), 1 s)·U[0.8, 1.2)`; `retryThrottling { maxTokens 10, tokenRatio 0.1 }`
/// (A6's example); `grpc-retry-pushback-ms` honoured (negative = do not retry).
///
/// Status mapping (gRPC's "HTTP to gRPC Status Code Mapping", for a gRPC client facing a plain
/// HTTP server): 502, 503, 504 → UNAVAILABLE (transient) and 429 → UNAVAILABLE (classified as
/// throttling for the log; gRPC charges both the same); connection refused/timeout and reset
/// → UNAVAILABLE. Read and per-try timeouts are DEADLINE_EXCEEDED, not retryable. gRPC does
/// not look at idempotency (every call is a POST). A real gRPC reply is classified by its
/// `grpc-status`: UNAVAILABLE is retried, every other status is not.
pub fn grpc() -> RetryConfig {
    RetryConfig {
        max_attempts: 4,
        retry_on: RetryOn {
            statuses: vec![Exact(502), Exact(503), Exact(504)],
            throttling_statuses: vec![Exact(429)],
            transport: vec![ConnectRefused, ConnectTimeout, Reset],
            grpc_statuses: vec![GrpcStatus::Unavailable],
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff: Backoff::Exponential {
            base: ms(100),
            multiplier: 2.0,
            cap: Some(Duration::from_secs(1)),
            throttling_base: None,
        },
        jitter: Jitter::Proportional { pct: 20.0 },
        retry_after: RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::GrpcRetryPushbackMs,
            cap: None,
        },
        budget: BudgetConfig::GrpcThrottling(GrpcThrottlingConfig {
            max_tokens: 10.0,
            token_ratio: 0.1,
        }),
        ..base()
    }
}

/// gRPC's hedging policy: gRPC has no default, so the copies, delay and non-fatal statuses
/// are A6's own example (`A6-client-retries.md` lines 136-144); the throttle and pushback
/// header are the `grpc` preset's. Where A6's text and grpc-java differ on the next copy
/// after a non-fatal status, grpc-java's behaviour ([`Shortcut::GrpcJava`]) is the one a
/// real client has.
pub fn grpc_hedging() -> RetryConfig {
    let hedging = HedgingConfig {
        max_attempts: 4,
        delay: ms(500),
        non_fatal: Some(vec![
            GrpcStatus::Unavailable,
            GrpcStatus::Internal,
            GrpcStatus::Aborted,
        ]),
        shortcut: Shortcut::GrpcJava,
    };
    RetryConfig {
        max_attempts: hedging.max_attempts,
        retry_on: RetryOn {
            grpc_statuses: hedging.non_fatal.clone().unwrap_or_default(),
            ..grpc().retry_on
        },
        hedging: Some(hedging),
        ..grpc()
    }
}

fn envoy_backoff() -> (Backoff, Jitter) {
    (
        Backoff::Exponential {
            base: ms(25),
            multiplier: 2.0,
            cap: Some(ms(250)),
            throttling_base: None,
        },
        Jitter::Full,
    )
}

/// `envoy`: a route `retry_policy` with only `retry_on: 5xx,connect-failure,reset` set (Envoy
/// `api/envoy/config/route/v3/route_components.proto` `RetryPolicy`): `num_retries` 1 → 2
/// attempts; back-off `U[0, min(25 ms·2^(n−1), 250 ms))`
/// (`source/common/common/backoff_strategy.cc`; base 25 ms, max 10×base); route timeout
/// 15 s covering all attempts; retry circuit breaker `max_retries` 3 concurrent retries (`circuit_breaker.proto`);
/// `5xx` covers any 5xx and no-response failures (reset, timeouts); no Retry-After
/// (`rate_limited_retry_back_off` unset); methods are not checked.
pub fn envoy() -> RetryConfig {
    let (backoff, jitter) = envoy_backoff();
    RetryConfig {
        max_attempts: 2,
        deadline: Some(Duration::from_secs(15)),
        retry_on: RetryOn {
            statuses: vec![Class(5)],
            transport: SOCKET_ERRORS.to_vec(),
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff,
        jitter,
        budget: BudgetConfig::Envoy(EnvoyConfig {
            budget_percent: None,
            min_retry_concurrency: 3,
            max_retries: 3,
        }),
        ..base()
    }
}

/// `envoy-hedging`: the `envoy` route with `hedge_policy { hedge_on_per_try_timeout: true }`
/// (Envoy `route_components.proto` `HedgePolicy`; the rules in `client::hedge_on_timeout`).
/// Hedging on a per-try timeout needs one, and Envoy sets none by default
/// (`RetryPolicy.per_try_timeout` unset: no per-try timeout): 500 ms is stormrig's choice,
/// the delay of `grpc-hedging`, so that the two hedging presets compare side by side;
/// a scenario sets its own `per_try_timeout`.
pub fn envoy_hedging() -> RetryConfig {
    RetryConfig {
        per_try_timeout: Some(ms(500)),
        hedge_on_per_try_timeout: true,
        ..envoy()
    }
}

/// `istio`: a VirtualService without `retries` (istio/api
/// `networking/v1alpha3/virtual_service.proto` `HTTPRetry`; istio/istio
/// `pilot/pkg/networking/core/route/retry/retry.go`): `attempts` 2 → 3 attempts; retryOn
/// `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes` with the
/// retriable status 503 of older istiod. Over HTTP/1.1 that is: connect refused/timeout and
/// 503; `refused-stream` (HTTP/2 only) has no HTTP/1.1 equivalent, so a generic reset is not
/// retried; `unavailable`/`cancelled` are gRPC statuses, retried when a gRPC reply carries
/// them. Envoy back-off (25 ms, cap 250 ms, full jitter); istio sets `max_retries` to
/// 2^32−1, so no retry limit; no route timeout.
pub fn istio() -> RetryConfig {
    let (backoff, jitter) = envoy_backoff();
    RetryConfig {
        max_attempts: 3,
        retry_on: RetryOn {
            statuses: vec![Exact(503)],
            transport: vec![ConnectRefused, ConnectTimeout],
            grpc_statuses: vec![GrpcStatus::Unavailable, GrpcStatus::Cancelled],
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff,
        jitter,
        ..base()
    }
}

/// `finagle`: the default client stack's `RequeueFilter` (finagle-core
/// `com/twitter/finagle/service/RequeueFilter.scala`, `RetryBudget.scala`): only failures known
/// never to have been sent (connect refused/timeout) are requeued, immediately (`Backoff.const(0)`),
/// against `RetryBudget(ttl = 10 s, minRetriesPerSec = 10, percentCanRetry = 0.2)` with deposits
/// on success only (since 2020). Finagle has no fixed attempt cap but allows at most
/// `ceil(0.2 × balance)` requeues per request; with the 100-retry reserve that is 20, so
/// max attempts = 21.
pub fn finagle() -> RetryConfig {
    RetryConfig {
        max_attempts: 21,
        retry_on: RetryOn {
            transport: vec![ConnectRefused, ConnectTimeout],
            ..RetryOn::default()
        },
        budget: BudgetConfig::Ratio(RatioConfig {
            ratio: 0.2,
            ttl: Duration::from_secs(10),
            min_per_sec: 10,
            deposit: DepositOn::Success,
        }),
        ..base()
    }
}

fn throws_on_failure() -> RetryOn {
    RetryOn {
        statuses: vec![Class(5)],
        throttling_statuses: vec![Exact(429)],
        transport: ALL_TRANSPORT.to_vec(),
        ..RetryOn::default()
    }
}

/// `polly`: Polly v8 `RetryStrategyOptions` defaults
/// (`src/Polly.Core/Retry/RetryConstants.cs`, `RetryStrategyOptions.TResult.cs`):
/// `MaxRetryAttempts` 3 → 4 attempts, `Delay` 2 s, `BackoffType` Constant, `UseJitter` false, no cap. `ShouldHandle`
/// retries every exception; we assume the common HttpClient usage that throws on 5xx/429
/// (`EnsureSuccessStatusCode`) plus every transport error, for every method.
pub fn polly() -> RetryConfig {
    RetryConfig {
        max_attempts: 4,
        retry_on: throws_on_failure(),
        retry_non_idempotent: true,
        backoff: Backoff::Constant {
            delay: Duration::from_secs(2),
        },
        ..base()
    }
}

/// `resilience4j`: `RetryConfig.ofDefaults()`
/// (`resilience4j-retry/src/main/java/io/github/resilience4j/retry/RetryConfig.java`):
/// `maxAttempts` 3 (counts the first call), `waitDuration` 500 ms fixed, every exception retried; as for `polly` we assume a
/// client that throws on 5xx/429 (e.g. Spring `RestTemplate`) plus every transport error.
pub fn resilience4j() -> RetryConfig {
    RetryConfig {
        max_attempts: 3,
        retry_on: throws_on_failure(),
        retry_non_idempotent: true,
        backoff: Backoff::Constant { delay: ms(500) },
        ..base()
    }
}

/// What the Stainless-generated LLM SDKs share, whatever the version (openai-python,
/// anthropic-python; one template, one retry loop in `_base_client.py`):
/// * `_constants.py`: `DEFAULT_MAX_RETRIES = 2` → 3 attempts; `INITIAL_RETRY_DELAY = 0.5`,
///   `MAX_RETRY_DELAY = 8.0`; `DEFAULT_TIMEOUT = Timeout(600, connect=5.0)`, of which the
///   600 s read timeout is taken as the per-try timeout (stormrig has no per-config connect
///   timeout);
/// * `_calculate_retry_timeout`: `min(0.5·2^k, 8)` for the k-th retry (k from 0), times
///   `1 − 0.25·random()` (jitter downward, `U(0.75, 1]`), unless the server's hint is
///   followed (each preset says when);
/// * `_parse_retry_after_header`: `retry-after-ms` first, then `retry-after` as a float
///   (fractions allowed), then as an HTTP-date ([`HintHeader::RetryAfterMs`]);
/// * `_should_retry`: `x-should-retry: true|false` wins over the status; then 408, 409, 429
///   and every status >= 500; `_request`/`_retry_request` also retry connection errors and
///   timeouts (`APIConnectionError`, `APITimeoutError`), whatever the method (every
///   inference call is a POST; the SDK sends an `Idempotency-Key` only where a client sets
///   `idempotency_header`, which neither does);
/// * no retry budget, no circuit breaker.
fn stainless_llm_sdk(retry_after: RetryAfterConfig) -> RetryConfig {
    RetryConfig {
        max_attempts: 3,
        per_try_timeout: Some(Duration::from_secs(600)),
        retry_on: RetryOn {
            statuses: vec![Exact(408), Exact(409), Class(5)],
            throttling_statuses: vec![Exact(429)],
            transport: ALL_TRANSPORT.to_vec(),
            x_should_retry: true,
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff: Backoff::Exponential {
            base: ms(500),
            multiplier: 2.0,
            cap: Some(Duration::from_secs(8)),
            throttling_base: None,
        },
        jitter: Jitter::Downward { pct: 25.0 },
        retry_after,
        ..base()
    }
}

/// `openai-python`: the openai SDK for Python as of 2.x and 3.x (read in 3.57.0 and
/// 2.54.0; `tests/suite/llm_sdk_conformance.rs` runs 3.57.0 beside it). On top of
/// `stainless_llm_sdk`'s shared behaviour:
/// * `_constants.py` `MAX_RETRY_AFTER_DELAY = 2 * 60`: `_calculate_retry_timeout` follows a
///   finite hint when `0 < ra <= 120` s, else the computed backoff (negative, zero, a past
///   HTTP-date, garbage, NaN, an `inf` literal);
/// * `_should_retry` first of all: a finite hint above 120 s means **no retry at all**
///   (the request fails with that answer), even with `x-should-retry: true`;
/// * 3.x `_parse_retry_after_header`: a number too large for a float (`1e400`) counts as
///   above 120 s (2.x let it fall back to the backoff; not modelled).
pub fn openai_python() -> RetryConfig {
    stainless_llm_sdk(RetryAfterConfig {
        header: HintHeader::RetryAfterMs,
        cap: None,
        honour_up_to: Some(Duration::from_secs(120)),
        refuse_above: Some(Duration::from_secs(120)),
    })
}

/// `openai-python-v1`: the openai SDK for Python 1.x (read in 1.109.1), which the
/// `openai-python` preset stood for until 2.x: as [`openai_python`] but
/// `_calculate_retry_timeout` follows a hint only when `0 < ra <= 60` s, and a longer one
/// is ignored (the computed backoff, still retried: `_should_retry` has no window).
pub fn openai_python_v1() -> RetryConfig {
    stainless_llm_sdk(RetryAfterConfig {
        header: HintHeader::RetryAfterMs,
        cap: None,
        honour_up_to: Some(Duration::from_secs(60)),
        refuse_above: None,
    })
}

/// `anthropic-python`: the anthropic SDK for Python as of 1.x and 2.x (read in 2.16.0,
/// 2.10.0 and 1.17.0; the conformance test runs 2.16.0). It differs from openai-python in
/// the hint alone: `_calculate_retry_timeout` follows **any** hint above zero
/// (`min(retry_after, 4_294_967.0)`, a `time.sleep` limit), with no 120 s window and no
/// refusal in `_should_retry`; an `inf` hint is followed too. stormrig clamps every hint to
/// its 300 s ceiling ([`super::retry_after::HINT_CEILING`]), so a hint above 300 s waits
/// 300 s here where the SDK would wait longer.
pub fn anthropic_python() -> RetryConfig {
    stainless_llm_sdk(RetryAfterConfig {
        header: HintHeader::RetryAfterMs,
        cap: None,
        honour_up_to: None,
        refuse_above: None,
    })
}

/// `anthropic-python-v0`: the anthropic SDK for Python 0.x (read in 0.125.0), which the
/// `anthropic-python` preset stood for before 1.x: `_calculate_retry_timeout` follows a
/// hint only when `0 < ra <= 60` s, as openai-python 1.x does.
pub fn anthropic_python_v0() -> RetryConfig {
    openai_python_v1()
}

/// `google-api-core`: the `Retry()` decorator of Google's client libraries for Python with
/// its defaults (read in 2.44.0; the conformance test runs it). `retry/retry_base.py`:
/// `_DEFAULT_INITIAL_DELAY` 1 s, `_DEFAULT_MAXIMUM_DELAY` 60 s, `_DEFAULT_DELAY_MULTIPLIER`
/// 2, `_DEFAULT_DEADLINE` 120 s; `exponential_sleep_generator` draws
/// `random.uniform(0, min(initial x 2^k, maximum))` (full jitter); `if_transient_error`
/// retries `InternalServerError` (500), `TooManyRequests` (429), `ServiceUnavailable` (503)
/// and `requests`' `ConnectionError` / `ChunkedEncodingError` (refused, reset, a broken
/// body; a read timeout is not one of them); `_retry_error_helper` gives up when
/// `now + next_sleep > deadline`, as stormrig's deadline does before a wait. There is no
/// attempt limit: the deadline alone ends a storm, which stormrig's 100-attempt ceiling
/// does not reach within 120 s of these waits. The decorator knows nothing of methods or
/// `Retry-After`. One difference by construction: its deadline is checked only between
/// attempts (an attempt that hangs runs past it), where stormrig's also ends a hanging
/// attempt at the deadline.
pub fn google_api_core() -> RetryConfig {
    RetryConfig {
        max_attempts: 100,
        deadline: Some(Duration::from_secs(120)),
        retry_on: RetryOn {
            statuses: vec![Exact(429), Exact(500), Exact(503)],
            transport: vec![ConnectRefused, ConnectTimeout, Reset, Protocol],
            ..RetryOn::default()
        },
        retry_non_idempotent: true,
        backoff: Backoff::Exponential {
            base: Duration::from_secs(1),
            multiplier: 2.0,
            cap: Some(Duration::from_secs(60)),
            throttling_base: None,
        },
        jitter: Jitter::Full,
        ..base()
    }
}

/// `urllib3`: what `urllib3.PoolManager().request(...)` does with no `retries` argument,
/// `Retry.DEFAULT = Retry(3)` (urllib3 2.8.0 `util/retry.py` line 569): `total=3`, so four
/// attempts. Its `backoff_factor` is 0, so `get_backoff_time` is 0 before every retry
/// (lines 321-338). No status is in a force list: `is_retry` (lines 423-443) retries a
/// status only when it is in `RETRY_AFTER_STATUS_CODES` = {413, 429, 503} (line 205), the
/// method is in `DEFAULT_ALLOWED_METHODS` (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) and the
/// answer has a non-empty `Retry-After` (`connectionpool.py` `urlopen`, `has_retry_after =
/// bool(response.headers.get("Retry-After"))`), and `sleep` then waits what it says
/// (seconds or an HTTP-date, capped at `retry_after_max`, 6 h; stormrig clamps every hint at
/// 300 s). Errors: a connection error (refused, connect timeout: `NewConnectionError` is a
/// `ConnectTimeoutError`) is retried for any method; a read error (read timeout, a reset
/// or a broken answer, `ProtocolError`) only for the allowed methods, which is stormrig's
/// rule for requests that may have reached the server; a TLS failure counts as "other"
/// and is retried. Not modelled: a fractional `Retry-After` ("1.5"), which urllib3 refuses
/// by raising `InvalidHeader`, where stormrig ignores the hint and retries at once.
/// `requests` mounts `Retry(0, read=False)` by default, so this preset is urllib3 used
/// directly, not `requests`.
pub fn urllib3() -> RetryConfig {
    RetryConfig {
        max_attempts: 4,
        retry_on: RetryOn {
            hinted_statuses: vec![Exact(413), Exact(429), Exact(503)],
            transport: vec![
                ConnectRefused,
                ConnectTimeout,
                Reset,
                ReadTimeout,
                PerTryTimeout,
                Protocol,
                TlsHandshake,
            ],
            ..RetryOn::default()
        },
        retry_after: RetryAfterConfig {
            header: HintHeader::RetryAfter,
            ..RetryAfterConfig::default()
        },
        ..base()
    }
}

/// `aws-js-v3`: the AWS SDK for JavaScript v3's default retry strategy, the
/// `StandardRetryStrategy` every client builds (`resolveRetryConfig`), as
/// `@smithy/util-retry` 4.6.2 exports it from `@smithy/core` 3.41.1
/// (`dist-cjs/submodules/retry/index.js`; lines below). It follows AWS's 2026 "retry
/// behavior 2.1", not the older 100 ms / cost 5 / timeouts 10 table (those constants,
/// lines 115-121, are left for the deprecated strategy only):
/// * `Retry.v2026 = true`, `delay()` 50 ms, `throttlingDelay()` 1 s, `cost()` 14,
///   `throttlingCost()` 5 (lines 412-430); `DEFAULT_MAX_ATTEMPTS` 3 (line 477);
///   `INITIAL_RETRY_TOKENS` 500, `NO_RETRY_INCREMENT` 1 (lines 118, 121);
/// * backoff `floor(rand() * min(b * 2^k, 20 s))` in whole milliseconds, b = 50 ms, or 1 s
///   for throttling (`DefaultRetryBackoffStrategy`, lines 431-443; the flooring, at most
///   1 ms, is not modelled);
/// * throttling: a 429 whatever its code, or one of the 14 codes botocore lists
///   (`isThrottlingError`, lines 20-35, 58-60); transient: 500/502/503/504, the codes
///   `RequestTimeout`, `RequestTimeoutException`, `TimeoutError` (the HTTP handler's own
///   timeouts), and the socket errors `ECONNRESET`, `ECONNREFUSED`, `EPIPE`, `ETIMEDOUT`
///   (`isTransientError`, lines 36-38, 61-71); anything else, a malformed answer
///   (Node's `HPE_*` parse errors) and other 5xx included, is not retried;
/// * quota (`StandardRetryStrategy`, lines 485-571): a retry needs the cost at hand, 14
///   or 5 for throttling; a success refunds the last retry's cost, or adds 1 when the call
///   took no retry; every method alike;
/// * hint: `x-amz-retry-after` or `Retry-After` (see
///   [`HintHeader::XAmzRetryAfterOrRetryAfter`]), `max(t, min(hint, t + 5 s))` (lines
///   519-521).
///
/// It differs from `aws-standard` (botocore >= 1.44) in the `Retry-After` it follows, in
/// not retrying a malformed answer, and in the whole-millisecond delays.
pub fn aws_js_v3() -> RetryConfig {
    let mut c = aws_standard();
    c.retry_on.transport = vec![
        ConnectRefused,
        ConnectTimeout,
        Reset,
        ReadTimeout,
        PerTryTimeout,
    ];
    c.retry_on.transient_codes =
        strings(&["RequestTimeout", "RequestTimeoutException", "TimeoutError"]);
    c.retry_after.header = HintHeader::XAmzRetryAfterOrRetryAfter;
    c
}

/// `axios-retry`: `axiosRetry(axios)` with its defaults (axios-retry 4.5.0
/// `dist/cjs/index.js`, lines below; the conformance test runs it with axios 1.21.1):
/// * `DEFAULT_OPTIONS` (lines 102-110): `retries: 3` → 4 attempts, `retryDelay: noDelay`,
///   no `shouldResetTimeout`;
/// * `noDelay` → `retryAfter` (lines 65-82): no wait at all unless the failed answer carries
///   `Retry-After`, then `Number(value)` seconds, or the date it names minus now, at least 0
///   and with no upper bound (stormrig clamps every hint at 300 s);
/// * `isNetworkOrIdempotentRequestError` (lines 61-64, `isNetworkError` lines 18-31): a
///   network error, for any method:
///   no answer, an error code other than `ECONNABORTED` (axios's own timeout) and
///   `ERR_CANCELED`, and not one `is-retry-allowed` 2.2.0 denies (DNS and certificate
///   errors); or, for GET, HEAD, OPTIONS, PUT and DELETE, a 429 or any 5xx
///   (`isRetryableError`, lines 34-41).
///
/// Not modelled: a network error on a POST or PATCH that may have reached the server (a
/// reset, a broken answer) is retried by axios-retry, which stormrig's idempotency rule
/// does not allow; and a fractional `Retry-After` (`1.5`), which axios-retry waits for and
/// stormrig ignores (retrying at once).
pub fn axios_retry() -> RetryConfig {
    RetryConfig {
        max_attempts: 4,
        retry_on: RetryOn {
            statuses: vec![Class(5)],
            throttling_statuses: vec![Exact(429)],
            transport: vec![ConnectRefused, ConnectTimeout, Reset, Protocol],
            ..RetryOn::default()
        },
        retry_after: RetryAfterConfig {
            header: HintHeader::RetryAfter,
            ..RetryAfterConfig::default()
        },
        ..base()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_resolves_and_validates() {
        assert_eq!(preset_names().len(), PRESETS.len());
        for (name, info) in preset_names().iter().zip(PRESETS) {
            assert_eq!(*name, info.name);
            let c = preset(name).unwrap();
            c.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(c.name, *name);
            let json = serde_json::to_string(&c).unwrap();
            let back: RetryConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(back, c, "{name} round-trips");
        }
    }

    #[test]
    fn unknown_preset_suggests() {
        match preset("aws-standart").unwrap_err() {
            PolicyError::UnknownPreset { suggestion, .. } => {
                assert_eq!(suggestion.as_deref(), Some("aws-standard"))
            }
            e => panic!("{e}"),
        }
        match preset("zzzzzzzzzzzz").unwrap_err() {
            PolicyError::UnknownPreset {
                suggestion, known, ..
            } => {
                assert_eq!(suggestion, None);
                assert!(known.contains("finagle"));
            }
            e => panic!("{e}"),
        }
    }
}
