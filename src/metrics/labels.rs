//! Counts by label without a string map on the hot path.
//!
//! The recorder counts every attempt by its attempt-log label and every failed request by
//! its give-up reason. Those labels come from small fixed vocabularies, so each known label
//! gets a fixed slot, found by comparing a handful of short strings instead of walking a
//! `BTreeMap<String, _>`. A label outside the vocabulary still counts, in a map on the side:
//! the vocabulary decides only how fast a label is counted, never whether or how much.

use std::collections::BTreeMap;

/// Labels of sent attempts ([`crate::policy::attempt_label`]).
pub const ATTEMPT_LABELS: [&str; 5] = ["ok", "transient", "throttle", "timeout", "client-error"];

/// Give-up reasons as reports name them ([`crate::metrics::engine::reason_label`]).
pub const REASON_LABELS: [&str; 8] = [
    "non-retryable",
    "max-attempts",
    "deadline",
    "budget-refused",
    "breaker-open",
    "cost-cap",
    "not-idempotent",
    "server-pushback",
];

/// Exact counts by label; reads back as the `label → count` map of the labels seen.
#[derive(Debug, Clone)]
pub struct LabelCounts<const N: usize> {
    vocabulary: &'static [&'static str; N],
    slots: [u64; N],
    other: BTreeMap<String, u64>,
}

impl<const N: usize> LabelCounts<N> {
    pub fn new(vocabulary: &'static [&'static str; N]) -> Self {
        LabelCounts {
            vocabulary,
            slots: [0; N],
            other: BTreeMap::new(),
        }
    }

    /// Counts `n` more of `label`.
    #[inline]
    pub fn add(&mut self, label: &str, n: u64) {
        match self.vocabulary.iter().position(|v| *v == label) {
            Some(i) => self.slots[i] += n,
            None => match self.other.get_mut(label) {
                Some(c) => *c += n,
                None => {
                    self.other.insert(label.to_string(), n);
                }
            },
        }
    }

    /// The count of `label` (0 when never seen).
    pub fn get(&self, label: &str) -> u64 {
        match self.vocabulary.iter().position(|v| *v == label) {
            Some(i) => self.slots[i],
            None => self.other.get(label).copied().unwrap_or(0),
        }
    }

    /// Every label counted at least once, with its count: what reports serialize.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        let mut m = self.other.clone();
        for (label, &n) in self.vocabulary.iter().zip(&self.slots) {
            if n > 0 {
                m.insert(label.to_string(), n);
            }
        }
        m
    }

    /// Adds another set of counts exactly.
    pub fn merge(&mut self, o: &LabelCounts<N>) {
        for (k, &v) in &o.other {
            self.add(k, v);
        }
        for (label, &n) in o.vocabulary.iter().zip(&o.slots) {
            if n > 0 {
                self.add(label, n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::engine::reason_label;
    use crate::policy::{attempt_label, AttemptOutcome, GiveUpReason, OutcomeClass};
    use crate::policy::{Response, TransportError};

    #[test]
    fn counts_known_and_unknown_labels_exactly() {
        let mut a = LabelCounts::new(&ATTEMPT_LABELS);
        a.add("ok", 1);
        a.add("ok", 2);
        a.add("refused", 1);
        assert_eq!(
            (a.get("ok"), a.get("refused"), a.get("throttle")),
            (3, 1, 0)
        );
        let mut b = LabelCounts::new(&ATTEMPT_LABELS);
        b.add("refused", 4);
        b.add("timeout", 1);
        a.merge(&b);
        let want: BTreeMap<String, u64> = [("ok", 3), ("refused", 5), ("timeout", 1)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(a.to_map(), want);
    }

    #[test]
    fn vocabularies_hold_every_label_the_engines_produce() {
        use GiveUpReason::*;
        for r in [
            NonRetryable,
            MaxAttempts,
            Deadline,
            BudgetRefused,
            BreakerOpen,
            CostCap,
            NotIdempotent,
            ServerPushback,
        ] {
            assert!(REASON_LABELS.contains(&reason_label(r)), "{r:?}");
        }
        let outcomes = [
            AttemptOutcome::Response(Response::status(200)),
            AttemptOutcome::Transport(TransportError::ReadTimeout),
            AttemptOutcome::Transport(TransportError::Reset),
        ];
        for o in &outcomes {
            for c in [
                OutcomeClass::Success,
                OutcomeClass::Transient,
                OutcomeClass::Throttling,
                OutcomeClass::NonRetryable,
            ] {
                assert!(ATTEMPT_LABELS.contains(&attempt_label(o, c)));
            }
        }
    }
}
