//! The open loop: arrivals come on schedule whatever the responses do.
//!
//! It runs as a task of the runtime, never on the thread that blocks on the run: on a
//! multi-threaded runtime that thread is not a worker, so every request it spawned would
//! be handed across threads and wake an idle worker, and its own timer would wake a
//! third thread; from a worker, a request spawned goes to that worker's own queue and
//! starts on the wake-up that started it.

use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::clock::Epoch;
use super::driver::{ConfigRuntime, RequestMix};
use super::pacer::{Pacer, Pacing};

/// What the open loop hands back: the requests still in flight, the start lag of every
/// arrival (actual − intended start, µs), and whether it was stopped before its schedule
/// ended.
pub struct Ended {
    pub stopped: bool,
    pub tasks: JoinSet<()>,
    pub lag: Histogram<u64>,
}

/// Starts the open loop as a task of the current runtime (see the module's doc). Each
/// arrival starts one logical request per config; a config at its in-flight cap drops
/// (and counts) it. `pacing` says how the loop waits for each start (see
/// [`super::pacer`]). `stop` turning true (or its sender going away) ends it early.
/// `stormrig bench open-loop` measures this very function.
pub fn spawn<A>(
    arrivals: A,
    runtimes: Vec<Arc<ConfigRuntime>>,
    tmpl: &RequestMix,
    epoch: Epoch,
    stop: watch::Receiver<bool>,
    pacing: Pacing,
) -> JoinHandle<Ended>
where
    A: Iterator<Item = (u64, Duration)> + Send + 'static,
{
    let tmpl = Arc::new(tmpl.clone());
    tokio::spawn(async move { run(arrivals, &runtimes, &tmpl, epoch, stop, pacing).await })
}

async fn run(
    arrivals: impl Iterator<Item = (u64, Duration)>,
    runtimes: &[Arc<ConfigRuntime>],
    tmpl: &Arc<RequestMix>,
    epoch: Epoch,
    stop: watch::Receiver<bool>,
    pacing: Pacing,
) -> Ended {
    let mut tasks = JoinSet::new();
    let mut lag = crate::metrics::latency::new_histogram(3);
    let mut pacer = Pacer::new(pacing);
    let mut arrivals = arrivals.peekable();
    // One wait for the stop signal serves the whole run: made anew for every wake-up, it
    // would register with the channel and leave it again each time. It watches a clone of
    // the receiver, which starts from the same seen version, so `stop` itself stays free
    // for the quick check when an arrival is already due.
    let mut watcher = stop.clone();
    let stop_signal = watcher.changed();
    tokio::pin!(stop_signal);
    // The arrivals of one wake-up: the next one and those due within `pacing.batch` of it.
    let mut batch: Vec<(u64, Duration)> = Vec::new();
    let stopped = 'run: {
        while let Some(first) = arrivals.next() {
            batch.clear();
            batch.push(first);
            let window_end = first.1.saturating_add(pacing.batch);
            while let Some(next) = arrivals.next_if(|&(_, t)| t <= window_end) {
                batch.push(next);
            }
            let last = batch.last().map_or(first.1, |&(_, t)| t);
            let when = epoch.at(last);
            if tokio::time::Instant::now() < when {
                tokio::select! {
                    _ = pacer.until(when) => {}
                    _ = &mut stop_signal => break 'run true,
                }
            }
            if *stop.borrow() {
                break 'run true;
            }
            for &(id, intended) in &batch {
                let late = epoch.elapsed().saturating_sub(intended);
                lag.saturating_record(late.as_micros() as u64);
                for rt in runtimes {
                    if !rt.try_claim() {
                        rt.dropped(intended);
                        continue;
                    }
                    let rt = Arc::clone(rt);
                    let tmpl = Arc::clone(tmpl);
                    tasks.spawn(async move {
                        // Boxed: the task itself then stays a few words, so spawning one per
                        // arrival does not copy the whole request future into its cell.
                        Box::pin(rt.drive(&epoch, tmpl.pick(id), id, intended, None)).await;
                        rt.release();
                    });
                }
            }
            // Reap finished tasks now and then so the set does not grow with the run.
            while tasks.try_join_next().is_some() {}
        }
        false
    };
    Ended {
        stopped,
        tasks,
        lag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::driver::RequestTemplate;

    /// The loop over `arrivals` without configs: only its schedule and its stop are left.
    fn start(
        arrivals: impl Iterator<Item = Duration> + Send + 'static,
        stop: watch::Receiver<bool>,
    ) -> JoinHandle<Ended> {
        let mix = RequestMix::single(RequestTemplate {
            method: hyper::Method::GET,
            path: "/".into(),
            headers: hyper::HeaderMap::new(),
            body: bytes::Bytes::new(),
            grpc: false,
            class: None,
            tokens: None,
        });
        spawn(
            (0u64..).zip(arrivals),
            Vec::new(),
            &mix,
            Epoch::start(),
            stop,
            Pacing::DEFAULT,
        )
    }

    /// Without configs the loop still keeps the schedule: every arrival's lag is recorded
    /// and the loop reports it ran to the end.
    #[tokio::test(flavor = "current_thread")]
    async fn a_schedule_kept_to_its_end_records_every_arrival() {
        let (_tx, rx) = watch::channel(false);
        let arrivals = (0..40u64).map(|k| Duration::from_micros(25 * k));
        let ended = start(arrivals, rx).await.unwrap();
        assert!(!ended.stopped);
        assert_eq!(ended.lag.len(), 40);
        assert!(ended.tasks.is_empty());
    }

    /// A stop ends a wait for a far arrival at once, and the one wait for the signal that
    /// serves the whole run still sees a stop sent after many wake-ups.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stop_ends_the_loop_while_it_waits() {
        let (tx, rx) = watch::channel(false);
        // 200 arrivals 100 µs apart, then one an hour later.
        let near = (0..200u64).map(|k| Duration::from_micros(100 * k));
        let arrivals = near.chain([Duration::from_secs(3600)]);
        let handle = start(arrivals, rx);
        // Long enough for the near arrivals (20 ms) on any machine but a stalled one; were
        // the loop still among them, it would stop there, which the asserts allow too.
        tokio::time::sleep(Duration::from_millis(200)).await;
        tx.send(true).unwrap();
        // The bound only keeps a broken loop from hanging the suite.
        let ended = tokio::time::timeout(Duration::from_secs(30), handle)
            .await
            .expect("the loop ignored the stop")
            .unwrap();
        assert!(ended.stopped);
        assert!(ended.lag.len() <= 200, "the far arrival was started");
    }

    /// A loop whose stop was sent before it began starts nothing.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stop_sent_before_the_start_starts_nothing() {
        let (tx, rx) = watch::channel(false);
        tx.send(true).unwrap();
        let arrivals = [Duration::from_millis(5), Duration::from_millis(6)].into_iter();
        let ended = start(arrivals, rx).await.unwrap();
        assert!(ended.stopped);
        assert_eq!(ended.lag.len(), 0);
    }
}
