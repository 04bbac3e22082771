//! gRPC status codes, the outcome a gRPC call reports in its `grpc-status` trailer.
//!
//! A gRPC server answers HTTP 200 whatever happened; the call's fate is in the trailers. A
//! classifier that looked only at the HTTP status would call every failed gRPC call a
//! success, so gRPC configs (the `grpc` preset, Envoy's and Istio's gRPC `retry_on` names)
//! classify by this status. Names are written the way people meet them: the gRPC spec's
//! `UNAVAILABLE`, Envoy's `unavailable` / `resource-exhausted`, or the number.

use serde::{Deserialize, Serialize};

/// One of gRPC's 17 status codes (`grpc/doc/statuscodes.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum GrpcStatus {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

/// Every code, indexed by its number.
const ALL: [GrpcStatus; 17] = [
    GrpcStatus::Ok,
    GrpcStatus::Cancelled,
    GrpcStatus::Unknown,
    GrpcStatus::InvalidArgument,
    GrpcStatus::DeadlineExceeded,
    GrpcStatus::NotFound,
    GrpcStatus::AlreadyExists,
    GrpcStatus::PermissionDenied,
    GrpcStatus::ResourceExhausted,
    GrpcStatus::FailedPrecondition,
    GrpcStatus::Aborted,
    GrpcStatus::OutOfRange,
    GrpcStatus::Unimplemented,
    GrpcStatus::Internal,
    GrpcStatus::Unavailable,
    GrpcStatus::DataLoss,
    GrpcStatus::Unauthenticated,
];

impl GrpcStatus {
    /// The status with number `code`, if it is one of the 17.
    pub fn from_code(code: u32) -> Option<GrpcStatus> {
        ALL.get(code as usize).copied()
    }

    /// Its number, as `grpc-status` carries it.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The spec's name (`UNAVAILABLE`).
    pub fn name(self) -> &'static str {
        match self {
            GrpcStatus::Ok => "OK",
            GrpcStatus::Cancelled => "CANCELLED",
            GrpcStatus::Unknown => "UNKNOWN",
            GrpcStatus::InvalidArgument => "INVALID_ARGUMENT",
            GrpcStatus::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcStatus::NotFound => "NOT_FOUND",
            GrpcStatus::AlreadyExists => "ALREADY_EXISTS",
            GrpcStatus::PermissionDenied => "PERMISSION_DENIED",
            GrpcStatus::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcStatus::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcStatus::Aborted => "ABORTED",
            GrpcStatus::OutOfRange => "OUT_OF_RANGE",
            GrpcStatus::Unimplemented => "UNIMPLEMENTED",
            GrpcStatus::Internal => "INTERNAL",
            GrpcStatus::Unavailable => "UNAVAILABLE",
            GrpcStatus::DataLoss => "DATA_LOSS",
            GrpcStatus::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// Reads `UNAVAILABLE`, `unavailable`, `resource-exhausted`, `resource_exhausted` or `14`.
    pub fn parse(text: &str) -> Option<GrpcStatus> {
        let t = text.trim();
        if let Ok(n) = t.parse::<u32>() {
            return Self::from_code(n);
        }
        let canon = t.replace('-', "_");
        ALL.iter()
            .copied()
            .find(|s| s.name().eq_ignore_ascii_case(&canon))
    }

    /// The raw `grpc-status` value of a reply: a decimal number. Anything else is UNKNOWN,
    /// as gRPC's clients read a status they cannot parse.
    pub fn from_header(value: &str) -> GrpcStatus {
        value
            .parse::<u32>()
            .ok()
            .and_then(Self::from_code)
            .unwrap_or(GrpcStatus::Unknown)
    }

    /// gRPC's "HTTP to gRPC Status Code Mapping", for a reply to a gRPC call that carries no
    /// `grpc-status` (a proxy or a plain HTTP server answered): 400 INTERNAL, 401
    /// UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429/502/503/504
    /// UNAVAILABLE, anything else UNKNOWN. `None` for 200, which is no answer to map.
    pub fn from_http(status: u16) -> Option<GrpcStatus> {
        Some(match status {
            200 => return None,
            400 => GrpcStatus::Internal,
            401 => GrpcStatus::Unauthenticated,
            403 => GrpcStatus::PermissionDenied,
            404 => GrpcStatus::Unimplemented,
            429 | 502 | 503 | 504 => GrpcStatus::Unavailable,
            _ => GrpcStatus::Unknown,
        })
    }

    /// Kebab-case name for reports and attempt logs (`resource-exhausted`), Envoy's spelling.
    pub fn label(self) -> &'static str {
        match self {
            GrpcStatus::Ok => "ok",
            GrpcStatus::Cancelled => "cancelled",
            GrpcStatus::Unknown => "unknown",
            GrpcStatus::InvalidArgument => "invalid-argument",
            GrpcStatus::DeadlineExceeded => "deadline-exceeded",
            GrpcStatus::NotFound => "not-found",
            GrpcStatus::AlreadyExists => "already-exists",
            GrpcStatus::PermissionDenied => "permission-denied",
            GrpcStatus::ResourceExhausted => "resource-exhausted",
            GrpcStatus::FailedPrecondition => "failed-precondition",
            GrpcStatus::Aborted => "aborted",
            GrpcStatus::OutOfRange => "out-of-range",
            GrpcStatus::Unimplemented => "unimplemented",
            GrpcStatus::Internal => "internal",
            GrpcStatus::Unavailable => "unavailable",
            GrpcStatus::DataLoss => "data-loss",
            GrpcStatus::Unauthenticated => "unauthenticated",
        }
    }
}

