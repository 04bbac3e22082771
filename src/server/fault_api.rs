//! The standalone proxy's fault API: faults added, listed, switched and removed while
//! traffic flows, as Toxiproxy users drive their proxies.
//!
//! Routes (under [`super::proxy::CONTROL_PREFIX`], behind the control checks of
//! [`super::proxy`]: token, `Host`, no `Origin`):
//! - `GET faults`: every fault with its id, state and counts, as JSON;
//! - `POST faults`: adds one; the body is one fault in the scenario format as JSON (`kind`
//!   and the fields that kind takes, `path`, `probability`), with `at` a delay from now
//!   (default `0s`) and `for` its length (absent: until removed); 201 and the fault;
//! - `GET` / `DELETE faults/{id}`; `POST faults/{id}/enable` and `.../disable`;
//! - `POST faults/start` (the `--faults` file's windows from now, replacing those started
//!   before) and `POST faults/stop` (removes every fault).
//!
//! Every fault's window is kept relative to the proxy's start, the epoch the server's
//! timeline runs from, so a change re-arms the whole set at once and a fault already active
//! stays active. A fault's `hits` count the requests it decided (status, reset, hang,
//! lost-response, and the connection-level bandwidth, slow-close and slicer; a latency fault
//! only delays and is not counted).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::{ArmedFaults, Resp, Shared};
use crate::scenario::model::{Fault, FaultSection};
use crate::scenario::validate;

/// How long a fault added without `for` lasts: until removed, in practice.
pub(crate) const UNTIL_REMOVED: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Where a fault came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The `--faults` file, started by `POST faults/start`.
    File,
    /// `POST faults`.
    Api,
}

/// One fault the proxy knows, enabled or not.
struct Entry {
    id: u64,
    /// Its window relative to the registry's epoch.
    fault: Fault,
    until_removed: bool,
    enabled: bool,
    source: Source,
    hits: Arc<AtomicU64>,
}

/// Where a fault is in its life, as the list shows it.
fn state(e: &Entry, now: Duration) -> &'static str {
    if !e.enabled {
        "disabled"
    } else if now < e.fault.at {
        "scheduled"
    } else if e.fault.active_at(now) {
        "active"
    } else {
        "expired"
    }
}

/// The standalone proxy's faults: the `--faults` file as loaded, and every fault in force.
pub(crate) struct FaultRegistry {
    file: Vec<Fault>,
    seed: u64,
    /// The instant the server's fault timeline runs from (the proxy's start).
    epoch: Instant,
    next_id: u64,
    entries: Vec<Entry>,
}

