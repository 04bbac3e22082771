//! The session's own moves of a request: slots, refusals, waits, abandons.

use super::*;
use crate::policy::{self, Response};

fn session(preset: &str) -> Session {
    Session::new(preset, &policy::preset(preset).unwrap(), true)
}

fn at(ms: u64) -> Now {
    Now::virtual_at(Duration::from_millis(ms))
}

fn status(s: u16) -> AttemptOutcome<'static> {
    AttemptOutcome::Response(Response::status(s))
}

/// Sends the attempt of a `Send` step, panicking on any other step.
fn sent(step: Step) -> (Request, Attempt) {
    match step {
        Step::Send(req, attempt) => (req, attempt),
        other => panic!("expected an attempt to send, got {other:?}"),
    }
}

/// Request `id`'s first attempt fails with a 503; the step its retry's permit gives.
fn retry_of(s: &mut Session, id: u64, rng: &mut LazyRng) -> Step {
    let (req, _) = sent(s.start(at(0), Duration::ZERO, id, "GET", None));
    match s.outcome(at(1), req, Duration::ZERO, &status(503), rng) {
        Step::Wait(req, _) => s.permit(at(300), req),
        step => step,
    }
}

#[test]
fn an_abandoned_request_gives_back_its_retry_slot() {
    // envoy allows 3 concurrent retries: three requests hold them, a fourth is refused.
    let mut s = session("envoy");
    let mut rng = LazyRng::new(1);
    let held: Vec<Request> = (0..3)
        .map(|id| sent(retry_of(&mut s, id, &mut rng)).0)
        .collect();
    assert!(matches!(
        retry_of(&mut s, 3, &mut rng),
        Step::Done(Ending::GaveUp(GiveUpReason::BudgetRefused))
    ));
    // Their callers went away: abandoned, the slots are free again and nothing is counted
    // as an ending.
    let finished = s.recorder().seconds()[0].finished;
    for req in held {
        s.abandon(at(400), req);
    }
    assert_eq!(s.recorder().seconds()[0].finished, finished);
    let (_, attempt) = sent(retry_of(&mut s, 4, &mut rng));
    assert_eq!(attempt.number, 2);
}

#[test]
fn a_retry_without_wait_is_granted_in_the_outcome_step_and_counted_once() {
    let mut s = session("naive");
    let mut rng = LazyRng::new(1);
    let (mut req, mut attempt) = sent(s.start(at(0), Duration::ZERO, 7, "GET", None));
    for n in 1..4 {
        assert_eq!(attempt.number, n);
        (req, attempt) = sent(s.outcome(at(n.into()), req, Duration::ZERO, &status(503), &mut rng));
    }
    let end = s.outcome(at(4), req, Duration::ZERO, &status(503), &mut rng);
    assert!(matches!(
        end,
        Step::Done(Ending::GaveUp(GiveUpReason::MaxAttempts))
    ));
    let sec = &s.recorder().seconds()[0];
    assert_eq!(
        (sec.started, sec.finished, sec.attempts, sec.retries),
        (1, 1, 4, 3)
    );
    let rows: Vec<_> = s.log().iter().map(|r| (r.request, r.attempt)).collect();
    assert_eq!(rows, [(7, 1), (7, 2), (7, 3), (7, 4)]);
}

#[test]
fn a_request_driven_in_its_slot_stays_there_until_it_ends() {
    let mut s = session("naive");
    let mut rng = LazyRng::new(1);
    let mut slot = None;
    let mut next = s.start_in(&mut slot, at(0), Duration::ZERO, 7, true, None);
    let mut sent = 0;
    while let Next::Send(attempt) = next {
        sent += 1;
        assert_eq!(attempt.number, sent);
        assert_eq!(slot.as_ref().map(Request::id), Some(7));
        next = s.outcome_in(
            at(sent.into()),
            &mut slot,
            Duration::ZERO,
            &status(503),
            &mut rng,
        );
    }
    assert!(matches!(
        next,
        Next::Done(Ending::GaveUp(GiveUpReason::MaxAttempts))
    ));
    assert!(slot.is_none());
    let sec = &s.recorder().seconds()[0];
    assert_eq!((sec.finished, sec.attempts), (1, u64::from(sent)));
}

#[test]
fn a_retry_that_must_wait_asks_for_its_permit_after_the_wait() {
    let mut s = session("polly");
    let mut rng = LazyRng::new(1);
    let (req, _) = sent(s.start(at(0), Duration::ZERO, 1, "GET", None));
    let Step::Wait(req, after) = s.outcome(at(1), req, Duration::ZERO, &status(503), &mut rng)
    else {
        panic!("polly waits before its retry");
    };
    assert_eq!(after, Duration::from_secs(2));
    let (req, attempt) = sent(s.permit(at(2_001), req));
    assert_eq!(attempt.number, 2);
    let end = s.outcome(at(2_002), req, Duration::ZERO, &status(200), &mut rng);
    assert!(matches!(end, Step::Done(Ending::Succeeded)));
    assert_eq!(s.recorder().seconds()[2].successes, 1);
}

#[test]
fn a_refused_permit_ends_the_request_and_logs_the_refusal() {
    let mut s = session("naive");
    // No time left of an inherited deadline: the first attempt is refused.
    let step = s.start(at(0), Duration::ZERO, 3, "GET", Some(Duration::ZERO));
    assert!(matches!(
        step,
        Step::Done(Ending::GaveUp(GiveUpReason::Deadline))
    ));
    let row = &s.log()[0];
    assert_eq!((row.request, row.attempt, row.outcome), (3, 1, "refused"));
    let sec = &s.recorder().seconds()[0];
    assert_eq!((sec.started, sec.finished, sec.attempts), (1, 1, 0));
}
