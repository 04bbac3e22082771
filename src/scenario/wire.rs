//! How the traffic travels to the target: HTTP/1.1 or HTTP/2, in clear or over TLS, and
//! which certificates the generator (or the counting proxy's upstream side) trusts.
//!
//! Validated once here so that the engines meet only combinations that exist: HTTP/2 over
//! TLS (`h2`) always has TLS, cleartext HTTP/2 (`h2c`) never has, and skipping certificate
//! checks is possible only when the scenario names it.

use std::path::PathBuf;

use serde::Serialize;

/// The HTTP version spoken to the target.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// HTTP/1.1, in clear or over TLS (ALPN `http/1.1`).
    #[default]
    Http1,
    /// HTTP/2 over TLS (ALPN `h2`).
    H2,
    /// HTTP/2 in clear, with prior knowledge (no upgrade dance).
    H2c,
}

impl Protocol {
    /// The names a scenario may write.
    pub const NAMES: &'static [&'static str] = &["http1", "h2", "h2c"];

    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "http1" => Some(Protocol::Http1),
            "h2" => Some(Protocol::H2),
            "h2c" => Some(Protocol::H2c),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
        }
    }

    /// True for both HTTP/2 forms.
    pub fn is_h2(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c)
    }
}

/// Whose certificate the client side trusts.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "trust", rename_all = "kebab-case")]
pub enum Trust {
    /// The system's roots, plus the certificates of `ca_file` when given.
    Verify {
        /// The PEM file named by `ca_file`, resolved against the scenario's folder.
        ca_file: Option<PathBuf>,
        /// Its certificates (DER), read and checked when the scenario was loaded.
        #[serde(skip)]
        extra_roots: Vec<Vec<u8>>,
    },
    /// `insecure_skip_verify = true`: any certificate is accepted. Reported loudly at
    /// every run and check, since a storm rehearsal against the wrong host is worse than none.
    SkipVerify,
    /// The built-in target's certificate, generated when the target starts and trusted
    /// by exactly the generator of that run.
    BuiltinSelfSigned,
}

/// TLS and HTTP version towards the target.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Wire {
    pub protocol: Protocol,
    /// `None`: cleartext.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<Trust>,
}

impl Wire {
    /// Plain HTTP/1.1, what every scenario without protocol fields speaks.
    pub fn is_default(&self) -> bool {
        *self == Wire::default()
    }

    /// True when certificates go unchecked.
    pub fn skips_verify(&self) -> bool {
        matches!(self.tls, Some(Trust::SkipVerify))
    }

    /// The URI scheme of the target.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}
