//! Reading a run record: only the fields the state needs, straight from its
//! bytes. A scan of a million batches reads a million records of about 3 KB,
//! so the usual record builds no `Value` tree: text fields are kept only when
//! they are strings, `outputs` keeps only each entry's `name` and `location`,
//! and everything else is skipped as it is parsed. What is not the usual
//! record (damaged, Python's own JSON) takes the slow path.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{RecordInfo, UnreadableFile};

/// The visitor methods for the kinds of JSON value a field does not keep:
/// each gives `$none`, a list or an object being passed over with [`Skip`]
/// (so under the parser's recursion limit).
macro_rules! passed_over {
    ($t:ty, $none:expr; $($kind:ident),*) => {
        $(passed_over!(@ $kind, $t, $none);)*
    };
    (@ bool, $t:ty, $none:expr) => { fn visit_bool<E: de::Error>(self, _: bool) -> Result<$t, E> { Ok($none) } };
    (@ i64, $t:ty, $none:expr) => { fn visit_i64<E: de::Error>(self, _: i64) -> Result<$t, E> { Ok($none) } };
    (@ u64, $t:ty, $none:expr) => { fn visit_u64<E: de::Error>(self, _: u64) -> Result<$t, E> { Ok($none) } };
    (@ f64, $t:ty, $none:expr) => { fn visit_f64<E: de::Error>(self, _: f64) -> Result<$t, E> { Ok($none) } };
    (@ str, $t:ty, $none:expr) => { fn visit_str<E: de::Error>(self, _: &str) -> Result<$t, E> { Ok($none) } };
    (@ unit, $t:ty, $none:expr) => { fn visit_unit<E: de::Error>(self) -> Result<$t, E> { Ok($none) } };
    (@ seq, $t:ty, $none:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<$t, A::Error> {
            while a.next_element::<Skip>()?.is_some() {}
            Ok($none)
        }
    };
    (@ map, $t:ty, $none:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<$t, A::Error> {
            while a.next_entry::<Skip, Skip>()?.is_some() {}
            Ok($none)
        }
    };
}

/// A `Deserialize` through a visitor of any JSON value (`deserialize_any`)
/// whose methods are `$body`.
macro_rules! any_value {
    ($t:ident, $($body:tt)*) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    $($body)*
                }
                d.deserialize_any(V)
            }
        }
    };
}

/// A value skipped unbuilt, but parsed as deeply as a `Value` would be: the
/// parser's recursion limit applies (`IgnoredAny` has none), so a record
/// nested too deep is unreadable here as it was when it was read whole.
struct Skip;

any_value!(Skip, passed_over!(Skip, Skip; bool, i64, u64, f64, str, unit, seq, map););

/// A field kept only when it is a string (as `Value::as_str` would keep it);
/// anything else reads as None, never as an error.
#[derive(Default)]
struct Text(Option<String>);

any_value!(
    Text,
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Text, E> {
        Ok(Text(Some(s.to_string())))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Text, E> {
        Ok(Text(Some(s)))
    }
    passed_over!(Text, Text(None); bool, i64, u64, f64, unit, seq, map);
);

/// One entry of `outputs`: its name and location when it is an object;
/// nothing when it is anything else.
#[derive(Default)]
struct Place(Option<(String, String)>);

any_value!(
    Place,
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Place, A::Error> {
        let (mut name, mut location) = (None, None);
        while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
            match k.as_ref() {
                "name" => name = a.next_value::<Text>()?.0,
                "location" => location = a.next_value::<Text>()?.0,
                _ => {
                    a.next_value::<Skip>()?;
                }
            }
        }
        Ok(Place(location.map(|l| (name.unwrap_or_default(), l))))
    }
    passed_over!(Place, Place(None); bool, i64, u64, f64, str, unit, seq);
);

/// `outputs`: the places of its object entries, when it is a list; nothing
/// when it is anything else.
#[derive(Default)]
struct Places(Vec<(String, String)>);

any_value!(
    Places,
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Places, A::Error> {
        let mut out = Vec::new();
        while let Some(p) = a.next_element::<Place>()? {
            out.extend(p.0);
        }
        Ok(Places(out))
    }
    passed_over!(Places, Places(Vec::new()); bool, i64, u64, f64, str, unit, map);
);

/// `variables`: kept when it is an object.
#[derive(Default)]
struct Vars(Option<serde_json::Map<String, Value>>);

impl<'de> Deserialize<'de> for Vars {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Vars, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Object(m) => Vars(Some(m)),
            _ => Vars(None),
        })
    }
}

/// The fields of a record the state needs; the rest is skipped unbuilt.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RecordHead {
    run_id: Text,
    status: Text,
    started_at: Text,
    ended_at: Text,
    error: Text,
    backend: Text,
    variables: Vars,
    outputs: Places,
}

/// Read one run record (only the fields the state needs).
pub fn read_record(path: &Path) -> Result<RecordInfo, UnreadableFile> {
    let bytes = crate::fsx::read_regular(path).map_err(|e| UnreadableFile::new(path, e.to_string()))?;
    record_of(&bytes, path)
}

