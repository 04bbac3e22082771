//! A live run's figures as metric families, drawn once and written twice.
//!
//! Prometheus reads them two ways: it scrapes (or a Pushgateway holds) the text exposition,
//! and it receives remote-write samples. Both must say the same thing, so the families are
//! built in one place from the configs' snapshots, and [`text`] and
//! [`super::remote_write`] only encode them.

use super::snapshot::Snapshot;
use crate::metrics::RunMeta;

/// How Prometheus should read a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One series' value now: the family's name plus `suffix` (`_bucket`, `_sum`, `_count` for a
/// histogram, empty otherwise) is the series' name.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub suffix: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// A metric family: its name, kind, help and every series' value.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

type Figure = fn(&Snapshot) -> Option<f64>;

/// Per-config families with one value each.
#[rustfmt::skip]
const PER_CONFIG: [(&str, Kind, &str, Figure); 9] = [
    ("stormrig_upstream_requests_total", Kind::Counter, "Logical requests the load generator started.", |s| Some(s.upstream as f64)),
    ("stormrig_attempts_total", Kind::Counter, "HTTP requests the client sent (first tries and retries).", |s| Some(s.attempts as f64)),
    ("stormrig_retries_total", Kind::Counter, "Retries the client sent.", |s| Some(s.retries as f64)),
    ("stormrig_failures_total", Kind::Counter, "Logical requests that ended failed.", |s| Some(s.failures as f64)),
    ("stormrig_budget_refusals_total", Kind::Counter, "Retries the retry budget refused.", |s| Some(s.budget_refusals as f64)),
    ("stormrig_downstream_arrivals_total", Kind::Counter, "Requests the config's target counted.", |s| Some(s.arrivals as f64)),
    ("stormrig_in_flight", Kind::Gauge, "Logical requests of the config in flight now.", |s| Some(s.in_flight as f64)),
    ("stormrig_successes_total", Kind::Counter, "Logical requests that ended successful.", |s| Some(s.successes as f64)),
    ("stormrig_budget_level_ratio", Kind::Gauge, "The retry budget's level as a share of its capacity (0 to 1).", |s| s.budget_level_pct.map(|p| p / 100.0)),
];

/// Every family of the run now, in the order `/metrics` shows them.
pub fn families(snaps: &[Snapshot], meta: &RunMeta, scenario: &str) -> Vec<Family> {
    let mut out = vec![Family {
        name: "stormrig_run_info",
        kind: Kind::Gauge,
        help: "The run being measured.",
        samples: vec![Sample {
            suffix: "",
            labels: vec![
                ("run", meta.id.clone()),
                ("scenario", scenario.to_string()),
                ("host", meta.host.clone()),
                ("version", env!("CARGO_PKG_VERSION").to_string()),
            ],
            value: 1.0,
        }],
    }];
    // Every per-config series carries the run, so two runs seen by one Prometheus (or a
    // run's shards) never mix.
    let labels = |s: &Snapshot| vec![("run", meta.id.clone()), ("config", s.config.clone())];
    for (name, kind, help, figure) in PER_CONFIG {
        let samples = snaps
            .iter()
            .filter_map(|s| {
                figure(s).map(|value| Sample {
                    suffix: "",
                    labels: labels(s),
                    value,
                })
            })
            .collect();
        out.push(Family {
            name,
            kind,
            help,
            samples,
        });
    }
    out.push(Family {
        name: "stormrig_attempts_by_outcome_total",
        kind: Kind::Counter,
        help: "Attempts by how they ended (the attempt log's outcome labels).",
        samples: snaps
            .iter()
            .flat_map(|s| {
                s.attempts_by_outcome.iter().map(move |(outcome, n)| {
                    let mut l = labels(s);
                    l.push(("outcome", outcome.clone()));
                    Sample {
                        suffix: "",
                        labels: l,
                        value: *n as f64,
                    }
                })
            })
            .collect(),
    });
    out.push(Family {
        name: "stormrig_request_duration_seconds",
        kind: Kind::Histogram,
        help: "End-to-end latency of finished logical requests, from their intended start.",
        samples: snaps.iter().flat_map(|s| latency(s, labels(s))).collect(),
    });
    out
}

/// A config's latency histogram as `_bucket` (with `+Inf`), `_sum` and `_count` series.
fn latency(s: &Snapshot, labels: Vec<(&'static str, String)>) -> Vec<Sample> {
    let l = &s.latency;
    let bucket = |le: String, n: u64| {
        let mut with = labels.clone();
        with.push(("le", le));
        Sample {
            suffix: "_bucket",
            labels: with,
            value: n as f64,
        }
    };
    let mut out: Vec<Sample> = l
        .buckets
        .iter()
        .map(|(le, n)| bucket(le.to_string(), *n))
        .collect();
    out.push(bucket("+Inf".into(), l.count));
    out.push(Sample {
        suffix: "_sum",
        labels: labels.clone(),
        value: l.sum_s,
    });
    out.push(Sample {
        suffix: "_count",
        labels,
        value: l.count as f64,
    });
    out
}

/// Label values escaped as the text format wants them.
fn escaped(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The Prometheus text exposition (0.0.4) of `families`.
pub fn text(families: &[Family]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for f in families {
        let _ = writeln!(
            out,
            "# HELP {} {}\n# TYPE {} {}",
            f.name,
            f.help,
            f.name,
            f.kind.word()
        );
        for s in &f.samples {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escaped(v)))
                .collect();
            let _ = writeln!(
                out,
                "{}{}{{{}}} {}",
                f.name,
                s.suffix,
                labels.join(","),
                s.value
            );
        }
    }
    out
}
