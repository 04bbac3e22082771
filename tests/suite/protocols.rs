//! HTTPS, HTTP/2 in clear and over TLS, on loopback: every protocol keeps the exact-count
//! property (client attempts equal target arrivals), HTTP/2 resets are their own outcome,
//! and a certificate the client does not trust is the `tls-handshake` outcome, counted as
//! connect-level (nothing reached the server), and a run where every handshake failed
//! exits 3 with the reason; the protocol fields are checked before any load.

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::nginx::Nginx;
use crate::support::process::{bin, tmp_dir, watch, write};
use crate::support::{self, config_named};
use stormrig::live;
use stormrig::metrics::ConfigSummary;
use stormrig::scenario::{Protocol, ServiceModel};
use stormrig::server::{self, Listen, TargetConfig, TargetHandle};

fn run_text(text: &str) -> live::LiveOutput {
    support::run_live(&support::plan_of(text), false)
}

/// 100 req/s for 2 s, 503 and resets on a third of the attempts each in the second half.
fn scenario_with(target: &str) -> String {
    format!(
        r#"
name = "protocols"
seed = 3
duration = "2s"
drain = "3s"

[load]
kind = "constant"
rate = 100

[target]
{target}

[[faults]]
kind = "status"
status = 503
at = "1s"
for = "1s"
probability = 0.3

[[faults]]
kind = "reset"
at = "1s"
for = "1s"
probability = 0.3

[[configs]]
preset = "no-retry"

[[configs]]
name = "retry-all"
max_attempts = 3
backoff = {{ kind = "constant", delay = "1ms" }}
retry_on = {{ statuses = [503], transport = ["reset", "stream-reset", "goaway"] }}
"#
    )
}

fn outcome(c: &ConfigSummary, label: &str) -> u64 {
    c.attempts_by_outcome.get(label).copied().unwrap_or(0)
}

fn assert_exact(out: &live::LiveOutput) {
    for c in &out.result.configs {
        assert!(c.attempts >= 200, "{}: {} attempts", c.name, c.attempts);
        assert_eq!(
            c.attempts, c.downstream_arrivals,
            "{}: client attempts equal target arrivals",
            c.name
        );
    }
}

#[test]
fn builtin_target_over_tls_h2_and_h2c_keeps_exact_counts() {
    for (target, h2) in [
        ("builtin = \"default\"\ntls = true", false),
        ("builtin = \"default\"\ntls = true\nprotocol = \"h2\"", true),
        ("builtin = \"default\"\nprotocol = \"h2c\"", true),
    ] {
        let out = run_text(&scenario_with(target));
        assert_exact(&out);
        assert!(out.tls_failure.is_none(), "{target}: {:?}", out.tls_failure);
        // HTTP/2 multiplexes: one connection carries a config's attempts (a reset fault
        // resets a stream, not the connection).
        if h2 {
            assert_eq!(out.connections, vec![1, 1], "{target}");
        } else {
            assert!(
                out.connections.iter().all(|&n| n > 1),
                "{target}: {:?}",
                out.connections
            );
        }
        let no_retry = config_named(&out.result.configs, "no-retry");
        let retry = config_named(&out.result.configs, "retry-all");
        // A reset fault closes the HTTP/1.1 connection, but only the stream over HTTP/2.
        if h2 {
            assert!(
                outcome(no_retry, "stream-reset") > 0,
                "{target}: {no_retry:?}"
            );
            // summary.json says it per config, beside the streams per connection.
            let conn = no_retry.connections.as_ref().unwrap();
            assert_eq!(conn.stream_resets, outcome(no_retry, "stream-reset"));
            assert_eq!(
                (conn.opened, conn.attempts_per_connection),
                (1, no_retry.attempts as f64)
            );
        } else {
            assert_eq!(outcome(no_retry, "stream-reset"), 0, "{target}");
        }
        // Retried where the config lists them, so the retrying config sends more.
        assert!(retry.attempts > no_retry.attempts, "{target}");
        assert_eq!(outcome(no_retry, "tls-handshake"), 0);
    }
}

