//! Access logs of proxies in front of a service, each line one request at its *start*:
//!
//! - **Envoy's default format** (`format = "envoy"`), as Envoy's access-log docs give it
//!   (docs/root/configuration/observability/access_log/usage.rst, "Default format string";
//!   the same string since v1.5's configuration/access_log.rst):
//!   `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
//!   %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% …`, where
//!   `%START_TIME%` is the request's start with milliseconds, `2016-04-15T20:17:00.310Z`.
//! - **AWS Application Load Balancer** access log entries (`format = "aws-alb"`), space
//!   separated with quoted fields, in the order AWS documents ("Access log entries" of
//!   docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-access-logs.html):
//!   `type time elb client:port target:port request_processing_time target_processing_time
//!   response_processing_time elb_status_code target_status_code received_bytes sent_bytes
//!   "request" "user_agent" ssl_cipher ssl_protocol target_group_arn "trace_id"
//!   "domain_name" "chosen_cert_arn" matched_rule_priority request_creation_time …`.
//!   `time` is when the balancer answered; `request_creation_time` (field 22) when it
//!   received the request, which is the instant replayed. The request is
//!   `METHOD scheme://host:port/path PROTOCOL`; the path is replayed.
//!
//! Both write a line when the request ends, so their lines are not in start order: the
//! trace is sorted by start instant (see `nginx::parse`).

use super::line::{request_path, Line};
use super::{at, clock, RecordingError};

/// `[START_TIME] "METHOD PATH PROTOCOL" CODE FLAGS …`; the client is the first address of
/// `"%REQ(X-FORWARDED-FOR)%"`, the default format's only client field.
pub(super) fn envoy(n: usize, line: &str) -> Result<Line<'_>, RecordingError> {
    let rest = line.strip_prefix('[').ok_or_else(|| {
        at(
            n,
            "start_time",
            "no `[START_TIME]` opening the line; is this Envoy's default format?",
        )
    })?;
    let close = rest
        .find(']')
        .ok_or_else(|| at(n, "start_time", "the `[START_TIME]` is not closed"))?;
    let t = clock::rfc3339(&rest[..close]).map_err(|m| at(n, "start_time", m))?;
    let request = rest[close + 1..]
        .strip_prefix(" \"")
        .ok_or_else(|| at(n, "request", "no quoted request after the start time"))?;
    let end = request
        .find('"')
        .ok_or_else(|| at(n, "request", "the quoted request is not closed"))?;
    let path = request_path(n, &request[..end])?;
    let code = request[end + 1..].split_whitespace().next().unwrap_or("");
    if code.is_empty() || code.len() > 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(at(
            n,
            "response_code",
            format!("`{code}` is not a response code (0 when no response began)"),
        ));
    }
    let after: Vec<&str> = request[end + 1..].split('"').collect();
    let client = after
        .get(1)
        .and_then(|xff| xff.split(',').next())
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(Line {
        t,
        path,
        client,
        status: code.parse().unwrap_or(0),
        key: None,
    })
}

/// The space-separated fields of an ALB entry, a quoted field as one (without its quotes).
fn fields(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').unwrap_or(q.len());
            out.push(&q[..end]);
            rest = q.get(end + 1..).unwrap_or("").trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = rest[end..].trim_start();
        }
    }
    out
}

/// An ALB entry: the request at its `request_creation_time`; the client is the address of
/// `client:port` (each connection has its own port).
pub(super) fn alb(n: usize, line: &str) -> Result<Line<'_>, RecordingError> {
    let f = fields(line);
    if f.len() < 22 {
        return Err(at(
            n,
            "entry",
            format!(
                "has {} fields; an ALB entry has at least 22, up to request_creation_time",
                f.len()
            ),
        ));
    }
    if !f[8].bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return Err(at(
            n,
            "elb_status_code",
            format!("`{}` is not a status", f[8]),
        ));
    }
    let t = clock::rfc3339(f[21]).map_err(|m| at(n, "request_creation_time", m))?;
    let request = f[12];
    let mut parts = request.split(' ');
    let url = match (parts.next(), parts.next()) {
        (Some(m), Some(u)) if !m.is_empty() && m != "-" => u,
        _ => {
            return Err(at(
                n,
                "request",
                format!("`{request}` is not a request such as `GET http://host:80/path HTTP/1.1`"),
            ))
        }
    };
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .ok_or_else(|| at(n, "request", format!("`{url}` is not a URL with a path")))?;
    let client = f[3].rsplit_once(':').map_or(f[3], |(ip, _)| ip).to_string();
    Ok(Line {
        t,
        path,
        client,
        status: f[8].parse().unwrap_or(0),
        key: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;

    #[test]
    fn envoy_default_lines_give_their_start_and_path() {
        // The example line of Envoy's docs (v1.11 access_log.rst).
        let line = "[2016-04-15T20:17:00.310Z] \"POST /api/v1/locations HTTP/2\" 204 - 154 0 \
                    226 100 \"10.0.35.28\" \"nsq2http\" \"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2\" \
                    \"locations\" \"tcp://10.0.2.1:80\"";
        let s = envoy(1, line).unwrap();
        assert_eq!(s.path, "/api/v1/locations");
        assert_eq!(s.t, 1_460_751_420 * 1_000 * MS + 310 * MS);
        let e = envoy(3, "2016-04-15 \"GET / HTTP/1.1\" 200").err().unwrap();
        assert_eq!(e.line(), 3);
        assert!(e.to_string().starts_with("start_time:"), "{e}");
        let e = envoy(1, "[2016-04-15T20:17:00.310Z] \"GET / HTTP/1.1\" abc")
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("response_code:"), "{e}");
    }

    #[test]
    fn alb_entries_give_their_creation_time_and_path() {
        // The shape of AWS's example HTTP entry.
        let line = "http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 \
                    192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 \
                    \"GET http://www.example.com:80/orders?id=7 HTTP/1.1\" \"curl/7.46.0\" - - \
                    arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 \
                    \"Root=1-58337262-36d228ad5d99923122bbe354\" \"-\" \"-\" 0 \
                    2018-07-02T22:22:48.364000Z \"forward\" \"-\" \"-\" \"10.0.0.1:80\" \"200\" \"-\" \"-\"";
        let s = alb(1, line).unwrap();
        assert_eq!(s.path, "/orders?id=7");
        assert_eq!(s.t, 1_530_570_168 * 1_000 * MS + 364 * MS);
        let e = alb(2, "http 2018-07-02T22:23:00.186641Z x").err().unwrap();
        assert!(e.to_string().starts_with("entry: has 3 fields"), "{e}");
        let bad_time = line.replace("2018-07-02T22:22:48.364000Z", "yesterday");
        let e = alb(1, &bad_time).err().unwrap();
        assert!(e.to_string().starts_with("request_creation_time:"), "{e}");
    }
}
