//! Wall-clock stamps as recordings write them, to whole nanoseconds since the Unix epoch:
//! RFC 3339 (a CSV export), nginx's `$time_local` and `$msec`, and plain numbers. Parsed by
//! hand (digits only, no locale) so that a stamp is read the same way on every machine and
//! a malformed one says which part is wrong.

/// Nanoseconds in a second.
const NS: i128 = 1_000_000_000;

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian), the classic
/// era-based formula: exact for every year a log can hold.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn digits(s: &str, what: &str) -> Result<u32, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 4 {
        return Err(format!("`{s}` is not the {what}"));
    }
    s.parse().map_err(|_| format!("`{s}` is not the {what}"))
}

/// A civil date and time with an offset east of UTC in seconds, checked field by field.
#[allow(clippy::too_many_arguments)]
fn civil(
    y: u32,
    mo: u32,
    d: u32,
    h: u32,
    mi: u32,
    s: u32,
    frac_ns: u32,
    offset_s: i64,
) -> Result<i128, String> {
    if !(1..=12).contains(&mo) {
        return Err(format!("month {mo} is outside 1..12"));
    }
    if d == 0 || d > days_in_month(y.into(), mo) {
        return Err(format!("day {d} is not in month {mo} of {y}"));
    }
    if h > 23 || mi > 59 || s > 60 {
        return Err(format!("{h:02}:{mi:02}:{s:02} is not a time of day"));
    }
    let days = days_from_civil(y.into(), mo, d);
    let secs = days * 86_400 + i64::from(h * 3600 + mi * 60 + s) - offset_s;
    Ok(i128::from(secs) * NS + i128::from(frac_ns))
}

/// `±HH:MM` or `±HHMM` as seconds east of UTC.
fn offset(s: &str) -> Result<i64, String> {
    let bad = || format!("`{s}` is not a UTC offset such as +02:00 or Z");
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => return Err(bad()),
    };
    let rest = rest.replace(':', "");
    if rest.len() != 4 {
        return Err(bad());
    }
    let h = digits(&rest[..2], "offset's hours").map_err(|_| bad())?;
    let m = digits(&rest[2..], "offset's minutes").map_err(|_| bad())?;
    if h > 23 || m > 59 {
        return Err(bad());
    }
    Ok(sign * i64::from(h * 3600 + m * 60))
}

/// Up to nine digits of a fraction of a second, as nanoseconds.
fn fraction(s: &str) -> Result<u32, String> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`.{s}` is not a fraction of a second (1 to 9 digits)"
        ));
    }
    let n: u32 = s.parse().map_err(|_| format!("`.{s}` is not a fraction"))?;
    Ok(n * 10u32.pow(9 - s.len() as u32))
}

