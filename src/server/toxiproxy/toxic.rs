//! Toxiproxy's toxics as stormrig's HTTP-level faults.
//!
//! Toxiproxy works on TCP streams; stormrig's proxy works on HTTP exchanges, so a toxic
//! becomes the fault that does the same to an exchange (Toxiproxy v2.12, `toxics/*.go`):
//! - `latency` (`latency` ± `jitter` ms, uniform; `latency.go` `delay()`): added latency
//!   before the forward, in either stream (on a request/response exchange both delay the
//!   answer by the same time);
//! - `bandwidth` (`rate` KB/s of 1,000 bytes, `bandwidth.go`; 0 passes data unthrottled),
//!   `slow_close` (`delay` ms) and `slicer` (`average_size` bytes, `delay` µs): how the
//!   response travels back, so downstream only; `slicer`'s slices are all `average_size`
//!   (`size_variation` is kept and shown, not drawn);
//! - `timeout` (`timeout` ms; 0 holds the request without an answer), `reset_peer`
//!   (`timeout` ms, then the connection closes without an answer): a hang, or added latency
//!   then a reset, in either stream;
//! - `toxicity`: the chance that a request is affected, drawn per request from the seed
//!   (Toxiproxy draws it per connection).
//!
//! `limit_data` cuts a stream after a byte count, which has no HTTP-level fault here: it is
//! refused by name, as an unknown type is.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::ApiError;
use crate::scenario::model::{Dist, Fault, FaultKind};

/// One toxic of a proxy, as the API shows it.
#[derive(Debug, Clone)]
pub(crate) struct Toxic {
    pub(crate) name: String,
    kind: Kind,
    stream: Stream,
    toxicity: f64,
    /// Every attribute of the type, as integers (Toxiproxy's `int64` fields).
    attributes: Vec<(&'static str, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Upstream,
    Downstream,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Latency,
    Bandwidth,
    SlowClose,
    Timeout,
    Slicer,
    ResetPeer,
}

impl Kind {
    fn parse(name: &str) -> Result<Kind, ApiError> {
        Ok(match name {
            "latency" => Kind::Latency,
            "bandwidth" => Kind::Bandwidth,
            "slow_close" => Kind::SlowClose,
            "timeout" => Kind::Timeout,
            "slicer" => Kind::Slicer,
            "reset_peer" => Kind::ResetPeer,
            "limit_data" => {
                return Err(ApiError::bad(
                    "invalid toxic type: limit_data cuts a TCP stream after a byte count, which \
                     stormrig's HTTP-level proxy does not model; use reset_peer or slicer",
                ))
            }
            other => {
                return Err(ApiError::bad(format!(
                    "invalid toxic type: {other:?}; one of latency, bandwidth, slow_close, \
                     timeout, slicer, reset_peer"
                )))
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Latency => "latency",
            Kind::Bandwidth => "bandwidth",
            Kind::SlowClose => "slow_close",
            Kind::Timeout => "timeout",
            Kind::Slicer => "slicer",
            Kind::ResetPeer => "reset_peer",
        }
    }

    /// The type's attributes, all zero until given (as Go decodes into a zeroed struct).
    fn attributes(self) -> &'static [&'static str] {
        match self {
            Kind::Latency => &["latency", "jitter"],
            Kind::Bandwidth => &["rate"],
            Kind::SlowClose => &["delay"],
            Kind::Timeout | Kind::ResetPeer => &["timeout"],
            Kind::Slicer => &["average_size", "size_variation", "delay"],
        }
    }
}

impl Toxic {
    /// A toxic from the body of `POST /proxies/{proxy}/toxics`: `type` required, `stream`
    /// downstream, `toxicity` 1 and `name` `{type}_{stream}` by default, as Toxiproxy's
    /// `AddToxicJson`.
    pub(crate) fn create(body: &Value) -> Result<Toxic, ApiError> {
        let obj = body
            .as_object()
            .ok_or_else(|| ApiError::bad("bad request body: a toxic is one JSON object"))?;
        let kind = match obj.get("type") {
            Some(Value::String(t)) => Kind::parse(t)?,
            Some(_) => return Err(ApiError::bad("bad request body: type: a string")),
            None => return Err(ApiError::bad("missing required field: type")),
        };
        let stream = match obj.get("stream") {
            None => Stream::Downstream,
            Some(Value::String(s)) if s == "downstream" => Stream::Downstream,
            Some(Value::String(s)) if s == "upstream" => Stream::Upstream,
            Some(_) => {
                return Err(ApiError::bad(
                    "stream was invalid, can be either upstream or downstream",
                ))
            }
        };
        let name = match obj.get("name") {
            None => format!("{}_{}", kind.name(), stream.name()),
            Some(Value::String(n)) if n.is_empty() => {
                format!("{}_{}", kind.name(), stream.name())
            }
            Some(Value::String(n)) => super::checked_name(n)?.to_string(),
            Some(_) => return Err(ApiError::bad("bad request body: name: a string")),
        };
        let mut toxic = Toxic {
            name,
            kind,
            stream,
            toxicity: 1.0,
            attributes: kind.attributes().iter().map(|a| (*a, 0)).collect(),
        };
        toxic.apply(obj)?;
        Ok(toxic)
    }

