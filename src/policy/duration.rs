//! Human duration strings, the one grammar of every duration in a scenario, a retry config,
//! a target file and the command line.
//!
//! Config files are edited by people, so a bare number is refused: `timeout = 10` could mean
//! seconds or milliseconds and that ambiguity has caused real outages. Negative values are
//! refused too, with a message that says so rather than a generic parse error.
//!
//! Grammar: one or more terms `NUMBER UNIT`, optionally separated by spaces (`"250ms"`,
//! `"1.5s"`, `"1m 30s"`, `"1h30m"`). NUMBER is decimal digits with an optional fractional
//! part; UNIT is `ns`, `us` (or `µs`), `ms`, `s`, `m` (or `min`), `h`. Terms add up. The total
//! is at most [`MAX_DURATION`]. Durations are serialized back in the largest unit that
//! represents them exactly.

use super::error::PolicyError;
use std::time::Duration;

/// The longest duration this crate will represent (one year). Larger values saturate: they are
/// far beyond any retry delay and would otherwise overflow `Duration` arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// The units of the grammar, with their length in nanoseconds.
const UNITS: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parse a duration such as `"250ms"`, `"10s"`, `"1m 30s"`, `"1.5s"` (see the module docs).
pub fn parse_duration(text: &str) -> Result<Duration, PolicyError> {
    let err = |reason: &str| PolicyError::InvalidDuration {
        value: text.to_string(),
        reason: reason.to_string(),
    };
    let s = text.trim();
    if s.is_empty() {
        return Err(err("empty; write e.g. \"250ms\" or \"10s\""));
    }
    if s.starts_with('-') {
        return Err(err("negative durations are not allowed"));
    }
    let max_ns = MAX_DURATION.as_nanos();
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(split);
        if num.is_empty() {
            return Err(err(
                "expected a number before each unit; write e.g. \"250ms\" or \"1m 30s\"",
            ));
        }
        let after = after.trim_start();
        let ulen = after
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(ulen);
        if unit.is_empty() {
            return Err(err(
                "no unit; write e.g. \"10s\" or \"250ms\" (units: ns, us, ms, s, m, h)",
            ));
        }
        let Some(&(_, scale)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(err("unknown unit; use ns, us, ms, s, m or h"));
        };
        total = total
            .saturating_add(term_ns(num, scale).ok_or_else(|| err("the number does not parse"))?);
        if total > max_ns {
            return Err(err("too large (the limit is one year)"));
        }
        rest = after.trim_start();
    }
    // Below one year, so the nanoseconds fit a u64.
    Ok(Duration::from_nanos(total as u64))
}

/// `num` (digits with an optional fraction) times `scale` nanoseconds, exactly for integer
/// inputs (so `"250ms"` is 250 000 000 ns, not a float's neighbour). `None` if it does not
/// parse; saturates on overflow (the caller refuses the total).
fn term_ns(num: &str, scale: u128) -> Option<u128> {
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return None;
    }
    let whole: u128 = if int.is_empty() {
        0
    } else if int.len() > 30 {
        u128::MAX
    } else {
        int.parse().ok()?
    };
    let mut ns = whole.saturating_mul(scale);
    // The fraction, to the nanosecond (digits beyond a nanosecond are dropped).
    let mut place = scale;
    for d in frac.bytes() {
        place /= 10;
        if place == 0 {
            break;
        }
        ns = ns.saturating_add(u128::from(d - b'0') * place);
    }
    Some(ns)
}

/// Format a duration in the largest unit that represents it exactly (`"250ms"`, `"10s"`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0s".to_string()
    } else if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1_000 == 0 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// Convert seconds to a `Duration`, saturating at 0 and [`MAX_DURATION`] (never panics, NaN → 0).
pub fn secs_f64(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else if secs >= MAX_DURATION.as_secs_f64() {
        MAX_DURATION
    } else {
        Duration::from_secs_f64(secs)
    }
}

/// `#[serde(with = "duration::serde")]` for `Duration` fields.
pub mod serde {
    use std::time::Duration;

    /// Serialize as a human string such as `"250ms"`.
    pub fn serialize<S: ::serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    /// Deserialize from a human string such as `"250ms"`.
    pub fn deserialize<'de, D: ::serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s: String = ::serde::Deserialize::deserialize(d)?;
        super::parse_duration(&s).map_err(::serde::de::Error::custom)
    }
}

/// `#[serde(with = "duration::option", default)]` for `Option<Duration>` fields.
pub mod option {
    use std::time::Duration;

    /// Serialize `Some` as a human string, `None` as none.
    pub fn serialize<S: ::serde::Serializer>(
        d: &Option<Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&super::format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    /// Deserialize an optional human duration string.
    pub fn deserialize<'de, D: ::serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let s: Option<String> = ::serde::Deserialize::deserialize(d)?;
        s.map(|s| super::parse_duration(&s).map_err(::serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("1m 30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(
            parse_duration("37.5 s").unwrap(),
            Duration::from_millis(37_500)
        );
        assert_eq!(parse_duration("1min").unwrap(), Duration::from_secs(60));
        assert_eq!(
            parse_duration("0.25ms").unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(
            parse_duration("1s 500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            parse_duration("365 h").unwrap(),
            Duration::from_secs(365 * 3600)
        );
    }

    #[test]
    fn refuses_negative_unitless_and_garbage() {
        for bad in [
            "-1s",
            "10",
            "",
            "s",
            "10 parsecs",
            "1.2.3s",
            "99999999h",
            "1m 30",
            "5s -1s",
            "1e3s",
            "+5s",
            ".s",
            "1m 30s 8761h",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(
                matches!(e, PolicyError::InvalidDuration { .. }),
                "{bad}: {e}"
            );
        }
        assert!(parse_duration("-1s")
            .unwrap_err()
            .to_string()
            .contains("negative"));
        assert!(parse_duration("10")
            .unwrap_err()
            .to_string()
            .contains("unit"));
    }

    #[test]
    fn formats_round_trip() {
        for s in ["250ms", "10s", "0s", "15us", "7ns"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
        assert_eq!(format_duration(Duration::from_secs(60)), "60s");
    }

    #[test]
    fn secs_f64_saturates() {
        assert_eq!(secs_f64(-1.0), Duration::ZERO);
        assert_eq!(secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(secs_f64(1e300), MAX_DURATION);
        assert_eq!(secs_f64(0.25), Duration::from_millis(250));
    }
}
