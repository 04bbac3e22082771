//! Figures per request class: what each class of a mixed load asked for, sent and got, so a
//! config that saves its inference calls by hammering its health checks (or retries a
//! payment it must not) shows it class by class.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::latency::{new_histogram, Percentiles};

/// How a request ended, as its class counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassEnding {
    Succeeded,
    Failed,
    /// Answered by the config's ladder after giving up downstream.
    Degraded,
}

/// One class's counts in one config's recorder; they merge exactly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClassCounts {
    pub started: u64,
    pub attempts: u64,
    pub retries: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub degraded: u64,
    /// End-to-end latency of the class's finished requests (degraded ones included: the
    /// answer the user waited for), from their intended start.
    #[serde(with = "super::histogram_v2")]
    pub latency_us: Histogram<u64>,
}

impl Default for ClassCounts {
    fn default() -> Self {
        ClassCounts {
            started: 0,
            attempts: 0,
            retries: 0,
            succeeded: 0,
            failed: 0,
            degraded: 0,
            latency_us: new_histogram(3),
        }
    }
}

impl ClassCounts {
    pub fn merge(&mut self, o: &ClassCounts) {
        self.started += o.started;
        self.attempts += o.attempts;
        self.retries += o.retries;
        self.succeeded += o.succeeded;
        self.failed += o.failed;
        self.degraded += o.degraded;
        self.latency_us.add(&o.latency_us).expect("same bounds");
    }
}

/// One class's figures in `summary.json` (`classes`, configs of a load with classes only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub name: String,
    /// Its share of the load's weights.
    pub weight_share: f64,
    pub upstream_requests: u64,
    pub attempts: u64,
    pub retries: u64,
    /// Requests the target (or provider) counted as received from this class, exactly:
    /// the target draws each arrival's class from its request id as the client does.
    pub downstream_arrivals: u64,
    /// downstream_arrivals / upstream_requests.
    pub amplification: f64,
    pub successes: u64,
    pub failures: u64,
    pub degraded: u64,
    /// successes / upstream_requests (1 when it started none).
    pub success_share: f64,
    pub latency_ms: Percentiles,
    /// With providers: the tokens the class's arrivals cost there (`received`) and those of
    /// its arrivals answered 200 (`served`), as the providers charged them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<super::target::ClassTokens>,
}

impl ClassSummary {
    /// The summary of class `name` from its counts and the target's arrivals of it.
    pub fn of(
        name: &str,
        weight_share: f64,
        c: &ClassCounts,
        arrivals: u64,
        tokens: Option<super::target::ClassTokens>,
    ) -> ClassSummary {
        let ratio = |a: u64, b: u64, empty: f64| if b > 0 { a as f64 / b as f64 } else { empty };
        ClassSummary {
            name: name.to_string(),
            weight_share,
            upstream_requests: c.started,
            attempts: c.attempts,
            retries: c.retries,
            downstream_arrivals: arrivals,
            amplification: ratio(arrivals, c.started, 0.0),
            successes: c.succeeded,
            failures: c.failed,
            degraded: c.degraded,
            success_share: ratio(c.succeeded, c.started, 1.0),
            latency_ms: Percentiles::of(&c.latency_us),
            tokens,
        }
    }
}
