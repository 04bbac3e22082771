//! Sense checks on a deserialized scenario: every refusal names the dotted field path, the
//! value and what would be allowed. The loader turns a [`Refusal`] into a located
//! [`ScenarioError`](super::ScenarioError).
//!
//! What is *not* checked here: the inside of `configs` tables (the policy core resolves and
//! checks them, returning paths relative to the table) and gate expressions (the gates
//! module parses them).

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};

use super::host::Host;
use super::limits::{self, big};
use super::model::*;
use super::units::duration::format as fmt_d;
use super::wire::{Protocol, Trust, Wire};

/// A field that failed a check, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Dotted path, e.g. `faults[1].probability`.
    pub field: String,
    /// Names the value and the allowed range.
    pub message: String,
}

pub type Checked<T> = Result<T, Refusal>;

pub(crate) fn refuse<T>(field: impl Into<String>, message: impl Into<String>) -> Checked<T> {
    Err(Refusal {
        field: field.into(),
        message: message.into(),
    })
}

/// The longest run a scenario may describe.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Load kinds, fault kinds and distribution kinds as written in files.
pub const LOAD_KINDS: &[&str] = &["constant", "poisson", "ramp", "steps", "closed", "burst"];
pub const FAULT_KINDS: &[&str] = &[
    "status",
    "grpc-status",
    "latency",
    "reset",
    "hang",
    "capacity",
    "lost-response",
    "bandwidth",
    "slow-close",
    "slicer",
];

/// The nearest candidate to `word`, when one is close enough to be a likely typo.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(word, c)))
        .filter(|(c, score)| *score >= 0.8 || strsim::levenshtein(word, c) <= 2)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c.to_string())
}

fn unknown_kind(what: &str, value: &str, known: &[&str]) -> String {
    let hint = match suggest(value, known.iter().copied()) {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    };
    format!(
        "unknown {what} `{value}`{hint}; known: {}",
        known.join(", ")
    )
}

/// Usable as a folder name: non-empty, `[A-Za-z0-9._-]`, not `.` or `..`.
pub fn check_name(field: &str, name: &str) -> Checked<()> {
    if name.is_empty() {
        return refuse(
            field,
            "is empty; it names the report folder, e.g. \"downstream-503\"",
        );
    }
    if name.len() > limits::MAX_NAME_LEN {
        return refuse(
            field,
            format!(
                "is {} bytes long, above the limit of {}; it names a report folder",
                name.len(),
                limits::MAX_NAME_LEN
            ),
        );
    }
    if name == "." || name == ".." {
        return refuse(field, format!("`{name}` cannot be a folder name"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return refuse(
            field,
            format!("`{name}` contains {c:?}; a name may use only A-Z a-z 0-9 . _ -"),
        );
    }
    Ok(())
}

pub fn check_duration(field: &str, d: Duration) -> Checked<()> {
    if d.is_zero() || d > MAX_DURATION {
        return refuse(field, format!("{} is outside (0s, 24h]", fmt_d(d)));
    }
    Ok(())
}

fn check_rate(field: &str, rate: f64) -> Checked<()> {
    if !(rate.is_finite() && rate > 0.0) {
        return refuse(
            field,
            format!("{rate} is outside (0, ∞); a rate is arrivals per second"),
        );
    }
    Ok(())
}

fn check_rate_or_zero(field: &str, rate: f64) -> Checked<()> {
    if !(rate.is_finite() && rate >= 0.0) {
        return refuse(
            field,
            format!("{rate} is outside [0, ∞); a rate is arrivals per second"),
        );
    }
    Ok(())
}

/// An HTTP method is a token (RFC 9110 §5.6.2).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '!' | '#'
                        | '$'
                        | '%'
                        | '&'
                        | '\''
                        | '*'
                        | '+'
                        | '-'
                        | '.'
                        | '^'
                        | '_'
                        | '`'
                        | '|'
                        | '~'
                )
        })
}

/// A request path as the client sends it: an origin-form URI path (and query) that the HTTP
/// stack accepts, so a run never meets a path it cannot send.
fn check_path(field: &str, path: &str) -> Checked<()> {
    let example = "e.g. \"/api/orders?id=1\"";
    if path.len() > limits::MAX_PATH_LEN {
        return refuse(
            field,
            format!(
                "is {} bytes long, above the limit of {}",
                path.len(),
                limits::MAX_PATH_LEN
            ),
        );
    }
    if !path.starts_with('/') || path.starts_with("//") {
        return refuse(
            field,
            format!("`{path}` must start with a single '/', {example}"),
        );
    }
    let uri = format!("http://127.0.0.1{path}");
    match hyper::Uri::from_str(&uri) {
        Ok(u) if u.path_and_query().map(|pq| pq.as_str()) == Some(path) => Ok(()),
        _ => refuse(
            field,
            format!(
                "`{path}` is not a valid URI path: spaces, quotes, `<`, `>`, `#` and control \
                 characters must be percent-encoded, {example}"
            ),
        ),
    }
}