    /// `POST|PATCH /proxies/{proxy}/toxics/{toxic}`: new attributes and toxicity over the
    /// current ones (Toxiproxy's `UpdateToxicJson`); checked whole before anything changes.
    pub(crate) fn update(&self, body: &Value) -> Result<Toxic, ApiError> {
        let obj = body
            .as_object()
            .ok_or_else(|| ApiError::bad("bad request body: a toxic is one JSON object"))?;
        let mut next = self.clone();
        next.apply(obj)?;
        Ok(next)
    }

    fn apply(&mut self, obj: &Map<String, Value>) -> Result<(), ApiError> {
        if let Some(t) = obj.get("toxicity") {
            let t = t
                .as_f64()
                .filter(|t| (0.0..=1.0).contains(t))
                .ok_or_else(|| ApiError::bad("bad request body: toxicity: a number from 0 to 1"))?;
            self.toxicity = t;
        }
        match obj.get("attributes") {
            None | Some(Value::Null) => {}
            Some(Value::Object(attrs)) => {
                for (key, value) in attrs {
                    // Go's decoder ignores fields the type does not have; so does this.
                    let Some(slot) = self.attributes.iter_mut().find(|(k, _)| k == key) else {
                        continue;
                    };
                    slot.1 = value.as_i64().filter(|v| *v >= 0).ok_or_else(|| {
                        ApiError::bad(format!(
                            "bad request body: attributes.{key}: a whole number, 0 or more"
                        ))
                    })?;
                }
            }
            Some(_) => return Err(ApiError::bad("bad request body: attributes: an object")),
        }
        self.faults().map(|_| ())
    }

    fn attr(&self, key: &str) -> i64 {
        self.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0, |(_, v)| *v)
    }

    /// The toxic as Toxiproxy's API shows it.
    pub(crate) fn json(&self) -> Value {
        let attributes: Map<String, Value> = self
            .attributes
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect();
        json!({
            "name": self.name,
            "type": self.kind.name(),
            "stream": self.stream.name(),
            "toxicity": self.toxicity,
            "attributes": attributes,
        })
    }

    /// The faults that do to an HTTP exchange what the toxic does to a stream: none at
    /// toxicity 0 (or for a bandwidth of 0, which Toxiproxy passes unthrottled).
    pub(crate) fn faults(&self) -> Result<Vec<Fault>, ApiError> {
        let ms = |key| Duration::from_millis(self.attr(key).unsigned_abs());
        let fault = |kind| Fault {
            at: Duration::ZERO,
            length: crate::server::fault_api::UNTIL_REMOVED,
            path: None,
            probability: self.toxicity,
            kind,
        };
        let response_only = |what: &str| {
            if self.stream == Stream::Upstream {
                Err(ApiError::bad(format!(
                    "stream upstream: stormrig applies {what} to the response (downstream) only"
                )))
            } else {
                Ok(())
            }
        };
        // A wait then an end are two faults drawn apart; only a certain toxic keeps them
        // together.
        let then_end = |end: FaultKind, wait: Duration| {
            if wait.is_zero() {
                return Ok(vec![fault(end)]);
            }
            if self.toxicity < 1.0 {
                return Err(ApiError::bad(format!(
                    "toxicity: {} with a timeout above 0 is not modeled (the wait and the end \
                     are drawn apart per request); use toxicity 1, or a timeout of 0",
                    self.kind.name()
                )));
            }
            Ok(vec![
                fault(FaultKind::Latency {
                    add: Dist::Constant { value: wait },
                }),
                fault(end),
            ])
        };
        if self.toxicity == 0.0 {
            return Ok(Vec::new());
        }
        match self.kind {
            Kind::Latency => {
                let (latency, jitter) = (ms("latency"), ms("jitter"));
                let add = if jitter.is_zero() {
                    Dist::Constant { value: latency }
                } else {
                    Dist::Uniform {
                        min: latency.saturating_sub(jitter),
                        max: latency + jitter,
                    }
                };
                Ok(vec![fault(FaultKind::Latency { add })])
            }
            Kind::Bandwidth => {
                response_only("bandwidth")?;
                let rate = self.attr("rate").unsigned_abs();
                if rate == 0 {
                    return Ok(Vec::new());
                }
                Ok(vec![fault(FaultKind::Bandwidth {
                    bytes_per_s: rate.saturating_mul(1000),
                })])
            }
            Kind::SlowClose => {
                response_only("slow_close")?;
                Ok(vec![fault(FaultKind::SlowClose { delay: ms("delay") })])
            }
            Kind::Slicer => {
                response_only("slicer")?;
                let size = u32::try_from(self.attr("average_size"))
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| {
                        ApiError::bad("bad request body: attributes.average_size: 1 or more bytes")
                    })?;
                Ok(vec![fault(FaultKind::Slicer {
                    slice_bytes: size,
                    delay: Duration::from_micros(self.attr("delay").unsigned_abs()),
                })])
            }
            Kind::Timeout => {
                if self.attr("timeout") == 0 {
                    Ok(vec![fault(FaultKind::Hang)])
                } else {
                    then_end(FaultKind::Reset, ms("timeout"))
                }
            }
            Kind::ResetPeer => then_end(FaultKind::Reset, ms("timeout")),
        }
    }
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Upstream => "upstream",
            Stream::Downstream => "downstream",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(t: &Toxic) -> Vec<FaultKind> {
        t.faults().unwrap().into_iter().map(|f| f.kind).collect()
    }

