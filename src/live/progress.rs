//! Progress while a live run goes, in at most 80 columns: a line with the time, the time
//! left and the faults active now, then one line per config (request rate, retries per
//! second, amplification, budget level). Redrawn in place on a terminal; printed every few
//! seconds otherwise (CI logs).

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;

use super::clock::Epoch;
use super::driver::ConfigRuntime;
use super::snapshot::{snapshot, Snapshot};
use crate::scenario::Fault;
use crate::server::{TargetHandle, TargetProbe};

/// How often plain (non-terminal) progress lines are printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The widest line drawn: an 80-column terminal shows it without wrapping.
pub const WIDTH: usize = 79;

/// Characters of a config's name the display shows.
const NAME: usize = 16;

/// A running progress display; `finish` ends it on every exit path.
pub struct Progress {
    task: JoinHandle<()>,
    bars: Vec<ProgressBar>,
}

/// `line` cut to [`WIDTH`] characters.
fn fit(line: String) -> String {
    if line.chars().count() <= WIDTH {
        line
    } else {
        line.chars().take(WIDTH).collect()
    }
}

/// The run's line: time, a bar, time left, and the faults active at `t`.
pub fn run_line(t: Duration, duration: Duration, faults: &[Fault]) -> String {
    let done = (t.as_secs_f64() / duration.as_secs_f64().max(1e-9)).min(1.0);
    let filled = (done * 20.0).round() as usize;
    let bar = format!("{}{}", "=".repeat(filled), " ".repeat(20 - filled));
    let left = if t < duration {
        format!("ETA {:.0} s", (duration - t).as_secs_f64().ceil())
    } else {
        "draining".to_string()
    };
    let active: Vec<String> = faults
        .iter()
        .filter(|f| f.active_at(t))
        .map(|f| f.kind.label())
        .collect();
    let phase = if active.is_empty() {
        "no fault".to_string()
    } else {
        format!("fault: {}", active.join(", "))
    };
    fit(format!(
        "{:>6.1}/{:.0} s [{bar}] {left:<10} {phase}",
        t.as_secs_f64().min(duration.as_secs_f64() * 10.0),
        duration.as_secs_f64()
    ))
}

/// One config's line.
pub fn config_line(s: &Snapshot, elapsed: Duration, retries_per_s: f64) -> String {
    let name: String = s.config.chars().take(NAME).collect();
    let rate = s.upstream as f64 / elapsed.as_secs_f64().max(0.001);
    let budget = s
        .budget_level_pct
        .map_or_else(|| "    -".to_string(), |p| format!("{p:>3.0} %"));
    fit(format!(
        "{name:<NAME$} {rate:>6.0} req/s {retries_per_s:>6.0} retries/s  amp {:>5.2}×  budget {budget}",
        s.amplification()
    ))
}

/// Retries per second of each config over about the last second (from the display's own
/// samples).
struct RetryRates {
    /// Per config: (when, retries so far), oldest first, spanning about a second.
    samples: Vec<VecDeque<(Duration, u64)>>,
}

impl RetryRates {
    fn new(n: usize) -> Self {
        RetryRates {
            samples: vec![VecDeque::from([(Duration::ZERO, 0)]); n],
        }
    }

    fn update(&mut self, i: usize, t: Duration, retries: u64) -> f64 {
        let s = &mut self.samples[i];
        s.push_back((t, retries));
        while s.len() > 2 && t.saturating_sub(s[1].0) >= Duration::from_secs(1) {
            s.pop_front();
        }
        let (t0, r0) = s[0];
        let span = t.saturating_sub(t0).as_secs_f64();
        if span > 0.0 {
            retries.saturating_sub(r0) as f64 / span
        } else {
            0.0
        }
    }
}

/// The display's lines at `t`: the run's, then one per config.
fn lines(
    runtimes: &[Arc<ConfigRuntime>],
    probes: &[TargetProbe],
    rates: &mut RetryRates,
    t: Duration,
    duration: Duration,
    faults: &[Fault],
) -> Vec<String> {
    let mut out = vec![run_line(t, duration, faults)];
    for (i, (rt, p)) in runtimes.iter().zip(probes).enumerate() {
        let s = snapshot(rt, p);
        let per_s = rates.update(i, t, s.retries);
        out.push(config_line(&s, t, per_s));
    }
    out
}

impl Progress {
    pub fn start(
        runtimes: &[Arc<ConfigRuntime>],
        targets: &[TargetHandle],
        epoch: Epoch,
        duration: Duration,
        faults: &[Fault],
    ) -> Progress {
        let probes: Vec<_> = targets.iter().map(|t| t.probe()).collect();
        let runtimes: Vec<_> = runtimes.to_vec();
        let faults = faults.to_vec();
        let mut rates = RetryRates::new(runtimes.len());
        if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let style = ProgressStyle::with_template("{msg}").expect("static template");
            let bars: Vec<ProgressBar> = (0..=runtimes.len())
                .map(|_| {
                    let b = multi.add(ProgressBar::new(1));
                    b.set_style(style.clone());
                    b
                })
                .collect();
            let drawn = bars.clone();
            let task = tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(250));
                loop {
                    tick.tick().await;
                    let t = epoch.elapsed();
                    let lines = lines(&runtimes, &probes, &mut rates, t, duration, &faults);
                    for (b, line) in drawn.iter().zip(lines) {
                        b.set_message(line);
                    }
                }
            });
            Progress { task, bars }
        } else {
            let task = tokio::spawn(async move {
                let mut tick = tokio::time::interval(PLAIN_EVERY);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let t = epoch.elapsed();
                    for line in lines(&runtimes, &probes, &mut rates, t, duration, &faults) {
                        eprintln!("{line}");
                    }
                }
            });
            Progress {
                task,
                bars: Vec::new(),
            }
        }
    }

    /// Stops the display and clears the bars, so the summary prints cleanly.
    pub fn finish(self) {
        self.task.abort();
        for b in &self.bars {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FaultKind;

    #[test]
    fn lines_fit_80_columns_whatever_the_names_and_figures() {
        let fault = Fault {
            at: Duration::from_secs(5),
            length: Duration::from_secs(10),
            path: None,
            probability: 1.0,
            kind: FaultKind::LostResponse { status: Some(504) },
        };
        let many = vec![fault; 8];
        let line = run_line(Duration::from_secs(7), Duration::from_secs(60), &many);
        assert!(line.contains("ETA 53 s") && line.contains("fault: lost response (504)"));
        assert!(line.chars().count() <= WIDTH, "{line}");
        let quiet = run_line(Duration::from_secs(61), Duration::from_secs(60), &many);
        assert!(
            quiet.contains("draining") && quiet.contains("no fault"),
            "{quiet}"
        );
        let s = Snapshot {
            config: "a-config-name-of-sixty-four-characters-is-allowed-in-a-scenario".into(),
            upstream: 99_999_999,
            attempts: 400_000_000,
            retries: 300_000_000,
            failures: 0,
            budget_refusals: 0,
            arrivals: 400_000_000,
            in_flight: 10_000,
            budget_level_pct: Some(100.0),
            successes: 0,
            attempts_by_outcome: Default::default(),
            latency: Default::default(),
        };
        let line = config_line(&s, Duration::from_millis(1), 9_999_999.0);
        assert!(line.chars().count() <= WIDTH, "{line}");
        assert!(line.starts_with("a-config-name-of "), "{line}");
        let line = config_line(&s, Duration::from_secs(10), 12.0);
        assert!(
            line.contains("budget 100 %") && line.contains("12 retries/s"),
            "{line}"
        );
    }
}
