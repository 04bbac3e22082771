//! Human duration strings (`"250ms"`, `"10s"`, `"1m"`, `"1.5s"`) and their serde helpers.
//!
//! Config files are edited by people, so a bare number is refused: `timeout = 10` could mean
//! seconds or milliseconds and that ambiguity has caused real outages. Negative values are
//! refused too, with a message that says so rather than a generic parse error.
//!
//! Accepted units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`. The number may have a decimal
//! part. Durations are serialized back in the largest unit that represents them exactly.

use super::error::PolicyError;
use std::time::Duration;

/// The longest duration this crate will represent (one year). Larger values saturate: they are
/// far beyond any retry delay and would otherwise overflow `Duration` arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parse a duration such as `"250ms"`, `"10s"`, `"1m"`, `"1.5s"`.
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
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    if num.is_empty() {
        return Err(err("missing number; write e.g. \"250ms\" or \"10s\""));
    }
    if unit.is_empty() {
        return Err(err(
            "missing unit; write e.g. \"10s\" or \"250ms\" (units: ns, us, ms, s, m, h)",
        ));
    }
    let value: f64 = num.parse().map_err(|_| err("the number does not parse"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err("unknown unit; use ns, us, ms, s, m or h")),
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > MAX_DURATION.as_secs_f64() {
        return Err(err("too large (the limit is one year)"));
    }
    // Integer inputs are converted exactly to avoid float rounding (e.g. "250ms").
    if !num.contains('.') {
        if let Ok(n) = num.parse::<u64>() {
            return Ok(match unit {
                "ns" => Duration::from_nanos(n),
                "us" | "µs" => Duration::from_micros(n),
                "ms" => Duration::from_millis(n),
                "s" => Duration::from_secs(n),
                "m" | "min" => Duration::from_secs(n * 60),
                _ => Duration::from_secs(n * 3600),
            });
        }
    }
    Ok(Duration::from_secs_f64(secs))
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
    }

    #[test]
    fn refuses_negative_unitless_and_garbage() {
        for bad in ["-1s", "10", "", "s", "10 parsecs", "1.2.3s", "99999999h"] {
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
