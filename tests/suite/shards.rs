//! Shards as Kubernetes runs them, on one machine: four `stormrig run` processes with
//! `JOB_COMPLETION_INDEX` set as an Indexed Job sets it, a common `--start-at`, merged by
//! `stormrig merge` and held against a single process running the same scenario, against
//! the targets' own counts (nginx's access log), and against the shards' raw histograms.
//! Then every way a merge or a shard is refused, and the manifests `stormrig k8s` prints,
//! checked against the Kubernetes schemas.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use stormrig::shard::Dump;

use crate::support;
use crate::support::nginx::Nginx;
use crate::support::process::{bin, tmp_dir, wait_watched, watch, write, Watched};

const SHARDS: u32 = 4;

/// An always-failing target under 8 clients per config: `naive` retries every request to
/// its 4 attempts, and each `aws-standard` instance spends its own 500-token quota (35
/// retries) and nothing refills it. Neither count depends on timing, so shards merged must
/// equal one process exactly. Requests arrive in the first second only, and the fault
/// lasts two more, so that no retry of a slow machine reaches the healthy target after it.
fn scenario(target: &str) -> String {
    format!(
        r#"
name = "shards"
seed = 7
duration = "3s"
drain = "3s"

[load]
kind = "steps"
steps = [{{ at = "0s", rate = 300.0 }}, {{ at = "1s", rate = 0.0 }}]
clients = 8

[target]
{target}

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "3s"

[[configs]]
name = "naive"
preset = "naive"

[[configs]]
name = "aws"
preset = "aws-standard"
"#
    )
}

fn start_in(secs: u64) -> String {
    humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(secs)).to_string()
}

