//! What the engine does next with a request, given whole ([`Step`]) or kept in a slot of
//! the engine's own ([`Next`]), and the moves between the two.

use std::time::Duration;

use super::{Attempt, Ending, Request};

/// What the engine does next with a request.
#[derive(Debug)]
#[must_use = "a request that is not followed up never ends"]
pub enum Step {
    /// Send this attempt now, then hand its outcome to [`Session::outcome`](super::Session::outcome).
    Send(Request, Attempt),
    /// Wait this long (a retry's backoff, or a rate limiter's wait for a token), then ask
    /// [`Session::permit`](super::Session::permit) for the attempt.
    Wait(Request, Duration),
    /// The request has ended and is counted; nothing more to do for it.
    Done(Ending),
}

/// What the engine does next with a request it keeps in a slot of its own (the `_in`
/// methods): a [`Step`] without the request, which stays where it is. An engine that holds
/// many requests (the simulator's slab) drives them in place, so a request is not copied
/// out of its slot and back at every step.
#[derive(Debug)]
#[must_use = "a request that is not followed up never ends"]
pub enum Next {
    /// Send this attempt now, then hand its outcome to [`Session::outcome_in`](super::Session::outcome_in).
    Send(Attempt),
    /// Wait this long, then ask [`Session::permit_in`](super::Session::permit_in) for the retry.
    Wait(Duration),
    /// The request has ended and is counted: its slot is empty.
    Done(Ending),
}

impl Step {
    /// The step as the engine keeping the request in `slot` follows it: the request goes
    /// back into the slot while it has a next step.
    #[inline(always)]
    pub(super) fn keep_in(self, slot: &mut Option<Request>) -> Next {
        match self {
            Step::Send(req, attempt) => {
                *slot = Some(req);
                Next::Send(attempt)
            }
            Step::Wait(req, after) => {
                *slot = Some(req);
                Next::Wait(after)
            }
            Step::Done(ending) => Next::Done(ending),
        }
    }
}

impl Next {
    /// The step of a request that `slot` kept: it leaves the slot with the step.
    #[inline(always)]
    pub(super) fn take_from(self, slot: &mut Option<Request>) -> Step {
        match (self, slot.take()) {
            (Next::Send(attempt), Some(req)) => Step::Send(req, attempt),
            (Next::Wait(after), Some(req)) => Step::Wait(req, after),
            (Next::Done(ending), _) => Step::Done(ending),
            // The `_in` methods empty the slot only when the request ends.
            (Next::Send(_) | Next::Wait(_), None) => unreachable!("a live request left its slot"),
        }
    }
}
