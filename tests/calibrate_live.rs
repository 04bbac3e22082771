//! `stormrig calibrate` against targets whose truth is known: the built-in target at 4 slots
//! of a constant 10 ms, and a real nginx whose `/paced` location releases one request every
//! 10 ms (limit_req: one slot of 10 ms). The fitted model, simulated at every measured step,
//! must come within 10 % of the live step's throughput, p50 and p99, and find the true
//! slots; bad input exits 2 and an unreachable or always-failing target exits 3, before any
//! model is written.
//!
//! Why 10 %: the fit is checked against the very steps it was made from, so what is left is
//! the noise of a live step, not a model error. Throughput and p50 moved by under 3 %
//! between two runs of the same step on the (shared, two-core) test machine. A p99 of a 2 s
//! step is one of its 2-7 slowest requests, and moved by up to 15 % (11.9-14.6 ms for the
//! same 4-slot target) when other work shared the machine: its tolerance is 10 % or, when
//! wider, the spread of the live p99 over the steps below the slot count, whose true latency
//! is one and the same distribution (no request waits for a slot), so the fit is not judged
//! more finely than the live steps agree with each other. nginx's p99 is not judged (see
//! its test).
//!
//! A binary of its own: a calibration puts the machine under a step load, which would be
//! noise in the timing of the suite's other live runs (and they in its measurements). The
//! capacity answer confirmed live lives here for the same reason.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

mod support;

use support::nginx::Nginx;
use support::process::{bin, tmp_dir, watch, write, Watched};

/// One live calibration at a time: two would share the cores and each measure the other.
static LIVE: Mutex<()> = Mutex::new(());

const TOLERANCE: f64 = 0.10;

fn scenario(target: &str, path: &str) -> String {
    format!(
        r#"
name = "calibrated"
duration = "5s"

[load]
kind = "constant"
rate = 10
path = "{path}"

[target]
{target}

[[configs]]
name = "no-retry"
preset = "no-retry"
"#
    )
}

fn calibrate(scenario: &Path, out: &Path, extra: &[&str]) -> Watched {
    let mut cmd = bin();
    cmd.arg("calibrate")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .args(extra);
    watch(cmd, Duration::from_secs(60))
}

/// The step rows of the console table: live and fitted throughput, p50 and p99.
struct Row {
    step: String,
    live: [f64; 3],
    fit: [f64; 3],
}

fn rows(stdout: &str) -> Vec<Row> {
    let mut lines = stdout.lines();
    assert!(
        lines.next().is_some_and(|h| h.starts_with("STEP")),
        "no table:\n{stdout}"
    );
    lines
        .take_while(|l| !l.starts_with("fitted:"))
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| -> f64 { t[i].trim_end_matches("ms").parse().unwrap() };
            Row {
                step: format!("{} {}", t[0], t[1]),
                live: [n(2), n(4), n(6)],
                fit: [n(3), n(5), n(7)],
            }
        })
        .collect()
}

/// Every step's fitted figures within the tolerance of the live ones; `unqueued` steps come
/// first and never wait for a slot; `p99_floor` is the least p99 tolerance.
fn assert_fits(stdout: &str, steps: usize, unqueued: usize, p99_floor: f64) {
    let rows = rows(stdout);
    assert_eq!(rows.len(), steps, "{stdout}");
    let same: Vec<f64> = rows[..unqueued].iter().map(|r| r.live[2]).collect();
    let (lo, hi) = same
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    let p99_tolerance = p99_floor.max((hi - lo) / lo);
    for r in &rows {
        for (i, name) in ["throughput", "p50", "p99"].iter().enumerate() {
            let err = (r.fit[i] - r.live[i]).abs() / r.live[i];
            let tolerance = if i == 2 { p99_tolerance } else { TOLERANCE };
            assert!(
                err <= tolerance,
                "{}: {name} fitted {} vs live {} ({:.1} % off):\n{stdout}",
                r.step,
                r.fit[i],
                r.live[i],
                err * 100.0
            );
        }
    }
}

fn fitted(out: &Path) -> stormrig::scenario::ServiceModel {
    let text = std::fs::read_to_string(out).unwrap();
    assert!(
        text.starts_with("# Measured by `stormrig calibrate`"),
        "{text}"
    );
    stormrig::scenario::parse_target(out, &text).unwrap()
}

