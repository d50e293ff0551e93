//! The time formats the peer writes.

use chrono::{DateTime, SecondsFormat, Utc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `YYYY-MM-DDTHH:MM:SSZ`, UTC: the lease's `started_at`, notes, tombstones.
pub fn utc_z(t: SystemTime) -> String {
    DateTime::<Utc>::from(t).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Python's `datetime.now(timezone.utc).isoformat()`: microseconds when there are
/// any, and `+00:00` (a run record's `started_at`, `ended_at`).
pub fn iso_micros(t: SystemTime) -> String {
    let dt = DateTime::<Utc>::from(t);
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

/// RFC 3339 with seconds, for `--json` output.
pub fn rfc3339(t: SystemTime) -> String {
    DateTime::<Utc>::from(t).to_rfc3339_opts(SecondsFormat::Secs, true)
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
}
