//! Where things are in a TOML file: the 1-based line of a dotted field path
//! (`configs[2].backoff.cap`), and the dotted path of a byte offset (for serde errors, which
//! carry a span but no path).
//!
//! Paths use `.` between keys and `[i]` (0-based) for array elements, whether the array is
//! written as `[[faults]]` tables or inline as `faults = [{ ... }]`. Keys that are not bare
//! identifiers are still joined with `.` unquoted; scenario keys never need quoting.

use std::collections::HashMap;
use std::ops::Range;

use toml_edit::{ImDocument, Item, Table, Value};

/// One located node: its dotted path, the line it is written on, and the byte range that
/// covers it (key through value, or a table's header) for span lookups.
#[derive(Debug, Clone)]
struct Node {
    path: String,
    line: usize,
    /// Byte ranges that belong to this node (key span, value span, header span).
    spans: Vec<Range<usize>>,
}

/// An index from dotted paths to lines, built once per file: building and every lookup
/// stay linear in the file's size (a file of 200,000 keys is located as fast as it parses).
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    nodes: Vec<Node>,
    /// Position in `nodes` of each path (the first node written at it).
    by_path: HashMap<String, usize>,
    /// The text of every string value, by path (to find where an unknown kind was written).
    strings: HashMap<String, String>,
    lines: LineIndex,
}

/// Where each line of a text starts, to turn byte offsets into lines by binary search.
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    /// Byte offset just after each `\n`.
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex {
            starts: text
                .bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1)
                .collect(),
        }
    }

    /// 1-based line of byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset) + 1
    }
}

/// 1-based line of byte `offset` in `text` (one pass; use a [`LineIndex`] for many).
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl SourceMap {
    /// Indexes `text`; a file that is not valid TOML gives an empty map.
    pub fn new(text: &str) -> SourceMap {
        match ImDocument::parse(text) {
            Ok(doc) => SourceMap::of(text, &doc),
            Err(_) => SourceMap {
                lines: LineIndex::new(text),
                ..SourceMap::default()
            },
        }
    }

    /// Indexes `doc`, already parsed from `text` (so a file is parsed once).
    pub fn of<S>(text: &str, doc: &ImDocument<S>) -> SourceMap {
        let mut map = SourceMap {
            lines: LineIndex::new(text),
            ..SourceMap::default()
        };
        map.walk_table(text, "", doc.as_table());
        map
    }

    /// 1-based line of byte `offset` of the indexed text.
    pub fn line_at(&self, offset: usize) -> usize {
        self.lines.line(offset)
    }

    fn push(&mut self, _text: &str, path: String, spans: Vec<Range<usize>>) -> Option<usize> {
        let start = spans.iter().map(|s| s.start).min()?;
        let line = self.lines.line(start);
        self.by_path.entry(path.clone()).or_insert(self.nodes.len());
        self.nodes.push(Node { path, line, spans });
        Some(line)
    }

    fn walk_table(&mut self, text: &str, prefix: &str, table: &Table) {
        for (key, _) in table.iter() {
            let Some((k, item)) = table.get_key_value(key) else {
                continue;
            };
            let path = join(prefix, key);
            // The key's own span is where a person looks for the field.
            let mut spans: Vec<Range<usize>> = k.span().into_iter().collect();
            match item {
                Item::Table(t) => {
                    spans.extend(t.span());
                    // A header `[target.service]` leaves `target` without a span of its own:
                    // its line is that of its first child.
                    let before = self.nodes.len();
                    self.walk_table(text, &path, t);
                    if spans.is_empty() {
                        spans.extend(self.nodes[before..].iter().flat_map(|n| n.spans.clone()));
                    }
                    self.push(text, path, spans);
                }
                Item::ArrayOfTables(arr) => {
                    let mut all = spans.clone();
                    for (i, t) in arr.iter().enumerate() {
                        let elem = format!("{path}[{i}]");
                        let mut es: Vec<Range<usize>> = t.span().into_iter().collect();
                        let before = self.nodes.len();
                        self.walk_table(text, &elem, t);
                        if es.is_empty() {
                            es.extend(self.nodes[before..].iter().flat_map(|n| n.spans.clone()));
                        }
                        all.extend(es.iter().cloned());
                        self.push(text, elem, es);
                    }
                    self.push(text, path, all);
                }
                Item::Value(v) => {
                    spans.extend(v.span());
                    self.note_string(&path, v);
                    self.walk_value(text, &path, v);
                    self.push(text, path, spans);
                }
                Item::None => {}
            }
        }
    }

    fn walk_value(&mut self, text: &str, prefix: &str, value: &Value) {
        match value {
            Value::Array(arr) => {
                for (i, v) in arr.iter().enumerate() {
                    let elem = format!("{prefix}[{i}]");
                    self.note_string(&elem, v);
                    self.walk_value(text, &elem, v);
                    self.push(text, elem, v.span().into_iter().collect());
                }
            }
            Value::InlineTable(t) => {
                for (key, _) in t.iter() {
                    let Some((k, item)) = t.get_key_value(key) else {
                        continue;
                    };
                    let path = join(prefix, key);
                    let mut spans: Vec<Range<usize>> = k.span().into_iter().collect();
                    spans.extend(item.span());
                    if let Item::Value(v) = item {
                        self.note_string(&path, v);
                        self.walk_value(text, &path, v);
                    }
                    self.push(text, path, spans);
                }
            }
            _ => {}
        }
    }

    fn note_string(&mut self, path: &str, v: &Value) {
        if let Value::String(s) = v {
            self.strings.insert(path.to_string(), s.value().clone());
        }
    }

    /// The text of the string written at `path`, if one is.
    pub fn string_at(&self, path: &str) -> Option<&str> {
        self.strings.get(path).map(String::as_str)
    }

    /// A direct child of table `parent` whose value is the string `value`.
    pub fn child_holding(&self, parent: &str, value: &str) -> Option<&str> {
        let prefix = join(parent, "");
        self.strings
            .iter()
            .filter(|(p, s)| *s == value && p.starts_with(&prefix))
            .map(|(p, _)| p.as_str())
            .filter(|p| !p[prefix.len()..].contains(['.', '[']))
            .min()
    }

    /// The line of `path` exactly as written, if it is written.
    pub fn line_exact(&self, path: &str) -> Option<usize> {
        self.by_path.get(path).map(|&i| self.nodes[i].line)
    }

    /// The line of `path`, or of its nearest written parent (`a.b[2].c` → `a.b[2]` → `a.b`
    /// → `a`). `None` when not even the top-level key is written.
    pub fn line(&self, path: &str) -> Option<usize> {
        let mut p = path;
        loop {
            if let Some(line) = self.line_exact(p) {
                return Some(line);
            }
            p = parent(p)?;
        }
    }

    /// The deepest written path whose key, value or header covers the whole byte `range`
    /// (serde's error span); `None` for the top level.
    pub fn path_covering(&self, range: Range<usize>) -> Option<&str> {
        let end = range.end.max(range.start + 1);
        self.nodes
            .iter()
            .filter(|n| {
                n.spans
                    .iter()
                    .any(|s| s.start <= range.start && end <= s.end)
            })
            .max_by_key(|n| depth(&n.path))
            .map(|n| n.path.as_str())
    }

    /// The deepest written path whose key or value covers byte `offset`.
    pub fn path_at(&self, offset: usize) -> Option<&str> {
        self.nodes
            .iter()
            .filter(|n| n.spans.iter().any(|s| s.contains(&offset)))
            .max_by_key(|n| depth(&n.path))
            .map(|n| n.path.as_str())
    }
}