impl std::fmt::Display for GrpcStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for GrpcStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// A status as written in a file: a number, or a name or pattern (gRPC statuses and HTTP
/// status patterns alike).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum CodeOrText {
    Code(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for GrpcStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use CodeOrText as Raw;
        let expected = "a gRPC status: a name such as \"UNAVAILABLE\" or \"resource-exhausted\", or a code 0..=16";
        let parsed = match Raw::deserialize(d)? {
            Raw::Code(c) => u32::try_from(c).ok().and_then(GrpcStatus::from_code),
            Raw::Text(t) => GrpcStatus::parse(&t),
        };
        parsed.ok_or_else(|| serde::de::Error::custom(format!("expected {expected}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_spellings_round_trip() {
        for (i, s) in ALL.iter().enumerate() {
            assert_eq!(s.code() as usize, i);
            assert_eq!(GrpcStatus::parse(s.name()), Some(*s));
            assert_eq!(GrpcStatus::parse(s.label()), Some(*s));
            assert_eq!(GrpcStatus::parse(&i.to_string()), Some(*s));
        }
        assert_eq!(
            GrpcStatus::parse("resource_exhausted"),
            Some(GrpcStatus::ResourceExhausted)
        );
        assert_eq!(GrpcStatus::parse("17"), None);
        assert_eq!(GrpcStatus::parse("UNAVAILABLE!"), None);
        assert_eq!(GrpcStatus::from_header("14"), GrpcStatus::Unavailable);
        assert_eq!(GrpcStatus::from_header("x"), GrpcStatus::Unknown);
        assert_eq!(GrpcStatus::from_header("99"), GrpcStatus::Unknown);
    }

    #[test]
    fn http_mapping_follows_the_spec() {
        assert_eq!(GrpcStatus::from_http(200), None);
        for s in [429, 502, 503, 504] {
            assert_eq!(GrpcStatus::from_http(s), Some(GrpcStatus::Unavailable));
        }
        assert_eq!(GrpcStatus::from_http(404), Some(GrpcStatus::Unimplemented));
        assert_eq!(GrpcStatus::from_http(500), Some(GrpcStatus::Unknown));
    }

    #[test]
    fn serde_reads_every_spelling_and_writes_the_label() {
        #[derive(Deserialize, Serialize)]
        struct T {
            s: Vec<GrpcStatus>,
        }
        let t: T = toml::from_str(r#"s = ["UNAVAILABLE", "resource-exhausted", 4]"#).unwrap();
        assert_eq!(
            t.s,
            vec![
                GrpcStatus::Unavailable,
                GrpcStatus::ResourceExhausted,
                GrpcStatus::DeadlineExceeded
            ]
        );
        assert!(serde_json::to_string(&t)
            .unwrap()
            .contains("\"deadline-exceeded\""));
        assert!(toml::from_str::<T>(r#"s = ["SLOW"]"#).is_err());
        assert!(toml::from_str::<T>("s = [17]").is_err());
    }
}
