//! What a user writes for a retry config: a name, an optional preset, any field to override.
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
//! attempt_cost = 1.0            # or "tokens" / "money": derived from the attempt's provider
//! retry_on = { statuses = [500, 502, 503, 504], throttling_statuses = [429], transport = ["connect-refused", "connect-timeout", "reset", "read-timeout", "per-try-timeout"] }
//! retry_non_idempotent = false # POST/PATCH retried only when the connect failed...
//! idempotency_key = false      # ...unless an Idempotency-Key header is attached
//! backoff = { kind = "exponential", base = "50ms", multiplier = 2.0, cap = "20s", throttling_base = "1s" }
//! jitter = { kind = "full" }   # none | full | equal | decorrelated | proportional (pct = 20)
//! retry_after = { header = "x-amz-retry-after", cap = "5s" }  # retry-after | retry-after-ms | grpc-retry-pushback-ms | none
//! # retry_after = { header = "retry-after-ms", honour_up_to = "120s", refuse_above = "120s" }  # openai-python
//! # retry_on = { statuses = [408, 409, "5xx"], throttling_statuses = [429], x_should_retry = true }
//! budget = { kind = "aws-quota", capacity = 500, transient_cost = 14, throttling_cost = 5, timeout_cost = 14, success_increment = 1 }
//! # budget = { kind = "ratio", ratio = 0.2, ttl = "10s", min_per_sec = 10 }   # deposit = "request" | "success"
//! # budget = { kind = "grpc-throttling", max_tokens = 10, token_ratio = 0.1 }
//! # budget = { kind = "envoy", budget_percent = 20.0, min_retry_concurrency = 3 }  # or { kind = "envoy", max_retries = 3 }
//! # budget = { kind = "none" }                                              # drop a preset's budget
//! breaker = { failure_threshold = 5, failure_rate = 0.5, window = 20, min_calls = 10, open_for = "5s", half_open_probes = 1 }
//! cost = { per_request_cap = 10, global_cap = 1000 }
//! failover = { providers = ["a", "b"], same_provider_retries = 1 }  # load path /providers/a/...
//! ladder = [{ cached = 0.6 }, { static = true }]  # answers when the attempts could not
//! rate_limiter = { kind = "aws-adaptive" }  # botocore's adaptive send-rate limiter; or "none"
//! pipeline = ["timeout", "breaker", "retry", "timeout"]  # stage order, outermost first
//! bulkhead = { max_concurrent = 10, max_queue = 0 }  # attempts in flight at most
//! concurrency_limit = { kind = "aimd" }  # or "gradient2": Netflix concurrency-limits
//! ```
//!
//! Without a preset the defaults are: 3 attempts, no timeouts, cost 1, retry 502/503/504 and
//! connect failures/resets, no Retry-After, exponential 100 ms ×2 capped at 10 s with full
//! jitter, no budget, no breaker, no cost cap, non-idempotent methods not retried.

use super::backoff::{Backoff, Jitter};
use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use super::bulkhead::BulkheadConfig;
use super::concurrency_limit::ConcurrencyLimitConfig;
use super::config::RetryConfig;
use super::cost::{AttemptCost, CostConfig};
use super::duration;
use super::error::PolicyError;
use super::failover::FailoverConfig;
use super::hedging::HedgingConfig;
use super::ladder::Rung;
use super::outcome::RetryOn;
use super::pipeline::Pipeline;
use super::presets;
use super::rate_limiter::RateLimiterConfig;
use super::retry_after::RetryAfterConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    pub attempt_cost: Option<AttemptCost>,
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
    #[serde(default)]
    pub failover: Option<FailoverConfig>,
    #[serde(default)]
    pub ladder: Option<Vec<Rung>>,
    pub hedging: Option<HedgingConfig>,
    #[serde(default)]
    pub hedge_on_per_try_timeout: Option<bool>,
    #[serde(default)]
    pub rate_limiter: Option<RateLimiterConfig>,
    #[serde(default)]
    pub pipeline: Option<Pipeline>,
    #[serde(default)]
    pub bulkhead: Option<BulkheadConfig>,
    #[serde(default)]
    pub concurrency_limit: Option<ConcurrencyLimitConfig>,
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
            budget,
            ladder,
            rate_limiter,
            hedge_on_per_try_timeout
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
        if self.failover.is_some() {
            c.failover = self.failover.clone();
        }
        if self.pipeline.is_some() {
            c.pipeline = self.pipeline.clone();
        }
        if self.bulkhead.is_some() {
            c.bulkhead = self.bulkhead.clone();
        }
        if self.concurrency_limit.is_some() {
            c.concurrency_limit = self.concurrency_limit.clone();
        }
        if let Some(h) = &self.hedging {
            // A retry policy or a hedging policy, never both (gRFC A6, `A6-client-retries.md`
            // line 349): hedging replaces a preset's retries, and a retry setting written
            // beside it is refused rather than silently dropped.
            for (field, written) in [
                ("max_attempts", self.max_attempts.is_some()),
                ("backoff", self.backoff.is_some()),
                ("jitter", self.jitter.is_some()),
            ] {
                if written {
                    return Err(PolicyError::invalid(
                        field,
                        "a retry setting",
                        "unset beside hedging: a config has a retry policy or a hedging \
                         policy, never both (gRFC A6)",
                    ));
                }
            }
            c.max_attempts = h.max_attempts;
            c.hedging = Some(h.clone());
        }
        c.validate()?;
        Ok(c)
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
