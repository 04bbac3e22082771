//! A recorded rate series: a CSV of `time,rate` rows or a Prometheus `query_range` answer
//! (as `curl …/api/v1/query_range` returns it), each as points of (time, rate) with times
//! strictly increasing.

use serde::Deserialize;

use super::{at, clock, BadLines, RecordingError};

/// One sample: a wall-clock time in nanoseconds and the rate (per second) from it on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub t: i128,
    pub rate: f64,
}

/// The points of a series, and how many bad lines the policy skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub points: Vec<Point>,
    pub skipped: u64,
}

/// Parses a series: a Prometheus answer when the text starts with `{`, else CSV.
pub fn parse(text: &str, allowed_bad: u64) -> Result<Series, RecordingError> {
    let mut bad = BadLines::new(allowed_bad);
    let points = if text.trim_start().starts_with('{') {
        prometheus(text, &mut bad)?
    } else {
        csv(text, &mut bad)?
    };
    if points.is_empty() {
        return Err(RecordingError::whole(
            "holds no points; a series needs at least one (time, rate)",
        ));
    }
    Ok(Series {
        points,
        skipped: bad.skipped,
    })
}

/// How a CSV's time column is written, fixed by its first row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum TimeForm {
    Rfc3339,
    Seconds,
}

pub(super) fn time_form(s: &str) -> TimeForm {
    if s.len() >= 10 && s.as_bytes()[4] == b'-' {
        TimeForm::Rfc3339
    } else {
        TimeForm::Seconds
    }
}

/// `time,rate` rows; an optional header `time,rate`, blank lines and `#` comments.
fn csv(text: &str, bad: &mut BadLines) -> Result<Vec<Point>, RecordingError> {
    let mut points: Vec<Point> = Vec::new();
    let mut form = None;
    let mut header_allowed = true;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if std::mem::take(&mut header_allowed)
            && cells.len() == 2
            && cells[0].eq_ignore_ascii_case("time")
            && cells[1].eq_ignore_ascii_case("rate")
        {
            continue;
        }
        match csv_row(n, &cells, &mut form, points.last()) {
            Ok(p) => points.push(p),
            Err(e) => bad.skip(e)?,
        }
    }
    Ok(points)
}

fn csv_row(
    n: usize,
    cells: &[&str],
    form: &mut Option<TimeForm>,
    prev: Option<&Point>,
) -> Result<Point, RecordingError> {
    if cells.len() != 2 {
        return Err(at(
            n,
            "row",
            format!(
                "has {} cells; a row is `time,rate`, e.g. `2026-12-03T14:02:00Z,800` or `0,800`",
                cells.len()
            ),
        ));
    }
    let this = time_form(cells[0]);
    let form = *form.get_or_insert(this);
    if this != form {
        return Err(at(
            n,
            "time",
            format!(
                "`{}` is written differently from the first row's time; keep one form \
                 (RFC 3339 times, or numbers of seconds)",
                cells[0]
            ),
        ));
    }
    let t = match form {
        TimeForm::Rfc3339 => clock::rfc3339(cells[0]),
        TimeForm::Seconds => clock::seconds(cells[0]),
    }
    .map_err(|m| at(n, "time", m))?;
    let rate = rate_of(cells[1]).map_err(|m| at(n, "rate", m))?;
    in_order(n, t, prev)?;
    Ok(Point { t, rate })
}

pub(super) fn rate_of(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r >= 0.0 => Ok(r),
        _ => Err(format!(
            "`{s}` is not a rate (a finite number of requests per second, ≥ 0)"
        )),
    }
}

pub(super) fn in_order(n: usize, t: i128, prev: Option<&Point>) -> Result<(), RecordingError> {
    match prev {
        Some(p) if t <= p.t => Err(at(
            n,
            "time",
            format!(
                "is {} s, not after the previous point's {} s; a series is sorted by time",
                t as f64 / 1e9,
                p.t as f64 / 1e9
            ),
        )),
        _ => Ok(()),
    }
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    data: Option<Data>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Matrix>,
}

