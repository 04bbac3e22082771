//! Outcome classification: what one attempt produced becomes success, transient, throttling,
//! non-retryable, or local-resource (the load generator's own machine failed it).
//!
//! Which statuses, error codes and transport failures are retryable is per config
//! ([`RetryOn`]), because real clients disagree: AWS standard mode retries 500/502/503/504 but a
//! bare 429 only since 2026, Envoy retries whatever `retry_on` lists, Finagle only failures that
//! provably never left the client. Whether the *method* allows a retry (idempotency) is decided
//! later by the client, not here, so that the attempt log can still say "transient" for a POST
//! that timed out but was not retried.

use serde::{Deserialize, Serialize};

use super::grpc_status::{CodeOrText, GrpcStatus};

/// A failure below HTTP: the attempt produced no response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportError {
    /// The connection was refused (RST to SYN): the request never left the client.
    ConnectRefused,
    /// The connection was not established in time: the request never left the client.
    ConnectTimeout,
    /// The connection was reset after the request may have been sent.
    Reset,
    /// No (complete) response arrived in time after the request was sent.
    ReadTimeout,
    /// The per-try timeout of the retry config fired.
    PerTryTimeout,
    /// The peer spoke something that is not valid HTTP.
    Protocol,
    /// The TLS handshake failed (certificate not trusted, wrong name, expired, no common
    /// protocol): the connection never carried a request. Counted as connect-level, never
    /// as a server answer; retried only where a config lists it (a certificate that was
    /// wrong a moment ago is wrong now).
    TlsHandshake,
    /// HTTP/2: the server reset this request's stream (RST_STREAM) after it was sent.
    StreamReset,
    /// HTTP/2: the server sent GOAWAY and this request's stream was above its last
    /// processed stream id, or the connection went away with the request on it.
    Goaway,
    /// The load generator's own machine refused the attempt before it left: no file
    /// descriptor (EMFILE, ENFILE), no free local address or port (EADDRNOTAVAIL), no buffer
    /// space (ENOBUFS). Says nothing about the target.
    LocalResource,
}

impl TransportError {
    /// True when the request provably never reached the server (connect failed), which makes a
    /// retry safe even for a non-idempotent method (RFC 9110 §9.2.2).
    pub fn never_reached_server(&self) -> bool {
        matches!(
            self,
            TransportError::ConnectRefused
                | TransportError::ConnectTimeout
                | TransportError::TlsHandshake
                | TransportError::LocalResource
        )
    }

    /// True for the kinds the attempt log calls "timeout".
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            TransportError::ConnectTimeout
                | TransportError::ReadTimeout
                | TransportError::PerTryTimeout
        )
    }
}

/// What one attempt's response looked like, as the engine saw it. Header values are raw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Response<'a> {
    /// HTTP status code.
    pub status: u16,
    /// Raw `Retry-After` header value.
    pub retry_after: Option<&'a str>,
    /// Raw `retry-after-ms` header value (milliseconds; the LLM APIs' finer Retry-After).
    pub retry_after_ms: Option<&'a str>,
    /// Raw `x-should-retry` header value: the server's own word on whether to retry
    /// (`true` / `false`), which the Stainless-generated LLM SDKs obey over the status.
    pub should_retry: Option<&'a str>,
    /// Raw `x-amz-retry-after` header value (milliseconds).
    pub amz_retry_after: Option<&'a str>,
    /// Raw `grpc-retry-pushback-ms` value (milliseconds, negative = do not retry).
    pub grpc_pushback_ms: Option<&'a str>,
    /// Service error code from the body or an error header (e.g. AWS `ThrottlingException`).
    pub error_code: Option<&'a str>,
    /// The reply to a gRPC call: its `grpc-status` (from the trailers, or the headers of a
    /// trailers-only answer). When present it alone decides the class; the HTTP status of a
    /// gRPC answer is 200 whatever happened.
    pub grpc_status: Option<GrpcStatus>,
}

impl<'a> Response<'a> {
    /// Whether the policy reads anything but the status of a response with `status`: only
    /// failures are classified by error code and carry retry hints, so an engine may skip
    /// looking up headers (a hash per name, per attempt) for everything else.
    pub fn headers_matter(status: u16) -> bool {
        status >= 400
    }

    /// A response with only a status.
    pub fn status(status: u16) -> Self {
        Response {
            status,
            ..Response::default()
        }
    }
}

