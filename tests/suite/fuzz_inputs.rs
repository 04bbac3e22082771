//! Property-based fuzzing of the two inputs besides scenario files that come from outside
//! the process: the proxy control API's JSON fault bodies, and the shard dumps `merge`
//! reads. Whatever the spoilt input, the answer is an acceptance or a refusal (400 from
//! the API, exit 2 from `merge`), never a panic, a 5xx, or a merged result that silently
//! took a broken count. Each property also requires that some spoilt inputs were still
//! accepted, so that it exercised more than the first parse error.

use std::path::PathBuf;
use std::sync::OnceLock;

use bytes::Bytes;
use clap::Parser;
use hyper::StatusCode;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use stormrig::app::{self, Exit};
use stormrig::cli::Cli;

use crate::support::http::{fault_proxy, send_body};
use crate::support::mutate::{apply, mutation};
use crate::support::process::{bin, succeed, tmp_dir, write};

/// Cases per property run (each is one loopback exchange or one in-process merge).
const CASES: u32 = 300;

/// Valid fault bodies of every kind the control API takes, the seeds of the mutations.
const BODIES: &[&str] = &[
    r#"{"kind":"status","status":503,"at":"1s","for":"2s","probability":0.5}"#,
    r#"{"kind":"status","status":429,"retry_after":"1s"}"#,
    r#"{"kind":"latency","add":{"kind":"constant","value":"800ms"},"for":"3s"}"#,
    r#"{"kind":"reset","probability":0.1}"#,
    r#"{"kind":"hang","for":"1s"}"#,
    r#"{"kind":"bandwidth","bytes_per_s":400}"#,
    r#"{"kind":"slicer","slice_bytes":16,"delay":"50ms","for":"30s"}"#,
    r#"{"kind":"slow-close","delay":"2s"}"#,
    r#"{"kind":"lost-response","status":504}"#,
];

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn the_control_api_answers_any_spoilt_fault_with_201_or_400() {
    let rt = crate::support::two_worker_runtime();
    let (_proxy, a, bearer) = rt.block_on(fault_proxy());
    let auth = [("authorization", bearer.as_str())];
    let post = |body: Vec<u8>| {
        rt.block_on(send_body(
            a,
            "POST",
            "/_stormrig/faults",
            0,
            1,
            &auth,
            Bytes::from(body),
        ))
        .unwrap()
    };
    // Every seed body is accepted as it is, so a refusal below is the mutation's doing.
    for body in BODIES {
        let (st, _, answer) = post(body.as_bytes().to_vec());
        assert_eq!(
            st,
            StatusCode::CREATED,
            "{body}: {}",
            String::from_utf8_lossy(&answer)
        );
        let id = serde_json::from_slice::<Value>(&answer).unwrap()["id"].clone();
        let path = format!("/_stormrig/faults/{id}");
        let (st, _, _) = rt
            .block_on(send_body(a, "DELETE", &path, 0, 1, &auth, Bytes::new()))
            .unwrap();
        assert_eq!(st, StatusCode::OK);
    }
    let accepted = std::cell::Cell::new(0u32);
    let strategy = (proptest::sample::select(BODIES), mutation());
    runner()
        .run(&strategy, |(body, m)| {
            let spoilt = apply(body, &m);
            let (st, _, answer) = post(spoilt.clone());
            let text = String::from_utf8_lossy(&spoilt).into_owned();
            let v: Value = serde_json::from_slice(&answer)
                .map_err(|e| TestCaseError::fail(format!("{text}: answer not JSON: {e}")))?;
            match st {
                StatusCode::CREATED => {
                    accepted.set(accepted.get() + 1);
                    let path = format!("/_stormrig/faults/{}", v["id"]);
                    let (st, _, _) = rt
                        .block_on(send_body(a, "DELETE", &path, 0, 1, &auth, Bytes::new()))
                        .unwrap();
                    prop_assert_eq!(st, StatusCode::OK);
                }
                StatusCode::BAD_REQUEST => {
                    let message = v["error"].as_str().unwrap_or("");
                    prop_assert!(!message.is_empty(), "{}: 400 without a reason: {}", text, v);
                }
                other => prop_assert!(false, "{}: answered {} {}", text, other, v),
            }
            Ok(())
        })
        .unwrap();
    eprintln!("{} of {CASES} spoilt bodies accepted", accepted.get());
    assert!(accepted.get() > 0, "no spoilt body was accepted");
}

