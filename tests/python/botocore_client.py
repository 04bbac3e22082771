"""botocore (the AWS SDK for Python's core) as an application uses it, against a loopback
server.

Used by tests/suite/aws_sdk_conformance.rs to hold stormrig's `aws-standard` preset
against the real SDK (pinned in requirements.txt), and by
tests/suite/aws_classic_conformance.rs to hold `aws-standard-classic` and `aws-legacy`
against botocore 1.43 (botocore-1.43.txt). One client in the given retry mode with its
defaults (standard: 3 attempts, the retry quota of 500, full-jitter backoff; legacy: 5
attempts, no quota), calling Lambda's
ListFunctions (a REST-JSON operation, whose error codes travel in `x-amzn-errortype` as
stormrig's target sends them) one call after another, so that the calls share the quota
as an application's calls do. Only the endpoint (127.0.0.1), dummy credentials and a
region are set; instance metadata is switched off, so nothing here leaves the loopback
interface.

usage:
  botocore_client.py calls BASE_URL N [MODE]
      Makes N calls in sequence, in retry mode MODE (standard, the default, or legacy).
      Prints one JSON line per call: {"call": i (from 1), "outcome": "ok" | "status 503" |
      "connection-error" | ..., "delays": [...], "quota": the retry quota's available
      capacity after the call, null in legacy mode}, where `delays` are the waits botocore
      decided before each retry, as its own debug line reports them (standard: "Retry
      needed, retrying request after delay of: %s"; legacy: "Retry needed, action of: %s").
  botocore_client.py draws N [MODE]
      Calls botocore's own backoff function N times for each retry of a call (standard:
      `ExponentialBackoff.delay_amount` with a retry context of that attempt, an answer
      that is not throttling; legacy: the exponential delay function botocore builds from
      its `_retry` data). Prints one JSON line per retry k (from 0): {"k": k, "delays":
      [N delays in seconds]}. One call gives a handful of delays; this gives enough of them
      that a distribution test is decided by the SDK's function, not by one run's luck.
"""

import json
import logging
import os
import sys

os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
# AWS_NEW_RETRIES_2026 is botocore 1.43's opt-in to the 2026 rules: left out, 1.43 keeps
# the classic standard mode.
for key in (
    "AWS_PROFILE",
    "AWS_RETRY_MODE",
    "AWS_MAX_ATTEMPTS",
    "AWS_ENDPOINT_URL",
    "AWS_NEW_RETRIES_2026",
):
    os.environ.pop(key, None)

import botocore.config  # noqa: E402
import botocore.exceptions  # noqa: E402
import botocore.retries.quota  # noqa: E402
import botocore.retries.standard  # noqa: E402
import botocore.retryhandler  # noqa: E402
import botocore.session  # noqa: E402

QUOTAS = []
_init = botocore.retries.quota.RetryQuota.__init__


def _recording_init(self, *args, **kwargs):
    """Keeps each quota botocore makes, to read its level after every call."""
    _init(self, *args, **kwargs)
    QUOTAS.append(self)


botocore.retries.quota.RetryQuota.__init__ = _recording_init


class Delays(logging.Handler):
    """Collects the delays botocore's standard retry handler decides."""

    PREFIXES = (
        "Retry needed, retrying request after delay of: ",
        "Retry needed, action of: ",
    )

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen = []

    def emit(self, record):
        text = record.getMessage()
        for prefix in self.PREFIXES:
            if text.startswith(prefix):
                self.seen.append(float(text[len(prefix):]))


def outcome_of(err):
    if isinstance(err, botocore.exceptions.ClientError):
        return f"status {err.response['ResponseMetadata']['HTTPStatusCode']}"
    if isinstance(err, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError)):
        return "connection-error"
    return f"error {type(err).__name__}: {err}"


def calls(base_url, n, mode):
    delays = Delays()
    for name in ("botocore.retries.standard", "botocore.retryhandler"):
        log = logging.getLogger(name)
        log.setLevel(logging.DEBUG)
        log.addHandler(delays)
    client = botocore.session.get_session().create_client(
        "lambda",
        region_name="us-east-1",
        endpoint_url=base_url,
        aws_access_key_id="AKIDSTORMRIGLOOPBACK",
        aws_secret_access_key="stormrig-loopback-test",
        config=botocore.config.Config(retries={"mode": mode}),
    )
    quotas = 1 if mode == "standard" else 0
    assert len(QUOTAS) == quotas, f"expected {quotas} retry quota, botocore made {len(QUOTAS)}"
    for i in range(1, n + 1):
        delays.seen = []
        try:
            client.list_functions()
            outcome = "ok"
        except Exception as err:  # the outcome is what is compared
            outcome = outcome_of(err)
        print(
            json.dumps(
                {
                    "call": i,
                    "outcome": outcome,
                    "delays": delays.seen,
                    "quota": QUOTAS[0].available_capacity if QUOTAS else None,
                }
            ),
            flush=True,
        )


def draws(n, mode):
    if mode == "standard":
        backoff = botocore.retries.standard.ExponentialBackoff()
        context = botocore.retries.standard.RetryContext
        retries = 2  # standard mode's default of 3 attempts

        def delay(attempt):
            return backoff.delay_amount(context(attempt_number=attempt))

    else:
        config = botocore.session.get_session().get_data("_retry")["retry"]["__default__"]
        spec = dict(config["delay"])
        assert spec.pop("type") == "exponential", spec
        delay_function = botocore.retryhandler.create_exponential_delay_function(**spec)
        retries = config["max_attempts"] - 1

        def delay(attempt):
            return delay_function(attempts=attempt)

    for k in range(retries):
        print(json.dumps({"k": k, "delays": [delay(k + 1) for _ in range(n)]}), flush=True)


def main(argv):
    if len(argv) in (3, 4) and argv[1] == "draws":
        mode = argv[3] if len(argv) == 4 else "standard"
        if mode not in ("standard", "legacy"):
            raise SystemExit(f"unknown retry mode {mode!r}")
        draws(int(argv[2]), mode)
        return
    if len(argv) in (4, 5) and argv[1] == "calls":
        mode = argv[4] if len(argv) == 5 else "standard"
        if mode not in ("standard", "legacy"):
            raise SystemExit(f"unknown retry mode {mode!r}")
        calls(argv[2], int(argv[3]), mode)
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
