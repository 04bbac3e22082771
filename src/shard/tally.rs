//! What a merge trusts of a shard's counts, checked before they are added.
//!
//! A dump is a file another machine wrote, so its counts are input: a forged or corrupted
//! count near `u64::MAX` would wrap when added (in a release build, silently) and a merged
//! summary would show, say, fewer attempts than retries. Each shard's counts are first
//! totalled per field with checked additions and held against the invariants every real
//! shard dump keeps (a shard counts them in one place, so they hold exactly); then the
//! totals of all shards are added, again checked, and held under [`MAX_COUNT`]. The merge
//! adds per-second values and per-field totals, and each of those is at most the checked
//! total of its field, so once the tally passes no addition of the merge can overflow.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::dump::ConfigDump;
use crate::metrics::{Recorder, TargetStats};

/// The largest count a merge accepts: 2^53, the largest integer a JSON reader holding
/// numbers as doubles (JavaScript, many dashboards) reads exactly. No storm comes near it
/// (a million attempts a second for 285 years), and below it the sums the summary takes of
/// several fields cannot overflow either.
pub const MAX_COUNT: u64 = 1 << 53;

/// Why a shard's counts are not merged.
#[derive(Debug, thiserror::Error)]
pub enum TallyError {
    #[error(
        "{}: configs[{config:?}].{field}: the count is beyond {MAX_COUNT} (2^53) once added \
         up; no run counts that many, so the dump is corrupt or forged",
        .dir.display()
    )]
    TooLarge {
        dir: PathBuf,
        config: String,
        field: String,
    },
    #[error(
        "{}: configs[{config:?}]: {rule} does not hold ({detail}); a shard run always counts \
         them so, so the dump is corrupt or forged",
        .dir.display()
    )]
    Inconsistent {
        dir: PathBuf,
        config: String,
        rule: &'static str,
        detail: String,
    },
}

/// Per config name, per field, a total.
#[derive(Debug, Default)]
pub struct Tally(BTreeMap<String, BTreeMap<String, u64>>);

/// One config's totals in one shard.
struct Totals<'a> {
    dir: &'a Path,
    config: &'a str,
    fields: BTreeMap<String, u64>,
}

