//! nginx access logs as a trace: each line one request, at its logged instant, to its path.
//!
//! Two formats. `combined`, nginx's predefined one (`$remote_addr - $remote_user
//! [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`),
//! stamps a line to the second only: the n requests of one second are spread evenly within
//! it, request i (from 0, in log order) at the middle of its slice, `second + (i + ½)/n`, so
//! every request stays inside its own logged second. A JSON `log_format` with `$msec` stamps
//! to the millisecond, kept as is.
//!
//! nginx writes a line when it has sent the response (`ngx_http_log_handler` runs in the
//! log phase, after the request is finalized), so both stamps are completion instants; for
//! the short requests of a busy API they differ from arrivals by the response time.

use super::fold::{Fold, Who};
use super::line::{request_path, Line};
use super::{at, clock, BadLines, RecordingError};

/// The access log formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    NginxCombined,
    NginxJson,
    /// Envoy's default access log format ([`super::proxies`]).
    Envoy,
    /// AWS Application Load Balancer access log entries ([`super::proxies`]).
    AwsAlb,
}

impl Format {
    pub const NAMES: &'static [&'static str] =
        &["nginx-combined", "nginx-json", "envoy", "aws-alb"];

    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "nginx-combined" => Some(Format::NginxCombined),
            "nginx-json" => Some(Format::NginxJson),
            "envoy" => Some(Format::Envoy),
            "aws-alb" => Some(Format::AwsAlb),
            _ => None,
        }
    }

    /// Whether lines are stamped with the request's start but written at its end, so the
    /// log is sorted by start rather than refused out of order.
    fn sorted_by_start(self) -> bool {
        matches!(self, Format::Envoy | Format::AwsAlb)
    }
}

/// The requests of a log: absolute instants (ns since the Unix epoch, non-decreasing), the
/// class of each (by its path), the replay's t = 0, and the bad lines skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub origin: i128,
    pub times: Vec<i128>,
    pub classes: Vec<u16>,
    pub skipped: u64,
    /// Retries folded into their first attempt ([`super::fold`]).
    pub folded: u64,
}

/// Parses the log; `class_of` maps a request's path to its class, `None` refusing the line.
pub fn parse(
    text: &str,
    format: Format,
    allowed_bad: u64,
    class_of: &dyn Fn(&str) -> Option<u16>,
) -> Result<Trace, RecordingError> {
    parse_folding(text, format, allowed_bad, class_of, &Fold::default())
}

/// [`parse`], with the log's retries folded into their first attempt as `fold` says.
pub fn parse_folding(
    text: &str,
    format: Format,
    allowed_bad: u64,
    class_of: &dyn Fn(&str) -> Option<u16>,
    fold: &Fold,
) -> Result<Trace, RecordingError> {
    let mut bad = BadLines::new(allowed_bad);
    let mut times: Vec<i128> = Vec::new();
    let mut classes: Vec<u16> = Vec::new();
    let mut who: Vec<Who> = Vec::new();
    // combined: the requests of the current second, spread when it ends.
    let mut second: Option<(i128, usize)> = None;
    let spread = |times: &mut Vec<i128>, (sec, first): (i128, usize)| {
        let n = (times.len() - first) as i128;
        for (i, t) in times[first..].iter_mut().enumerate() {
            *t = sec + (2 * i as i128 + 1) * 1_000_000_000 / (2 * n);
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let parsed = match format {
            Format::NginxCombined => combined(n, raw),
            Format::NginxJson => json(n, raw, fold.key.as_deref()),
            Format::Envoy => super::proxies::envoy(n, raw),
            Format::AwsAlb => super::proxies::alb(n, raw),
        }
        .and_then(|line| {
            if let (Some(&last), false) = (times.last(), format.sorted_by_start()) {
                let floor = match second {
                    Some((sec, _)) => sec,
                    None => last,
                };
                if line.t < floor {
                    return Err(at(
                        n,
                        time_column(format),
                        format!(
                            "is {:.3} s before the previous line; an access log is in time \
                             order",
                            (floor - line.t) as f64 / 1e9
                        ),
                    ));
                }
            }
            let class = class_of(line.path).ok_or_else(|| {
                at(
                    n,
                    "request",
                    format!(
                        "the path `{}` starts with no request class's path",
                        line.path
                    ),
                )
            })?;
            Ok((line, class))
        });
        match parsed {
            Ok((line, class)) => {
                let t = line.t;
                if fold.any() {
                    who.push(Who {
                        client: line.client,
                        path: line.path.to_string(),
                        failed: super::fold::failed(line.status),
                        key: line.key,
                    });
                }
                if format == Format::NginxCombined {
                    match second {
                        Some((sec, _)) if sec == t => {}
                        Some(s) => {
                            spread(&mut times, s);
                            second = Some((t, times.len()));
                        }
                        None => second = Some((t, times.len())),
                    }
                }
                times.push(t);
                classes.push(class);
            }
            Err(e) => bad.skip(e)?,
        }
    }
    if let Some(s) = second {
        spread(&mut times, s);
    }
    let folded = order_and_fold(format, fold, &mut times, &mut classes, who);
    let origin = match (format, second, times.first()) {
        (_, _, None) => {
            return Err(RecordingError::whole(
                "holds no requests; a trace needs at least one line",
            ))
        }
        // The start of the first line's second: the replay's seconds are the log's.
        (Format::NginxCombined, _, Some(&t)) => t - t.rem_euclid(1_000_000_000),
        (_, _, Some(&t)) => t,
    };
    Ok(Trace {
        origin,
        times,
        classes,
        skipped: bad.skipped,
        folded,
    })
}

/// Sorts a log written at each request's end by start (Envoy, ALB), then folds its
/// retries as `fold` says; returns how many were folded.
fn order_and_fold(
    format: Format,
    fold: &Fold,
    times: &mut Vec<i128>,
    classes: &mut Vec<u16>,
    mut who: Vec<Who>,
) -> u64 {
    if format.sorted_by_start() {
        let mut order: Vec<usize> = (0..times.len()).collect();
        order.sort_by_key(|&i| times[i]);
        *times = order.iter().map(|&i| times[i]).collect();
        *classes = order.iter().map(|&i| classes[i]).collect();
        if fold.any() {
            who = order.iter().map(|&i| who[i].clone()).collect();
        }
    }
    if !fold.any() {
        return 0;
    }
    let (keep, folded) = super::fold::fold(times, &who, fold);
    let mut k = keep.iter();
    times.retain(|_| *k.next().unwrap_or(&true));
    let mut k = keep.iter();
    classes.retain(|_| *k.next().unwrap_or(&true));
    folded
}

fn time_column(format: Format) -> &'static str {
    match format {
        Format::NginxCombined => "time_local",
        Format::NginxJson => "msec",
        Format::Envoy => "start_time",
        Format::AwsAlb => "request_creation_time",
    }
}