/// The load's headers: names and values the HTTP stack sends as written (no CR/LF), none of
/// the framing headers the client sets itself, within the count and size limits.
fn check_headers(field: &str, headers: &std::collections::BTreeMap<String, String>) -> Checked<()> {
    const RESERVED: &[&str] = &[
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "proxy-connection",
        // Request identity: every attempt carries its own.
        "x-stormrig-request",
        "x-stormrig-attempt",
        "x-stormrig-config",
        "x-stormrig-run",
    ];
    if headers.len() > limits::MAX_HEADERS {
        return refuse(
            field,
            format!(
                "has {} headers, above the limit of {}",
                headers.len(),
                limits::MAX_HEADERS
            ),
        );
    }
    for (name, value) in headers {
        let at = format!("{field}.{name}");
        if !is_token(name) || HeaderName::from_str(name).is_err() {
            return refuse(at, format!("`{name}` is not a valid header name"));
        }
        let lower = name.to_ascii_lowercase();
        if RESERVED.contains(&lower.as_str()) {
            return refuse(
                at,
                format!(
                    "`{name}` is set by stormrig itself (framing or request identity); remove it"
                ),
            );
        }
        if value.len() > limits::MAX_HEADER_VALUE {
            return refuse(
                at,
                format!(
                    "the value is {} bytes long, above the limit of {}",
                    value.len(),
                    limits::MAX_HEADER_VALUE
                ),
            );
        }
        if value.contains(['\r', '\n']) || HeaderValue::from_str(value).is_err() {
            return refuse(
                at,
                "the value holds a line break or another control character; a header value is one line of visible text",
            );
        }
    }
    Ok(())
}

/// A count against its ceiling: `count <= max`, refused with both figures.
fn check_count(field: &str, what: &str, count: u64, max: u64) -> Checked<()> {
    if count > max {
        return refuse(
            field,
            format!(
                "{} {what} is above the limit of {}",
                big(count as f64),
                big(max as f64)
            ),
        );
    }
    Ok(())
}

/// Refuses the load's shape fields (`rate`, `from`, `to`, `steps`, `users`, `think_time`)
/// that are set but not among `used` by its kind.
fn forbid_unused(l: &LoadSection, kind_desc: &str, takes: &str, used: &[&str]) -> Checked<()> {
    let set = [
        ("rate", l.rate.is_some()),
        ("from", l.from.is_some()),
        ("to", l.to.is_some()),
        ("steps", l.steps.is_some()),
        ("users", l.users.is_some()),
        ("think_time", l.think_time.is_some()),
    ];
    let unused: Vec<_> = set.into_iter().filter(|(n, _)| !used.contains(n)).collect();
    forbid(kind_desc, takes, &unused, "load")
}

/// Fields of `section` that are set but not used by its kind.
fn forbid(kind_desc: &str, takes: &str, set: &[(&str, bool)], prefix: &str) -> Checked<()> {
    if let Some((name, _)) = set.iter().find(|(_, present)| *present) {
        return refuse(
            format!("{prefix}.{name}"),
            format!("{kind_desc} takes {takes}, not `{name}`"),
        );
    }
    Ok(())
}

fn require<T: Clone>(field: String, value: &Option<T>, why: &str) -> Checked<T> {
    match value {
        Some(v) => Ok(v.clone()),
        None => refuse(field, format!("is missing; {why}")),
    }
}

