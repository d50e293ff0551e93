//! The finished note of a batch: written from a run's lease, read back
//! before the next run appends.

use serde_json::Value;

use super::{Damage, LeaseDoc, Map, bad, py_str, short, string_list};
use crate::pyjson;

/// The finished note the peer writes for a run's lease document (`_note_finished`):
/// None when there is nothing to note (no outputs).
pub fn finished_note(doc: &LeaseDoc, task: &str, finished_at: &str) -> Result<Option<String>, Damage> {
    let notes = doc.notes()?;
    if notes.is_empty() {
        return Ok(None);
    }
    let mut outputs = Map::new();
    for n in notes {
        let mut o = Map::new();
        let claimed = if n.exact { n.claimed.iter().cloned().map(Value::String).collect() } else { Vec::new() };
        o.insert("claimed".into(), Value::Array(claimed));
        if n.exact && n.staging.is_some() {
            o.insert("staged".into(), Value::Bool(true));
        }
        outputs.insert(n.name, Value::Object(o));
    }
    let mut note = Map::new();
    note.insert("run_id".into(), doc.0.get("run_id").cloned().unwrap_or(Value::Null));
    note.insert("task".into(), Value::String(task.into()));
    note.insert("finished_at".into(), Value::String(finished_at.into()));
    note.insert("outputs".into(), Value::Object(outputs));
    Ok(Some(pyjson::dumps(&Value::Object(note), pyjson::Style::NOTE)))
}

/// A finished note as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    /// The note as read, its key order kept.
    pub doc: Map,
}

/// One output of a finished note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedOutput {
    /// The output's name (its key in the note's `outputs`).
    pub name: String,
    /// `claimed`: the files the run claimed in it (empty when it did not claim
    /// exactly).
    pub claimed: Vec<String>,
    /// `staged`: the output had a staging folder and its files were claimed.
    pub staged: bool,
}

impl Finished {
    /// The first 8 characters of the finishing run's id, for messages (`?` when
    /// none).
    pub fn run_short(&self) -> String {
        short(&py_str(self.doc.get("run_id"), "?"))
    }
    /// The finishing run's id (`run_id`), when it is text.
    pub fn run_id(&self) -> Option<&str> {
        self.doc.get("run_id").and_then(Value::as_str)
    }
    /// When the batch was finished (`finished_at`), as Python prints it (`?`
    /// when missing).
    pub fn finished_at(&self) -> String {
        py_str(self.doc.get("finished_at"), "?")
    }
    /// Whether the note lists any output (the peer's `if not last.get("outputs")`).
    pub fn has_outputs(&self) -> bool {
        self.doc.get("outputs").is_some_and(pyjson::truthy)
    }
    /// The outputs it lists, in its order; a shape the peer would crash on is
    /// damage.
    pub fn outputs(&self) -> Result<Vec<FinishedOutput>, Damage> {
        let m = match self.doc.get("outputs") {
            Some(Value::Object(m)) => m,
            Some(v) if pyjson::truthy(v) => return Err(bad("outputs", "not an object")),
            _ => return Ok(Vec::new()),
        };
        m.iter()
            .map(|(name, v)| {
                // The peer's `o.get("claimed")` crashes on anything else: read
                // as "claimed nothing", a --rerun would append the batch again.
                let o = v.as_object().ok_or_else(|| bad(&format!("outputs.{name}"), "not an object"))?;
                let claimed = match o.get("claimed") {
                    Some(c) => string_list(c, &format!("outputs.{name}.claimed"))?,
                    None => Vec::new(),
                };
                let staged = o.get("staged").is_some_and(pyjson::truthy);
                Ok(FinishedOutput { name: name.clone(), claimed, staged })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::parse_doc;

    #[test]
    fn finished_note_matches_the_peer_fixture() {
        let lease = r#"{"run_id": "b3e1fa02-bd26-47f1-890a-8704893f379c", "task": "demo/sales/ingest", "outputs": {"events": {"appends": true, "exact": true, "state": "done", "claimed": ["out/events/part-00000-ff869a38-8d2f-43ac-b8d6-303681ac89db-c000.snappy.parquet"]}}}"#;
        let d = LeaseDoc::from_parsed(parse_doc(lease.as_bytes()).unwrap());
        let note = finished_note(&d, "demo/sales/ingest", "2026-11-29T10:33:09Z").unwrap().unwrap();
        let fixture = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/peer/dead-killed/uc/.ubunye/leases/demo/sales/ingest/39bc42311894ddba.finished.json"
        ))
        .unwrap();
        assert_eq!(note, fixture);
    }

    /// An output that is not an object is damage, as the peer crashes on it
    /// (`o.get`), never "claimed nothing".
    #[test]
    fn an_output_that_is_not_an_object_is_damage() {
        for v in ["[1]", "\"x\"", "null", "0", "[]"] {
            let text = format!(r#"{{"run_id": "r", "outputs": {{"events": {v}}}}}"#);
            let note = Finished { doc: LeaseDoc::from_parsed(parse_doc(text.as_bytes()).unwrap()).0 };
            assert!(note.outputs().is_err(), "{v}");
        }
        let ok = r#"{"run_id": "r", "outputs": {"events": {}}}"#;
        let note = Finished { doc: LeaseDoc::from_parsed(parse_doc(ok.as_bytes()).unwrap()).0 };
        assert_eq!(note.outputs().unwrap()[0].claimed, Vec::<String>::new());
    }
}
