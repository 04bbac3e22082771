//! The built-in target's providers: each `/providers/NAME/...` request is counted by its
//! provider, charged to the provider's rate limits (429 + `Retry-After` and the rate-limit
//! headers when over), served for as long as its completion tokens take, and its tokens are
//! counted. The decisions are [`crate::scenario::provider`]'s, shared with the simulator.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};

use crate::headers::{COMPLETION_TOKENS, PROMPT_TOKENS};
use crate::metrics::provider::{ProviderBook, ProviderStats};
use crate::scenario::provider::{retry_after_secs, route, Admission, Provider, Tokens};

use super::{parse_u64, Resp};

/// Every provider of a target, each with its limits and counts under its own lock.
pub(crate) struct Providers {
    list: Vec<Provider>,
    states: Vec<Mutex<ProviderBook>>,
}

/// A request on its way through one provider.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed {
    index: usize,
    request: u64,
    tokens: Tokens,
}

impl Routed {
    /// The tokens its provider charges it.
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens.total()
    }
}

impl Providers {
    pub(crate) fn new(list: Vec<Provider>) -> Providers {
        let states = list
            .iter()
            .map(|p| Mutex::new(ProviderBook::new(p)))
            .collect();
        Providers { list, states }
    }

    fn lock(&self, i: usize) -> std::sync::MutexGuard<'_, ProviderBook> {
        self.states[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the arrival at run time `t` of attempt `attempt` of request `request` whose
    /// path names a provider; `None` for other paths.
    pub(crate) fn arrive(
        &self,
        path: &str,
        headers: &HeaderMap,
        (request, attempt): (u64, u32),
        t: Duration,
    ) -> Option<Routed> {
        let index = route(&self.list, path)?;
        let tokens = self.list[index].tokens(
            parse_u64(headers.get(PROMPT_TOKENS)),
            parse_u64(headers.get(COMPLETION_TOKENS)),
        );
        self.lock(index).arrive((request, attempt), tokens, t);
        Some(Routed {
            index,
            request,
            tokens,
        })
    }

    /// The provider's limits at run time `t`: the time serving takes, or the 429 answer.
    pub(crate) fn admit(&self, r: Routed, t: Duration) -> Result<Duration, Box<Resp>> {
        let a = self.lock(r.index).admit(r.request, r.tokens, t);
        match a.retry_after {
            None => Ok(self.list[r.index].latency(r.tokens)),
            Some(wait) => Err(Box::new(throttled(&self.list[r.index], &a, wait))),
        }
    }

    /// The request was answered 200.
    pub(crate) fn served(&self, r: Routed) {
        self.lock(r.index).serve(r.tokens);
    }

    pub(crate) fn stats(&self) -> Vec<ProviderStats> {
        (0..self.list.len())
            .map(|i| self.lock(i).stats.clone())
            .collect()
    }
}

/// A reset time as providers write it (`x-ratelimit-reset-*`): seconds with up to three
/// decimals and an `s`.
fn reset(d: Duration) -> HeaderValue {
    let ms = d.as_millis();
    HeaderValue::from_str(&format!("{}.{:03}s", ms / 1000, ms % 1000))
        .unwrap_or(HeaderValue::from_static("0s"))
}

/// The 429 of a throttled request, with `Retry-After` and the rate-limit headers.
fn throttled(p: &Provider, a: &Admission, wait: Duration) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from_static(b"rate limit exceeded\n")));
    *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let h = r.headers_mut();
    h.insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
    if let (Some(limit), Some(left)) = (p.requests_per_minute, a.remaining_requests) {
        h.insert("x-ratelimit-limit-requests", HeaderValue::from(limit));
        h.insert("x-ratelimit-remaining-requests", HeaderValue::from(left));
        h.insert("x-ratelimit-reset-requests", reset(a.reset_requests));
    }
    if let (Some(limit), Some(left)) = (p.tokens_per_minute, a.remaining_tokens) {
        h.insert("x-ratelimit-limit-tokens", HeaderValue::from(limit));
        h.insert("x-ratelimit-remaining-tokens", HeaderValue::from(left));
        h.insert("x-ratelimit-reset-tokens", reset(a.reset_tokens));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttled_request_gets_retry_after_and_the_rate_limit_headers() {
        let p = Provider {
            name: "llm".into(),
            requests_per_minute: Some(1),
            tokens_per_minute: Some(10_000),
            prompt_tokens: 100,
            completion_tokens: 50,
            time_to_first_token: Duration::ZERO,
            time_per_output_token: Duration::ZERO,
            price: None,
        };
        let ps = Providers::new(vec![p]);
        let r = ps
            .arrive(
                "/providers/llm/v1",
                &HeaderMap::new(),
                (7, 1),
                Duration::ZERO,
            )
            .unwrap();
        assert!(ps.admit(r, Duration::ZERO).is_ok());
        let resp = ps.admit(r, Duration::ZERO).unwrap_err();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        let h = |n: &str| resp.headers().get(n).unwrap().to_str().unwrap().to_string();
        // Empty and charged for this one: two refills of 60 s each.
        assert_eq!(h("retry-after"), "120");
        assert_eq!(h("x-ratelimit-limit-requests"), "1");
        assert_eq!(h("x-ratelimit-remaining-requests"), "0");
        assert_eq!(h("x-ratelimit-reset-requests"), "120.000s");
        assert_eq!(h("x-ratelimit-limit-tokens"), "10000");
        assert_eq!(h("x-ratelimit-remaining-tokens"), "9850");
        assert_eq!(h("x-ratelimit-reset-tokens"), "0.900s");
        let stats = ps.stats();
        assert_eq!((stats[0].arrivals, stats[0].throttled), (1, 1));
        // The same request back a second before its Retry-After is over: early.
        let back = Duration::from_secs(119);
        ps.arrive("/providers/llm/v1", &HeaderMap::new(), (7, 2), back);
        let stats = ps.stats();
        assert_eq!(
            (stats[0].retry_after_early, stats[0].retry_after_honoured),
            (1, 0)
        );
    }
}