/// One series of a `query_range` answer: its labels and its `[time, "value"]` pairs.
#[derive(Deserialize)]
pub(super) struct Matrix {
    #[serde(default)]
    pub(super) metric: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub(super) values: Vec<(serde_json::Value, serde_json::Value)>,
}

/// The series of a `query_range` answer (a `matrix`), however many it holds.
pub(super) fn matrices(text: &str) -> Result<Vec<Matrix>, RecordingError> {
    let answer: Answer = serde_json::from_str(text).map_err(|e| {
        at(
            e.line().max(1),
            "json",
            format!("not a Prometheus query_range answer: {e}"),
        )
    })?;
    if answer.status != "success" {
        return Err(RecordingError::whole(format!(
            "the answer's status is `{}`, not `success`",
            answer.status
        )));
    }
    let data = answer
        .data
        .ok_or_else(|| RecordingError::whole("the answer has no `data`"))?;
    if data.result_type != "matrix" {
        return Err(RecordingError::whole(format!(
            "the answer's resultType is `{}`; a range query (`/api/v1/query_range`) answers \
             `matrix`",
            data.result_type
        )));
    }
    Ok(data.result)
}

/// A `query_range` answer with exactly one series.
fn prometheus(text: &str, bad: &mut BadLines) -> Result<Vec<Point>, RecordingError> {
    let result = matrices(text)?;
    let [series] = result.as_slice() else {
        return Err(RecordingError::whole(format!(
            "holds {} series; stormrig replays exactly one: aggregate in the query, e.g. \
             `sum(rate(http_requests_total[1m]))`",
            result.len()
        )));
    };
    let lines = pair_lines(text, 0);
    let mut points: Vec<Point> = Vec::with_capacity(series.values.len());
    for (k, (ts, value)) in series.values.iter().enumerate() {
        let n = lines.get(k).copied().unwrap_or(1);
        let point = (|| {
            let p = sample(n, ts, value)?;
            in_order(n, p.t, points.last())?;
            Ok(p)
        })();
        match point {
            Ok(p) => points.push(p),
            Err(e) => bad.skip(e)?,
        }
    }
    Ok(points)
}

/// One `[time, "value"]` pair of a `query_range` answer at line `n`: a unix time and a
/// finite value ≥ 0.
pub(super) fn sample(
    n: usize,
    ts: &serde_json::Value,
    value: &serde_json::Value,
) -> Result<Point, RecordingError> {
    let t = match ts {
        serde_json::Value::Number(x) => clock::seconds(&x.to_string()),
        other => Err(format!("`{other}` is not a unix timestamp")),
    }
    .map_err(|m| at(n, "values[].time", m))?;
    let rate = match value {
        serde_json::Value::String(s) => rate_of(s),
        other => Err(format!("`{other}` is not a quoted sample value")),
    }
    .map_err(|m| at(n, "values[].value", m))?;
    Ok(Point { t, rate })
}