impl FaultRegistry {
    pub(crate) fn new(file: Vec<Fault>, seed: u64, epoch: Instant) -> Self {
        FaultRegistry {
            file,
            seed,
            epoch,
            next_id: 1,
            entries: Vec::new(),
        }
    }

    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    fn add(&mut self, mut fault: Fault, until_removed: bool, source: Source) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        fault.at = fault.at.saturating_add(self.now());
        self.entries.push(Entry {
            id,
            fault,
            until_removed,
            enabled: true,
            source,
            hits: Arc::default(),
        });
        id
    }

    /// Replaces every fault added through an API by `faults`, each held until removed. The
    /// Toxiproxy API keeps its toxics as the truth and installs their faults whole on each
    /// change, so a fault never outlives the toxic it came from.
    pub(crate) fn replace_api_faults(&mut self, faults: Vec<Fault>) {
        self.entries.retain(|e| e.source != Source::Api);
        for mut f in faults {
            f.at = Duration::ZERO;
            f.length = UNTIL_REMOVED;
            self.add(f, true, Source::Api);
        }
    }

    /// The enabled faults as the server's timeline, counting into their entries.
    fn armed(&self) -> Result<ArmedFaults, super::TargetError> {
        let on = self.entries.iter().filter(|e| e.enabled);
        let (faults, hits) = on.map(|e| (e.fault.clone(), e.hits.clone())).unzip();
        ArmedFaults::with_hits(faults, hits, self.seed)
    }

    fn json(&self, e: &Entry) -> Value {
        let now = self.now();
        let mut v = json!({
            "id": e.id,
            "state": state(e, now),
            "enabled": e.enabled,
            "source": match e.source { Source::File => "file", Source::Api => "api" },
            "label": e.fault.kind.label(),
            "path": e.fault.path,
            "probability": e.fault.probability,
            "from_s": e.fault.at.as_secs_f64(),
            "until_s": (!e.until_removed).then(|| (e.fault.at + e.fault.length).as_secs_f64()),
            "hits": e.hits.load(Ordering::Relaxed),
        });
        // The kind and its own fields, as the scenario format names them.
        if let (Value::Object(out), Ok(Value::Object(kind))) =
            (&mut v, serde_json::to_value(&e.fault.kind))
        {
            out.extend(kind);
        }
        v
    }

    /// `stormrig_proxy_fault_active` and `stormrig_proxy_fault_hits_total`, one series per
    /// fault, in the Prometheus text format.
    pub(crate) fn metrics_text(&self) -> String {
        use std::fmt::Write;
        let now = self.now();
        let mut out = String::new();
        // `kind` as the fault file names it; a status fault's code in `status`, as
        // Prometheus's naming guide wants one meaning per label.
        let labels = |e: &Entry| {
            let v = serde_json::to_value(&e.fault.kind).unwrap_or_default();
            let kind = v["kind"].as_str().unwrap_or("?");
            let status = v["status"]
                .as_u64()
                .map(|s| format!(",status=\"{s}\""))
                .or_else(|| v["status"].as_str().map(|s| format!(",status=\"{s}\"")))
                .unwrap_or_default();
            format!("{{id=\"{}\",kind=\"{kind}\"{status}}}", e.id)
        };
        let _ = writeln!(
            out,
            "# HELP stormrig_proxy_fault_active 1 while the fault is enabled and inside its window.\n# TYPE stormrig_proxy_fault_active gauge"
        );
        for e in &self.entries {
            let active = e.enabled && e.fault.active_at(now);
            let _ = writeln!(
                out,
                "stormrig_proxy_fault_active{} {}",
                labels(e),
                u8::from(active)
            );
        }
        let _ = writeln!(
            out,
            "# HELP stormrig_proxy_fault_hits_total Requests the fault decided (latency faults only delay and are not counted).\n# TYPE stormrig_proxy_fault_hits_total counter"
        );
        for e in &self.entries {
            let _ = writeln!(
                out,
                "stormrig_proxy_fault_hits_total{} {}",
                labels(e),
                e.hits.load(Ordering::Relaxed)
            );
        }
        out
    }
}