/// 1-based line of a dotted field path such as `configs[2].backoff.cap` in TOML `text`.
///
/// When the path itself is not written (a defaulted field), the line of its nearest written
/// parent is returned, so an error about a missing or defaulted field still points into the
/// right table. `None` when the text is not valid TOML or no prefix of the path is written.
pub fn locate(text: &str, field_path: &str) -> Option<usize> {
    SourceMap::new(text).line(field_path)
}

/// `prefix.key`, or `key` at the top level.
pub fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// `a.b[2].c` → `a.b[2]` → `a.b` → `a` → None.
fn parent(path: &str) -> Option<&str> {
    if path.ends_with(']') {
        return path.rfind('[').map(|i| &path[..i]);
    }
    path.rfind('.').map(|i| &path[..i])
}

fn depth(path: &str) -> usize {
    path.matches('.').count() + path.matches('[').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"name = "x"
duration = "10s"

[load]
kind = "constant"
rate = 5.0

[target.service]
concurrency = 4

[[faults]]
kind = "status"
status = 503

[[faults]]
kind = "reset"
probability = 0.5

[[configs]]
preset = "naive"

[[configs]]
name = "b"
backoff = { kind = "exponential", cap = "1s" }
steps = [
  { at = "0s", rate = 1.0 },
  { at = "5s", rate = 2.0 },
]
"#;

    #[test]
    fn locates_keys_tables_and_array_elements() {
        let m = SourceMap::new(TEXT);
        assert_eq!(m.line("name"), Some(1));
        assert_eq!(m.line("load"), Some(4));
        assert_eq!(m.line("load.rate"), Some(6));
        assert_eq!(m.line("target"), Some(8));
        assert_eq!(m.line("target.service.concurrency"), Some(9));
        assert_eq!(m.line("faults[0]"), Some(11));
        assert_eq!(m.line("faults[1].probability"), Some(17));
        assert_eq!(m.line("configs[1]"), Some(22));
        assert_eq!(m.line("configs[1].backoff.cap"), Some(24));
        assert_eq!(m.line("configs[1].steps[1].rate"), Some(27));
    }

    #[test]
    fn falls_back_to_nearest_parent() {
        assert_eq!(locate(TEXT, "configs[1].backoff.base"), Some(24));
        assert_eq!(locate(TEXT, "configs[1].steps[1]"), Some(27));
        assert_eq!(locate(TEXT, "faults[1].status"), Some(15));
        assert_eq!(locate(TEXT, "configs[0].jitter.kind"), Some(19));
        assert_eq!(locate(TEXT, "gates"), None);
        assert_eq!(locate("not toml = = =", "x"), None);
    }

    #[test]
    fn line_index_agrees_with_counting() {
        let idx = LineIndex::new(TEXT);
        for off in [
            0,
            1,
            10,
            11,
            12,
            40,
            TEXT.len() - 1,
            TEXT.len(),
            TEXT.len() + 5,
        ] {
            assert_eq!(idx.line(off), line_of(TEXT, off), "offset {off}");
        }
    }

    #[test]
    fn finds_path_of_offset() {
        let m = SourceMap::new(TEXT);
        let off = TEXT.find("0.5").unwrap();
        assert_eq!(m.path_at(off), Some("faults[1].probability"));
        let off = TEXT.find("\"1s\"").unwrap();
        assert_eq!(m.path_at(off), Some("configs[1].backoff.cap"));
    }
}
