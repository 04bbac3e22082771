//! Checks of `[target]`: where the traffic goes (a builtin or a url, and whether a remote
//! host was allowed), the built-in service model, and the wire (HTTP version, TLS, trust).

use std::path::Path;

use super::refuse::{refuse, unknown_kind, Checked, Refusal};
use super::{check_count, check_dist, check_name};
use crate::scenario::host::Host;
use crate::scenario::limits;
use crate::scenario::model::*;
use crate::scenario::wire::{Protocol, Trust, Wire};

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
    if let Some(d) = &s.discipline {
        d.resolve()
            .or_else(|m| refuse(format!("{prefix}.discipline"), m))?;
    }
    if let Some(n) = s.max_in_flight {
        if n == 0 {
            return refuse(
                format!("{prefix}.max_in_flight"),
                "0 is outside [1, 10000000]; with no request allowed in, nothing is served",
            );
        }
        check_count(
            &format!("{prefix}.max_in_flight"),
            "requests",
            n.into(),
            limits::MAX_SLOTS.into(),
        )?;
    }
    if let Some(r) = &s.rate_limit {
        r.resolve()
            .or_else(|(field, m)| refuse(format!("{prefix}.rate_limit.{field}"), m))?;
    }
    if let Some(a) = &s.adaptive_concurrency {
        a.resolve()
            .or_else(|(field, m)| refuse(format!("{prefix}.adaptive_concurrency.{field}"), m))?;
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
        /// How long the proxy waits for the service's complete answer (`None`: 30 s).
        upstream_timeout: Option<std::time::Duration>,
    },
}

/// The longest `upstream_timeout` a scenario may set: past it a hung service would hold
/// the run's end long after its drain.
const MAX_UPSTREAM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

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
            if let Some(t) = t.upstream_timeout {
                if t.is_zero() || t > MAX_UPSTREAM_TIMEOUT {
                    return refuse(
                        "target.upstream_timeout",
                        format!("{t:?} is outside (0s, 600s]"),
                    );
                }
            }
            let (host, port) = parse_url(url).map_err(|m| Refusal {
                field: "target.url".into(),
                message: m,
            })?;
            if !crate::scenario::host::allowed(&host, t.allow_remote.as_deref()) {
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
                upstream_timeout: t.upstream_timeout,
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
            if t.upstream_timeout.is_some() {
                return refuse(
                    "target.upstream_timeout",
                    "applies to `url` targets only (the proxy's wait for the real server)",
                );
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
    // A FIFO would block `check` in open() and /dev/zero would fill memory: the bounded
    // reader refuses both before reading.
    let bytes = crate::input::read(path, crate::input::Kind::Certificates)
        .map_err(|e| format!("`{shown}`: {}", e.reason()))?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