/// A real one-shard run's `shard.json`, made once.
fn a_real_dump() -> &'static (PathBuf, String) {
    static DUMP: OnceLock<(PathBuf, String)> = OnceLock::new();
    DUMP.get_or_init(|| {
        let dir = tmp_dir("fuzz-shard-source");
        let scenario = write(
            &dir,
            "s.toml",
            &crate::support::three_seconds_of_503("fuzz-shard", "aws-standard"),
        );
        let out = dir.join("shard");
        succeed(
            bin()
                .arg("run")
                .arg(&scenario)
                .args(["--shard", "0/1", "--duration", "1s", "-q", "--out"])
                .arg(&out),
        );
        let text = std::fs::read_to_string(out.join("shard.json")).unwrap();
        (scenario, text)
    })
}

#[test]
fn merge_of_any_spoilt_shard_dump_merges_or_refuses_by_name() {
    let (scenario, text) = a_real_dump();
    let dir = tmp_dir("fuzz-shard");
    let shard = dir.join("shard");
    std::fs::create_dir_all(&shard).unwrap();
    let merged = std::cell::Cell::new(0u32);
    runner()
        .run(&mutation(), |m| {
            std::fs::write(shard.join("shard.json"), apply(text, &m)).unwrap();
            let out = dir.join("merged");
            let _ = std::fs::remove_dir_all(&out);
            let cli = Cli::try_parse_from([
                "stormrig".as_ref(),
                "merge".as_ref(),
                shard.as_os_str(),
                "--out".as_ref(),
                out.as_os_str(),
                "--scenario".as_ref(),
                scenario.as_os_str(),
            ])
            .unwrap();
            match app::run(cli) {
                Ok(_) => {
                    merged.set(merged.get() + 1);
                    // What was merged holds together: no count wrapped or was forged
                    // past what the others allow.
                    let summary: Value =
                        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap())
                            .unwrap();
                    for c in summary["configs"].as_array().unwrap() {
                        let n = |k: &str| c[k].as_u64().unwrap_or(u64::MAX);
                        prop_assert!(n("attempts") >= n("retries"), "{:?}: {}", m, c);
                        prop_assert!(
                            n("successes").saturating_add(n("failures")) <= n("upstream_requests"),
                            "{:?}: {}",
                            m,
                            c
                        );
                    }
                }
                Err(e) => {
                    prop_assert_eq!(e.exit, Exit::BadInput, "{:?}: {}", m, e.message);
                    prop_assert!(
                        e.message.contains("shard"),
                        "{:?}: the message does not name the shard: {}",
                        m,
                        e.message
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    eprintln!("{} of {CASES} spoilt dumps merged", merged.get());
    assert!(merged.get() > 0, "no spoilt dump was merged");
}

/// Found by the mutations above: a shard whose duration or load time says 2^32 s made
/// `merge` ask for 1.3 TB of per-second rows and abort. Each is refused naming the shard
/// and the field.
#[test]
fn a_shard_claiming_a_duration_of_years_is_refused_by_name() {
    for field in ["duration", "load_ran"] {
        refused_with_years_of(field);
    }
}

fn refused_with_years_of(field: &str) {
    let (scenario, text) = a_real_dump();
    let dir = tmp_dir("shard-duration");
    let shard = dir.join("shard");
    std::fs::create_dir_all(&shard).unwrap();
    let mut dump: Value = serde_json::from_str(text).unwrap();
    dump[field]["secs"] = Value::from(4_294_967_295u64);
    std::fs::write(shard.join("shard.json"), dump.to_string()).unwrap();
    let out = dir.join("merged");
    let cli = Cli::try_parse_from([
        "stormrig".as_ref(),
        "merge".as_ref(),
        shard.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--scenario".as_ref(),
        scenario.as_os_str(),
    ])
    .unwrap();
    let e = app::run(cli).expect_err("a duration of 136 years is refused");
    assert_eq!(e.exit, Exit::BadInput, "{}", e.message);
    assert!(
        e.message.contains("shard: duration:"),
        "{field}: {}",
        e.message
    );
    assert!(!out.join("summary.json").exists());
}
