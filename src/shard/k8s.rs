//! Kubernetes manifests for a sharded storm, as data: a ConfigMap holding the scenario, a
//! PersistentVolumeClaim the results go to, an Indexed Job with one pod per shard (the pod's
//! completion index is its shard) and a merge Job that waits for every shard's finished run
//! directory and merges them. The CLI prints them as YAML.
//!
//! Results go to one ReadWriteMany claim rather than each pod's emptyDir: an emptyDir dies
//! with its pod, and the merge needs every shard's directory in one place; a shared claim
//! needs no object store, no sidecar and no credentials.

use serde_json::{json, Value};

/// Requests one core serves: the live engine drives about 120k requests per second on one
/// core against nginx; half that leaves room for TLS, retries' bookkeeping and a busy node.
pub const REQUESTS_PER_CORE: f64 = 60_000.0;

/// Everything the manifests are made of.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Object name prefix: the scenario's name made a DNS label.
    pub name: String,
    /// This run's id (the common start as `YYYYMMDDhhmmss`): it ends every object's name
    /// and names the results folder, so a second run never collides with the first's
    /// immutable Job templates, nor reads its shard summaries.
    pub run_id: String,
    pub namespace: String,
    pub image: String,
    /// The scenario file's text and its file name inside the ConfigMap.
    pub scenario_text: String,
    pub shards: u32,
    /// The common start, RFC 3339 in UTC.
    pub start_at: String,
    /// Attempts per second one shard sends at most: every config's upstream rate times its
    /// amplification bound, divided among the shards.
    pub attempts_per_s_per_shard: f64,
    /// Seconds from now until the merge may give up: start delay, load, drain, and slack.
    pub deadline_s: u64,
    /// The instant (Unix seconds) by which every shard has written its summary or failed:
    /// the common start, the load, the drain and a slack. The merge names a shard that has
    /// not, rather than waiting out its own deadline in silence.
    pub shards_done_by: u64,
    pub storage: String,
    pub storage_class: Option<String>,
    /// How strictly shard pods are spread over nodes.
    pub spread: Spread,
    /// Seconds a finished Job (and its pods, with their logs) is kept before the cluster
    /// deletes it. The results stay on the claim.
    pub ttl_s: u64,
}

/// How strictly shard pods are spread over nodes: many source addresses are the point of
/// sharding, and four shards on one node share its one address and network card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Prefer distinct nodes, but still schedule when they are full: a pod scheduled late
    /// refuses to start after the common start, so the soft form is the default.
    Soft,
    /// Never place a shard where one node would hold two more shards than another.
    Strict,
}

/// The user and group the pods run as: any non-root id satisfies the restricted Pod
/// Security profile; 65532 is the "nonroot" user of distroless images.
const NON_ROOT: u64 = 65_532;

/// Exit codes of the merge pod's wait. Each fails the merge Job at once through its pod
/// failure policy: a retry of the merge cannot bring back a shard that failed.
pub const MERGE_SHARD_FAILED: u8 = 42;
pub const MERGE_SHARD_MISSING: u8 = 43;

/// Where things are mounted in the pods.
const SCENARIO_DIR: &str = "/scenario";
const SCENARIO_FILE: &str = "scenario.toml";
const RESULTS_DIR: &str = "/results";
/// Writable scratch space: the root filesystem is read-only.
const TMP_DIR: &str = "/tmp";

/// `text` as a DNS-1123 label of at most `max` characters (lowercase alphanumerics and
/// '-', starting and ending alphanumeric).
pub fn dns_label(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    out.truncate(max);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "storm".into()
    } else {
        out
    }
}

/// A flag value the Kubernetes API server would refuse, caught before the manifests are
/// printed: `kubectl apply` would otherwise fail on it after the common start was fixed,
/// or, worse, apply some objects and not others.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error(
        "{flag} {value:?}: not a DNS-1123 label, as Kubernetes requires of a {what}: at most \
         63 characters, lowercase letters, digits and '-', starting and ending with a letter \
         or digit"
    )]
    Label {
        flag: &'static str,
        what: &'static str,
        value: String,
    },
    #[error(
        "{flag} {value:?}: not a DNS-1123 subdomain, as Kubernetes requires of a {what}: at \
         most 253 characters, DNS-1123 labels (lowercase letters, digits and '-', starting \
         and ending with a letter or digit) joined by '.'"
    )]
    Subdomain {
        flag: &'static str,
        what: &'static str,
        value: String,
    },
    #[error(
        "{flag} {value:?}: not a Kubernetes quantity: digits with an optional decimal part, \
         then an optional suffix among Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent \
         such as e9 (e.g. 10Gi)"
    )]
    Quantity { flag: &'static str, value: String },
    #[error(
        "{flag} {value:?}: a storage request must be greater than zero, as Kubernetes requires"
    )]
    Zero { flag: &'static str, value: String },
}

