//! Lineage run records (FORMAT.md §11): what the engine reads of them.

/// The `status` of a run record, as the peer's `_parse(text).get("status")`:
/// None when the text is not a JSON object (a record half-written when its run
/// died) or has no text status. Err when the record exists but cannot be taken at
/// face value (not UTF-8).
pub fn status_of(bytes: &[u8]) -> Result<Option<String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => match crate::pyparse::python_accepts(text) {
            None => return Ok(None),
            Some(_) => serde_json::from_str(&crate::pyparse::sanitize(text))
                .map_err(|e| format!("it cannot be parsed ({e})"))?,
        },
    };
    Ok(value.get("status").and_then(|s| s.as_str()).map(str::to_string))
}

/// Why a record's bytes are not a JSON object its status can be read from,
/// when they are UTF-8 text (None: they are one, or not text at all, which
/// [`status_of`] refuses).
pub fn damage_of(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() => None,
        Ok(_) => Some("it is JSON but not an object, so it names no status".into()),
        Err(e) => match crate::pyparse::python_accepts(text) {
            Some(_) => None,
            None => Some(damage_text(text, &e)),
        },
    }
}

/// Why a record's text is not JSON, in one line: `cut off after 120 bytes`
/// (half-written when its run died) or the parser's words.
pub fn damage_text(text: &str, e: &serde_json::Error) -> String {
    if text.trim().is_empty() {
        "it is empty (its run died as it was written?)".into()
    } else if e.is_eof() {
        format!("it is cut off after {} bytes (half-written when its run died?)", text.len())
    } else {
        format!("it is not valid JSON ({e})")
    }
}

#[cfg(test)]
mod tests {
    use super::status_of;

