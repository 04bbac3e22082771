//! Retry config: serde types, preset + override resolution, validation.
//!
//! A user names a preset and overrides single fields; every field of [`RetryConfigSpec`] is
//! optional and a nested table (`backoff`, `jitter`, `retry_on`, `retry_after`, `budget`,
//! `breaker`, `cost`) **replaces** the preset's whole table. Keys are snake_case; durations
//! are strings with units (see [`super::duration`]); unknown keys are refused everywhere.
//!
//! ```toml
//! name = "my-client"
//! preset = "aws-standard"      # optional
//! max_attempts = 3             # counts the first try
//! per_try_timeout = "2s"
//! deadline = "10s"             # includes backoff waits
//! attempt_cost = 1.0
//! retry_on = { statuses = [500, 502, 503, 504], throttling_statuses = [429], transport = ["connect-refused", "connect-timeout", "reset", "read-timeout", "per-try-timeout"] }
//! retry_non_idempotent = false # POST/PATCH retried only when the connect failed...
//! idempotency_key = false      # ...unless an Idempotency-Key header is attached
//! backoff = { kind = "exponential", base = "50ms", multiplier = 2.0, cap = "20s", throttling_base = "1s" }
//! jitter = { kind = "full" }   # none | full | equal | decorrelated | proportional (pct = 20)
//! retry_after = { header = "x-amz-retry-after", cap = "5s" }  # retry-after | grpc-retry-pushback-ms | none
//! budget = { kind = "aws-quota", capacity = 500, transient_cost = 14, throttling_cost = 5, timeout_cost = 14, success_increment = 1 }
//! # budget = { kind = "ratio", ratio = 0.2, ttl = "10s", min_per_sec = 10 }   # deposit = "request" | "success"
//! # budget = { kind = "grpc-throttling", max_tokens = 10, token_ratio = 0.1 }
//! # budget = { kind = "envoy", budget_percent = 20.0, min_retry_concurrency = 3 }  # or { kind = "envoy", max_retries = 3 }
//! # budget = { kind = "none" }                                              # drop a preset's budget
//! breaker = { failure_threshold = 5, failure_rate = 0.5, window = 20, min_calls = 10, open_for = "5s", half_open_probes = 1 }
//! cost = { per_request_cap = 10, global_cap = 1000 }
//! ```
//!
//! Without a preset the defaults are: 3 attempts, no timeouts, cost 1, retry 502/503/504 and
//! connect failures/resets, no Retry-After, exponential 100 ms ×2 capped at 10 s with full
//! jitter, no budget, no breaker, no cost cap, non-idempotent methods not retried.

use super::backoff::{Backoff, Jitter};
use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use super::cost::CostConfig;
use super::duration;
use super::error::PolicyError;
use super::outcome::{RetryOn, StatusPattern, TransportError};
use super::presets;
use super::retry_after::RetryAfterConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A resolved, validated retry config. `Serialize` so reports can print it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Name shown in reports.
    pub name: String,
    /// The preset it was derived from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Total attempts including the first try, ≥ 1.
    pub max_attempts: u32,
    /// Timeout of one attempt.
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub per_try_timeout: Option<Duration>,
    /// Overall deadline of the logical request, backoff waits included.
    #[serde(
        default,
        with = "duration::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub deadline: Option<Duration>,
    /// Cost of one attempt for the cost budget.
    pub attempt_cost: f64,
    /// What is retryable.
    pub retry_on: RetryOn,
    /// Retry non-idempotent methods (POST, PATCH) even when the request may have been sent.
    pub retry_non_idempotent: bool,
    /// Attach an `Idempotency-Key` header to non-idempotent requests, which makes retrying
    /// them safe.
    pub idempotency_key: bool,
    /// Nominal delay schedule.
    pub backoff: Backoff,
    /// Randomization of the nominal delay.
    pub jitter: Jitter,
    /// Which server hint is honoured.
    pub retry_after: RetryAfterConfig,
    /// Retry budget.
    pub budget: BudgetConfig,
    /// Circuit breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerConfig>,
    /// Cost caps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostConfig>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            name: "default".into(),
            preset: None,
            max_attempts: 3,
            per_try_timeout: None,
            deadline: None,
            attempt_cost: 1.0,
            retry_on: RetryOn {
                statuses: vec![
                    StatusPattern::Exact(502),
                    StatusPattern::Exact(503),
                    StatusPattern::Exact(504),
                ],
                throttling_statuses: vec![],
                transport: vec![
                    TransportError::ConnectRefused,
                    TransportError::ConnectTimeout,
                    TransportError::Reset,
                ],
                throttling_codes: vec![],
                transient_codes: vec![],
            },
            retry_non_idempotent: false,
            idempotency_key: false,
            backoff: Backoff::Exponential {
                base: Duration::from_millis(100),
                multiplier: 2.0,
                cap: Some(Duration::from_secs(10)),
                throttling_base: None,
            },
            jitter: Jitter::Full,
            retry_after: RetryAfterConfig::default(),
            budget: BudgetConfig::None,
            breaker: None,
            cost: None,
        }
    }
}

