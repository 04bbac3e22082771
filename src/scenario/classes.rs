//! Request classes: a load that is a weighted mix of different calls (a health check, an
//! inference call, a payment tool call), each with its own method, path, headers, body, token
//! profile and idempotency. Every logical request belongs to one class, drawn from the seed
//! and its id alone ([`crate::draws::class_of`]), so both engines, every config and every
//! shard send the same class for the same request.
//!
//! A config may give a class its own retry policy (`classes.NAME = { ... }` in the config's
//! table, resolved by the plan); the scenario only says what each class sends.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::limits;
use super::validate::refuse::{check_name, refuse, Checked};
use crate::headers;

/// One `[[load.classes]]` table as written. Fields left out take the load's own value.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSection {
    pub name: String,
    /// Share of the arrivals, relative to the other classes' weights.
    #[serde(default = "one")]
    pub weight: f64,
    pub method: Option<String>,
    pub path: Option<String>,
    /// Added to the load's headers (a class's value wins over the load's).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    /// Whether a retry may repeat the call's effect: left out, the method says (GET, PUT,
    /// DELETE, ... are; POST and PATCH are not). `false` on a GET keeps even a read from
    /// being re-sent once it may have reached the server; `true` on a POST says the call
    /// is safe to repeat (a lookup sent as POST, say).
    pub idempotent: Option<bool>,
    /// The request's prompt and completion tokens at a provider: a number, or
    /// `{ min = 500, max = 3000 }` for a seeded uniform draw per request.
    pub prompt_tokens: Option<TokenCount>,
    pub completion_tokens: Option<TokenCount>,
}

fn one() -> f64 {
    1.0
}

/// A token count as written: a number or an inclusive range.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum TokenCount {
    Fixed(u64),
    Range { min: u64, max: u64 },
}

/// The most classes one load may mix.
pub const MAX_CLASSES: usize = 32;

/// A validated class: what every request of it sends.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RequestClass {
    pub name: String,
    pub weight: f64,
    pub method: String,
    pub path: String,
    /// The load's headers with the class's over them.
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    /// `None`: the method decides, as for a load without classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<TokenCount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<TokenCount>,
}

impl RequestClass {
    /// Whether a retry may repeat this class's effect.
    pub fn idempotent(&self) -> bool {
        self.idempotent
            .unwrap_or_else(|| crate::policy::is_idempotent_method(&self.method))
    }

    /// A write: the target counts its executions (side effects), as for any method but GET
    /// and HEAD, unless the class says whether it is idempotent: a call declared safe to
    /// repeat has no side effect to count twice, one declared not to be has one.
    pub fn writes(&self) -> bool {
        match self.idempotent {
            Some(idempotent) => !idempotent,
            None => !matches!(self.method.as_str(), "GET" | "HEAD"),
        }
    }

    /// Whether the class draws a token count per request (rather than sending one figure).
    pub fn draws_tokens(&self) -> bool {
        [self.prompt_tokens, self.completion_tokens]
            .iter()
            .any(|t| matches!(t, Some(TokenCount::Range { .. })))
    }

    /// Request `request`'s prompt and completion tokens, where the class names them (a
    /// range is drawn from the seed and the request id); `None` leaves the provider's
    /// default, or a token header of the class, to decide.
    pub fn tokens(&self, seed: u64, request: u64) -> (Option<u64>, Option<u64>) {
        let pick = |t: Option<TokenCount>, salt| match t? {
            TokenCount::Fixed(n) => Some(n),
            TokenCount::Range { min, max } => {
                Some(crate::draws::uniform_count(seed, request, salt, min, max))
            }
        };
        (
            pick(self.prompt_tokens, crate::draws::SALT_PROMPT_TOKENS),
            pick(self.completion_tokens, crate::draws::SALT_COMPLETION_TOKENS),
        )
    }
}

