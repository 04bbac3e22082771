// The AWS SDK for JavaScript v3's retry loop as a client runs it, against a loopback server.
//
// Used by tests/suite/aws_js_v3_conformance.rs to hold stormrig's `aws-js-v3` preset against
// the real library (pinned in package-lock.json): the retry strategy a client builds when
// nothing about retries is configured (`resolveRetryConfig`, which makes @smithy/util-retry's
// `StandardRetryStrategy`), driven by the SDK's own retry middleware (`retryMiddleware`, the
// loop of acquireInitialRetryToken / refreshRetryTokenForRetry / recordSuccess), one call
// after another, so that the calls share the retry quota as an application's calls through
// one client do. Below the middleware, each attempt is one GET over node:http on a fresh
// connection; a non-2xx answer is thrown as an AWS client's REST-JSON deserializer throws
// it (error name from `x-amzn-errortype`, else the status; `$metadata.httpStatusCode`;
// `$response` with the answer's headers), and a socket error as node:http raises it
// (`code` ECONNRESET for a reset). Only 127.0.0.1 is contacted.
//
// usage: node aws_js_v3_client.js calls BASE_URL N
//   Prints one JSON line per call: {"call": i (from 1), "outcome": "ok" | "status 503" |
//   "connection-error" | ..., "delays": [seconds the strategy waited before each retry],
//   "quota": the strategy's capacity after the call}.
// usage: node aws_js_v3_client.js draws N
//   Calls the strategy's own backoff (the `retryBackoffStrategy` of the strategy `calls`
//   uses, its delay base set as `refreshRetryTokenForRetry` sets it
//   for an error that is not throttling) N times for each retry k of a call with the default
//   attempts. Prints one JSON line per k: {"k": k, "delays": [N delays in seconds]}: enough
//   of them that a distribution test is decided by the SDK's function, not one run's luck.
"use strict";
const http = require("node:http");
const { StandardRetryStrategy } = require("@smithy/util-retry");
const { resolveRetryConfig, retryMiddleware } = require("@smithy/middleware-retry");
const { HttpRequest, HttpResponse } = require("@smithy/core/protocols");

for (const key of ["AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_CONFIG_FILE", "AWS_PROFILE"]) {
  delete process.env[key];
}

// One attempt: the answer's status, headers and body, or node:http's error.
function send(request) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: request.hostname,
        port: request.port,
        method: request.method,
        path: request.path,
        headers: request.headers,
        agent: false,
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

// What an AWS client's deserializer throws for a non-2xx answer (smithy-client
// `throwDefaultError`: name = the error code, else the status; the deserializer middleware
// attaches the raw answer as `$response`).
function serviceError(answer) {
  const raw = answer.headers["x-amzn-errortype"];
  // sanitizeErrorCode: drop what follows ':' and what precedes '#'.
  const code = raw ? raw.split(":")[0].split("#").pop() : undefined;
  const err = new Error(answer.body.toString() || "error");
  err.name = code || String(answer.status);
  err.$fault = answer.status >= 500 ? "server" : "client";
  err.$metadata = { httpStatusCode: answer.status };
  err.$response = new HttpResponse({ statusCode: answer.status, headers: answer.headers, body: answer.body });
  return err;
}

function outcomeOf(err) {
  if (err.$metadata && err.$metadata.httpStatusCode) return `status ${err.$metadata.httpStatusCode}`;
  if (["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT"].includes(err.code)) return "connection-error";
  return `error ${err.name}: ${err.code || err.message}`;
}

async function calls(base, n) {
  const url = new URL(base);
  const config = resolveRetryConfig({});
  const strategy = await config.retryStrategy();
  if (!(strategy instanceof StandardRetryStrategy)) {
    throw new Error(`the default strategy is ${strategy.constructor.name}, not util-retry's StandardRetryStrategy`);
  }
  let delays = [];
  const refresh = strategy.refreshRetryTokenForRetry.bind(strategy);
  strategy.refreshRetryTokenForRetry = async (token, info) => {
    const next = await refresh(token, info);
    // The strategy itself waits this long before it hands the token back.
    delays.push(next.$retryLog.acquisitionDelay / 1000);
    return next;
  };
  const next = async (args) => {
    const answer = await send(args.request);
    if (answer.status >= 200 && answer.status < 300) {
      const response = new HttpResponse({ statusCode: answer.status, headers: answer.headers, body: answer.body });
      return { response, output: { $metadata: { httpStatusCode: answer.status } } };
    }
    throw serviceError(answer);
  };
  const handler = retryMiddleware(config)(next, {});
  for (let i = 1; i <= n; i++) {
    delays = [];
    const request = new HttpRequest({
      protocol: "http:",
      hostname: url.hostname,
      port: Number(url.port),
      method: "GET",
      path: "/2015-03-31/functions/",
      headers: { host: url.host },
    });
    let outcome = "ok";
    try {
      await handler({ input: {}, request });
    } catch (err) {
      outcome = outcomeOf(err);
    }
    console.log(JSON.stringify({ call: i, outcome, delays, quota: strategy.getCapacity() }));
  }
}

async function draws(n) {
  const strategy = await resolveRetryConfig({}).retryStrategy();
  const backoff = strategy.retryBackoffStrategy;
  const retries = (await strategy.getMaxAttempts()) - 1;
  for (let k = 0; k < retries; k++) {
    backoff.setDelayBase(strategy.baseDelay);
    const delays = Array.from({ length: n }, () => backoff.computeNextBackoffDelay(k) / 1000);
    console.log(JSON.stringify({ k, delays }));
  }
}

const [mode, base, n] = process.argv.slice(2);
let run;
if (mode === "draws" && base) {
  run = draws(Number(base));
} else if (mode === "calls" && base && n) {
  run = calls(base, Number(n));
} else {
  console.error("usage: node aws_js_v3_client.js calls BASE_URL N | draws N");
  process.exit(2);
}
run.catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