/// What a user writes: a name, an optional preset, and any field to override.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct RetryConfigSpec {
    pub name: String,
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default, with = "duration::option")]
    pub per_try_timeout: Option<Duration>,
    #[serde(default, with = "duration::option")]
    pub deadline: Option<Duration>,
    #[serde(default)]
    pub attempt_cost: Option<f64>,
    #[serde(default)]
    pub retry_on: Option<RetryOn>,
    #[serde(default)]
    pub retry_non_idempotent: Option<bool>,
    #[serde(default)]
    pub idempotency_key: Option<bool>,
    #[serde(default)]
    pub backoff: Option<Backoff>,
    #[serde(default)]
    pub jitter: Option<Jitter>,
    #[serde(default)]
    pub retry_after: Option<RetryAfterConfig>,
    #[serde(default)]
    pub budget: Option<BudgetConfig>,
    #[serde(default)]
    pub breaker: Option<BreakerConfig>,
    #[serde(default)]
    pub cost: Option<CostConfig>,
}

impl RetryConfigSpec {
    /// Parse a spec from TOML text (unknown fields refused).
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        toml::from_str(text).map_err(|e| PolicyError::Parse(e.to_string()))
    }

    /// Apply the preset (if any), then every override, then validate.
    pub fn resolve(&self) -> Result<RetryConfig, PolicyError> {
        let mut c = match &self.preset {
            Some(p) => presets::preset(p)?,
            None => RetryConfig::default(),
        };
        c.name = self.name.clone();
        macro_rules! set {
            ($($f:ident),*) => {$(
                if let Some(v) = &self.$f { c.$f = v.clone(); }
            )*};
        }
        set!(
            max_attempts,
            attempt_cost,
            retry_on,
            retry_non_idempotent,
            idempotency_key,
            backoff,
            jitter,
            retry_after,
            budget
        );
        if self.per_try_timeout.is_some() {
            c.per_try_timeout = self.per_try_timeout;
        }
        if self.deadline.is_some() {
            c.deadline = self.deadline;
        }
        if self.breaker.is_some() {
            c.breaker = self.breaker.clone();
        }
        if self.cost.is_some() {
            c.cost = self.cost.clone();
        }
        c.validate()?;
        Ok(c)
    }
}

fn check(
    ok: bool,
    field: &str,
    value: impl std::fmt::Display,
    expected: &str,
) -> Result<(), PolicyError> {
    if ok {
        Ok(())
    } else {
        Err(PolicyError::invalid(field, value, expected))
    }
}

fn dur(d: Duration) -> String {
    format!("\"{}\"", duration::format_duration(d))
}

