//! Units as people write them in scenario files. Durations follow the one grammar of
//! [`crate::policy::duration`] ("250ms", "10s", "1m 30s"): a bare number is refused, since
//! "10" could mean seconds or milliseconds and guessing wrong by 1000× turns a rehearsal
//! into nonsense.

/// `#[serde(with = "duration")]` for `Duration` fields of scenario and target files.
pub mod duration {
    use std::time::Duration;

    pub use crate::policy::duration::option;
    pub use crate::policy::duration::serde::{deserialize, serialize};

    /// Parses a duration of the one grammar; the message names the value and what is wrong.
    pub fn parse(text: &str) -> Result<Duration, String> {
        crate::policy::duration::parse_duration(text).map_err(|e| e.to_string())
    }

    /// Formats in the largest unit that is exact ("1500ms", "90s"), which `parse` reads back.
    pub fn format(d: Duration) -> String {
        crate::policy::duration::format_duration(d)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn one_grammar_for_every_scenario_duration() {
            assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
            assert_eq!(parse("1m 30s").unwrap(), Duration::from_secs(90));
            assert!(parse("10").unwrap_err().contains("unit"));
            assert!(parse("-5s").unwrap_err().contains("negative"));
            assert!(parse("ten seconds").is_err());
            let d = Duration::from_millis(1500);
            assert_eq!(parse(&format(d)).unwrap(), d);
        }
    }
}
