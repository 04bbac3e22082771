//! One hedged call on real sockets: its copies in flight at once, its one hedge timer, and
//! the copies closed when the call ends.
//!
//! The session decides everything (when a copy goes, what an answer does, when the call is
//! over) exactly as it does for the simulator (`sim::hedge`); this file only keeps the
//! copies' futures and the timer. Closing a copy is dropping its future: on HTTP/1.1 that
//! drops its connection (a connection whose response was not read whole never goes back to
//! the pool, [`http::send`]), so the server sees it close; on HTTP/2 hyper resets the
//! copy's stream (`RST_STREAM` with `CANCEL`) and the connection carries on.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use super::{to_outcome, ConfigRuntime, Final, RequestTemplate};
use crate::draws::LazyRng;
use crate::live::clock::Epoch;
use crate::live::http::{self, Reply};
use crate::policy::{AttemptLabel, Now};
use crate::server::Settled;
use crate::session::{self, Attempt, Hedge};

/// A copy's reply, as it will come.
type ReplyFuture<'a> = Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

/// One copy on the wire.
struct Copy<'a> {
    attempt: u32,
    /// When it was sent, from the epoch.
    sent: Duration,
    reply: ReplyFuture<'a>,
}

/// What woke the call up.
enum Wake {
    /// Copy `attempt`, sent at `sent`, answered.
    Answer {
        attempt: u32,
        sent: Duration,
        reply: Reply,
    },
    /// The hedge timer went off.
    Due,
}

/// A hedged call between two steps. Dropped before its end (the run's drain ended), it
/// counts each copy still on the wire `unfinished` (or `not-accepted`, when the target
/// never read it) and hands the call to the session to be abandoned, as [`super::Held`]
/// does for a retried request.
struct Call<'a> {
    rt: &'a ConfigRuntime,
    epoch: &'a Epoch,
    tmpl: &'a RequestTemplate,
    request: u64,
    /// The call, while the session has not ended it.
    slot: Option<session::Request>,
    copies: Vec<Copy<'a>>,
    /// When the hedge timer goes off (`None`: not armed).
    due: Option<Instant>,
}

impl<'a> Call<'a> {
    /// Sends copy `attempt` now (`sent` from the epoch).
    fn launch(&mut self, attempt: Attempt, sent: Duration) {
        if let Some(claims) = &self.rt.claims {
            claims.sent(self.request, attempt.number);
        }
        let out = self.rt.build(self.tmpl, self.request, attempt);
        self.copies.push(Copy {
            attempt: attempt.number,
            sent,
            reply: Box::pin(http::send(&self.rt.http, out, attempt.timeout)),
        });
    }

    /// Arms the hedge timer `wait` after `now` (`None`: disarms it).
    fn arm(&mut self, now: Now, wait: Option<Duration>) {
        self.due = wait.map(|w| self.epoch.at(now.mono.saturating_add(w)));
    }

    /// Waits for the first copy to answer or the timer to go off, whichever comes first.
    async fn next(&mut self) -> Wake {
        let due = self.due;
        let sleep = async move {
            match due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let mut sleep = std::pin::pin!(sleep);
        let copies = &mut self.copies;
        let wake = std::future::poll_fn(|cx| {
            for i in 0..copies.len() {
                if let Poll::Ready(reply) = copies[i].reply.as_mut().poll(cx) {
                    let c = copies.remove(i);
                    return Poll::Ready(Wake::Answer {
                        attempt: c.attempt,
                        sent: c.sent,
                        reply,
                    });
                }
            }
            sleep.as_mut().poll(cx).map(|()| Wake::Due)
        })
        .await;
        if matches!(wake, Wake::Due) {
            self.due = None;
        }
        wake
    }

    /// Whether the in-process target had read copy `attempt` when the client let go of it
    /// (settled with it; always true without its claims).
    fn settle(&self, attempt: u32) -> bool {
        self.rt
            .claims
            .as_ref()
            .is_none_or(|c| c.settle(self.request, attempt, true) == Settled::Read)
    }

    /// Closes the copies still on the wire of a call the session ended (each counted
    /// cancelled, or `not-accepted` when the target never read it): their futures are
    /// dropped first, then each is settled and counted.
    fn cancel(&mut self) {
        let closed: Vec<u32> = self.copies.drain(..).map(|c| c.attempt).collect();
        if closed.is_empty() {
            return;
        }
        let read: Vec<bool> = closed.iter().map(|&a| self.settle(a)).collect();
        let mut session = self.rt.lock();
        for (attempt, read) in closed.into_iter().zip(read) {
            session.hedge_cancelled(self.request, attempt, read);
        }
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let Some(req) = self.slot.take() else {
            return;
        };
        let copies = std::mem::take(&mut self.copies);
        let labels: Vec<(u32, Duration, AttemptLabel)> = copies
            .into_iter()
            .map(|c| {
                let label = match self.settle(c.attempt) {
                    true => AttemptLabel::Unfinished,
                    false => AttemptLabel::NotAccepted,
                };
                (c.attempt, c.sent, label)
            })
            .collect();
        let now = self.epoch.now();
        let mut session = self.rt.lock();
        for (attempt, sent, label) in labels {
            session.hedge_unanswered(self.request, attempt, sent, label);
        }
        session.abandon(now, req);
    }
}

impl ConfigRuntime {
    /// Carries hedged call `request` on from its first copy, `first`, granted at `now`:
    /// copies go when the session says, every answer goes to the session, and the copies
    /// still on the wire when it ends the call are closed and counted cancelled.
    pub(super) async fn drive_hedged(
        &self,
        epoch: &Epoch,
        tmpl: &RequestTemplate,
        request: u64,
        (req, first): (session::Request, Attempt),
        mut now: Now,
        rng: &mut LazyRng,
    ) -> Final {
        let mut call = Call {
            rt: self,
            epoch,
            tmpl,
            request,
            slot: Some(req),
            copies: Vec::with_capacity(2),
            due: None,
        };
        call.launch(first, now.mono);
        let wait = self.lock().hedge_armed_in(now, &mut call.slot);
        call.arm(now, wait);
        let mut last = None;
        loop {
            let step = match call.next().await {
                Wake::Due => {
                    let mut session = self.lock();
                    now = epoch.now();
                    session.hedge_due_in(now, &mut call.slot, rng)
                }
                Wake::Answer {
                    attempt,
                    sent,
                    reply,
                } => {
                    now = epoch.now();
                    let latency = now.mono.saturating_sub(sent);
                    let outcome = match tmpl.grpc {
                        true => crate::live::grpc::to_outcome(&reply),
                        false => to_outcome(&reply),
                    };
                    let label = self
                        .never_read(request, attempt, &reply)
                        .then_some(AttemptLabel::NotAccepted);
                    let mut session = self.lock();
                    let h = session.hedge_outcome_as(
                        now,
                        &mut call.slot,
                        attempt,
                        latency,
                        &outcome,
                        rng,
                        label,
                    );
                    drop(session);
                    last = Some(reply);
                    h
                }
            };
            match step {
                Hedge::Idle => {}
                Hedge::Arm(wait) => call.arm(now, Some(wait)),
                Hedge::Send(attempt, next) => {
                    call.launch(attempt, now.mono);
                    call.arm(now, next);
                }
                Hedge::Done(ending) => {
                    call.cancel();
                    let reason = ending.reason();
                    return Final {
                        ok: reason.is_none(),
                        reply: last,
                        reason,
                    };
                }
            }
        }
    }
}