/// stormrig's built-in target serving TLS with a fresh certificate, standing for a real
/// HTTPS server; its PEM is returned for a `ca_file`.
async fn tls_server(protocol: Protocol) -> (TargetHandle, String) {
    let made = stormrig::tls::self_signed(protocol).unwrap();
    let cfg = TargetConfig {
        model: ServiceModel::default(),
        faults: Vec::new(),
        seed: 1,
        dedup: None,
    };
    let listen = Listen {
        protocol,
        tls: Some(made.server),
    };
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let h = server::start_listening(local, cfg, tokio::time::Instant::now(), listen)
        .await
        .unwrap();
    (h, made.pem)
}

fn url_scenario(port: u16, extra: &str) -> String {
    scenario_with(&format!("url = \"https://localhost:{port}\"\n{extra}"))
}

#[test]
fn https_url_targets_verify_the_certificate_and_a_wrong_one_is_a_connect_level_outcome() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tmp_dir("protocols-https");
    for protocol in [Protocol::Http1, Protocol::H2] {
        let (server, pem) = rt.block_on(tls_server(protocol));
        let port = server.addr().port();
        let ca = write(&dir, "ca.pem", &pem);
        let proto = format!("protocol = \"{}\"", protocol.as_str());

        // Trusted through ca_file: every forward reached the server.
        let ok = run_text(&url_scenario(
            port,
            &format!("{proto}\nca_file = \"{}\"", ca.display()),
        ));
        assert_exact(&ok);
        let arrived_before = server.stats().arrivals;
        let forwarded: u64 = ok.result.configs.iter().map(|c| c.target_forwarded).sum();
        assert_eq!(
            arrived_before, forwarded,
            "{proto}: the real server saw exactly what the proxy forwarded"
        );

        // Skipping verification works, and the run says so (checked at the CLI below).
        let skip = run_text(&url_scenario(
            port,
            &format!("{proto}\ninsecure_skip_verify = true"),
        ));
        assert_exact(&skip);

        // Not trusted (system roots only): every attempt the proxy's faults did not
        // answer is tls-handshake, never sent, not retried by a config that does not list
        // it, nothing forwarded.
        let before = server.stats().arrivals;
        let bad = run_text(&url_scenario(port, &proto));
        for c in &bad.result.configs {
            let faulted = c
                .fault_windows
                .iter()
                .map(|w| w.first_attempts)
                .max()
                .unwrap_or(0);
            assert!(
                outcome(c, "tls-handshake") + faulted >= c.attempts,
                "{proto}: {c:?}"
            );
            assert!(
                outcome(c, "tls-handshake") >= c.attempts / 2,
                "{proto}: {c:?}"
            );
            assert_eq!(outcome(c, "ok"), 0);
            assert_eq!(c.target_forwarded, 0);
            // The faults' answers stand for the service (arrivals); the failed handshakes
            // never reached it (unreached): together every attempt, counted at the proxy.
            // Every handshake the client saw fail is unreached at the proxy (an attempt the
            // client gave up on at the end may be unreached without an outcome).
            assert!(
                c.target_unreached >= outcome(c, "tls-handshake"),
                "{proto}: {c:?}"
            );
            assert_eq!(
                c.attempts,
                c.downstream_arrivals + c.target_unreached,
                "{proto}: counted at the proxy"
            );
        }
        let no_retry = config_named(&bad.result.configs, "no-retry");
        assert_eq!(no_retry.retries, 0);
        let why = bad.tls_failure.expect("the reason is kept");
        assert!(why.contains("certificate"), "{why}");
        assert_eq!(
            server.stats().arrivals,
            before,
            "nothing reached the server"
        );

        // The CLI: exit 3 with the reason, reports written.
        let sc = write(&dir, "bad.toml", &url_scenario(port, &proto));
        let out_dir = dir.join("out");
        let mut cmd = bin();
        cmd.args(["run", "-q"]).arg(&sc).arg("--out").arg(&out_dir);
        let w = watch(cmd, Duration::from_secs(60));
        assert_eq!(w.code(), 3, "{}", w.stderr);
        assert!(
            w.stderr.contains("every TLS handshake failed") && w.stderr.contains("certificate"),
            "{}",
            w.stderr
        );
        assert!(out_dir.join("summary.json").exists());
        rt.block_on(server.shutdown());
    }
}

