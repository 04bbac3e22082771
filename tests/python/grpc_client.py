"""The gRPC project's own client (grpcio, C core) making sequential unary calls.

Used by tests/suite/grpc_real_client.rs to hold stormrig's `grpc` preset against the real
retry policy and retry throttling of gRFC A6. The service config below is the preset's:
maxAttempts 4, initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2, retryable
UNAVAILABLE, retryThrottling maxTokens 10 / tokenRatio 0.1. Calls are generic (no generated
code): raw bytes in, raw bytes out. Each call carries its id in `x-stormrig-request`
metadata, so that the target counts arrivals per call.

usage: grpc_client.py HOST:PORT FIRST_ID SERVICE METHOD[,METHOD...]
prints one JSON line per call: {"id": ..., "method": ..., "code": "OK" | "UNAVAILABLE" | ...}
"""

import json
import sys

import grpc

SERVICE_CONFIG = {
    "methodConfig": [
        {
            "name": [{}],
            "retryPolicy": {
                "maxAttempts": 4,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }
    ],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
}


def main():
    target, first_id, service, methods = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    options = [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(SERVICE_CONFIG)),
    ]
    with grpc.insecure_channel(target, options=options) as channel:
        for i, method in enumerate(methods.split(",")):
            call = channel.unary_unary(f"/{service}/{method}")
            call_id = first_id + i
            try:
                call(b"", metadata=[("x-stormrig-request", str(call_id))], timeout=30)
                code = "OK"
            except grpc.RpcError as e:
                code = e.code().name
            print(json.dumps({"id": call_id, "method": method, "code": code}), flush=True)


if __name__ == "__main__":
    main()
