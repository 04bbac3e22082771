"""google-api-core's retry decorator as Google's client libraries for Python use it, against
a loopback server.

Used by tests/suite/google_api_core_conformance.rs to hold stormrig's `google-api-core`
preset against the real library (pinned in requirements.txt). Each call is one HTTP request
made with `requests` and turned into the library's exception by
`google.api_core.exceptions.from_http_response`, as the client libraries do on an error
answer, wrapped in `google.api_core.retry.Retry()` with its defaults. Nothing here leaves
the loopback interface.

usage:
  google_api_core_client.py calls BASE_URL CALL[,CALL...]
      Makes one call per CALL, all at once (one thread each), to BASE_URL/google/CALL/v1/call
      so that the server tells the calls apart by path. Prints one JSON line per call:
      {"call": ..., "outcome": "ok" | "status 503" | "connection-error" | ..., "delays": [...]},
      where `delays` are the waits the decorator drew before each retry (its
      `exponential_sleep_generator`, recorded as it yields).
"""

import json
import sys
import threading

import requests
from google.api_core import exceptions
from google.api_core import retry as retry_mod
from google.api_core.retry import retry_unary

DRAWN = threading.local()
_generator = retry_unary.exponential_sleep_generator


def _recording_generator(*args, **kwargs):
    """The library's own generator; each value it yields is kept for the calling thread."""
    for delay in _generator(*args, **kwargs):
        DRAWN.delays.append(delay)
        yield delay


retry_unary.exponential_sleep_generator = _recording_generator


def outcome_of(err):
    if isinstance(err, exceptions.GoogleAPICallError) and err.code is not None:
        return f"status {int(err.code)}"
    if isinstance(err, requests.exceptions.ConnectionError):
        return "connection-error"
    return f"error {type(err).__name__}: {err}"


def one_call(base_url, name, results):
    DRAWN.delays = []
    session = requests.Session()
    url = f"{base_url}/google/{name}/v1/call"

    @retry_mod.Retry()
    def call():
        response = session.post(url, json={})
        if response.status_code >= 400:
            raise exceptions.from_http_response(response)
        return response

    try:
        call()
        outcome = "ok"
    except Exception as err:  # the outcome is what is compared
        outcome = outcome_of(err)
    results[name] = {"call": name, "outcome": outcome, "delays": list(DRAWN.delays)}


def calls(base_url, names):
    results = {}
    threads = [
        threading.Thread(target=one_call, args=(base_url, n, results)) for n in names
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in names:
        print(json.dumps(results[n]), flush=True)


def main(argv):
    if len(argv) == 4 and argv[1] == "calls":
        calls(argv[2], argv[3].split(","))
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