#[test]
fn the_builtin_target_fits_its_own_slots() {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp_dir("calibrate-builtin");
    let target = "builtin = \"default\"\nservice = { concurrency = 4, queue = 64, \
                  service_time = { kind = \"constant\", value = \"10ms\" } }";
    let sc = write(&dir, "four.toml", &scenario(target, "/"));
    let out = dir.join("fitted.toml");
    let w = calibrate(
        &sc,
        &out,
        &["--max-concurrency", "8", "--step-duration", "2s"],
    );
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
    assert_fits(&w.stdout, 4, 3, TOLERANCE);
    let model = fitted(&out);
    assert_eq!(model.concurrency, 4, "{}", w.stdout);
    // The target holds a slot for the 10 ms its model says, as the simulator does: on
    // tokio's millisecond timer it held 11.27 ms (12.7 % over, a plateau of 355 req/s for
    // 400). 5 %: measured within 2.1 % with the machine's load average at 6.
    let hold = held_ms(&std::fs::read_to_string(&out).unwrap());
    assert!(
        (hold - 10.0).abs() / 10.0 <= 0.05,
        "hold per request {hold} ms for a model of 10 ms:\n{}",
        w.stdout
    );
}

/// The fitted hold per request (ms) a targets file reports in its header.
fn held_ms(text: &str) -> f64 {
    let at = text
        .find("hold per request ")
        .unwrap_or_else(|| panic!("no hold in:\n{text}"));
    let rest = &text[at + "hold per request ".len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_paced_nginx_fits_one_slot_of_10ms() {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let nginx = Nginx::start();
    let dir = tmp_dir("calibrate-nginx");
    let target = format!("url = \"http://127.0.0.1:{}\"", nginx.port);
    let sc = write(&dir, "paced.toml", &scenario(&target, "/paced"));
    let out = dir.join("fitted.toml");
    let w = calibrate(
        &sc,
        &out,
        &["--max-concurrency", "2", "--step-duration", "2s"],
    );
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
    // nginx's p99 is not judged (an infinite floor): its leaky bucket's jitter (timer
    // wake-ups) lies outside the slot, where it does not add up in a queue, while the grammar
    // can only put spread inside the slot; and one user's live p99 moved from 13 to 22 ms
    // between runs on the shared test machine. Throughput and p50 hold to 10 %.
    assert_fits(&w.stdout, 2, 1, f64::INFINITY);
    let model = fitted(&out);
    assert_eq!(model.concurrency, 1, "{}", w.stdout);
    // What nginx logged is what was measured: every step's requests reached it.
    let served = nginx.log().len() as f64;
    let measured: f64 = rows(&w.stdout).iter().map(|r| r.live[0] * 2.0).sum();
    assert!(
        served >= measured,
        "nginx logged {served}, measured {measured}"
    );
}

#[test]
fn a_target_that_always_fails_exits_3_naming_its_status() {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let nginx = Nginx::start();
    let dir = tmp_dir("calibrate-fail");
    let target = format!("url = \"http://127.0.0.1:{}\"", nginx.port);
    let sc = write(&dir, "fail.toml", &scenario(&target, "/fail"));
    let out = dir.join("fitted.toml");
    let w = calibrate(
        &sc,
        &out,
        &["--max-concurrency", "1", "--step-duration", "500ms"],
    );
    assert_eq!(w.code(), 3, "{}{}", w.stdout, w.stderr);
    assert!(w.stderr.contains("HTTP 503"), "{}", w.stderr);
    assert!(!out.exists());
}

#[test]
fn an_unreachable_target_exits_3_before_any_load() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tmp_dir("calibrate-gone");
    let target = format!("url = \"http://127.0.0.1:{port}\"");
    let sc = write(&dir, "gone.toml", &scenario(&target, "/"));
    let out = dir.join("fitted.toml");
    let w = calibrate(&sc, &out, &["--max-concurrency", "2"]);
    assert_eq!(w.code(), 3, "{}{}", w.stdout, w.stderr);
    assert!(w.stderr.contains("cannot reach"), "{}", w.stderr);
    assert!(!w.stderr.contains("step 1/"), "load was sent: {}", w.stderr);
    assert!(!out.exists());
}

#[test]
fn zero_bounds_exit_2() {
    let dir = tmp_dir("calibrate-zero");
    let sc = write(&dir, "s.toml", &scenario("builtin = \"default\"", "/"));
    let out = dir.join("fitted.toml");
    for (args, says) in [
        (&["--max-concurrency", "0"][..], "--max-concurrency"),
        (&["--max-rate", "0"][..], "--max-rate"),
        (&["--step-duration", "0s"][..], "--step-duration"),
        (&["--max-time", "0s"][..], "--max-time"),
        (
            &[
                "--max-concurrency",
                "64",
                "--step-duration",
                "10s",
                "--max-time",
                "30s",
            ][..],
            "--max-time",
        ),
    ] {
        let w = calibrate(&sc, &out, args);
        assert_eq!(w.code(), 2, "{args:?}: {}{}", w.stdout, w.stderr);
        assert!(w.stderr.contains(says), "{args:?}: {}", w.stderr);
        assert!(!w.stderr.contains("step 1/"), "load was sent: {}", w.stderr);
        assert!(!out.exists());
    }
}

/// The README's capacity example, scaled down to seconds: the small built-in target at 4 slots
/// (400 req/s) whose capacity halves to 2 slots (200 req/s) for 3 s, a budget-less `naive`
/// config with a 100 ms per-try timeout. `capacity --confirm` must find a limit whose live
/// run meets the objectives, and live one step beyond must not.
///
/// Why it is robust on a loaded two-core machine: the grid (100, 160, 220, ...) and a
/// resolution of one step keep both values away from the cliff, which sits at the degraded
/// capacity (200 req/s), where the queue starts to grow: the limit, 160 req/s, is 80 % of it,
/// so live jitter of a few percent cannot build a queue during the trigger; one step beyond,
/// 220 req/s, is 110 % of it, so the queue grows by 20 requests a second, every attempt
/// queued past 100 ms times out and is retried (up to 4 attempts: up to 880 req/s against the
/// 400 the restored target serves), and the retries keep the queue full after the trigger.
/// Before the live target held its slots to the model's time (10 ms, not ~11.3), the live
/// degraded capacity was ~177 req/s and the margin at 160 was 10 %, not 20 %.
#[test]
fn a_capacity_limit_holds_live_and_one_step_beyond_does_not() {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp_dir("capacity-confirm");
    let sc = write(
        &dir,
        "scaled.toml",
        r#"
name = "scaled-metastability"
seed = 1
duration = "12s"
drain = "2s"

[load]
kind = "constant"
rate = 150.0

[target]
builtin = "default"
service = { concurrency = 4, queue = 200, queue_timeout = "500ms", service_time = { kind = "constant", value = "10ms" } }

[[faults]]
kind = "capacity"
concurrency = 2
at = "4s"
for = "3s"

[[configs]]
name = "naive-timeout"
preset = "naive"
per_try_timeout = "100ms"
"#,
    );
    let out = dir.join("capacity");
    let mut cmd = bin();
    cmd.arg("capacity")
        .arg(&sc)
        .args(["--vary", "load.rate=100..400:60", "--resolution", "60"])
        .args(["--objective", "recovery_time_s <= 3"])
        .args(["--objective", "latency_ms.p99 < 800"])
        .arg("--confirm")
        .arg("--out")
        .arg(&out);
    let w = watch(cmd, Duration::from_secs(120));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap())
            .unwrap_or_else(|e| panic!("{e}\n{}{}", w.stdout, w.stderr));
    let config = &json["configs"][0];
    let live = &config["live"];
    assert_eq!(live["limit"], 160.0, "{}{}", w.stdout, w.stderr);
    assert_eq!(live["beyond"], 220.0, "{}", w.stdout);
    assert_eq!(live["live_passed_at_limit"], true, "{}", w.stdout);
    assert_eq!(live["live_passed_beyond"], false, "{}", w.stdout);
    assert_eq!(live["agrees"], true, "{}", w.stdout);
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
}