/// A run record's bytes, read from `path` (a file, or an object's URL).
pub fn record_of(bytes: &[u8], path: &Path) -> Result<RecordInfo, UnreadableFile> {
    let unreadable = |why: String| UnreadableFile::new(path, why);
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut damaged = None;
    // Only an object takes the fast path: a derived struct would also take a
    // list of its fields in order (`[1, 2]`), which is not a record.
    // And only text: skipped parts are not checked for UTF-8 as they are
    // passed over, and a record Python cannot decode is unreadable.
    let s = std::str::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8 text".into()))?;
    let object = s.trim_start().starts_with('{');
    let fast = if object { serde_json::from_str::<RecordHead>(s).ok() } else { None };
    let head: RecordHead = match fast {
        Some(h) => h,
        None => {
            match serde_json::from_str::<Value>(s) {
                Ok(v) if v.is_object() => serde_json::from_value(v).map_err(|e| unreadable(e.to_string()))?,
                Ok(_) => {
                    damaged = Some("it is JSON but not an object, so it names no status".into());
                    RecordHead::default()
                }
                Err(e) => match crate::pyparse::python_accepts(s) {
                    // Half-written when its run died (the peer writes records
                    // in place), or changed by hand: its status is not known.
                    None => {
                        damaged = Some(crate::lineage::damage_text(s, &e));
                        RecordHead::default()
                    }
                    Some(_) => {
                        serde_json::from_str(&crate::pyparse::sanitize(s)).map_err(|e| unreadable(e.to_string()))?
                    }
                },
            }
        }
    };
    Ok(RecordInfo {
        run_id: head.run_id.0.unwrap_or(stem),
        path: path.to_path_buf(),
        status: head.status.0,
        started_at: head.started_at.0,
        ended_at: head.ended_at.0,
        error: head.error.0,
        damaged,
        backend: head.backend.0,
        variables: head.variables.0,
        locations: head.outputs.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> RecordInfo {
        record_of(text.as_bytes(), Path::new("/l/t/run-1.json")).unwrap()
    }

    /// The fast path keeps what `Value::as_str` would keep and skips the rest,
    /// whatever type a field has: a field of the wrong type is None, never an
    /// error that would make the record unreadable.
    #[test]
    fn fields_of_other_types_are_none_and_unknown_fields_are_skipped() {
        let r = read(
            r#"{"run_id": 7, "status": ["x"], "started_at": {"a": [1, {"b": null}]}, "ended_at": null,
                "error": true, "backend": 1.5, "variables": "dt=1", "outputs": {"name": "a"},
                "extra": {"deep": [[[{}]]]}, "lineage": [1, 2, 3]}"#,
        );
        assert_eq!(r.run_id, "run-1", "no run_id string: the file's name");
        assert_eq!((r.status, r.started_at, r.ended_at, r.error, r.backend), (None, None, None, None, None));
        assert!(r.variables.is_none() && r.locations.is_empty() && r.damaged.is_none());
    }

    #[test]
    fn outputs_keep_the_name_and_location_of_object_entries_only() {
        let r = read(
            r#"{"run_id": "r", "status": "success", "variables": {"dt": "2025-01-01", "n": 3},
                "outputs": [1, "x", {"name": "a", "location": "out/a", "rows": 9}, {"location": "out/b"},
                            {"name": "c", "location": 5}, {"name": "d"}, [{"location": "no"}]]}"#,
        );
        assert_eq!(r.run_id, "r");
        assert_eq!(r.status.as_deref(), Some("success"));
        assert_eq!(r.locations, vec![("a".into(), "out/a".into()), (String::new(), "out/b".into())]);
        let v = r.variables.unwrap();
        assert_eq!((v["dt"].as_str(), v["n"].as_i64()), (Some("2025-01-01"), Some(3)));
    }

    /// What the fast path cannot take (a duplicate field, Python's NaN) reads
    /// as the whole-value path reads it; text that is no JSON is damaged.
    #[test]
    fn the_slow_paths_still_read_what_they_read_before() {
        let r = read(r#"{"status": "running", "status": "success", "run_id": "r"}"#);
        assert_eq!(r.status.as_deref(), Some("success"), "the last of a duplicate field, as Python reads it");
        let r = read(r#"{"status": "error", "run_id": "r", "rows": NaN}"#);
        assert_eq!(r.status.as_deref(), Some("error"));
        let r = read(r#"{"status": "succ"#);
        assert!(r.damaged.is_some() && r.status.is_none());
        let r = read("[1, 2]");
        assert!(r.damaged.is_some());
        assert!(record_of(b"\xff\xfe", Path::new("/l/t/x.json")).is_err());
    }

    /// What the fast path passes over is still checked as a whole read checks
    /// it (UTF-8, the parser's depth), so it reads the same.
    #[test]
    fn skipped_parts_are_checked_as_a_whole_read_checks_them() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for field in ["error", "backend", "started_at"] {
            let text = format!(r#"{{"run_id": "r", "status": "success", "{field}": {}}}"#, deep(200));
            assert!(record_of(text.as_bytes(), Path::new("/l/t/r.json")).is_err(), "{field} nested 200 deep");
        }
        let text = format!(r#"{{"run_id": "r", "status": "success", "outputs": [{{"x": {}}}]}}"#, deep(200));
        assert!(record_of(text.as_bytes(), Path::new("/l/t/r.json")).is_err(), "an output nested 200 deep");
        let mut bytes = br#"{"run_id": "r", "status": "success", "error": ["#.to_vec();
        bytes.extend_from_slice(b"\"\xff\"]}");
        assert!(record_of(&bytes, Path::new("/l/t/r.json")).is_err(), "not UTF-8 inside a skipped list");
        let text = format!(r#"{{"run_id": "r", "status": "success", "error": {}}}"#, deep(20));
        assert_eq!(read(&text).status.as_deref(), Some("success"), "20 deep is fine");
    }
}