/// What one attempt produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptOutcome<'a> {
    /// A response arrived.
    Response(Response<'a>),
    /// No response: a transport failure.
    Transport(TransportError),
}

/// The class of one attempt's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeClass {
    /// 1xx–3xx: the logical request is done.
    Success,
    /// A retryable failure that is not throttling (5xx, resets, timeouts, ...).
    Transient,
    /// A retryable failure that says "slow down" (429, throttling error codes, ...).
    Throttling,
    /// A failure that retrying cannot fix (most 4xx, unlisted statuses and transport kinds).
    NonRetryable,
    /// The load generator ran out of a local resource (file descriptors, ports, buffers):
    /// never retried (the target did not fail; a retry would only hit the same limit), and
    /// counted apart so that the figures are not read as the target's doing.
    LocalResource,
}

impl OutcomeClass {
    /// True for the retryable classes.
    pub fn is_retryable(&self) -> bool {
        matches!(self, OutcomeClass::Transient | OutcomeClass::Throttling)
    }
}

/// A status pattern: an exact code (`503`) or a whole class (`"5xx"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusPattern {
    /// Exactly this status.
    Exact(u16),
    /// Every status `c00..=c99`, written `"5xx"`.
    Class(u8),
}

impl StatusPattern {
    /// Does `status` match?
    pub fn matches(&self, status: u16) -> bool {
        match *self {
            StatusPattern::Exact(s) => s == status,
            StatusPattern::Class(c) => status / 100 == c as u16,
        }
    }
}

impl Serialize for StatusPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StatusPattern::Exact(code) => s.serialize_u16(*code),
            StatusPattern::Class(c) => s.serialize_str(&format!("{c}xx")),
        }
    }
}

impl<'de> Deserialize<'de> for StatusPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use CodeOrText as Raw;
        let expected = "a status code 100..=599 or a class \"1xx\"..\"5xx\"";
        match Raw::deserialize(d)? {
            Raw::Code(c) if (100..=599).contains(&c) => Ok(StatusPattern::Exact(c as u16)),
            Raw::Code(c) => Err(serde::de::Error::custom(format!(
                "status {c} is not allowed: expected {expected}"
            ))),
            Raw::Text(t) => {
                let b = t.as_bytes();
                if b.len() == 3
                    && (b'1'..=b'5').contains(&b[0])
                    && t[1..].eq_ignore_ascii_case("xx")
                {
                    Ok(StatusPattern::Class(b[0] - b'0'))
                } else {
                    Err(serde::de::Error::custom(format!(
                        "status \"{t}\" is not allowed: expected {expected}"
                    )))
                }
            }
        }
    }
}

/// What a config retries. Statuses below 400 are always success; everything not listed here is
/// non-retryable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryOn {
    /// Statuses retried as transient failures (e.g. `[500, 502, 503, 504]` or `["5xx"]`).
    #[serde(default)]
    pub statuses: Vec<StatusPattern>,
    /// Statuses retried as throttling (e.g. `[429]`).
    #[serde(default)]
    pub throttling_statuses: Vec<StatusPattern>,
    /// Statuses retried as throttling only when the answer carries a non-empty `Retry-After`
    /// header (any value): urllib3's `Retry.RETRY_AFTER_STATUS_CODES` (413, 429, 503), retried by
    /// its default `Retry` only "on the presence of" that header (`util/retry.py`
    /// `is_retry`). The listed statuses above win over this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hinted_statuses: Vec<StatusPattern>,
    /// Transport failures retried (as transient).
    #[serde(default)]
    pub transport: Vec<TransportError>,
    /// Service error codes that mean throttling whatever the status (AWS `ThrottlingException`).
    /// They win over the status lists, as in the AWS SDK for Rust's classifier priority.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttling_codes: Vec<String>,
    /// Service error codes that mean a transient failure whatever the status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transient_codes: Vec<String>,
    /// gRPC statuses retried as transient failures (gRPC's `retryableStatusCodes`, Envoy's
    /// `retry_on: unavailable,cancelled,...`). A gRPC reply is classified by these lists
    /// alone; HTTP status lists apply to replies without a `grpc-status`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc_statuses: Vec<GrpcStatus>,
    /// gRPC statuses retried as throttling (e.g. `resource-exhausted`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc_throttling_statuses: Vec<GrpcStatus>,
    /// Obey the server's `x-should-retry` header on a failed answer (status >= 400), as the
    /// Stainless-generated LLM SDKs do (`_base_client.py` `_should_retry`): exactly `true`
    /// makes any failure retryable (a 400 included), exactly `false` stops the retries of
    /// any (a 503 included; the request ends as `server-pushback`). Any other value, or
    /// none: the lists above decide.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub x_should_retry: bool,
}

