//! What each provider counted itself (arrivals, throttles, tokens), and the token figures a
//! config's summary draws from them. Both engines fill the same [`ProviderStats`], so a
//! figure means the same live and simulated.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::policy::BreakerState;
use crate::scenario::provider::{
    retry_after_secs, Admission, Price, Provider, RateLimiter, RetryAfterWatch, Tokens,
    NANO_PER_UNIT,
};

/// One provider's own counts over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderStats {
    pub name: String,
    /// Requests that reached the provider, whatever happened to them next.
    pub arrivals: u64,
    /// Arrivals answered 429 by the provider's own limits (fault windows not included).
    pub throttled: u64,
    /// Arrivals answered 200 after service.
    pub served: u64,
    /// Tokens (prompt + completion) of every arrival: what the attempts cost.
    pub tokens_received: u64,
    /// Tokens of the arrivals that were first attempts: what the requests would have cost
    /// without a single retry.
    pub tokens_first_attempts: u64,
    /// Tokens of the arrivals answered 200.
    pub tokens_served: u64,
    /// Arrivals of a request this provider had answered 429, no earlier than the
    /// `Retry-After` it gave (by the provider's own clock).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_honoured: u64,
    /// Arrivals of such a request before its `Retry-After` was over.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_early: u64,
    /// With a price: the money the arrivals cost, in billionths of a money unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money_nano: Option<MoneyCounts>,
    /// Arrivals per second of the run (index = second), as the provider counted them: what
    /// the HTML report charts per provider, for every config, failover or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals_per_s: Vec<u64>,
    /// The provider's price, for charging arrivals (not part of the counts).
    #[serde(skip)]
    price: Option<Price>,
}

/// A priced provider's money, split like its token counts, in billionths of a money unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MoneyCounts {
    /// What every arrival cost (the money twin of `tokens_received`).
    pub received: u64,
    /// What the first attempts cost.
    pub first_attempts: u64,
    /// What the arrivals answered 200 cost.
    pub served: u64,
}

impl MoneyCounts {
    fn merge(&mut self, o: &MoneyCounts) {
        self.received = self.received.saturating_add(o.received);
        self.first_attempts = self.first_attempts.saturating_add(o.first_attempts);
        self.served = self.served.saturating_add(o.served);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ProviderStats {
    /// Counts of provider `name`, in money too when it has a `price`.
    pub fn new(name: &str, price: Option<Price>) -> ProviderStats {
        ProviderStats {
            name: name.to_string(),
            money_nano: price.map(|_| MoneyCounts::default()),
            price,
            ..ProviderStats::default()
        }
    }

    pub fn of(p: &Provider) -> ProviderStats {
        ProviderStats::new(&p.name, p.price)
    }

    /// An arrival of `tokens`; `first` when it is a request's first attempt. Every arrival
    /// is charged its tokens, money too: what a provider bills for a failed call is not
    /// documented in the material stormrig follows, so money counts what the attempts
    /// asked for, as `tokens_received` does (see README, "Money").
    pub fn arrive(&mut self, tokens: Tokens, first: bool) {
        self.arrivals += 1;
        self.tokens_received += tokens.total();
        if first {
            self.tokens_first_attempts += tokens.total();
        }
        if let (Some(m), Some(price)) = (&mut self.money_nano, self.price) {
            let nano = price.nano(tokens);
            m.received = m.received.saturating_add(nano);
            if first {
                m.first_attempts = m.first_attempts.saturating_add(nano);
            }
        }
    }

    /// An arrival of `tokens` was answered 200.
    pub fn serve(&mut self, tokens: Tokens) {
        self.served += 1;
        self.tokens_served += tokens.total();
        if let (Some(m), Some(price)) = (&mut self.money_nano, self.price) {
            m.served = m.served.saturating_add(price.nano(tokens));
        }
    }

    /// Adds another run's counts of the same provider.
    pub fn merge(&mut self, o: &ProviderStats) {
        self.arrivals += o.arrivals;
        self.throttled += o.throttled;
        self.served += o.served;
        self.tokens_received += o.tokens_received;
        self.tokens_first_attempts += o.tokens_first_attempts;
        self.tokens_served += o.tokens_served;
        self.retry_after_honoured += o.retry_after_honoured;
        self.retry_after_early += o.retry_after_early;
        super::series::add_series(&mut self.arrivals_per_s, &o.arrivals_per_s);
        match (&mut self.money_nano, &o.money_nano) {
            (Some(m), Some(om)) => m.merge(om),
            (None, Some(om)) => self.money_nano = Some(*om),
            _ => {}
        }
    }

    /// A request the provider throttled before came back: `honoured` when no earlier than
    /// its `Retry-After` ([`crate::scenario::provider::RetryAfterWatch::arrive`]).
    pub fn returned(&mut self, honoured: Option<bool>) {
        match honoured {
            Some(true) => self.retry_after_honoured += 1,
            Some(false) => self.retry_after_early += 1,
            None => {}
        }
    }
}

/// A config's token spending over every provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenFigures {
    /// Tokens of every attempt that reached a provider.
    pub spent: u64,
    /// Tokens of the attempts answered 200.
    pub served: u64,
    /// `spent - served`: tokens of attempts that failed.
    pub wasted: u64,
    /// `wasted / spent` (0 when nothing was spent).
    pub wasted_share: f64,
    /// `spent` / tokens of the first attempts: how many times the requests' own cost the
    /// retries spent (1.00 = no retry reached a provider). `null` when no first attempt did.
    pub cost_amplification: Option<f64>,
}

impl TokenFigures {
    pub fn of(providers: &[ProviderStats]) -> TokenFigures {
        let spent: u64 = providers.iter().map(|p| p.tokens_received).sum();
        let served: u64 = providers.iter().map(|p| p.tokens_served).sum();
        let first: u64 = providers.iter().map(|p| p.tokens_first_attempts).sum();
        let (wasted, wasted_share, cost_amplification) = waste(spent, served, first);
        TokenFigures {
            spent,
            served,
            wasted,
            wasted_share,
            cost_amplification,
        }
    }
}

/// What was wasted of `spent`, its share, and `spent` over the first attempts' part: the
/// same arithmetic for tokens and money, so the two figures always agree in shape.
fn waste(spent: u64, served: u64, first: u64) -> (u64, f64, Option<f64>) {
    let wasted = spent.saturating_sub(served);
    let share = if spent == 0 {
        0.0
    } else {
        wasted as f64 / spent as f64
    };
    (
        wasted,
        share,
        (first > 0).then(|| spent as f64 / first as f64),
    )
}

/// Money spent, served and wasted, in money units (the scenario's currency, unnamed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MoneySpend {
    /// What every attempt that reached a priced provider cost.
    pub spent: f64,
    /// What the attempts answered 200 cost.
    pub served: f64,
    /// `spent - served`: what the failed attempts cost.
    pub wasted: f64,
    /// `wasted / spent` (0 when nothing was spent).
    pub wasted_share: f64,
    /// `spent` / what the first attempts cost; `null` when no first attempt cost anything.
    pub cost_amplification: Option<f64>,
}

