//! The lease document and its output notes.

use serde_json::Value;

use super::{Damage, Map, Parsed, bad, py_int, py_str, short, string_list};
use crate::beneath::FolderId;
use crate::pyjson;

/// One output note of a lease, read the way the peer reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The output's name (its key in the lease's `outputs`).
    pub name: String,
    /// `appends`: the output appends (the peer's mode `append`, or no mode).
    pub appends: bool,
    /// `exact`: the backend claims its files (pandas always; Spark once it has
    /// a staging folder).
    pub exact: bool,
    /// `state`: `writing`, or `done` once the writer returned.
    pub state: Option<String>,
    /// `claimed`: its files, relative to the use case, each saved before it lands.
    pub claimed: Vec<String>,
    /// `staging`: the run's staging folder, relative to the use case:
    /// `_ubunye-<12hex>` in the output, or `.<name>.ubunye-<12hex>` beside it.
    pub staging: Option<String>,
    /// `unseen`: a claim's folder was not visible when it was to be taken back.
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

    /// The lease as the peer reads it: `{}` for a file that is not a JSON object.
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

    /// Whether it is `{}` (empty, not JSON, or an empty object): judged by its
    /// age alone.
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

    /// Whether its `run_id` is the text `run_id`.
    pub fn is_run(&self, run_id: &str) -> bool {
        matches!(self.0.get("run_id"), Some(Value::String(s)) if s == run_id)
    }

    /// A field as Python's `str()` prints it in a message (`None` when missing).
    pub fn field_text(&self, field: &str) -> String {
        py_str(self.0.get(field), "None")
    }

    /// Whether its `host` is `host`: then the process table, not the age, decides.
    pub fn host_is(&self, host: &str) -> bool {
        matches!(self.0.get("host"), Some(Value::String(s)) if s == host)
    }

    /// Its `host`, when it is text.
    pub fn host(&self) -> Option<&str> {
        self.0.get("host").and_then(Value::as_str)
    }

    /// Its `started_at` (`YYYY-MM-DDTHH:MM:SSZ`), when it is text.
    pub fn started_at(&self) -> Option<&str> {
        self.0.get("started_at").and_then(Value::as_str)
    }

    /// Its `heartbeat` (epoch seconds), when it is a number.
    pub fn heartbeat(&self) -> Option<f64> {
        self.0.get("heartbeat").and_then(|v| v.as_f64())
    }

    /// Its `pid` as the peer's `int(x or 0)` reads it; damage where that would
    /// raise.
    pub fn pid(&self) -> Result<i64, Damage> {
        py_int(self.0.get("pid")).map_err(|what| Damage::BadField { field: "pid".into(), what })
    }

    /// Its `pid_started` (the holder's start token), unless missing or null.
    pub fn pid_started(&self) -> Option<&Value> {
        self.0.get("pid_started").filter(|v| !v.is_null())
    }

    /// `kept` is truthy: its run ended and left the lease for the next run to
    /// clean up.
    pub fn kept(&self) -> bool {
        self.0.get("kept").is_some_and(pyjson::truthy)
    }

    /// `committed` is truthy: its run got to commit.
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

    /// Whether it has a `replaces` field at all (even an empty one).
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

    /// Its `outputs` object, to change; made `{}` when missing or not an object.
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

    /// Set a field: in its place when it is there, else at the end.
    pub fn set(&mut self, field: &str, v: Value) {
        self.0.insert(field.to_string(), v);
    }

    /// Remove a field, the others keeping their order.
    pub fn remove(&mut self, field: &str) {
        self.0.shift_remove(field);
    }
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

/// What a note records of an overwrite published by swapping folders: the
/// identity of the run's new folder (saved before the swap, so that a run killed
/// around it can be told apart: swapped or not), and where no exchange exists,
/// the old output's place aside (`<staging>.old`, saved before it is moved).
/// As JSON: `"swap": {"dev": D, "ino": I, "born": [S, NS], "old": "..."}`; `born`
/// only where the file system keeps birth times (the peer ignores `swap`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SwapNote {
    pub id: FolderId,
    pub old: Option<String>,
}

/// The `swap` record of an output note: None when there is none; Err when there
/// is one that cannot be read (then whether the swap happened cannot be told).
pub(crate) fn swap_note(note: &Map) -> Option<std::result::Result<SwapNote, ()>> {
    let v = note.get("swap")?;
    let Value::Object(m) = v else { return Some(Err(())) };
    let num = |k: &str| m.get(k).and_then(Value::as_u64);
    let old = match m.get("old") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Some(Err(())),
    };
    let born = match m.get("born") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => match (a.first().and_then(Value::as_i64), a.get(1).and_then(Value::as_u64)) {
            (Some(sec), Some(ns)) if a.len() == 2 && ns < 1_000_000_000 => Some((sec, ns as u32)),
            _ => return Some(Err(())),
        },
        Some(_) => return Some(Err(())),
    };
    Some(match (num("dev"), num("ino")) {
        (Some(dev), Some(ino)) => Ok(SwapNote { id: FolderId { dev, ino, born }, old }),
        _ => Err(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::parse_doc;

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
