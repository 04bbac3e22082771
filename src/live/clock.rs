//! The only place the live engine reads the real clock. Everything downstream sees time as
//! [`Now`]: a monotonic offset from the run's epoch plus its wall-clock equivalent.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::policy::Now;

/// The run's t = 0, shared by the load generator and every target so fault windows line up.
#[derive(Debug, Clone, Copy)]
pub struct Epoch {
    pub mono: Instant,
    pub wall: SystemTime,
}

impl Epoch {
    pub fn start() -> Self {
        Epoch {
            mono: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    /// Time since the epoch.
    pub fn elapsed(&self) -> Duration {
        self.mono.elapsed()
    }

    /// The policy's view of the present.
    pub fn now(&self) -> Now {
        Now {
            mono: self.elapsed(),
            epoch_wall: self.wall,
        }
    }

    /// The instant `t` after the epoch.
    pub fn at(&self, t: Duration) -> Instant {
        self.mono + t
    }
}
