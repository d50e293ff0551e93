//! The documents: the lease, its output notes, the finished note and what the
//! engine reads of a lineage run record.
//!
//! Each document is kept as the ordered JSON object it was read as, so fields this
//! engine does not know survive a rewrite in their place, exactly as the peer's
//! `dict` round trip keeps them. Typed accessors read it the way the peer's Python
//! does (truthiness, `int(x or 0)`), and refuse shapes the peer would crash on.

use serde_json::Value;

use crate::pyjson;

/// A JSON object with its key order kept.
pub type Map = serde_json::Map<String, Value>;

/// What a lease-like file holds, as the peer's `_parse` sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    /// A JSON object.
    Doc(Map),
    /// Empty, not JSON, or JSON that is not an object: the peer's `{}`. A lease
    /// like this is judged by its age alone and claims nothing.
    NotADoc,
}

/// Why a file's text cannot be taken at face value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    #[error("it is not UTF-8 text")]
    NotUtf8,
    #[error("it holds JSON this engine cannot represent faithfully ({0})")]
    Unrepresentable(String),
    #[error("field '{field}' is {what}")]
    BadField { field: String, what: String },
}

/// Parse a lease, orphan or note. `Err` when the text is not UTF-8, or is JSON the
/// peer accepts but serde_json cannot hold (NaN, a lone surrogate): never guess
/// what such a file says.
pub fn parse_doc(bytes: &[u8]) -> Result<Parsed, Damage> {
    let text = std::str::from_utf8(bytes).map_err(|_| Damage::NotUtf8)?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Parsed::Doc(m)),
        Ok(_) => Ok(Parsed::NotADoc),
        Err(e) => match crate::pyparse::python_accepts(text) {
            Some(true) => Err(Damage::Unrepresentable(e.to_string())),
            _ => Ok(Parsed::NotADoc),
        },
    }
}

/// `str(value)` as Python prints a JSON value in a message: None, True, 42, text.
pub fn py_str(v: Option<&Value>, missing: &str) -> String {
    match v {
        None => missing.to_string(),
        Some(Value::Null) => "None".into(),
        Some(Value::Bool(true)) => "True".into(),
        Some(Value::Bool(false)) => "False".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => pyjson::number_text(&n.to_string()),
        Some(other) => pyjson::dumps(other, pyjson::Style::COMPACT),
    }
}

/// The first 8 characters of a run id as the peer prints it (`'?'` when missing).
pub fn short(run_id: &str) -> String {
    run_id.chars().take(8).collect()
}

/// Python's `int(x or 0)` for a JSON value.
pub fn py_int(v: Option<&Value>) -> Result<i64, String> {
    let Some(v) = v else { return Ok(0) };
    if !pyjson::truthy(v) {
        return Ok(0);
    }
    match v {
        Value::Bool(true) => Ok(1),
        Value::Number(n) => {
            let text = n.to_string();
            if let Ok(i) = text.parse::<i64>() {
                return Ok(i);
            }
            match text.parse::<f64>() {
                Ok(f)
                    if f.is_finite() && f.abs() < 9.2e18 && !text.bytes().all(|b| b.is_ascii_digit() || b == b'-') =>
                {
                    Ok(f.trunc() as i64)
                }
                _ => Err(format!("the number {text}, too large for a pid")),
            }
        }
        Value::String(s) => {
            let t: String = s.trim().chars().filter(|c| *c != '_').collect();
            t.parse::<i64>().map_err(|_| format!("the text {s:?}, not a number"))
        }
        other => Err(format!("{}, not a number", pyjson::dumps(other, pyjson::Style::COMPACT))),
    }
}

/// One output note of a lease, read the way the peer reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub name: String,
    pub appends: bool,
    pub exact: bool,
    pub state: Option<String>,
    pub claimed: Vec<String>,
    pub staging: Option<String>,
    pub unseen: bool,
}

/// A lease (or a dead run's lease left beside one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeaseDoc(pub Map);

impl LeaseDoc {
    /// A new lease as acquire writes it, in the peer's key order.
    pub fn new(
        run_id: &str,
        task: &str,
        pid: i32,
        pid_started: Option<String>,
        host: &str,
        started_at: String,
        heartbeat: f64,
    ) -> LeaseDoc {
        let mut m = Map::new();
        m.insert("run_id".into(), Value::String(run_id.into()));
        m.insert("task".into(), Value::String(task.into()));
        m.insert("pid".into(), Value::from(pid));
        m.insert("pid_started".into(), pid_started.map(Value::String).unwrap_or(Value::Null));
        m.insert("host".into(), Value::String(host.into()));
        m.insert("started_at".into(), Value::String(started_at));
        m.insert("heartbeat".into(), pyjson::float_value(heartbeat));
        m.insert("outputs".into(), Value::Object(Map::new()));
        LeaseDoc(m)
    }

