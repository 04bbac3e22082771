//! Folding a log's retries back into their first attempt, so a trace replays the callers'
//! demand rather than the storm it caused (`load.fold_retries`, `load.fold_key`).
//!
//! Two rules, each the scenario's choice:
//! - **by client and path**: a request is a retry when the same client's previous request
//!   to the same path (query included) failed (a 5xx, a 429, or no response: status 0) and
//!   came at most `fold_retries` before it. A success ends the chain, so a client polling
//!   one path is never folded.
//! - **by key**: requests that carry the same value of a named field (an idempotency key
//!   or request id a client keeps across its retries, logged in a JSON log) are one
//!   request; every one after the first is folded.

use std::collections::HashMap;

/// What folds (neither: nothing does).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fold {
    /// The longest gap between a failed attempt and its retry, in nanoseconds.
    pub window_ns: Option<i128>,
    /// The JSON field whose equal values are one request.
    pub key: Option<String>,
}

impl Fold {
    pub fn any(&self) -> bool {
        self.window_ns.is_some() || self.key.is_some()
    }
}

/// Who sent one request and how it ended, for folding.
#[derive(Debug, Clone, PartialEq)]
pub struct Who {
    pub client: String,
    pub path: String,
    pub failed: bool,
    pub key: Option<String>,
}

/// Whether a status is a failure a client retries: a 5xx, a 429, or none (0).
pub fn failed(status: u16) -> bool {
    status == 0 || status == 429 || status >= 500
}

/// Which requests (in start order) are kept, and how many were folded.
pub fn fold(times: &[i128], who: &[Who], f: &Fold) -> (Vec<bool>, u64) {
    let mut keep = vec![true; times.len()];
    let mut folded = 0u64;
    let mut chains: HashMap<(&str, &str), (i128, bool)> = HashMap::new();
    let mut keys: HashMap<&str, ()> = HashMap::new();
    for (i, (t, w)) in times.iter().zip(who).enumerate() {
        let retry_by_key = match (&f.key, &w.key) {
            (Some(_), Some(k)) if !k.is_empty() && k != "-" => keys.insert(k, ()).is_some(),
            _ => false,
        };
        let retry_by_chain = match f.window_ns {
            Some(window) => {
                let chain = (w.client.as_str(), w.path.as_str());
                let prev = chains.insert(chain, (*t, w.failed));
                matches!(prev, Some((last, true)) if t - last <= window)
            }
            None => false,
        };
        if retry_by_key || retry_by_chain {
            keep[i] = false;
            folded += 1;
        }
    }
    (keep, folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    fn who(client: &str, path: &str, failed: bool, key: Option<&str>) -> Who {
        Who {
            client: client.into(),
            path: path.into(),
            failed,
            key: key.map(str::to_string),
        }
    }

    #[test]
    fn a_failed_attempt_and_its_retries_within_the_window_are_one_request() {
        let times = [0, S / 10, S / 5, 3 * S, 3 * S + 1, 10 * S];
        let who = [
            who("a", "/pay", true, None),  // first attempt, failed
            who("a", "/pay", true, None),  // retry
            who("a", "/pay", false, None), // retry, succeeded: the chain ends
            who("a", "/pay", false, None), // a new request (the last one succeeded)
            who("b", "/pay", false, None), // another client
            who("a", "/pay", true, None),  // a new request
        ];
        let f = Fold {
            window_ns: Some(S),
            key: None,
        };
        let (keep, folded) = fold(&times, &who, &f);
        assert_eq!(keep, [true, false, false, true, true, true]);
        assert_eq!(folded, 2);
        // Past the window, a retry is a new request.
        let late = [0, 2 * S];
        let (keep, _) = fold(&late, &who[..2], &f);
        assert_eq!(keep, [true, true]);
    }

    #[test]
    fn equal_keys_are_one_request() {
        let times = [0, 1, 2, 3];
        let who = [
            who("a", "/x", false, Some("k1")),
            who("b", "/y", false, Some("k1")),
            who("a", "/x", false, Some("-")),
            who("a", "/x", false, Some("-")),
        ];
        let f = Fold {
            window_ns: None,
            key: Some("request_id".into()),
        };
        assert_eq!(fold(&times, &who, &f), (vec![true, false, true, true], 1));
    }
}
