//! How the built-in target sheds load, as written in `[service]` and as resolved: the queue
//! discipline (`fifo`, `lifo`, `codel`), a cap on the work in progress answered 503 at once
//! (`max_in_flight`), a token-bucket rate limit answered 429 (`rate_limit`) and Envoy's
//! adaptive concurrency limit answered 503 (`adaptive_concurrency`). The rules
//! themselves, which both engines apply, are in `crate::shed`.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::units::duration;

/// folly's default CoDel target delay (`FLAGS_codel_target_delay`, 5 ms) and interval
/// (`FLAGS_codel_interval`, 100 ms): folly/executors/Codel.cpp lines 24-27.
pub const CODEL_TARGET: Duration = Duration::from_millis(5);
pub const CODEL_INTERVAL: Duration = Duration::from_millis(100);

/// `discipline` as written: a name (`"fifo"`, `"lifo"`, `"codel"`) or a table with `kind`
/// and CoDel's parameters. Checked and resolved by [`DisciplineSpec::resolve`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DisciplineSpec {
    Name(String),
    Table(DisciplineTable),
}

/// `discipline = { kind = "codel", target = "5ms", interval = "100ms" }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DisciplineTable {
    pub kind: String,
    #[serde(default, with = "duration::option")]
    pub target: Option<Duration>,
    #[serde(default, with = "duration::option")]
    pub interval: Option<Duration>,
}

/// A string or a table; the table is read by its own derive, so an unknown key in it is
/// refused with serde's list of the keys it takes (not "matched no variant").
impl<'de> Deserialize<'de> for DisciplineSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DisciplineSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"fifo\", \"lifo\", \"codel\" or a table { kind = \"codel\", target = \"5ms\", interval = \"100ms\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(DisciplineSpec::Name(v.to_string()))
            }
            fn visit_map<M: MapAccess<'de>>(self, m: M) -> Result<Self::Value, M::Error> {
                DisciplineTable::deserialize(de::value::MapAccessDeserializer::new(m))
                    .map(DisciplineSpec::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// The order a free slot is handed to waiters in, and whether waiters are shed early.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Discipline {
    /// The oldest waiter first (the default, and what the target always did).
    #[default]
    Fifo,
    /// The newest waiter first; the oldest wait until `queue_timeout` sheds them.
    Lifo,
    /// The oldest waiter first, but while the queue has stood above `target` for an
    /// `interval`, a waiter that waited more than twice `target` is shed with 503 when its
    /// slot comes (folly's server-queue CoDel; see `crate::shed::Codel`).
    Codel {
        #[serde(with = "duration")]
        target: Duration,
        #[serde(with = "duration")]
        interval: Duration,
    },
}

impl DisciplineSpec {
    /// The discipline it says, or why it says none (the message names the value).
    pub fn resolve(&self) -> Result<Discipline, String> {
        let (kind, target, interval) = match self {
            DisciplineSpec::Name(n) => (n.as_str(), None, None),
            DisciplineSpec::Table(t) => (t.kind.as_str(), t.target, t.interval),
        };
        match kind {
            "fifo" | "lifo" if target.is_some() || interval.is_some() => Err(format!(
                "`{kind}` takes no target or interval; those are CoDel's (kind = \"codel\")"
            )),
            "fifo" => Ok(Discipline::Fifo),
            "lifo" => Ok(Discipline::Lifo),
            "codel" => {
                let target = target.unwrap_or(CODEL_TARGET);
                let interval = interval.unwrap_or(CODEL_INTERVAL);
                // folly refuses the same (Codel::setOptions, folly/executors/Codel.cpp:111).
                if target.is_zero()
                    || interval <= target
                    || interval > Duration::from_secs(24 * 3600)
                {
                    return Err(format!(
                        "CoDel needs 0 < target < interval ≤ 24h; got target {} and interval {}",
                        duration::format(target),
                        duration::format(interval)
                    ));
                }
                Ok(Discipline::Codel { target, interval })
            }
            other => Err(format!(
                "unknown discipline `{other}`; expected \"fifo\", \"lifo\" or \"codel\""
            )),
        }
    }
}

