//! A scenario from the command line alone (`run --rate 300 --duration 20s --fault
//! 503@5s+10s`), for the rehearsal that does not deserve a file yet, as vegeta's and oha's
//! one-line attacks do. The flags become scenario text, which the run writes into its
//! directory and then loads like any file: one loader, one validation, and the run can be
//! repeated from what it wrote.

use std::fmt::Write;

use thiserror::Error;

/// What the flags said, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct Quick {
    /// A loopback URL to rehearse (else the built-in target).
    pub url: Option<String>,
    /// Requests per second, constant.
    pub rate: f64,
    /// How long the load lasts, as given (`"20s"`).
    pub duration: String,
    /// `WHAT@AT+FOR` each: `503@5s+10s`, `503:0.3@5s+10s`, `reset@5s+2s`.
    pub faults: Vec<String>,
    /// Presets side by side (default: no-retry, naive, aws-standard).
    pub configs: Vec<String>,
}

/// A flag that cannot become a scenario, named as the user typed it.
#[derive(Debug, Error, PartialEq)]
pub enum QuickError {
    #[error("--rate {0}: a number of requests per second above 0")]
    Rate(f64),
    #[error(
        "--fault {spec:?}: {why}; the form is WHAT@AT+FOR, WHAT a status (503, or 503:0.3 \
         for a share of the requests) or one of reset, hang, lost-response, e.g. 503@5s+10s"
    )]
    Fault { spec: String, why: &'static str },
    #[error("--config {0:?}: a preset name is letters, digits and '-'")]
    Config(String),
    #[error("--url {0:?}: quotes, backslashes and line breaks have no place in a URL")]
    Url(String),
}

/// The presets a one-line run compares when none is named: the baseline, the anti-pattern
/// and a budgeted client, as the main scenario does.
pub const DEFAULT_CONFIGS: [&str; 3] = ["no-retry", "naive", "aws-standard"];

/// The scenario text the flags describe. Durations, presets and the URL's loopback rule are
/// left to the loader, which names them as it names any file's fields.
pub fn scenario_text(q: &Quick) -> Result<String, QuickError> {
    if !(q.rate.is_finite() && q.rate > 0.0) {
        return Err(QuickError::Rate(q.rate));
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Written by a one-line `stormrig` run; run it again with this file."
    );
    let _ = writeln!(t, "name = \"quick-run\"");
    let _ = writeln!(t, "seed = 1");
    let _ = writeln!(t, "duration = {}", quoted(&q.duration));
    let _ = writeln!(t, "\n[load]\nkind = \"constant\"\nrate = {:?}", q.rate);
    match &q.url {
        Some(url) => {
            if url.contains(['"', '\\', '\n', '\r']) {
                return Err(QuickError::Url(url.clone()));
            }
            let _ = writeln!(t, "\n[target]\nurl = {}", quoted(url));
        }
        None => {
            let _ = writeln!(t, "\n[target]\nbuiltin = \"default\"");
        }
    }
    for spec in &q.faults {
        t.push_str(&fault_table(spec)?);
    }
    let configs: Vec<&str> = if q.configs.is_empty() {
        DEFAULT_CONFIGS.to_vec()
    } else {
        q.configs.iter().map(String::as_str).collect()
    };
    for c in configs {
        if c.is_empty() || !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-') {
            return Err(QuickError::Config(c.to_string()));
        }
        let _ = writeln!(t, "\n[[configs]]\npreset = {}", quoted(c));
    }
    Ok(t)
}

/// A TOML basic string of text already free of quotes, backslashes and line breaks, or of
/// a duration the loader will judge.
fn quoted(s: &str) -> String {
    format!("{:?}", s)
}

/// One `[[faults]]` table from `WHAT@AT+FOR`.
fn fault_table(spec: &str) -> Result<String, QuickError> {
    let bad = |why| QuickError::Fault {
        spec: spec.to_string(),
        why,
    };
    let (what, when) = spec.split_once('@').ok_or(bad("no '@' before the start"))?;
    let (at, length) = when
        .split_once('+')
        .ok_or(bad("no '+' before the length"))?;
    let is_duration =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
    if !is_duration(at) || !is_duration(length) {
        return Err(bad(
            "the start and the length are durations such as 5s or 250ms",
        ));
    }
    let (kind, probability) = match what.split_once(':') {
        Some((k, p)) => {
            let p: f64 = p
                .parse()
                .map_err(|_| bad("the share after ':' is a number"))?;
            if !(p > 0.0 && p <= 1.0) {
                return Err(bad("the share after ':' lies in (0, 1]"));
            }
            (k, Some(p))
        }
        None => (what, None),
    };
    let mut t = String::from("\n[[faults]]\n");
    match kind {
        "reset" | "hang" | "lost-response" => {
            let _ = writeln!(t, "kind = \"{kind}\"");
        }
        status => {
            let code: u16 = status
                .parse()
                .ok()
                .filter(|c| (100..=599).contains(c))
                .ok_or(bad(
                    "WHAT is a status from 100 to 599 or reset, hang, lost-response",
                ))?;
            let _ = writeln!(t, "kind = \"status\"\nstatus = {code}");
        }
    }
    let _ = writeln!(t, "at = \"{at}\"\nfor = \"{length}\"");
    if let Some(p) = probability {
        let _ = writeln!(t, "probability = {p:?}");
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(faults: &[&str]) -> Quick {
        Quick {
            rate: 300.0,
            duration: "20s".into(),
            faults: faults.iter().map(|s| s.to_string()).collect(),
            ..Quick::default()
        }
    }

    #[test]
    fn flags_become_a_scenario_the_loader_accepts() {
        let text = scenario_text(&quick(&["503@5s+10s", "reset:0.25@16s+1s"])).unwrap();
        let sc = crate::scenario::parse(std::path::Path::new("quick.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(sc.faults.len(), 2, "{text}");
        assert_eq!(sc.configs.len(), DEFAULT_CONFIGS.len());
        assert_eq!(sc.duration, std::time::Duration::from_secs(20));
        assert!(text.contains("probability = 0.25"), "{text}");
    }

    #[test]
    fn a_bad_flag_is_named_as_typed() {
        for (spec, why) in [
            ("503", "no '@'"),
            ("503@5s", "no '+'"),
            ("600@1s+1s", "status from 100"),
            ("503:2@1s+1s", "(0, 1]"),
            ("503@1s+1 s", "durations"),
        ] {
            let e = scenario_text(&quick(&[spec])).unwrap_err().to_string();
            assert!(e.contains(spec) && e.contains(why), "{spec}: {e}");
        }
        let e = scenario_text(&Quick {
            rate: 0.0,
            ..quick(&[])
        });
        assert_eq!(e, Err(QuickError::Rate(0.0)));
        let e = scenario_text(&Quick {
            configs: vec!["aws\"x".into()],
            ..quick(&[])
        });
        assert!(matches!(e, Err(QuickError::Config(_))));
    }
}
