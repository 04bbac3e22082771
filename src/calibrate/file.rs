//! The fitted model as a `targets/NAME.toml` file, and the per-step table.
//!
//! The header comment is the model's provenance: a model file read months later must say
//! what it was measured on, with which command and steps, when, and how far its simulation
//! was from the measurement, or nobody can tell a measurement from a guess.

use std::fmt::Write;

use super::fit::{describe, Fit};
use super::Calibration;
use crate::scenario::units::duration::format as dur;
use crate::scenario::Dist;

/// What the header says besides the fit.
pub struct Provenance<'a> {
    /// The command line, as typed.
    pub command: &'a str,
    /// UTC time of the measurement (RFC 3339).
    pub when: &'a str,
    /// The target in words.
    pub target: &'a str,
    /// The length of each step.
    pub step: std::time::Duration,
}

/// The model file's text; [`crate::scenario::parse_target`] reads it back.
pub fn model_file(c: &Calibration, p: &Provenance<'_>) -> String {
    let f = &c.fit;
    let m = &f.model;
    let mut s = String::new();
    let _ = writeln!(s, "# Measured by `stormrig calibrate` on {}:", p.when);
    let _ = writeln!(s, "#   {}", one_line(p.command));
    let _ = writeln!(s, "# Target: {}.", one_line(p.target));
    let steps: Vec<String> = c.measured.iter().map(|m| m.load.label()).collect();
    let _ = writeln!(
        s,
        "# Steps ({} each, no retry): {}.",
        dur(p.step),
        steps.join(", ")
    );
    let _ = writeln!(
        s,
        "# Fit: highest throughput {:.1} req/s; mean time per request at the lowest step \
         {:.3} ms;",
        f.max_throughput, f.low_mean_ms
    );
    if f.plateau {
        let _ = writeln!(
            s,
            "#   slots = {:.1} req/s x {:.3} ms = {:.2} -> {} (Little's law at the plateau);",
            f.max_throughput,
            f.low_mean_ms,
            f.max_throughput * f.low_mean_ms / 1000.0,
            m.concurrency
        );
    } else {
        let _ = writeln!(
            s,
            "#   NO PLATEAU: the top step still gained >10 %; the slots ({}) are a lower bound \
             (calibrate with a higher --max-concurrency);",
            m.concurrency
        );
    }
    let _ = writeln!(
        s,
        "#   hold per request {:.3} ms, path overhead outside a slot {:.3} ms;",
        f.hold_ms, f.path_ms
    );
    let tried: Vec<String> = f
        .candidates
        .iter()
        .map(|(d, e)| format!("{d} {:.1} %", e * 100.0))
        .collect();
    let _ = writeln!(
        s,
        "#   distributions tried (worst step error): {}.",
        tried.join("; ")
    );
    let _ = writeln!(
        s,
        "# Fit error: the simulated steps are within {:.1} % of the measured ones \
         (throughput, p50, p99).",
        f.error * 100.0
    );
    match &f.queue_fit {
        Some(q) => {
            let _ = writeln!(s, "# Queue: {}.", one_line(&q.describe()));
        }
        None => {
            let _ = writeln!(
                s,
                "# Not measured: queue and queue_timeout (the steps never fill a queue; \
                 `--overload` measures them)."
            );
        }
    }
    let _ = writeln!(
        s,
        "description = \"Calibrated {}: {} slots, {}.\"",
        p.when,
        m.concurrency,
        describe(&m.service_time)
    );
    let _ = writeln!(s, "\n[service]");
    let _ = writeln!(s, "concurrency = {}", m.concurrency);
    let _ = writeln!(s, "queue = {}", m.queue);
    if let Some(t) = m.queue_timeout {
        let _ = writeln!(s, "queue_timeout = \"{}\"", dur(t));
    }
    let _ = writeln!(s, "service_time = {}", dist_toml(&m.service_time));
    s
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// A distribution as an inline TOML table of the grammar.
fn dist_toml(d: &Dist) -> String {
    match d {
        Dist::Constant { value } => {
            format!("{{ kind = \"constant\", value = \"{}\" }}", dur(*value))
        }
        Dist::Uniform { min, max } => format!(
            "{{ kind = \"uniform\", min = \"{}\", max = \"{}\" }}",
            dur(*min),
            dur(*max)
        ),
        Dist::Exponential { mean } => {
            format!("{{ kind = \"exponential\", mean = \"{}\" }}", dur(*mean))
        }
        Dist::LogNormal { median, p99 } => format!(
            "{{ kind = \"log-normal\", median = \"{}\", p99 = \"{}\" }}",
            dur(*median),
            dur(*p99)
        ),
    }
}

/// The per-step console table: measured beside the fitted model simulated at the same step.
pub fn table(f: &Fit) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<14} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10} {:>7}",
        "STEP", "LIVE REQ/S", "FIT REQ/S", "LIVE P50", "FIT P50", "LIVE P99", "FIT P99", "ERROR"
    );
    for c in &f.checks {
        let _ = writeln!(
            s,
            "{:<14} {:>11.1} {:>11.1} {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>6.1} %",
            c.live.load.label(),
            c.live.throughput,
            c.sim.throughput,
            c.live.p50_ms,
            c.sim.p50_ms,
            c.live.p99_ms,
            c.sim.p99_ms,
            c.error * 100.0
        );
    }
    s
}
