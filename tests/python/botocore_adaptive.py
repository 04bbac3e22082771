"""botocore's adaptive retry mode (its client-side rate limiter) through a timeline of answers,
on a virtual clock.

Used by tests/suite/aws_adaptive_conformance.rs to hold stormrig's `aws-adaptive` rate
limiter against botocore's own classes (pinned in requirements.txt). Nothing is re-written
here: the limiter is the one `botocore.retries.adaptive.register_retry_handler` builds and
registers (ClientRateLimiter, TokenBucket, CubicCalculator, RateClocker,
ThrottlingErrorDetector), and the driver calls the two handlers it registered, as
botocore's endpoint does: `before-send` before every attempt is sent (botocore/endpoint.py
lines 277-278) and `needs-retry` after every attempt's answer or transport error
(endpoint.py lines 202-208, 353-368).

Two things are replaced, both of them time: `bucket.Clock` by a virtual clock (botocore
reads the time only through it), and the bucket's condition variable by one whose
`wait(timeout)` moves that clock on by `timeout` instead of sleeping (`TokenBucket._acquire`,
bucket.py lines 89-99, waits on it and looks again), and by at least the clock's float
resolution, as a real wait always lets some time pass. So the acquisition times below are the
ones botocore's own loop computes, without the sleeping, and nothing leaves the process.

usage:
  botocore_adaptive.py TIMELINE_JSON
      TIMELINE_JSON: {"start_s", "interval_s", "latency_s", "calls", "answers": [{"from_s",
      "to_s", "status", "code"} or {"from_s", "to_s", "transport": "reset"}]}. One sender
      makes `calls` attempts one after another: attempt i is due at start_s + i*interval_s,
      or when the previous answer came if that is later; it is sent when the limiter grants
      it; its answer comes latency_s later and is the first window of `answers` holding that
      time (200 when none does). Prints one JSON line per attempt: {"call", "due_s",
      "sent_s", "answered_s", "throttling", "fill_rate", "max_capacity", "measured_rate",
      "enabled"} (the limiter's state after the answer).
"""

import json
import math
import sys

import botocore.awsrequest
import botocore.exceptions
from botocore.retries import adaptive, bucket


class VirtualClock:
    """The only clock botocore's adaptive classes read (bucket.Clock's interface)."""

    def __init__(self):
        self.now = 0.0

    def current_time(self):
        return self.now

    def sleep(self, amount):
        self.now += amount


class VirtualCondition:
    """TokenBucket's condition variable, whose timed wait moves the virtual clock on."""

    def __init__(self, clock):
        self.clock = clock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def wait(self, timeout=None):
        # A real wait lasts at least its timeout and always lets time pass; a bare `+=` of
        # a timeout below the clock's float resolution would leave the clock where it was
        # and the loop waiting forever.
        self.clock.now = max(self.clock.now + timeout, math.nextafter(self.clock.now, math.inf))
        return False

    def notify(self, n=1):
        pass


class Events:
    """The client's event emitter, as far as register_retry_handler uses it."""

    def __init__(self):
        self.handlers = {}

    def register(self, name, handler):
        self.handlers[name] = handler


class Meta:
    def __init__(self):
        self.events = Events()


class Client:
    def __init__(self):
        self.meta = Meta()


def answer_at(answers, t):
    for a in answers:
        if a["from_s"] <= t < a["to_s"]:
            return a
    return {"status": 200, "code": None}


def needs_retry_kwargs(answer):
    """The keyword arguments botocore's endpoint emits needs-retry with (endpoint.py
    lines 361-368), for an answer without an operation model (so a 429 no modeled error
    claims is throttling, retries/standard.py lines 637-656)."""
    kwargs = {
        "endpoint": None,
        "operation": None,
        "attempts": 1,
        "request_dict": {"context": {}},
    }
    if "transport" in answer:
        kwargs["response"] = None
        kwargs["caught_exception"] = botocore.exceptions.ConnectionClosedError(
            endpoint_url="http://127.0.0.1/"
        )
        return kwargs
    http = botocore.awsrequest.AWSResponse("http://127.0.0.1/", answer["status"], {}, None)
    parsed = {"ResponseMetadata": {"HTTPStatusCode": answer["status"]}}
    if answer.get("code"):
        parsed["Error"] = {"Code": answer["code"], "Message": ""}
    kwargs["response"] = (http, parsed)
    kwargs["caught_exception"] = None
    return kwargs


def main(timeline):
    clock = VirtualClock()
    bucket.Clock = lambda: clock
    client = Client()
    limiter = adaptive.register_retry_handler(client)
    token_bucket = limiter._token_bucket
    token_bucket._new_fill_rate_condition = VirtualCondition(clock)
    before_send = client.meta.events.handlers["before-send"]
    needs_retry = client.meta.events.handlers["needs-retry"]
    detector = limiter._throttling_detector
    out = sys.stdout
    for i in range(timeline["calls"]):
        due = timeline["start_s"] + i * timeline["interval_s"]
        clock.now = max(clock.now, due)
        before_send(request=None)
        sent = clock.now
        clock.now = sent + timeline["latency_s"]
        answer = answer_at(timeline["answers"], clock.now)
        kwargs = needs_retry_kwargs(answer)
        throttling = detector.is_throttling_error(**kwargs)
        needs_retry(**kwargs)
        out.write(
            json.dumps(
                {
                    "call": i,
                    "due_s": due,
                    "sent_s": sent,
                    "answered_s": clock.now,
                    "throttling": throttling,
                    "fill_rate": token_bucket.max_rate,
                    "max_capacity": token_bucket.max_capacity,
                    "measured_rate": limiter._rate_clocker.measured_rate,
                    "enabled": limiter._enabled,
                }
            )
            + "\n"
        )


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