impl MoneySpend {
    fn of(m: MoneyCounts) -> MoneySpend {
        let (wasted, wasted_share, cost_amplification) =
            waste(m.received, m.served, m.first_attempts);
        let units = |nano: u64| nano as f64 / NANO_PER_UNIT;
        MoneySpend {
            spent: units(m.received),
            served: units(m.served),
            wasted: units(wasted),
            wasted_share,
            cost_amplification,
        }
    }
}

/// One priced provider's money.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderMoney {
    pub name: String,
    #[serde(flatten)]
    pub money: MoneySpend,
}

/// A config's money over every priced provider, and per priced provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MoneyFigures {
    #[serde(flatten)]
    pub total: MoneySpend,
    pub providers: Vec<ProviderMoney>,
}

impl MoneyFigures {
    /// `None` when no provider has a price.
    pub fn of(providers: &[ProviderStats]) -> Option<MoneyFigures> {
        let priced: Vec<(&str, MoneyCounts)> = providers
            .iter()
            .filter_map(|p| Some((p.name.as_str(), p.money_nano?)))
            .collect();
        if priced.is_empty() {
            return None;
        }
        let mut total = MoneyCounts::default();
        for (_, m) in &priced {
            total.merge(m);
        }
        Some(MoneyFigures {
            total: MoneySpend::of(total),
            providers: priced
                .into_iter()
                .map(|(name, m)| ProviderMoney {
                    name: name.to_string(),
                    money: MoneySpend::of(m),
                })
                .collect(),
        })
    }
}

/// One breaker transition of a provider, as a config's client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerTransition {
    /// Seconds from the run's start.
    pub at_s: f64,
    pub from: BreakerState,
    pub to: BreakerState,
}