/// The classes' cumulative weights, to draw each request's class from.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassMix {
    cumulative: Vec<f64>,
    /// A recorded trace's class of each request, by id (from its logged path): the trace
    /// says which call each request was, so nothing is drawn.
    recorded: Option<std::sync::Arc<[u16]>>,
}

impl ClassMix {
    /// The mix of `load`: its classes' weights, or the classes its recorded trace gives.
    pub fn of_load(load: &super::Load) -> ClassMix {
        let mut mix = ClassMix::new(&load.classes);
        if let super::LoadShape::Trace {
            classes: Some(c), ..
        } = &load.shape
        {
            mix.recorded = Some(std::sync::Arc::clone(c));
        }
        mix
    }

    pub fn new(classes: &[RequestClass]) -> ClassMix {
        let mut sum = 0.0;
        ClassMix {
            recorded: None,
            cumulative: classes
                .iter()
                .map(|c| {
                    sum += c.weight;
                    sum
                })
                .collect(),
        }
    }

    /// The class (index) of request `request`: 0 when there is one class or none.
    #[inline]
    pub fn class_of(&self, seed: u64, request: u64) -> usize {
        if let Some(recorded) = &self.recorded {
            return usize::try_from(request)
                .ok()
                .and_then(|i| recorded.get(i))
                .map_or(0, |&c| usize::from(c));
        }
        if self.cumulative.len() <= 1 {
            return 0;
        }
        crate::draws::class_of(seed, request, &self.cumulative)
    }
}

/// The field checks a class's own method, path, headers and body share with the load's.
pub(crate) struct RequestChecks {
    pub method: fn(&str, &str) -> Checked<()>,
    pub path: fn(&str, &str) -> Checked<()>,
    pub headers: fn(&str, &BTreeMap<String, String>) -> Checked<()>,
}

/// The load as written, which every class's left-out field falls back to.
pub(crate) struct LoadDefaults<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub headers: &'a BTreeMap<String, String>,
    pub body: Option<&'a str>,
}