/// `rate_limit = { rate = 500, burst = 50, retry_after = "1s" }` as written.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    /// Tokens added per second.
    pub rate: f64,
    /// The bucket's size: arrivals let through at once after a quiet spell (default 1).
    #[serde(default)]
    pub burst: Option<u32>,
    /// Sent as `Retry-After` (whole seconds) with every 429; none: no header.
    #[serde(default, with = "duration::option")]
    pub retry_after: Option<Duration>,
}

/// The resolved rate limit: one token per `interval_ns`, up to `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// Nanoseconds per token (1e9 / rate, rounded, at least 1): whole nanoseconds, so that
    /// both engines count the very same tokens.
    pub interval_ns: u64,
    pub burst: u32,
    /// `Retry-After` in whole seconds, when sent.
    pub retry_after_s: Option<u64>,
}

/// The most tokens per second a rate limit may add: one per nanosecond.
pub const MAX_RATE: f64 = 1e9;

impl RateLimitSpec {
    /// The limit it says, or the field (below `rate_limit`) and why not.
    pub fn resolve(&self) -> Result<RateLimit, (&'static str, String)> {
        if !(self.rate.is_finite() && self.rate > 0.0 && self.rate <= MAX_RATE) {
            return Err((
                "rate",
                format!("{} is outside (0, 1e9] tokens per second", self.rate),
            ));
        }
        let burst = self.burst.unwrap_or(1);
        if burst == 0 || burst > super::limits::MAX_SLOTS {
            return Err((
                "burst",
                format!(
                    "{burst} is outside [1, {}] tokens",
                    super::limits::MAX_SLOTS
                ),
            ));
        }
        let retry_after_s = match self.retry_after {
            None => None,
            Some(d) if d.subsec_nanos() != 0 || d > Duration::from_secs(86_400) => {
                return Err((
                    "retry_after",
                    format!(
                        "{} is not a whole number of seconds in [0s, 24h]; Retry-After carries whole seconds",
                        duration::format(d)
                    ),
                ))
            }
            Some(d) => Some(d.as_secs()),
        };
        Ok(RateLimit {
            interval_ns: ((1e9 / self.rate).round() as u64).max(1),
            burst,
            retry_after_s,
        })
    }
}

/// `adaptive_concurrency = { update_interval = "100ms", min_rtt_interval = "10s", ... }` as
/// written: Envoy's adaptive concurrency filter with its gradient controller
/// (`GradientControllerConfig`), field for field; percentages as Envoy writes them, 0-100.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveConcurrencySpec {
    /// `concurrency_limit_params.concurrency_update_interval` (required, as in Envoy).
    #[serde(with = "duration::option", default)]
    pub update_interval: Option<Duration>,
    /// `min_rtt_calc_params.interval`: between two minRTT measurements (required).
    #[serde(with = "duration::option", default)]
    pub min_rtt_interval: Option<Duration>,
    /// `min_rtt_calc_params.request_count` (default 50).
    #[serde(default)]
    pub min_rtt_requests: Option<u32>,
    /// `min_rtt_calc_params.min_concurrency` (default 3).
    #[serde(default)]
    pub min_concurrency: Option<u32>,
    /// `min_rtt_calc_params.jitter`, percent of `min_rtt_interval` (default 15).
    #[serde(default)]
    pub jitter: Option<f64>,
    /// `min_rtt_calc_params.buffer`, percent added to the minRTT (default 25).
    #[serde(default)]
    pub buffer: Option<f64>,
    /// `sample_aggregate_percentile` (default 50).
    #[serde(default)]
    pub percentile: Option<f64>,
    /// `concurrency_limit_params.max_concurrency_limit` (default 1000).
    #[serde(default)]
    pub max_limit: Option<u32>,
}

/// The resolved adaptive concurrency limit (see `crate::shed::adaptive`). Intervals in whole
/// milliseconds, as Envoy keeps them; percentages as fractions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AdaptiveConcurrency {
    pub update_interval_ms: u64,
    pub min_rtt_interval_ms: u64,
    pub min_rtt_requests: u32,
    pub min_concurrency: u32,
    pub jitter: f64,
    pub buffer: f64,
    pub percentile: f64,
    pub max_limit: u32,
}

