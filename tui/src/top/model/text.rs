//! The strings of a packed batch ([`super::packed`]), each in the fewest
//! bytes that give it back exactly: most are of a few shapes the engines
//! write (a run id, a record's time, a finished note's line), which take 8 or
//! 16 bytes instead of 33 to 37. A string is kept in a shape only when it is
//! written back from it byte for byte ([`put`] checks); any other is kept as
//! it is.

use std::borrow::Cow;

const NONE: u8 = 0;
const RAW: u8 = 1;
/// A run id as `uuid.uuid4()` writes it: 36 lowercase hex digits and dashes.
const UUID: u8 = 2;
/// A record's time as Python's `isoformat()` writes it in UTC:
/// `2026-12-02T13:25:24.862369+00:00`.
const MICROS: u8 = 3;
/// A finished note's line: `finished at 2026-12-02T13:25:24Z`.
const FINISHED_AT: u8 = 4;
/// A finished note's time: `2026-12-02T13:25:24Z`.
const SECONDS: u8 = 5;

/// A length, seven bits a byte, low bits first.
pub fn put_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A string, or none, in its shortest shape.
pub fn put(out: &mut Vec<u8>, s: Option<&str>) {
    let Some(s) = s else {
        out.push(NONE);
        return;
    };
    if let Some(b) = uuid(s) {
        out.push(UUID);
        out.extend_from_slice(&b);
    } else if let Some(t) = micros(s) {
        out.push(MICROS);
        out.extend_from_slice(&t.to_le_bytes());
    } else if let Some(t) = s.strip_prefix("finished at ").and_then(seconds) {
        out.push(FINISHED_AT);
        out.extend_from_slice(&t.to_le_bytes());
    } else if let Some(t) = seconds(s) {
        out.push(SECONDS);
        out.extend_from_slice(&t.to_le_bytes());
    } else {
        out.push(RAW);
        put_len(out, s.len());
        out.extend_from_slice(s.as_bytes());
    }
}

/// Reads what [`put`] and [`put_len`] wrote, in order.
pub struct Reader<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl<'a> Reader<'a> {
    pub fn len(&mut self) -> usize {
        let (mut n, mut shift) = (0usize, 0);
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            n |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        n
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let end = (self.at + n).min(self.bytes.len());
        let s = &self.bytes[self.at..end];
        self.at = end;
        s
    }

    fn i64(&mut self) -> i64 {
        let mut b = [0u8; 8];
        let got = self.take(8);
        b[..got.len()].copy_from_slice(got);
        i64::from_le_bytes(b)
    }

    /// A string [`put`] wrote, borrowed when it was kept as it is.
    pub fn text(&mut self) -> Option<Cow<'a, str>> {
        let tag = *self.bytes.get(self.at)?;
        self.at += 1;
        match tag {
            NONE => None,
            UUID => Some(Cow::Owned(uuid_text(self.take(16)))),
            MICROS => Some(Cow::Owned(micros_text(self.i64()))),
            FINISHED_AT => Some(Cow::Owned(format!("finished at {}", seconds_text(self.i64())))),
            SECONDS => Some(Cow::Owned(seconds_text(self.i64()))),
            _ => {
                let n = self.len();
                // Only [`put`] writes these, from strings, cut at their ends.
                Some(Cow::Borrowed(std::str::from_utf8(self.take(n)).unwrap_or_default()))
            }
        }
    }

    /// A string [`put`] wrote; "" for none.
    pub fn string(&mut self) -> Cow<'a, str> {
        self.text().unwrap_or(Cow::Borrowed(""))
    }

    /// The next string as [`put`] wrote it (its shape's tag and bytes): two
    /// strings are equal when these are ([`put`] gives each string one form).
    pub fn field(&mut self) -> &'a [u8] {
        let from = self.at;
        self.skip();
        &self.bytes[from..self.at]
    }

    /// Past a string without making it.
    pub fn skip(&mut self) {
        let Some(&tag) = self.bytes.get(self.at) else { return };
        self.at += 1;
        let n = match tag {
            NONE => 0,
            UUID => 16,
            MICROS | FINISHED_AT | SECONDS => 8,
            _ => self.len(),
        };
        self.take(n);
    }
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    // Every run id of a read passes here: its digits read in place.
    let mut digits = b.iter().enumerate().filter(|(i, _)| ![8, 13, 18, 23].contains(i)).map(|(_, c)| *c);
    let mut out = [0u8; 16];
    for byte in &mut out {
        *byte = hex(digits.next()?)? << 4 | hex(digits.next()?)?;
    }
    Some(out)
}

