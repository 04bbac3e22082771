"""The openai and anthropic SDKs for Python, as an application uses them, against a loopback
server.

Used by tests/suite/llm_sdk_conformance.rs to hold stormrig's `openai-python` and
`anthropic-python` presets against the real SDKs (pinned in requirements.txt). Every client
is made with the SDK's defaults (max_retries, timeouts, backoff): only the API key (a dummy)
and the base URL (127.0.0.1) are set. Nothing here leaves the loopback interface.

usage:
  llm_sdk_client.py calls SDK BASE_URL CALL[,CALL...]
      Makes one API call per CALL, all at once (one thread each, the clients made
      beforehand), with base URL BASE_URL/SDK/CALL/ so that the server tells the calls apart
      by path. Prints one JSON line per call: {"call": ..., "outcome": "ok" | "status 503" |
      "connection-error" | ..., "delays": [...]}, where `delays` are the waits the SDK
      decided before each retry, as its own retry log line reports them ("Retrying request
      ... in %f seconds", `_sleep_for_retry`).
  llm_sdk_client.py decide SDK CASES_JSON
      Asks the SDK's own retry functions, without any network: for each case
      {"name", "status", "headers"}, `_should_retry(response)` and the delay of the first
      retry, `_calculate_retry_timeout(remaining_retries=max_retries, ...)`, as the SDK's
      retry loop calls them. Prints one JSON line per case:
      {"name", "retry": bool, "delay_s": float, "now": time.time() when it was computed}.
"""

import json
import logging
import sys
import threading
import time

API_KEY = "sk-stormrig-loopback-test"


def make_client(sdk, base_url):
    if sdk == "openai":
        import openai

        return openai.OpenAI(api_key=API_KEY, base_url=base_url)
    if sdk == "anthropic":
        import anthropic

        return anthropic.Anthropic(api_key=API_KEY, base_url=base_url)
    raise SystemExit(f"unknown SDK {sdk!r}")


def call(sdk, client):
    """One inference call, as an application makes it (a POST with a JSON body)."""
    if sdk == "openai":
        return client.chat.completions.create(
            model="stormrig-test", messages=[{"role": "user", "content": "hi"}]
        )
    return client.messages.create(
        model="stormrig-test", max_tokens=1, messages=[{"role": "user", "content": "hi"}]
    )


def outcome_of(sdk, err):
    module = __import__(sdk)
    if isinstance(err, module.APIStatusError):
        return f"status {err.status_code}"
    if isinstance(err, module.APITimeoutError):
        return "timeout"
    if isinstance(err, module.APIConnectionError):
        return "connection-error"
    return f"error {type(err).__name__}: {err}"


class RetryLog(logging.Handler):
    """The delay of each `_sleep_for_retry`, by the thread (= call) that slept it. The SDKs
    log it at INFO: openai as (timeout, retry, max_retries), anthropic as (url, timeout)."""

    def __init__(self, sdk):
        super().__init__(logging.INFO)
        self.sdk = sdk
        self.delays = {}

    def emit(self, record):
        if not str(record.msg).startswith("Retrying request"):
            return
        delay = record.args[0] if self.sdk == "openai" else record.args[1]
        self.delays.setdefault(record.threadName, []).append(float(delay))


def calls(sdk, base, names):
    log = RetryLog(sdk)
    logger = logging.getLogger(sdk)
    logger.setLevel(logging.INFO)
    logger.addHandler(log)
    logger.propagate = False
    # Made before any call starts: building ~50 clients at once would hold the interpreter
    # while other calls' retries are due.
    clients = {n: make_client(sdk, f"{base}/{sdk}/{n}/") for n in names}
    results = {}

    def one(name):
        try:
            call(sdk, clients[name])
            results[name] = "ok"
        except Exception as err:  # the outcome is what the test compares
            results[name] = outcome_of(sdk, err)

    threads = [threading.Thread(target=one, args=(n,), name=n) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in names:
        line = {"call": name, "outcome": results[name], "delays": log.delays.get(name, [])}
        print(json.dumps(line), flush=True)


def decide(sdk, cases):
    module = __import__(sdk)
    # The current majors import httpx as `httpx2`; the previous ones as `httpx`.
    httpx = getattr(module._base_client, "httpx2", None) or module._base_client.httpx
    from importlib import import_module

    FinalRequestOptions = import_module(f"{sdk}._models").FinalRequestOptions
    client = make_client(sdk, "http://127.0.0.1:9/")
    options = FinalRequestOptions.construct(method="post", url="/x")
    max_retries = options.get_max_retries(client.max_retries)
    for case in cases:
        request = httpx.Request("POST", "http://127.0.0.1:9/x")
        response = httpx.Response(
            case["status"], headers=case["headers"], request=request
        )
        retry = bool(client._should_retry(response))
        delay = client._calculate_retry_timeout(max_retries, options, response.headers)
        print(
            json.dumps(
                {"name": case["name"], "retry": retry, "delay_s": delay, "now": time.time()}
            ),
            flush=True,
        )


def main():
    mode, sdk = sys.argv[1], sys.argv[2]
    if mode == "calls":
        calls(sdk, sys.argv[3].rstrip("/"), sys.argv[4].split(","))
    elif mode == "decide":
        decide(sdk, json.loads(sys.argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
