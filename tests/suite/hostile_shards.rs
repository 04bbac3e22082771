//! What `merge` and `k8s` take from outside: shard dumps a hostile or broken machine wrote
//! (forged counts, histograms that declare gigabytes, files that are no files) and flag
//! values the Kubernetes API server would refuse. Each is refused with exit 2 naming the
//! directory or flag and the rule, never a wrapped figure, an abort or a manifest that
//! `kubectl apply` rejects half-way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use crate::support;
use crate::support::process::{bin, tmp_dir, watch, write, Watched};

const SCENARIO: &str = r#"
name = "forged"
seed = 7
duration = "3s"
drain = "3s"

[load]
kind = "steps"
steps = [{ at = "0s", rate = 300.0 }, { at = "1s", rate = 0.0 }]
clients = 8

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "3s"

[[configs]]
name = "naive"
preset = "naive"
"#;

/// Two real shard runs of one second (0/2 and 1/2) in `dir`: `a` and `b`.
fn two_shards(dir: &Path) -> (PathBuf, PathBuf) {
    let sc = write(dir, "s.toml", SCENARIO);
    let shard = |i: u32, out: &str| {
        let mut c = bin();
        c.arg("run")
            .arg(&sc)
            .arg(format!("--shard={i}/2"))
            .arg("--out")
            .arg(dir.join(out))
            .args(["--duration", "1s", "-q"]);
        let w = watch(c, Duration::from_secs(60));
        assert_eq!(w.code(), 0, "{}", w.stderr);
        dir.join(out)
    };
    (shard(0, "a"), shard(1, "b"))
}

/// A copy of shard directory `from` named `name`, its dump edited by `edit`.
fn forged(from: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let to = from.with_file_name(name);
    std::fs::create_dir_all(&to).unwrap();
    let mut dump: Value =
        serde_json::from_slice(&std::fs::read(from.join("shard.json")).unwrap()).unwrap();
    edit(&mut dump);
    std::fs::write(to.join("shard.json"), serde_json::to_vec(&dump).unwrap()).unwrap();
    to
}

fn merge(dirs: &[&Path], out: &Path) -> Watched {
    let mut c: Command = bin();
    c.arg("merge").args(dirs).arg("--out").arg(out);
    watch(c, Duration::from_secs(30))
}

fn refused(w: &Watched, names: &[&str]) {
    assert_eq!(w.code(), 2, "{}", w.stderr);
    assert!(!w.stderr.contains("panicked"), "{}", w.stderr);
    for n in names {
        assert!(w.stderr.contains(n), "{n:?} not in: {}", w.stderr);
    }
}

#[test]
fn merge_refuses_forged_counts_and_histograms_naming_the_shard_and_field() {
    let dir = tmp_dir("hostile-shards");
    let (a, b) = two_shards(&dir);
    let m = dir.join("m");
    let honest = merge(&[&a, &b], &m);
    assert_eq!(honest.code(), 0, "{}", honest.stderr);

    // u64::MAX attempts in one second: added to the other shard's, the sum wrapped to a
    // few hundred attempts (fewer than the retries) and the merge exited 0.
    let wrap = forged(&b, "wrap", |d| {
        d["configs"][0]["recorder"]["seconds"][0]["attempts"] = Value::from(u64::MAX);
    });
    refused(
        &merge(&[&a, &wrap], &m),
        &["/wrap", "naive", "recorder.seconds.attempts", "2^53"],
    );
    // Counts a shard run never writes: more retries than attempts.
    let more_retries = forged(&b, "retries", |d| {
        let s = &mut d["configs"][0]["recorder"]["seconds"][0];
        s["retries"] = Value::from(s["attempts"].as_u64().unwrap() + 1);
    });
    refused(
        &merge(&[&a, &more_retries], &m),
        &["/retries", "retries <= attempts"],
    );
    // A target whose per-second arrivals do not add up to its total.
    let arrivals = forged(&b, "arrivals", |d| {
        d["configs"][0]["target"]["arrivals"] = Value::from(1u64 << 40);
    });
    refused(
        &merge(&[&a, &arrivals], &m),
        &["/arrivals", "arrivals_per_s adds up to arrivals"],
    );

    // A histogram whose V2 header declares 2^31 bytes of counts in a few bytes: the
    // reader allocated them (2.1 GB) before finding the bytes missing.
    let mut bytes = Vec::new();
    {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
    }
    bytes[4..8].copy_from_slice(&(1u32 << 31).to_be_bytes());
    let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let huge = forged(&b, "huge", |d| {
        d["configs"][0]["recorder"]["latency_us"] = Value::from(text);
    });
    let w = merge(&[&a, &huge], &m);
    refused(&w, &["/huge", "histogram", "declares 2147483648 bytes"]);
    assert!(
        w.peak_rss_kib < 200 * 1024,
        "the forged histogram cost {} KiB",
        w.peak_rss_kib
    );
}