/// What a config's client sent one provider of its failover list: the client's side of the
/// provider's own [`ProviderStats::arrivals`], and that provider's breaker transitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderRoute {
    pub name: String,
    /// Attempts the client sent this provider.
    pub attempts: u64,
    /// The same attempts per second of the run (index = second): what the report charts
    /// per provider. Counted where `attempts` is, so both engines fill it alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts_per_s: Vec<u64>,
    /// The provider's breaker transitions in time order (empty without breakers); with
    /// several client instances, every instance's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaker_transitions: Vec<BreakerTransition>,
    /// Calls the provider's own bulkhead rejected unsent (`failover.bulkhead`; absent when
    /// none): part of the config's `bulkhead_rejections`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bulkhead_rejections: u64,
}

/// The client-side routes of a config with failover, indexed like its provider list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Routes(Vec<ProviderRoute>);

impl Routes {
    fn at(&mut self, slot: usize) -> &mut ProviderRoute {
        if self.0.len() <= slot {
            self.0.resize_with(slot + 1, ProviderRoute::default);
        }
        &mut self.0[slot]
    }

    /// An attempt sent to provider `slot` at `t` from the run's start.
    pub fn attempt(&mut self, slot: usize, t: Duration) {
        let route = self.at(slot);
        route.attempts += 1;
        let second = t.as_secs() as usize;
        if route.attempts_per_s.len() <= second {
            route.attempts_per_s.resize(second + 1, 0);
        }
        route.attempts_per_s[second] += 1;
    }

    /// Provider `slot`'s bulkhead rejected a call.
    pub fn bulkhead_rejection(&mut self, slot: usize) {
        self.at(slot).bulkhead_rejections += 1;
    }

    /// Provider `slot`'s breaker went `from` → `to` at `at`.
    pub fn transition(&mut self, slot: usize, at: Duration, from: BreakerState, to: BreakerState) {
        self.at(slot).breaker_transitions.push(BreakerTransition {
            at_s: at.as_secs_f64(),
            from,
            to,
        });
    }

    /// Adds another recorder's routes of the same config.
    pub fn merge(&mut self, o: &Routes) {
        for (slot, r) in o.0.iter().enumerate() {
            let mine = self.at(slot);
            mine.attempts += r.attempts;
            mine.bulkhead_rejections += r.bulkhead_rejections;
            if mine.attempts_per_s.len() < r.attempts_per_s.len() {
                mine.attempts_per_s.resize(r.attempts_per_s.len(), 0);
            }
            for (m, o) in mine.attempts_per_s.iter_mut().zip(&r.attempts_per_s) {
                *m += o;
            }
            mine.breaker_transitions
                .extend(r.breaker_transitions.iter().cloned());
            mine.breaker_transitions
                .sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        }
    }

    /// The routes named after `providers` (the config's failover list); empty without one.
    pub fn named(&self, providers: &[String]) -> Vec<ProviderRoute> {
        providers
            .iter()
            .enumerate()
            .map(|(slot, name)| ProviderRoute {
                name: name.clone(),
                ..self.0.get(slot).cloned().unwrap_or_default()
            })
            .collect()
    }
}

/// One provider's limits, its memory of the `Retry-After` it gave, and its counts, kept
/// together as both engines keep them, so that the live target and the simulator count an
/// arrival, charge an admission and remember a throttle by one piece of code.
pub struct ProviderBook {
    limiter: RateLimiter,
    watch: RetryAfterWatch,
    pub stats: ProviderStats,
}

impl ProviderBook {
    pub fn new(p: &Provider) -> ProviderBook {
        ProviderBook {
            limiter: RateLimiter::new(p),
            watch: RetryAfterWatch::default(),
            stats: ProviderStats::of(p),
        }
    }

    /// Attempt `attempt` of request `request`, costing `tokens`, arrives at `t`: counted,
    /// and judged against the `Retry-After` the provider gave that request, if any.
    pub fn arrive(&mut self, (request, attempt): (u64, u32), tokens: Tokens, t: Duration) {
        self.stats.arrive(tokens, attempt <= 1);
        let second = super::target_counts::second_of(t);
        let series = &mut self.stats.arrivals_per_s;
        if series.len() <= second {
            series.resize(second + 1, 0);
        }
        series[second] += 1;
        let honoured = self.watch.arrive(request, t);
        self.stats.returned(honoured);
    }

    /// Charges the limits at `t`; a throttle is counted and its `Retry-After` remembered.
    pub fn admit(&mut self, request: u64, tokens: Tokens, t: Duration) -> Admission {
        let a = self.limiter.admit(t, tokens);
        if let Some(wait) = a.retry_after {
            self.stats.throttled += 1;
            self.watch.throttled(request, t, retry_after_secs(wait));
        }
        a
    }

    /// The request was served.
    pub fn serve(&mut self, tokens: Tokens) {
        self.stats.serve(tokens);
    }
}