/// The whole path for a real service: `calibrate` measures a paced nginx (one request
/// released every 10 ms), its file becomes the `model` beside the nginx `url`, `capacity`
/// searches that model for the largest load whose p99 stays under 40 ms, and `--confirm`
/// runs the limit and the value past its knife edge live against nginx through the counting
/// proxy. Live must agree: the limit holds, past the edge does not.
///
/// Why it is robust: the grid (40, 80, 120, 160 req/s; resolution one step) keeps both
/// values clear of nginx's 100 req/s. At 80 req/s (0.8x) nothing waits; at 120 req/s (1.2x)
/// the leaky bucket's backlog grows by 20 requests a second, so within the 4 s run requests
/// wait hundreds of milliseconds, live as in the model.
#[test]
fn capacity_on_a_calibrated_nginx_agrees_with_its_live_confirmation() {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let nginx = Nginx::start();
    let dir = tmp_dir("calibrate-capacity");
    std::fs::create_dir_all(dir.join("targets")).unwrap();
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    let url = format!("url = \"http://127.0.0.1:{}\"", nginx.port);
    let measure = write(
        &dir.join("scenarios"),
        "measure.toml",
        &scenario(&url, "/paced"),
    );
    let model = dir.join("targets").join("paced.toml");
    let w = calibrate(
        &measure,
        &model,
        &["--max-concurrency", "2", "--step-duration", "2s"],
    );
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
    let sc = write(
        &dir.join("scenarios"),
        "capacity.toml",
        &format!(
            r#"
name = "paced-capacity"
seed = 1
duration = "4s"
drain = "2s"

[load]
kind = "constant"
rate = 50
path = "/paced"

[target]
{url}
model = "paced"

[[configs]]
name = "no-retry"
preset = "no-retry"
"#
        ),
    );
    let out = dir.join("capacity");
    let mut cmd = bin();
    cmd.arg("capacity")
        .arg(&sc)
        .args(["--vary", "load.rate=40..160:40", "--resolution", "40"])
        .args(["--objective", "latency_ms.p99 < 40"])
        .arg("--confirm")
        .arg("--out")
        .arg(&out);
    let before = nginx.log().len();
    let w = watch(cmd, Duration::from_secs(120));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap())
            .unwrap_or_else(|e| panic!("{e}\n{}{}", w.stdout, w.stderr));
    let config = &json["configs"][0];
    assert_eq!(config["limit"], 80.0, "{}{}", w.stdout, w.stderr);
    let live = &config["live"];
    assert_eq!(live["beyond"], 120.0, "{}", w.stdout);
    assert_eq!(live["live_passed_at_limit"], true, "{}", w.stdout);
    assert_eq!(live["live_passed_beyond"], false, "{}", w.stdout);
    assert_eq!(live["agrees"], true, "{}", w.stdout);
    assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
    // The live runs reached nginx: 4 s at 80 and at 120 req/s.
    let served = nginx.log().len() - before;
    assert!(served >= 4 * (80 + 120), "nginx logged {served}");
}

