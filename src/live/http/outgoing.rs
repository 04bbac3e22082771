//! One attempt's request as the driver hands it to the client: the request template's own
//! parts by reference, and stormrig's few headers of this attempt as plain fields.
//!
//! A plain HTTP/1.1 attempt writes its head straight from these into the connection's
//! buffer, numbers formatted in place. Assembling a `HeaderMap` per attempt first (clones of
//! the template's headers, a hashed insert and an allocated value per number, then a drop)
//! cost about a tenth of the generator's instructions per request. hyper's paths (TLS,
//! HTTP/2) still get a `Request` built from it ([`Outgoing::to_request`]).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, HOST};
use hyper::{Method, Request, Uri};

use crate::headers::{COMPLETION_TOKENS as H_COMPLETION_TOKENS, PROMPT_TOKENS as H_PROMPT_TOKENS};
use crate::headers::{H_ATTEMPT, H_CONFIG, H_DEADLINE_MS, H_IDEMPOTENCY_KEY, H_REQUEST, H_RUN};

const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
const PROMPT_TOKENS: HeaderName = HeaderName::from_static(H_PROMPT_TOKENS);
const COMPLETION_TOKENS: HeaderName = HeaderName::from_static(H_COMPLETION_TOKENS);

/// One attempt's request.
#[derive(Debug)]
pub struct Outgoing<'a> {
    pub method: &'a Method,
    /// Origin-form over HTTP/1.1, absolute over HTTP/2 (its `:scheme` and `:authority`).
    pub uri: Uri,
    /// The template's headers, laid down first.
    pub headers: &'a HeaderMap,
    /// `Host`, sent unless `headers` carries one.
    pub host: &'a HeaderValue,
    pub stamp: Stamp<'a>,
    pub body: &'a Bytes,
}

/// stormrig's own headers on one attempt. Each one set replaces a template header of its
/// name, as an insert into the template's map would.
#[derive(Debug, Default)]
pub struct Stamp<'a> {
    pub request: u64,
    pub attempt: u32,
    /// `x-stormrig-config` and `x-stormrig-run`.
    pub trace: Option<(&'a HeaderValue, &'a HeaderValue)>,
    pub deadline_ms: Option<u64>,
    pub grpc_timeout: Option<HeaderValue>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub idempotency_key: Option<HeaderValue>,
}

/// A stamped header's value: a number is formatted where it is written.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Number(u64),
    Text(&'a HeaderValue),
}

impl Stamp<'_> {
    /// Every header set, in the order they go on the wire.
    pub fn each(&self, mut f: impl FnMut(&HeaderName, Value<'_>)) {
        f(&H_REQUEST, Value::Number(self.request));
        f(&H_ATTEMPT, Value::Number(u64::from(self.attempt)));
        if let Some((config, run)) = self.trace {
            f(&H_CONFIG, Value::Text(config));
            f(&H_RUN, Value::Text(run));
        }
        if let Some(ms) = self.deadline_ms {
            f(&H_DEADLINE_MS, Value::Number(ms));
        }
        if let Some(t) = &self.grpc_timeout {
            f(&GRPC_TIMEOUT, Value::Text(t));
        }
        if let Some(n) = self.prompt_tokens {
            f(&PROMPT_TOKENS, Value::Number(n));
        }
        if let Some(n) = self.completion_tokens {
            f(&COMPLETION_TOKENS, Value::Number(n));
        }
        if let Some(k) = &self.idempotency_key {
            f(&H_IDEMPOTENCY_KEY, Value::Text(k));
        }
    }

    /// True when the stamp sets `name` (the template's header of that name is not sent).
    pub fn sets(&self, name: &HeaderName) -> bool {
        let mut set = false;
        self.each(|n, _| set |= n == name);
        set
    }
}

impl Outgoing<'_> {
    /// Every header of the request, in wire order: the template's (less those the stamp
    /// replaces), `Host` unless the template has one, then the stamp's.
    pub fn each_header(&self, mut f: impl FnMut(&HeaderName, Value<'_>)) {
        let mut has_host = false;
        for (name, value) in self.headers {
            has_host |= name == HOST;
            if !self.stamp.sets(name) {
                f(name, Value::Text(value));
            }
        }
        if !has_host {
            f(&HOST, Value::Text(self.host));
        }
        self.stamp.each(f);
    }

    /// The request as hyper sends it.
    pub fn to_request(&self) -> Request<Full<Bytes>> {
        let mut h = HeaderMap::with_capacity(self.headers.len() + 8);
        self.each_header(|name, value| {
            let value = match value {
                Value::Number(n) => HeaderValue::from(n),
                Value::Text(v) => v.clone(),
            };
            h.append(name.clone(), value);
        });
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = h;
        req
    }
}

/// A GET of `uri` to `127.0.0.1` with nothing but what every attempt carries, for tests.
#[cfg(test)]
pub(super) fn plain_get(uri: &'static str) -> Outgoing<'static> {
    static NO_HEADERS: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(HeaderMap::new);
    static NO_BODY: Bytes = Bytes::new();
    static LOCALHOST: HeaderValue = HeaderValue::from_static("127.0.0.1");
    Outgoing {
        method: &Method::GET,
        uri: Uri::from_static(uri),
        headers: &NO_HEADERS,
        host: &LOCALHOST,
        stamp: Stamp::default(),
        body: &NO_BODY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_replaces_template_headers_of_its_names_and_host_is_added_once() {
        let mut template = HeaderMap::new();
        template.append("x-a", HeaderValue::from_static("1"));
        template.append("x-stormrig-attempt", HeaderValue::from_static("stale"));
        template.append("idempotency-key", HeaderValue::from_static("kept"));
        let host = HeaderValue::from_static("h:1");
        let req = Outgoing {
            method: &Method::GET,
            uri: Uri::from_static("/p"),
            headers: &template,
            host: &host,
            stamp: Stamp {
                request: 7,
                attempt: 2,
                deadline_ms: Some(250),
                ..Stamp::default()
            },
            body: &Bytes::new(),
        };
        let r = req.to_request();
        let h: Vec<_> = r
            .headers()
            .iter()
            .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap()))
            .collect();
        assert_eq!(
            h,
            [
                "x-a: 1",
                "idempotency-key: kept",
                "host: h:1",
                "x-stormrig-request: 7",
                "x-stormrig-attempt: 2",
                "x-stormrig-deadline-ms: 250",
            ]
        );
        let mut with_host = template.clone();
        with_host.append("host", HeaderValue::from_static("mine"));
        let req = Outgoing {
            headers: &with_host,
            ..req
        };
        assert_eq!(req.to_request().headers().get_all("host").iter().count(), 1);
        assert_eq!(req.to_request().headers()["host"], "mine");
    }
}
