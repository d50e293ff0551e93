//! The batch key of ubunye-engine 0.8.0, from a task and its variables
//! ([`crate::vars`]).
//!
//! Python reference (`ubunye.core.runs.batch_key`):
//! `sha256(utf8(json.dumps({"task": task_path, "variables": {k: v for k, v in
//! variables.items() if v is not None}}, sort_keys=True, default=str))).hexdigest()[:16]`.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::pyjson::{float_repr, int_parts, write_str};
use crate::vars::{PyValue, Variables};

/// Why a batch key cannot be computed (Python's `batch_key` raises).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KeyError {
    /// A nested dict mixes key types that Python cannot sort.
    #[error("TypeError: '<' not supported between instances of '{left}' and '{right}'")]
    UnorderableKeys {
        /// Type name of the left operand of the failing `<`.
        left: &'static str,
        /// Type name of the right operand of the failing `<`.
        right: &'static str,
    },
    /// A dict key that Python cannot hold (a list or dict).
    #[error("TypeError: unhashable type: '{type_name}'")]
    UnhashableKey {
        /// Type name of the key.
        type_name: &'static str,
    },
    /// A `PyValue::Int` whose text is not an integer.
    #[error("not an integer: {text:?}")]
    BadInt {
        /// The offending text.
        text: String,
    },
}

