//! A recorded series of several named values per time, for faults: a CSV whose header names
//! its columns (`time,503,500` or `time,p50,p99`), or a Prometheus `query_range` answer of
//! several series told apart by a label (`code`, `status`, `grpc_code`, `quantile`, …).
//! A one-value series (`time,rate` or one Prometheus series) is one column named `""`.
//!
//! Rows are the union of the series' times, strictly increasing; a column a Prometheus
//! series leaves out at a time (Prometheus answers no sample where none was recorded) is
//! `None` there, and the fault reading it says what that means.

use std::collections::BTreeMap;

use super::series::{self, Point, TimeForm};
use super::{at, clock, BadLines, RecordingError};

/// The labels that name a series' column, in the order they are looked for.
pub const NAME_LABELS: &[&str] = &[
    "code",
    "status",
    "status_code",
    "grpc_code",
    "grpc_status",
    "quantile",
];

/// A table of values by time.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    pub names: Vec<String>,
    pub rows: Vec<Row>,
    pub skipped: u64,
}

/// One time of the table, the recording's line it was read from, and each column's value.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub t: i128,
    pub line: usize,
    pub values: Vec<Option<f64>>,
}

/// Parses a table: a Prometheus answer when the text starts with `{`, else CSV.
pub fn parse(text: &str, allowed_bad: u64) -> Result<Columns, RecordingError> {
    let mut bad = BadLines::new(allowed_bad);
    let mut columns = if text.trim_start().starts_with('{') {
        prometheus(text, &mut bad)?
    } else {
        csv(text, &mut bad)?
    };
    if columns.rows.is_empty() {
        return Err(RecordingError::whole(
            "holds no points; a series needs at least one time and value",
        ));
    }
    columns.skipped = bad.skipped;
    Ok(columns)
}

/// `time,<name>,<name>…` rows under a header naming the columns; without a header, rows
/// of `time,value` (one column named `""`). `time,rate` and `time,value` name no column.
fn csv(text: &str, bad: &mut BadLines) -> Result<Columns, RecordingError> {
    let mut names: Option<Vec<String>> = None;
    let mut rows: Vec<Row> = Vec::new();
    let mut form = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if names.is_none() {
            if cells[0].eq_ignore_ascii_case("time") {
                let named: Vec<String> = cells[1..].iter().map(|c| c.to_string()).collect();
                let plain = matches!(named.as_slice(), [one] if ["rate", "value", "ratio"]
                    .iter()
                    .any(|w| one.eq_ignore_ascii_case(w)));
                if named.is_empty() || named.iter().any(String::is_empty) {
                    return Err(at(n, "header", "names no column; e.g. `time,503,500`"));
                }
                names = Some(if plain { vec![String::new()] } else { named });
                continue;
            }
            names = Some(vec![String::new()]);
        }
        let width = names.as_ref().map_or(1, Vec::len);
        match csv_row(n, &cells, width, &mut form, rows.last()) {
            Ok(r) => rows.push(r),
            Err(e) => bad.skip(e)?,
        }
    }
    Ok(Columns {
        names: names.unwrap_or_else(|| vec![String::new()]),
        rows,
        skipped: 0,
    })
}

