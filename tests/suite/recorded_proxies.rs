//! Envoy's default access log and AWS ALB entries as traces: each request replayed at its
//! logged start, second for second, though the lines are written (and so ordered) by
//! each request's end.

use std::collections::BTreeMap;

use super::recorded_load::plan_at;
use crate::support::process::{tmp_dir, write};

/// Starts in ms from the first (unsorted: the log's order is by end), with their paths.
fn requests() -> Vec<(u64, &'static str)> {
    let mut v: Vec<(u64, &'static str)> = (0..60u64)
        .map(|i| {
            // 0-2.9 s, denser in the second second; a mix of two paths.
            let ms = if i < 10 {
                i * 97
            } else if i < 45 {
                1000 + (i - 10) * 28
            } else {
                2000 + (i - 45) * 61
            };
            (
                ms,
                if i % 3 == 0 {
                    "/health"
                } else {
                    "/api/orders?id=7"
                },
            )
        })
        .collect();
    // Written at each request's end: a slow request's line comes after faster later ones.
    v.sort_by_key(|(ms, _)| ms + if ms % 7 == 0 { 400 } else { 5 });
    v
}

fn stamp(ms: u64, digits: usize) -> String {
    let t = 1_796_306_520_000u64 + ms;
    let (s, frac) = (t / 1000 % 60, t % 1000);
    let frac = if digits == 3 {
        format!("{frac:03}")
    } else {
        format!("{frac:03}000")
    };
    format!("2026-12-03T14:02:{s:02}.{frac}Z")
}

fn replay(dir: &std::path::Path, file: &str, format: &str) -> (Vec<u64>, BTreeMap<String, u64>) {
    let path = write(
        dir,
        "replay.toml",
        &format!(
            r#"name = "proxy-log"
seed = 4
duration = "4s"

[load]
kind = "trace"
file = "{file}"
format = "{format}"

[[load.classes]]
name = "orders"
path = "/api/orders"

[[load.classes]]
name = "health"
path = "/health"

[target]
builtin = "default"

[[configs]]
preset = "no-retry"
"#
        ),
    );
    let sim = stormrig::sim::run(&plan_at(&path), &Default::default())
        .unwrap()
        .result;
    let mut per_s = vec![0; 4];
    for row in &sim.timeseries {
        if (row.second as usize) < 4 {
            per_s[row.second as usize] = row.downstream_arrivals;
        }
    }
    let classes = sim.configs[0]
        .classes
        .iter()
        .map(|c| (c.name.clone(), c.downstream_arrivals))
        .collect();
    (per_s, classes)
}

fn want() -> (Vec<u64>, BTreeMap<String, u64>) {
    let mut per_s = vec![0; 4];
    let mut classes = BTreeMap::new();
    for (ms, path) in requests() {
        per_s[(ms / 1000) as usize] += 1;
        let c = if path == "/health" {
            "health"
        } else {
            "orders"
        };
        *classes.entry(c.to_string()).or_insert(0) += 1;
    }
    (per_s, classes)
}

#[test]
fn an_envoy_default_log_is_replayed_by_start_second_for_second() {
    let dir = tmp_dir("envoy-log");
    let log: String = requests()
        .iter()
        .map(|(ms, path)| {
            format!(
                "[{}] \"GET {path} HTTP/1.1\" 200 - 0 12 3 2 \"-\" \"curl/8.5\" \
                 \"5b8c-{ms}\" \"api\" \"127.0.0.1:8080\"\n",
                stamp(*ms, 3)
            )
        })
        .collect();
    write(&dir, "envoy.log", &log);
    let (got, classes) = replay(&dir, "envoy.log", "envoy");
    let (per_s, want_classes) = want();
    assert_eq!(got, per_s);
    assert_eq!(classes, want_classes);
    assert_eq!(per_s, vec![10, 35, 15, 0], "the log's own seconds");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn aws_alb_entries_are_replayed_by_creation_time_second_for_second() {
    let dir = tmp_dir("alb-log");
    let log: String = requests()
        .iter()
        .map(|(ms, path)| {
            format!(
                "https {} app/payments/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 \
                 0.004 0.000 200 200 34 366 \"GET https://api.example.com:443{path} HTTP/1.1\" \
                 \"curl/8.5\" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 \
                 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/api/73e2d6bc24d8a067 \
                 \"Root=1-58337262-{ms}\" \"api.example.com\" \"-\" 0 {} \"forward\" \"-\" \"-\" \
                 \"10.0.0.1:80\" \"200\" \"-\" \"-\"\n",
                stamp(ms + 4, 6),
                stamp(*ms, 6)
            )
        })
        .collect();
    write(&dir, "alb.log", &log);
    let (got, classes) = replay(&dir, "alb.log", "aws-alb");
    let (per_s, want_classes) = want();
    assert_eq!(got, per_s);
    assert_eq!(classes, want_classes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A combined log of callers whose failed requests were retried at once by a naive client:
/// each first attempt, and after every 503 the same client's retry of the same path.
fn stormy_log() -> (String, Vec<u64>, u64) {
    let mut lines = Vec::new();
    let mut demand = vec![0u64; 3];
    let mut retries = 0;
    for i in 0..90u64 {
        let second = i / 30;
        let client = format!("10.0.0.{}", i % 7);
        let path = if i % 2 == 0 {
            "/api/orders?id=7"
        } else {
            "/health"
        };
        demand[second as usize] += 1;
        // Every third request of the second second fails twice before it succeeds.
        let failures = if second == 1 && i % 3 == 0 { 2 } else { 0 };
        for attempt in 0..=failures {
            let status = if attempt < failures { 503 } else { 200 };
            retries += u64::from(attempt > 0);
            lines.push(format!(
                "{client} - - [03/Dec/2026:14:02:0{second} +0000] \"GET {path} HTTP/1.1\" \
                 {status} 3 \"-\" \"naive/1.0\""
            ));
        }
    }
    (lines.join("\n") + "\n", demand, retries)
}

#[test]
fn retries_in_a_log_fold_into_their_first_attempt_and_are_counted() {
    let dir = tmp_dir("fold-retries");
    let (log, demand, retries) = stormy_log();
    assert_eq!(retries, 20, "the log holds its retries");
    write(&dir, "access.log", &log);
    let scenario = |extra: &str| {
        let text = format!(
            r#"name = "folded"
seed = 4
duration = "4s"

[load]
kind = "trace"
file = "access.log"
format = "nginx-combined"
{extra}

[target]
builtin = "default"

[[configs]]
preset = "no-retry"
"#
        );
        write(&dir, "fold.toml", &text)
    };
    let per_s = |path: &std::path::Path| {
        let sim = stormrig::sim::run(&plan_at(path), &Default::default())
            .unwrap()
            .result;
        let mut v = vec![0u64; 3];
        for row in sim.timeseries.iter().filter(|r| r.second < 3) {
            v[row.second as usize] = row.upstream_started;
        }
        v
    };
    // As logged: the storm, retries included.
    let storm = per_s(&scenario(""));
    assert_eq!(storm, vec![30, 50, 30]);
    // Folded: the callers' demand, each second's first attempts.
    let folded = scenario("fold_retries = \"1s\"");
    assert_eq!(per_s(&folded), demand);
    let out =
        crate::support::process::exits(crate::support::process::bin().arg("check").arg(&folded), 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("load.file: folded 20 retries"), "{err}");
    // A key only a JSON log names.
    let keyed = scenario("fold_key = \"request_id\"");
    let out =
        crate::support::process::exits(crate::support::process::bin().arg("check").arg(&keyed), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("load.fold_key"), "{err}");
    // By key in a JSON log: the same request id is one request, whoever sent it.
    let json: String = (0..12u64)
        .map(|i| {
            format!(
                "{{\"msec\":\"1796306520.{:03}\",\"request_uri\":\"/health\",\"request_id\":\"r{}\"}}\n",
                i * 80,
                i / 3
            )
        })
        .collect();
    write(&dir, "access.json", &json);
    let text = std::fs::read_to_string(scenario("fold_key = \"request_id\""))
        .unwrap()
        .replace("access.log", "access.json")
        .replace("nginx-combined", "nginx-json");
    let by_key = write(&dir, "key.toml", &text);
    assert_eq!(per_s(&by_key), vec![4, 0, 0]);
    let _ = std::fs::remove_dir_all(&dir);
}