#[test]
fn merge_reads_only_regular_files_of_bounded_size() {
    let dir = tmp_dir("hostile-shard-files");
    let (a, _) = two_shards(&dir);
    let m = dir.join("m");
    // A FIFO nobody writes to: opening it for reading blocked the merge forever.
    let fifo = dir.join("fifo");
    std::fs::create_dir_all(&fifo).unwrap();
    let made = Command::new("mkfifo")
        .arg(fifo.join("shard.json"))
        .status()
        .unwrap();
    assert!(made.success());
    refused(
        &merge(&[&a, &fifo], &m),
        &["/fifo/shard.json", "not a regular file"],
    );
    // A dump past the ceiling (sparse: no disk) is refused before it is read.
    let big = dir.join("big");
    std::fs::create_dir_all(&big).unwrap();
    let f = std::fs::File::create(big.join("shard.json")).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    let w = merge(&[&a, &big], &m);
    refused(&w, &["/big/shard.json", "size"]);
    assert!(w.peak_rss_kib < 200 * 1024, "{} KiB", w.peak_rss_kib);
}

fn k8s(extra: &[&str]) -> Output {
    bin()
        .arg("k8s")
        .arg(support::repo_root().join("scenarios/thousand-clients.toml"))
        .args(["--shards", "2", "--image", "registry.example/stormrig:1"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn k8s_refuses_what_the_api_server_would_refuse() {
    let long = "a".repeat(64);
    let cases: [(&[&str], &[&str]); 7] = [
        (
            &["--namespace", "Prod"],
            &["--namespace", "\"Prod\"", "DNS-1123 label"],
        ),
        (&["--namespace", &long], &["--namespace", "63 characters"]),
        (
            &["--namespace", "storm-"],
            &["--namespace", "DNS-1123 label"],
        ),
        (
            &["--storage", "lots"],
            &["--storage", "\"lots\"", "quantity", "Gi"],
        ),
        (&["--storage", "1GB"], &["--storage", "quantity"]),
        (&["--storage", "0Gi"], &["--storage", "greater than zero"]),
        (
            &["--storage-class", "Fast_NFS"],
            &["--storage-class", "DNS-1123 subdomain"],
        ),
    ];
    for (args, names) in cases {
        let out = k8s(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: printed manifests");
        for n in names {
            assert!(err.contains(n), "{args:?}: {n:?} not in: {err}");
        }
    }
    // What the API server takes passes, and lands in the manifests as given.
    let long_ok = "a".repeat(63);
    let out = k8s(&[
        "--namespace",
        &long_ok,
        "--storage",
        "1.5Gi",
        "--storage-class",
        "efs.csi.aws.com",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    for needle in [
        &format!("namespace: {long_ok}"),
        "storage: 1.5Gi",
        "storageClassName: efs.csi.aws.com",
    ] {
        assert!(yaml.contains(needle), "{needle} missing from:\n{yaml}");
    }
}
