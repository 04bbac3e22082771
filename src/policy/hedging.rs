//! Hedging: extra copies of a call sent before the first one failed (gRFC A6's
//! `hedgingPolicy`), the stage that multiplies load by design under a latency fault.
//!
//! A hedged call sends its first attempt at once and one more every `delay` while none has
//! answered, up to `max_attempts` copies in all; the first success wins and the others are
//! cancelled; a fatal answer ends the call and cancels the others; a non-fatal one does not
//! end it (the next copy may go early, see [`Shortcut`]). Hedges share the gRPC retry
//! throttle: a copy after the first is scheduled only while the tokens are above half.
//!
//! A config has a retry policy or a hedging policy, never both: "Service owners must choose
//! between a retry policy or a hedging policy" (grpc/proposal `A6-client-retries.md` line
//! 349; "Only one of retryPolicy or hedgingPolicy may be set", line 426). So a hedged config
//! makes no retry after a failure; its attempts are its copies. The per-request logic lives
//! in `client::hedge`; this module holds what a user writes and its checks.

use super::duration;
use super::error::{check, PolicyError};
use super::grpc_status::GrpcStatus;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// gRFC A6's client-side cap on `maxAttempts` (line 162: "Values greater than 5 are treated
/// as 5"); stormrig refuses more rather than quietly sending fewer copies than written.
pub const MAX_HEDGED_ATTEMPTS: u32 = 5;

/// What a non-fatal answer does to the next copy's timer. gRFC A6 and grpc-java, the gRPC
/// implementation with hedging that A6 names first, differ here, so the choice is the config's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shortcut {
    /// A6's text (`A6-client-retries.md` lines 153 and 228-236): a non-fatal answer sends the
    /// next copy at once; a pushback of n ms sends it after n ms; later copies resume every
    /// `delay` from then.
    #[default]
    A6,
    /// grpc-java (`core/src/main/java/io/grpc/internal/RetriableStream.java` at 5fda0c7,
    /// `makeHedgingDecision` lines 1099-1113 and `pushbackHedging` lines 434-460): a non-fatal
    /// answer without pushback leaves the next copy on its timer; a pushback > 0 sends it at
    /// once.
    GrpcJava,
}

/// A config's hedging stage, as written and as run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgingConfig {
    /// Copies of a call in all, the first included (A6's `maxAttempts`): 2..=5.
    pub max_attempts: u32,
    /// Time between two copies while none has answered (A6's `hedgingDelay`; 0: all at once).
    #[serde(default, with = "duration::serde")]
    pub delay: Duration,
    /// gRPC statuses after which the call goes on (A6's `nonFatalStatusCodes`). They replace
    /// the config's `retry_on.grpc_statuses`; an HTTP answer without `grpc-status` is non-fatal
    /// when `retry_on`'s HTTP lists retry it. Absent: `retry_on` decides alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_fatal: Option<Vec<GrpcStatus>>,
    /// What a non-fatal answer does to the next copy's timer.
    #[serde(default)]
    pub shortcut: Shortcut,
}

impl HedgingConfig {
    /// Refuse impossible values, naming the field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        check(
            (2..=MAX_HEDGED_ATTEMPTS).contains(&self.max_attempts),
            "hedging.max_attempts",
            self.max_attempts,
            "2..=5 (copies in all, the first included; gRFC A6 caps it at 5)",
        )?;
        if let Some(list) = &self.non_fatal {
            check(
                !list.contains(&GrpcStatus::Ok),
                "hedging.non_fatal",
                "\"ok\"",
                "gRPC statuses other than OK (OK is a success)",
            )?;
        }
        Ok(())
    }

    /// The most copies of one call this stage can put on the wire.
    pub fn copies(&self) -> u32 {
        self.max_attempts
    }
}