pub fn check_load(l: &LoadSection, duration: Duration) -> Checked<Load> {
    let p = "load";
    let f = |name: &str| format!("{p}.{name}");
    let shape = match l.kind.as_str() {
        "constant" | "poisson" => {
            forbid_unused(l, &format!("{} load", l.kind), "`rate`", &["rate"])?;
            let rate = require(f("rate"), &l.rate, "arrivals per second, e.g. rate = 200.0")?;
            check_rate(&f("rate"), rate)?;
            if l.kind == "constant" {
                LoadShape::Constant { rate }
            } else {
                LoadShape::Poisson { rate }
            }
        }
        "ramp" => {
            forbid_unused(l, "ramp", "`from` and `to`", &["from", "to"])?;
            let from = require(f("from"), &l.from, "the start rate, e.g. from = 10.0")?;
            let to = require(f("to"), &l.to, "the end rate, e.g. to = 500.0")?;
            check_rate_or_zero(&f("from"), from)?;
            check_rate_or_zero(&f("to"), to)?;
            if from == 0.0 && to == 0.0 {
                return refuse(f("to"), "0 with from = 0 offers no load; one must be > 0");
            }
            LoadShape::Ramp { from, to }
        }
        "steps" => {
            forbid_unused(l, "steps load", "`steps`", &["steps"])?;
            let steps = require(
                f("steps"),
                &l.steps,
                "e.g. steps = [{ at = \"0s\", rate = 100.0 }, { at = \"10s\", rate = 200.0 }]",
            )?;
            if steps.is_empty() {
                return refuse(f("steps"), "is empty; give at least one { at, rate }");
            }
            check_count(
                &f("steps"),
                "steps",
                steps.len() as u64,
                limits::MAX_STEPS as u64,
            )?;
            let mut prev: Option<Duration> = None;
            for (i, s) in steps.iter().enumerate() {
                let sp = format!("{p}.steps[{i}]");
                if s.at >= duration {
                    return refuse(
                        format!("{sp}.at"),
                        format!(
                            "{} is outside [0s, {}) (the scenario's duration)",
                            fmt_d(s.at),
                            fmt_d(duration)
                        ),
                    );
                }
                if let Some(prev) = prev {
                    if s.at <= prev {
                        return refuse(
                            format!("{sp}.at"),
                            format!(
                                "{} is not after the previous step's {}; steps must be sorted by `at`",
                                fmt_d(s.at),
                                fmt_d(prev)
                            ),
                        );
                    }
                }
                prev = Some(s.at);
                check_rate_or_zero(&format!("{sp}.rate"), s.rate)?;
            }
            if steps.iter().all(|s| s.rate == 0.0) {
                return refuse(f("steps"), "every step has rate 0; no load is offered");
            }
            LoadShape::Steps { steps }
        }
        "closed" => {
            forbid_unused(
                l,
                "closed load",
                "`users` and `think_time`",
                &["users", "think_time"],
            )?;
            let users = require(f("users"), &l.users, "the number of users, e.g. users = 50")?;
            if users == 0 {
                return refuse(f("users"), "0 is outside [1, 4294967295]");
            }
            check_count(&f("users"), "users", users.into(), limits::MAX_USERS.into())?;
            LoadShape::Closed {
                users,
                think_time: l.think_time.unwrap_or(Duration::ZERO),
            }
        }
        "burst" => {
            forbid_unused(
                l,
                "burst load",
                "`clients` (one request each, all at t = 0)",
                &[],
            )?;
            let requests = require(
                f("clients"),
                &l.clients,
                "the fleet that sends at one instant, e.g. clients = 1000",
            )?;
            LoadShape::Burst { requests }
        }
        other => return refuse(f("kind"), unknown_kind("load kind", other, LOAD_KINDS)),
    };
    check_method(&f("method"), &l.method)?;
    check_path(&f("path"), &l.path)?;
    check_headers(&f("headers"), &l.headers)?;
    if let Some(body) = &l.body {
        check_count(
            &f("body"),
            "bytes",
            body.len() as u64,
            limits::MAX_BODY as u64,
        )?;
    }
    if l.max_in_flight == 0 {
        return refuse(f("max_in_flight"), "0 is outside [1, 4294967295]");
    }
    check_count(
        &f("max_in_flight"),
        "requests in flight",
        l.max_in_flight.into(),
        limits::MAX_IN_FLIGHT.into(),
    )?;
    if l.max_connections == Some(0) {
        return refuse(f("max_connections"), "0 is outside [1, 4294967295]");
    }
    if let Some(n) = l.max_connections {
        check_count(
            &f("max_connections"),
            "connections",
            n.into(),
            limits::MAX_CONNECTIONS.into(),
        )?;
    }
    let clients = match l.clients {
        None => NonZeroU32::MIN,
        Some(n) => {
            check_count(
                &f("clients"),
                "client instances",
                n.into(),
                limits::MAX_CLIENTS.into(),
            )?;
            match NonZeroU32::new(n) {
                Some(n) => n,
                None => {
                    return refuse(
                        f("clients"),
                        "0 is outside [1, 1,000,000]: a fleet has at least one client",
                    )
                }
            }
        }
    };
    if !l.classes.is_empty() && l.grpc.is_some() {
        return refuse(
            f("classes"),
            "a gRPC load calls one method; request classes mix plain HTTP calls",
        );
    }
    let classes = super::classes::check_classes(
        &l.classes,
        super::classes::LoadDefaults {
            method: &l.method,
            path: &l.path,
            headers: &l.headers,
            body: l.body.as_deref(),
        },
        super::classes::RequestChecks {
            method: check_method,
            path: check_path,
            headers: check_headers,
        },
    )?;
    let max_planned_arrivals = l
        .max_planned_arrivals
        .unwrap_or(limits::DEFAULT_MAX_PLANNED_ARRIVALS);
    Ok(Load {
        shape,
        method: l.method.clone(),
        path: l.path.clone(),
        headers: l.headers.clone(),
        body: l.body.clone(),
        grpc: match &l.grpc {
            Some(g) => Some(super::grpc::check(
                g,
                &l.method,
                &l.path,
                l.body.as_deref(),
            )?),
            None => None,
        },
        max_in_flight: l.max_in_flight,
        max_connections: l.max_connections,
        propagate_deadline: l.propagate_deadline,
        max_planned_arrivals,
        clients,
        classes,
    })
}