/// What a server's `x-should-retry` value says: `Some(true)` / `Some(false)` for exactly
/// `true` / `false` (the SDKs compare the string as it is, case included), else `None`.
pub fn server_says_retry(value: Option<&str>) -> Option<bool> {
    match value.map(str::trim) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    }
}

/// The classification of one outcome, with the details budgets and logs need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// The class.
    pub class: OutcomeClass,
    /// A connect, read or per-try timeout (AWS classic charges these differently).
    pub timeout: bool,
    /// The request provably never reached the server.
    pub never_sent: bool,
}

impl RetryOn {
    /// Whether transport failure `t` is retried. A config that retries `reset` retries
    /// HTTP/2's forms of it too (`stream-reset`, `goaway`): each means the server dropped
    /// a request it may have seen, which is what `reset` stands for over HTTP/1.1.
    fn retries(&self, t: TransportError) -> bool {
        self.transport.contains(&t)
            || (matches!(t, TransportError::StreamReset | TransportError::Goaway)
                && self.transport.contains(&TransportError::Reset))
    }

    /// Classify one attempt's outcome.
    ///
    /// A gRPC reply (one with a `grpc-status`): OK → success; a listed throttling status →
    /// throttling; a listed status → transient; any other → non-retryable.
    ///
    /// Otherwise, order (first match wins): status < 400 → success; throttling error code → throttling;
    /// throttling status → throttling; transient error code or transient status → transient;
    /// a hinted status with a `Retry-After` → throttling; `x-should-retry: true` (with [`RetryOn::x_should_retry`]) → transient; otherwise
    /// non-retryable. Transport failures are transient when listed, else non-retryable.
    pub fn classify(&self, outcome: &AttemptOutcome<'_>) -> Classified {
        match outcome {
            AttemptOutcome::Transport(TransportError::LocalResource) => Classified {
                class: OutcomeClass::LocalResource,
                timeout: false,
                never_sent: true,
            },
            AttemptOutcome::Transport(t) => Classified {
                class: if self.retries(*t) {
                    OutcomeClass::Transient
                } else {
                    OutcomeClass::NonRetryable
                },
                timeout: t.is_timeout(),
                never_sent: t.never_reached_server(),
            },
            AttemptOutcome::Response(Response {
                grpc_status: Some(g),
                ..
            }) => Classified {
                class: if *g == GrpcStatus::Ok {
                    OutcomeClass::Success
                } else if self.grpc_throttling_statuses.contains(g) {
                    OutcomeClass::Throttling
                } else if self.grpc_statuses.contains(g) {
                    OutcomeClass::Transient
                } else {
                    OutcomeClass::NonRetryable
                },
                timeout: false,
                never_sent: false,
            },
            AttemptOutcome::Response(r) => {
                let code = r.error_code.unwrap_or("");
                let has = |list: &[String]| !code.is_empty() && list.iter().any(|c| c == code);
                let any = |list: &[StatusPattern]| list.iter().any(|p| p.matches(r.status));
                let class = if !Response::headers_matter(r.status) {
                    OutcomeClass::Success
                } else if has(&self.throttling_codes) || any(&self.throttling_statuses) {
                    OutcomeClass::Throttling
                } else if has(&self.transient_codes) || any(&self.statuses) {
                    OutcomeClass::Transient
                } else if r.retry_after.is_some_and(|v| !v.trim().is_empty())
                    && any(&self.hinted_statuses)
                {
                    OutcomeClass::Throttling
                } else if self.x_should_retry && server_says_retry(r.should_retry) == Some(true) {
                    // The server says this failure is worth another try. (Its `false` is
                    // not a class: a 503 stays transient, and the client stops the retries.)
                    OutcomeClass::Transient
                } else {
                    OutcomeClass::NonRetryable
                };
                Classified {
                    class,
                    timeout: false,
                    never_sent: false,
                }
            }
        }
    }
}

