//! Checks of `[load]`: its shape (the kind's fields), the request it sends (method, path,
//! headers, body), its ceilings, and the work it plans.

use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};

use super::check_count;
use super::refuse::{forbid, refuse, require, unknown_kind, Checked, Refusal};
use crate::scenario::limits::{self, big};
use crate::scenario::model::*;
use crate::scenario::recording::read::Recorded;
use crate::scenario::units::duration::format as fmt_d;

/// Load kinds as written in files.
pub const LOAD_KINDS: &[&str] = &[
    "constant", "poisson", "ramp", "steps", "closed", "burst", "series", "trace",
];

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
pub(super) fn check_path(field: &str, path: &str) -> Checked<()> {
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

/// Refuses the load's shape fields (`rate`, `from`, `to`, `steps`, `users`, `think_time`,
/// and a recording's `file`, `arrivals`, `speed`, `format`, `skip_bad_lines`) that are set
/// but not among `used` by its kind.
fn forbid_unused(l: &LoadSection, kind_desc: &str, takes: &str, used: &[&str]) -> Checked<()> {
    let set = [
        ("rate", l.rate.is_some()),
        ("from", l.from.is_some()),
        ("to", l.to.is_some()),
        ("steps", l.steps.is_some()),
        ("users", l.users.is_some()),
        ("think_time", l.think_time.is_some()),
        ("file", l.file.is_some()),
        ("arrivals", l.arrivals.is_some()),
        ("speed", l.speed.is_some()),
        ("format", l.format.is_some()),
        ("skip_bad_lines", l.skip_bad_lines.is_some()),
        ("fold_retries", l.fold_retries.is_some()),
        ("fold_key", l.fold_key.is_some()),
    ];
    let unused: Vec<_> = set.into_iter().filter(|(n, _)| !used.contains(n)).collect();
    forbid(kind_desc, takes, &unused, "load")
}

/// `recorded` is the recording of a `series` or `trace` load, read and cut beforehand
/// ([`crate::scenario::recording::read`]), whose refusals name the recording's own lines.
pub fn check_load(
    l: &LoadSection,
    duration: Duration,
    recorded: Option<Recorded>,
) -> Checked<Load> {
    let shape = check_shape(l, duration, recorded)?;
    check_request(l)?;
    let clients = check_ceilings(l)?;
    let f = |name: &str| format!("load.{name}");
    if !l.classes.is_empty() && l.grpc.is_some() {
        return refuse(
            f("classes"),
            "a gRPC load calls one method; request classes mix plain HTTP calls",
        );
    }
    let classes = crate::scenario::classes::check_classes(
        &l.classes,
        crate::scenario::classes::LoadDefaults {
            method: &l.method,
            path: &l.path,
            headers: &l.headers,
            body: l.body.as_deref(),
        },
        crate::scenario::classes::RequestChecks {
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
            Some(g) => Some(crate::scenario::grpc::check(
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
        max_client_instances: l
            .max_client_instances
            .unwrap_or(limits::DEFAULT_MAX_CLIENT_INSTANCES),
        clients,
        classes,
    })
}

/// The load's shape: the fields its kind takes, each set and within range, and none other.
fn check_shape(
    l: &LoadSection,
    duration: Duration,
    recorded: Option<Recorded>,
) -> Checked<LoadShape> {
    let f = |name: &str| format!("load.{name}");
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
        "steps" => check_steps(l, duration)?,
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
        "series" | "trace" => check_recorded(l, duration, recorded)?,
        other => return refuse(f("kind"), unknown_kind("load kind", other, LOAD_KINDS)),
    };
    Ok(shape)
}

/// A `series` or `trace` load: the recording's fields only, and a duration that covers
/// the replay (the recording is not cut silently: `load.to` cuts it on purpose).
fn check_recorded(
    l: &LoadSection,
    duration: Duration,
    recorded: Option<Recorded>,
) -> Checked<LoadShape> {
    let mut used = vec!["file", "from", "to", "speed", "skip_bad_lines"];
    if l.kind == "series" {
        used.push("arrivals");
    } else {
        used.extend(["format", "fold_retries", "fold_key"]);
    }
    forbid_unused(
        l,
        &format!("a {} load", l.kind),
        "`file` and its window (`from`, `to`, `speed`)",
        &used,
    )?;
    let Some(recorded) = recorded else {
        return refuse("load.file", "is missing; give the recording's path");
    };
    let end = recorded.end();
    if end > duration {
        let whole = Duration::from_secs(end.as_secs() + u64::from(end.subsec_nanos() > 0));
        return refuse(
            "duration",
            format!(
                "{} is shorter than the replay of load.file ({:.3} s once windowed by \
                 from/to and compressed by speed); set duration = \"{}\" or more, or cut \
                 the recording with load.to",
                fmt_d(duration),
                end.as_secs_f64(),
                fmt_d(whole)
            ),
        );
    }
    Ok(match recorded {
        Recorded::Series {
            file,
            arrivals,
            steps,
            skipped,
            ..
        } => LoadShape::Series {
            file,
            arrivals,
            steps,
            skipped_lines: skipped,
        },
        Recorded::Trace {
            file,
            times,
            classes,
            skipped,
            ..
        } => LoadShape::Trace {
            file,
            times,
            classes,
            skipped_lines: skipped,
        },
    })
}

/// A `steps` load: at least one step, sorted by `at` within the duration, not all at rate 0.
fn check_steps(l: &LoadSection, duration: Duration) -> Checked<LoadShape> {
    let p = "load";
    let f = |name: &str| format!("{p}.{name}");
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
    Ok(LoadShape::Steps { steps })
}

/// What every arrival sends: its method, path, headers and body.
fn check_request(l: &LoadSection) -> Checked<()> {
    let f = |name: &str| format!("load.{name}");
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
    Ok(())
}

/// The load's ceilings: requests in flight, connections, and the size of its fleet of
/// clients (returned: one when `clients` is not set).
fn check_ceilings(l: &LoadSection) -> Checked<NonZeroU32> {
    let f = |name: &str| format!("load.{name}");
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
    Ok(clients)
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
/// ceiling (`load.max_planned_arrivals`; a closed loop's users each send once per think
/// time, see [`limits::planned_arrivals`]), and the memory of its client fleets against
/// theirs (`load.max_client_instances`). Checked at load time, and again by `run` and
/// `sim` after command-line overrides (`--duration`, `--scale`) changed the work.
pub fn check_work(load: &Load, duration: Duration, configs: usize, scale: f64) -> Checked<()> {
    let per_config = limits::planned_arrivals(&load.shape, duration) * scale;
    limits::check_planned(per_config, configs, load.max_planned_arrivals).map_err(|m| Refusal {
        field: planned_field(&load.shape),
        message: match load.shape {
            LoadShape::Closed { .. } => format!(
                "{m} (a closed loop: each user sends once per think_time, or once per {} µs \
                 with none); a longer think_time, fewer users or a shorter duration plan less",
                limits::CLOSED_LOOP_FLOOR.as_micros()
            ),
            _ => m,
        },
    })?;
    limits::check_fleet(load.clients.get(), configs, load.max_client_instances).map_err(|m| {
        Refusal {
            field: "load.clients".into(),
            message: m,
        }
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
        LoadShape::Series { .. } | LoadShape::Trace { .. } => "load.file",
        _ => "load.rate",
    }
    .to_string()
}
