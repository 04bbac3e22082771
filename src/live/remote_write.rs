//! Prometheus remote-write 1.0 (`--remote-write URL`): the run's families as protobuf
//! samples, snappy-compressed, posted to a receiver such as Prometheus itself
//! (`--web.enable-remote-write-receiver`), Mimir, Thanos or an OpenTelemetry collector.
//!
//! A Pushgateway holds the last text pushed and waits to be scraped; remote-write stores
//! every push as a sample at its own instant, so a 20 s rehearsal pushed each second leaves
//! twenty points per series, not one. The messages are those of the 1.0 specification
//! (prometheus.io/docs/concepts/remote_write_spec, "Protocol"; `prompb/remote.proto` and
//! `types.proto` in prometheus/prometheus): a `WriteRequest` of `TimeSeries`, each a sorted
//! label set with `__name__` and its samples. Histograms go as their `_bucket`, `_sum` and
//! `_count` series, as 1.0 wants.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::exposition::Family;

/// Where remote-write samples go: a loopback address and the receiver's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receiver {
    pub addr: SocketAddr,
    pub path: String,
}

/// Prometheus's own receiver path, taken when the URL names none.
const DEFAULT_PATH: &str = "/api/v1/write";

impl std::str::FromStr for Receiver {
    type Err = String;

    /// `http://127.0.0.1:9090/api/v1/write`: http only, a loopback host (an address or
    /// `localhost`), the path kept as given (Prometheus's when absent).
    fn from_str(url: &str) -> Result<Self, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("`{url}` must start with http://, e.g. \"http://127.0.0.1:9090/api/v1/write\"")
        })?;
        let (host, port) = crate::scenario::validate::parse_url(url)?;
        let ip: IpAddr = if host == "localhost" {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            host.parse()
                .map_err(|_| format!("`{url}`: the host must be a loopback address or localhost"))?
        };
        if !ip.is_loopback() {
            return Err(format!(
                "`{url}`: only a loopback address is pushed to (127.0.0.1, [::1])"
            ));
        }
        let path = match rest.find('/') {
            Some(i) if rest[i..].len() > 1 => rest[i..].to_string(),
            _ => DEFAULT_PATH.to_string(),
        };
        Ok(Receiver {
            addr: SocketAddr::new(ip, port),
            path,
        })
    }
}

impl std::fmt::Display for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.addr, self.path)
    }
}

#[derive(Clone, PartialEq, prost::Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

/// The request body for `families` at `timestamp_ms` (Unix milliseconds): the protobuf
/// `WriteRequest`, snappy block-compressed. Labels are sorted by name, as the
/// specification requires; `__name__` sorts first of them all.
pub fn body(families: &[Family], timestamp_ms: i64) -> Vec<u8> {
    let timeseries = families
        .iter()
        .flat_map(|f| {
            f.samples.iter().map(move |s| {
                let mut labels: Vec<Label> = std::iter::once(Label {
                    name: "__name__".into(),
                    value: format!("{}{}", f.name, s.suffix),
                })
                .chain(s.labels.iter().map(|(k, v)| Label {
                    name: (*k).into(),
                    value: v.clone(),
                }))
                .collect();
                labels.sort_by(|a, b| a.name.cmp(&b.name));
                TimeSeries {
                    labels,
                    samples: vec![Sample {
                        value: s.value,
                        timestamp: timestamp_ms,
                    }],
                }
            })
        })
        .collect();
    let raw = prost::Message::encode_to_vec(&WriteRequest { timeseries });
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("snappy takes any input below 4 GiB; a push is a few kilobytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::exposition::{Kind, Sample as Point};

    fn family() -> Family {
        Family {
            name: "stormrig_attempts_total",
            kind: Kind::Counter,
            help: "h",
            samples: vec![Point {
                suffix: "",
                labels: vec![("run", "r1".into()), ("config", "naive".into())],
                value: 42.0,
            }],
        }
    }

    #[test]
    fn the_body_decodes_to_sorted_labels_and_the_samples_given() {
        let bytes = body(&[family()], 1_700_000_000_123);
        let raw = snap::raw::Decoder::new().decompress_vec(&bytes).unwrap();
        let req: WriteRequest = prost::Message::decode(raw.as_slice()).unwrap();
        assert_eq!(req.timeseries.len(), 1);
        let ts = &req.timeseries[0];
        let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "config", "run"]);
        assert_eq!(ts.labels[0].value, "stormrig_attempts_total");
        assert_eq!(
            ts.samples,
            [Sample {
                value: 42.0,
                timestamp: 1_700_000_000_123
            }]
        );
    }

    #[test]
    fn receivers_are_loopback_http_urls() {
        let r: Receiver = "http://127.0.0.1:9090/api/v1/write".parse().unwrap();
        assert_eq!(r.addr, "127.0.0.1:9090".parse().unwrap());
        assert_eq!(r.path, "/api/v1/write");
        let r: Receiver = "http://[::1]:9009".parse().unwrap();
        assert_eq!(r.path, DEFAULT_PATH);
        let r: Receiver = "http://localhost:19291/receive".parse().unwrap();
        assert_eq!(r.addr.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        for bad in [
            "https://127.0.0.1:9090/api/v1/write",
            "http://10.0.0.1:9090/api/v1/write",
            "http://prometheus:9090/api/v1/write",
            "127.0.0.1:9090",
            "http://127.0.0.1:0/",
        ] {
            assert!(bad.parse::<Receiver>().is_err(), "{bad}");
        }
    }
}