/// What a *sent* attempt came to, as `attempts.csv` and the `attempts_by_outcome` counts
/// name it. A closed set, so counting one is an array index rather than a string lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptLabel {
    Ok,
    Transient,
    Throttle,
    Timeout,
    ClientError,
    LocalResource,
    /// The TLS handshake failed: connect-level, never a server answer.
    TlsHandshake,
    /// HTTP/2 RST_STREAM from the server.
    StreamReset,
    /// HTTP/2 GOAWAY took the request's stream with it.
    Goaway,
    /// No answer, and the in-process target (or proxy) never read the attempt: the kernel
    /// queued the connection but the process did not accept or read it before the client
    /// gave up (out of file descriptors, short of CPU). The generator's machine, not the
    /// target; the policy saw what the client saw (a timeout, a reset).
    NotAccepted,
    /// Still without an answer when its request was dropped: the run's drain ended (or, at
    /// a layer, its caller hung up). Read by the target, so it counts among its arrivals.
    Unfinished,
}

impl AttemptLabel {
    /// Every label, in the order of their slots.
    pub const ALL: [AttemptLabel; 11] = [
        AttemptLabel::Ok,
        AttemptLabel::Transient,
        AttemptLabel::Throttle,
        AttemptLabel::Timeout,
        AttemptLabel::ClientError,
        AttemptLabel::LocalResource,
        AttemptLabel::TlsHandshake,
        AttemptLabel::StreamReset,
        AttemptLabel::Goaway,
        AttemptLabel::NotAccepted,
        AttemptLabel::Unfinished,
    ];

    /// The name reports and the attempt log use.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptLabel::Ok => "ok",
            AttemptLabel::Transient => "transient",
            AttemptLabel::Throttle => "throttle",
            AttemptLabel::Timeout => "timeout",
            AttemptLabel::ClientError => "client-error",
            AttemptLabel::LocalResource => "local-resource",
            AttemptLabel::TlsHandshake => "tls-handshake",
            AttemptLabel::StreamReset => "stream-reset",
            AttemptLabel::Goaway => "goaway",
            AttemptLabel::NotAccepted => "not-accepted",
            AttemptLabel::Unfinished => "unfinished",
        }
    }
}

/// Label of a *sent* attempt: `ok`, `transient`, `throttle`, `timeout`, `client-error`,
/// `local-resource` (the generator's machine failed it), and the transport failures that
/// are their own outcome whatever the config makes of them: `tls-handshake` (a wrong
/// certificate must not hide among connect failures), HTTP/2 `stream-reset` and `goaway`.
/// Connect, read and per-try timeouts are `timeout` whatever their class, so the log
/// separates slow failures from fast ones; non-retryable outcomes are `client-error`.
/// Attempts refused before sending (breaker, budget, deadline, cost) use [`REFUSED_LABEL`].
pub fn attempt_label(outcome: &AttemptOutcome<'_>, class: OutcomeClass) -> AttemptLabel {
    if let AttemptOutcome::Transport(t) = outcome {
        match t {
            t if t.is_timeout() => return AttemptLabel::Timeout,
            TransportError::TlsHandshake => return AttemptLabel::TlsHandshake,
            TransportError::StreamReset => return AttemptLabel::StreamReset,
            TransportError::Goaway => return AttemptLabel::Goaway,
            _ => {}
        }
    }
    match class {
        OutcomeClass::Success => AttemptLabel::Ok,
        OutcomeClass::Transient => AttemptLabel::Transient,
        OutcomeClass::Throttling => AttemptLabel::Throttle,
        OutcomeClass::NonRetryable => AttemptLabel::ClientError,
        OutcomeClass::LocalResource => AttemptLabel::LocalResource,
    }
}

/// Label for an attempt refused before it was sent (breaker open, budget, deadline, cost cap).
pub const REFUSED_LABEL: &str = "refused";

