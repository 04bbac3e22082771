//! Ways to spoil a text input for the fuzz properties: a byte flipped, the text cut, a
//! number made extreme, a line deleted. Shared by the scenario loader's, the control API's
//! and the shard reader's properties, so each hostile input is tried the same ways.

use proptest::prelude::*;

/// One way to spoil a text.
#[derive(Debug, Clone)]
pub enum Mutation {
    FlipByte { at: usize, byte: u8 },
    Truncate { at: usize },
    Extreme { nth: usize, value: &'static str },
    DeleteLine { nth: usize },
}

/// Values a number is replaced by: bounds of every integer width, floats at and past
/// their limits, durations too long to hold, and things that are not numbers at all.
pub const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "-0.0",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "9223372036854775807",
    "99999999999999999999999",
    "\"99999999h\"",
    "\"18446744073709551616s\"",
    "\"1e3s\"",
    "\"\"",
    "[]",
    "{}",
];

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::FlipByte { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), proptest::sample::select(EXTREMES))
            .prop_map(|(nth, value)| Mutation::Extreme { nth, value }),
        any::<usize>().prop_map(|nth| Mutation::DeleteLine { nth }),
    ]
}

/// `text` spoilt by `m`.
pub fn apply(text: &str, m: &Mutation) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    match m {
        Mutation::FlipByte { at, byte } => {
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] = *byte;
            }
            bytes
        }
        Mutation::Truncate { at } => {
            bytes.truncate(at % (bytes.len() + 1));
            bytes
        }
        Mutation::Extreme { nth, value } => {
            // The nth number (a run of digits, with its decimal point) becomes `value`.
            let mut spans = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i].is_ascii_digit() {
                    let s = i;
                    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                        i += 1;
                    }
                    spans.push((s, i));
                } else {
                    i += 1;
                }
            }
            if let Some(&(s, e)) = spans.get(nth % spans.len().max(1)) {
                bytes.splice(s..e, value.bytes());
            }
            bytes
        }
        Mutation::DeleteLine { nth } => {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return bytes;
            }
            let k = nth % lines.len();
            lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != k)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        }
    }
}
