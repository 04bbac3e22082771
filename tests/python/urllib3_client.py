"""urllib3's default retries (`Retry.DEFAULT`, what `PoolManager().request` does with no
`retries` argument) against a loopback server.

Used by tests/suite/urllib3_conformance.rs to hold stormrig's `urllib3` preset against the
real library (pinned in requirements.txt). Nothing here leaves the loopback interface.

usage:
  urllib3_client.py calls METHOD BASE_URL CALL[,CALL...]
      Makes one METHOD request per CALL, all at once (one thread and one PoolManager
      each), to BASE_URL/urllib3/CALL/v1/call, so that the server tells the calls apart by
      path. Prints one JSON line per call:
      {"call": ..., "outcome": "ok" | "status 503" | "connection-error" | ..., "delays": [...]},
      where `delays` are the waits urllib3 slept before its retries (`time.sleep` as
      `urllib3.util.retry` calls it; a retry it sends at once sleeps nothing).
"""

import json
import sys
import threading
import time

import urllib3
from urllib3.exceptions import MaxRetryError, ProtocolError
from urllib3.util import retry as retry_mod

SLEPT = threading.local()


class _RecordingTime:
    """`time` as urllib3's retry module sees it: each sleep is kept for the calling thread."""

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds):
        SLEPT.delays.append(seconds)
        time.sleep(seconds)


retry_mod.time = _RecordingTime()


def one_call(method, base_url, name, results):
    SLEPT.delays = []
    http = urllib3.PoolManager()
    url = f"{base_url}/urllib3/{name}/v1/call"
    try:
        body = b"{}" if method == "POST" else None
        response = http.request(method, url, body=body)
        outcome = "ok" if response.status < 400 else f"status {response.status}"
    except (MaxRetryError, ProtocolError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, ProtocolError) or isinstance(err, ProtocolError):
            outcome = "connection-error"
        else:
            outcome = f"error {type(reason).__name__}: {reason}"
    results[name] = {"call": name, "outcome": outcome, "delays": list(SLEPT.delays)}


def calls(method, base_url, names):
    results = {}
    threads = [
        threading.Thread(target=one_call, args=(method, base_url, n, results))
        for n in names
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in names:
        print(json.dumps(results[n]), flush=True)


def main(argv):
    if len(argv) == 5 and argv[1] == "calls":
        calls(argv[2], argv[3], argv[4].split(","))
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
