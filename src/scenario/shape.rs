//! Serde's refusals in the words of the file's author: which dotted field, and what was
//! expected there as a person writes it ("a duration with a unit such as \"10s\"", "one of
//! the kinds …"), never the names of Rust types or serde's own vocabulary.
//!
//! Two sources of "where": serde's path (kept by `serde_path_to_error` down to the value that
//! failed, or to the table of an enum chosen by its `kind`, whose inside serde buffers
//! without a path) and toml_edit's byte span (the deepest written node covering it). The
//! deeper of the two wins; a refused key or missing key is then joined to it.

use serde::de::DeserializeOwned;

use super::error::ErrorKind;
use super::source::{join, SourceMap};
use super::validate::suggest;

/// A refusal of the file's shape, relative to the document's top level.
#[derive(Debug)]
pub struct Shape {
    /// Dotted path such as `configs[2].backoff.initial` (empty: the whole document).
    pub field: String,
    /// Byte range serde blamed, when it knows one.
    pub span: Option<std::ops::Range<usize>>,
    pub kind: ErrorKind,
}

/// Deserializes a parsed TOML document, refusing in user words at a full path.
pub fn from_document<T: DeserializeOwned>(
    doc: toml_edit::ImDocument<String>,
    map: &SourceMap,
) -> Result<T, Shape> {
    let de = toml_edit::de::Deserializer::from(doc);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = dotted(e.path());
        let inner = e.into_inner();
        let span = inner.span();
        let by_span = span.clone().and_then(|s| map.path_covering(s));
        // The deeper of the two, when one lies inside the other.
        let at = match by_span {
            Some(s) if s.starts_with(path.as_str()) => s.to_string(),
            _ => path,
        };
        let (field, kind) = explain(&at, inner.message().trim(), map);
        Shape { field, span, kind }
    })
}

/// Deserializes one table of a file (a retry config) already read as a value, refusing at a
/// path relative to the table. The table is written back as TOML text and read again, so
/// that serde's spans find the field inside a table chosen by its `kind` as well.
pub fn from_table<T: DeserializeOwned>(table: &toml::Table) -> Result<T, Shape> {
    let text = toml::to_string(table).unwrap_or_default();
    match toml_edit::ImDocument::parse(text.clone()) {
        Ok(doc) if !text.is_empty() || table.is_empty() => {
            let map = SourceMap::of(&text, &doc);
            from_document(doc, &map)
        }
        // Not expected (the table came from TOML): serde's path alone.
        _ => serde_path_to_error::deserialize(toml::Value::Table(table.clone())).map_err(|e| {
            let path = dotted(e.path());
            let (field, kind) = explain(&path, e.into_inner().message(), &SourceMap::default());
            Shape {
                field,
                span: None,
                kind,
            }
        }),
    }
}

/// Deserializes one JSON object (a request body), refusing in user words at a full path:
/// `add: expected a table with a kind…`.
pub fn from_json<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    let empty = SourceMap::default();
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = dotted(e.path());
        let (field, kind) = explain(&path, &e.into_inner().to_string(), &empty);
        match field.is_empty() {
            true => kind.to_string(),
            false => format!("{field}: {kind}"),
        }
    })
}

