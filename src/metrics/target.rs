//! What a target counted itself. Downstream figures are never inferred from the client side:
//! the live target and the simulator's modeled target both fill this from their own counts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A target's own counts over a run. Per-second vectors are indexed by whole seconds since
/// the run's epoch; an index past the end means zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetStats {
    /// Requests that arrived (fully read request head), whatever happened to them next.
    pub arrivals: u64,
    pub arrivals_per_s: Vec<u64>,
    /// Largest number of requests in flight at once (arrived, not yet answered or dropped).
    pub peak_in_flight: u64,
    pub peak_in_flight_per_s: Vec<u64>,
    /// Requests answered 2xx after real service (goodput as the target sees it).
    pub served_ok: u64,
    pub served_ok_per_s: Vec<u64>,
    /// Responses by status code, faults included.
    pub responses_by_status: BTreeMap<u16, u64>,
    /// Connections the target closed without an answer (reset faults).
    pub resets: u64,
    /// Requests held without an answer until the client gave up (hang faults).
    pub hangs: u64,
    /// Requests answered without service by the service's own shedding: the queue was
    /// full, a queued request waited too long, CoDel sloughed it, the cap on work in
    /// progress or the rate limit refused it. Each reason apart in `shed_by_reason`.
    pub shed: u64,
    #[serde(default)]
    pub shed_by_reason: super::shed::ShedCounts,
    /// Requests forwarded to a real upstream server (fault proxy only).
    pub forwarded: u64,
    /// Requests the fault proxy could not hand to the real server (the connect or the TLS
    /// handshake failed): it answered them itself. They never reached the target, so
    /// `arrivals` and its per-second series leave them out (fault proxy only).
    #[serde(default)]
    pub unreached: u64,
    /// Attempts the fault proxy answered itself, by reason (its unreached ones included):
    /// the service's figures leave these answers out (fault proxy only).
    #[serde(default)]
    pub proxy_answered: super::ProxyAnswered,
    /// Forwarded requests the service reset (connection or HTTP/2 stream), relayed to the
    /// client as resets; apart from `resets`, the target's own reset faults (fault proxy only).
    #[serde(default)]
    pub relayed_resets: super::RelayedResets,
    /// Side-effecting executions of write requests (each debits the request's amount), and
    /// logical requests executed more than once (the damage non-idempotent retries do).
    pub executions: u64,
    pub duplicate_executions: u64,
    /// Executions beyond the first per logical request: the extra side effects.
    #[serde(default)]
    pub extra_executions: u64,
    /// Amount debited by all executions (`x-stormrig-amount` per request, 1 when absent),
    /// and the part of it debited by extra executions (money taken twice).
    #[serde(default)]
    pub debited: u64,
    #[serde(default)]
    pub extra_debited: u64,
    /// Idempotency-Key dedup: replays answered from the store without executing, duplicates
    /// that arrived while the key was executing (409), keys reused with another body (422).
    #[serde(default)]
    pub dedup_replays: u64,
    #[serde(default)]
    pub dedup_conflicts: u64,
    #[serde(default)]
    pub dedup_mismatches: u64,
    /// Largest number of requests holding a service slot at once (never above the
    /// concurrency in force); `peak_in_flight` minus this is what queued.
    #[serde(default)]
    pub peak_serving: u64,
    /// Requests served whose response was then lost (lost-response faults): the side effect
    /// happened, the client got no answer or a gateway error. Dedup replays under such a
    /// fault are lost the same way (and counted here) but never execute.
    #[serde(default)]
    pub lost_responses: u64,
    /// Each provider's own counts, in the scenario's order (empty without providers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<super::provider::ProviderStats>,
    /// Arrivals per request class, by class index (empty without classes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals_by_class: Vec<u64>,
    /// Per request class, the tokens its arrivals at providers cost and those of its
    /// arrivals answered 200 (empty without classes or providers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens_by_class: Vec<ClassTokens>,
}

/// One request class's tokens at the providers, as the providers charged them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassTokens {
    pub received: u64,
    pub served: u64,
}

impl TargetStats {
    /// Adds another target's counts: totals sum, per-second series add index by index, and
    /// peaks add too (two targets serving at once can hold both peaks at the same moment;
    /// adding gives the bound, which is what one machine's share of a split storm needs).
    pub fn merge(&mut self, other: &TargetStats) {
        self.arrivals += other.arrivals;
        super::series::add_series(&mut self.arrivals_per_s, &other.arrivals_per_s);
        self.peak_in_flight += other.peak_in_flight;
        super::series::add_series(&mut self.peak_in_flight_per_s, &other.peak_in_flight_per_s);
        self.served_ok += other.served_ok;
        super::series::add_series(&mut self.served_ok_per_s, &other.served_ok_per_s);
        for (status, n) in &other.responses_by_status {
            *self.responses_by_status.entry(*status).or_default() += n;
        }
        self.resets += other.resets;
        self.hangs += other.hangs;
        self.shed += other.shed;
        self.shed_by_reason.merge(&other.shed_by_reason);
        self.forwarded += other.forwarded;
        self.unreached += other.unreached;
        self.proxy_answered.merge(&other.proxy_answered);
        self.relayed_resets.merge(&other.relayed_resets);
        self.executions += other.executions;
        self.duplicate_executions += other.duplicate_executions;
        self.extra_executions += other.extra_executions;
        self.debited += other.debited;
        self.extra_debited += other.extra_debited;
        self.dedup_replays += other.dedup_replays;
        self.dedup_conflicts += other.dedup_conflicts;
        self.dedup_mismatches += other.dedup_mismatches;
        self.peak_serving += other.peak_serving;
        self.lost_responses += other.lost_responses;
        super::series::add_series(&mut self.arrivals_by_class, &other.arrivals_by_class);
        if self.tokens_by_class.len() < other.tokens_by_class.len() {
            self.tokens_by_class
                .resize(other.tokens_by_class.len(), ClassTokens::default());
        }
        for (a, b) in self.tokens_by_class.iter_mut().zip(&other.tokens_by_class) {
            a.received += b.received;
            a.served += b.served;
        }
        for o in &other.providers {
            match self.providers.iter_mut().find(|p| p.name == o.name) {
                Some(p) => p.merge(o),
                None => self.providers.push(o.clone()),
            }
        }
    }
}
