// axios with axios-retry's defaults (`axiosRetry(axios)`, nothing else set) against a loopback
// server.
//
// Used by tests/suite/axios_retry_conformance.rs to hold stormrig's `axios-retry` preset
// against the real library (axios-retry and axios pinned in package-lock.json). Only the
// instance's `proxy: false` is set, so that an HTTP_PROXY in the environment cannot send a
// request anywhere but 127.0.0.1.
//
// usage: node axios_retry_client.js calls METHOD BASE_URL CALL[,CALL...]
//   Makes one METHOD request per CALL, all at once, to BASE_URL/axios/CALL/v1/call, so that
//   the server tells the calls apart by path. Prints one JSON line per call: {"call": ...,
//   "outcome": "ok" | "status 503" | "connection-error" | ..., "delays": [seconds waited
//   before each retry, as axios-retry's own `retryAfter` gives them to its default
//   `retryDelay` (`noDelay`)]}.
"use strict";
const axios = require("axios");
const axiosRetry = require("axios-retry").default;
const { retryAfter } = require("axios-retry");

async function oneCall(method, base, name) {
  const delays = [];
  const client = axios.create({ proxy: false });
  // onRetry is a callback only: it changes nothing of what is retried or when.
  axiosRetry(client, { onRetry: (_count, error) => delays.push(retryAfter(error) / 1000) });
  let outcome = "ok";
  try {
    await client.request({
      method,
      url: `${base}/axios/${name}/v1/call`,
      data: method === "POST" ? "{}" : undefined,
    });
  } catch (err) {
    if (err.response) outcome = `status ${err.response.status}`;
    else if (err.code === "ECONNRESET") outcome = "connection-error";
    else outcome = `error ${err.code || err.message}`;
  }
  return { call: name, outcome, delays };
}

async function main() {
  const [mode, method, base, calls] = process.argv.slice(2);
  if (mode !== "calls" || !method || !base || !calls) {
    console.error("usage: node axios_retry_client.js calls METHOD BASE_URL CALL[,CALL...]");
    process.exit(2);
  }
  const results = await Promise.all(calls.split(",").map((c) => oneCall(method, base, c)));
  for (const r of results) console.log(JSON.stringify(r));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