fn csv_row(
    n: usize,
    cells: &[&str],
    width: usize,
    form: &mut Option<TimeForm>,
    prev: Option<&Row>,
) -> Result<Row, RecordingError> {
    if cells.len() != width + 1 {
        return Err(at(
            n,
            "row",
            format!(
                "has {} cells; the header gives a time and {width} value(s)",
                cells.len()
            ),
        ));
    }
    let this = series::time_form(cells[0]);
    let form = *form.get_or_insert(this);
    if this != form {
        return Err(at(
            n,
            "time",
            format!(
                "`{}` is written differently from the first row's time; keep one form",
                cells[0]
            ),
        ));
    }
    let t = match form {
        TimeForm::Rfc3339 => clock::rfc3339(cells[0]),
        TimeForm::Seconds => clock::seconds(cells[0]),
    }
    .map_err(|m| at(n, "time", m))?;
    let values = cells[1..]
        .iter()
        .map(|c| match c.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
            _ => Err(at(n, "value", format!("`{c}` is not a finite number ≥ 0"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    series::in_order(n, t, prev.map(|r| Point { t: r.t, rate: 0.0 }).as_ref())?;
    Ok(Row { t, line: n, values })
}

/// Every series of the answer is a column, named by its first label of [`NAME_LABELS`]
/// (`""` when it is the only series and has none).
fn prometheus(text: &str, bad: &mut BadLines) -> Result<Columns, RecordingError> {
    let result = series::matrices(text)?;
    if result.is_empty() {
        return Err(RecordingError::whole("holds 0 series"));
    }
    let mut names = Vec::with_capacity(result.len());
    for m in &result {
        let name = NAME_LABELS
            .iter()
            .find_map(|l| m.metric.get(*l).cloned())
            .unwrap_or_default();
        if result.len() > 1 && (name.is_empty() || names.contains(&name)) {
            return Err(RecordingError::whole(format!(
                "holds {} series not told apart by a label ({}): aggregate by one, e.g. \
                 `sum by (code) (rate(http_requests_total{{code=~\"5..\"}}[1m]))`",
                result.len(),
                NAME_LABELS.join(", ")
            )));
        }
        names.push(name);
    }
    // (time → (line, values)) over all series.
    let mut table: BTreeMap<i128, (usize, Vec<Option<f64>>)> = BTreeMap::new();
    for (k, m) in result.iter().enumerate() {
        let lines = series::pair_lines(text, k);
        let mut prev: Option<Point> = None;
        for (j, (ts, value)) in m.values.iter().enumerate() {
            let n = lines.get(j).copied().unwrap_or(1);
            let point = series::sample(n, ts, value)
                .and_then(|p| series::in_order(n, p.t, prev.as_ref()).map(|()| p));
            match point {
                Ok(p) => {
                    prev = Some(p);
                    let row = table
                        .entry(p.t)
                        .or_insert_with(|| (n, vec![None; result.len()]));
                    row.1[k] = Some(p.rate);
                }
                Err(e) => bad.skip(e)?,
            }
        }
    }
    Ok(Columns {
        names,
        rows: table
            .into_iter()
            .map(|(t, (line, values))| Row { t, line, values })
            .collect(),
        skipped: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    #[test]
    fn a_csv_header_names_the_columns() {
        let c = parse("time,503,500\n0,0.1,0\n5,0.25,0.5\n", 0).unwrap();
        assert_eq!(c.names, vec!["503", "500"]);
        assert_eq!(c.rows[1].t, 5 * S);
        assert_eq!(c.rows[1].line, 3);
        assert_eq!(c.rows[1].values, vec![Some(0.25), Some(0.5)]);
        let plain = parse("0,0.1\n1,0.2\n", 0).unwrap();
        assert_eq!(plain.names, vec![""]);
        assert_eq!(parse("time,ratio\n0,1\n", 0).unwrap().names, vec![""]);
        let e = parse("time,503,500\n0,0.1\n", 0).unwrap_err();
        assert_eq!((e.line(), e.to_string().starts_with("row:")), (2, true));
        let e = parse("time,p50\n0,x\n", 0).unwrap_err();
        assert!(e.to_string().starts_with("value: `x`"), "{e}");
        let e = parse("time,p50\n1,1\n0,1\n", 0).unwrap_err();
        assert_eq!(e.line(), 3, "{e}");
    }

    #[test]
    fn prometheus_series_are_columns_by_label() {
        let text = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[\n\
                    {\"metric\":{\"code\":\"503\"},\"values\":[[10,\"0.5\"],[11,\"0.25\"]]},\n\
                    {\"metric\":{\"code\":\"500\"},\"values\":[[11,\"0.1\"]]}]}}";
        let c = parse(text, 0).unwrap();
        assert_eq!(c.names, vec!["503", "500"]);
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].values, vec![Some(0.5), None]);
        assert_eq!(c.rows[1].values, vec![Some(0.25), Some(0.1)]);
        let same = text.replace("\"500\"", "\"503\"");
        assert!(parse(&same, 0)
            .unwrap_err()
            .to_string()
            .contains("told apart"));
        let bad = text.replace("\"0.1\"", "\"-1\"");
        let e = parse(&bad, 0).unwrap_err();
        assert_eq!(e.line(), 3, "{e}");
    }
}