impl AdaptiveConcurrencySpec {
    /// The limit it says, or the field (below `adaptive_concurrency`) and why not.
    pub fn resolve(&self) -> Result<AdaptiveConcurrency, (&'static str, String)> {
        let ms = |field: &'static str, d: Option<Duration>| match d {
            None => Err((
                field,
                "is required (Envoy has no default either)".to_string(),
            )),
            Some(d) if d < Duration::from_millis(1) || d > Duration::from_secs(86_400) => Err((
                field,
                format!("{} is outside [1ms, 24h]", duration::format(d)),
            )),
            Some(d) => Ok(d.as_millis() as u64),
        };
        let pct = |field: &'static str, v: Option<f64>, default: f64, zero_ok: bool| {
            let v = v.unwrap_or(default);
            let low_ok = if zero_ok { v >= 0.0 } else { v > 0.0 };
            if v.is_finite() && low_ok && v <= 100.0 {
                Ok(v / 100.0)
            } else {
                let low = if zero_ok { "[0" } else { "(0" };
                Err((field, format!("{v} is outside {low}, 100] percent")))
            }
        };
        let count = |field: &'static str, v: Option<u32>, default: u32| match v.unwrap_or(default) {
            0 => Err((field, "0 is outside [1, 10000000]".to_string())),
            n if n > super::limits::MAX_SLOTS => Err((
                field,
                format!("{n} is outside [1, {}]", super::limits::MAX_SLOTS),
            )),
            n => Ok(n),
        };
        let a = AdaptiveConcurrency {
            update_interval_ms: ms("update_interval", self.update_interval)?,
            min_rtt_interval_ms: ms("min_rtt_interval", self.min_rtt_interval)?,
            min_rtt_requests: count("min_rtt_requests", self.min_rtt_requests, 50)?,
            min_concurrency: count("min_concurrency", self.min_concurrency, 3)?,
            jitter: pct("jitter", self.jitter, 15.0, true)?,
            buffer: pct("buffer", self.buffer, 25.0, true)?,
            percentile: pct("percentile", self.percentile, 50.0, false)?,
            max_limit: count("max_limit", self.max_limit, 1000)?,
        };
        if a.max_limit < a.min_concurrency {
            return Err((
                "max_limit",
                format!(
                    "{} is below min_concurrency ({}): the limit could never be set",
                    a.max_limit, a.min_concurrency
                ),
            ));
        }
        Ok(a)
    }
}

/// The target's shedding, resolved: the default sheds only by the queue (full, or waited
/// `queue_timeout`), as the target always did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Shedding {
    pub discipline: Discipline,
    /// Requests in the work (queued or served) at most; arrivals past it get 503 at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Envoy's adaptive concurrency limit: 503 at once past a limit it learns from latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_concurrency: Option<AdaptiveConcurrency>,
}

impl Shedding {
    /// Whether it is the default (nothing but the queue sheds).
    pub fn is_default(&self) -> bool {
        *self == Shedding::default()
    }
}

impl Shedding {
    /// The same shedding for a target `scale` times as large (`sim --scale`): the cap and
    /// the rate grow with it, the discipline's delays do not.
    pub fn scaled(&self, scale: f64) -> Shedding {
        Shedding {
            discipline: self.discipline,
            max_in_flight: self.max_in_flight.map(|n| {
                (f64::from(n) * scale)
                    .round()
                    .clamp(1.0, f64::from(u32::MAX)) as u32
            }),
            rate_limit: self.rate_limit.map(|r| RateLimit {
                interval_ns: ((r.interval_ns as f64 / scale).round() as u64).max(1),
                burst: (f64::from(r.burst) * scale)
                    .round()
                    .clamp(1.0, f64::from(u32::MAX)) as u32,
                retry_after_s: r.retry_after_s,
            }),
            // Limits and sample counts grow with the target, the intervals do not.
            adaptive_concurrency: self.adaptive_concurrency.map(|a| {
                let n = |v: u32| {
                    (f64::from(v) * scale)
                        .round()
                        .clamp(1.0, f64::from(u32::MAX)) as u32
                };
                AdaptiveConcurrency {
                    min_rtt_requests: n(a.min_rtt_requests),
                    min_concurrency: n(a.min_concurrency),
                    max_limit: n(a.max_limit),
                    ..a
                }
            }),
        }
    }
}