impl Totals<'_> {
    fn add(&mut self, field: &str, n: u64) -> Result<(), TallyError> {
        let slot = self.fields.entry(field.to_string()).or_default();
        match slot.checked_add(n).filter(|t| *t <= MAX_COUNT) {
            Some(t) => {
                *slot = t;
                Ok(())
            }
            None => Err(TallyError::TooLarge {
                dir: self.dir.to_path_buf(),
                config: self.config.to_string(),
                field: field.to_string(),
            }),
        }
    }

    /// Every count the shard's recorder holds.
    fn add_recorder(&mut self, r: &Recorder) -> Result<(), TallyError> {
        for s in r.seconds() {
            for (field, n) in [
                ("recorder.seconds.started", s.started),
                ("recorder.seconds.finished", s.finished),
                ("recorder.seconds.successes", s.successes),
                ("recorder.seconds.failures", s.failures),
                ("recorder.seconds.attempts", s.attempts),
                ("recorder.seconds.retries", s.retries),
                ("recorder.seconds.retries_transient", s.retries_transient),
                ("recorder.seconds.retries_throttling", s.retries_throttling),
                ("recorder.seconds.budget_refusals", s.budget_refusals),
                ("recorder.seconds.breaker_refusals", s.breaker_refusals),
                ("recorder.seconds.dropped", s.dropped),
                (
                    "recorder.seconds.client_in_flight_peak",
                    s.client_in_flight_peak,
                ),
                ("recorder.seconds.first_attempts", s.first_attempts),
                (
                    "recorder.seconds.first_failed.transient",
                    s.first_failed.transient,
                ),
                (
                    "recorder.seconds.first_failed.throttling",
                    s.first_failed.throttling,
                ),
                (
                    "recorder.seconds.first_failed.timeout",
                    s.first_failed.timeout,
                ),
                ("recorder.seconds.first_failed.other", s.first_failed.other),
                ("recorder.seconds.useful_retries", s.useful_retries),
                ("recorder.seconds.wasted_retries", s.wasted_retries),
                ("recorder.seconds.latency_us", s.latency_us().len()),
            ] {
                self.add(field, n)?;
            }
        }
        self.add("recorder.latency_us", r.latency_us().len())?;
        self.add("recorder.attempt_latency_us", r.attempt_latency_us().len())?;
        self.add("recorder.degraded_latency_us", r.degraded_latency_us.len())?;
        self.add("recorder.rate_limited.sends", r.rate_limited.sends)?;
        self.add(
            "recorder.rate_limited.wait_us",
            r.rate_limited.wait_us.len(),
        )?;
        for n in r.failures_by_reason().values() {
            self.add("recorder.failures_by_reason", *n)?;
        }
        for n in r.attempts_by_outcome().values() {
            self.add("recorder.attempts_by_outcome", *n)?;
        }
        self.add("recorder.client_in_flight", r.in_flight())?;
        self.add("recorder.client_in_flight_peak", r.client_in_flight_peak)?;
        self.add("recorder.breaker_opens", r.breaker_opens)?;
        for n in &r.degraded {
            self.add("recorder.degraded", *n)?;
        }
        for (i, k) in r.classes.iter().enumerate() {
            let f = |name: &str| format!("recorder.classes[{i}].{name}");
            self.add(&f("started"), k.started)?;
            self.add(&f("attempts"), k.attempts)?;
            self.add(&f("retries"), k.retries)?;
            self.add(&f("succeeded"), k.succeeded)?;
            self.add(&f("failed"), k.failed)?;
            self.add(&f("degraded"), k.degraded)?;
            self.add(&f("latency_us"), k.latency_us.len())?;
        }
        Ok(())
    }

    /// Every count the shard's target holds.
    fn add_target(&mut self, g: &TargetStats) -> Result<(), TallyError> {
        for (field, n) in [
            ("target.arrivals", g.arrivals),
            ("target.peak_in_flight", g.peak_in_flight),
            ("target.served_ok", g.served_ok),
            ("target.resets", g.resets),
            ("target.hangs", g.hangs),
            ("target.shed", g.shed),
            ("target.forwarded", g.forwarded),
            ("target.unreached", g.unreached),
            ("target.proxy_answered", g.proxy_answered.total()),
            ("target.relayed_resets", g.relayed_resets.total()),
            ("target.executions", g.executions),
            ("target.duplicate_executions", g.duplicate_executions),
            ("target.extra_executions", g.extra_executions),
            ("target.debited", g.debited),
            ("target.extra_debited", g.extra_debited),
            ("target.dedup_replays", g.dedup_replays),
            ("target.dedup_conflicts", g.dedup_conflicts),
            ("target.dedup_mismatches", g.dedup_mismatches),
            ("target.peak_serving", g.peak_serving),
            ("target.lost_responses", g.lost_responses),
        ] {
            self.add(field, n)?;
        }
        for (field, series) in [
            ("target.arrivals_per_s", &g.arrivals_per_s),
            ("target.peak_in_flight_per_s", &g.peak_in_flight_per_s),
            ("target.served_ok_per_s", &g.served_ok_per_s),
            ("target.arrivals_by_class", &g.arrivals_by_class),
        ] {
            for n in series {
                self.add(field, *n)?;
            }
        }
        for n in g.responses_by_status.values() {
            self.add("target.responses_by_status", *n)?;
        }
        for k in &g.tokens_by_class {
            self.add("target.tokens_by_class.received", k.received)?;
            self.add("target.tokens_by_class.served", k.served)?;
        }
        for p in &g.providers {
            let f = |name: &str| format!("target.providers[{:?}].{name}", p.name);
            for (name, n) in [
                ("arrivals", p.arrivals),
                ("throttled", p.throttled),
                ("served", p.served),
                ("tokens_received", p.tokens_received),
                ("tokens_first_attempts", p.tokens_first_attempts),
                ("tokens_served", p.tokens_served),
                ("retry_after_honoured", p.retry_after_honoured),
                ("retry_after_early", p.retry_after_early),
            ] {
                self.add(&f(name), n)?;
            }
            for n in &p.arrivals_per_s {
                self.add(&f("arrivals_per_s"), *n)?;
            }
        }
        Ok(())
    }

    /// What every shard run's recorder and target keep, because they count each event in
    /// one place: a retry is an attempt; a finished request succeeded or failed, was
    /// started, and left one latency in the run's histogram and one in its second's; a
    /// failure has one reason; the target's arrivals are its per-second arrivals.
    fn check_invariants(&self) -> Result<(), TallyError> {
        let (a, b) = ("recorder.seconds.attempts", "recorder.seconds.retries");
        self.check("retries <= attempts", &[b, a], |v| v[0] <= v[1])?;
        let fin = "recorder.seconds.finished";
        self.check(
            "successes + failures = finished",
            &[
                "recorder.seconds.successes",
                "recorder.seconds.failures",
                fin,
            ],
            |v| v[0] + v[1] == v[2],
        )?;
        self.check(
            "finished <= started",
            &[fin, "recorder.seconds.started"],
            |v| v[0] <= v[1],
        )?;
        self.check(
            "latency histogram count = finished",
            &["recorder.latency_us", fin],
            |v| v[0] == v[1],
        )?;
        self.check(
            "per-second latency histogram counts = finished",
            &["recorder.seconds.latency_us", fin],
            |v| v[0] == v[1],
        )?;
        self.check(
            "failures_by_reason adds up to failures",
            &["recorder.failures_by_reason", "recorder.seconds.failures"],
            |v| v[0] == v[1],
        )?;
        self.check(
            "arrivals_per_s adds up to arrivals",
            &["target.arrivals_per_s", "target.arrivals"],
            |v| v[0] == v[1],
        )?;
        Ok(())
    }

    fn get(&self, field: &str) -> u64 {
        self.fields.get(field).copied().unwrap_or(0)
    }

    /// `rule` holds when `holds` says so of the totals.
    fn check(
        &self,
        rule: &'static str,
        fields: &[&str],
        holds: impl Fn(&[u64]) -> bool,
    ) -> Result<(), TallyError> {
        let values: Vec<u64> = fields.iter().map(|f| self.get(f)).collect();
        if holds(&values) {
            return Ok(());
        }
        let detail = fields
            .iter()
            .zip(&values)
            .map(|(f, v)| format!("{f} = {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(TallyError::Inconsistent {
            dir: self.dir.to_path_buf(),
            config: self.config.to_string(),
            rule,
            detail,
        })
    }
}

impl Tally {
    /// Totals shard `dir`'s config `c`, checks it against the invariants of a real shard,
    /// and adds it to the totals of the shards before it.
    pub fn add(&mut self, dir: &Path, c: &ConfigDump) -> Result<(), TallyError> {
        let mut t = Totals {
            dir,
            config: &c.name,
            fields: BTreeMap::new(),
        };
        t.add_recorder(&c.recorder)?;
        t.add_target(&c.target)?;
        t.check_invariants()?;

        let sums = self.0.entry(c.name.clone()).or_default();
        for (field, n) in t.fields {
            let slot = sums.entry(field.clone()).or_default();
            match slot.checked_add(n).filter(|s| *s <= MAX_COUNT) {
                Some(s) => *slot = s,
                None => {
                    return Err(TallyError::TooLarge {
                        dir: dir.to_path_buf(),
                        config: c.name.clone(),
                        field,
                    })
                }
            }
        }
        Ok(())
    }
}