/// `--overload` adds a step at 1.5x the highest throughput: the built-in target's queue of
/// 16 (refused at once when full) is read back by Little's law, and a queue timeout of
/// 50 ms (refused after the wait) from the failures' median; the fitted model reproduces
/// the overload step's throughput and the successes' median within the tolerance.
#[test]
fn an_overload_step_measures_the_queue_and_its_timeout() {
    let _one = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp_dir("calibrate-queue");
    for (name, queue) in [
        ("full", "queue = 16"),
        ("timeout", "queue = 1000, queue_timeout = \"50ms\""),
    ] {
        let target = format!(
            "builtin = \"default\"\nservice = {{ concurrency = 4, {queue}, \
             service_time = {{ kind = \"constant\", value = \"10ms\" }} }}"
        );
        let sc = write(&dir, &format!("{name}.toml"), &scenario(&target, "/"));
        let out = dir.join(format!("{name}-fitted.toml"));
        let w = calibrate(
            &sc,
            &out,
            &[
                "--max-concurrency",
                "8",
                "--step-duration",
                "2s",
                "--overload",
            ],
        );
        assert_eq!(w.code(), 0, "{}{}", w.stdout, w.stderr);
        let rows = rows(&w.stdout);
        let over = rows.last().unwrap();
        assert!(over.step.starts_with("overload "), "{}", w.stdout);
        // Throughput and the successes' median (the table's p50 at this step is over every
        // request; the fit is judged on the successes', in the ERROR column).
        let err = (over.fit[0] - over.live[0]).abs() / over.live[0];
        assert!(
            err <= TOLERANCE,
            "{name}: throughput off by {err}:\n{}",
            w.stdout
        );
        let model = fitted(&out);
        match name {
            "full" => {
                assert!(
                    (15..=17).contains(&model.queue),
                    "queue {} for 16:\n{}",
                    model.queue,
                    w.stdout
                );
                // No request waited out a timeout: the stated one (1 s) is kept, above
                // every wait seen.
                let longest = over.live[2];
                assert!(
                    model
                        .queue_timeout
                        .is_none_or(|t| t.as_secs_f64() * 1000.0 > longest),
                    "{:?}:\n{}",
                    model.queue_timeout,
                    w.stdout
                );
            }
            _ => {
                let t = model
                    .queue_timeout
                    .unwrap_or_else(|| panic!("no timeout:\n{}", w.stdout))
                    .as_secs_f64()
                    * 1000.0;
                assert!(
                    (t - 50.0).abs() <= 5.0,
                    "timeout {t} ms for 50:\n{}",
                    w.stdout
                );
            }
        }
    }
}