impl RetryConfig {
    /// Refuse impossible values, naming the field, the value and the allowed range.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check(
            !self.name.trim().is_empty(),
            "name",
            "\"\"",
            "a non-empty name",
        )?;
        check(
            (1..=100).contains(&self.max_attempts),
            "max_attempts",
            self.max_attempts,
            "1..=100 (counts the first try)",
        )?;
        if let Some(t) = self.per_try_timeout {
            check(!t.is_zero(), "per_try_timeout", dur(t), "a duration > 0")?;
        }
        if let Some(t) = self.deadline {
            check(!t.is_zero(), "deadline", dur(t), "a duration > 0")?;
        }
        check(
            self.attempt_cost.is_finite() && self.attempt_cost >= 0.0,
            "attempt_cost",
            self.attempt_cost,
            "a finite number >= 0",
        )?;
        for (f, list) in [
            ("retry_on.statuses", &self.retry_on.statuses),
            (
                "retry_on.throttling_statuses",
                &self.retry_on.throttling_statuses,
            ),
        ] {
            for p in list {
                let ok = match *p {
                    StatusPattern::Exact(s) => (100..=599).contains(&s),
                    StatusPattern::Class(c) => (1..=5).contains(&c),
                };
                check(
                    ok,
                    f,
                    format!("{p:?}"),
                    "status codes 100..=599 or classes \"1xx\"..\"5xx\"",
                )?;
            }
        }
        match &self.backoff {
            Backoff::None | Backoff::Constant { .. } => {}
            Backoff::Linear { base, cap } => {
                if let Some(cap) = cap {
                    check(
                        cap >= base,
                        "backoff.cap",
                        dur(*cap),
                        &format!(">= backoff.base ({})", dur(*base)),
                    )?;
                }
            }
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                throttling_base,
            } => {
                check(
                    multiplier.is_finite() && *multiplier >= 1.0 && *multiplier <= 100.0,
                    "backoff.multiplier",
                    multiplier,
                    "1.0..=100.0",
                )?;
                if let Some(cap) = cap {
                    let b = (*base).max(throttling_base.unwrap_or(Duration::ZERO));
                    check(
                        *cap >= b,
                        "backoff.cap",
                        dur(*cap),
                        &format!(">= backoff.base and backoff.throttling_base ({})", dur(b)),
                    )?;
                }
            }
        }
        match &self.jitter {
            Jitter::Proportional { pct } => check(
                pct.is_finite() && *pct > 0.0 && *pct <= 100.0,
                "jitter.pct",
                pct,
                "a percentage in (0, 100]",
            )?,
            Jitter::Decorrelated => check(
                !self.backoff.base(false).is_zero(),
                "backoff.base",
                dur(self.backoff.base(false)),
                "> 0 (decorrelated jitter multiplies the previous delay by 3 starting at base)",
            )?,
            _ => {}
        }
        self.validate_budget()?;
        if let Some(b) = &self.breaker {
            check(
                b.failure_threshold.is_some() || b.failure_rate.is_some(),
                "breaker",
                "{}",
                "at least one of failure_threshold, failure_rate",
            )?;
            if let Some(t) = b.failure_threshold {
                check(t >= 1, "breaker.failure_threshold", t, ">= 1")?;
            }
            if let Some(r) = b.failure_rate {
                check(
                    r > 0.0 && r <= 1.0,
                    "breaker.failure_rate",
                    r,
                    "a probability in (0, 1]",
                )?;
            }
            check(
                (1..=100_000).contains(&b.window),
                "breaker.window",
                b.window,
                "1..=100000",
            )?;
            check(
                b.min_calls >= 1 && b.min_calls <= b.window,
                "breaker.min_calls",
                b.min_calls,
                &format!("1..=breaker.window ({})", b.window),
            )?;
            check(
                !b.open_for.is_zero(),
                "breaker.open_for",
                dur(b.open_for),
                "a duration > 0",
            )?;
            check(
                b.half_open_probes >= 1,
                "breaker.half_open_probes",
                b.half_open_probes,
                ">= 1",
            )?;
        }
        if let Some(c) = &self.cost {
            for (f, v) in [
                ("cost.per_request_cap", c.per_request_cap),
                ("cost.global_cap", c.global_cap),
            ] {
                if let Some(v) = v {
                    check(v.is_finite() && v > 0.0, f, v, "a finite number > 0")?;
                }
            }
        }
        Ok(())
    }

    fn validate_budget(&self) -> Result<(), PolicyError> {
        match &self.budget {
            BudgetConfig::None => Ok(()),
            BudgetConfig::Ratio { ratio, ttl, .. } => {
                check(
                    ratio.is_finite() && (0.0..=1000.0).contains(ratio),
                    "budget.ratio",
                    ratio,
                    "0.0..=1000.0 (retries per deposit; 0.2 = 20 %)",
                )?;
                check(
                    *ttl >= Duration::from_secs(1) && *ttl <= Duration::from_secs(60),
                    "budget.ttl",
                    dur(*ttl),
                    "\"1s\"..=\"60s\"",
                )
            }
            BudgetConfig::AwsQuota {
                capacity,
                transient_cost,
                throttling_cost,
                timeout_cost,
                success_increment,
            } => {
                check(
                    capacity.is_finite() && *capacity > 0.0,
                    "budget.capacity",
                    capacity,
                    "a finite number > 0",
                )?;
                for (f, v) in [
                    ("budget.transient_cost", transient_cost),
                    ("budget.throttling_cost", throttling_cost),
                    ("budget.timeout_cost", timeout_cost),
                    ("budget.success_increment", success_increment),
                ] {
                    check(
                        v.is_finite() && *v >= 0.0 && v <= capacity,
                        f,
                        v,
                        &format!("0..=budget.capacity ({capacity})"),
                    )?;
                }
                Ok(())
            }
            BudgetConfig::GrpcThrottling {
                max_tokens,
                token_ratio,
            } => {
                check(
                    max_tokens.is_finite() && *max_tokens > 0.0 && *max_tokens <= 1000.0,
                    "budget.max_tokens",
                    max_tokens,
                    "(0, 1000] (gRFC A6)",
                )?;
                check(
                    token_ratio.is_finite() && *token_ratio >= 0.001 && token_ratio <= max_tokens,
                    "budget.token_ratio",
                    token_ratio,
                    "0.001..=budget.max_tokens (decimals beyond 3 are ignored, as in gRPC)",
                )
            }
            BudgetConfig::Envoy { budget_percent, .. } => {
                if let Some(p) = budget_percent {
                    check(
                        p.is_finite() && (0.0..=100.0).contains(p),
                        "budget.budget_percent",
                        p,
                        "0.0..=100.0",
                    )?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<RetryConfig, PolicyError> {
        RetryConfigSpec::from_toml(text)?.resolve()
    }

    #[test]
    fn full_example_parses() {
        let c = resolve(
            r#"
name = "my-client"
preset = "aws-standard"
max_attempts = 3
per_try_timeout = "2s"
deadline = "10s"
attempt_cost = 1.0
retry_on = { statuses = [500, 502, 503, 504], throttling_statuses = [429], transport = ["connect-refused", "connect-timeout", "reset", "read-timeout", "per-try-timeout"] }
retry_non_idempotent = false
idempotency_key = false
backoff = { kind = "exponential", base = "50ms", multiplier = 2.0, cap = "20s" }
jitter = { kind = "full" }
retry_after = { header = "x-amz-retry-after", cap = "5s" }
budget = { kind = "aws-quota", capacity = 500, transient_cost = 14, throttling_cost = 5, timeout_cost = 14, success_increment = 1 }
breaker = { failure_threshold = 5, failure_rate = 0.5, window = 20, min_calls = 10, open_for = "5s", half_open_probes = 1 }
cost = { per_request_cap = 10, global_cap = 1000 }
"#,
        )
        .unwrap();
        assert_eq!(c.name, "my-client");
        assert_eq!(c.per_try_timeout, Some(Duration::from_secs(2)));
        assert!(c.breaker.is_some() && c.cost.is_some());
        // Serializes and reads back identically.
        let json = serde_json::to_string(&c).unwrap();
        let back: RetryConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        for other in [
            r#"budget = { kind = "ratio", ratio = 0.2, ttl = "10s", min_per_sec = 10 }"#,
            r#"budget = { kind = "grpc-throttling", max_tokens = 10, token_ratio = 0.1 }"#,
            r#"budget = { kind = "envoy", budget_percent = 20.0, min_retry_concurrency = 3 }"#,
            r#"jitter = { kind = "proportional", pct = 20 }"#,
            r#"jitter = { kind = "decorrelated" }"#,
            r#"backoff = { kind = "linear", base = "100ms", cap = "1s" }"#,
            r#"backoff = { kind = "constant", delay = "2s" }"#,
            r#"retry_after = { header = "retry-after", cap = "30s" }"#,
        ] {
            resolve(&format!("name = \"x\"\n{other}")).unwrap_or_else(|e| panic!("{other}: {e}"));
        }
    }

    #[test]
    fn overrides_replace_whole_tables() {
        let c = resolve("name = \"x\"\npreset = \"aws-standard\"\nmax_attempts = 5\nbudget = { kind = \"none\" }").unwrap();
        assert_eq!(c.max_attempts, 5);
        assert_eq!(c.budget, BudgetConfig::None);
        assert_eq!(c.preset.as_deref(), Some("aws-standard"));
        let c = resolve("name = \"x\"\npreset = \"aws-standard\"\nbackoff = { kind = \"constant\", delay = \"1s\" }").unwrap();
        assert_eq!(
            c.backoff,
            Backoff::Constant {
                delay: Duration::from_secs(1)
            }
        );
    }

    fn err(text: &str) -> PolicyError {
        resolve(&format!("name = \"x\"\n{text}")).unwrap_err()
    }

    #[test]
    fn bad_input_names_the_field() {
        let cases = [
            ("max_attempts = 0", "max_attempts"),
            (
                "backoff = { kind = \"exponential\", base = \"1s\", cap = \"100ms\" }",
                "backoff.cap",
            ),
            (
                "backoff = { kind = \"exponential\", base = \"1s\", multiplier = 0.5 }",
                "backoff.multiplier",
            ),
            (
                "budget = { kind = \"ratio\", ratio = -0.1, ttl = \"10s\", min_per_sec = 1 }",
                "budget.ratio",
            ),
            (
                "budget = { kind = \"ratio\", ratio = 0.2, ttl = \"0s\", min_per_sec = 1 }",
                "budget.ttl",
            ),
            (
                "budget = { kind = \"grpc-throttling\", max_tokens = 5000, token_ratio = 0.1 }",
                "budget.max_tokens",
            ),
            (
                "breaker = { failure_rate = 1.5, open_for = \"1s\" }",
                "breaker.failure_rate",
            ),
            ("breaker = { open_for = \"1s\" }", "breaker"),
            (
                "jitter = { kind = \"proportional\", pct = 0 }",
                "jitter.pct",
            ),
            ("cost = { per_request_cap = -1 }", "cost.per_request_cap"),
            ("preset = \"aws-standrd\"", "preset"),
        ];
        for (text, field) in cases {
            let e = err(text);
            assert_eq!(e.field(), Some(field), "{text}: {e}");
            let msg = e.to_string();
            assert!(msg.contains(field), "{msg}");
        }
        let mut c = RetryConfig::default();
        c.retry_on.statuses.push(StatusPattern::Exact(700));
        assert_eq!(c.validate().unwrap_err().field(), Some("retry_on.statuses"));
        let e = err("max_attempts = 0").to_string();
        assert!(e.contains("1..=100") && e.contains("= 0"), "{e}");
        let e = err("preset = \"aws-standrd\"").to_string();
        assert!(e.contains("did you mean \"aws-standard\""), "{e}");
    }

    #[test]
    fn parse_errors_are_errors_not_panics() {
        for text in [
            "max_atempts = 3",
            "per_try_timeout = \"-1s\"",
            "per_try_timeout = \"10\"",
            "deadline = 10",
            "max_attempts = -1",
            "backoff = { kind = \"fibonacci\" }",
            "backoff = { kind = \"constant\", delay = \"1s\", extra = 1 }",
            "jitter = { kind = \"full\", pct = 3 }",
            "backoff = { kind = \"none\", base = \"1s\" }",
            "budget = { kind = \"none\", ratio = 1 }",
            "budget = { kind = \"ratio\", ratio = 0.2 }",
            "retry_after = { header = \"x-retry\" }",
            "breaker = { failure_threshold = 1, open_for = \"1s\", bogus = 2 }",
        ] {
            let e = resolve(&format!("name = \"x\"\n{text}")).expect_err(text);
            assert!(matches!(e, PolicyError::Parse(_)), "{text}: {e}");
        }
        assert!(err("per_try_timeout = \"-1s\"")
            .to_string()
            .contains("negative"));
    }
}
