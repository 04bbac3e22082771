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

/// The cookie of the (uncompressed) V2 form [`encode`] writes, and the size of its header
/// before the counts: cookie, payload length, normalizing offset, significant digits,
/// lowest and highest trackable value, integer-to-double ratio.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_HEADER: usize = 40;

/// The histogram [`encode`] wrote. The text comes from a file another machine wrote, so the
/// header is checked before anything is allocated from it: the V2 reader allocates the
/// payload length the header declares (2^31 declared in a few bytes took 2.1 GB), and a
/// counts array as wide as the declared value range and precision. So the declared payload
/// must be the bytes actually present, and the range and precision those of a stormrig
/// latency histogram (1 µs to 1 h, 2 or 3 significant digits), which also keeps every
/// histogram addable to the others. The compressed V2 form, which stormrig never writes and
/// whose size is unknown until inflated, is refused.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = B64
        .decode(text)
        .map_err(|e| format!("histogram: not base64: {e}"))?;
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let long = |at: usize| {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
    };
    if bytes.len() < V2_HEADER || word(0) != Some(V2_COOKIE) {
        return Err("histogram: not an uncompressed HdrHistogram V2 serialization".into());
    }
    let declared = word(4).unwrap_or(0) as usize;
    if declared != bytes.len() - V2_HEADER {
        return Err(format!(
            "histogram: declares {declared} bytes of counts but holds {}",
            bytes.len() - V2_HEADER
        ));
    }
    let (digits, low, high) = (word(12), long(16), long(24));
    if low != Some(1)
        || high != Some(super::latency::MAX_LATENCY_US)
        || !matches!(digits, Some(2 | 3))
    {
        return Err(format!(
            "histogram: range {low:?}..{high:?} at {digits:?} significant digits; stormrig \
             writes 1..{} at 2 or 3",
            super::latency::MAX_LATENCY_US
        ));
    }
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
        let mut h = crate::metrics::latency::new_histogram(3);
        for v in [1u64, 7, 999, 12_345, 3_600_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
        assert!(decode("not base64!").is_err());
    }

    #[test]
    fn refuses_declared_sizes_it_does_not_hold() {
        let h = crate::metrics::latency::new_histogram(3);
        let mut bytes = B64.decode(encode(&h)).unwrap();
        bytes[4..8].copy_from_slice(&(1u32 << 31).to_be_bytes());
        let err = decode(&B64.encode(&bytes)).unwrap_err();
        assert!(err.contains("declares 2147483648 bytes"), "{err}");
        let wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 2, 5).unwrap();
        assert!(decode(&encode(&wide)).unwrap_err().contains("range"));
    }
}