/// Whether `s` is a DNS-1123 label: what Kubernetes requires of a namespace's name.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&b.len())
        && b.iter().all(inner)
        && b.first().is_some_and(end)
        && b.last().is_some_and(end)
}

/// Whether `s` is a DNS-1123 subdomain: what Kubernetes requires of most object names (a
/// StorageClass's among them).
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Checks `value` of `flag` as a namespace name.
pub fn namespace(flag: &'static str, value: &str) -> Result<(), ValueError> {
    if is_dns_label(value) {
        Ok(())
    } else {
        Err(ValueError::Label {
            flag,
            what: "namespace",
            value: value.to_string(),
        })
    }
}

/// Checks `value` of `flag` as a StorageClass name.
pub fn storage_class(flag: &'static str, value: &str) -> Result<(), ValueError> {
    if is_dns_subdomain(value) {
        Ok(())
    } else {
        Err(ValueError::Subdomain {
            flag,
            what: "StorageClass name",
            value: value.to_string(),
        })
    }
}

/// Checks `value` of `flag` as a storage request: a Kubernetes resource quantity (the
/// grammar of `k8s.io/apimachinery`'s `resource.Quantity`) above zero, which is what a
/// PersistentVolumeClaim's `resources.requests.storage` must be. A sign is refused: a
/// negative size is never valid, and `+` only invites doubt.
pub fn storage(flag: &'static str, value: &str) -> Result<(), ValueError> {
    let bad = || ValueError::Quantity {
        flag,
        value: value.to_string(),
    };
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, suffix) = value.split_at(split);
    let digits: String = number.chars().filter(|c| *c != '.').collect();
    if digits.is_empty() || number.matches('.').count() > 1 {
        return Err(bad());
    }
    let suffix_ok = match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        _ => {
            // An exponent: e or E, an optional sign, then digits.
            let rest = suffix.strip_prefix(['e', 'E']).unwrap_or("");
            let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            suffix.len() > 1 && !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_digit())
        }
    };
    if !suffix_ok {
        return Err(bad());
    }
    if digits.bytes().all(|c| c == b'0') {
        return Err(ValueError::Zero {
            flag,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// CPU (millicores) and memory (MiB) one shard requests for `attempts_per_s`: a quarter of
/// a core at least, one core per [`REQUESTS_PER_CORE`]; 256 MiB plus 64 MiB per 10k
/// attempts per second (in-flight requests, connections, per-second histograms).
pub fn resources(attempts_per_s: f64) -> (u64, u64) {
    let cpu_m = ((attempts_per_s / REQUESTS_PER_CORE) * 1000.0).ceil() as u64;
    let mem_mi = 256 + ((attempts_per_s / 10_000.0).ceil() as u64) * 64;
    (cpu_m.max(250), mem_mi)
}

/// The manifests, in the order they are applied.
pub fn manifests(s: &Spec) -> Vec<Value> {
    let prefix = s.prefix();
    let labels = json!({ "app.kubernetes.io/name": "stormrig", "stormrig/run": prefix });
    let meta = |name: String| json!({ "name": name, "namespace": s.namespace, "labels": labels });
    let config_map = format!("{prefix}-scenario");
    let claim = format!("{prefix}-results");
    let volumes = json!([
        { "name": "scenario", "configMap": { "name": config_map } },
        { "name": "results", "persistentVolumeClaim": { "claimName": claim } },
        { "name": "tmp", "emptyDir": {} },
    ]);
    let mounts = json!([
        { "name": "scenario", "mountPath": SCENARIO_DIR, "readOnly": true },
        { "name": "results", "mountPath": RESULTS_DIR },
        { "name": "tmp", "mountPath": TMP_DIR },
    ]);

    let mut pvc_spec = json!({
        "accessModes": ["ReadWriteMany"],
        "resources": { "requests": { "storage": s.storage } },
    });
    if let Some(class) = &s.storage_class {
        pvc_spec["storageClassName"] = json!(class);
    }

    let pod = Pod {
        run: &prefix,
        volumes: &volumes,
        mounts: &mounts,
    };
    let shard_job = shard_job(s, &pod, meta(format!("{prefix}-shards")));
    let merge_job = merge_job(s, &pod, meta(format!("{prefix}-merge")));

    vec![
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(config_map.clone()),
            "data": { SCENARIO_FILE: s.scenario_text },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta(claim.clone()),
            "spec": pvc_spec,
        }),
        shard_job,
        merge_job,
    ]
}

impl Spec {
    /// What every object's name starts with: the scenario's name and the run id.
    pub fn prefix(&self) -> String {
        format!("{}-{}", self.name, self.run_id)
    }

    /// This run's folder on the claim.
    fn results(&self) -> String {
        format!("{RESULTS_DIR}/{}", self.run_id)
    }
}

/// The run id of a run starting at `start`: its UTC time as `YYYYMMDDhhmmss`, a DNS label
/// that sorts in time order.
pub fn run_id(start: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(start)
        .to_string()
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}

/// What the shard pods and the merge pod share: the run's label, volumes and mounts.
struct Pod<'a> {
    run: &'a str,
    volumes: &'a Value,
    mounts: &'a Value,
}