    #[test]
    fn defaults_follow_toxiproxy() {
        let t = Toxic::create(&json!({"type": "latency", "attributes": {"latency": 300}})).unwrap();
        let shown = t.json();
        assert_eq!(shown["name"], "latency_downstream");
        assert_eq!(shown["stream"], "downstream");
        assert_eq!(shown["toxicity"], 1.0);
        assert_eq!(shown["attributes"], json!({"latency": 300, "jitter": 0}));
        assert_eq!(
            kinds(&t),
            vec![FaultKind::Latency {
                add: Dist::Constant {
                    value: Duration::from_millis(300)
                }
            }]
        );
    }

    #[test]
    fn jitter_is_uniform_around_the_latency() {
        let t = Toxic::create(&json!({"type": "latency", "stream": "upstream",
            "attributes": {"latency": 100, "jitter": 30}}))
        .unwrap();
        assert_eq!(
            kinds(&t),
            vec![FaultKind::Latency {
                add: Dist::Uniform {
                    min: Duration::from_millis(70),
                    max: Duration::from_millis(130)
                }
            }]
        );
    }

    #[test]
    fn timeouts_become_a_hang_or_a_wait_then_a_reset() {
        let hang = Toxic::create(&json!({"type": "timeout"})).unwrap();
        assert_eq!(kinds(&hang), vec![FaultKind::Hang]);
        let reset =
            Toxic::create(&json!({"type": "reset_peer", "attributes": {"timeout": 50}})).unwrap();
        assert_eq!(kinds(&reset).len(), 2);
        assert_eq!(kinds(&reset)[1], FaultKind::Reset);
        let err = Toxic::create(&json!({"type": "reset_peer", "toxicity": 0.5,
            "attributes": {"timeout": 50}}))
        .unwrap_err();
        assert!(err.message.contains("toxicity"), "{}", err.message);
    }

    #[test]
    fn bad_toxics_are_refused_by_field() {
        let cases = [
            (json!({"type": "limit_data"}), "limit_data"),
            (json!({"type": "lag"}), "invalid toxic type"),
            (json!({}), "type"),
            (json!({"type": "latency", "stream": "sideways"}), "stream"),
            (json!({"type": "latency", "toxicity": 1.5}), "toxicity"),
            (
                json!({"type": "latency", "attributes": {"latency": "1s"}}),
                "attributes.latency",
            ),
            (
                json!({"type": "bandwidth", "stream": "upstream", "attributes": {"rate": 5}}),
                "downstream",
            ),
            (json!({"type": "slicer"}), "average_size"),
        ];
        for (body, needle) in cases {
            let err = Toxic::create(&body).unwrap_err();
            assert_eq!(err.status, 400);
            assert!(err.message.contains(needle), "{body}: {}", err.message);
        }
    }

    #[test]
    fn an_update_keeps_what_it_does_not_name() {
        let t = Toxic::create(&json!({"type": "slicer",
            "attributes": {"average_size": 64, "delay": 10}}))
        .unwrap();
        let u = t.update(&json!({"attributes": {"delay": 20}})).unwrap();
        assert_eq!(u.json()["attributes"]["average_size"], 64);
        assert_eq!(u.json()["attributes"]["delay"], 20);
        assert!(t
            .update(&json!({"attributes": {"average_size": 0}}))
            .is_err());
    }
}