/// Runs every shard at once, as the Indexed Job's pods would; returns their directories.
fn run_shards(scenario: &Path, dir: &Path) -> Vec<PathBuf> {
    let start = start_in(2);
    let children: Vec<_> = (0..SHARDS)
        .map(|i| {
            let out = dir.join(format!("shard-{i}"));
            let child = bin()
                .arg("run")
                .arg(scenario)
                .arg(format!("--shards={SHARDS}"))
                .arg(format!("--start-at={start}"))
                .arg("--out")
                .arg(&out)
                .args(["--quiet", "--attempt-log"])
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (out, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(out, child)| {
            let w = wait_watched(child, std::time::Instant::now(), Duration::from_secs(60));
            assert_eq!(w.code(), 0, "shard {}: {}", out.display(), w.stderr);
            assert!(out.join("shard.json").exists());
            out
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> Watched {
    let mut cmd = bin();
    cmd.arg("merge").args(dirs).arg("--out").arg(out);
    watch(cmd, Duration::from_secs(60))
}

fn run_one(scenario: &Path, out: &Path) {
    let mut cmd = bin();
    cmd.arg("run").arg(scenario).arg("--out").arg(out).arg("-q");
    let w = watch(cmd, Duration::from_secs(60));
    assert_eq!(w.code(), 0, "{}", w.stderr);
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

fn config<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

const COUNTS: [&str; 4] = [
    "upstream_requests",
    "attempts",
    "retries",
    "downstream_arrivals",
];

/// The merged counts equal one process's, figure by figure; the merge says how many
/// shards it holds and which figures are upper bounds.
fn assert_same_experiment(merged: &Value, one: &Value) {
    assert_eq!(merged["shards"], SHARDS);
    for name in ["naive", "aws"] {
        let (m, o) = (config(merged, name), config(one, name));
        for figure in COUNTS {
            assert_eq!(m[figure], o[figure], "{name}: {figure}");
        }
    }
    let naive = config(merged, "naive");
    assert_eq!(
        naive["attempts"],
        naive["upstream_requests"].as_u64().unwrap() * 4
    );
    // 8 quotas of 500 tokens at 14 a retry, none refilled: 8 × 35 retries.
    assert_eq!(config(merged, "aws")["retries"], 8 * (500 / 14));
    let bounds = merged["upper_bounds"].as_object().unwrap();
    assert!(bounds.contains_key("peak_concurrency"), "{bounds:?}");
}

/// The merged latency percentiles equal those of one histogram fed every shard's samples
/// (read back from the dumps' V2 histograms, value by value).
fn assert_latency_is_of_every_sample(merged: &Value, dirs: &[PathBuf]) {
    for name in ["naive", "aws"] {
        let mut all = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        let mut rows = 0usize;
        for d in dirs {
            let dump: Dump = Dump::read(d).unwrap();
            let c = dump.configs.iter().find(|c| c.name == name).unwrap();
            for v in c.recorder.latency_us().iter_recorded() {
                all.record_n(v.value_iterated_to(), v.count_at_value())
                    .unwrap();
            }
            // Every logical request of the shard's attempt log is in its histogram.
            let log = std::fs::read_to_string(d.join("attempts.csv")).unwrap();
            let requests: std::collections::BTreeSet<&str> = log
                .lines()
                .skip(1)
                .filter(|l| l.starts_with(&format!("{name},")))
                .filter_map(|l| l.split(',').nth(1))
                .collect();
            assert_eq!(requests.len() as u64, c.recorder.latency_us().len());
            rows += requests.len();
        }
        assert_eq!(all.len(), rows as u64);
        let lat = &config(merged, name)["latency_ms"];
        let ms = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
        assert_eq!(lat["p50"].as_f64().unwrap(), ms(0.5), "{name} p50");
        assert_eq!(lat["p99"].as_f64().unwrap(), ms(0.99), "{name} p99");
        assert_eq!(lat["p999"].as_f64().unwrap(), ms(0.999), "{name} p999");
    }
}

#[test]
fn four_shards_against_the_builtin_target_merge_into_the_single_process_run() {
    let dir = tmp_dir("shards-builtin");
    let sc = write(&dir, "s.toml", &scenario("builtin = \"default\""));
    let dirs = run_shards(&sc, &dir);
    let w = merge(&dirs, &dir.join("merged"));
    assert_eq!(w.code(), 0, "{}", w.stderr);
    assert!(w.stderr.contains("upper bounds"), "{}", w.stderr);
    for f in [
        "summary.json",
        "summary.csv",
        "timeseries.csv",
        "index.html",
    ] {
        assert!(dir.join("merged").join(f).exists(), "{f}");
    }
    run_one(&sc, &dir.join("one"));
    let merged = summary(&dir.join("merged"));
    assert_same_experiment(&merged, &summary(&dir.join("one")));
    assert_latency_is_of_every_sample(&merged, &dirs);
    // The built-in targets' own counts: every attempt arrived, and the shards' targets
    // together counted the merged figure.
    for name in ["naive", "aws"] {
        let arrivals: u64 = dirs
            .iter()
            .map(|d| {
                let dump: Dump = Dump::read(d).unwrap();
                dump.configs
                    .iter()
                    .find(|c| c.name == name)
                    .unwrap()
                    .target
                    .arrivals
            })
            .sum();
        assert_eq!(config(&merged, name)["downstream_arrivals"], arrivals);
        assert_eq!(config(&merged, name)["attempts"], arrivals);
    }
    // Per-second series add up to the totals.
    let ts = std::fs::read_to_string(dir.join("merged/timeseries.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(ts.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (c_config, c_attempts) = (col("config"), col("attempts"));
    let naive_attempts: u64 = rdr
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[c_config] == "naive")
        .map(|r| r[c_attempts].parse::<u64>().unwrap())
        .sum();
    assert_eq!(config(&merged, "naive")["attempts"], naive_attempts);
}

#[test]
fn four_shards_against_nginx_match_its_access_log_and_one_process() {
    let nginx = Nginx::start();
    let dir = tmp_dir("shards-nginx");
    let target = format!("url = \"http://127.0.0.1:{}\"", nginx.port);
    let sc = write(&dir, "s.toml", &scenario(&target));
    let before = nginx.log().len();
    let dirs = run_shards(&sc, &dir);
    let w = merge(&dirs, &dir.join("merged"));
    assert_eq!(w.code(), 0, "{}", w.stderr);
    let merged = summary(&dir.join("merged"));
    // The proxy answers the injected 503s itself; what it forwarded is what nginx logged.
    let forwarded: u64 = merged["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["target_forwarded"].as_u64().unwrap())
        .sum();
    let logged = nginx.log().len() - before;
    assert_eq!(
        forwarded, logged as u64,
        "forwarded = nginx's access log lines"
    );
    let between = nginx.log().len();
    run_one(&sc, &dir.join("one"));
    let one = summary(&dir.join("one"));
    assert_same_experiment(&merged, &one);
    let one_forwarded: u64 = one["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["target_forwarded"].as_u64().unwrap())
        .sum();
    assert_eq!(one_forwarded, (nginx.log().len() - between) as u64);
    assert_eq!(one_forwarded, forwarded);
    assert_latency_is_of_every_sample(&merged, &dirs);
}

fn exit_2(mut cmd: Command, names: &[&str]) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for n in names {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
}

#[test]
fn bad_shards_and_mismatched_merges_exit_2_naming_the_field() {
    let dir = tmp_dir("shards-refused");
    let one_client = support::three_seconds_of_503("solo", "aws-standard")
        .replace("[load]", "[load]\nclients = 1");
    let solo = write(&dir, "solo.toml", &one_client);
    let run = |args: &[&str]| {
        let mut c = bin();
        c.arg("run").arg(&solo).args(args).arg("-q");
        c.env_remove("JOB_COMPLETION_INDEX");
        c
    };
    exit_2(
        run(&["--shard", "1/2"]),
        &["solo.toml", "2 shards", "1 client"],
    );
    exit_2(run(&["--shard", "2/2"]), &["--shard 2/2", "not below"]);
    exit_2(run(&["--shard", "x"]), &["--shard x"]);
    exit_2(run(&["--shards", "2"]), &["JOB_COMPLETION_INDEX"]);
    exit_2(
        run(&["--start-at", "2020-01-01T00:00:00Z"]),
        &["--start-at", "past"],
    );
    exit_2(run(&["--start-at", "2999-01-01T00:00:00Z"]), &["ahead"]);
    exit_2(run(&["--start-at", "tomorrow"]), &["RFC 3339"]);

    // A shard run each of two, kept short with --duration (which the dump records).
    let sc = write(&dir, "s.toml", &scenario("builtin = \"default\""));
    let shard = |i: u32, out: &str, extra: &[&str]| {
        let mut c = bin();
        c.arg("run")
            .arg(&sc)
            .arg(format!("--shard={i}/2"))
            .arg("--out")
            .arg(dir.join(out))
            .args(extra)
            .args(["--duration", "1s", "-q"]);
        let w = watch(c, Duration::from_secs(60));
        assert_eq!(w.code(), 0, "{}", w.stderr);
        dir.join(out)
    };
    let (a, b) = (shard(0, "a", &[]), shard(1, "b", &[]));
    let other_seed = shard(1, "c", &["--seed", "9"]);
    let m = |dirs: &[&Path]| {
        let mut c = bin();
        c.arg("merge").args(dirs).arg("--out").arg(dir.join("m"));
        c
    };
    exit_2(m(&[&a]), &["1 of 2 missing"]);
    exit_2(m(&[&a, &a, &b]), &["shard 0/2 is also in"]);
    exit_2(m(&[&a, &other_seed]), &["seed", "/c"]);
    exit_2(m(&[&a, &dir]), &["no shard.json"]);
    // The scenario file changed since the shards ran.
    std::fs::write(&sc, scenario("builtin = \"default\"") + "\n# edited\n").unwrap();
    exit_2(m(&[&a, &b]), &["scenario_sha256", "--scenario"]);
}

#[test]
fn k8s_manifests_pass_the_kubernetes_schemas() {
    let dir = tmp_dir("shards-k8s");
    let sc = support::repo_root().join("scenarios/thousand-clients.toml");
    let out = support::process::succeed(
        bin()
            .arg("k8s")
            .arg(&sc)
            .args(["--shards", "20", "--image", "registry.example/stormrig:1"])
            .args(["--namespace", "storm", "--start-delay", "90s"]),
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "completionMode: Indexed",
        "completions: 20",
        "parallelism: 20",
        "--shards=20",
        "job-completion-index",
        "kind: ConfigMap",
        "kind: PersistentVolumeClaim",
        "ttlSecondsAfterFinished: 86400",
        "whenUnsatisfiable: ScheduleAnyway",
        "runAsNonRoot: true",
    ] {
        assert!(yaml.contains(needle), "{needle} missing from:\n{yaml}");
    }
    let file = write(&dir, "storm.yaml", &yaml);
    let python = support::python::python();
    let validate = python.with_file_name("kubernetes-validate");
    for version in ["1.30.0", "1.33.0"] {
        let v = Command::new(&validate)
            .args(["--strict", "-k", version])
            .arg(&file)
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&v.stdout).to_string() + &String::from_utf8_lossy(&v.stderr);
        assert!(v.status.success(), "kubernetes {version}: {text}");
        assert_eq!(text.matches("passed for resource").count(), 4, "{text}");
    }
    // A fleet smaller than the shard count is refused, as `run --shard` refuses it.
    let mut c = bin();
    c.arg("k8s")
        .arg(support::repo_root().join("scenarios/downstream-503-10s.toml"))
        .args(["--shards", "2", "--image", "x"]);
    exit_2(c, &["downstream-503-10s.toml", "--shards 2", "1 client"]);
}

/// The manifests' pods against the restricted Pod Security profile, and their commands
/// rehearsed on this machine exactly as the pods would run them (paths moved under a
/// temporary folder): two shards from the common start, then the merge's wait and merge;
/// then the merge's wait meeting a shard that failed and a shard that never wrote its
/// summary, each named, each failing at once with the code its pod failure policy ends
/// the Job on.
#[test]
fn k8s_pods_are_restricted_and_their_commands_shard_merge_and_name_a_failed_shard() {
    use support::pod_security::restricted_violations;
    let dir = tmp_dir("shards-k8s-local");
    let sc = write(&dir, "s.toml", &scenario("builtin = \"default\""));
    let out = support::process::succeed(
        bin()
            .arg("k8s")
            .arg(&sc)
            .args(["--shards", "2", "--image", "x", "--start-delay", "5s"])
            .args(["--ttl", "1h", "--spread", "strict"]),
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_norway::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let jobs: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Job").collect();
    assert_eq!(jobs.len(), 2);
    // The checker is not vacuous: a pod without a security context breaks it.
    let mut bare = jobs[0]["spec"]["template"]["spec"].clone();
    bare["securityContext"] = Value::Null;
    bare["containers"][0]["securityContext"] = Value::Null;
    assert!(restricted_violations(&bare).len() >= 4, "{bare}");

    let run_id = docs[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .strip_prefix("shards-")
        .and_then(|n| n.strip_suffix("-scenario"))
        .unwrap()
        .to_string();
    assert_eq!(run_id.len(), 14, "{run_id}");
    for d in &docs {
        let name = d["metadata"]["name"].as_str().unwrap();
        assert!(name.contains(&run_id), "{name}");
    }
    for job in &jobs {
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(restricted_violations(pod), Vec::<String>::new(), "{pod}");
        assert_eq!(job["spec"]["ttlSecondsAfterFinished"], 3600);
    }
    let shard_pod = &jobs[0]["spec"]["template"]["spec"];
    assert_eq!(
        shard_pod["topologySpreadConstraints"][0]["whenUnsatisfiable"],
        "DoNotSchedule"
    );

    // The pods' commands, here: the scenario and results paths moved into `dir`.
    let results = dir.join("results");
    let local = |job: &Value| {
        job["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap()
            .replace("/scenario/scenario.toml", sc.to_str().unwrap())
            .replace("/results", results.to_str().unwrap())
    };
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_stormrig")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let sh = |script: &str, index: Option<u32>| {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(script).env("PATH", &path);
        if let Some(i) = index {
            c.env("SHARD_INDEX", i.to_string())
                .env("JOB_COMPLETION_INDEX", i.to_string());
        }
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    };
    let (shard_script, merge_script) = (local(jobs[0]), local(jobs[1]));
    let shards: Vec<_> = (0..2)
        .map(|i| sh(&shard_script, Some(i)).spawn().unwrap())
        .collect();
    let merge = sh(&merge_script, None).spawn().unwrap();
    for (i, child) in shards.into_iter().enumerate() {
        let w = wait_watched(child, std::time::Instant::now(), Duration::from_secs(60));
        assert_eq!(w.code(), 0, "shard {i}: {}", w.stderr);
    }
    let w = wait_watched(merge, std::time::Instant::now(), Duration::from_secs(60));
    assert_eq!(w.code(), 0, "merge: {}", w.stderr);
    let run_dir = results.join(&run_id);
    let merged = summary(&run_dir.join("merged"));
    assert_eq!(merged["shards"], 2, "{merged}");
    for i in 0..2 {
        let exit = std::fs::read_to_string(run_dir.join(format!("shard-{i}.exit"))).unwrap();
        assert_eq!(exit.trim(), "0");
    }

    // Shard 1 failed before its summary: the merge names it and ends with 42.
    let shard_1 = run_dir.join("shard-1");
    std::fs::remove_file(shard_1.join("summary.json")).unwrap();
    std::fs::write(run_dir.join("shard-1.exit"), "2\n").unwrap();
    let w = watch(sh(&merge_script, None), Duration::from_secs(30));
    assert_eq!(
        w.code(),
        i32::from(stormrig::shard::k8s::MERGE_SHARD_FAILED),
        "{}",
        w.stderr
    );
    assert!(
        w.stderr.contains("shard-1 failed with exit 2"),
        "{}",
        w.stderr
    );
    // Shard 1 never ran and its time is up: the merge names it and ends with 43.
    std::fs::remove_file(run_dir.join("shard-1.exit")).unwrap();
    let gt = merge_script.find("-gt ").unwrap() + 4;
    let end = gt + merge_script[gt..].find(' ').unwrap();
    let past = format!("{}0{}", &merge_script[..gt], &merge_script[end..]);
    let w = watch(sh(&past, None), Duration::from_secs(30));
    assert_eq!(
        w.code(),
        i32::from(stormrig::shard::k8s::MERGE_SHARD_MISSING),
        "{}",
        w.stderr
    );
    assert!(
        w.stderr.contains("shard-1 wrote no summary"),
        "{}",
        w.stderr
    );
}
