//! The "restricted" Pod Security Standard, checked on a pod spec as the Kubernetes
//! documentation states it (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>,
//! the baseline and restricted tables as of Kubernetes 1.30). No admission controller runs
//! here: this rests on reading the published standard, rule by rule.

use serde_json::Value;

/// Volume types the restricted profile allows.
const VOLUME_TYPES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// Sysctls the baseline profile allows.
const SAFE_SYSCTLS: [&str; 7] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
];

/// Every rule of the restricted profile (which includes the baseline) that `pod` breaks,
/// one line each; empty when the pod would be admitted.
pub fn restricted_violations(pod: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let psc = &pod["securityContext"];
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod[host] == Value::Bool(true) {
            out.push(format!("{host} is true"));
        }
    }
    if psc["windowsOptions"]["hostProcess"] == Value::Bool(true) {
        out.push("pod hostProcess".into());
    }
    for s in psc["sysctls"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or("");
        if !SAFE_SYSCTLS.contains(&name) {
            out.push(format!("sysctl {name} is not in the safe set"));
        }
    }
    for v in pod["volumes"].as_array().into_iter().flatten() {
        let kinds: Vec<&String> = v
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        for k in kinds.into_iter().filter(|k| k.as_str() != "name") {
            if !VOLUME_TYPES.contains(&k.as_str()) {
                out.push(format!("volume {} of type {k}", v["name"]));
            }
        }
    }
    let pod_non_root = psc["runAsNonRoot"] == Value::Bool(true);
    let pod_seccomp = seccomp_ok(&psc["seccompProfile"]);
    if psc["runAsUser"] == 0 {
        out.push("pod runAsUser is 0".into());
    }
    if psc["seccompProfile"]["type"] == "Unconfined" {
        out.push("pod seccomp profile Unconfined".into());
    }
    let containers = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| pod[*k].as_array().into_iter().flatten());
    for c in containers {
        let name = c["name"].as_str().unwrap_or("?");
        let sc = &c["securityContext"];
        if sc["privileged"] == Value::Bool(true) {
            out.push(format!("{name}: privileged"));
        }
        if sc["windowsOptions"]["hostProcess"] == Value::Bool(true) {
            out.push(format!("{name}: hostProcess"));
        }
        if sc["allowPrivilegeEscalation"] != Value::Bool(false) {
            out.push(format!("{name}: allowPrivilegeEscalation is not false"));
        }
        let non_root = match &sc["runAsNonRoot"] {
            Value::Bool(b) => *b,
            _ => pod_non_root,
        };
        if !non_root {
            out.push(format!("{name}: runAsNonRoot is not true"));
        }
        if sc["runAsUser"] == 0 {
            out.push(format!("{name}: runAsUser is 0"));
        }
        let seccomp = match &sc["seccompProfile"] {
            Value::Null => pod_seccomp,
            p => seccomp_ok(p),
        };
        if !seccomp {
            out.push(format!(
                "{name}: seccomp profile is not RuntimeDefault or Localhost"
            ));
        }
        let caps = &sc["capabilities"];
        let drops_all = caps["drop"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "ALL"));
        if !drops_all {
            out.push(format!("{name}: capabilities do not drop ALL"));
        }
        for add in caps["add"].as_array().into_iter().flatten() {
            if add != "NET_BIND_SERVICE" {
                out.push(format!("{name}: adds capability {add}"));
            }
        }
        for p in c["ports"].as_array().into_iter().flatten() {
            if p["hostPort"].as_u64().is_some_and(|h| h != 0) {
                out.push(format!("{name}: hostPort {}", p["hostPort"]));
            }
        }
        if !matches!(sc["procMount"].as_str(), None | Some("Default")) {
            out.push(format!("{name}: procMount {}", sc["procMount"]));
        }
    }
    out
}

fn seccomp_ok(profile: &Value) -> bool {
    matches!(
        profile["type"].as_str(),
        Some("RuntimeDefault" | "Localhost")
    )
}