fn uuid_text(b: &[u8]) -> String {
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if [4, 6, 8, 10].contains(&i) {
            s.push('-');
        }
        s.push_str(&format!("{byte:02x}"));
    }
    s
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DDTHH:MM:SS` as seconds since the epoch, when it is one (the
/// round trip in [`put`]'s callers rejects a date that does not exist).
fn date_time(s: &[u8]) -> Option<i64> {
    if s.len() != 19 || s[4] != b'-' || s[7] != b'-' || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        s[r].iter().try_fold(0i64, |n, c| c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0')))
    };
    let (y, mo, d, h, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se)
}

fn date_time_text(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

fn micros(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 32 || b[19] != b'.' || &b[26..] != b"+00:00" || !b[20..26].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let frac: i64 = s[20..26].parse().ok()?;
    let t = date_time(&b[..19])?.checked_mul(1_000_000)?.checked_add(frac)?;
    (micros_text(t) == s).then_some(t)
}

fn micros_text(t: i64) -> String {
    format!("{}.{:06}+00:00", date_time_text(t.div_euclid(1_000_000)), t.rem_euclid(1_000_000))
}

fn seconds(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[19] != b'Z' {
        return None;
    }
    let t = date_time(&b[..19])?;
    (seconds_text(t) == s).then_some(t)
}

fn seconds_text(t: i64) -> String {
    format!("{}Z", date_time_text(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(s: Option<&str>) -> (Option<String>, usize) {
        let mut out = Vec::new();
        put(&mut out, s);
        out.push(0xee);
        let mut r = Reader { bytes: &out, at: 0 };
        let back = r.text().map(|c| c.into_owned());
        assert_eq!(out[r.at], 0xee, "read to its end");
        let mut k = Reader { bytes: &out, at: 0 };
        k.skip();
        assert_eq!(k.at, r.at, "skipped to its end");
        (back, out.len() - 1)
    }

    #[test]
    fn shapes_the_engines_write_are_short_and_exact() {
        for (s, len) in [
            ("0000205f-0000-4000-8000-00000000205f", 17),
            ("2026-12-02T13:25:24.862369+00:00", 9),
            ("1969-12-31T23:59:59.999999+00:00", 9),
            ("finished at 2026-12-02T13:25:24Z", 9),
            ("finished at 2000-02-29T00:00:00Z", 9),
            ("2026-12-02T13:25:24Z", 9),
        ] {
            assert_eq!(round_trip(Some(s)), (Some(s.to_string()), len), "{s}");
        }
        // Near misses are kept as they are.
        for s in [
            "0000205F-0000-4000-8000-00000000205f",
            "0000205f-0000-4000-8000-00000000205",
            "2026-12-02T13:25:24+00:00",
            "2026-02-30T13:25:24.862369+00:00",
            "2026-12-02T13:25:24.862369+01:00",
            "2026-12-02T24:00:00.000000+00:00",
            "finished at 2026-12-02T13:25:24",
            "finished at ",
            "",
        ] {
            assert_eq!(round_trip(Some(s)), (Some(s.to_string()), 2 + s.len()), "{s:?}");
        }
        assert_eq!(round_trip(None), (None, 1));
    }

    proptest! {
        #[test]
        fn any_string_comes_back(s in "\\PC{0,50}") {
            prop_assert_eq!(round_trip(Some(&s)).0, Some(s));
        }

        #[test]
        fn any_time_comes_back(t in -62_135_596_800_000_000i64..253_402_300_799_000_000) {
            let s = micros_text(t);
            prop_assert_eq!(micros(&s), Some(t));
            let secs = t / 1_000_000;
            let z = seconds_text(secs);
            prop_assert_eq!(seconds(&z), Some(secs));
        }
    }
}
