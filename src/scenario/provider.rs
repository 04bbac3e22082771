//! Providers: named targets that answer like an LLM API. A provider lives on the built-in
//! target under `/providers/NAME/...`; it counts its own arrivals and tokens, enforces a
//! requests-per-minute and a tokens-per-minute limit with 429 + `Retry-After` and the
//! rate-limit headers real providers send, and takes longer the more completion tokens it
//! writes.
//!
//! The limits are token buckets (a full minute's worth, refilled continuously), the way the
//! large providers describe theirs. Every arrival is charged one request, a throttled one
//! too: providers count unsuccessful requests against the limit, which is why retrying
//! before `Retry-After` keeps a client throttled longer. The debt is bounded by one request,
//! so `Retry-After` never asks for more than two refill intervals (2 × 60 s / limit) and a
//! storm cannot dig the bucket into a hole no rehearsal would climb out of.
//! Tokens are charged only for requests served. Pure and deterministic: time comes in as the
//! arrival's run time, so the live target and the simulator decide alike.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::limits::MAX_REQUEST_TOKENS;
use super::units::duration;
use super::validate::refuse::{check_name, Checked, Refusal};
use crate::headers::{COMPLETION_TOKENS as H_COMPLETION_TOKENS, PROMPT_TOKENS as H_PROMPT_TOKENS};

/// Where providers live on the built-in target: `/providers/NAME` and below.
pub const PATH_PREFIX: &str = crate::policy::failover::PROVIDERS_PREFIX;

/// One `[[provider]]` table as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    pub name: String,
    /// Requests per minute; unset = no request limit.
    pub requests_per_minute: Option<u64>,
    /// Prompt + completion tokens per minute; unset = no token limit.
    pub tokens_per_minute: Option<u64>,
    /// Tokens of a request that does not say (`x-stormrig-prompt-tokens`, `...-completion-tokens`).
    #[serde(default = "default_prompt")]
    pub prompt_tokens: u64,
    #[serde(default = "default_completion")]
    pub completion_tokens: u64,
    /// Latency of an answer: time to the first token plus time per completion token.
    #[serde(default = "default_ttft", with = "duration")]
    pub time_to_first_token: Duration,
    #[serde(default = "default_tpot", with = "duration")]
    pub time_per_output_token: Duration,
    /// What the provider charges; unset = no money figures for it.
    pub price: Option<PriceSection>,
}

/// `price = { prompt_per_1k = 0.003, completion_per_1k = 0.015 }` as written: money per
/// 1,000 tokens in whatever currency the scenario means (stormrig names none).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PriceSection {
    pub prompt_per_1k: f64,
    pub completion_per_1k: f64,
}

/// A validated price, kept in millionths of a money unit per 1,000 tokens (= billionths per
/// token): money then adds up in whole numbers, so six attempts cost exactly six times one
/// and figures do not depend on the order attempts were summed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Price {
    pub prompt_micro_per_1k: u64,
    pub completion_micro_per_1k: u64,
}

/// Billionths of a money unit per money unit.
pub const NANO_PER_UNIT: f64 = 1e9;

/// The highest price per 1,000 tokens (keeps every sum of a run far from overflow).
pub const MAX_PRICE_PER_1K: f64 = 1000.0;

impl Price {
    /// What `t` costs, in billionths of a money unit.
    pub fn nano(self, t: Tokens) -> u64 {
        t.prompt
            .saturating_mul(self.prompt_micro_per_1k)
            .saturating_add(t.completion.saturating_mul(self.completion_micro_per_1k))
    }
}

/// One price figure as millionths per 1k: finite, at least 0, at most [`MAX_PRICE_PER_1K`],
/// with no digit finer than a millionth (it would be silently rounded away).
fn micro(field: String, v: f64) -> Checked<u64> {
    let refuse = |message: String| {
        Err(Refusal {
            field: field.clone(),
            message,
        })
    };
    if !(v.is_finite() && (0.0..=MAX_PRICE_PER_1K).contains(&v)) {
        return refuse(format!(
            "{v} is not a price: give a number from 0 to {MAX_PRICE_PER_1K} per 1,000 tokens"
        ));
    }
    let m = (v * 1e6).round();
    if (m / 1e6 - v).abs() > v.abs() * 1e-12 {
        return refuse(format!(
            "{v} has digits finer than a millionth, which the money figures would round away"
        ));
    }
    Ok(m as u64)
}

fn default_prompt() -> u64 {
    1000
}
fn default_completion() -> u64 {
    200
}
fn default_ttft() -> Duration {
    Duration::from_millis(200)
}
fn default_tpot() -> Duration {
    Duration::from_millis(1)
}

/// A validated provider.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Provider {
    pub name: String,
    pub requests_per_minute: Option<u64>,
    pub tokens_per_minute: Option<u64>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub time_to_first_token: Duration,
    pub time_per_output_token: Duration,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

