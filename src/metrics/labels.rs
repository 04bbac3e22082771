//! Counts by label without a string map on the hot path.
//!
//! The recorder counts every attempt by what it came to and every failed request by why it
//! gave up. Both come from closed sets (enums of the policy core), so each label owns a
//! fixed slot: counting is an array index, and the `label → count` maps reports serialize
//! are built once, when a run is summarized.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use crate::policy::{AttemptLabel, GiveUpReason};

/// Most labels a vocabulary may have (slots are a fixed array).
const MAX_LABELS: usize = 16;

/// A closed vocabulary of labels, each with its own slot below `MAX_LABELS`.
pub trait Label: Copy + 'static {
    /// Every label, each once.
    const ALL: &'static [Self];
    /// The label's slot.
    fn slot(self) -> usize;
    /// The name reports use.
    fn name(self) -> &'static str;
}

impl Label for AttemptLabel {
    const ALL: &'static [Self] = &AttemptLabel::ALL;
    #[inline]
    fn slot(self) -> usize {
        self as usize
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Label for GiveUpReason {
    const ALL: &'static [Self] = &GiveUpReason::ALL;
    #[inline]
    fn slot(self) -> usize {
        self as usize
    }
    fn name(self) -> &'static str {
        match self {
            GiveUpReason::NonRetryable => "non-retryable",
            GiveUpReason::MaxAttempts => "max-attempts",
            GiveUpReason::Deadline => "deadline",
            GiveUpReason::BudgetRefused => "budget-refused",
            GiveUpReason::BreakerOpen => "breaker-open",
            GiveUpReason::CostCap => "cost-cap",
            GiveUpReason::NotIdempotent => "not-idempotent",
            GiveUpReason::ServerPushback => "server-pushback",
            GiveUpReason::LocalResource => "local-resource",
            GiveUpReason::BulkheadFull => "bulkhead-full",
            GiveUpReason::LimitExceeded => "limit-exceeded",
        }
    }
}

/// Exact counts by label; reads back as the `label → count` map of the labels seen.
#[derive(Debug, Clone)]
pub struct LabelCounts<L> {
    slots: [u64; MAX_LABELS],
    labels: PhantomData<L>,
}

impl<L: Label> Default for LabelCounts<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Label> LabelCounts<L> {
    pub fn new() -> Self {
        LabelCounts {
            slots: [0; MAX_LABELS],
            labels: PhantomData,
        }
    }

    /// Counts `n` more of `label`.
    #[inline]
    pub fn add(&mut self, label: L, n: u64) {
        self.slots[label.slot()] += n;
    }

    /// The count of `label`.
    pub fn get(&self, label: L) -> u64 {
        self.slots[label.slot()]
    }

    /// Every label counted at least once, with its count: what reports serialize.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        L::ALL
            .iter()
            .filter(|l| self.get(**l) > 0)
            .map(|l| (l.name().to_string(), self.get(*l)))
            .collect()
    }

    /// Adds another set of counts exactly.
    pub fn merge(&mut self, o: &LabelCounts<L>) {
        for (a, b) in self.slots.iter_mut().zip(&o.slots) {
            *a += b;
        }
    }

    /// Counts from the `label → count` map [`LabelCounts::to_map`] wrote; an error names a
    /// label this vocabulary does not hold.
    pub fn from_map(map: &BTreeMap<String, u64>) -> Result<Self, String> {
        let mut out = LabelCounts::new();
        for (name, n) in map {
            let label = L::ALL
                .iter()
                .find(|l| l.name() == name)
                .ok_or_else(|| format!("unknown label {name:?}"))?;
            out.add(*label, *n);
        }
        Ok(out)
    }
}

/// Serialized as the `label → count` map reports show, so a dump reads by name and a new
/// label does not move the others.
impl<L: Label> serde::Serialize for LabelCounts<L> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl<'de, L: Label> serde::Deserialize<'de> for LabelCounts<L> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        LabelCounts::from_map(&map).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Slots and names are one-to-one, and every slot fits.
    fn vocabulary_is_sound<L: Label>() {
        let slots: HashSet<usize> = L::ALL.iter().map(|l| l.slot()).collect();
        let names: HashSet<&str> = L::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(slots.len(), L::ALL.len());
        assert_eq!(names.len(), L::ALL.len());
        assert!(slots.iter().all(|s| *s < MAX_LABELS));
    }

    #[test]
    fn vocabularies_are_sound() {
        vocabulary_is_sound::<AttemptLabel>();
        vocabulary_is_sound::<GiveUpReason>();
    }

    #[test]
    fn every_give_up_reason_is_listed() {
        use GiveUpReason::*;
        // Exhaustive: a new reason fails to compile here until it is numbered, and then
        // fails the length check until `ALL` lists it (else it would count, unreported).
        fn arm(r: GiveUpReason) -> usize {
            match r {
                NonRetryable => 0,
                MaxAttempts => 1,
                Deadline => 2,
                BudgetRefused => 3,
                BreakerOpen => 4,
                CostCap => 5,
                NotIdempotent => 6,
                ServerPushback => 7,
                LocalResource => 8,
                BulkheadFull => 9,
                LimitExceeded => 10,
            }
        }
        let listed: HashSet<usize> = <GiveUpReason as Label>::ALL
            .iter()
            .map(|r| arm(*r))
            .collect();
        assert_eq!(listed.len(), 11);
        assert_eq!(<GiveUpReason as Label>::ALL.len(), 11);
    }

    #[test]
    fn counts_and_merges_exactly() {
        let mut a = LabelCounts::<AttemptLabel>::new();
        a.add(AttemptLabel::Ok, 1);
        a.add(AttemptLabel::Ok, 2);
        a.add(AttemptLabel::Timeout, 1);
        let mut b = LabelCounts::new();
        b.add(AttemptLabel::Timeout, 4);
        b.add(AttemptLabel::ClientError, 1);
        a.merge(&b);
        let want: BTreeMap<String, u64> = [("ok", 3), ("timeout", 5), ("client-error", 1)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(a.to_map(), want);
        assert_eq!(a.get(AttemptLabel::Throttle), 0);
    }
}
