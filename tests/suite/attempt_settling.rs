//! Every live attempt ends with exactly one outcome, and the generator's own limits are
//! never the target's: an attempt the in-process target never read is `not-accepted`, one
//! still unanswered when the drain ends is `unfinished`. Each case is provoked
//! deterministically (a 64-descriptor limit set in the child, a drain shorter than the
//! service time), never by loading the machine. All traffic stays on 127.0.0.1.

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::process::{bin, limit_open_files, tmp_dir, watch, write};

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).unwrap()
}

/// A config's attempts, downstream arrivals and count of each outcome label.
struct Counted {
    attempts: u64,
    arrivals: u64,
    by: serde_json::Map<String, serde_json::Value>,
}

impl Counted {
    fn of(s: &serde_json::Value) -> Counted {
        let c = &s["configs"][0];
        Counted {
            attempts: c["attempts"].as_u64().unwrap(),
            arrivals: c["downstream_arrivals"].as_u64().unwrap(),
            by: c["attempts_by_outcome"].as_object().unwrap().clone(),
        }
    }

    fn label(&self, l: &str) -> u64 {
        self.by.get(l).and_then(|v| v.as_u64()).unwrap_or(0)
    }

    /// attempts == outcomes, and arrivals + never read == attempts.
    fn assert_exact(&self) {
        let outcomes: u64 = self.by.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(
            self.attempts, outcomes,
            "every attempt has one outcome: {:?}",
            self.by
        );
        assert_eq!(
            self.arrivals + self.label("not-accepted") + self.label("local-resource"),
            self.attempts,
            "every attempt is an arrival or was never read: {:?}",
            self.by
        );
    }
}

#[test]
fn under_64_descriptors_unread_attempts_are_not_accepted_never_timeouts() {
    let dir = tmp_dir("settle-fd64");
    // Requests held 2 s, given up after 0.5 s: each give-up frees the client's descriptor
    // while the target still holds its own, so the next connection is queued by the kernel
    // that the target cannot accept (the generator and its target share the 64).
    let p = write(
        &dir,
        "s.toml",
        "name = \"fd-starved\"\nduration = \"2s\"\ndrain = \"1s\"\n[load]\nkind = \"constant\"\nrate = 1000.0\n[target]\nbuiltin = \"default\"\nservice = { concurrency = 100000, service_time = { kind = \"constant\", value = \"2s\" } }\n[[configs]]\npreset = \"naive\"\nper_try_timeout = \"500ms\"\n",
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    limit_open_files(&mut cmd, 64);
    let w = watch(cmd, Duration::from_secs(60));
    assert!(w.code() == 0 || w.code() == 3, "{}", w.stderr);
    let c = Counted::of(&summary(&out));
    eprintln!(
        "attempts {}, arrivals {}, outcomes {:?}",
        c.attempts, c.arrivals, c.by
    );
    c.assert_exact();
    let never = c.label("not-accepted");
    assert!(never > 0, "{:?}", c.by);
    assert!(
        w.stderr.contains(&format!(
            "{never} attempts were never read by the in-process target"
        )),
        "{}",
        w.stderr
    );
    assert!(w.stderr.contains("(ulimit -n) 64"), "{}", w.stderr);
}

#[test]
fn an_attempt_held_past_the_drain_is_unfinished_and_still_an_arrival() {
    let dir = tmp_dir("settle-drain");
    // Every request is held 5 s by the target; the run ends 1.2 s in.
    let p = write(
        &dir,
        "s.toml",
        "name = \"held-past-drain\"\nduration = \"1s\"\ndrain = \"200ms\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\nbuiltin = \"default\"\nservice = { concurrency = 1000, service_time = { kind = \"constant\", value = \"5s\" } }\n[[configs]]\npreset = \"naive\"\nper_try_timeout = \"30s\"\n",
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    let w = watch(cmd, Duration::from_secs(60));
    assert_eq!(w.code(), 0, "{}", w.stderr);
    let s = summary(&out);
    let c = Counted::of(&s);
    c.assert_exact();
    assert_eq!(c.attempts, 20, "{:?}", c.by);
    assert_eq!(c.label("unfinished"), c.attempts, "{:?}", c.by);
    assert_eq!(s["configs"][0]["unfinished"].as_u64(), Some(c.attempts));
}
