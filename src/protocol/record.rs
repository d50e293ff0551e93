//! A dead run's record marked interrupted by its taker, in the peer's words
//! (FORMAT.md §7.1), the same in both stores.

use serde_json::Value;

use crate::pyjson;

/// The record `body` rewritten as interrupted, taken over by `who` (`run
/// 1a2b3c4d`, or `ubunye leases takeover (run 1a2b3c4d)`) at `at`; None
/// when it is not a JSON object that says `running` (left as it is).
/// `unrepaired`: outputs that may hold part of its batch and were not taken
/// back.
pub fn interrupted(body: &[u8], who: &str, at: &str, unrepaired: &[String]) -> Option<String> {
    let Ok(Value::Object(mut rec)) = serde_json::from_slice::<Value>(body) else { return None };
    if rec.get("status").and_then(Value::as_str) != Some("running") {
        return None;
    }
    let mut note =
        format!("The run did not finish; {who} took over its lease at {at} and removed the files it had appended.");
    if !unrepaired.is_empty() {
        note.push_str(&format!(
            " Output(s) {} may hold part or all of its batch and were not taken back.",
            unrepaired.join(", ")
        ));
    }
    rec.insert("status".into(), Value::String("interrupted".into()));
    rec.insert("error".into(), Value::String(note));
    Some(pyjson::dumps(&Value::Object(rec), pyjson::Style::RECORD))
}

/// The record `body` of a run that committed and died before it wrote its
/// end, rewritten as ended in success at `now` (its files are the batch,
/// and its finished note names it); None when it is not a JSON object that
/// says `running`.
pub fn completed(body: &[u8], now: std::time::SystemTime) -> Option<String> {
    let Ok(Value::Object(mut rec)) = serde_json::from_slice::<Value>(body) else { return None };
    if rec.get("status").and_then(Value::as_str) != Some("running") {
        return None;
    }
    let started = rec.get("started_at").and_then(Value::as_str).and_then(crate::timefmt::parse);
    let secs = started.and_then(|s| now.duration_since(s).ok()).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    rec.insert("ended_at".into(), Value::String(crate::timefmt::iso_micros(now)));
    rec.insert("duration_sec".into(), pyjson::float_value((secs * 1000.0).round() / 1000.0));
    rec.insert("status".into(), Value::String("success".into()));
    rec.insert("error".into(), Value::Null);
    Some(pyjson::dumps(&Value::Object(rec), pyjson::Style::RECORD))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_running_record_is_marked_and_its_other_fields_stay() {
        let running = br#"{"run_id": "r", "status": "running", "started_at": "t"}"#;
        let out = interrupted(running, "run 1a2b3c4d", "2026-12-05T10:00:00Z", &["ev".into()]).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["status"], "interrupted");
        assert_eq!(v["started_at"], "t");
        let e = v["error"].as_str().unwrap();
        assert!(
            e.starts_with("The run did not finish; run 1a2b3c4d took over its lease at 2026-12-05T10:00:00Z"),
            "{e}"
        );
        assert!(e.ends_with("Output(s) ev may hold part or all of its batch and were not taken back."), "{e}");
        assert_eq!(interrupted(br#"{"status": "success"}"#, "w", "t", &[]), None);
        assert_eq!(interrupted(b"{\"status\": \"runn", "w", "t", &[]), None, "half-written");
        assert_eq!(interrupted(b"[1]", "w", "t", &[]), None);
    }

    #[test]
    fn a_committed_runs_running_record_ends_in_success_and_no_other_is_touched() {
        let t0 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_780_000_000);
        let started = crate::timefmt::iso_micros(t0);
        let running = format!(r#"{{"run_id": "r", "status": "running", "started_at": "{started}", "ended_at": null}}"#);
        let out = completed(running.as_bytes(), t0 + std::time::Duration::from_secs(90)).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!((v["status"].as_str(), v["duration_sec"].as_f64()), (Some("success"), Some(90.0)), "{out}");
        assert_eq!(v["error"], Value::Null);
        assert_eq!(completed(br#"{"status": "error"}"#, t0), None);
        assert_eq!(completed(b"{\"status\": \"runn", t0), None);
    }
}