#[test]
fn protocol_fields_are_checked_before_any_load() {
    let dir = tmp_dir("protocols-check");
    let cases = [
        (
            "builtin = \"default\"\nprotocol = \"h2\"",
            "target.protocol",
            "h2c",
        ),
        (
            "builtin = \"default\"\ntls = true\nprotocol = \"h2c\"",
            "target.protocol",
            "`h2`",
        ),
        (
            "builtin = \"default\"\nprotocol = \"http2\"",
            "target.protocol",
            "did you mean",
        ),
        (
            "url = \"http://127.0.0.1:9\"\nca_file = \"ca.pem\"",
            "target.ca_file",
            "https://",
        ),
        (
            "url = \"https://127.0.0.1:9\"\nca_file = \"missing.pem\"",
            "target.ca_file",
            "cannot read",
        ),
        (
            "url = \"https://127.0.0.1:9\"\nca_file = \"empty.pem\"",
            "target.ca_file",
            "no certificate",
        ),
        (
            "builtin = \"default\"\ninsecure_skip_verify = true",
            "target.insecure_skip_verify",
            "built-in",
        ),
        (
            "url = \"https://127.0.0.1:9\"\ntls = true",
            "target.tls",
            "https://",
        ),
    ];
    write(&dir, "empty.pem", "not a certificate\n");
    for (target, field, says) in cases {
        let sc = write(&dir, "s.toml", &scenario_with(target));
        let mut cmd = bin();
        cmd.arg("check").arg(&sc);
        let w = watch(cmd, Duration::from_secs(30));
        assert_eq!(w.code(), 2, "{target}: {}", w.stderr);
        assert!(
            w.stderr.contains("s.toml") && w.stderr.contains(field) && w.stderr.contains(says),
            "{target}: {}",
            w.stderr
        );
    }
    // Skipping verification is accepted, and said loudly.
    let sc = write(
        &dir,
        "s.toml",
        &scenario_with("url = \"https://127.0.0.1:9\"\ninsecure_skip_verify = true"),
    );
    let mut cmd = bin();
    cmd.arg("check").arg(&sc);
    let w = watch(cmd, Duration::from_secs(30));
    assert_eq!(w.code(), 0, "{}", w.stderr);
    assert!(w.stderr.contains("NOT verified"), "{}", w.stderr);
}

/// nginx configured by the project's script for HTTPS (HTTP/1.1 and h2 by ALPN) and h2c,
/// with a certificate made now: client attempts equal proxy arrivals, and nginx's access
/// log holds exactly the requests the proxy forwarded, over every protocol.
#[test]
fn nginx_over_tls_h2_and_h2c_logs_exactly_what_the_proxy_forwarded() {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (ck.cert.pem(), ck.key_pair.serialize_pem());
    let nginx = Nginx::start_with(Some((&cert, &key)));
    let dir = tmp_dir("protocols-nginx");
    let ca = write(&dir, "ca.pem", &cert);
    let (tls, h2c) = (nginx.tls_port.unwrap(), nginx.h2c_port.unwrap());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for target in [
        format!(
            "url = \"https://localhost:{tls}\"\nca_file = \"{}\"",
            ca.display()
        ),
        format!(
            "url = \"https://localhost:{tls}\"\nprotocol = \"h2\"\nca_file = \"{}\"",
            ca.display()
        ),
        format!("url = \"http://127.0.0.1:{h2c}\"\nprotocol = \"h2c\""),
    ] {
        let before = nginx.log().len();
        let out = run_text(&scenario_with(&target));
        assert_exact(&out);
        let forwarded: u64 = out.result.configs.iter().map(|c| c.target_forwarded).sum();
        let attempts: u64 = out.result.configs.iter().map(|c| c.attempts).sum();
        assert!(
            forwarded > 0 && forwarded < attempts,
            "{target}: faults stay at the proxy"
        );
        let logged = rt
            .block_on(nginx.log_with(before + forwarded as usize))
            .len()
            - before;
        assert_eq!(logged as u64, forwarded, "{target}: nginx log vs forwarded");
    }
}