/// RFC 3339: `2026-12-03T14:02:00Z`, `2026-12-03T14:02:00.250+01:00` (a space for the `T`
/// is accepted, as RFC 3339 allows).
pub fn rfc3339(s: &str) -> Result<i128, String> {
    let bad = || format!("`{s}` is not an RFC 3339 time such as 2026-12-03T14:02:00Z");
    if s.len() < 20 || !s.is_char_boundary(10) || !s.is_char_boundary(19) {
        return Err(bad());
    }
    let (date, rest) = s.split_at(10);
    let sep = rest.as_bytes()[0];
    if !matches!(sep, b'T' | b't' | b' ') {
        return Err(bad());
    }
    let (time, zone) = rest[1..].split_at(8);
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.split(':').collect();
    if d.len() != 3 || t.len() != 3 || d[0].len() != 4 {
        return Err(bad());
    }
    let (frac, zone) = match zone.strip_prefix('.') {
        Some(z) => {
            let end = z.find(|c: char| !c.is_ascii_digit()).unwrap_or(z.len());
            (fraction(&z[..end])?, &z[end..])
        }
        None => (0, zone),
    };
    let off = if zone.eq_ignore_ascii_case("z") {
        0
    } else {
        offset(zone)?
    };
    civil(
        digits(d[0], "year")?,
        digits(d[1], "month")?,
        digits(d[2], "day")?,
        digits(t[0], "hour")?,
        digits(t[1], "minute")?,
        digits(t[2], "second")?,
        frac,
        off,
    )
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// nginx's `$time_local`: `03/Dec/2026:14:02:00 +0000` (English month names whatever the
/// locale: nginx formats it itself, `ngx_http_log_module`'s `ngx_cached_http_log_time`).
pub fn time_local(s: &str) -> Result<i128, String> {
    let bad = || format!("`{s}` is not a $time_local such as 03/Dec/2026:14:02:00 +0000");
    let (stamp, zone) = s.split_once(' ').ok_or_else(bad)?;
    let parts: Vec<&str> = stamp.split(['/', ':']).collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    let month = MONTHS
        .iter()
        .position(|m| *m == parts[1])
        .ok_or_else(|| format!("`{}` is not a month name (Jan..Dec)", parts[1]))?;
    civil(
        digits(parts[2], "year")?,
        month as u32 + 1,
        digits(parts[0], "day")?,
        digits(parts[3], "hour")?,
        digits(parts[4], "minute")?,
        digits(parts[5], "second")?,
        0,
        offset(zone)?,
    )
}

/// A non-negative decimal number of seconds (`1733234520`, `1733234520.123`, `12.5`), read
/// exactly to the nanosecond (no float rounding): nginx's `$msec`, a Prometheus timestamp or
/// a CSV's seconds.
pub fn seconds(s: &str) -> Result<i128, String> {
    let bad = || format!("`{s}` is not a number of seconds");
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, f),
        None => (s, ""),
    };
    if whole.is_empty() || whole.len() > 12 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let w: i128 = whole.parse().map_err(|_| bad())?;
    let f = if s.contains('.') {
        // Digits past the ninth are below a nanosecond: dropped.
        let kept = &frac[..frac.len().min(9)];
        if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        fraction(kept)?
    } else {
        0
    };
    Ok(w * NS + i128::from(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_agree_with_known_epochs() {
        // date -u -d 2026-12-03T14:02:00Z +%s → 1796306520
        assert_eq!(rfc3339("2026-12-03T14:02:00Z"), Ok(1_796_306_520 * NS));
        assert_eq!(
            rfc3339("2026-12-03T15:02:00.25+01:00"),
            Ok(1_796_306_520 * NS + 250_000_000)
        );
        assert_eq!(rfc3339("1970-01-01 00:00:00Z"), Ok(0));
        assert_eq!(
            time_local("03/Dec/2026:14:02:00 +0000"),
            Ok(1_796_306_520 * NS)
        );
        assert_eq!(
            time_local("03/Dec/2026:09:02:00 -0500"),
            Ok(1_796_306_520 * NS)
        );
        // A leap day, and the last second of a leap year.
        assert_eq!(rfc3339("2024-02-29T00:00:00Z"), Ok(1_709_164_800 * NS));
        assert_eq!(rfc3339("2024-12-31T23:59:59Z"), Ok(1_735_689_599 * NS));
        assert_eq!(seconds("1796306520.123"), Ok(1_796_306_520_123_000_000));
        assert_eq!(seconds("12"), Ok(12 * NS));
        assert_eq!(seconds("0.0000000019"), Ok(1));
    }

    #[test]
    fn malformed_stamps_say_which_part() {
        assert!(rfc3339("2026-13-03T14:02:00Z")
            .unwrap_err()
            .contains("month 13"));
        assert!(rfc3339("2026-02-30T14:02:00Z")
            .unwrap_err()
            .contains("day 30"));
        assert!(rfc3339("2026-12-03T24:02:00Z").is_err());
        assert!(rfc3339("2026-12-03T14:02:00").is_err(), "no zone");
        assert!(rfc3339("2026-12-03T14:02:00+1").is_err());
        assert!(time_local("03/Foo/2026:14:02:00 +0000")
            .unwrap_err()
            .contains("`Foo`"));
        assert!(time_local("03/Dec/2026:14:02:00").is_err(), "no zone");
        for s in ["", "-1", "1e9", "1.", ".5", "nan", "1.2.3", "١٢"] {
            assert!(seconds(s).is_err(), "{s}");
        }
    }
}
