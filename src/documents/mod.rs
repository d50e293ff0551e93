//! The documents: the lease, its output notes, the finished note and what the
//! engine reads of a lineage run record.
//!
//! Each document is kept as the ordered JSON object it was read as, so fields this
//! engine does not know survive a rewrite in their place, exactly as the peer's
//! `dict` round trip keeps them. Typed accessors read it the way the peer's Python
//! does (truthiness, `int(x or 0)`), and refuse shapes the peer would crash on.
//!
//! The lease and its output notes (the swap record of an overwrite among them)
//! are `lease_doc.rs`; the finished note `finished_note.rs`.

use serde_json::Value;

use crate::pyjson;

mod finished_note;
mod lease_doc;

pub use finished_note::{Finished, FinishedOutput, finished_note};
pub use lease_doc::{LeaseDoc, Note, unrepaired, writing_note};
pub(crate) use lease_doc::{SwapNote, swap_note};

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
    /// The bytes are not UTF-8.
    #[error("it is not UTF-8 text")]
    NotUtf8,
    /// JSON the peer reads but serde_json cannot hold (NaN, a lone surrogate,
    /// deep nesting): the parser's error.
    #[error("it holds JSON this engine cannot represent faithfully ({0})")]
    Unrepresentable(String),
    /// A field in a shape the peer would crash on.
    #[error("field '{field}' is {what}")]
    BadField {
        /// The field, dotted: `pid`, `outputs.events.claimed`.
        field: String,
        /// What it holds instead: `not an object`, `the text "x", not a number`.
        what: String,
    },
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
}
