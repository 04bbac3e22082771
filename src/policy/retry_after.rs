//! Server delay hints: `Retry-After`, `retry-after-ms`, `x-amz-retry-after`,
//! `grpc-retry-pushback-ms`.
//!
//! A config honours at most one header ([`RetryAfterConfig::header`]); each has its own units
//! and its own rule for combining with the computed backoff, copied from the client that uses
//! it (botocore `botocore/retries/standard.py`, gRPC `A6-client-retries.md` "Pushback",
//! RFC 9110 section 10.2.3):
//!
//! * `retry-after` (RFC 9110 §10.2.3): integer delay-seconds or an HTTP-date, relative to
//!   `now.wall()`. The hint **replaces** the computed backoff, capped at `cap`. A date in the past
//!   means the condition the server announced is over: the hint is **0** (retry immediately),
//!   not a fallback. Unparseable values (garbage, negative, decimals) fall back to the computed
//!   backoff.
//! * `retry-after-ms` (the Stainless-generated LLM SDKs, openai-python and anthropic-python,
//!   `_base_client.py` `_parse_retry_after_header`): `retry-after-ms` in milliseconds is read
//!   first, then `retry-after` in seconds, both as Python's `float()` reads them (fractions,
//!   exponents, signs); then `retry-after` as an HTTP-date, relative to now (a past date is a
//!   negative hint). A hint is followed only when it is above zero (and within
//!   `honour_up_to`, if set); anything else, an unreadable value included, leaves the
//!   computed backoff in force. With `refuse_above`, a hint longer than that means no retry
//!   at all (openai-python >= 2 `_should_retry`: above 120 s).
//! * `x-amz-retry-after` (AWS 2026 rules): integer milliseconds `ra`;
//!   `delay = max(t, min(ra, t + cap))` where `t` is the computed (jittered) backoff and `cap`
//!   defaults to 5 s. Unparseable/negative values are ignored (delay = `t`).
//! * `x-amz-retry-after-or-retry-after` (the AWS SDK for JavaScript v3, `@smithy/core`
//!   `dist-cjs/submodules/retry/index.js` `parseRetryAfterHeader`, lines 124-158): whichever
//!   of `x-amz-retry-after` (milliseconds as JavaScript's `Number()` reads them) and
//!   `retry-after` (digits with an optional fraction, in seconds, or a date ending in `GMT`)
//!   the answer carries, combined as `x-amz-retry-after` is (`refreshRetryTokenForRetry`,
//!   lines 519-521). A past date or a negative value is a hint of zero, which leaves `t`.
//!   Where an answer carries both, the SDK takes the one written first; stormrig, which does
//!   not keep the order, takes `x-amz-retry-after`.
//! * `grpc-retry-pushback-ms` (gRFC A6): ASCII int32 ms. `>= 0`: retry after exactly that delay
//!   (no jitter, not capped by `maxBackoff`; capped by `cap` only if one is configured) and the
//!   backoff sequence restarts. Negative **or unparseable**: do not retry — that is A6's rule
//!   (grpc-go `shouldRetry`), and it deliberately differs from the fallback used for the two
//!   HTTP headers.
//!
//! Whatever the header and the config, a hinted delay is clamped to [`HINT_CEILING`]
//! (5 minutes), even when the config sets no `cap`: a server that answers `Retry-After:
//! 99999999` (or a date in the year 9999) would otherwise park every request for years, past
//! the end of any rehearsal. A delay-seconds value too large for 64 bits is not a number a
//! server can mean: it is refused as unparseable (the computed backoff applies).

use super::duration;
use super::outcome::Response;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// Which server hint a config honours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HintHeader {
    /// No header is honoured.
    #[default]
    None,
    /// Standard `Retry-After` (seconds or HTTP-date).
    RetryAfter,
    /// `retry-after-ms` (milliseconds), else `retry-after` (seconds, fractions allowed, or
    /// an HTTP-date), as the Stainless-generated LLM SDKs read them.
    RetryAfterMs,
    /// AWS `x-amz-retry-after` (milliseconds), clamped to `[t, t + cap]`.
    XAmzRetryAfter,
    /// gRPC `grpc-retry-pushback-ms` (milliseconds; negative = do not retry).
    GrpcRetryPushbackMs,
    /// `x-amz-retry-after` (milliseconds, fractions allowed), else `Retry-After` (seconds,
    /// fractions allowed, or an HTTP-date), each combined as `x-amz-retry-after` is: the
    /// AWS SDK for JavaScript v3 reads both.
    XAmzRetryAfterOrRetryAfter,
}

