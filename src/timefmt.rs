//! The time formats the peer writes.

use chrono::{DateTime, SecondsFormat, Utc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `YYYY-MM-DDTHH:MM:SSZ`, UTC: the lease's `started_at`, notes, tombstones.
pub fn utc_z(t: SystemTime) -> String {
    match calendar(t) {
        Some(dt) => dt.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => format!("@{}", epoch_secs(t)),
    }
}

/// The time as a calendar date, when one can hold it.
fn calendar(t: SystemTime) -> Option<DateTime<Utc>> {
    let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (i64::try_from(d.as_secs()).ok()?, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let s = -i64::try_from(d.as_secs()).ok()?;
            if d.subsec_nanos() == 0 { (s, 0) } else { (s - 1, 1_000_000_000 - d.subsec_nanos()) }
        }
    };
    DateTime::<Utc>::from_timestamp(secs, nanos)
}

/// Python's `datetime.now(timezone.utc).isoformat()`: microseconds when there are
/// any, and `+00:00` (a run record's `started_at`, `ended_at`).
pub fn iso_micros(t: SystemTime) -> String {
    let Some(dt) = calendar(t) else { return format!("@{}", epoch_secs(t)) };
    let micros = dt.timestamp_subsec_micros();
    let base = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
    if micros == 0 { format!("{base}+00:00") } else { format!("{base}.{micros:06}+00:00") }
}

/// Seconds since the epoch as a float (Python's `time.time()`), for `heartbeat`.
pub fn epoch_secs(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// A time from epoch seconds.
pub fn from_epoch_secs(s: f64) -> Option<SystemTime> {
    if !s.is_finite() {
        return None;
    }
    if s >= 0.0 {
        UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(s).ok()?)
    } else {
        UNIX_EPOCH.checked_sub(Duration::try_from_secs_f64(-s).ok()?)
    }
}

/// Parse the times the peer writes (`…Z` or ISO 8601 with an offset).
pub fn parse(text: &str) -> Option<SystemTime> {
    DateTime::parse_from_rfc3339(text).ok().map(SystemTime::from)
}

/// RFC 3339 with seconds, for `--json` output. A time no calendar date can
/// hold (an mtime set past the year 262,143) is written as epoch seconds
/// instead of panicking, as chrono's conversion would.
pub fn rfc3339(t: SystemTime) -> String {
    match calendar(t) {
        Some(dt) => dt.to_rfc3339_opts(SecondsFormat::Secs, true),
        None => format!("@{}", epoch_secs(t)),
    }
}

/// A short human age: `42s`, `21m`, `3h 5m`, `2d 4h`.
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A time as a table shows it, in local time and no longer than it needs:
/// `08:55:24` within the last day, `12-04 08:55` within the year,
/// `2025-12-04` before (a time that cannot be a date: `@` and its seconds).
pub fn short_local(t: SystemTime, now: SystemTime) -> String {
    let Some(utc) = calendar(t) else { return format!("@{}", epoch_secs(t)) };
    let local = utc.with_timezone(&chrono::Local);
    let recent = now.duration_since(t).is_ok_and(|d| d < Duration::from_secs(86_400));
    let this_year = calendar(now).map(|n| n.with_timezone(&chrono::Local).format("%Y").to_string())
        == Some(local.format("%Y").to_string());
    match (recent, this_year) {
        (true, _) => local.format("%H:%M:%S").to_string(),
        (false, true) => local.format("%m-%d %H:%M").to_string(),
        (false, false) => local.format("%Y-%m-%d").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let t = UNIX_EPOCH + Duration::from_micros(1_795_948_390_366_712);
        assert_eq!(utc_z(t), "2026-11-29T10:33:10Z");
        assert_eq!(iso_micros(t), "2026-11-29T10:33:10.366712+00:00");
        assert_eq!(iso_micros(UNIX_EPOCH + Duration::from_secs(1_795_948_390)), "2026-11-29T10:33:10+00:00");
        assert_eq!(parse("2026-11-29T10:33:10Z"), Some(UNIX_EPOCH + Duration::from_secs(1_795_948_390)));
        assert_eq!(parse("2026-11-29T10:33:10.366712+00:00"), Some(t));
        assert!((epoch_secs(t) - 1_795_948_390.366712).abs() < 1e-6);
        assert_eq!(age(Duration::from_secs(21 * 60 + 5)), "21m");
        assert_eq!(age(Duration::from_secs(3 * 3600 + 5 * 60)), "3h 5m");
    }

    /// An mtime past what a calendar date holds (set by hand) is written
    /// another way, never a panic of `leases list`.
    #[test]
    fn times_no_calendar_holds_do_not_panic() {
        let far = UNIX_EPOCH + Duration::from_secs(9_000_000_000_000);
        assert!(rfc3339(far).starts_with('@'), "{}", rfc3339(far));
        assert!(utc_z(far).starts_with('@'));
        assert!(iso_micros(far).starts_with('@'));
        let before = UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(rfc3339(before), "1969-12-31T23:59:58Z");
    }
}
