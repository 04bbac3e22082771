// Drives a Toxiproxy API with the real Node client library (toxiproxy-node-client, pinned in
// package-lock.json): proxies created, toxics added, listed, updated and removed, a proxy
// disabled, reset and populated; between steps, one GET through the proxy, timed.
// Prints one JSON object per step on stdout. Usage: node toxiproxy_client.js API UPSTREAM
"use strict";
const { Toxiproxy } = require("toxiproxy-node-client");

const [api, upstream] = process.argv.slice(2);
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));

// One GET through the proxy: its status and elapsed milliseconds, or the error's name.
async function get(listen) {
  const started = performance.now();
  try {
    const res = await fetch(`http://${listen}/`, { signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  } catch (e) {
    return { error: String(e.cause && e.cause.code ? e.cause.code : e.name) };
  }
}

// The status a client call failed with (the library puts it in the message), or null.
async function failure(call) {
  try {
    await call();
    return null;
  } catch (e) {
    const m = /status code (\d+)/.exec(e.message);
    return m ? Number(m[1]) : e.message;
  }
}

async function main() {
  const t = new Toxiproxy(api);
  say("version", { version: await t.getVersion() });

  const proxy = await t.createProxy({ name: "svc", listen: "127.0.0.1:0", upstream });
  say("created", { name: proxy.name, listen: proxy.listen, enabled: proxy.enabled });
  say("plain", await get(proxy.listen));

  const toxic = await proxy.addToxic({
    name: "slow", type: "latency", stream: "downstream", toxicity: 1,
    attributes: { latency: 300, jitter: 0 },
  });
  say("added", { toxic: toxic.toJson() });
  const listed = (await t.getApi().get(`${api}/proxies/svc/toxics`)).data;
  say("listed", { names: listed.map((x) => x.name) });
  say("slowed", await get(proxy.listen));

  const shown = await proxy.getToxic("slow");
  const updated = await shown.update({ attributes: { latency: 600 } });
  say("updated", { latency: updated.attributes.latency, jitter: updated.attributes.jitter });
  say("slower", await get(proxy.listen));

  await toxic.remove();
  const after = (await t.getApi().get(`${api}/proxies/svc/toxics`)).data;
  say("removed", { names: after.map((x) => x.name) });
  say("plain_again", await get(proxy.listen));

  const off = await proxy.update({ enabled: false });
  say("disabled", { enabled: off.enabled, get: await get(proxy.listen) });
  await t.reset();
  const on = await t.get("svc");
  say("reset", { enabled: on.enabled, listen: on.listen, get: await get(on.listen) });

  const populated = await t.populate([{ name: "other", listen: "127.0.0.1:0", upstream }]);
  say("populated", { names: Object.keys(populated), get: await get(populated.other.listen) });
  say("refusals", {
    duplicate: await failure(() => t.createProxy({ name: "svc", listen: "127.0.0.1:0", upstream })),
    limit_data: await failure(() => on.addToxic({ type: "limit_data", attributes: { bytes: 10 } })),
    missing: await failure(() => t.get("nope")),
  });

  await on.remove();
  say("all", { names: Object.keys(await t.getAll()) });
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
