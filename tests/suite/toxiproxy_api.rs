//! The Toxiproxy-compatible API driven by Toxiproxy's own Node client (toxiproxy-node-client
//! 4.1.0, pinned): named proxies created, disabled, reset, populated and removed, a latency
//! toxic added, listed, updated and removed, and every request through the proxies counted by
//! the built-in target behind them. Also who may drive the API, and bad input refused by
//! field. Loopback only, bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{json, Value};
use stormrig::server;
use stormrig::server::toxiproxy::{self, Options};

use crate::support::{node, two_worker_runtime};

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn step<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["step"] == name)
        .unwrap_or_else(|| panic!("the client printed no step {name:?}: {lines:#?}"))
}

fn ms(v: &Value) -> f64 {
    assert_eq!(v["status"], 200, "{v}");
    v["ms"].as_f64().unwrap()
}

#[test]
fn toxiproxys_node_client_drives_named_proxies_and_a_latency_toxic() {
    let rt = two_worker_runtime();
    let (target, api) = rt.block_on(async {
        let target = server::start(
            local(),
            crate::support::instant_target(),
            tokio::time::Instant::now(),
        )
        .await
        .unwrap();
        let api = toxiproxy::serve(local(), Options::default()).await.unwrap();
        (target, api)
    });
    let lines = node::json_lines(
        "toxiproxy_client.js",
        &[format!("http://{}", api.addr()), target.addr().to_string()],
    );
    for l in &lines {
        eprintln!("{l}");
    }

    assert!(step(&lines, "version")["version"]
        .as_str()
        .unwrap()
        .contains("stormrig"));
    let created = step(&lines, "created");
    assert_eq!(created["enabled"], true);
    let listen: SocketAddr = created["listen"].as_str().unwrap().parse().unwrap();
    assert!(listen.ip().is_loopback() && listen.port() != 0, "{created}");

    // The toxic as the client sent it, shown back in Toxiproxy's form, and listed.
    assert_eq!(
        step(&lines, "added")["toxic"],
        json!({"name": "slow", "type": "latency", "stream": "downstream", "toxicity": 1,
               "attributes": {"latency": 300, "jitter": 0}})
    );
    assert_eq!(step(&lines, "listed")["names"], json!(["slow"]));
    assert_eq!(
        step(&lines, "updated"),
        &json!({"step": "updated", "latency": 600, "jitter": 0})
    );
    assert_eq!(step(&lines, "removed")["names"], json!([]));

    // The toxic delays what goes through the proxy by at least its latency, and only while
    // it is there.
    let plain = ms(step(&lines, "plain"));
    let slowed = ms(step(&lines, "slowed"));
    let slower = ms(step(&lines, "slower"));
    let again = ms(step(&lines, "plain_again"));
    assert!(slowed >= 300.0, "latency 300 ms, measured {slowed:.1} ms");
    assert!(slower >= 600.0, "latency 600 ms, measured {slower:.1} ms");
    assert!(
        plain < 300.0 && again < 300.0,
        "no toxic: {plain:.1} and {again:.1} ms"
    );

    // Disabled: nothing listens; reset: enabled again, on the same address.
    let disabled = step(&lines, "disabled");
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["get"]["error"], "ECONNREFUSED", "{disabled}");
    let reset = step(&lines, "reset");
    assert_eq!(reset["enabled"], true);
    assert_eq!(reset["listen"], created["listen"]);
    assert_eq!(reset["get"]["status"], 200);
    let populated = step(&lines, "populated");
    assert_eq!(populated["names"], json!(["other"]));
    assert_eq!(populated["get"]["status"], 200);
    assert_eq!(
        step(&lines, "refusals"),
        &json!({"step": "refusals", "duplicate": 409, "limit_data": 400, "missing": 404})
    );
    assert_eq!(step(&lines, "all")["names"], json!(["other"]));

    // Every answered GET reached the target once; the refused one did not.
    let answered = lines
        .iter()
        .flat_map(|l| [&l["status"], &l["get"]["status"]])
        .filter(|s| **s == 200)
        .count() as u64;
    assert_eq!(answered, 6);
    rt.block_on(async {
        api.shutdown().await;
        let stats = target.shutdown().await;
        assert_eq!(stats.arrivals, answered);
    });
}

/// One raw HTTP/1.1 request to the API; its status and body.
fn raw(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "{head}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn only_a_non_browser_client_on_loopback_drives_the_api_and_bad_proxies_are_refused() {
    let rt = two_worker_runtime();
    let api = rt
        .block_on(toxiproxy::serve(local(), Options::default()))
        .unwrap();
    let a = api.addr();
    let host = format!("Host: 127.0.0.1:{}", a.port());
    let get = |extra: &str| raw(a, &format!("GET /proxies HTTP/1.1\r\n{host}{extra}"), "");
    assert_eq!(get(""), (200, "{}".to_string()));
    assert_eq!(get("\r\nUser-Agent: Mozilla/5.0").0, 403);
    assert_eq!(get("\r\nOrigin: http://example.com").0, 403);
    let rebound = raw(
        a,
        "GET /proxies HTTP/1.1\r\nHost: attacker.example:8474",
        "",
    );
    assert_eq!(rebound.0, 403, "{rebound:?}");

    // Refused by field before anything listens or connects: a listen address off loopback,
    // an upstream off loopback (checked, never connected to), a missing upstream.
    let create = |body: &str| raw(a, &format!("POST /proxies HTTP/1.1\r\n{host}"), body);
    for (body, status, needle) in [
        (
            r#"{"name":"x","listen":"0.0.0.0:0","upstream":"127.0.0.1:9"}"#,
            400,
            "loopback",
        ),
        (
            r#"{"name":"x","upstream":"192.0.2.1:80"}"#,
            400,
            "not loopback",
        ),
        (r#"{"name":"x"}"#, 400, "missing required field: upstream"),
        (
            r#"{"upstream":"127.0.0.1:9"}"#,
            400,
            "missing required field: name",
        ),
        (r#"[1]"#, 400, "bad request body"),
        ("{", 400, "bad request body"),
    ] {
        let (st, text) = create(body);
        assert_eq!(st, status, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["status"], status);
        assert!(
            v["error"].as_str().unwrap().contains(needle),
            "{body}: {text}"
        );
    }
    assert_eq!(get(""), (200, "{}".to_string()));
    assert_eq!(
        raw(
            a,
            &format!("GET /proxies/none/toxics HTTP/1.1\r\n{host}"),
            ""
        )
        .0,
        404
    );
    rt.block_on(api.shutdown());
}