/// Validates the `[[provider]]` tables: names folder-safe and distinct, limits above zero,
/// token counts within [`MAX_REQUEST_TOKENS`].
pub fn check_providers(sections: &[ProviderSection]) -> Checked<Vec<Provider>> {
    let mut out: Vec<Provider> = Vec::with_capacity(sections.len());
    for (i, s) in sections.iter().enumerate() {
        let p = format!("provider[{i}]");
        check_name(&format!("{p}.name"), &s.name)?;
        if out.iter().any(|o| o.name == s.name) {
            return Err(Refusal {
                field: format!("{p}.name"),
                message: format!("{:?} names two providers", s.name),
            });
        }
        for (field, v) in [
            ("requests_per_minute", s.requests_per_minute),
            ("tokens_per_minute", s.tokens_per_minute),
        ] {
            if v == Some(0) {
                return Err(Refusal {
                    field: format!("{p}.{field}"),
                    message: "0 would refuse every request; leave it out for no limit".into(),
                });
            }
        }
        for (field, v) in [
            ("prompt_tokens", s.prompt_tokens),
            ("completion_tokens", s.completion_tokens),
        ] {
            if v > MAX_REQUEST_TOKENS {
                return Err(Refusal {
                    field: format!("{p}.{field}"),
                    message: format!("{v} is above the limit of {MAX_REQUEST_TOKENS}"),
                });
            }
        }
        let price = match s.price {
            None => None,
            Some(pr) => Some(Price {
                prompt_micro_per_1k: micro(format!("{p}.price.prompt_per_1k"), pr.prompt_per_1k)?,
                completion_micro_per_1k: micro(
                    format!("{p}.price.completion_per_1k"),
                    pr.completion_per_1k,
                )?,
            }),
        };
        out.push(Provider {
            name: s.name.clone(),
            requests_per_minute: s.requests_per_minute,
            tokens_per_minute: s.tokens_per_minute,
            prompt_tokens: s.prompt_tokens,
            completion_tokens: s.completion_tokens,
            time_to_first_token: s.time_to_first_token,
            time_per_output_token: s.time_per_output_token,
            price,
        });
    }
    Ok(out)
}

/// The provider a request path names (`/providers/NAME` or `/providers/NAME/...`), as its
/// index in `providers`.
pub fn route(providers: &[Provider], path: &str) -> Option<usize> {
    let rest = path.strip_prefix(PATH_PREFIX)?;
    let name = rest.split('/').next()?;
    providers.iter().position(|p| p.name == name)
}

/// One request's tokens: what it asks to read and to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
}

impl Tokens {
    pub fn total(self) -> u64 {
        self.prompt + self.completion
    }
}

impl Provider {
    /// The request's tokens: the header values when present and sane, else the defaults.
    pub fn tokens(&self, prompt: Option<u64>, completion: Option<u64>) -> Tokens {
        let sane = |v: Option<u64>, d: u64| v.filter(|&v| v <= MAX_REQUEST_TOKENS).unwrap_or(d);
        Tokens {
            prompt: sane(prompt, self.prompt_tokens),
            completion: sane(completion, self.completion_tokens),
        }
    }

    /// The tokens of a request carrying `headers` (the load's): the token headers when
    /// present, as the live target reads them from each request, else the defaults.
    pub fn load_tokens(&self, headers: &std::collections::BTreeMap<String, String>) -> Tokens {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        };
        self.tokens(header(H_PROMPT_TOKENS), header(H_COMPLETION_TOKENS))
    }

    /// The tokens request `request` of `class` asks for here: the class's own counts (drawn
    /// per request for a range), else its token headers, else this provider's defaults, as
    /// the live target reads them off the request the class sends.
    pub fn class_tokens(
        &self,
        class: &super::classes::RequestClass,
        seed: u64,
        request: u64,
    ) -> Tokens {
        let headers = self.load_tokens(&class.headers);
        let (prompt, completion) = class.tokens(seed, request);
        Tokens {
            prompt: prompt.unwrap_or(headers.prompt),
            completion: completion.unwrap_or(headers.completion),
        }
    }

    /// How long answering takes: time to the first token plus one step per completion token.
    pub fn latency(&self, t: Tokens) -> Duration {
        self.time_to_first_token.saturating_add(
            self.time_per_output_token
                .saturating_mul(u32::try_from(t.completion).unwrap_or(u32::MAX)),
        )
    }
}

/// What the provider's limits say about one arrival.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admission {
    /// Serve it (`None`), or throttle it and say when to come back.
    pub retry_after: Option<Duration>,
    /// Whole requests and tokens left in the buckets after this arrival (for the
    /// `x-ratelimit-remaining-*` headers); `None` where there is no limit.
    pub remaining_requests: Option<u64>,
    pub remaining_tokens: Option<u64>,
    /// Time until the buckets are full again (`x-ratelimit-reset-*`).
    pub reset_requests: Duration,
    pub reset_tokens: Duration,
}

