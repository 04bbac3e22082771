//! How the open loop waits for an arrival's intended start without burning a core.
//!
//! tokio's timer wheel ticks in whole milliseconds and rounds a deadline up, so at 20,000
//! arrivals per second (one every 50 µs) it can only wake the loop up to 1 ms late, and a
//! loop that wants its schedule kept to the microsecond must spin. On Linux a `timerfd`
//! armed with the exact deadline is an hrtimer (no timer slack) that the runtime's epoll
//! sees like any socket: the loop sleeps until the deadline, and wakes a few microseconds
//! after it, with no spinning. [`Pacing::spin`] adds an optional short spin (yielding to
//! the runtime, so in-flight requests keep moving) before each deadline, trading CPU for a
//! tighter lag; elsewhere, or when no timerfd can be made, the loop sleeps on tokio's timer
//! to [`COARSE_WINDOW`] before the deadline and yields from there.
//!
//! Each wake-up costs the process a sleep and a wake of its thread (on a virtual machine
//! about as much CPU as sending a request), and a response read between two arrivals costs
//! another. [`Pacing::batch`] lets the open loop start the arrivals of a short window on
//! one wake-up (armed once for the window's last arrival), their responses then come back
//! together: fewer wake-ups per request, for a lag of at most the window.

use std::time::Duration;

use tokio::time::Instant;

/// Where the coarse timer (tokio's, millisecond ticks) hands over to yielding.
pub const COARSE_WINDOW: Duration = Duration::from_millis(1);

/// The open loop's waiting strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// How long before an arrival's start the loop stops sleeping and yields until it is
    /// due. Zero: sleep on the precise timer to the start itself (no spinning at all).
    pub spin: Duration,
    /// How late an arrival may start so that it shares a wake-up with the arrivals after
    /// it: the loop sleeps to the last arrival due within this window of the next one and
    /// starts them all at once. Zero: one wake-up per distinct arrival time.
    pub batch: Duration,
}

impl Pacing {
    /// The default of `stormrig run`: no spinning, and arrivals within 50 µs of each other
    /// share a wake-up. Side by side, every arrival starts one request per config, so the
    /// configs' own work fills the runtime between arrivals; a spin would take the core
    /// from exactly that work, while a wake-up shared by the arrivals of 50 µs halves the
    /// wake-ups at 20,000 arrivals per second (each carrying one request per config) and
    /// keeps the lag within the 100 µs a schedule may slip. Every config's request of an
    /// arrival still starts on the same wake-up, so the comparison stays fair; at the rates
    /// of most scenarios (gaps of a millisecond and more) the window never groups anything.
    pub const DEFAULT: Pacing = Pacing {
        spin: Duration::ZERO,
        batch: Duration::from_micros(50),
    };
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing::DEFAULT
    }
}

/// Sleeps to exact instants: a timerfd on Linux, tokio's timer plus yielding elsewhere.
pub struct Pacer {
    pacing: Pacing,
    #[cfg(target_os = "linux")]
    fd: Option<precise::TimerFd>,
}

impl Pacer {
    pub fn new(pacing: Pacing) -> Self {
        Pacer {
            pacing,
            // Without a timerfd (out of descriptors, say) the coarse timer still keeps the
            // schedule, at the cost of spinning.
            #[cfg(target_os = "linux")]
            fd: precise::TimerFd::new().ok(),
        }
    }

    /// Returns at `when` (or at once when it has passed).
    pub async fn until(&mut self, when: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = self.fd.as_mut() {
            let wake = when.checked_sub(self.pacing.spin).unwrap_or(when);
            if fd.sleep_until(wake).await.is_ok() {
                spin_until(when).await;
                return;
            }
            // A failing timerfd is dropped: the coarse timer takes over for good.
            self.fd = None;
        }
        let coarse = when
            .checked_sub(COARSE_WINDOW.max(self.pacing.spin))
            .unwrap_or(when);
        if Instant::now() < coarse {
            tokio::time::sleep_until(coarse).await;
        }
        spin_until(when).await;
    }
}

/// Yields to the runtime until `when`: each yield lets in-flight requests and the I/O
/// driver run.
async fn spin_until(when: Instant) {
    while Instant::now() < when {
        tokio::task::yield_now().await;
    }
}

#[cfg(target_os = "linux")]
mod precise {
    use std::io;
    use std::os::fd::OwnedFd;

    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;
    use tokio::time::Instant;

    /// A one-shot `CLOCK_MONOTONIC` timerfd registered with the runtime's reactor.
    pub(super) struct TimerFd {
        fd: AsyncFd<OwnedFd>,
    }

    impl TimerFd {
        pub(super) fn new() -> io::Result<Self> {
            let owned = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            // The safe constructor is deprecated because a borrowed descriptor could be
            // closed while registered; this one is owned by the `AsyncFd` itself and closed
            // only after it is deregistered, when the `AsyncFd` drops.
            #[allow(deprecated)]
            let fd = AsyncFd::with_interest(owned, Interest::READABLE)?;
            Ok(TimerFd { fd })
        }

        /// Arms the timer for `when` (relative to now, on the monotonic clock `Instant`
        /// reads) and waits until it fires. The firing is never read: arming resets the
        /// count, and each expiry wakes the reactor anew (edge-triggered), so a wake-up
        /// costs no `read`; the clock tells a firing for this wait from the stale readiness
        /// of one nobody waited for (a wait cut short), which never ends a later wait.
        pub(super) async fn sleep_until(&mut self, when: Instant) -> io::Result<()> {
            let left = when.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let spec = Itimerspec {
                it_interval: zero,
                it_value: Timespec {
                    tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX),
                    tv_nsec: left.subsec_nanos().into(),
                },
            };
            timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
            loop {
                let mut guard = self.fd.readable().await?;
                guard.clear_ready();
                if Instant::now() >= when {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wait never ends before its instant, with or without a spin, including after a
    /// wait cut short (whose timer may fire later) and for an instant already past.
    #[tokio::test(flavor = "current_thread")]
    async fn never_returns_before_the_instant() {
        for spin in [Duration::ZERO, Duration::from_micros(20)] {
            let mut pacer = Pacer::new(Pacing {
                spin,
                batch: Duration::ZERO,
            });
            let start = Instant::now();
            for k in 1..=50u64 {
                let when = start + Duration::from_micros(200 * k);
                pacer.until(when).await;
                assert!(Instant::now() >= when, "spin {spin:?}, arrival {k}");
            }
            // A wait abandoned mid-way whose timer then fires unread: it must not end the
            // next wait early.
            tokio::select! {
                biased;
                _ = pacer.until(Instant::now() + Duration::from_millis(1)) => {}
                _ = std::future::ready(()) => {}
            }
            std::thread::sleep(Duration::from_millis(2));
            tokio::task::yield_now().await;
            let soon = Instant::now() + Duration::from_millis(2);
            pacer.until(soon).await;
            assert!(
                Instant::now() >= soon,
                "spin {spin:?}, after a cut-short wait"
            );
            pacer.until(start).await;
        }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "current_thread")]
    async fn linux_has_the_precise_timer() {
        assert!(Pacer::new(Pacing::DEFAULT).fd.is_some());
    }
}
