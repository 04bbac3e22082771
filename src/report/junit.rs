//! `junit.xml`: the gate verdicts of a run as JUnit XML, for CI systems that show test
//! results. One `<testsuite name="stormrig.<scenario>">` holds one `<testcase>` per verdict
//! (per gate and config): `classname` is the config, `name` the gate text. A failed gate
//! carries `<failure message="measured X, limit OP Y" type="gate">`.
//!
//! Written by hand with full escaping (no XML dependency at run time); the tests read it
//! back with quick-xml.

use std::path::Path;

use super::files::{write_atomic, FilesError};
use super::gates::{fmt_measured, fmt_num};
use crate::metrics::{GateVerdict, RunResult};

pub const JUNIT_XML: &str = "junit.xml";

/// Escapes text for XML character data and attribute values (quotes, and the whitespace
/// an attribute would otherwise normalize away); characters XML 1.0 forbids become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The failure message of a verdict: `measured X, limit OP Y`.
pub fn failure_message(v: &GateVerdict) -> String {
    format!(
        "measured {}, limit {} {}",
        fmt_measured(v.measured),
        v.op,
        fmt_num(v.limit)
    )
}

/// Renders the run's gate verdicts (`run.gates`) as a JUnit XML document.
pub fn render(run: &RunResult) -> String {
    let skipped = run.gates.iter().filter(|v| v.incomplete).count();
    let failures = run.gates.iter().filter(|v| !v.passed).count() - skipped;
    let suite = escape(&format!("stormrig.{}", run.scenario));
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"stormrig\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" time=\"{t}\">\n",
        n = run.gates.len(),
        t = run.duration_s,
    ));
    x.push_str(&format!(
        "  <testsuite name=\"{suite}\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{t}\">\n",
        n = run.gates.len(),
        t = run.duration_s,
    ));
    x.push_str("    <properties>\n");
    for (k, v) in [
        ("seed", run.seed.to_string()),
        ("engine", format!("{:?}", run.engine).to_lowercase()),
        ("partial", run.partial.to_string()),
        ("stormrig_version", run.stormrig_version.clone()),
    ] {
        x.push_str(&format!(
            "      <property name=\"{k}\" value=\"{}\"/>\n",
            escape(&v)
        ));
    }
    x.push_str("    </properties>\n");
    for v in &run.gates {
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            escape(&v.config),
            escape(&v.gate)
        );
        if v.passed {
            x.push_str(&open);
            x.push_str("/>\n");
        } else if v.incomplete {
            x.push_str(&open);
            x.push_str(">\n      <skipped message=\"incomplete: the run was cut short\"/>\n    </testcase>\n");
        } else {
            let detail = format!(
                "config {}: {} = {}, limit {} {}",
                v.config,
                v.figure,
                fmt_measured(v.measured),
                v.op,
                fmt_num(v.limit)
            );
            x.push_str(&open);
            x.push_str(">\n");
            x.push_str(&format!(
                "      <failure message=\"{}\" type=\"gate\">{}</failure>\n",
                escape(&failure_message(v)),
                escape(&detail)
            ));
            x.push_str("    </testcase>\n");
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Writes `junit.xml` into `dir` (which must exist) atomically.
pub fn write(dir: &Path, run: &RunResult) -> Result<(), FilesError> {
    write_atomic(dir, JUNIT_XML, render(run).as_bytes())
}