impl Pod<'_> {
    /// Labels of a pod of `role`: the run's, so a selector finds this run's pods only.
    fn labels(&self, role: &str) -> Value {
        json!({
            "app.kubernetes.io/name": "stormrig",
            "stormrig/run": self.run,
            "stormrig/role": role,
        })
    }

    /// A pod spec that the restricted Pod Security profile admits (non-root, no privilege
    /// escalation, every capability dropped, the runtime's default seccomp profile), with a
    /// read-only root filesystem: stormrig writes only to the results claim.
    fn spec(&self, container: Value) -> Value {
        let mut container = container;
        container["volumeMounts"] = self.mounts.clone();
        container["securityContext"] = json!({
            "allowPrivilegeEscalation": false,
            "capabilities": { "drop": ["ALL"] },
            "readOnlyRootFilesystem": true,
        });
        json!({
            "restartPolicy": "Never",
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": NON_ROOT,
                "runAsGroup": NON_ROOT,
                // The claim's files become writable by the pods' group.
                "fsGroup": NON_ROOT,
                "seccompProfile": { "type": "RuntimeDefault" },
            },
            "containers": [container],
            "volumes": self.volumes,
        })
    }
}

/// The indexed Job whose pods each run one shard, all from the common start.
fn shard_job(s: &Spec, pod: &Pod<'_>, metadata: Value) -> Value {
    let scenario = format!("{SCENARIO_DIR}/{SCENARIO_FILE}");
    let results = s.results();
    let (cpu_m, mem_mi) = resources(s.attempts_per_s_per_shard);
    // The shard's exit code is left beside its folder, so the merge can tell a shard that
    // failed (refused to start late, bad input) from one still running.
    let run_and_record = format!(
        "mkdir -p {results} && stormrig run {scenario} --shards={shards} \
         --start-at={start} --out={results}/shard-$SHARD_INDEX --quiet; rc=$?; \
         echo $rc > {results}/shard-$SHARD_INDEX.exit; exit $rc",
        shards = s.shards,
        start = s.start_at,
    );
    let mut spec = pod.spec(json!({
        "name": "shard",
        "image": s.image,
        "command": ["/bin/sh", "-c", run_and_record],
        // The Job controller sets JOB_COMPLETION_INDEX itself (stormrig reads it);
        // SHARD_INDEX names the output folder.
        "env": [{
            "name": "SHARD_INDEX",
            "valueFrom": { "fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            } },
        }],
        "resources": {
            "requests": { "cpu": format!("{cpu_m}m"), "memory": format!("{mem_mi}Mi") },
            "limits": { "memory": format!("{}Mi", mem_mi * 2) },
        },
    }));
    spec["topologySpreadConstraints"] = json!([{
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": match s.spread {
            Spread::Soft => "ScheduleAnyway",
            Spread::Strict => "DoNotSchedule",
        },
        "labelSelector": { "matchLabels": { "stormrig/run": pod.run, "stormrig/role": "shard" } },
    }]);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": s.shards,
            "parallelism": s.shards,
            // A shard run again would start after the common start and not line up.
            "backoffLimit": 0,
            "activeDeadlineSeconds": s.deadline_s,
            "ttlSecondsAfterFinished": s.ttl_s,
            "template": { "metadata": { "labels": pod.labels("shard") }, "spec": spec },
        },
    })
}

