//! Setting one numeric field of a scenario's TOML text at a dotted path
//! (`load.rate`, `faults[0].for`, `configs[1].max_attempts`), keeping the rest of the file
//! as written. A swept point is then read back through the ordinary scenario loader, so it
//! is validated exactly as a file a person wrote would be, and its errors keep their lines.

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

/// One step of a dotted path: a key, or a 0-based array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// The value to write at a path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NewValue {
    /// A plain number; written as an integer when it is whole and the field is written as
    /// an integer (or not written and `integer` is set), else as a float.
    Number { value: f64, integer: bool },
    /// A duration in seconds, written as a string with a unit the loader reads exactly.
    Seconds(f64),
}

/// Parses `faults[0].for` into its segments.
pub fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    if path.trim().is_empty() {
        return Err("the path is empty; write e.g. load.rate or faults[0].probability".into());
    }
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{path}`: `{part}` is not a key; write e.g. load.rate or faults[0].probability"
            ));
        }
        segs.push(Seg::Key(key.to_string()));
        while !rest.is_empty() {
            let close = rest
                .find(']')
                .ok_or_else(|| format!("`{path}`: unclosed `[` in `{part}`"))?;
            let n = rest[1..close]
                .parse::<usize>()
                .map_err(|_| format!("`{path}`: `{}` is not an index", &rest[..=close]))?;
            segs.push(Seg::Index(n));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(format!("`{path}`: unexpected `{rest}` after an index"));
            }
        }
    }
    Ok(segs)
}

/// Parses TOML text for editing.
pub fn document(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>()
        .map_err(|e| format!("TOML syntax error: {}", e.message().trim()))
}

/// Writes `value` at `segs` into `doc`. Missing tables on the way are created (so
/// `target.service.concurrency` works on a scenario without `[target.service]`); missing
/// array elements are errors. The error names the path.
pub fn set(doc: &mut DocumentMut, segs: &[Seg], value: NewValue) -> Result<(), String> {
    set_in_table(doc.as_table_mut(), segs, value, "")
}

/// The value written at `segs`, if any.
pub fn written<'a>(doc: &'a DocumentMut, segs: &[Seg]) -> Option<&'a Value> {
    enum Node<'a> {
        Item(&'a Item),
        Table(&'a Table),
        Value(&'a Value),
    }
    let mut node = Node::Table(doc.as_table());
    for seg in segs {
        node = match (node, seg) {
            (Node::Table(t), Seg::Key(k)) => Node::Item(t.get(k)?),
            (Node::Item(Item::Table(t)), Seg::Key(k)) => Node::Item(t.get(k)?),
            (Node::Item(Item::ArrayOfTables(a)), Seg::Index(i)) => Node::Table(a.get(*i)?),
            (Node::Item(Item::Value(v)), seg) | (Node::Value(v), seg) => match (v, seg) {
                (Value::InlineTable(t), Seg::Key(k)) => Node::Value(t.get(k)?),
                (Value::Array(a), Seg::Index(i)) => Node::Value(a.get(*i)?),
                _ => return None,
            },
            _ => return None,
        };
    }
    match node {
        Node::Item(Item::Value(v)) | Node::Value(v) => Some(v),
        _ => None,
    }
}

/// Reads the number written at `segs`, if it is written (durations in seconds).
pub fn get(doc: &DocumentMut, segs: &[Seg]) -> Option<f64> {
    match written(doc, segs)? {
        Value::Integer(i) => Some(*i.value() as f64),
        Value::Float(f) => Some(*f.value()),
        Value::String(s) => crate::scenario::units::duration::parse(s.value())
            .ok()
            .map(|d| d.as_secs_f64()),
        _ => None,
    }
}

fn join(prefix: &str, seg: &Seg) -> String {
    match seg {
        Seg::Key(k) if prefix.is_empty() => k.clone(),
        Seg::Key(k) => format!("{prefix}.{k}"),
        Seg::Index(i) => format!("{prefix}[{i}]"),
    }
}

fn set_in_table(t: &mut Table, segs: &[Seg], value: NewValue, at: &str) -> Result<(), String> {
    let Some((Seg::Key(key), rest)) = segs.split_first() else {
        return Err(format!("`{at}` is a table; index it by key"));
    };
    let here = join(at, &segs[0]);
    if rest.is_empty() {
        let old = t.get(key).and_then(Item::as_value);
        let new = encode(old, value, &here)?;
        t.insert(key, Item::Value(new));
        return Ok(());
    }
    if t.get(key).is_none() {
        if matches!(rest[0], Seg::Index(_)) {
            return Err(format!("`{here}` is not written in the scenario"));
        }
        let mut sub = Table::new();
        sub.set_implicit(true);
        t.insert(key, Item::Table(sub));
    }
    let item = t.get_mut(key).expect("present or just inserted");
    set_in_item(item, rest, value, &here)
}

fn set_in_item(item: &mut Item, segs: &[Seg], value: NewValue, at: &str) -> Result<(), String> {
    match (item, &segs[0]) {
        (Item::Table(t), Seg::Key(_)) => set_in_table(t, segs, value, at),
        (Item::ArrayOfTables(a), Seg::Index(i)) => {
            let len = a.len();
            let t = a
                .get_mut(*i)
                .ok_or_else(|| format!("`{at}` has {len} elements; there is no [{i}]"))?;
            let here = join(at, &segs[0]);
            if segs.len() == 1 {
                return Err(format!("`{here}` is a table, not a number"));
            }
            set_in_table(t, &segs[1..], value, &here)
        }
        (Item::Value(v), _) => set_in_value(v, segs, value, at),
        _ => Err(format!(
            "`{at}` cannot be indexed by `{}`",
            join("", &segs[0])
        )),
    }
}

fn set_in_value(v: &mut Value, segs: &[Seg], value: NewValue, at: &str) -> Result<(), String> {
    let here = join(at, &segs[0]);
    match (v, &segs[0]) {
        (Value::InlineTable(t), Seg::Key(key)) => set_in_inline(t, key, &segs[1..], value, &here),
        (Value::Array(a), Seg::Index(i)) => {
            let len = a.len();
            let elem = a
                .get_mut(*i)
                .ok_or_else(|| format!("`{at}` has {len} elements; there is no [{i}]"))?;
            if segs.len() == 1 {
                let new = encode(Some(elem), value, &here)?;
                *elem = new;
                return Ok(());
            }
            set_in_value(elem, &segs[1..], value, &here)
        }
        _ => Err(format!(
            "`{at}` cannot be indexed by `{}`",
            join("", &segs[0])
        )),
    }
}

fn set_in_inline(
    t: &mut InlineTable,
    key: &str,
    rest: &[Seg],
    value: NewValue,
    here: &str,
) -> Result<(), String> {
    if rest.is_empty() {
        let new = encode(t.get(key), value, here)?;
        t.insert(key, new);
        return Ok(());
    }
    if t.get(key).is_none() {
        if matches!(rest[0], Seg::Index(_)) {
            return Err(format!("`{here}` is not written in the scenario"));
        }
        t.insert(key, Value::InlineTable(InlineTable::new()));
    }
    let v = t.get_mut(key).expect("present or just inserted");
    set_in_value(v, rest, value, here)
}

/// The TOML value for `value`, in the type the field is written in.
fn encode(old: Option<&Value>, value: NewValue, at: &str) -> Result<Value, String> {
    match (old, value) {
        (Some(Value::String(_)) | None, NewValue::Seconds(s)) => Ok(Value::from(seconds_text(s))),
        (Some(Value::String(_)), NewValue::Number { .. }) => Err(format!(
            "`{at}` is a duration; give the values a unit, e.g. {at}=5s..30s:5s"
        )),
        (Some(Value::Integer(_) | Value::Float(_)), NewValue::Seconds(_)) => Err(format!(
            "`{at}` is a number, not a duration; give the values without a unit"
        )),
        (Some(Value::Integer(_)), NewValue::Number { value, .. }) if value.fract() == 0.0 => {
            Ok(Value::from(value as i64))
        }
        (None, NewValue::Number { value, integer }) if integer && value.fract() == 0.0 => {
            Ok(Value::from(value as i64))
        }
        (Some(Value::Integer(_) | Value::Float(_)) | None, NewValue::Number { value, .. }) => {
            Ok(Value::from(value))
        }
        (Some(other), _) => Err(format!(
            "`{at}` is {}, not a number",
            match other {
                Value::Boolean(_) => "a boolean",
                Value::Array(_) => "an array",
                Value::InlineTable(_) => "a table",
                _ => "not a number",
            }
        )),
    }
}

/// `s` seconds as the loader reads them back exactly: whole seconds, else whole
/// milliseconds, microseconds or nanoseconds.
pub fn seconds_text(s: f64) -> String {
    for (unit, per_s) in [("s", 1.0), ("ms", 1e3), ("us", 1e6)] {
        let n = s * per_s;
        if (n - n.round()).abs() < 1e-6 {
            return format!("{}{unit}", n.round() as u64);
        }
    }
    format!("{}ns", (s * 1e9).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"name = "x"
duration = "20s"

[load]
kind = "constant"
rate = 200.0

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "5s"
for = "10s"

[[configs]]
preset = "naive"
max_attempts = 3
backoff = { kind = "constant", delay = "10ms" }
"#;

    fn edit(path: &str, v: NewValue) -> Result<String, String> {
        let mut doc = document(TEXT)?;
        set(&mut doc, &parse_path(path)?, v)?;
        Ok(doc.to_string())
    }

    fn num(value: f64) -> NewValue {
        NewValue::Number {
            value,
            integer: false,
        }
    }

    #[test]
    fn parses_paths() {
        assert_eq!(
            parse_path("faults[0].probability").unwrap(),
            vec![
                Seg::Key("faults".into()),
                Seg::Index(0),
                Seg::Key("probability".into())
            ]
        );
        assert!(parse_path("faults[x].probability").is_err());
        assert!(parse_path("load..rate").is_err());
        assert!(parse_path("").is_err());
    }

    #[test]
    fn keeps_the_written_type() {
        let t = edit("load.rate", num(350.0)).unwrap();
        assert!(t.contains("rate = 350.0"), "{t}");
        let t = edit("configs[0].max_attempts", num(5.0)).unwrap();
        assert!(t.contains("max_attempts = 5\n"), "{t}");
        let t = edit("faults[0].for", NewValue::Seconds(2.5)).unwrap();
        assert!(t.contains("for = \"2500ms\""), "{t}");
        let t = edit("configs[0].backoff.delay", NewValue::Seconds(0.02)).unwrap();
        assert!(t.contains("delay = \"20ms\""), "{t}");
    }

    #[test]
    fn adds_missing_fields_and_tables() {
        let t = edit("faults[0].probability", num(0.25)).unwrap();
        assert!(t.contains("probability = 0.25"), "{t}");
        let t = edit(
            "target.service.concurrency",
            NewValue::Number {
                value: 8.0,
                integer: true,
            },
        )
        .unwrap();
        let v: toml::Table = toml::from_str(&t).unwrap();
        assert_eq!(v["target"]["service"]["concurrency"].as_integer(), Some(8));
        assert_eq!(v["target"]["builtin"].as_str(), Some("default"));
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        assert!(edit("faults[3].probability", num(0.1))
            .unwrap_err()
            .contains("no [3]"));
        assert!(edit("faults[0].for", num(3.0))
            .unwrap_err()
            .contains("duration"));
        assert!(edit("load.rate", NewValue::Seconds(1.0))
            .unwrap_err()
            .contains("not a duration"));
        assert!(edit("name", num(1.0)).unwrap_err().contains("unit"));
    }

    #[test]
    fn reads_written_numbers() {
        let doc = document(TEXT).unwrap();
        assert_eq!(get(&doc, &parse_path("load.rate").unwrap()), Some(200.0));
        assert_eq!(get(&doc, &parse_path("faults[0].for").unwrap()), Some(10.0));
        assert_eq!(
            get(&doc, &parse_path("configs[0].backoff.delay").unwrap()),
            Some(0.01)
        );
        assert_eq!(
            get(&doc, &parse_path("faults[0].probability").unwrap()),
            None
        );
    }
}
