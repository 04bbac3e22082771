//! The reply parts of each fault (its hint headers' text, its gRPC status), worked out
//! once per run so that a reply reads them rather than formatting them per attempt.

use crate::policy::GrpcStatus;
use crate::scenario::timeline::FaultTimeline;
use crate::scenario::FaultKind;

/// Precomputed response parts of each fault, indexed like the faults.
pub(super) struct FaultParts {
    /// `Retry-After` as whole seconds text, rounded up as the live target sends it.
    pub(super) retry_after: Option<String>,
    /// `retry-after-ms` as whole milliseconds text, rounded up as the live target sends it.
    pub(super) retry_after_ms: Option<String>,
    /// `x-should-retry` as the live target sends it.
    pub(super) should_retry: Option<&'static str>,
    pub(super) error_code: Option<String>,
    pub(super) lost_status: Option<u16>,
    /// A `grpc-status` fault's status and `grpc-retry-pushback-ms` text.
    pub(super) grpc: Option<(GrpcStatus, Option<String>)>,
    /// It carries nothing a response reads but its status (no hint, no code, no gRPC
    /// status): its reply reads as a plain answer, built without looking at the parts.
    pub(super) plain: bool,
}

impl FaultParts {
    /// Parts with `plain` worked out from the rest.
    pub(super) fn new(
        retry_after: Option<String>,
        retry_after_ms: Option<String>,
        should_retry: Option<&'static str>,
        error_code: Option<String>,
        lost_status: Option<u16>,
        grpc: Option<(GrpcStatus, Option<String>)>,
    ) -> FaultParts {
        let plain = retry_after.is_none()
            && retry_after_ms.is_none()
            && should_retry.is_none()
            && error_code.is_none()
            && grpc.is_none();
        FaultParts {
            retry_after,
            retry_after_ms,
            should_retry,
            error_code,
            lost_status,
            grpc,
            plain,
        }
    }
}

/// The parts of each fault of `timeline`, indexed like its faults.
pub(super) fn fault_parts(timeline: &FaultTimeline) -> Vec<FaultParts> {
    timeline
        .faults()
        .iter()
        .map(|f| match &f.kind {
            FaultKind::Status {
                retry_after,
                retry_after_ms,
                should_retry,
                error_code,
                ..
            } => FaultParts::new(
                retry_after.map(|d| (d.as_secs() + u64::from(d.subsec_nanos() > 0)).to_string()),
                retry_after_ms.map(|d| {
                    (d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 > 0)).to_string()
                }),
                should_retry.map(|b| if b { "true" } else { "false" }),
                error_code.clone(),
                None,
                None,
            ),
            FaultKind::GrpcStatus { status, pushback } => FaultParts::new(
                None,
                None,
                None,
                None,
                None,
                Some((*status, pushback.map(|p| p.as_millis().to_string()))),
            ),
            FaultKind::LostResponse { status } => {
                FaultParts::new(None, None, None, None, *status, None)
            }
            _ => FaultParts::new(None, None, None, None, None, None),
        })
        .collect()
}