/// An HTTP method token hyper can send.
fn check_method(field: &str, method: &str) -> Checked<()> {
    if !is_token(method) || hyper::Method::from_str(method).is_err() {
        return refuse(
            field,
            format!("`{method}` is not an HTTP method token, e.g. \"GET\""),
        );
    }
    Ok(())
}

/// The work a load plans for `configs` configs, arrival rates times `scale`, against its
/// ceiling (`load.max_planned_arrivals`). Checked at load time, and again by `run` and
/// `sim` after command-line overrides (`--duration`, `--scale`) changed the work.
pub fn check_work(load: &Load, duration: Duration, configs: usize, scale: f64) -> Checked<()> {
    let per_config = limits::planned_arrivals(&load.shape, duration) * scale;
    limits::check_planned(per_config, configs, load.max_planned_arrivals).map_err(|m| Refusal {
        field: planned_field(&load.shape),
        message: m,
    })?;
    if let LoadShape::Closed { users, .. } = load.shape {
        let scaled = (f64::from(users) * scale).round();
        if scaled > f64::from(limits::MAX_USERS) {
            return refuse(
                "load.users",
                format!(
                    "{} users (scaled) is above the limit of {}",
                    big(scaled),
                    limits::MAX_USERS
                ),
            );
        }
    }
    Ok(())
}

/// The field that sets a load's rate, where a refusal of its planned work points.
pub fn planned_field(shape: &LoadShape) -> String {
    match shape {
        LoadShape::Ramp { .. } => "load.to",
        LoadShape::Steps { .. } => "load.steps",
        LoadShape::Closed { .. } => "load.users",
        LoadShape::Burst { .. } => "load.clients",
        _ => "load.rate",
    }
    .to_string()
}

pub fn check_dist(field: &str, d: &Dist) -> Checked<()> {
    match d {
        Dist::Constant { .. } => Ok(()),
        Dist::Uniform { min, max } => {
            if min > max {
                return refuse(
                    format!("{field}.min"),
                    format!(
                        "{} is above max {}; need min ≤ max",
                        fmt_d(*min),
                        fmt_d(*max)
                    ),
                );
            }
            Ok(())
        }
        Dist::Exponential { mean } => {
            if mean.is_zero() {
                return refuse(format!("{field}.mean"), "0s is outside (0s, ∞)");
            }
            Ok(())
        }
        Dist::LogNormal { median, p99 } => {
            if median.is_zero() {
                return refuse(format!("{field}.median"), "0s is outside (0s, ∞)");
            }
            if p99 < median {
                return refuse(
                    format!("{field}.p99"),
                    format!(
                        "{} is below the median {}; need p99 ≥ median",
                        fmt_d(*p99),
                        fmt_d(*median)
                    ),
                );
            }
            Ok(())
        }
    }
}

/// A service model spec as written in a target file (`prefix` = "service") or inline in a
/// scenario (`prefix` = "target.service").
pub fn check_service_spec(prefix: &str, s: &ServiceModelSpec) -> Checked<()> {
    if s.concurrency == Some(0) {
        return refuse(
            format!("{prefix}.concurrency"),
            "0 is outside [1, 4294967295]; a service needs at least one slot",
        );
    }
    if let Some(c) = s.concurrency {
        check_count(
            &format!("{prefix}.concurrency"),
            "slots",
            c.into(),
            limits::MAX_SLOTS.into(),
        )?;
    }
    if let Some(q) = s.queue {
        check_count(
            &format!("{prefix}.queue"),
            "places",
            q.into(),
            limits::MAX_SLOTS.into(),
        )?;
    }
    if let Some(d) = &s.service_time {
        check_dist(&format!("{prefix}.service_time"), d)?;
    }
    Ok(())
}

/// One fault window: where and when it acts, then what it does (one step per kind).
pub fn check_fault(i: usize, f: &FaultSection, duration: Duration) -> Checked<Fault> {
    let p = format!("faults[{i}]");
    check_window(&p, f, duration)?;
    if let Some(path) = &f.path {
        check_path(&format!("{p}.path"), path)?;
    }
    let probability = f.probability.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&probability) {
        return refuse(
            format!("{p}.probability"),
            format!("{probability} is outside [0, 1]"),
        );
    }
    let kind = match f.kind.as_str() {
        "status" => status_fault(&p, f)?,
        "grpc-status" => grpc_status_fault(&p, f)?,
        "latency" => latency_fault(&p, f)?,
        "reset" | "hang" => connection_fault(&p, f)?,
        "capacity" => capacity_fault(&p, f)?,
        "lost-response" => lost_response_fault(&p, f)?,
        "bandwidth" => bandwidth_fault(&p, f)?,
        // Toxiproxy spells it with an underscore.
        "slow-close" | "slow_close" => slow_close_fault(&p, f)?,
        "slicer" => slicer_fault(&p, f)?,
        other => {
            return refuse(
                format!("{p}.kind"),
                unknown_kind("fault kind", other, FAULT_KINDS),
            )
        }
    };
    Ok(Fault {
        at: f.at,
        length: f.length,
        path: f.path.clone(),
        probability,
        kind,
    })
}