/// `addr - user [time_local] "METHOD target PROTOCOL" status bytes "referer" "agent"`.
fn combined(n: usize, line: &str) -> Result<Line<'_>, RecordingError> {
    let (open, close) = match (line.find('['), line.find(']')) {
        (Some(o), Some(c)) if o < c => (o, c),
        _ => {
            return Err(at(
                n,
                "time_local",
                "no `[time_local]`; is this the nginx `combined` format?",
            ))
        }
    };
    let t = clock::time_local(&line[open + 1..close]).map_err(|m| at(n, "time_local", m))?;
    let rest = line[close + 1..]
        .strip_prefix(" \"")
        .ok_or_else(|| at(n, "request", "no quoted request after the time"))?;
    let end = rest
        .find('"')
        .ok_or_else(|| at(n, "request", "the quoted request is not closed"))?;
    let path = request_path(n, &rest[..end])?;
    let status = rest[end + 1..].split_whitespace().next().unwrap_or("");
    if status.len() != 3 || !status.bytes().all(|b| b.is_ascii_digit()) {
        return Err(at(
            n,
            "status",
            format!("`{status}` is not a three-digit status"),
        ));
    }
    Ok(Line {
        t,
        path,
        client: line.split(' ').next().unwrap_or("").to_string(),
        status: status.parse().unwrap_or(0),
        key: None,
    })
}

