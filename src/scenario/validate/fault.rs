//! Checks of `[[faults]]`: one window each, where and when it acts, then what it does (one
//! step per kind).

use std::time::Duration;

use super::load::check_path;
use super::refuse::{forbid, refuse, require, unknown_kind, Checked};
use super::{check_count, check_dist};
use crate::scenario::limits;
use crate::scenario::model::*;
use crate::scenario::units::duration::format as fmt_d;

/// Fault kinds as written in files.
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

/// One fault window: where and when it acts, then what it does (one step per kind).
pub fn check_fault(i: usize, f: &FaultSection, duration: Duration) -> Checked<Fault> {
    let p = format!("faults[{i}]");
    if f.series.is_some() {
        return refuse(
            format!("{p}.series"),
            "a series fault is read with its scenario, from a file beside it; write the \
             windows here, or put the fault in the scenario",
        );
    }
    if f.gaps.is_some() {
        return refuse(
            format!("{p}.gaps"),
            "only a fault with `series` takes `gaps`",
        );
    }
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
        return refuse(
            format!("{p}.for"),
            "is 0s or missing; a window needs a length in (0s, duration], e.g. for = \"30s\"",
        );
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