/// One bucket refilled at `per_minute` per minute, holding at most one minute's worth.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    per_minute: f64,
    level: f64,
}

impl Bucket {
    fn new(per_minute: u64) -> Bucket {
        let per_minute = per_minute as f64;
        Bucket {
            per_minute,
            level: per_minute,
        }
    }

    fn refill(&mut self, elapsed: Duration) {
        self.level =
            (self.level + self.per_minute * elapsed.as_secs_f64() / 60.0).min(self.per_minute);
    }

    /// Time until the level reaches `need`.
    fn wait_for(&self, need: f64) -> Duration {
        if self.level >= need {
            return Duration::ZERO;
        }
        Duration::from_secs_f64((need - self.level) * 60.0 / self.per_minute)
    }

    fn remaining(&self) -> u64 {
        self.level.max(0.0).floor() as u64
    }
}

/// A provider's rate limits over a run: fed arrivals in time order.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
    last: Duration,
}

impl RateLimiter {
    pub fn new(p: &Provider) -> RateLimiter {
        RateLimiter {
            requests: p.requests_per_minute.map(Bucket::new),
            tokens: p.tokens_per_minute.map(Bucket::new),
            last: Duration::ZERO,
        }
    }

    /// Decides the arrival at run time `t` of a request of `tokens`. Arrivals out of time
    /// order (threads racing by microseconds) count as arriving at the latest time seen.
    pub fn admit(&mut self, t: Duration, tokens: Tokens) -> Admission {
        let t = t.max(self.last);
        let elapsed = t - self.last;
        self.last = t;
        for b in [&mut self.requests, &mut self.tokens].into_iter().flatten() {
            b.refill(elapsed);
        }
        let need = tokens.total() as f64;
        // A request larger than a whole minute's tokens can never pass; it waits for a full
        // bucket and is then served, as a provider would rather than refuse it forever.
        let need_tokens = |b: &Bucket| need.min(b.per_minute);
        let wait = self
            .requests
            .map_or(Duration::ZERO, |b| b.wait_for(1.0))
            .max(
                self.tokens
                    .map_or(Duration::ZERO, |b| b.wait_for(need_tokens(&b))),
            );
        let served = wait.is_zero();
        if let Some(b) = self.requests.as_mut() {
            b.level = (b.level - 1.0).max(-1.0);
        }
        if served {
            if let Some(b) = self.tokens.as_mut() {
                b.level -= need_tokens(b);
            }
        }
        let retry_after = (!served).then(|| {
            // Counted against the limit itself, a throttled arrival's wait includes its own charge.
            self.requests
                .map_or(Duration::ZERO, |b| b.wait_for(1.0))
                .max(wait)
        });
        Admission {
            retry_after,
            remaining_requests: self.requests.map(|b| b.remaining()),
            remaining_tokens: self.tokens.map(|b| b.remaining()),
            reset_requests: self
                .requests
                .map_or(Duration::ZERO, |b| b.wait_for(b.per_minute)),
            reset_tokens: self
                .tokens
                .map_or(Duration::ZERO, |b| b.wait_for(b.per_minute)),
        }
    }
}

/// `Retry-After` delay-seconds for a wait: whole seconds rounded up, so a client that
/// follows it never comes back before the provider would serve it.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// What a provider remembers of the 429s it sent: when each throttled request may come
/// back. Its next arrival is judged by the provider's own clock: at or after that time the
/// client honoured `Retry-After`, before it the client came back early (and keeps the
/// limit tight). A request that never comes back keeps its entry (one per throttled
/// request that gave up).
#[derive(Debug, Clone, Default)]
pub struct RetryAfterWatch {
    not_before: std::collections::HashMap<u64, Duration>,
}

impl RetryAfterWatch {
    /// Request `request` arriving at `t` was answered 429 with `Retry-After: secs`.
    pub fn throttled(&mut self, request: u64, t: Duration, secs: u64) {
        self.not_before
            .insert(request, t.saturating_add(Duration::from_secs(secs)));
    }