/// The Job that waits for every shard's summary and merges them; it names the first shard
/// that failed or is missing and fails at once, rather than waiting out its deadline.
fn merge_job(s: &Spec, pod: &Pod<'_>, metadata: Value) -> Value {
    let results = s.results();
    let dirs: Vec<String> = (0..s.shards)
        .map(|i| format!("{results}/shard-{i}"))
        .collect();
    let wait_and_merge = format!(
        "for d in {dirs}; do \
           until [ -f \"$d/summary.json\" ]; do \
             if [ -f \"$d.exit\" ] && [ \"$(cat \"$d.exit\")\" != 0 ]; then \
               echo \"stormrig: shard $d failed with exit $(cat \"$d.exit\") before writing its summary; see its pod's log\" >&2; \
               exit {failed}; \
             fi; \
             if [ \"$(date +%s)\" -gt {done_by} ]; then \
               echo \"stormrig: shard $d wrote no summary by {done_by} (Unix time): its pod never started, was evicted or was killed\" >&2; \
               exit {missing}; \
             fi; \
             sleep 5; \
           done; \
         done; \
         exec stormrig merge {dirs} --out {results}/merged",
        dirs = dirs.join(" "),
        failed = MERGE_SHARD_FAILED,
        missing = MERGE_SHARD_MISSING,
        done_by = s.shards_done_by,
    );
    let spec = pod.spec(json!({
        "name": "merge",
        "image": s.image,
        "command": ["/bin/sh", "-c", wait_and_merge],
        "resources": {
            "requests": { "cpu": "250m", "memory": "256Mi" },
            "limits": { "memory": "1Gi" },
        },
    }));
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 2,
            // A shard that failed or is missing will not come back on a retry.
            "podFailurePolicy": { "rules": [{
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": "merge",
                    "operator": "In",
                    "values": [MERGE_SHARD_FAILED, MERGE_SHARD_MISSING],
                },
            }] },
            "activeDeadlineSeconds": s.deadline_s + 600,
            "ttlSecondsAfterFinished": s.ttl_s,
            "template": { "metadata": { "labels": pod.labels("merge") }, "spec": spec },
        },
    })
}

/// The manifests as one YAML stream (documents separated by `---`).
pub fn yaml(docs: &[Value]) -> Result<String, serde_norway::Error> {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(d)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_sizes() {
        assert_eq!(dns_label("Thousand_Clients!", 40), "thousand-clients");
        assert_eq!(dns_label("---", 40), "storm");
        assert_eq!(resources(0.0), (250, 256));
        assert_eq!(resources(120_000.0), (2000, 256 + 12 * 64));
    }

    #[test]
    fn values_as_the_api_server_checks_them() {
        for ok in ["default", "storm", "a", "team-7", &"a".repeat(63)] {
            assert_eq!(namespace("--namespace", ok), Ok(()), "{ok}");
        }
        for bad in ["Prod", "", "-a", "a-", "a.b", "a_b", &"a".repeat(64)] {
            assert!(namespace("--namespace", bad).is_err(), "{bad:?}");
        }
        for ok in ["nfs", "efs.csi.aws.com", "fast-1"] {
            assert_eq!(storage_class("--storage-class", ok), Ok(()), "{ok}");
        }
        for bad in ["NFS", "a..b", ".a", "a.", &"a".repeat(254)] {
            assert!(storage_class("--storage-class", bad).is_err(), "{bad:?}");
        }
        for ok in [
            "1Gi", "10", "1.5Gi", "500M", ".5Ti", "1.", "1e3", "2E+2", "100m", "1E",
        ] {
            assert_eq!(storage("--storage", ok), Ok(()), "{ok}");
        }
        for bad in [
            "lots", "", "Gi", "1GB", "1gi", "1 Gi", "-1Gi", "+1Gi", "1e", "1e+", "1..2",
        ] {
            assert!(
                matches!(storage("--storage", bad), Err(ValueError::Quantity { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            storage("--storage", "0Gi"),
            Err(ValueError::Zero { .. })
        ));
        assert!(matches!(
            storage("--storage", "0.0"),
            Err(ValueError::Zero { .. })
        ));
    }
}