/// The line each `[time, "value"]` pair of the `k`-th (from 0) `"values"` array starts on,
/// by a scan that skips strings (serde_json keeps no positions of parsed values).
pub(super) fn pair_lines(text: &str, k: usize) -> Vec<usize> {
    let Some((start, _)) = text.match_indices("\"values\"").nth(k) else {
        return Vec::new();
    };
    let mut line = 1 + text[..start].matches('\n').count();
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    let mut out = Vec::new();
    for b in text[start + 8..].bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'\n' => line += 1,
            b'"' => in_string = true,
            b'[' => {
                depth += 1;
                if depth == 2 {
                    out.push(line);
                }
            }
            b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    #[test]
    fn csv_in_every_time_form() {
        let rel = parse("time,rate\n0,800\n60,1000.5\n\n# peak\n120,1400\n", 0).unwrap();
        assert_eq!(
            rel.points,
            vec![
                Point { t: 0, rate: 800.0 },
                Point {
                    t: 60 * S,
                    rate: 1000.5
                },
                Point {
                    t: 120 * S,
                    rate: 1400.0
                }
            ]
        );
        let unix = parse("1796306520,800\n1796306580,1000\n", 0).unwrap();
        assert_eq!(unix.points[1].t - unix.points[0].t, 60 * S);
        let rfc = parse(
            "time,rate\n2026-12-03T14:02:00Z,800\n2026-12-03T14:03:00+00:00,900\n",
            0,
        )
        .unwrap();
        assert_eq!(rfc.points[0].t, 1_796_306_520 * S);
        assert_eq!(rfc.points[1].t - rfc.points[0].t, 60 * S);
    }

    #[test]
    fn csv_refusals_name_line_and_column() {
        let e = parse("time,rate\n0,800\n10,fast\n", 0).unwrap_err();
        assert_eq!(e.line(), 3);
        assert!(e.to_string().starts_with("rate: `fast`"), "{e}");
        let e = parse("0,800\n10,900\n5,900\n", 0).unwrap_err();
        assert_eq!(
            (e.line(), e.to_string().starts_with("time:")),
            (3, true),
            "{e}"
        );
        assert!(e.to_string().contains("not after"), "{e}");
        let e = parse("0,800\n10,900\n10,900\n", 0).unwrap_err();
        assert_eq!(e.line(), 3, "a repeated time is out of order");
        let e = parse("0,800,1\n", 0).unwrap_err();
        assert!(e.to_string().contains("3 cells"), "{e}");
        let e = parse("0,800\n2026-12-03T14:02:00Z,1\n", 0).unwrap_err();
        assert_eq!(e.line(), 2);
        let e = parse("0,-1\n", 0).unwrap_err();
        assert!(e.to_string().starts_with("rate:"), "{e}");
        let e = parse("time,rate\n# nothing\n", 0).unwrap_err();
        assert!(e.to_string().contains("no points"), "{e}");
        // A header past the first row is a bad row.
        assert_eq!(parse("0,1\ntime,rate\n", 0).unwrap_err().line(), 2);
    }

    #[test]
    fn bad_lines_are_skipped_up_to_the_ceiling_and_counted() {
        let text = "0,1\nx,2\n2,3\ny,4\n4,5\n";
        let s = parse(text, 2).unwrap();
        assert_eq!((s.points.len(), s.skipped), (3, 2));
        let e = parse(text, 1).unwrap_err();
        assert_eq!(e.line(), 4);
        assert!(e.to_string().contains("1 bad lines skipped"), "{e}");
    }

    fn answer(result: &str) -> String {
        format!(r#"{{"status":"success","data":{{"resultType":"matrix","result":[{result}]}}}}"#)
    }

    #[test]
    fn a_prometheus_answer_with_one_series() {
        let one =
            r#"{"metric":{"job":"api"},"values":[[1796306520,"800"],[1796306535.5,"812.25"]]}"#;
        let s = parse(&answer(one), 0).unwrap();
        assert_eq!(
            s.points,
            vec![
                Point {
                    t: 1_796_306_520 * S,
                    rate: 800.0
                },
                Point {
                    t: 1_796_306_535 * S + S / 2,
                    rate: 812.25
                }
            ]
        );
    }

    #[test]
    fn a_prometheus_answer_is_refused_by_series_count_and_point_line() {
        let one = r#"{"metric":{},"values":[[1,"1"]]}"#;
        let e = parse(&answer(&[one, one, one].join(",")), 0).unwrap_err();
        assert!(e.to_string().contains("holds 3 series"), "{e}");
        let e = parse(&answer(""), 0).unwrap_err();
        assert!(e.to_string().contains("holds 0 series"), "{e}");
        let pretty = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[\n\
                      {\"metric\":{\"a\":\"[x]\"},\"values\":[\n[1,\"1\"],\n[2,\"NaN\"]\n]}]}}";
        let e = parse(pretty, 0).unwrap_err();
        assert_eq!(e.line(), 4, "{e}");
        assert!(e.to_string().starts_with("values[].value: `NaN`"), "{e}");
        let e = parse(r#"{"status":"error","errorType":"bad_data"}"#, 0).unwrap_err();
        assert!(e.to_string().contains("`error`"), "{e}");
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert!(parse(vector, 0).unwrap_err().to_string().contains("matrix"));
        let e = parse("{\"status\":\n\"success\",", 0).unwrap_err();
        assert_eq!(e.line(), 2, "{e}");
    }
}
