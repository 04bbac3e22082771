//! HDR histograms as text: HdrHistogram's standard V2 serialization, base64-encoded. Every
//! HdrHistogram implementation (Java, Go, Python, Rust) reads the V2 form, and the counts
//! come back exactly, so histograms written by several load machines add up to the very
//! histogram one machine would have recorded. For `#[serde(with = "histogram_v2")]`.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// `h` as base64 of its V2 bytes.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut bytes)
        .expect("writing to memory cannot fail");
    B64.encode(bytes)
}

/// The histogram [`encode`] wrote.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = B64
        .decode(text)
        .map_err(|e| format!("histogram: not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram: not an HdrHistogram V2 serialization: {e:?}"))
}

pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&encode(h))
}

pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    decode(&text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly() {
        let mut h = crate::metrics::recorder::new_histogram(3);
        for v in [1u64, 7, 999, 12_345, 3_600_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
        assert!(decode("not base64!").is_err());
    }
}