/// `retry_after = { header = "retry-after", cap = "30s" }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryAfterConfig {
    /// The honoured header.
    #[serde(default)]
    pub header: HintHeader,
    /// Upper bound on the hinted delay (for `x-amz-retry-after`: the extra allowed over the
    /// computed backoff; default 5 s there).
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub cap: Option<Duration>,
    /// Honour a `retry-after` (or `retry-after-ms`) hint only when it is above zero and at
    /// most this long; any other hint leaves the computed backoff in force (openai-python 1.x
    /// follows a hint only when `0 < ra <= 60 s`, 2.x and later when `0 < ra <= 120 s`).
    /// Unset: every hint is honoured (capped).
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub honour_up_to: Option<Duration>,
    /// A `retry-after` (or `retry-after-ms`) hint longer than this means the server asked
    /// for more than the client will wait: no retry at all (openai-python >= 2 refuses to
    /// retry above 120 s rather than retry sooner than the server asked). Unset: a long hint
    /// is capped or ignored, never a reason to stop.
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub refuse_above: Option<Duration>,
}

/// What the honoured header says for one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// No usable hint: use the computed backoff.
    Absent,
    /// Wait this long (already parsed, not yet capped).
    Delay(Duration),
    /// The server says: do not retry (gRPC negative or malformed pushback).
    DoNotRetry,
}

/// The longest delay any server hint can impose, config cap or not.
pub const HINT_CEILING: Duration = Duration::from_secs(300);

/// The default cap of `x-amz-retry-after` over the computed backoff (AWS 2026 rules: `t + 5 s`).
pub const AMZ_DEFAULT_EXTRA: Duration = Duration::from_secs(5);

/// Parse a `Retry-After` value: delay-seconds (`1*DIGIT`) or an HTTP-date relative to `now_wall`.
/// A past date gives `Some(0)`. Anything else gives `None`.
pub fn parse_retry_after(value: &str, now_wall: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Beyond 64 bits is no delay a server can mean: unparseable, like garbage.
        let secs = v.parse::<u64>().ok()?;
        return Some(Duration::from_secs(secs).min(duration::MAX_DURATION));
    }
    let date = httpdate::parse_http_date(v).ok()?;
    Some(date.duration_since(now_wall).unwrap_or(Duration::ZERO))
}

/// A number as Python's `float()` reads a header value: surrounding whitespace, a sign,
/// digits with single underscores between them, a fraction, an exponent, `inf`,
/// `infinity` and `nan` in any case. `None` where `float()` raises `ValueError`.
pub fn parse_python_float(value: &str) -> Option<f64> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    let b = v.as_bytes();
    let mut cleaned = String::with_capacity(v.len());
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            // Only between two digits, as in a Python numeric literal.
            let around = i > 0 && i + 1 < b.len();
            if !(around && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit()) {
                return None;
            }
            continue;
        }
        cleaned.push(c as char);
    }
    // Rust accepts what Python does but for underscores (removed above); it also takes
    // nothing Python refuses among ASCII number forms.
    cleaned.parse::<f64>().ok()
}

/// The hint of `retry-after-ms` / `retry-after` in seconds, as the Stainless-generated LLM
/// SDKs compute it (openai-python `_base_client.py` `_parse_retry_after_header`; the same
/// function in anthropic-python): `retry-after-ms` / 1000 when `float()` reads it, else
/// `retry-after` when `float()` reads it, else `retry-after` as an HTTP-date minus now (a
/// past date is negative). May be negative, zero, NaN or infinite. A finite value too large
/// for `float()` (`1e400`) gives `f64::MAX` rather than infinity: openai-python >= 3 maps
/// such an overflow to "more than the client waits" and an `inf` literal to "no usable
/// hint", and `f64::MAX` is finite and huge, as the first needs.
pub fn parse_sdk_retry_after(
    ms: Option<&str>,
    seconds: Option<&str>,
    now_wall: impl FnOnce() -> SystemTime,
) -> Option<f64> {
    let read = |v: &str| {
        parse_python_float(v).map(|f| {
            let literal = v.trim().trim_start_matches('+').to_ascii_lowercase();
            if f == f64::INFINITY && literal != "inf" && literal != "infinity" {
                f64::MAX
            } else {
                f
            }
        })
    };
    if let Some(f) = ms.and_then(read) {
        return Some(if f == f64::MAX { f } else { f / 1000.0 });
    }
    let seconds = seconds?;
    if let Some(f) = read(seconds) {
        return Some(f);
    }
    let date = httpdate::parse_http_date(seconds.trim()).ok()?;
    let now = now_wall();
    Some(match date.duration_since(now) {
        Ok(ahead) => ahead.as_secs_f64(),
        Err(behind) => -behind.duration().as_secs_f64(),
    })
}