/// The window `[at, at + for)` is not empty and lies within the scenario's duration.
fn check_window(p: &str, f: &FaultSection, duration: Duration) -> Checked<()> {
    if f.length.is_zero() {
        return refuse(format!("{p}.for"), "0s is outside (0s, duration]");
    }
    if f.at >= duration {
        return refuse(
            format!("{p}.at"),
            format!(
                "{} is outside [0s, {}) (the scenario's duration)",
                fmt_d(f.at),
                fmt_d(duration)
            ),
        );
    }
    if f.at + f.length > duration {
        return refuse(
            format!("{p}.for"),
            format!(
                "{} from {} ends at {}, after the scenario's duration {}; need at + for ≤ duration",
                fmt_d(f.length),
                fmt_d(f.at),
                fmt_d(f.at + f.length),
                fmt_d(duration)
            ),
        );
    }
    Ok(())
}

/// Refuses any optional field of fault `f` that its kind does not take (`takes` names the
/// ones it does; `kind_desc` and `takes_desc` word the message).
fn takes_only(
    p: &str,
    f: &FaultSection,
    kind_desc: &str,
    takes_desc: &str,
    takes: &[&str],
) -> Checked<()> {
    let set = [
        ("probability", f.probability.is_some()),
        ("path", f.path.is_some()),
        ("status", f.status.is_some()),
        ("retry_after", f.retry_after.is_some()),
        ("retry_after_ms", f.retry_after_ms.is_some()),
        ("should_retry", f.should_retry.is_some()),
        ("error_code", f.error_code.is_some()),
        ("add", f.add.is_some()),
        ("concurrency", f.concurrency.is_some()),
        ("bytes_per_s", f.bytes_per_s.is_some()),
        ("slice_bytes", f.slice_bytes.is_some()),
        ("delay", f.delay.is_some()),
        ("grpc_status", f.grpc_status.is_some()),
        ("pushback", f.pushback.is_some()),
    ];
    let others: Vec<(&str, bool)> = set
        .into_iter()
        .filter(|(name, _)| !takes.contains(name))
        .collect();
    forbid(kind_desc, takes_desc, &others, p)
}

fn check_status(p: &str, s: u16) -> Checked<()> {
    if !(100..=599).contains(&s) {
        return refuse(format!("{p}.status"), format!("{s} is outside [100, 599]"));
    }
    Ok(())
}

fn grpc_status_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a grpc-status fault",
        "`grpc_status` and `pushback`",
        &["probability", "path", "grpc_status", "pushback"],
    )?;
    let status = require(
        format!("{p}.grpc_status"),
        &f.grpc_status,
        "the gRPC status to answer, e.g. grpc_status = \"UNAVAILABLE\"",
    )?;
    if status == crate::policy::GrpcStatus::Ok {
        return refuse(
            format!("{p}.grpc_status"),
            "OK is no fault: a window without a fault answers OK",
        );
    }
    if let Some(d) = f.pushback {
        if d.as_millis() > i32::MAX as u128 {
            return refuse(
                format!("{p}.pushback"),
                "is above grpc-retry-pushback-ms's largest value (2^31 - 1 ms)",
            );
        }
    }
    Ok(FaultKind::GrpcStatus {
        status,
        pushback: f.pushback,
    })
}

fn status_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a status fault",
        "`status`, `retry_after`, `retry_after_ms`, `should_retry` and `error_code`",
        &[
            "probability",
            "path",
            "status",
            "retry_after",
            "retry_after_ms",
            "should_retry",
            "error_code",
        ],
    )?;
    let status = require(
        format!("{p}.status"),
        &f.status,
        "the status code to answer, e.g. status = 503",
    )?;
    check_status(p, status)?;
    if let Some(code) = &f.error_code {
        if code.is_empty()
            || code.len() > limits::MAX_ERROR_CODE_LEN
            || !code.chars().all(|c| c.is_ascii_graphic())
        {
            return refuse(
                format!("{p}.error_code"),
                format!(
                    "`{code}` must be 1 to {} printable ASCII characters without spaces",
                    limits::MAX_ERROR_CODE_LEN
                ),
            );
        }
    }
    Ok(FaultKind::Status {
        status,
        retry_after: f.retry_after,
        retry_after_ms: f.retry_after_ms,
        should_retry: f.should_retry,
        error_code: f.error_code.clone(),
    })
}

fn latency_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a latency fault",
        "`add`",
        &["probability", "path", "add"],
    )?;
    let add = require(
        format!("{p}.add"),
        &f.add,
        "the added latency, e.g. add = { kind = \"constant\", value = \"800ms\" }",
    )?;
    check_dist(&format!("{p}.add"), &add)?;
    Ok(FaultKind::Latency { add })
}

/// `reset` and `hang`: they act on the connection and take no settings.
fn connection_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        &format!("a {} fault", f.kind),
        "only `at`, `for`, `path` and `probability`",
        &["probability", "path"],
    )?;
    Ok(if f.kind == "reset" {
        FaultKind::Reset
    } else {
        FaultKind::Hang
    })
}

