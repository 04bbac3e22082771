//! Progress while a live run goes: one indicatif bar per config (live rate and
//! amplification) on a terminal; plain periodic lines when not a terminal (CI logs).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;

use super::clock::Epoch;
use super::driver::ConfigRuntime;
use super::telemetry::snapshot;
use crate::server::TargetHandle;

/// How often plain (non-terminal) progress lines are printed.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// A running progress display; `finish` ends it on every exit path.
pub struct Progress {
    task: JoinHandle<()>,
    bars: Vec<ProgressBar>,
}

impl Progress {
    pub fn start(
        runtimes: &[Arc<ConfigRuntime>],
        targets: &[TargetHandle],
        epoch: Epoch,
        duration: Duration,
    ) -> Progress {
        let stats: Vec<_> = targets.iter().map(|t| t.probe()).collect();
        let runtimes: Vec<_> = runtimes.to_vec();
        let total_ms = duration.as_millis() as u64;
        if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let style =
                ProgressStyle::with_template("{prefix:>18} [{bar:30}] {pos:>5}/{len}ms {msg}")
                    .expect("static template")
                    .progress_chars("=> ");
            let bars: Vec<ProgressBar> = runtimes
                .iter()
                .map(|rt| {
                    let b = multi.add(ProgressBar::new(total_ms));
                    b.set_style(style.clone());
                    b.set_prefix(rt.name.clone());
                    b
                })
                .collect();
            let bars2 = bars.clone();
            let task = tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(250));
                loop {
                    tick.tick().await;
                    let t = epoch.elapsed();
                    for ((rt, b), st) in runtimes.iter().zip(&bars2).zip(&stats) {
                        let s = snapshot(rt, st);
                        let (started, attempts, failures, amp) =
                            (s.upstream, s.attempts, s.failures, s.amplification());
                        let rate = started as f64 / t.as_secs_f64().max(0.001);
                        b.set_position((t.as_millis() as u64).min(total_ms));
                        b.set_message(format!(
                            "{rate:>7.0} req/s  attempts {attempts:>7}  failed {failures:>6}  amp {amp:>5.2}×"
                        ));
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
                    for (rt, st) in runtimes.iter().zip(&stats) {
                        let s = snapshot(rt, st);
                        let (started, attempts, failures, amp) =
                            (s.upstream, s.attempts, s.failures, s.amplification());
                        eprintln!(
                            "[{:>5.1}s] {:<18} started {started:>7}  attempts {attempts:>7}  failed {failures:>6}  amplification {amp:.2}",
                            t.as_secs_f64(),
                            rt.name
                        );
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