/// A positive number of seconds as a delay (`f64::MAX` and infinity: the longest one).
fn secs_delay(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(duration::MAX_DURATION)
}

/// Parse `x-amz-retry-after`: a non-negative integer of milliseconds.
pub fn parse_amz_retry_after(value: &str) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Duration::from_millis(v.parse::<u64>().unwrap_or(u64::MAX)).min(duration::MAX_DURATION))
}

/// The JavaScript SDK's hint in seconds (see the module notes), at least zero: a negative
/// one is combined as zero, which leaves the computed backoff. `None` where the SDK finds
/// no hint (`NaN`).
pub fn parse_smithy_js_hint(
    amz_ms: Option<&str>,
    retry_after: Option<&str>,
    now_wall: impl FnOnce() -> SystemTime,
) -> Option<Duration> {
    let secs = if let Some(v) = amz_ms {
        // `Number(v)`: surrounding whitespace trimmed, an empty string is 0.
        let v = v.trim();
        let ms = if v.is_empty() { 0.0 } else { js_decimal(v)? };
        ms / 1000.0
    } else {
        let v = retry_after?;
        if v.ends_with("GMT") {
            let date = httpdate::parse_http_date(v).ok()?;
            match date.duration_since(now_wall()) {
                Ok(ahead) => ahead.as_secs_f64(),
                Err(_) => 0.0,
            }
        } else {
            // `/^((\d+)|(\d+\.\d+))$/`: digits, optionally a fraction; nothing else.
            let (int, frac) = v.split_once('.').unwrap_or((v, "1"));
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if !(digits(int) && digits(frac)) {
                return None;
            }
            v.parse::<f64>().ok()?
        }
    };
    Some(if secs > 0.0 {
        secs_delay(secs)
    } else {
        Duration::ZERO
    })
}