/// One JSON object per line with `msec` (seconds with milliseconds, as a string or a
/// number) and, for mapping to classes, `request_uri`; for folding retries, `remote_addr`,
/// `status` and the field named `key`.
fn json<'a>(n: usize, line: &'a str, key: Option<&str>) -> Result<Line<'a>, RecordingError> {
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(line).map_err(|e| at(n, "json", format!("not a JSON object: {e}")))?;
    let msec = match object.get("msec") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(x)) => x.to_string(),
        Some(other) => return Err(at(n, "msec", format!("`{other}` is not $msec"))),
        None => {
            return Err(at(
                n,
                "msec",
                "missing; the log_format must log \"msec\":\"$msec\"",
            ))
        }
    };
    let t = clock::seconds(&msec).map_err(|m| at(n, "msec", m))?;
    // The path is borrowed from the line, where serde_json found it unescaped: `request_uri`
    // is a URI, which JSON escaping leaves alone.
    let path = match object.get("request_uri") {
        Some(serde_json::Value::String(s)) => {
            let quoted = format!("\"{s}\"");
            match line.find(&quoted) {
                Some(i) => &line[i + 1..i + 1 + s.len()],
                None => {
                    return Err(at(
                        n,
                        "request_uri",
                        "holds escaped characters; a request URI has none",
                    ))
                }
            }
        }
        Some(other) => return Err(at(n, "request_uri", format!("`{other}` is not a path"))),
        None => "",
    };
    let text = |name: &str| match object.get(name) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(x)) => Some(x.to_string()),
        _ => None,
    };
    Ok(Line {
        t,
        path,
        client: text("remote_addr").unwrap_or_default(),
        status: text("status").and_then(|s| s.parse().ok()).unwrap_or(200),
        key: key.and_then(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;
    const T0: i128 = 1_796_306_520 * S;

    fn one_class(_: &str) -> Option<u16> {
        Some(0)
    }

    fn combined_line(time: &str, request: &str) -> String {
        format!("127.0.0.1 - - [03/Dec/2026:{time} +0000] \"{request}\" 200 612 \"-\" \"curl/8.5\"")
    }

    #[test]
    fn combined_spreads_each_second_evenly() {
        let log = [
            combined_line("14:02:00", "GET /a HTTP/1.1"),
            combined_line("14:02:00", "POST /b?x=1 HTTP/1.1"),
            combined_line("14:02:02", "GET / HTTP/1.1"),
            combined_line("14:02:02", "GET / HTTP/1.1"),
            combined_line("14:02:02", "GET / HTTP/1.1"),
            combined_line("14:02:02", "GET / HTTP/1.1"),
        ]
        .join("\n");
        let t = parse(&log, Format::NginxCombined, 0, &one_class).unwrap();
        assert_eq!(t.origin, T0);
        let rel: Vec<i128> = t.times.iter().map(|x| x - T0).collect();
        assert_eq!(
            rel,
            vec![
                S / 4,
                3 * S / 4,
                2 * S + S / 8,
                2 * S + 3 * S / 8,
                2 * S + 5 * S / 8,
                2 * S + 7 * S / 8
            ]
        );
    }

    #[test]
    fn json_keeps_milliseconds_and_maps_paths() {
        let log = "{\"msec\":\"1796306520.125\",\"request_method\":\"GET\",\"request_uri\":\"/api/orders?id=1\"}\n\
                   {\"msec\":1796306520.5,\"request_uri\":\"/health\"}\n";
        let class_of = |p: &str| -> Option<u16> {
            if p.starts_with("/api/") {
                Some(1)
            } else if p.starts_with("/health") {
                Some(0)
            } else {
                None
            }
        };
        let t = parse(log, Format::NginxJson, 0, &class_of).unwrap();
        assert_eq!(t.origin, T0 + S / 8);
        assert_eq!(t.times, vec![T0 + S / 8, T0 + S / 2]);
        assert_eq!(t.classes, vec![1, 0]);
        let e = parse(
            "{\"msec\":\"1.0\",\"request_uri\":\"/other\"}",
            Format::NginxJson,
            0,
            &class_of,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("request: the path `/other`"),
            "{e}"
        );
    }

    #[test]
    fn bad_lines_name_line_and_column() {
        let cases: [(Format, String, usize, &str); 7] = [
            (
                Format::NginxCombined,
                format!(
                    "{}\n{}",
                    combined_line("14:02:01", "GET / HTTP/1.1"),
                    combined_line("14:02:00", "GET / HTTP/1.1")
                ),
                2,
                "time_local: is 1.000 s before",
            ),
            (
                Format::NginxCombined,
                combined_line("14:61:00", "GET / HTTP/1.1"),
                1,
                "time_local:",
            ),
            (
                Format::NginxCombined,
                combined_line("14:02:00", "-"),
                1,
                "request: `-`",
            ),
            (
                Format::NginxCombined,
                "garbage".to_string(),
                1,
                "time_local: no `[time_local]`",
            ),
            (
                Format::NginxJson,
                "{\"msec\":\"2.000\"}\n\n{\"msec\":\"1.999\"}".to_string(),
                3,
                "msec: is 0.001 s before",
            ),
            (
                Format::NginxJson,
                "{\"time\":1}".to_string(),
                1,
                "msec: missing",
            ),
            (Format::NginxJson, "{\"msec\":".to_string(), 1, "json:"),
        ];
        for (format, log, line, start) in cases {
            let e = parse(&log, format, 0, &one_class).unwrap_err();
            assert_eq!(e.line(), line, "{e}");
            assert!(e.to_string().starts_with(start), "{e} / {start}");
        }
        let e = parse("\n\n", Format::NginxJson, 0, &one_class).unwrap_err();
        assert!(e.to_string().contains("no requests"), "{e}");
    }

    #[test]
    fn skipped_lines_are_counted_and_bounded() {
        let log =
            "{\"msec\":\"1.0\"}\nnope\n{\"msec\":\"2.0\"}\n{\"msec\":\"1.5\"}\n{\"msec\":\"3.0\"}";
        let t = parse(log, Format::NginxJson, 2, &one_class).unwrap();
        assert_eq!((t.times.len(), t.skipped), (3, 2));
        assert_eq!(
            parse(log, Format::NginxJson, 1, &one_class)
                .unwrap_err()
                .line(),
            4
        );
    }
}