    #[test]
    fn statuses() {
        assert_eq!(status_of(br#"{"status": "success"}"#), Ok(Some("success".into())));
        assert_eq!(status_of(br#"{"status": "running", "x": NaN}"#), Ok(Some("running".into())));
        assert_eq!(status_of(br#"{"status": "succ"#), Ok(None));
        assert_eq!(status_of(br#"[1]"#), Ok(None));
        assert_eq!(status_of(br#"{"status": 1}"#), Ok(None));
        assert!(status_of(b"{\"status\": \"\xff\"}").is_err());
    }
}

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::layout::TaskPath;
use crate::vars::Variables;
use crate::{fsx, pyjson, secrets, timefmt};

/// The variables as a record holds them: `None`s dropped, secret-looking names
/// masked as `"***"` (unless empty), as the peer's `redact_variables`.
pub fn redact_variables(vars: &Variables) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in vars {
        if matches!(v, crate::vars::PyValue::None) {
            continue;
        }
        let empty = matches!(v, crate::vars::PyValue::Str(s) if s.is_empty());
        let value = if secrets::looks_secret(k) && !empty {
            Value::String(secrets::REDACTED.into())
        } else {
            v.to_json().unwrap_or_else(|| Value::String(format!("{v:?}")))
        };
        out.insert(k.clone(), value);
    }
    out
}

/// What a run record is written for.
#[derive(Clone, Debug)]
pub struct RecordSpec {
    /// The run's id.
    pub run_id: String,
    /// The task: `<usecase>/<package>/<task>`.
    pub task: TaskPath,
    /// The batch's variables (the record drops `None`s and masks secret values).
    pub variables: Variables,
    /// `backend`: "exec" for `ubunye exec`.
    pub backend: String,
    /// The command line, recorded as given (secret values are the caller's to mask).
    pub command: Option<Vec<String>>,
}

/// A run record written by this engine (record_version 2, the peer's key order),
/// always replaced atomically.
#[derive(Debug)]
pub struct RunRecord {
    path: PathBuf,
    doc: Map<String, Value>,
    started: SystemTime,
    busy_for: std::time::Duration,
}

impl RunRecord {
    /// `<lineage_dir>/<task>/<run_id>.json`
    pub fn path_for(lineage_dir: &Path, task: &TaskPath, run_id: &str) -> PathBuf {
        lineage_dir.join(task.as_str()).join(format!("{run_id}.json"))
    }

    /// Write the record with status `running`. Each write retries "permission
    /// denied" for `busy_for` (`Timing::busy_for`: 2 s, as lease files).
    pub fn start(
        lineage_dir: &Path,
        spec: &RecordSpec,
        now: SystemTime,
        busy_for: std::time::Duration,
    ) -> std::io::Result<RunRecord> {
        let rec = Self::draft(lineage_dir, spec, now, busy_for);
        if let Some(parent) = rec.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        rec.write()?;
        Ok(rec)
    }

    /// The record with status `running`, not written anywhere yet: what a
    /// store's run puts under its key ([`RunRecord::text`]).
    pub fn draft(lineage_dir: &Path, spec: &RecordSpec, now: SystemTime, busy_for: std::time::Duration) -> RunRecord {
        let (u, p, t) = spec.task.parts();
        let mode =
            spec.variables.iter().find(|(k, _)| k == "mode").and_then(|(_, v)| v.to_json()).unwrap_or(Value::Null);
        let mut d = Map::new();
        let s = |x: &str| Value::String(x.to_string());
        d.insert("run_id".into(), s(&spec.run_id));
        d.insert("task_path".into(), s(spec.task.as_str()));
        d.insert("usecase".into(), s(u));
        d.insert("package".into(), s(p));
        d.insert("task_name".into(), s(t));
        d.insert("profile".into(), mode);
        d.insert("model".into(), Value::Null);
        d.insert("version".into(), Value::Null);
        d.insert("config_hash".into(), Value::Null);
        d.insert("started_at".into(), s(&timefmt::iso_micros(now)));
        d.insert("ended_at".into(), Value::Null);
        d.insert("duration_sec".into(), Value::Null);
        d.insert("status".into(), s("running"));
        d.insert("inputs".into(), Value::Array(Vec::new()));
        d.insert("outputs".into(), Value::Array(Vec::new()));
        d.insert("error".into(), Value::Null);
        d.insert("engine_version".into(), s(concat!("ubunye-rs ", env!("CARGO_PKG_VERSION"))));
        d.insert("backend".into(), s(&spec.backend));
        d.insert("variables".into(), Value::Object(redact_variables(&spec.variables)));
        d.insert("record_version".into(), Value::from(2));
        d.insert("code_hash".into(), Value::Null);
        let mut env = Map::new();
        env.insert("platform".into(), s(std::env::consts::OS));
        env.insert("machine".into(), s(std::env::consts::ARCH));
        env.insert("implementation".into(), s("ubunye-rs"));
        let mut pk = Map::new();
        pk.insert("ubunye-rs".into(), s(env!("CARGO_PKG_VERSION")));
        env.insert("packages".into(), Value::Object(pk));
        d.insert("environment".into(), Value::Object(env));
        d.insert("environment_hash".into(), Value::Null);
        d.insert("timings".into(), Value::Array(Vec::new()));
        d.insert("expectations".into(), Value::Array(Vec::new()));
        d.insert("llm_calls".into(), Value::Array(Vec::new()));
        d.insert("llm_budget".into(), Value::Object(Map::new()));
        d.insert("time_zone".into(), s("UTC"));
        if let Some(cmd) = &spec.command {
            d.insert("command".into(), Value::Array(cmd.iter().map(|a| s(a)).collect()));
        }
        RunRecord { path: Self::path_for(lineage_dir, &spec.task, &spec.run_id), doc: d, started: now, busy_for }
    }

    /// The record as written: the peer's layout.
    pub fn text(&self) -> String {
        pyjson::dumps(&Value::Object(self.doc.clone()), pyjson::Style::RECORD)
    }

    fn write(&self) -> std::io::Result<()> {
        let text = self.text();
        // No step waits for a record: its bytes reach the disk before its
        // name (never a record of 0 bytes), its rename when the kernel
        // pleases.
        match fsx::write_atomic_lazy(&self.path, text.as_bytes(), self.busy_for)? {
            true => Ok(()),
            false => Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "record in use")),
        }
    }

    /// The record's file: `<lineage_dir>/<task>/<run_id>.json`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Set the outputs list (one step per output: name, direction, format, location).
    pub fn set_outputs(&mut self, outputs: Vec<(String, String, String)>) {
        let steps = outputs
            .into_iter()
            .map(|(name, format, location)| {
                let mut m = Map::new();
                m.insert("name".into(), Value::String(name));
                m.insert("direction".into(), Value::String("output".into()));
                m.insert("format".into(), Value::String(format));
                m.insert("location".into(), Value::String(location));
                for k in [
                    "row_count",
                    "schema_hash",
                    "data_hash",
                    "hash_method",
                    "hash_error",
                    "hash_seconds",
                    "hash_reused_from",
                    "hash_basis",
                    "source_version",
                    "source_version_at_hash",
                    "source_changed",
                    "source_note",
                ] {
                    m.insert(k.into(), Value::Null);
                }
                Value::Object(m)
            })
            .collect();
        self.doc.insert("outputs".into(), Value::Array(steps));
    }

    /// Rewrite the record with its final status (`success`, `error` or
    /// `interrupted`), `ended_at` and `duration_sec`.
    pub fn finish(&mut self, status: &str, error: Option<String>, now: SystemTime) -> std::io::Result<()> {
        self.end_with(status, error, now);
        self.write()
    }

    /// Set the final status, `ended_at` and `duration_sec`, without writing.
    pub fn end_with(&mut self, status: &str, error: Option<String>, now: SystemTime) {
        let secs = now.duration_since(self.started).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        self.doc.insert("ended_at".into(), Value::String(timefmt::iso_micros(now)));
        self.doc.insert("duration_sec".into(), pyjson::float_value((secs * 1000.0).round() / 1000.0));
        self.doc.insert("status".into(), Value::String(status.into()));
        self.doc.insert("error".into(), error.map(Value::String).unwrap_or(Value::Null));
    }
}
