//! Which hosts a storm may be sent to without asking: the loopback guard.
//!
//! Only literal loopback addresses (127.0.0.0/8, `::1`, IPv4-mapped loopback) and the exact
//! name `localhost` are loopback. Names are never resolved: `evil.localhost` is a name like
//! any other (a resolver may send it anywhere), so it is remote. Numeric IPv4 forms that
//! resolvers accept (`0x7f000001`, `017700000001`, `2130706433`, `127.1`) are read as the
//! address they stand for before the check, here and in `allow_remote` alike, so the guard
//! judges the address a connection would really go to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A host as written in a URL, read as the resolver would read it (without DNS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// An address, in any of its numeric forms.
    Ip(IpAddr),
    /// A name, lower-cased, without a trailing dot.
    Name(String),
}

impl Host {
    /// Reads `host` (IPv6 may carry brackets).
    pub fn parse(host: &str) -> Host {
        let h = host.trim();
        if let Some(v6) = h.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if let Ok(ip) = v6.parse::<Ipv6Addr>() {
                return Host::Ip(IpAddr::V6(ip));
            }
        }
        if let Ok(ip) = h.parse::<IpAddr>() {
            return Host::Ip(ip);
        }
        if let Some(v4) = numeric_ipv4(h) {
            return Host::Ip(IpAddr::V4(v4));
        }
        let name = h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase();
        Host::Name(name)
    }

    /// True for loopback addresses and the exact name `localhost`.
    pub fn is_loopback(&self) -> bool {
        match self {
            Host::Ip(IpAddr::V4(v4)) => v4.is_loopback(),
            Host::Ip(IpAddr::V6(v6)) => {
                v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
            Host::Name(n) => n == "localhost",
        }
    }

    /// The address to connect to without a resolver: the IP, or 127.0.0.1 for `localhost`;
    /// `None` for other names.
    pub fn literal(&self) -> Option<IpAddr> {
        match self {
            Host::Ip(ip) => Some(*ip),
            Host::Name(n) if n == "localhost" => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Host::Name(_) => None,
        }
    }

    /// The canonical text: dotted or RFC 5952 address, or the lower-case name.
    pub fn canonical(&self) -> String {
        match self {
            Host::Ip(ip) => ip.to_string(),
            Host::Name(n) => n.clone(),
        }
    }
}

/// Whether a storm may go to `host`: loopback, or the host `allow_remote` names (both read
/// as addresses first, so `0x0a000001` and `10.0.0.1` are the same host).
pub fn allowed(host: &str, allow_remote: Option<&str>) -> bool {
    let h = Host::parse(host);
    h.is_loopback() || allow_remote.is_some_and(|a| Host::parse(a) == h)
}

/// The inet_aton forms of an IPv4 address: 1 to 4 parts, each decimal, `0x` hex or
/// `0`-prefixed octal; the last part fills the remaining bytes.
fn numeric_ipv4(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut vals = Vec::with_capacity(parts.len());
    for p in &parts {
        vals.push(number(p)?);
    }
    let (last, init) = vals.split_last()?;
    if init.iter().any(|&v| v > 255) {
        return None;
    }
    let room = 8 * (4 - init.len() as u32);
    if room < 32 && *last >= 1u64 << room {
        return None;
    }
    if *last > u64::from(u32::MAX) {
        return None;
    }
    let mut n: u64 = 0;
    for (i, v) in init.iter().enumerate() {
        n |= v << (24 - 8 * i as u32);
    }
    n |= last;
    Some(Ipv4Addr::from(n as u32))
}

fn number(p: &str) -> Option<u64> {
    if p.is_empty() || p.len() > 34 {
        return None;
    }
    let lower = p.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        if hex.is_empty() {
            return Some(0);
        }
        return u64::from_str_radix(hex, 16).ok();
    }
    if lower.len() > 1 && lower.starts_with('0') {
        return u64::from_str_radix(&lower[1..], 8).ok();
    }
    lower.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_forms_are_read_as_their_address() {
        for h in [
            "0x7f000001",
            "017700000001",
            "2130706433",
            "127.1",
            "127.0.0.1",
            "0x7f.1",
        ] {
            assert_eq!(
                Host::parse(h),
                Host::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
                "{h}"
            );
            assert!(allowed(h, None), "{h}");
        }
        assert_eq!(
            Host::parse("0x0a000001"),
            Host::Ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)))
        );
    }

    #[test]
    fn only_the_exact_name_localhost_is_loopback() {
        assert!(allowed("localhost", None));
        assert!(allowed("LOCALHOST", None));
        assert!(allowed("[::1]", None));
        assert!(allowed("::ffff:127.0.0.1", None));
        for h in [
            "evil.localhost",
            "localhost.evil",
            "example.com",
            "10.0.0.1",
            "0x0a000001",
        ] {
            assert!(!allowed(h, None), "{h}");
        }
        assert_eq!(Host::parse("evil.localhost").literal(), None);
    }

    #[test]
    fn allow_remote_is_normalised_too() {
        assert!(allowed("10.0.0.1", Some("0x0a000001")));
        assert!(allowed("0x0a000001", Some("10.0.0.1")));
        assert!(!allowed("10.0.0.2", Some("0x0a000001")));
        assert!(allowed("Example.COM", Some("example.com")));
        assert!(!allowed("example.com", Some("example.org")));
    }
}
