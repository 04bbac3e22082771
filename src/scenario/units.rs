//! Units as people write them in scenario files: durations with a unit ("250ms", "10s",
//! "1m"). A bare number is refused: "10" could mean seconds or milliseconds, and guessing
//! wrong by 1000× turns a rehearsal into nonsense.

/// `#[serde(with = "duration")]` for `Duration` fields written as "250ms", "10s", "1m 30s".
pub mod duration {
    use std::time::Duration;

    use serde::{de, Deserialize, Deserializer, Serializer};

    /// Parses "250ms", "10s", "1m"; refuses bare numbers and negative values.
    pub fn parse(text: &str) -> Result<Duration, String> {
        let t = text.trim();
        if t.starts_with('-') {
            return Err(format!("`{text}` is negative; durations must be ≥ 0"));
        }
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Err(format!(
                "`{text}` has no unit; write e.g. \"{t}s\" or \"{t}ms\""
            ));
        }
        humantime::parse_duration(t).map_err(|e| format!("`{text}` is not a duration ({e})"))
    }

    /// Formats as humantime does ("1s 500ms"), which `parse` reads back.
    pub fn format(d: Duration) -> String {
        humantime::format_duration(d).to_string()
    }

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map_err(de::Error::custom)
    }

    /// The same for `Option<Duration>` fields.
    pub mod option {
        use std::time::Duration;

        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            let text = Option::<String>::deserialize(d)?;
            text.map(|t| super::parse(&t).map_err(serde::de::Error::custom))
                .transpose()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn parses_units_and_refuses_bare_or_negative_numbers() {
            assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
            assert_eq!(parse("10s").unwrap(), Duration::from_secs(10));
            assert_eq!(parse("1m 30s").unwrap(), Duration::from_secs(90));
            assert!(parse("10").unwrap_err().contains("no unit"));
            assert!(parse("-5s").unwrap_err().contains("negative"));
            assert!(parse("ten seconds").is_err());
        }

        #[test]
        fn format_reads_back() {
            let d = Duration::from_millis(1500);
            assert_eq!(parse(&format(d)).unwrap(), d);
        }
    }
}
