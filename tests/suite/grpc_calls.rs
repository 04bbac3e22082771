//! gRPC unary calls end to end: refused where they cannot work (exit 2 naming file, line
//! and field), counted exactly against the built-in target, classified by their
//! `grpc-status`, and simulated to the same counts where timing does not enter.

use stormrig::sim::{self, SimOptions};

use crate::support::{self, config_named, process};

/// 100 calls/s for 1 s; every call answered UNAVAILABLE, whatever the timing.
fn always_unavailable(protocol: &str) -> String {
    format!(
        r#"name = "grpc-always-unavailable"
duration = "1s"
drain = "5s"

[load]
kind = "constant"
rate = 100.0
grpc = {{ service = "stormrig.Test", method = "Get", message = "hello" }}

[target]
builtin = "default"
protocol = "{protocol}"

[[faults]]
kind = "grpc-status"
grpc_status = "UNAVAILABLE"
at = "0s"
for = "1s"

[[configs]]
preset = "no-retry"

[[configs]]
name = "naive-unavailable"
preset = "naive"
max_attempts = 4
backoff = {{ kind = "constant", delay = "1ms" }}
retry_on = {{ grpc_statuses = ["unavailable"] }}

[[configs]]
name = "naive-http-statuses"
preset = "naive"
max_attempts = 4
backoff = {{ kind = "constant", delay = "1ms" }}

[[configs]]
preset = "grpc"
"#
    )
}

#[test]
fn a_grpc_load_over_http1_exits_2_naming_file_line_and_field() {
    let dir = process::tmp_dir("grpc-http1");
    let file = process::write(&dir, "grpc.toml", &always_unavailable("http1"));
    let out = process::bin().arg("sim").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let at = format!("{}:8: load.grpc:", file.display());
    assert!(err.contains(&at), "{err}");
    assert!(err.contains("HTTP/2"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_grpc_fields_are_refused_where_they_are_written() {
    let refused = |text: &str| {
        stormrig::scenario::parse(std::path::Path::new("s.toml"), text)
            .expect_err("refused")
            .to_string()
    };
    let good = always_unavailable("h2c");
    let e = refused(&good.replace("\"UNAVAILABLE\"", "\"SLOW\""));
    assert!(e.starts_with("s.toml:16: faults[0].grpc_status:"), "{e}");
    let e = refused(&good.replace("\"UNAVAILABLE\"", "\"OK\""));
    assert!(e.contains("faults[0].grpc_status"), "{e}");
    let e = refused(&good.replace("method = \"Get\"", "method = \"G/et\""));
    assert!(e.contains("load.grpc.method"), "{e}");
    // A `url` target takes gRPC calls through the fault proxy, and topology layers relay them.
    let url = good.replace("builtin = \"default\"", "url = \"http://127.0.0.1:9\"");
    stormrig::scenario::parse(std::path::Path::new("s.toml"), &url).expect("a url target");
    let layered =
        format!("{good}\n[[topology]]\nname = \"edge\"\nconfig = {{ preset = \"naive\" }}\n");
    stormrig::scenario::parse(std::path::Path::new("s.toml"), &layered).expect("layers");
    let e = refused(&good.replace("rate = 100.0", "rate = 100.0\nbody = \"x\""));
    assert!(e.contains("load.body"), "{e}");
}

#[test]
fn calls_are_counted_exactly_and_classified_by_their_grpc_status() {
    let plan = support::plan_of(&always_unavailable("h2c"));
    let live = support::run_live(&plan, false);
    let simulated = sim::run(&plan, &SimOptions::default()).unwrap().result;
    for c in &live.result.configs {
        assert_eq!(c.upstream_requests, 100, "{}", c.name);
        assert_eq!(
            c.attempts, c.downstream_arrivals,
            "{}: client attempts equal target arrivals",
            c.name
        );
    }
    assert_eq!(
        live.connections,
        vec![1, 1, 1, 1],
        "one h2c connection each"
    );
    for c in &live.result.configs {
        // In summary.json too: every attempt a stream of the one connection.
        let conn = c.connections.as_ref().expect("live runs count connections");
        assert_eq!(
            (conn.protocol.as_str(), conn.opened),
            ("h2c", 1),
            "{}",
            c.name
        );
        assert_eq!(
            conn.attempts_per_connection, c.attempts as f64,
            "{}",
            c.name
        );
        assert_eq!((conn.stream_resets, conn.goaways), (0, 0), "{}", c.name);
    }
    assert!(simulated.configs.iter().all(|c| c.connections.is_none()));
    for result in [&live.result, &simulated] {
        let engine = format!("{:?}", result.engine);
        let count = |name: &str| config_named(&result.configs, name).downstream_arrivals;
        assert_eq!(count("no-retry"), 100, "{engine}");
        // Retried by the gRPC status: every call tries 4 times.
        assert_eq!(count("naive-unavailable"), 400, "{engine}");
        // HTTP status lists see an HTTP 200: a config that reads no gRPC status retries
        // nothing (and the call is still a failure, not a success).
        let http_only = config_named(&result.configs, "naive-http-statuses");
        assert_eq!(http_only.downstream_arrivals, 100, "{engine}");
        assert_eq!(http_only.successes, 0, "{engine}");
        // gRPC's throttling: 10 tokens, retries only while above 5, so at most the
        // first 4 failures are retried, however the calls interleave.
        let retries = count("grpc") - 100;
        assert!((1..=4).contains(&retries), "{engine}: {retries}");
    }
}