fn capacity_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a capacity fault",
        "`concurrency` (it changes the target, not single requests)",
        &["concurrency"],
    )?;
    let field = format!("{p}.concurrency");
    let c = require(
        field.clone(),
        &f.concurrency,
        "the concurrency slots during the window, e.g. concurrency = 4",
    )?;
    if c == 0 {
        return refuse(field, "0 is outside [1, 4294967295]");
    }
    check_count(&field, "slots", c.into(), limits::MAX_SLOTS.into())?;
    Ok(FaultKind::Capacity { concurrency: c })
}

fn lost_response_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a lost-response fault",
        "an optional `status`",
        &["probability", "path", "status"],
    )?;
    if let Some(s) = f.status {
        check_status(p, s)?;
    }
    Ok(FaultKind::LostResponse { status: f.status })
}

fn bandwidth_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a bandwidth fault",
        "`bytes_per_s`",
        &["probability", "path", "bytes_per_s"],
    )?;
    let field = format!("{p}.bytes_per_s");
    let rate = require(
        field.clone(),
        &f.bytes_per_s,
        "the rate the response body is delivered at, e.g. bytes_per_s = 1024",
    )?;
    if rate == 0 {
        return refuse(field, "0 is outside [1, 1099511627776]");
    }
    check_count(&field, "bytes per second", rate, limits::MAX_BYTES_PER_S)?;
    Ok(FaultKind::Bandwidth { bytes_per_s: rate })
}

/// The `delay` of a connection-level fault, within [`limits::MAX_CONNECTION_DELAY`] (and
/// above zero when `positive`).
fn connection_delay(p: &str, f: &FaultSection, why: &str, positive: bool) -> Checked<Duration> {
    let field = format!("{p}.delay");
    let delay = require(field.clone(), &f.delay, why)?;
    if positive && delay.is_zero() {
        return refuse(field, "0s holds nothing; need a delay above 0");
    }
    if delay > limits::MAX_CONNECTION_DELAY {
        return refuse(
            field,
            format!(
                "{} is above the limit of {}",
                fmt_d(delay),
                fmt_d(limits::MAX_CONNECTION_DELAY)
            ),
        );
    }
    Ok(delay)
}

fn slow_close_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a slow-close fault",
        "`delay`",
        &["probability", "path", "delay"],
    )?;
    let delay = connection_delay(
        p,
        f,
        "how long the connection stays open after the response, e.g. delay = \"2s\"",
        true,
    )?;
    Ok(FaultKind::SlowClose { delay })
}

fn slicer_fault(p: &str, f: &FaultSection) -> Checked<FaultKind> {
    takes_only(
        p,
        f,
        "a slicer fault",
        "`slice_bytes` and `delay`",
        &["probability", "path", "slice_bytes", "delay"],
    )?;
    let field = format!("{p}.slice_bytes");
    let slice = require(
        field.clone(),
        &f.slice_bytes,
        "the size of each slice of the response body, e.g. slice_bytes = 64",
    )?;
    if slice == 0 {
        return refuse(field, "0 is outside [1, 1048576]");
    }
    check_count(
        &field,
        "bytes",
        slice.into(),
        limits::MAX_SLICE_BYTES.into(),
    )?;
    let delay = connection_delay(
        p,
        f,
        "the pause between two slices, e.g. delay = \"10ms\"",
        false,
    )?;
    Ok(FaultKind::Slicer {
        slice_bytes: slice,
        delay,
    })
}

/// How many faults and gates a scenario lists, and how long each gate is.
pub fn check_lengths(file: &ScenarioFile) -> Checked<()> {
    check_count(
        "faults",
        "fault windows",
        file.faults.len() as u64,
        limits::MAX_FAULTS as u64,
    )?;
    check_count(
        "gates",
        "gates",
        file.gates.len() as u64,
        limits::MAX_GATES as u64,
    )?;
    for (i, g) in file.gates.iter().enumerate() {
        check_count(
            &format!("gates[{i}]"),
            "bytes",
            g.len() as u64,
            limits::MAX_GATE_LEN as u64,
        )?;
    }
    Ok(())
}

/// Where the traffic goes, before the builtin's model file is read.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetChoice {
    Builtin(String),
    Url {
        url: String,
        host: String,
        port: u16,
        /// The service model the simulator stands in for the server with.
        model: Option<String>,
    },
}

/// Splits `http[s]://host[:port][/path]`; the port defaults to 80 (443 for https).
pub fn parse_url(url: &str) -> Result<(String, u16), String> {
    let (rest, default_port) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(rest), _) => (rest, 80),
        (_, Some(rest)) => (rest, 443),
        _ => {
            return Err(format!(
                "`{url}` must start with http:// or https://, e.g. \"http://127.0.0.1:8080\""
            ))
        }
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(format!("`{url}` must not carry user info"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("`{url}` has an unclosed IPv6 bracket"))?;
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(format!(
            "`{url}` has no host, e.g. \"http://127.0.0.1:8080\""
        ));
    }
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return Err(format!("`{url}` has port `{p}`, outside [1, 65535]")),
        },
    };
    Ok((host, port))
}

