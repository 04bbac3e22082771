"""The gRPC project's own server (grpcio, C core) answering any unary method, counting calls.

Used by tests/suite/grpc_proxy.rs as the real gRPC service behind stormrig's fault proxy
(and behind nginx's grpc_pass). Generic (no generated code): every unary method answers an
message `ok` (2 bytes), except by name: `Unavailable` fails the call UNAVAILABLE with
`grpc-retry-pushback-ms: 300` in its trailing metadata (a status the server itself sets, so
that the test sees the upstream's own status relayed), `Slow` answers after 2 s, and
`Stream` is a server-streaming method answering two messages. Calls are counted per
`x-stormrig-config` metadata value, with how many carried a deadline (`grpc-timeout`).

usage: grpc_server.py
prints {"port": N} once listening on 127.0.0.1:N; then, for each line `counts` read on
stdin, one JSON line {"CONFIG": {"calls": n, "deadlines": d, "unavailable": u}, ...};
exits at the end of stdin.
"""

import json
import sys
import threading
import time
from concurrent import futures

import grpc

COUNTS = {}
LOCK = threading.Lock()


def count(context, key):
    config = dict(context.invocation_metadata()).get("x-stormrig-config", "")
    with LOCK:
        c = COUNTS.setdefault(config, {"calls": 0, "deadlines": 0, "unavailable": 0})
        c[key] += 1
        # Without a deadline grpcio reports the time left to an infinite one (~292 years).
        left = context.time_remaining()
        if key == "calls" and left is not None and left < 86400 * 365:
            c["deadlines"] += 1


def answer(method):
    def handle(_request, context):
        count(context, "calls")
        if method.endswith("/Unavailable"):
            count(context, "unavailable")
            context.set_trailing_metadata([("grpc-retry-pushback-ms", "300")])
            context.abort(grpc.StatusCode.UNAVAILABLE, "grpc_server.py: Unavailable")
        if method.endswith("/Slow"):
            time.sleep(2)
        return b"ok"

    return handle


def stream(_request, context):
    count(context, "calls")
    yield b"one"
    yield b"two"


class AnyUnary(grpc.GenericRpcHandler):
    def service(self, handler_call_details):
        if handler_call_details.method.endswith("/Stream"):
            return grpc.unary_stream_rpc_method_handler(stream)
        return grpc.unary_unary_rpc_method_handler(answer(handler_call_details.method))


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((AnyUnary(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"port": port}), flush=True)
    for line in sys.stdin:
        if line.strip() == "counts":
            with LOCK:
                print(json.dumps(COUNTS), flush=True)
    server.stop(grace=None)


if __name__ == "__main__":
    main()