    /// Request `request` arrives at `t`: `Some(true)` when it comes back no earlier than
    /// the `Retry-After` it was given, `Some(false)` when earlier, `None` when it was not
    /// throttled before.
    pub fn arrive(&mut self, request: u64, t: Duration) -> Option<bool> {
        self.not_before.remove(&request).map(|nb| t >= nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttled_request_back_at_its_retry_after_is_honoured_earlier_is_early() {
        let mut w = RetryAfterWatch::default();
        let s = Duration::from_secs;
        assert_eq!(w.arrive(1, s(0)), None, "never throttled");
        w.throttled(1, s(10), 2);
        w.throttled(2, s(10), 2);
        assert_eq!(w.arrive(1, s(12)), Some(true));
        assert_eq!(w.arrive(2, s(12) - Duration::from_nanos(1)), Some(false));
        assert_eq!(w.arrive(1, s(13)), None, "judged once per 429");
    }

    fn provider(rpm: Option<u64>, tpm: Option<u64>) -> Provider {
        Provider {
            name: "a".into(),
            requests_per_minute: rpm,
            tokens_per_minute: tpm,
            prompt_tokens: 100,
            completion_tokens: 50,
            time_to_first_token: Duration::from_millis(100),
            time_per_output_token: Duration::from_millis(2),
            price: None,
        }
    }

    #[test]
    fn a_price_is_kept_in_millionths_and_charges_whole_billionths() {
        let p = Price {
            prompt_micro_per_1k: micro("p".into(), 0.003).unwrap(),
            completion_micro_per_1k: micro("c".into(), 0.015).unwrap(),
        };
        assert_eq!(
            (p.prompt_micro_per_1k, p.completion_micro_per_1k),
            (3_000, 15_000)
        );
        assert_eq!(p.nano(T), 100 * 3_000 + 50 * 15_000);
        for bad in [
            -0.001,
            f64::NAN,
            f64::INFINITY,
            MAX_PRICE_PER_1K * 2.0,
            1e-7,
        ] {
            assert!(micro("p".into(), bad).is_err(), "{bad}");
        }
    }

    const T: Tokens = Tokens {
        prompt: 100,
        completion: 50,
    };

    #[test]
    fn a_full_minute_of_requests_passes_then_the_next_waits_for_one_refill() {
        let mut l = RateLimiter::new(&provider(Some(60), None));
        for i in 0..60 {
            assert_eq!(l.admit(Duration::ZERO, T).retry_after, None, "request {i}");
        }
        let a = l.admit(Duration::ZERO, T);
        // Empty, and charged for this one too: two refills of 1 s each away.
        assert_eq!(a.retry_after, Some(Duration::from_secs(2)));
        assert_eq!(a.remaining_requests, Some(0));
        // After the advertised wait, it passes.
        assert_eq!(l.admit(Duration::from_secs(2), T).retry_after, None);
    }

    #[test]
    fn retrying_before_retry_after_lengthens_the_throttling() {
        // After a full minute's burst, one client comes back after each advertised wait,
        // the other after a quarter of it; at most 50 tries each.
        let served_at = |hammer: bool| {
            let mut l = RateLimiter::new(&provider(Some(60), None));
            for _ in 0..60 {
                l.admit(Duration::ZERO, T);
            }
            let mut t = Duration::ZERO;
            for _ in 0..50 {
                match l.admit(t, T).retry_after {
                    None => return Some(t),
                    Some(ra) if hammer => t += ra / 4,
                    Some(ra) => t += ra,
                }
            }
            None
        };
        assert_eq!(served_at(false), Some(Duration::from_secs(2)));
        // Each early try is charged too: the hammering client is never let through.
        assert_eq!(served_at(true), None);
    }

    #[test]
    fn tokens_per_minute_throttle_big_requests_and_are_charged_only_when_served() {
        let mut l = RateLimiter::new(&provider(None, Some(1000)));
        for _ in 0..6 {
            assert_eq!(l.admit(Duration::ZERO, T).retry_after, None);
        }
        let a = l.admit(Duration::ZERO, T);
        // 100 tokens left, 150 needed: 50 tokens at 1000/min = 3 s.
        assert_eq!(a.retry_after, Some(Duration::from_secs(3)));
        assert_eq!(a.remaining_tokens, Some(100));
        assert_eq!(l.admit(Duration::from_secs(3), T).retry_after, None);
    }

    #[test]
    fn latency_grows_with_completion_tokens_and_headers_override_defaults() {
        let p = provider(None, None);
        assert_eq!(
            p.tokens(None, Some(500)),
            Tokens {
                prompt: 100,
                completion: 500
            }
        );
        assert_eq!(p.latency(p.tokens(None, None)), Duration::from_millis(200));
        assert_eq!(
            p.latency(p.tokens(None, Some(500))),
            Duration::from_millis(1100)
        );
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
    }

    #[test]
    fn routes_by_the_path_prefix() {
        let ps = [
            provider(None, None),
            Provider {
                name: "b".into(),
                ..provider(None, None)
            },
        ];
        assert_eq!(route(&ps, "/providers/b/v1/chat"), Some(1));
        assert_eq!(route(&ps, "/providers/a"), Some(0));
        assert_eq!(route(&ps, "/providers/c/x"), None);
        assert_eq!(route(&ps, "/v1/chat"), None);
    }
}