/// RFC 9110 §9.2.2: PUT, DELETE and the safe methods (GET, HEAD, OPTIONS, TRACE) are idempotent.
/// Anything else (POST, PATCH, CONNECT, unknown extension methods) is treated as not idempotent.
pub fn is_idempotent_method(method: &str) -> bool {
    // Methods nearly always arrive in their canonical upper case; match that without folding.
    if matches!(
        method,
        "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
    ) {
        return true;
    }
    const IDEMPOTENT: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];
    IDEMPOTENT.iter().any(|m| m.eq_ignore_ascii_case(method))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aws_like() -> RetryOn {
        RetryOn {
            statuses: vec![StatusPattern::Class(5)],
            throttling_statuses: vec![StatusPattern::Exact(429)],
            transport: vec![TransportError::ConnectRefused, TransportError::ReadTimeout],
            throttling_codes: vec!["SlowDown".into()],
            transient_codes: vec!["RequestTimeout".into()],
            grpc_statuses: vec![GrpcStatus::Unavailable],
            grpc_throttling_statuses: vec![GrpcStatus::ResourceExhausted],
            x_should_retry: false,
            hinted_statuses: vec![],
        }
    }

    fn grpc(status: u16, g: GrpcStatus) -> AttemptOutcome<'static> {
        AttemptOutcome::Response(Response {
            status,
            grpc_status: Some(g),
            ..Response::default()
        })
    }

    /// urllib3's rule: a hinted status is throttling only with a non-empty `Retry-After`,
    /// and the plain lists win over it.
    #[test]
    fn a_hinted_status_is_retried_only_with_a_retry_after() {
        let on = RetryOn {
            statuses: vec![StatusPattern::Exact(503)],
            hinted_statuses: vec![StatusPattern::Exact(429), StatusPattern::Exact(503)],
            ..RetryOn::default()
        };
        let class = |status: u16, retry_after: Option<&'static str>| {
            on.classify(&AttemptOutcome::Response(Response {
                status,
                retry_after,
                ..Response::default()
            }))
            .class
        };
        assert_eq!(class(429, Some("1")), OutcomeClass::Throttling);
        assert_eq!(
            class(429, Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            OutcomeClass::Throttling
        );
        assert_eq!(class(429, None), OutcomeClass::NonRetryable);
        assert_eq!(class(429, Some("")), OutcomeClass::NonRetryable);
        assert_eq!(class(429, Some("  ")), OutcomeClass::NonRetryable);
        assert_eq!(class(503, Some("1")), OutcomeClass::Transient);
        assert_eq!(class(503, None), OutcomeClass::Transient);
        assert_eq!(class(500, Some("1")), OutcomeClass::NonRetryable);
    }

    #[test]
    fn a_grpc_reply_is_classified_by_its_grpc_status_alone() {
        let r = aws_like();
        // A 503 that carries a gRPC status is what the status says, not a 5xx.
        for (http, g, want) in [
            (200, GrpcStatus::Ok, OutcomeClass::Success),
            (200, GrpcStatus::Unavailable, OutcomeClass::Transient),
            (200, GrpcStatus::ResourceExhausted, OutcomeClass::Throttling),
            (
                200,
                GrpcStatus::DeadlineExceeded,
                OutcomeClass::NonRetryable,
            ),
            (503, GrpcStatus::Internal, OutcomeClass::NonRetryable),
        ] {
            assert_eq!(r.classify(&grpc(http, g)).class, want, "{http} {g}");
        }
        // Without the gRPC lists nothing gRPC is retried.
        assert_eq!(
            RetryOn::default()
                .classify(&grpc(200, GrpcStatus::Unavailable))
                .class,
            OutcomeClass::NonRetryable
        );
        let t: RetryOn = toml::from_str(r#"grpc_statuses = ["unavailable", "CANCELLED"]"#).unwrap();
        assert_eq!(
            t.grpc_statuses,
            vec![GrpcStatus::Unavailable, GrpcStatus::Cancelled]
        );
    }

    fn resp(status: u16, code: Option<&str>) -> AttemptOutcome<'_> {
        AttemptOutcome::Response(Response {
            status,
            error_code: code,
            ..Response::default()
        })
    }

    #[test]
    fn classifies_statuses_codes_and_transport() {
        let r = aws_like();
        assert_eq!(r.classify(&resp(200, None)).class, OutcomeClass::Success);
        assert_eq!(r.classify(&resp(304, None)).class, OutcomeClass::Success);
        assert_eq!(r.classify(&resp(503, None)).class, OutcomeClass::Transient);
        assert_eq!(r.classify(&resp(599, None)).class, OutcomeClass::Transient);
        assert_eq!(r.classify(&resp(429, None)).class, OutcomeClass::Throttling);
        assert_eq!(
            r.classify(&resp(503, Some("SlowDown"))).class,
            OutcomeClass::Throttling
        );
        assert_eq!(
            r.classify(&resp(400, Some("RequestTimeout"))).class,
            OutcomeClass::Transient
        );
        assert_eq!(
            r.classify(&resp(404, None)).class,
            OutcomeClass::NonRetryable
        );
        assert_eq!(
            r.classify(&resp(200, Some("SlowDown"))).class,
            OutcomeClass::Success
        );
        let t = r.classify(&AttemptOutcome::Transport(TransportError::ReadTimeout));
        assert_eq!(
            (t.class, t.timeout, t.never_sent),
            (OutcomeClass::Transient, true, false)
        );
        let c = r.classify(&AttemptOutcome::Transport(TransportError::ConnectRefused));
        assert!(c.never_sent && !c.timeout);
        let p = r.classify(&AttemptOutcome::Transport(TransportError::Protocol));
        assert_eq!(p.class, OutcomeClass::NonRetryable);
        // Never retried, whatever the config lists: the target did not fail.
        let everything = RetryOn {
            transport: vec![TransportError::LocalResource, TransportError::Reset],
            ..aws_like()
        };
        let l = everything.classify(&AttemptOutcome::Transport(TransportError::LocalResource));
        assert_eq!(
            (l.class, l.timeout, l.never_sent),
            (OutcomeClass::LocalResource, false, true)
        );
        assert!(!l.class.is_retryable());
        assert_eq!(
            attempt_label(
                &AttemptOutcome::Transport(TransportError::LocalResource),
                l.class
            )
            .as_str(),
            "local-resource"
        );
    }

    #[test]
    fn labels() {
        let label = |o: &AttemptOutcome<'_>, c| attempt_label(o, c).as_str();
        let t = AttemptOutcome::Transport(TransportError::PerTryTimeout);
        assert_eq!(label(&t, OutcomeClass::Transient), "timeout");
        assert_eq!(label(&t, OutcomeClass::NonRetryable), "timeout");
        let reset = AttemptOutcome::Transport(TransportError::Reset);
        assert_eq!(label(&reset, OutcomeClass::Transient), "transient");
        assert_eq!(label(&resp(200, None), OutcomeClass::Success), "ok");
        assert_eq!(
            label(&resp(429, None), OutcomeClass::Throttling),
            "throttle"
        );
        assert_eq!(
            label(&resp(404, None), OutcomeClass::NonRetryable),
            "client-error"
        );
        assert_eq!(REFUSED_LABEL, "refused");
        // Their own outcome whether or not the config retries them.
        for (t, name) in [
            (TransportError::TlsHandshake, "tls-handshake"),
            (TransportError::StreamReset, "stream-reset"),
            (TransportError::Goaway, "goaway"),
        ] {
            let o = AttemptOutcome::Transport(t);
            assert_eq!(label(&o, OutcomeClass::Transient), name);
            assert_eq!(label(&o, OutcomeClass::NonRetryable), name);
        }
        let tls = AttemptOutcome::Transport(TransportError::TlsHandshake);
        let c = RetryOn::default().classify(&tls);
        assert!(c.never_sent && c.class == OutcomeClass::NonRetryable);
        // HTTP/2's resets follow `reset`; a TLS failure only its own listing.
        let resets = RetryOn {
            transport: vec![TransportError::Reset],
            ..RetryOn::default()
        };
        for t in [TransportError::StreamReset, TransportError::Goaway] {
            let c = resets.classify(&AttemptOutcome::Transport(t));
            assert!(c.class == OutcomeClass::Transient && !c.never_sent);
            let c = RetryOn::default().classify(&AttemptOutcome::Transport(t));
            assert_eq!(c.class, OutcomeClass::NonRetryable);
        }
        assert_eq!(resets.classify(&tls).class, OutcomeClass::NonRetryable);
    }

    #[test]
    fn idempotent_methods() {
        for m in ["GET", "get", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"] {
            assert!(is_idempotent_method(m), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT", "FROB"] {
            assert!(!is_idempotent_method(m), "{m}");
        }
    }

    #[test]
    fn status_pattern_serde() {
        let r: RetryOn = toml::from_str("statuses = [503, \"5xx\"]").unwrap();
        assert_eq!(
            r.statuses,
            vec![StatusPattern::Exact(503), StatusPattern::Class(5)]
        );
        assert!(toml::from_str::<RetryOn>("statuses = [700]").is_err());
        assert!(toml::from_str::<RetryOn>("statuses = [\"6xx\"]").is_err());
        assert!(toml::from_str::<RetryOn>("statusez = [500]").is_err());
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"5xx\""), "{json}");
    }
}
