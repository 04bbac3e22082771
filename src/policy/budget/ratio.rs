//! Finagle `RetryBudget` / tower `TpsBudget`: a sliding-window ratio budget with a reserve.
//!
//! Integer arithmetic scaled by 1000, exactly as Finagle
//! (`finagle-core/src/main/scala/com/twitter/finagle/service/RetryBudget.scala`, `RetryBudget.apply`):
//! `deposit = 1000`, `withdraw = floor(1000 / ratio)` (0.2 → 5000),
//! `reserve = min_per_sec × ttl_secs × withdraw`; the window is 10 slots of `ttl/10`;
//! `count = Σ slots + reserve`; a retry is allowed iff `count ≥ withdraw`, and then withdraws.
//! So in any trailing `ttl`, retries ≤ ratio × deposits + min_per_sec × ttl_secs.
//! (tower truncates `1/ratio` instead, which quantizes e.g. 0.3 to 33 %; Finagle's ×1000
//! scale keeps 0.3 at 30.003 %, so we use it.) `ratio = 0` means deposits earn nothing: only
//! the reserve is available (withdraw = 1 token, reserve = min_per_sec × ttl).

use super::{CostKind, DepositOn, RetryBudget};
use crate::policy::duration;
use crate::policy::error::{check, PolicyError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `budget = { kind = "ratio", ... }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioConfig {
    /// Retries allowed per deposit, [0, 1000] (0.2 = 20 %).
    pub ratio: f64,
    /// Window over which deposits and withdrawals count, 1 s ..= 60 s.
    #[serde(with = "duration::serde")]
    pub ttl: Duration,
    /// Reserve of retries per second, independent of traffic.
    pub min_per_sec: u32,
    /// Deposit on every request (tower, Finagle `RetryFilter`) or only on success
    /// (Finagle `RequeueFilter` since 2020).
    #[serde(default)]
    pub deposit: DepositOn,
}

impl RatioConfig {
    /// Finagle's own ranges: a ratio in [0, 1000], a window of 1 s to 60 s.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check(
            self.ratio.is_finite() && (0.0..=1000.0).contains(&self.ratio),
            "budget.ratio",
            self.ratio,
            "0.0..=1000.0 (retries per deposit; 0.2 = 20 %)",
        )?;
        check(
            self.ttl >= Duration::from_secs(1) && self.ttl <= Duration::from_secs(60),
            "budget.ttl",
            format!("\"{}\"", duration::format_duration(self.ttl)),
            "\"1s\"..=\"60s\"",
        )
    }

    /// A budget with nothing deposited yet.
    pub fn build(&self) -> RatioBudget {
        RatioBudget::new(self.ratio, self.ttl, self.min_per_sec, self.deposit)
    }
}

const SLOTS: usize = 10;

/// Ratio budget state.
#[derive(Debug, Clone)]
pub struct RatioBudget {
    deposit: i64,
    withdraw: i64,
    reserve: i64,
    slot_len: Duration,
    slots: [i64; SLOTS],
    /// Index (in units of slot_len since epoch) of the newest slot.
    head: u64,
    deposit_on: DepositOn,
}

impl RatioBudget {
    /// `ratio` ∈ [0, 1000], `ttl` ∈ [1 s, 60 s] (validated by the config).
    pub fn new(ratio: f64, ttl: Duration, min_per_sec: u32, deposit_on: DepositOn) -> Self {
        let (deposit, withdraw) = if ratio <= 0.0 {
            (0, 1)
        } else {
            (1000, ((1000.0 / ratio).floor() as i64).max(1))
        };
        let ttl = ttl.max(Duration::from_secs(1));
        RatioBudget {
            deposit,
            withdraw,
            reserve: min_per_sec as i64 * ttl.as_secs() as i64 * withdraw,
            slot_len: ttl / SLOTS as u32,
            slots: [0; SLOTS],
            head: 0,
            deposit_on,
        }
    }

    /// Rotate the window so that `now` falls in the newest slot, zeroing expired slots.
    fn expire(&mut self, now: Duration) {
        let idx = (now.as_nanos() / self.slot_len.as_nanos().max(1)) as u64;
        if idx <= self.head {
            return;
        }
        let steps = (idx - self.head).min(SLOTS as u64);
        for k in 1..=steps {
            self.slots[((self.head + k) % SLOTS as u64) as usize] = 0;
        }
        self.head = idx;
    }

    fn add(&mut self, v: i64) {
        self.slots[(self.head % SLOTS as u64) as usize] += v;
    }

    fn count(&self) -> i64 {
        self.slots.iter().sum::<i64>() + self.reserve
    }

    /// Deposit one request's worth (public for tests and the threshold sweep).
    pub fn deposit(&mut self, now: Duration) {
        self.expire(now);
        self.add(self.deposit);
    }
}

impl RetryBudget for RatioBudget {
    fn on_request_start(&mut self, now: Duration) {
        if self.deposit_on == DepositOn::Request {
            self.deposit(now);
        }
    }

    fn try_retry(&mut self, now: Duration, _kind: CostKind, final_attempt: bool) -> Option<f64> {
        if final_attempt {
            return None;
        }
        self.expire(now);
        if self.count() >= self.withdraw {
            self.add(-self.withdraw);
            Some(1.0)
        } else {
            None
        }
    }

    fn on_success(&mut self, now: Duration, _last_charge: Option<f64>) {
        if self.deposit_on == DepositOn::Success {
            self.deposit(now);
        }
    }

    /// Retries available now: `floor(count / withdraw)` (Finagle's `balance`), as of the last
    /// hook call.
    fn level(&self) -> f64 {
        (self.count().max(0) / self.withdraw) as f64
    }

    fn bounds(&self) -> (f64, f64) {
        (0.0, f64::INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_alone_allows_min_per_sec_times_ttl() {
        let mut b = RatioBudget::new(0.2, Duration::from_secs(10), 10, DepositOn::Request);
        assert_eq!(b.level(), 100.0);
        let t = Duration::from_secs(1);
        let granted = (0..1000)
            .filter(|_| b.try_retry(t, CostKind::Transient, false).is_some())
            .count();
        assert_eq!(granted, 100);
        // Withdrawals age out after ttl: the reserve is back.
        let later = Duration::from_secs(12);
        assert!(b.try_retry(later, CostKind::Transient, false).is_some());
    }

    #[test]
    fn deposits_add_ratio() {
        let mut b = RatioBudget::new(0.2, Duration::from_secs(10), 0, DepositOn::Request);
        for _ in 0..50 {
            b.on_request_start(Duration::ZERO);
        }
        let granted = (0..100)
            .filter(|_| {
                b.try_retry(Duration::ZERO, CostKind::Transient, false)
                    .is_some()
            })
            .count();
        assert_eq!(granted, 10);
        assert!(b
            .try_retry(Duration::ZERO, CostKind::Transient, true)
            .is_none());
    }
}