    pub fn from_parsed(p: Parsed) -> LeaseDoc {
        match p {
            Parsed::Doc(m) => LeaseDoc(m),
            Parsed::NotADoc => LeaseDoc(Map::new()),
        }
    }

    /// The compact JSON the peer writes (`json.dumps(doc)`).
    pub fn to_json(&self) -> String {
        pyjson::dumps_map(&self.0, pyjson::Style::COMPACT)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The raw `run_id` value (for the peer's `==` comparisons).
    pub fn run_id_value(&self) -> Option<&Value> {
        self.0.get("run_id")
    }

    /// The run id as text: `""` when missing or not a string (the tombstone suffix
    /// the peer writes is `str(run_id or "")`).
    pub fn run_id(&self) -> String {
        match self.0.get("run_id") {
            Some(Value::String(s)) => s.clone(),
            Some(v) if pyjson::truthy(v) => py_str(Some(v), ""),
            _ => String::new(),
        }
    }

    /// `str(held.get("run_id", "?"))[:8]`, for messages.
    pub fn run_short(&self) -> String {
        short(&py_str(self.0.get("run_id"), "?"))
    }

    /// Whether this lease names the same run as `other` (Python `==` on the raw values).
    pub fn same_run(&self, other: &LeaseDoc) -> bool {
        self.run_id_value() == other.run_id_value()
    }

    pub fn is_run(&self, run_id: &str) -> bool {
        matches!(self.0.get("run_id"), Some(Value::String(s)) if s == run_id)
    }

    pub fn field_text(&self, field: &str) -> String {
        py_str(self.0.get(field), "None")
    }

    pub fn host_is(&self, host: &str) -> bool {
        matches!(self.0.get("host"), Some(Value::String(s)) if s == host)
    }

    pub fn host(&self) -> Option<&str> {
        self.0.get("host").and_then(Value::as_str)
    }

    pub fn started_at(&self) -> Option<&str> {
        self.0.get("started_at").and_then(Value::as_str)
    }

    pub fn heartbeat(&self) -> Option<f64> {
        self.0.get("heartbeat").and_then(|v| v.as_f64())
    }

    pub fn pid(&self) -> Result<i64, Damage> {
        py_int(self.0.get("pid")).map_err(|what| Damage::BadField { field: "pid".into(), what })
    }

    pub fn pid_started(&self) -> Option<&Value> {
        self.0.get("pid_started").filter(|v| !v.is_null())
    }

    pub fn kept(&self) -> bool {
        self.0.get("kept").is_some_and(pyjson::truthy)
    }

    pub fn committed(&self) -> bool {
        self.0.get("committed").is_some_and(pyjson::truthy)
    }

    /// The output notes, in the lease's order. A shape the peer would crash on
    /// (outputs not an object, a claim that is not text) is damage.
    pub fn notes(&self) -> Result<Vec<Note>, Damage> {
        let outputs = match self.0.get("outputs") {
            None => return Ok(Vec::new()),
            Some(v) if !pyjson::truthy(v) => return Ok(Vec::new()),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(bad("outputs", "not an object")),
        };
        outputs.iter().map(|(name, v)| note_from(name, v)).collect()
    }

    /// `replaces`: output name -> the replaced run's files, still to remove.
    pub fn replaces(&self) -> Result<Vec<(String, Vec<String>)>, Damage> {
        match self.0.get("replaces") {
            None => Ok(Vec::new()),
            Some(v) if !pyjson::truthy(v) => Ok(Vec::new()),
            Some(Value::Object(m)) => {
                m.iter().map(|(n, v)| Ok((n.clone(), string_list(v, &format!("replaces.{n}"))?))).collect()
            }
            Some(_) => Err(bad("replaces", "not an object")),
        }
    }

    pub fn has_replaces_key(&self) -> bool {
        self.0.contains_key("replaces")
    }

    /// Every path this lease would have removed: claims, staging folders, replaced files.
    pub fn paths(&self) -> Result<Vec<String>, Damage> {
        let mut out = Vec::new();
        for n in self.notes()? {
            out.extend(n.claimed);
            out.extend(n.staging);
        }
        for (_, files) in self.replaces()? {
            out.extend(files);
        }
        Ok(out)
    }

    /// Total number of claims over all outputs (0 when damaged).
    pub fn claim_count(&self) -> usize {
        self.notes().map(|ns| ns.iter().map(|n| n.claimed.len()).sum()).unwrap_or(0)
    }

    pub fn outputs_mut(&mut self) -> &mut Map {
        let entry = self.0.entry("outputs").or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(m) => m,
            _ => unreachable!("just made an object"),
        }
    }

    pub fn set(&mut self, field: &str, v: Value) {
        self.0.insert(field.to_string(), v);
    }

    pub fn remove(&mut self, field: &str) {
        self.0.shift_remove(field);
    }
}

fn bad(field: &str, what: &str) -> Damage {
    Damage::BadField { field: field.into(), what: what.into() }
}

fn string_list(v: &Value, field: &str) -> Result<Vec<String>, Damage> {
    if !pyjson::truthy(v) {
        return Ok(Vec::new());
    }
    let Value::Array(items) = v else {
        return Err(bad(field, "not a list"));
    };
    items
        .iter()
        .map(|i| i.as_str().map(str::to_string).ok_or_else(|| bad(field, "a list holding something other than text")))
        .collect()
}

fn note_from(name: &str, v: &Value) -> Result<Note, Damage> {
    let empty = Map::new();
    let m = match v {
        Value::Object(m) => m,
        v if !pyjson::truthy(v) => &empty,
        _ => return Err(bad(&format!("outputs.{name}"), "not an object")),
    };
    let flag = |k: &str| m.get(k).is_some_and(pyjson::truthy);
    let staging = match m.get("staging") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(v) if pyjson::truthy(v) => {
            return Err(bad(&format!("outputs.{name}.staging"), "not text"));
        }
        _ => None,
    };
    Ok(Note {
        name: name.to_string(),
        appends: flag("appends"),
        exact: flag("exact"),
        state: m.get("state").and_then(Value::as_str).map(str::to_string),
        claimed: match m.get("claimed") {
            Some(c) => string_list(c, &format!("outputs.{name}.claimed"))?,
            None => Vec::new(),
        },
        staging,
        unseen: flag("unseen"),
    })
}