fn reply(status: StatusCode, body: Value) -> Resp {
    let mut text = body.to_string();
    text.push('\n');
    let mut r = hyper::Response::new(http_body_util::Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn error(status: StatusCode, message: impl Into<String>) -> Resp {
    reply(status, json!({ "error": message.into() }))
}

/// Reads one fault from a JSON body: the scenario format's fields, `at` a delay from now
/// (default `0s`), `for` absent for "until removed". Errors name the field.
fn parse_fault(body: &[u8]) -> Result<(Fault, bool), String> {
    let mut map = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err("the body must be one JSON object (a fault)".into()),
        Err(e) => return Err(format!("the body is not JSON: {e}")),
    };
    map.entry("at").or_insert_with(|| json!("0s"));
    let until_removed = !map.contains_key("for");
    if until_removed {
        // Checked as a one-second window, then held open until removed.
        map.insert("for".into(), json!("1s"));
    }
    let section: FaultSection = crate::scenario::shape::from_json(Value::Object(map))?;
    let mut fault = validate::check_fault(0, &section, validate::MAX_DURATION).map_err(|r| {
        let field = r.field.strip_prefix("faults[0].").unwrap_or(&r.field);
        format!("{field}: {}", r.message)
    })?;
    if until_removed {
        fault.length = UNTIL_REMOVED;
    }
    Ok((fault, until_removed))
}

/// Answers `sub` (the path after the control prefix, starting with `faults`).
pub(crate) fn route(
    shared: &Arc<Shared>,
    registry: &Mutex<FaultRegistry>,
    method: &Method,
    sub: &str,
    body: &[u8],
) -> Resp {
    let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
    let parts: Vec<&str> = sub.trim_end_matches('/').split('/').collect();
    let changed = match (parts.as_slice(), method) {
        (["faults"], &Method::GET) => {
            let list: Vec<Value> = reg.entries.iter().map(|e| reg.json(e)).collect();
            return reply(StatusCode::OK, json!({ "faults": list }));
        }
        (["faults"], &Method::POST) => {
            if reg.entries.len() >= crate::scenario::limits::MAX_FAULTS {
                return error(
                    StatusCode::CONFLICT,
                    format!(
                        "{} faults is the limit; remove one first",
                        crate::scenario::limits::MAX_FAULTS
                    ),
                );
            }
            let checked = parse_fault(body).and_then(|(fault, until_removed)| {
                // What the server builds from it (status code, header values) is checked
                // before the fault joins the set.
                ArmedFaults::new(vec![fault.clone()], reg.seed)
                    .map(|_| (fault, until_removed))
                    .map_err(|e| e.to_string())
            });
            let (fault, until_removed) = match checked {
                Ok(f) => f,
                Err(e) => return error(StatusCode::BAD_REQUEST, e),
            };
            let id = reg.add(fault, until_removed, Source::Api);
            Answer::Entry(StatusCode::CREATED, id)
        }
        (["faults", "start"], &Method::POST) => {
            if !body.iter().all(u8::is_ascii_whitespace) {
                return error(
                    StatusCode::BAD_REQUEST,
                    "faults/start takes no body: it starts the --faults file; POST one fault as JSON to /_stormrig/faults",
                );
            }
            if reg.file.is_empty() {
                return error(
                    StatusCode::CONFLICT,
                    "no --faults file was loaded; POST a fault as JSON to /_stormrig/faults",
                );
            }
            reg.entries.retain(|e| e.source != Source::File);
            for f in reg.file.clone() {
                reg.add(f, false, Source::File);
            }
            Answer::Body(json!({ "started": reg.file.len() }))
        }
        (["faults", "stop"], &Method::POST) => {
            let removed = reg.entries.len();
            reg.entries.clear();
            Answer::Body(json!({ "removed": removed }))
        }
        (["faults", "start" | "stop"], _) => {
            return error(StatusCode::METHOD_NOT_ALLOWED, "use POST")
        }
        (["faults", id, rest @ ..], m) => {
            let Some(at) = id
                .parse::<u64>()
                .ok()
                .and_then(|id| reg.entries.iter().position(|e| e.id == id))
            else {
                return error(StatusCode::NOT_FOUND, format!("no fault with id {id}"));
            };
            let id = reg.entries[at].id;
            match (rest, m) {
                ([], &Method::GET) => return reply(StatusCode::OK, reg.json(&reg.entries[at])),
                ([], &Method::DELETE) => {
                    let gone = reg.entries.remove(at);
                    Answer::Body(
                        json!({ "removed": id, "hits": gone.hits.load(Ordering::Relaxed) }),
                    )
                }
                (["enable"], &Method::POST) => {
                    reg.entries[at].enabled = true;
                    Answer::Entry(StatusCode::OK, id)
                }
                (["disable"], &Method::POST) => {
                    reg.entries[at].enabled = false;
                    Answer::Entry(StatusCode::OK, id)
                }
                _ => return unknown(method, sub),
            }
        }
        _ => return unknown(method, sub),
    };
    if let Err(e) = rearm(shared, &reg) {
        return error(StatusCode::BAD_REQUEST, e.to_string());
    }
    match changed {
        Answer::Entry(status, id) => {
            let entry = reg.entries.iter().find(|e| e.id == id);
            reply(status, entry.map_or(Value::Null, |e| reg.json(e)))
        }
        Answer::Body(v) => reply(StatusCode::OK, v),
    }
}

/// Puts the registry's enabled faults in force on the proxy's server at once.
pub(crate) fn rearm(shared: &Arc<Shared>, reg: &FaultRegistry) -> Result<(), super::TargetError> {
    let armed = reg.armed()?;
    shared.arm(armed, reg.epoch);
    shared.spawn_capacity_pump();
    shared.slots.pump();
    Ok(())
}

/// What a change answers once the set is re-armed.
enum Answer {
    /// The fault with this id, as listed.
    Entry(StatusCode, u64),
    Body(Value),
}

fn unknown(method: &Method, sub: &str) -> Resp {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "no route {method} /_stormrig/{sub}; known: GET|POST faults, GET|DELETE faults/ID, \
             POST faults/ID/enable|disable, POST faults/start|stop, GET metrics"
        ),
    )
}