pub fn check_target(t: &TargetSpec) -> Checked<TargetChoice> {
    if let Some(dedup) = &t.dedup {
        if dedup.enabled && dedup.retention.is_zero() {
            return refuse("target.dedup.retention", "0s is outside (0s, ∞)");
        }
    }
    if let Some(s) = &t.service {
        check_service_spec("target.service", s)?;
    }
    match (&t.builtin, &t.url) {
        (Some(_), Some(_)) => refuse("target.url", "give either `builtin` or `url`, not both"),
        (_, Some(url)) => {
            if t.service.is_some() && t.model.is_none() {
                return refuse(
                    "target.service",
                    "a service model applies to builtin targets; for a `url` target it \
                     overlays the simulator's model: name one first (model = \"default\")",
                );
            }
            if let Some(m) = &t.model {
                check_name("target.model", m)?;
            }
            let (host, port) = parse_url(url).map_err(|m| Refusal {
                field: "target.url".into(),
                message: m,
            })?;
            if !super::host::allowed(&host, t.allow_remote.as_deref()) {
                return refuse(
                    "target.url",
                    format!(
                        "host `{host}` is not loopback (only 127.0.0.0/8, ::1 and the exact name \
                         localhost are); to send a storm there, add allow_remote = \"{host}\""
                    ),
                );
            }
            Ok(TargetChoice::Url {
                url: url.clone(),
                // Numeric forms read as their address, so nothing later resolves them.
                host: Host::parse(&host).canonical(),
                port,
                model: t.model.clone(),
            })
        }
        (builtin, None) => {
            let name = builtin.clone().unwrap_or_else(|| "default".to_string());
            check_name("target.builtin", &name)?;
            if t.model.is_some() {
                return refuse(
                    "target.model",
                    "names the simulator's model of a `url` target; a builtin target is its \
                     own model (builtin = \"NAME\")",
                );
            }
            if t.allow_remote.is_some() {
                return refuse("target.allow_remote", "applies to `url` targets only");
            }
            Ok(TargetChoice::Builtin(name))
        }
    }
}

/// The protocol fields of `[target]`: the HTTP version, TLS and whose certificates are
/// trusted. A `ca_file` is read here (relative to the scenario's folder), so a file that
/// holds no certificate is refused before any load.
pub fn check_wire(t: &TargetSpec, choice: &TargetChoice, scenario: &Path) -> Checked<Wire> {
    let protocol = match &t.protocol {
        None => Protocol::Http1,
        Some(p) => Protocol::parse(p).ok_or_else(|| Refusal {
            field: "target.protocol".into(),
            message: unknown_kind("protocol", p, Protocol::NAMES),
        })?,
    };
    let skip = t.insecure_skip_verify == Some(true);
    let tls = match choice {
        TargetChoice::Builtin(_) => {
            for (set, field) in [
                (t.ca_file.is_some(), "target.ca_file"),
                (
                    t.insecure_skip_verify.is_some(),
                    "target.insecure_skip_verify",
                ),
            ] {
                if set {
                    return refuse(
                        field,
                        "applies to `https://` url targets; the built-in target's certificate \
                         is generated at start and trusted by the generator of that run",
                    );
                }
            }
            (t.tls == Some(true)).then_some(Trust::BuiltinSelfSigned)
        }
        TargetChoice::Url { url, .. } => {
            if t.tls.is_some() {
                return refuse(
                    "target.tls",
                    "applies to builtin targets; a `url` target says TLS with https://",
                );
            }
            let https = url
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
            if !https {
                for (set, field) in [
                    (t.ca_file.is_some(), "target.ca_file"),
                    (
                        t.insecure_skip_verify.is_some(),
                        "target.insecure_skip_verify",
                    ),
                ] {
                    if set {
                        return refuse(field, format!("applies to https:// targets, not `{url}`"));
                    }
                }
                None
            } else if skip {
                if t.ca_file.is_some() {
                    return refuse(
                        "target.ca_file",
                        "has no use with insecure_skip_verify = true (nothing is verified)",
                    );
                }
                Some(Trust::SkipVerify)
            } else {
                let ca_file = t
                    .ca_file
                    .as_ref()
                    .map(|f| scenario.parent().unwrap_or(Path::new("")).join(f));
                let extra_roots = match &ca_file {
                    Some(p) => read_certificates(p).map_err(|m| Refusal {
                        field: "target.ca_file".into(),
                        message: m,
                    })?,
                    None => Vec::new(),
                };
                Some(Trust::Verify {
                    ca_file,
                    extra_roots,
                })
            }
        }
    };
    match (protocol, &tls) {
        (Protocol::H2, None) => refuse(
            "target.protocol",
            "`h2` is HTTP/2 over TLS: use an https:// url or `tls = true`; HTTP/2 in clear is `h2c`",
        ),
        (Protocol::H2c, Some(_)) => refuse(
            "target.protocol",
            "`h2c` is HTTP/2 in clear: over TLS it is `h2`",
        ),
        _ => Ok(Wire { protocol, tls }),
    }
}