/// The append outputs that could not be taken back and may hold part or all of
/// the batch (the peer's `_unrepaired`): `appends`, and not (exact, seen, and with
/// a staging folder or a claim). Sorted.
pub fn unrepaired(notes: &[Note]) -> Vec<String> {
    let mut out: Vec<String> = notes
        .iter()
        .filter(|n| {
            let repaired = !n.unseen && n.exact && (n.staging.is_some() || !n.claimed.is_empty());
            n.appends && !repaired
        })
        .map(|n| n.name.clone())
        .collect();
    out.sort();
    out
}

/// A note of an output that is about to be written.
pub fn writing_note(appends: bool, exact: bool) -> Value {
    let mut m = Map::new();
    m.insert("appends".into(), Value::Bool(appends));
    m.insert("exact".into(), Value::Bool(exact));
    m.insert("state".into(), Value::String("writing".into()));
    m.insert("claimed".into(), Value::Array(Vec::new()));
    Value::Object(m)
}

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
    pub doc: Map,
}

/// One output of a finished note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedOutput {
    pub name: String,
    pub claimed: Vec<String>,
    pub staged: bool,
}

impl Finished {
    pub fn run_short(&self) -> String {
        short(&py_str(self.doc.get("run_id"), "?"))
    }
    pub fn run_id(&self) -> Option<&str> {
        self.doc.get("run_id").and_then(Value::as_str)
    }
    pub fn finished_at(&self) -> String {
        py_str(self.doc.get("finished_at"), "?")
    }
    /// Whether the note lists any output (the peer's `if not last.get("outputs")`).
    pub fn has_outputs(&self) -> bool {
        self.doc.get("outputs").is_some_and(pyjson::truthy)
    }
    pub fn outputs(&self) -> Result<Vec<FinishedOutput>, Damage> {
        let m = match self.doc.get("outputs") {
            Some(Value::Object(m)) => m,
            Some(v) if pyjson::truthy(v) => return Err(bad("outputs", "not an object")),
            _ => return Ok(Vec::new()),
        };
        m.iter()
            .map(|(name, v)| {
                let o = v.as_object();
                let claimed = match o.and_then(|o| o.get("claimed")) {
                    Some(c) => string_list(c, &format!("outputs.{name}.claimed"))?,
                    None => Vec::new(),
                };
                let staged = o.and_then(|o| o.get("staged")).is_some_and(pyjson::truthy);
                Ok(FinishedOutput { name: name.clone(), claimed, staged })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_tells_damage_from_garbage() {
        assert!(matches!(parse_doc(b"{\"a\": 1}"), Ok(Parsed::Doc(_))));
        for garbage in [&b""[..], b"   ", b"{\"run_id\": \"x\"", b"[1, 2]", b"\"x\"", b"nul"] {
            assert_eq!(parse_doc(garbage), Ok(Parsed::NotADoc), "{:?}", String::from_utf8_lossy(garbage));
        }
        assert_eq!(parse_doc(b"{\"a\": \xff}"), Err(Damage::NotUtf8));
        assert!(matches!(parse_doc(b"{\"heartbeat\": NaN}"), Err(Damage::Unrepresentable(_))));
        assert!(matches!(parse_doc(b"{\"claimed\": [\"\\udcff\"]}"), Err(Damage::Unrepresentable(_))));
    }

    #[test]
    fn nesting_deeper_than_we_check_is_damage_not_garbage() {
        // Python accepts it (see pyparse's test); serde_json cannot hold it.
        let deep = format!("{{\"a\": {}1{}}}", "[".repeat(950), "]".repeat(950));
        assert!(matches!(parse_doc(deep.as_bytes()), Err(Damage::Unrepresentable(_))));
    }

    #[test]
    fn new_lease_is_the_peer_layout() {
        let d = LeaseDoc::new(
            "r1",
            "demo/sales/ingest",
            25043,
            Some("120249".into()),
            "vm|pid:[4026531836]",
            "2026-11-29T10:33:10Z".into(),
            1795948390.3607788,
        );
        assert_eq!(
            d.to_json(),
            r#"{"run_id": "r1", "task": "demo/sales/ingest", "pid": 25043, "pid_started": "120249", "host": "vm|pid:[4026531836]", "started_at": "2026-11-29T10:33:10Z", "heartbeat": 1795948390.3607788, "outputs": {}}"#
        );
    }

    #[test]
    fn unknown_fields_survive_a_round_trip_in_place() {
        let text =
            r#"{"run_id": "r", "zzz": [1, {"k": 1e400}], "task": "t", "outputs": {}, "x": 18446744073709551617}"#;
        let Parsed::Doc(m) = parse_doc(text.as_bytes()).unwrap() else { panic!() };
        let mut d = LeaseDoc(m);
        d.set("committed", Value::Bool(true));
        assert_eq!(
            d.to_json(),
            r#"{"run_id": "r", "zzz": [1, {"k": Infinity}], "task": "t", "outputs": {}, "x": 18446744073709551617, "committed": true}"#
        );
    }

    #[test]
    fn pid_like_python_int() {
        let cases: &[(&str, Result<i64, ()>)] = &[
            ("{}", Ok(0)),
            (r#"{"pid": null}"#, Ok(0)),
            (r#"{"pid": 42}"#, Ok(42)),
            (r#"{"pid": "42"}"#, Ok(42)),
            (r#"{"pid": " 4_2 "}"#, Ok(42)),
            (r#"{"pid": 42.9}"#, Ok(42)),
            (r#"{"pid": true}"#, Ok(1)),
            (r#"{"pid": ""}"#, Ok(0)),
            (r#"{"pid": "abc"}"#, Err(())),
            (r#"{"pid": [1]}"#, Err(())),
            (r#"{"pid": 99999999999999999999999}"#, Err(())),
        ];
        for (text, want) in cases {
            let d = LeaseDoc::from_parsed(parse_doc(text.as_bytes()).unwrap());
            assert_eq!(d.pid().map_err(|_| ()), *want, "{text}");
        }
    }

    #[test]
    fn notes_and_unrepaired() {
        let text = r#"{"outputs": {"a": {"appends": true, "exact": true, "state": "writing", "claimed": ["x"]},
            "b": {"appends": true, "exact": false, "claimed": []},
            "c": {"appends": true, "exact": true, "claimed": [], "staging": "out/_ubunye-0123456789ab"},
            "d": {"appends": true, "exact": true, "claimed": []},
            "e": {"appends": false, "exact": true, "claimed": []},
            "f": {"appends": true, "exact": true, "claimed": ["y"], "unseen": true}}}"#;
        let d = LeaseDoc::from_parsed(parse_doc(text.as_bytes()).unwrap());
        let notes = d.notes().unwrap();
        assert_eq!(notes.len(), 6);
        assert_eq!(unrepaired(&notes), vec!["b", "d", "f"]);
        let bad = LeaseDoc::from_parsed(parse_doc(br#"{"outputs": {"a": {"claimed": [1]}}}"#).unwrap());
        assert!(bad.notes().is_err());
        let bad = LeaseDoc::from_parsed(parse_doc(br#"{"outputs": [1]}"#).unwrap());
        assert!(bad.notes().is_err());
    }

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

    #[test]
    fn messages_print_like_python() {
        let d = LeaseDoc::default();
        assert_eq!(d.run_short(), "?");
        assert_eq!(d.field_text("pid"), "None");
        let d = LeaseDoc::from_parsed(parse_doc(br#"{"run_id": 5, "pid": 7}"#).unwrap());
        assert_eq!(d.run_short(), "5");
        assert_eq!(d.field_text("pid"), "7");
        assert_eq!(d.run_id(), "5");
    }
}