/// Validates `[[load.classes]]`: names distinct, weights positive, every request a class
/// sends as valid as the load's own, token counts in range and not said twice.
pub(crate) fn check_classes(
    sections: &[ClassSection],
    load: LoadDefaults<'_>,
    checks: RequestChecks,
) -> Checked<Vec<RequestClass>> {
    if sections.len() > MAX_CLASSES {
        return refuse(
            "load.classes",
            format!(
                "has {} classes, above the limit of {MAX_CLASSES}",
                sections.len()
            ),
        );
    }
    let mut out: Vec<RequestClass> = Vec::with_capacity(sections.len());
    for (i, s) in sections.iter().enumerate() {
        let p = format!("load.classes[{i}]");
        check_name(&format!("{p}.name"), &s.name)?;
        if out.iter().any(|o| o.name == s.name) {
            return refuse(
                format!("{p}.name"),
                format!("{:?} names two classes", s.name),
            );
        }
        if !(s.weight.is_finite() && s.weight > 0.0 && s.weight <= 1e9) {
            return refuse(
                format!("{p}.weight"),
                format!(
                    "{} is not a weight: give a number above 0 and at most 1e9",
                    s.weight
                ),
            );
        }
        let method = s.method.as_deref().unwrap_or(load.method);
        (checks.method)(&format!("{p}.method"), method)?;
        let path = s.path.as_deref().unwrap_or(load.path);
        (checks.path)(&format!("{p}.path"), path)?;
        let mut headers = load.headers.clone();
        for (k, v) in &s.headers {
            // A class's header replaces the load's of the same name, whatever its case.
            headers.retain(|name, _| !name.eq_ignore_ascii_case(k));
            headers.insert(k.clone(), v.clone());
        }
        (checks.headers)(&format!("{p}.headers"), &headers)?;
        let body = s.body.as_deref().or(load.body);
        if let Some(b) = body {
            if b.len() > limits::MAX_BODY {
                return refuse(
                    format!("{p}.body"),
                    format!(
                        "is {} bytes, above the limit of {}",
                        b.len(),
                        limits::MAX_BODY
                    ),
                );
            }
        }
        for (field, header, count) in [
            ("prompt_tokens", headers::PROMPT_TOKENS, s.prompt_tokens),
            (
                "completion_tokens",
                headers::COMPLETION_TOKENS,
                s.completion_tokens,
            ),
        ] {
            let Some(count) = count else { continue };
            let at = format!("{p}.{field}");
            if headers.keys().any(|k| k.eq_ignore_ascii_case(header)) {
                return refuse(
                    at,
                    format!("the class's headers already set `{header}`; say it once"),
                );
            }
            let (min, max) = match count {
                TokenCount::Fixed(n) => (n, n),
                TokenCount::Range { min, max } => (min, max),
            };
            if min > max {
                return refuse(at, format!("min {min} is above max {max}"));
            }
            if max > limits::MAX_REQUEST_TOKENS {
                return refuse(
                    at,
                    format!("{max} is above the limit of {}", limits::MAX_REQUEST_TOKENS),
                );
            }
        }
        out.push(RequestClass {
            name: s.name.clone(),
            weight: s.weight,
            method: method.to_string(),
            path: path.to_string(),
            headers,
            body: body.map(str::to_string),
            idempotent: s.idempotent,
            prompt_tokens: s.prompt_tokens,
            completion_tokens: s.completion_tokens,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, weight: f64) -> RequestClass {
        RequestClass {
            name: name.into(),
            weight,
            method: "GET".into(),
            path: "/".into(),
            headers: BTreeMap::new(),
            body: None,
            idempotent: None,
            prompt_tokens: None,
            completion_tokens: None,
        }
    }

    #[test]
    fn the_mix_follows_the_weights_and_depends_on_seed_and_id_alone() {
        let mix = ClassMix::new(&[class("a", 1.0), class("b", 3.0)]);
        let n = 40_000u64;
        let b = (0..n).filter(|&id| mix.class_of(7, id) == 1).count() as f64;
        assert!(
            (b / n as f64 - 0.75).abs() < 0.01,
            "share of b: {}",
            b / n as f64
        );
        for id in 0..100 {
            assert_eq!(mix.class_of(7, id), mix.class_of(7, id));
        }
        let other: Vec<_> = (0..64).map(|id| mix.class_of(8, id)).collect();
        let this: Vec<_> = (0..64).map(|id| mix.class_of(7, id)).collect();
        assert_ne!(this, other, "another seed draws another mix");
    }

    #[test]
    fn drawn_tokens_stay_in_their_range_and_cover_it() {
        let mut c = class("infer", 1.0);
        c.prompt_tokens = Some(TokenCount::Range { min: 10, max: 13 });
        c.completion_tokens = Some(TokenCount::Fixed(5));
        let mut seen = [0u32; 4];
        for id in 0..2000 {
            let (p, k) = c.tokens(3, id);
            let p = p.unwrap();
            assert!((10..=13).contains(&p));
            seen[(p - 10) as usize] += 1;
            assert_eq!(k, Some(5));
        }
        assert!(seen.iter().all(|&n| n > 400), "{seen:?}");
        assert!(c.draws_tokens());
    }

    #[test]
    fn idempotency_follows_the_method_unless_said() {
        let mut c = class("pay", 1.0);
        c.method = "POST".into();
        assert!(!c.idempotent() && c.writes());
        c.idempotent = Some(true);
        assert!(c.idempotent());
        c.idempotent = None;
        let mut g = class("read", 1.0);
        assert!(g.idempotent() && !g.writes());
        g.idempotent = Some(false);
        assert!(!g.idempotent() && g.writes());
        c.idempotent = Some(true);
        assert!(
            !c.writes(),
            "a call declared safe to repeat has no side effect to count"
        );
    }
}