/// The certificates (DER) of a PEM file; an error names what is wrong with it.
fn read_certificates(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("`{shown}` is not PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "`{shown}` holds no certificate (expected PEM blocks `-----BEGIN CERTIFICATE-----`)"
        ));
    }
    Ok(certs)
}

/// Each config's name (its `name`, or its `preset` when it has none), checked unique.
pub fn check_configs(configs: &[toml::Table]) -> Checked<Vec<String>> {
    if configs.is_empty() {
        return refuse(
            "configs",
            "is empty; compare at least one retry config, e.g. [[configs]] preset = \"aws-standard\"",
        );
    }
    check_count(
        "configs",
        "configs",
        configs.len() as u64,
        limits::MAX_CONFIGS as u64,
    )?;
    let mut seen = BTreeSet::new();
    let mut names = Vec::with_capacity(configs.len());
    for (i, t) in configs.iter().enumerate() {
        let p = format!("configs[{i}]");
        let get = |key: &str| -> Checked<Option<String>> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => refuse(
                    format!("{p}.{key}"),
                    format!("expected a string, found {} `{v}`", v.type_str()),
                ),
            }
        };
        let name = get("name")?;
        let preset = get("preset")?;
        let (field, name) = match (name, preset) {
            (Some(n), _) => (format!("{p}.name"), n),
            (None, Some(pr)) => (format!("{p}.preset"), pr),
            (None, None) => {
                return refuse(
                    p,
                    "needs a `name` or a `preset`, e.g. preset = \"aws-standard\"",
                )
            }
        };
        check_name(&field, &name)?;
        if !seen.insert(name.clone()) {
            return refuse(
                field,
                format!("`{name}` is used by an earlier config; give each config a unique `name`"),
            );
        }
        names.push(name);
    }
    Ok(names)
}

pub fn check_topology(layers: &[LayerSpec]) -> Checked<()> {
    check_count(
        "topology",
        "layers",
        layers.len() as u64,
        limits::MAX_LAYERS as u64,
    )?;
    let mut seen = BTreeSet::new();
    for (i, l) in layers.iter().enumerate() {
        let p = format!("topology[{i}]");
        check_name(&format!("{p}.name"), &l.name)?;
        if !seen.insert(l.name.as_str()) {
            return refuse(
                format!("{p}.name"),
                format!(
                    "`{}` is used by an earlier layer; layer names must be unique",
                    l.name
                ),
            );
        }
        if l.concurrency == Some(0) {
            return refuse(format!("{p}.concurrency"), "0 is outside [1, 4294967295]");
        }
        if let Some(c) = l.concurrency {
            check_count(
                &format!("{p}.concurrency"),
                "slots",
                c.into(),
                limits::MAX_SLOTS.into(),
            )?;
        }
        if let Some(d) = &l.service_time {
            check_dist(&format!("{p}.service_time"), d)?;
        }
        if let Some(t) = &l.config {
            for key in ["name", "preset"] {
                if let Some(v) = t.get(key) {
                    if !v.is_str() {
                        return refuse(
                            format!("{p}.config.{key}"),
                            format!("expected a string, found {} `{v}`", v.type_str()),
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses_only() {
        assert_eq!(
            suggest("poison", LOAD_KINDS.iter().copied()).as_deref(),
            Some("poisson")
        );
        assert_eq!(
            suggest("durration", ["name", "duration", "drain"]).as_deref(),
            Some("duration")
        );
        assert_eq!(suggest("zzzz", LOAD_KINDS.iter().copied()), None);
    }

    #[test]
    fn parses_urls() {
        assert_eq!(
            parse_url("http://127.0.0.1:8080/x").unwrap(),
            ("127.0.0.1".into(), 8080)
        );
        assert_eq!(
            parse_url("http://localhost").unwrap(),
            ("localhost".into(), 80)
        );
        assert_eq!(
            parse_url("http://[::1]:9000").unwrap(),
            ("::1".into(), 9000)
        );
        assert_eq!(parse_url("https://x:1").unwrap(), ("x".into(), 1));
        assert_eq!(
            parse_url("https://localhost").unwrap(),
            ("localhost".into(), 443)
        );
        assert!(parse_url("ftp://x:1").is_err());
        assert!(parse_url("http://:80").is_err());
        assert!(parse_url("http://h:0").is_err());
        assert!(parse_url("http://h:99999").is_err());
    }

    #[test]
    fn names_are_folder_safe() {
        assert!(check_name("name", "downstream-503_v1.2").is_ok());
        assert!(check_name("name", "").is_err());
        assert!(check_name("name", "a/b").is_err());
        assert!(check_name("name", "..").is_err());
    }
}