/// A decimal number as JavaScript's `Number()` reads one (sign, digits, fraction,
/// exponent, `Infinity`); hexadecimal and binary literals, which it also takes, are no
/// delay a server writes and are refused here.
fn js_decimal(v: &str) -> Option<f64> {
    let body = v.trim_start_matches(['+', '-']);
    if body == "Infinity" {
        return Some(if v.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let ok = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !ok || body.starts_with(['e', 'E']) {
        return None;
    }
    v.parse::<f64>().ok().filter(|f| !f.is_nan())
}

/// Parse `grpc-retry-pushback-ms` per A6: a non-negative int32 is a delay; anything else
/// (negative, garbage, out of int32 range) means do not retry.
pub fn parse_grpc_pushback(value: &str) -> Hint {
    match value.trim().parse::<i32>() {
        Ok(ms) if ms >= 0 => Hint::Delay(Duration::from_millis(ms as u64)),
        _ => Hint::DoNotRetry,
    }
}

impl RetryAfterConfig {
    /// Read the honoured header of `resp`. The wall clock is asked for only when an
    /// HTTP-date needs it (rarely; it is not free).
    ///
    /// Inlined to the question whether `resp` carries any header the config reads: a storm's
    /// answers carry none, and then the answer is [`Hint::Absent`] for one test, not a call.
    #[inline]
    pub fn hint(&self, resp: &Response<'_>, now_wall: impl FnOnce() -> SystemTime) -> Hint {
        if !self.may_hint(resp) {
            return Hint::Absent;
        }
        self.read_hint(resp, now_wall)
    }

    /// Whether `resp` carries a header the config reads: without one every kind of header
    /// gives [`Hint::Absent`] (each parser starts from an `Option` of its header).
    #[inline(always)]
    fn may_hint(&self, resp: &Response<'_>) -> bool {
        match self.header {
            HintHeader::None => false,
            HintHeader::RetryAfter => resp.retry_after.is_some(),
            HintHeader::RetryAfterMs | HintHeader::XAmzRetryAfterOrRetryAfter => {
                resp.retry_after.is_some()
                    || resp.retry_after_ms.is_some()
                    || resp.amz_retry_after.is_some()
            }
            HintHeader::XAmzRetryAfter => resp.amz_retry_after.is_some(),
            HintHeader::GrpcRetryPushbackMs => resp.grpc_pushback_ms.is_some(),
        }
    }

    /// [`Self::hint`] for an answer that carries a header the config reads, out of line.
    #[inline(never)]
    fn read_hint(&self, resp: &Response<'_>, now_wall: impl FnOnce() -> SystemTime) -> Hint {
        match self.raw_hint(resp, now_wall) {
            Hint::Delay(d) => Hint::Delay(d.min(HINT_CEILING)),
            other => other,
        }
    }

    /// The honoured header as the server wrote it, before the [`HINT_CEILING`]: the
    /// `refuse_above` and `honour_up_to` windows judge what the server asked for, not what
    /// stormrig would clamp it to.
    fn raw_hint(&self, resp: &Response<'_>, now_wall: impl FnOnce() -> SystemTime) -> Hint {
        let opt = |d: Option<Duration>| d.map_or(Hint::Absent, Hint::Delay);
        let windowed = |h: Hint| match h {
            Hint::Delay(d) if self.refuse_above.is_some_and(|r| d > r) => Hint::DoNotRetry,
            Hint::Delay(d) if self.honour_up_to.is_some_and(|u| d.is_zero() || d > u) => {
                Hint::Absent
            }
            other => other,
        };
        match self.header {
            HintHeader::None => Hint::Absent,
            HintHeader::RetryAfter => windowed(opt(resp
                .retry_after
                .and_then(|v| parse_retry_after(v, now_wall())))),
            HintHeader::RetryAfterMs => {
                match parse_sdk_retry_after(resp.retry_after_ms, resp.retry_after, now_wall) {
                    // openai-python's windows take finite hints only (`math.isfinite`): an
                    // `inf` literal is no hint there; without windows (anthropic-python)
                    // any hint above zero is followed, capped.
                    Some(s) if s.is_infinite() && s > 0.0 => {
                        if self.refuse_above.is_some() || self.honour_up_to.is_some() {
                            Hint::Absent
                        } else {
                            Hint::Delay(duration::MAX_DURATION)
                        }
                    }
                    // Zero, negative and NaN hints: the computed backoff.
                    Some(s) if s > 0.0 => windowed(Hint::Delay(secs_delay(s))),
                    _ => Hint::Absent,
                }
            }
            HintHeader::XAmzRetryAfter => opt(resp.amz_retry_after.and_then(parse_amz_retry_after)),
            HintHeader::GrpcRetryPushbackMs => resp
                .grpc_pushback_ms
                .map_or(Hint::Absent, parse_grpc_pushback),
            HintHeader::XAmzRetryAfterOrRetryAfter => opt(parse_smithy_js_hint(
                resp.amz_retry_after,
                resp.retry_after,
                now_wall,
            )),
        }
    }

    /// Combine the computed backoff `computed` with a hint. Returns the delay and whether the
    /// backoff sequence restarts (gRPC pushback). `Hint::DoNotRetry` must be handled by the
    /// caller; here it yields the computed delay.
    #[inline]
    pub fn combine(&self, computed: Duration, hint: Hint) -> (Duration, bool) {
        let Hint::Delay(h) = hint else {
            return (computed, false);
        };
        self.combine_delay(computed, h)
    }

    /// [`Self::combine`] with a hint, out of line: most retries have none.
    #[inline(never)]
    fn combine_delay(&self, computed: Duration, h: Duration) -> (Duration, bool) {
        match self.header {
            HintHeader::None => (computed, false),
            // Replaces the backoff, capped.
            HintHeader::RetryAfter | HintHeader::RetryAfterMs => match self.honour_up_to {
                Some(up_to) if h.is_zero() || h > up_to => (computed, false),
                _ => (self.cap.map_or(h, |c| h.min(c)), false),
            },
            // delay = max(t, min(ra, t + extra)), extra = cap or 5 s.
            HintHeader::XAmzRetryAfter | HintHeader::XAmzRetryAfterOrRetryAfter => {
                let extra = self.cap.unwrap_or(AMZ_DEFAULT_EXTRA);
                (computed.max(h.min(computed.saturating_add(extra))), false)
            }
            // Exactly the pushback, restart the sequence.
            HintHeader::GrpcRetryPushbackMs => (self.cap.map_or(h, |c| h.min(c)), true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall() -> SystemTime {
        httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap()
    }

    #[test]
    fn seconds_and_dates() {
        assert_eq!(
            parse_retry_after("120", wall()),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", wall()), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", wall()),
            Some(Duration::from_secs(30))
        );
        // Past date: the announced condition is over; retry now.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", wall()),
            Some(Duration::ZERO)
        );
        for bad in ["", "soon", "-5", "1.5", "12s", "Sun, 06 Nov 1994"] {
            assert_eq!(parse_retry_after(bad, wall()), None, "{bad:?}");
        }
        // 2^64 seconds: no delay a server can mean.
        assert_eq!(parse_retry_after("18446744073709551616", wall()), None);
        assert_eq!(
            parse_retry_after("18446744073709551615", wall()),
            Some(duration::MAX_DURATION)
        );
    }

    #[test]
    fn every_hint_is_clamped_to_the_ceiling_without_a_cap() {
        let now = wall();
        for (header, value) in [
            (HintHeader::RetryAfter, "99999999"),
            (HintHeader::RetryAfter, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (HintHeader::RetryAfterMs, "99999999999"),
            (HintHeader::RetryAfterMs, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (HintHeader::XAmzRetryAfter, "99999999999"),
            (HintHeader::GrpcRetryPushbackMs, "2147483647"),
        ] {
            let c = RetryAfterConfig {
                header,
                cap: None,
                honour_up_to: None,
                refuse_above: None,
            };
            let r = Response {
                status: 503,
                retry_after: Some(value),
                retry_after_ms: Some(value),
                should_retry: None,
                amz_retry_after: Some(value),
                grpc_pushback_ms: Some(value),
                error_code: None,
                grpc_status: None,
            };
            let hint = c.hint(&r, || now);
            assert_eq!(hint, Hint::Delay(HINT_CEILING), "{header:?} {value}");
            let (delay, _) = c.combine(Duration::from_millis(100), hint);
            assert!(
                delay <= HINT_CEILING + Duration::from_millis(100),
                "{delay:?}"
            );
        }
        // Below the ceiling, hints are as the server wrote them.
        let c = RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::RetryAfter,
            cap: None,
        };
        let r = Response {
            status: 429,
            retry_after: Some("7"),
            ..Response::default()
        };
        assert_eq!(c.hint(&r, || now), Hint::Delay(Duration::from_secs(7)));
    }

    #[test]
    fn retry_after_replaces_and_caps() {
        let c = RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::RetryAfter,
            cap: Some(Duration::from_secs(30)),
        };
        let r = Response {
            status: 503,
            retry_after: Some("7"),
            ..Response::default()
        };
        let h = c.hint(&r, wall);
        assert_eq!(
            c.combine(Duration::from_millis(10), h).0,
            Duration::from_secs(7)
        );
        let huge = Response {
            retry_after: Some("86400"),
            ..r
        };
        let h = c.hint(&huge, wall);
        assert_eq!(
            c.combine(Duration::from_millis(10), h).0,
            Duration::from_secs(30)
        );
        let garbage = Response {
            retry_after: Some("later"),
            ..r
        };
        let h = c.hint(&garbage, wall);
        assert_eq!(h, Hint::Absent);
        assert_eq!(
            c.combine(Duration::from_millis(10), h).0,
            Duration::from_millis(10)
        );
        // Other headers are not honoured.
        let amz = Response {
            status: 503,
            amz_retry_after: Some("1000"),
            ..Response::default()
        };
        assert_eq!(c.hint(&amz, wall), Hint::Absent);
    }

    #[test]
    fn amz_clamps_to_t_plus_5s() {
        let c = RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::XAmzRetryAfter,
            cap: None,
        };
        let t = Duration::from_millis(300);
        let at = |v: &str| {
            let r = Response {
                status: 503,
                amz_retry_after: Some(v),
                ..Response::default()
            };
            c.combine(t, c.hint(&r, wall)).0
        };
        assert_eq!(at("1500"), Duration::from_millis(1500));
        assert_eq!(at("100"), t); // never below t
        assert_eq!(at("60000"), t + Duration::from_secs(5)); // never above t + 5 s
        assert_eq!(at("-1"), t);
        assert_eq!(at("abc"), t);
        assert_eq!(parse_amz_retry_after("1.5"), None);
    }

    #[test]
    fn grpc_pushback() {
        assert_eq!(
            parse_grpc_pushback("250"),
            Hint::Delay(Duration::from_millis(250))
        );
        assert_eq!(parse_grpc_pushback("-1"), Hint::DoNotRetry);
        assert_eq!(parse_grpc_pushback("x"), Hint::DoNotRetry);
        assert_eq!(parse_grpc_pushback("99999999999"), Hint::DoNotRetry);
        let c = RetryAfterConfig {
            honour_up_to: None,
            refuse_above: None,
            header: HintHeader::GrpcRetryPushbackMs,
            cap: None,
        };
        let (d, reset) = c.combine(
            Duration::from_millis(90),
            Hint::Delay(Duration::from_secs(3)),
        );
        assert_eq!((d, reset), (Duration::from_secs(3), true));
        let none = Response::status(503);
        assert_eq!(c.hint(&none, wall), Hint::Absent);
    }

    #[test]
    fn honour_up_to_follows_hints_in_its_window_only() {
        let c = RetryAfterConfig {
            header: HintHeader::RetryAfter,
            cap: None,
            honour_up_to: Some(Duration::from_secs(60)),
            refuse_above: None,
        };
        let t = Duration::from_millis(500);
        let s = Duration::from_secs;
        assert_eq!(c.combine(t, Hint::Delay(s(60))).0, s(60));
        assert_eq!(c.combine(t, Hint::Delay(s(3))).0, s(3));
        assert_eq!(c.combine(t, Hint::Delay(s(61))).0, t, "above the window");
        assert_eq!(c.combine(t, Hint::Delay(Duration::ZERO)).0, t, "zero");
        assert_eq!(c.combine(t, Hint::Absent).0, t);
    }

    fn sdk(ms: Option<&str>, secs: Option<&str>) -> Option<f64> {
        parse_sdk_retry_after(ms, secs, wall)
    }

    #[test]
    fn python_floats_are_read_as_python_reads_them() {
        for (v, want) in [
            ("1.5", Some(1.5)),
            (" 2 ", Some(2.0)),
            ("-3", Some(-3.0)),
            ("+4", Some(4.0)),
            ("1e3", Some(1000.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("1_000", Some(1000.0)),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("", None),
            ("soon", None),
            ("1.5s", None),
            ("0x10", None),
        ] {
            assert_eq!(parse_python_float(v), want, "{v:?}");
        }
        assert!(parse_python_float("NaN").unwrap().is_nan());
        assert_eq!(parse_python_float("-Infinity"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn sdk_hint_reads_ms_first_then_seconds_then_a_date() {
        assert_eq!(sdk(Some("1500"), Some("9")), Some(1.5));
        // An unreadable retry-after-ms falls through to retry-after.
        assert_eq!(sdk(Some("soon"), Some("2.5")), Some(2.5));
        // A readable one wins even when it is negative (no fall-through).
        assert_eq!(sdk(Some("-5"), Some("9")), Some(-0.005));
        assert_eq!(sdk(None, Some("Sun, 06 Nov 1994 08:50:07 GMT")), Some(30.0));
        assert_eq!(
            sdk(None, Some("Sun, 06 Nov 1994 08:49:07 GMT")),
            Some(-30.0),
            "a past date is negative, not zero"
        );
        assert_eq!(sdk(None, Some("garbage")), None);
        assert_eq!(sdk(None, None), None);
        // Overflow is finite and huge; an infinity literal stays infinite.
        assert_eq!(sdk(None, Some("1e400")), Some(f64::MAX));
        assert_eq!(sdk(Some("1e400"), None), Some(f64::MAX));
        assert_eq!(sdk(None, Some("inf")), Some(f64::INFINITY));
    }

    fn hint_of(c: &RetryAfterConfig, ms: Option<&str>, secs: Option<&str>) -> Hint {
        let r = Response {
            status: 429,
            retry_after: secs,
            retry_after_ms: ms,
            ..Response::default()
        };
        c.hint(&r, wall)
    }

    #[test]
    fn openai_windows_follow_refuse_and_fall_back() {
        let c = RetryAfterConfig {
            header: HintHeader::RetryAfterMs,
            cap: None,
            honour_up_to: Some(Duration::from_secs(120)),
            refuse_above: Some(Duration::from_secs(120)),
        };
        let d = |s: f64| Hint::Delay(Duration::from_secs_f64(s));
        assert_eq!(hint_of(&c, None, Some("1.5")), d(1.5));
        assert_eq!(hint_of(&c, None, Some("120")), d(120.0));
        assert_eq!(hint_of(&c, None, Some("120.001")), Hint::DoNotRetry);
        assert_eq!(hint_of(&c, Some("121000"), None), Hint::DoNotRetry);
        assert_eq!(hint_of(&c, None, Some("1e400")), Hint::DoNotRetry);
        assert_eq!(hint_of(&c, Some("250"), Some("30")), d(0.25));
        for fallback in ["0", "-1", "nan", "inf", "later"] {
            assert_eq!(
                hint_of(&c, None, Some(fallback)),
                Hint::Absent,
                "{fallback}"
            );
        }
        assert_eq!(
            hint_of(&c, None, Some("Sun, 06 Nov 1994 08:49:00 GMT")),
            Hint::Absent,
            "a past date: the computed backoff"
        );
        assert_eq!(
            hint_of(&c, None, Some("Sun, 06 Nov 1994 08:49:47 GMT")),
            d(10.0)
        );
        let t = Duration::from_millis(400);
        assert_eq!(c.combine(t, d(1.5)).0, Duration::from_millis(1500));
        assert_eq!(c.combine(t, Hint::Absent).0, t);
    }

    #[test]
    fn anthropic_follows_every_positive_hint_up_to_the_ceiling() {
        let c = RetryAfterConfig {
            header: HintHeader::RetryAfterMs,
            ..RetryAfterConfig::default()
        };
        assert_eq!(
            hint_of(&c, None, Some("121")),
            Hint::Delay(Duration::from_secs(121))
        );
        assert_eq!(hint_of(&c, None, Some("inf")), Hint::Delay(HINT_CEILING));
        assert_eq!(hint_of(&c, None, Some("1e400")), Hint::Delay(HINT_CEILING));
        assert_eq!(hint_of(&c, None, Some("-1")), Hint::Absent);
        assert_eq!(hint_of(&c, None, Some("0")), Hint::Absent);
    }

    #[test]
    fn smithy_js_reads_amz_first_then_retry_after_and_clamps_as_amz() {
        let c = RetryAfterConfig {
            header: HintHeader::XAmzRetryAfterOrRetryAfter,
            ..RetryAfterConfig::default()
        };
        let hint = |amz: Option<&'static str>, ra: Option<&'static str>| {
            let resp = Response {
                status: 503,
                amz_retry_after: amz,
                retry_after: ra,
                ..Response::default()
            };
            c.hint(&resp, wall)
        };
        let s = Duration::from_secs_f64;
        assert_eq!(hint(Some("300"), None), Hint::Delay(s(0.3)));
        assert_eq!(hint(Some(" 1.5 "), None), Hint::Delay(s(0.0015)));
        assert_eq!(hint(Some(""), None), Hint::Delay(Duration::ZERO));
        assert_eq!(hint(Some("-400"), None), Hint::Delay(Duration::ZERO));
        assert_eq!(hint(Some("soon"), Some("3")), Hint::Absent);
        assert_eq!(hint(Some("2000"), Some("9")), Hint::Delay(s(2.0)));
        assert_eq!(hint(None, Some("3")), Hint::Delay(s(3.0)));
        assert_eq!(hint(None, Some("1.5")), Hint::Delay(s(1.5)));
        assert_eq!(hint(None, Some("-1")), Hint::Absent);
        assert_eq!(hint(None, Some("1.")), Hint::Absent);
        assert_eq!(
            hint(None, Some("Sun, 06 Nov 1994 08:49:47 GMT")),
            Hint::Delay(s(10.0))
        );
        assert_eq!(
            hint(None, Some("Sun, 06 Nov 1994 08:49:07 GMT")),
            Hint::Delay(Duration::ZERO)
        );
        assert_eq!(hint(None, None), Hint::Absent);
        // Combined as x-amz-retry-after: max(t, min(hint, t + 5 s)).
        let t = Duration::from_millis(40);
        assert_eq!(
            c.combine(t, Hint::Delay(s(65.0))).0,
            t + Duration::from_secs(5)
        );
        assert_eq!(c.combine(t, Hint::Delay(s(1.5))).0, s(1.5));
        assert_eq!(c.combine(t, Hint::Delay(Duration::ZERO)).0, t);
    }
}