/// serde's path as the file writes it: `configs[2].backoff`.
fn dotted(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => out = join(&out, key),
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

/// The field to blame and the message, from serde's message `msg` raised at path `at`.
fn explain(at: &str, msg: &str, map: &SourceMap) -> (String, ErrorKind) {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let key = rest.split('`').next().unwrap_or("").to_string();
        let expected = backticked(rest.split_once(',').map(|(_, r)| r).unwrap_or(""));
        let suggestion = suggest(&key, expected.iter().map(String::as_str));
        let field = if at == key || at.ends_with(&format!(".{key}")) {
            at.to_string()
        } else {
            join(at, &key)
        };
        let kind = ErrorKind::UnknownKey {
            key,
            suggestion,
            expected,
        };
        return (field, kind);
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let value = rest.split('`').next().unwrap_or("");
        let expected = backticked(rest.split_once(',').map(|(_, r)| r).unwrap_or(""));
        let hint = match suggest(value, expected.iter().map(String::as_str)) {
            Some(s) => format!(" (did you mean `{s}`?)"),
            None => String::new(),
        };
        let field = variant_field(at, value, map);
        let what = if field.ends_with("kind") {
            "kind"
        } else {
            "value"
        };
        let kind = ErrorKind::Invalid(format!(
            "unknown {what} `{value}`{hint}; one of: {}",
            expected.join(", ")
        ));
        return (field, kind);
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.split('`').next().unwrap_or("");
        let kind = ErrorKind::WrongType("is missing (it has no default)".to_string());
        return (join(at, key), kind);
    }
    if let Some(rest) = msg.strip_prefix("invalid type: ") {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return (
            at.to_string(),
            ErrorKind::WrongType(wrong_type(found, expected)),
        );
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ") {
        let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let text = format!("{} is not {}", found_words(found), expected_words(expected));
        return (at.to_string(), ErrorKind::WrongType(text));
    }
    if let Some(rest) = msg.strip_prefix("invalid length ") {
        let (n, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let text = format!("has {n} items; expected {}", expected_words(expected));
        return (at.to_string(), ErrorKind::WrongType(text));
    }
    if msg.starts_with("data did not match any variant") {
        let text = "matches none of the forms this field accepts (see docs/scenario-reference.md)";
        return (at.to_string(), ErrorKind::WrongType(text.into()));
    }
    (at.to_string(), ErrorKind::Invalid(scrub(msg)))
}

/// Where an unknown enum value was written: the field itself when it holds that text (a
/// plain choice such as `deposit = "x"`), else the `kind` of the table serde blamed, else a
/// child of that table holding the text.
fn variant_field(at: &str, value: &str, map: &SourceMap) -> String {
    if map.string_at(at) == Some(value) {
        return at.to_string();
    }
    let kind = join(at, "kind");
    if map.string_at(&kind) == Some(value) {
        return kind;
    }
    if let Some(child) = map.child_holding(at, value) {
        return child.to_string();
    }
    if at.ends_with("kind") || map.string_at(at).is_some() {
        at.to_string()
    } else {
        kind
    }
}

/// "is the text \"800ms\"; expected a table with a `kind`…".
fn wrong_type(found: &str, expected: &str) -> String {
    let mut text = format!(
        "is {}; expected {}",
        found_words(found),
        expected_words(expected)
    );
    let number = found.starts_with("integer") || found.starts_with("floating point");
    if number && expected.contains("string") {
        text.push_str(" (a duration is text with a unit, such as \"10s\" or \"250ms\")");
    }
    text
}

/// serde's `Unexpected` as a person says it.
fn found_words(found: &str) -> String {
    let quoted = |prefix: &str| found.strip_prefix(prefix).map(str::trim);
    if let Some(s) = quoted("string ") {
        return format!("the text {s}");
    }
    for prefix in ["integer ", "floating point ", "boolean "] {
        if let Some(n) = quoted(prefix) {
            let n = n.trim_matches('`');
            return match prefix {
                "boolean " => format!("`{n}`"),
                _ => format!("the number {n}"),
            };
        }
    }
    match found {
        "sequence" => "a list".into(),
        "map" => "a table".into(),
        "unit" | "unit value" => "empty".into(),
        other => scrub(other),
    }
}

/// serde's `expected` text as a person says it.
fn expected_words(expected: &str) -> String {
    let e = expected.trim();
    if let Some(name) = e.strip_prefix("internally tagged enum ") {
        return match name {
            "Dist" => "a table with a `kind` (constant, uniform, exponential, log-normal), \
                       such as { kind = \"constant\", value = \"800ms\" }"
                .into(),
            _ => "a table with a `kind`, such as { kind = \"...\", ... }".into(),
        };
    }
    if e.starts_with("struct ") || e == "a map" || e == "map" {
        return "a table { key = value, ... }".into();
    }
    if e.starts_with("a sequence") || e == "sequence" || e.starts_with("tuple") {
        return "a list [ ... ]".into();
    }
    match e {
        "a string" | "string" => "text in quotes".into(),
        "a boolean" | "bool" => "true or false".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize"
        | "an integer" => "a whole number".into(),
        "f32" | "f64" | "a number" => "a number".into(),
        "" => "another type".into(),
        other if other.starts_with("a ") || other.starts_with("an ") => scrub(other),
        other => scrub(other),
    }
}

/// Removes serde's vocabulary from a message that has no better translation.
fn scrub(msg: &str) -> String {
    let mut out = msg.to_string();
    for (from, to) in [
        ("internally tagged enum ", "table of kind "),
        ("untagged enum ", "form of "),
        ("unit variant", "plain value"),
        ("newtype variant", "value"),
        ("tuple variant", "list"),
        ("struct variant", "table"),
        ("variant", "kind"),
        ("enum ", ""),
    ] {
        out = out.replace(from, to);
    }
    out
}

/// The backticked words of serde's "expected one of `a`, `b`".
fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_types_in_user_words() {
        let t = wrong_type("integer `10`", "a string");
        assert!(t.contains("the number 10") && t.contains("\"10s\""), "{t}");
        let t = wrong_type("string \"800ms\"", "internally tagged enum Dist");
        assert!(
            !t.contains("enum") && t.contains("kind = \"constant\""),
            "{t}"
        );
        assert_eq!(scrub("unit variant of enum X"), "plain value of X");
    }
}
