//! `[load] grpc = { service, method, message }`: the load speaks gRPC unary calls.
//!
//! stormrig counts and retries calls; it need not know the schema, so the message is fixed
//! bytes sent as they are written (an already encoded protobuf, or nothing). What makes a
//! call a gRPC call is on the wire: `POST /service/method` over HTTP/2 with
//! `content-type: application/grpc`, the message length-prefixed, the outcome in the
//! `grpc-status` trailer. HTTP/1.1 cannot carry those trailers, hence the protocol check.

use serde::{Deserialize, Serialize};

use super::validate::refuse::{refuse, Checked, Refusal};
use super::Protocol;

/// The `grpc` table of `[load]`, as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcSection {
    /// Fully qualified service name, e.g. `helloworld.Greeter`.
    pub service: String,
    /// Method name, e.g. `SayHello`.
    pub method: String,
    /// The request message's bytes, sent unchanged (UTF-8 of the string); empty by default.
    #[serde(default)]
    pub message: String,
}

/// A validated gRPC unary call.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GrpcCall {
    pub service: String,
    pub method: String,
    pub message: String,
}

impl GrpcCall {
    /// The request path, `/service/method`.
    pub fn path(&self) -> String {
        format!("/{}/{}", self.service, self.method)
    }
}

/// The longest service or method name accepted.
const MAX_NAME_LEN: usize = 256;
/// The largest fixed message accepted (it is sent with every attempt).
const MAX_MESSAGE_LEN: usize = 64 * 1024;

/// Checks the `grpc` table of `[load]`; `method`, `path` and `body` are the load's own
/// (the call sets them, so they must be left at their defaults).
pub fn check(g: &GrpcSection, method: &str, path: &str, body: Option<&str>) -> Checked<GrpcCall> {
    for (field, value) in [("service", &g.service), ("method", &g.method)] {
        let ok = !value.is_empty()
            && value.len() <= MAX_NAME_LEN
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            return refuse(
                format!("load.grpc.{field}"),
                format!(
                    "{value:?} is not a gRPC name: 1 to {MAX_NAME_LEN} of letters, digits, `.`, `_`, `-`"
                ),
            );
        }
    }
    if g.message.len() > MAX_MESSAGE_LEN {
        return refuse(
            "load.grpc.message",
            format!(
                "is {} bytes long, above the limit of {MAX_MESSAGE_LEN}",
                g.message.len()
            ),
        );
    }
    for (field, set) in [
        (
            "load.method",
            !method.eq_ignore_ascii_case("GET") && method != "POST",
        ),
        ("load.path", path != "/"),
        ("load.body", body.is_some()),
    ] {
        if set {
            return refuse(
                field,
                "a gRPC load sets it (POST /service/method, the message as body): leave it out",
            );
        }
    }
    Ok(GrpcCall {
        service: g.service.clone(),
        method: g.method.clone(),
        message: g.message.clone(),
    })
}

/// gRPC runs over HTTP/2 only.
pub fn check_protocol(protocol: Protocol) -> Result<(), Refusal> {
    if protocol.is_h2() {
        return Ok(());
    }
    refuse(
        "load.grpc",
        "gRPC needs HTTP/2 (its status travels in trailers, which HTTP/1.1 clients and proxies \
         drop): set [target] protocol = \"h2c\", or \"h2\" with TLS",
    )
}