/// The exact text `batch_key` hashes.
pub fn canonical_text(task_path: &str, vars: &Variables) -> Result<String, KeyError> {
    // A dict holds each name once (the last value wins); top-level None is dropped.
    let mut top: BTreeMap<&str, &PyValue> = BTreeMap::new();
    for (name, value) in vars {
        top.insert(name, value);
    }
    let mut out = String::from("{\"task\": ");
    write_str(&mut out, task_path, true);
    out.push_str(", \"variables\": {");
    let mut first = true;
    for (name, value) in top {
        if *value == PyValue::None {
            continue;
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        write_str(&mut out, name, true);
        out.push_str(": ");
        write_value(&mut out, value)?;
    }
    out.push_str("}}");
    Ok(out)
}

/// The batch key: the first 16 lowercase hex digits of the SHA-256 of
/// [`canonical_text`].
pub fn batch_key(task_path: &str, vars: &Variables) -> Result<String, KeyError> {
    let text = canonical_text(task_path, vars)?;
    let digest = Sha256::digest(text.as_bytes());
    let mut key = String::with_capacity(16);
    for byte in digest.iter().take(8) {
        key.push_str(&format!("{byte:02x}"));
    }
    Ok(key)
}

/// True if the variables name a batch: some variable other than `mode` and `dtf`
/// holds a value that is neither `None` nor `""`.
pub fn names_a_batch(vars: &Variables) -> bool {
    let mut last: BTreeMap<&str, &PyValue> = BTreeMap::new();
    for (name, value) in vars {
        last.insert(name, value);
    }
    last.into_iter().any(|(name, value)| {
        name != "mode"
            && name != "dtf"
            && !matches!(value, PyValue::None)
            && !matches!(value, PyValue::Str(s) if s.is_empty())
    })
}

fn write_int(out: &mut String, text: &str) -> Result<(), KeyError> {
    let (neg, digits) = int_parts(text).ok_or_else(|| KeyError::BadInt { text: text.to_owned() })?;
    if neg {
        out.push('-');
    }
    out.push_str(digits);
    Ok(())
}

fn write_value(out: &mut String, value: &PyValue) -> Result<(), KeyError> {
    match value {
        PyValue::None => out.push_str("null"),
        PyValue::Bool(true) => out.push_str("true"),
        PyValue::Bool(false) => out.push_str("false"),
        PyValue::Int(text) => write_int(out, text)?,
        PyValue::Float(x) => out.push_str(&float_repr(*x)),
        PyValue::Str(s) => write_str(out, s, true),
        PyValue::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        PyValue::Dict(entries) => {
            out.push('{');
            for (i, (k, v)) in sorted_entries(entries)?.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_key(out, k)?;
                out.push_str(": ");
                write_value(out, v)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// A dict key as json.dumps writes it: always a string.
fn write_key(out: &mut String, key: &PyValue) -> Result<(), KeyError> {
    match key {
        PyValue::Str(s) => write_str(out, s, true),
        PyValue::Int(text) => {
            out.push('"');
            write_int(out, text)?;
            out.push('"');
        }
        PyValue::Float(x) => {
            out.push('"');
            out.push_str(&float_repr(*x));
            out.push('"');
        }
        PyValue::Bool(b) => out.push_str(if *b { "\"true\"" } else { "\"false\"" }),
        PyValue::None => out.push_str("\"null\""),
        PyValue::List(_) | PyValue::Dict(_) => {
            return Err(KeyError::UnhashableKey { type_name: key.type_name() });
        }
    }
    Ok(())
}

/// Which keys Python can compare with `<`: str with str, numbers with numbers,
/// None with nothing.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum KeyClass {
    Str,
    Num,
    None,
}

fn key_class(key: &PyValue) -> Result<KeyClass, KeyError> {
    match key {
        PyValue::Str(_) => Ok(KeyClass::Str),
        PyValue::Bool(_) | PyValue::Int(_) | PyValue::Float(_) => Ok(KeyClass::Num),
        PyValue::None => Ok(KeyClass::None),
        PyValue::List(_) | PyValue::Dict(_) => Err(KeyError::UnhashableKey { type_name: key.type_name() }),
    }
}

/// A numeric key: bools count as 0 and 1.
enum Num<'a> {
    Int { neg: bool, digits: &'a str },
    Float(f64),
}

fn num_of(key: &PyValue) -> Result<Num<'_>, KeyError> {
    match key {
        PyValue::Bool(b) => Ok(Num::Int { neg: false, digits: if *b { "1" } else { "0" } }),
        PyValue::Int(text) => {
            let (neg, digits) = int_parts(text).ok_or_else(|| KeyError::BadInt { text: text.clone() })?;
            Ok(Num::Int { neg, digits })
        }
        PyValue::Float(x) => Ok(Num::Float(*x)),
        _ => Ok(Num::Float(f64::NAN)),
    }
}

/// Compares two normalized decimal integers exactly.
fn cmp_int(a_neg: bool, a: &str, b_neg: bool, b: &str) -> Ordering {
    match (a_neg, b_neg) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (neg, _) => {
            let mag = a.len().cmp(&b.len()).then_with(|| a.cmp(b));
            if neg { mag.reverse() } else { mag }
        }
    }
}

/// Compares an exact integer with a finite float, exactly (as Python does).
fn cmp_int_float(neg: bool, digits: &str, x: f64) -> Ordering {
    let whole = x.trunc();
    // `{:.0}` of an integral f64 is its exact decimal value.
    let text = format!("{:.0}", whole.abs());
    let whole_neg = whole < 0.0;
    match cmp_int(neg, digits, whole_neg && text != "0", &text) {
        Ordering::Equal => {
            let frac = x - whole;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        other => other,
    }
}

/// A total order on numeric keys: exact numeric order, NaN after everything.
fn cmp_num(a: &Num<'_>, b: &Num<'_>) -> Ordering {
    match (a, b) {
        (Num::Int { neg: an, digits: ad }, Num::Int { neg: bn, digits: bd }) => cmp_int(*an, ad, *bn, bd),
        (Num::Float(x), Num::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        },
        (Num::Int { neg, digits }, Num::Float(x)) => {
            if x.is_nan() || *x == f64::INFINITY {
                Ordering::Less
            } else if *x == f64::NEG_INFINITY {
                Ordering::Greater
            } else {
                cmp_int_float(*neg, digits, *x)
            }
        }
        (Num::Float(_), Num::Int { .. }) => cmp_num(b, a).reverse(),
    }
}

fn is_nan(n: &Num<'_>) -> bool {
    matches!(n, Num::Float(x) if x.is_nan())
}

/// The entries of a dict in the order `json.dumps(sort_keys=True)` writes them.
///
/// Keys equal in Python (`1`, `1.0`, `True`) are one dict key: the first key is
/// kept with the last value. Mixed key types raise Python's TypeError; the types
/// named are those of the first class change in insertion order, which is the
/// comparison CPython makes first (exact for two keys).
fn sorted_entries(entries: &[(PyValue, PyValue)]) -> Result<Vec<(&PyValue, &PyValue)>, KeyError> {
    let mut classes = Vec::with_capacity(entries.len());
    for (k, _) in entries {
        classes.push(key_class(k)?);
    }
    // Sort each class on its own (stable, so equal keys keep insertion order).
    let mut strs: Vec<(usize, &str)> = Vec::new();
    let mut nums: Vec<(usize, Num<'_>)> = Vec::new();
    let mut nones: Vec<usize> = Vec::new();
    for (i, (k, _)) in entries.iter().enumerate() {
        match k {
            PyValue::Str(s) => strs.push((i, s)),
            PyValue::None => nones.push(i),
            _ => nums.push((i, num_of(k)?)),
        }
    }
    strs.sort_by(|a, b| a.1.cmp(b.1));
    nums.sort_by(|a, b| cmp_num(&a.1, &b.1));

    // Merge runs of equal keys: first key, last value. `groups` holds
    // (index of the kept key, index of the value).
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for run in strs.chunk_by(|a, b| a.1 == b.1) {
        groups.push((run[0].0, run.iter().map(|e| e.0).max().unwrap_or(run[0].0)));
    }
    for run in nums.chunk_by(|a, b| !is_nan(&a.1) && !is_nan(&b.1) && cmp_num(&a.1, &b.1) == Ordering::Equal) {
        groups.push((run[0].0, run.iter().map(|e| e.0).max().unwrap_or(run[0].0)));
    }
    // None == None: one key.
    if let (Some(first), Some(last)) = (nones.first(), nones.last()) {
        groups.push((*first, *last));
    }

    let present = [!strs.is_empty(), !nums.is_empty(), !nones.is_empty()];
    if present.iter().filter(|p| **p).count() > 1 {
        // The surviving keys in insertion order; find the first change of class.
        let mut kept: Vec<usize> = groups.iter().map(|g| g.0).collect();
        kept.sort_unstable();
        for pair in kept.windows(2) {
            let (earlier, later) = (pair[0], pair[1]);
            if classes[earlier] != classes[later] {
                return Err(KeyError::UnorderableKeys {
                    left: entries[later].0.type_name(),
                    right: entries[earlier].0.type_name(),
                });
            }
        }
    }
    Ok(groups.into_iter().map(|(k, v)| (&entries[k].0, &entries[v].1)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vars::cli_variables;

    fn s(v: &str) -> PyValue {
        PyValue::Str(v.to_owned())
    }

    fn int(v: &str) -> PyValue {
        PyValue::Int(v.to_owned())
    }

    fn cli(dt: Option<&str>, dtf: Option<&str>) -> Variables {
        cli_variables(dt, dtf, "DEV", &[]).expect("valid")
    }

    #[test]
    fn cli_keys() {
        let vars = cli(Some("2025-01-01"), None);
        assert_eq!(
            canonical_text("demo/sales/ingest", &vars),
            Ok(r#"{"task": "demo/sales/ingest", "variables": {"dt": "2025-01-01", "mode": "DEV"}}"#.to_owned())
        );
        assert_eq!(batch_key("demo/sales/ingest", &vars), Ok("39bc42311894ddba".to_owned()));
        let vars = cli(None, None);
        assert_eq!(batch_key("demo/sales/ingest", &vars), Ok("e28288cfb0ec7f09".to_owned()));
        assert!(!names_a_batch(&vars));
    }

    #[test]
    fn names_a_batch_table() {
        let cases: &[(Vec<(&str, PyValue)>, bool)] = &[
            (vec![], false),
            (vec![("mode", s("DEV")), ("dtf", s("%Y"))], false),
            (vec![("dt", PyValue::None), ("region", s(""))], false),
            (vec![("dt", s("2025-01-01"))], true),
            (vec![("n", int("0"))], true),
            (vec![("b", PyValue::Bool(false))], true),
            (vec![("l", PyValue::List(vec![]))], true),
            (vec![("dt", s("x")), ("dt", PyValue::None)], false),
        ];
        for (vars, want) in cases {
            let vars: Variables = vars.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
            assert_eq!(names_a_batch(&vars), *want, "{vars:?}");
        }
    }

    #[test]
    fn nested_keys() {
        let dict = |entries: Vec<(PyValue, PyValue)>| vec![("m".to_owned(), PyValue::Dict(entries))];
        let text = |entries| {
            canonical_text("t", &dict(entries))
                .map(|t| t["{\"task\": \"t\", \"variables\": {\"m\": ".len()..t.len() - 2].to_owned())
        };
        type Case = (Vec<(PyValue, PyValue)>, Result<&'static str, KeyError>);
        let cases: Vec<Case> = vec![
            (vec![(int("10"), s("a")), (int("9"), s("b"))], Ok(r#"{"9": "b", "10": "a"}"#)),
            (
                vec![(PyValue::Float(1.5), s("a")), (int("1"), s("b")), (PyValue::Bool(true), s("c"))],
                Ok(r#"{"1": "c", "1.5": "a"}"#),
            ),
            (vec![(PyValue::Bool(true), s("a")), (int("1"), s("b"))], Ok(r#"{"true": "b"}"#)),
            (
                vec![(PyValue::Bool(false), s("a")), (PyValue::Float(-0.5), s("b"))],
                Ok(r#"{"-0.5": "b", "false": "a"}"#),
            ),
            (
                vec![(int("9007199254740993"), s("a")), (PyValue::Float(9007199254740992.0), s("b"))],
                Ok(r#"{"9007199254740992.0": "b", "9007199254740993": "a"}"#),
            ),
            (
                vec![(int("-18446744073709551617"), s("a")), (PyValue::Float(f64::NEG_INFINITY), s("b"))],
                Ok(r#"{"-Infinity": "b", "-18446744073709551617": "a"}"#),
            ),
            (vec![(PyValue::None, s("a"))], Ok(r#"{"null": "a"}"#)),
            (vec![(s("b"), int("1")), (s("a"), PyValue::None)], Ok(r#"{"a": null, "b": 1}"#)),
            (
                vec![(int("1"), s("a")), (s("b"), int("2"))],
                Err(KeyError::UnorderableKeys { left: "str", right: "int" }),
            ),
            (
                vec![(PyValue::Bool(true), int("1")), (PyValue::None, int("2"))],
                Err(KeyError::UnorderableKeys { left: "NoneType", right: "bool" }),
            ),
            (
                vec![(s("a"), int("1")), (PyValue::Float(1.0), int("2"))],
                Err(KeyError::UnorderableKeys { left: "float", right: "str" }),
            ),
            (vec![(PyValue::List(vec![]), int("1"))], Err(KeyError::UnhashableKey { type_name: "list" })),
            (vec![(int("x"), int("1"))], Err(KeyError::BadInt { text: "x".into() })),
        ];
        for (entries, want) in cases {
            let shown = format!("{entries:?}");
            assert_eq!(text(entries), want.map(str::to_owned), "{shown}");
        }
    }
}
