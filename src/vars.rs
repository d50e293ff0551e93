//! The variables of a run: values as Python holds them ([`PyValue`]), built
//! as the peer's CLI builds them (`-dt`, `-dtf`, `-m`, `--var k=v`) or as its
//! Python API takes them (a JSON object). The batch key of them is `key.rs`.

use serde_json::Value;

use crate::pyjson::{float_value, int_parts, is_int_literal};

/// A value as the Python API can hold it (the key canonicaliser's input).
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An `int`, as exact decimal text with an optional leading `-`.
    Int(String),
    /// A `float` (NaN and infinities included).
    Float(f64),
    /// A `str`, or anything `json.dumps(default=str)` turns into one.
    Str(String),
    /// A `list` or `tuple`.
    List(Vec<PyValue>),
    /// A `dict`, in insertion order. Keys may be non-strings (Python API only).
    Dict(Vec<(PyValue, PyValue)>),
}

impl PyValue {
    /// The value `json.loads` gives for a JSON value: numbers without `.`, `e` or
    /// `E` are ints, other numbers floats.
    pub fn from_json(v: &Value) -> PyValue {
        match v {
            Value::Null => PyValue::None,
            Value::Bool(b) => PyValue::Bool(*b),
            Value::Number(n) => number_from_literal(n.as_str()),
            Value::String(s) => PyValue::Str(s.clone()),
            Value::Array(items) => PyValue::List(items.iter().map(PyValue::from_json).collect()),
            Value::Object(map) => {
                PyValue::Dict(map.iter().map(|(k, v)| (PyValue::Str(k.clone()), PyValue::from_json(v))).collect())
            }
        }
    }

    /// The value as JSON, or `None` if JSON cannot hold it (NaN or infinite
    /// floats, non-string dict keys, malformed int text).
    pub fn to_json(&self) -> Option<Value> {
        Some(match self {
            PyValue::None => Value::Null,
            PyValue::Bool(b) => Value::Bool(*b),
            PyValue::Int(text) => {
                let (neg, digits) = int_parts(text)?;
                let text = if neg { format!("-{digits}") } else { digits.to_owned() };
                Value::Number(serde_json::from_str(&text).ok()?)
            }
            PyValue::Float(x) => {
                if !x.is_finite() {
                    return None;
                }
                float_value(*x)
            }
            PyValue::Str(s) => Value::String(s.clone()),
            PyValue::List(items) => Value::Array(items.iter().map(PyValue::to_json).collect::<Option<_>>()?),
            PyValue::Dict(entries) => {
                let mut map = serde_json::Map::new();
                for (k, v) in entries {
                    let PyValue::Str(k) = k else { return None };
                    map.insert(k.clone(), v.to_json()?);
                }
                Value::Object(map)
            }
        })
    }

    /// Python's `type(v).__name__`.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            PyValue::None => "NoneType",
            PyValue::Bool(_) => "bool",
            PyValue::Int(_) => "int",
            PyValue::Float(_) => "float",
            PyValue::Str(_) => "str",
            PyValue::List(_) => "list",
            PyValue::Dict(_) => "dict",
        }
    }
}

fn number_from_literal(raw: &str) -> PyValue {
    if is_int_literal(raw) {
        match int_parts(raw) {
            Some((neg, digits)) => PyValue::Int(if neg { format!("-{digits}") } else { digits.to_owned() }),
            None => PyValue::Str(raw.to_owned()),
        }
    } else {
        match raw.parse::<f64>() {
            Ok(x) => PyValue::Float(x),
            Err(_) => PyValue::Str(raw.to_owned()),
        }
    }
}

/// The variables of a run, in insertion order (the order does not change the key).
pub type Variables = Vec<(String, PyValue)>;

/// Why `--var` items (or `--vars-json`) cannot become run variables.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum VarError {
    /// A `--var` item without `=`.
    #[error("--var expects key=value, got '{item}'. Example: --var region=gauteng")]
    NotKeyValue {
        /// The item as given.
        item: String,
    },
    /// A `--var` item whose name is empty after trimming.
    #[error("--var '{item}' has an empty name; expected key=value. Example: --var region=gauteng")]
    EmptyName {
        /// The item as given.
        item: String,
    },
    /// A `--var` name that is not a Python identifier.
    #[error(
        "--var '{item}': '{name}' is not a valid variable name (letters, digits and '_', not starting with a digit)"
    )]
    NotIdentifier {
        /// The item as given.
        item: String,
        /// The trimmed name.
        name: String,
    },
    /// A `--var` name ubunye reserves (`env`, `task_dir`).
    #[error("--var '{item}': '{name}' is reserved and cannot be set with --var")]
    Reserved {
        /// The item as given.
        item: String,
        /// The trimmed name.
        name: String,
    },
    /// `--var mode=...`.
    #[error("--var '{item}': set mode with -m/--mode, not --var")]
    Mode {
        /// The item as given.
        item: String,
    },
    /// `dt`/`dtf` given by flag and by `--var` with different values.
    #[error("'{name}' is given twice with different values ('{flag}' and '{var}'); pass one")]
    GivenTwice {
        /// `dt` or `dtf`.
        name: String,
        /// The value of the `-dt`/`-dtf` flag.
        flag: String,
        /// The value of the `--var`.
        var: String,
    },
    /// `--vars-json` that is not a JSON object.
    #[error("--vars-json expects a JSON object, got {found}")]
    NotAnObject {
        /// What was given instead (`null`, `a list`, ...).
        found: &'static str,
    },
}

/// A JSON object's entries as variables ([`variables_from_json`] of an object).
pub fn variables_from_map(map: &serde_json::Map<String, Value>) -> Variables {
    map.iter().map(|(k, v)| (k.clone(), PyValue::from_json(v))).collect()
}

/// Variables from a JSON object (the Python-API form, `ubunye key --vars-json`).
/// Err if not an object.
pub fn variables_from_json(v: &Value) -> Result<Variables, VarError> {
    match v {
        Value::Object(map) => Ok(variables_from_map(map)),
        other => Err(VarError::NotAnObject {
            found: match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "a list",
                Value::Object(_) => "an object",
            },
        }),
    }
}

use crate::pyparse::py_space;

/// Python's `str.isidentifier()`.
///
/// unicode-ident follows a newer Unicode than the peer's CPython 3.11 (Unicode 14).
/// Unicode 15.1 added ZWNJ, ZWJ and the two katakana middle dots to XID_Continue;
/// they are refused here as CPython 3.11 refuses them. Letters assigned after
/// Unicode 14 are still accepted.
fn py_identifier(s: &str) -> bool {
    let continues =
        |c: char| unicode_ident::is_xid_continue(c) && !matches!(c, '\u{200c}' | '\u{200d}' | '\u{30fb}' | '\u{ff65}');
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c == '_' || unicode_ident::is_xid_start(c) => chars.all(continues),
        _ => false,
    }
}

/// Parses `--var` items as the peer does: split at the first `=`, trim the name,
/// keep the value exactly; a repeated name keeps its first place and last value.
fn parse_var_flags(items: &[String]) -> Result<Vec<(String, String)>, VarError> {
    let mut parsed: Vec<(String, String)> = Vec::new();
    for item in items {
        let Some((raw_name, value)) = item.split_once('=') else {
            return Err(VarError::NotKeyValue { item: item.clone() });
        };
        let name = raw_name.trim_matches(py_space);
        if name.is_empty() {
            return Err(VarError::EmptyName { item: item.clone() });
        }
        if !py_identifier(name) {
            return Err(VarError::NotIdentifier { item: item.clone(), name: name.to_owned() });
        }
        if name == "env" || name == "task_dir" {
            return Err(VarError::Reserved { item: item.clone(), name: name.to_owned() });
        }
        if name == "mode" {
            return Err(VarError::Mode { item: item.clone() });
        }
        match parsed.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = value.to_owned(),
            None => parsed.push((name.to_owned(), value.to_owned())),
        }
    }
    Ok(parsed)
}

/// What the peer CLI builds from `-dt`, `-dtf`, `-m` and `--var`
/// (`ubunye.config.variables.build_variables` + `parse_var_flags`).
///
/// Starts as `dt`, `dtf` (None when not given) and `mode`, then sets each `--var`.
/// All values are strings.
pub fn cli_variables(dt: Option<&str>, dtf: Option<&str>, mode: &str, vars: &[String]) -> Result<Variables, VarError> {
    let str_or_none = |v: Option<&str>| v.map_or(PyValue::None, |s| PyValue::Str(s.to_owned()));
    let mut out: Variables = vec![
        ("dt".to_owned(), str_or_none(dt)),
        ("dtf".to_owned(), str_or_none(dtf)),
        ("mode".to_owned(), PyValue::Str(mode.to_owned())),
    ];
    for (name, value) in parse_var_flags(vars)? {
        let flag = match name.as_str() {
            "dt" => dt,
            "dtf" => dtf,
            _ => None,
        };
        if let Some(flag) = flag
            && flag != value
        {
            return Err(VarError::GivenTwice { name, flag: flag.to_owned(), var: value });
        }
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = PyValue::Str(value),
            None => out.push((name, PyValue::Str(value))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> PyValue {
        PyValue::Str(v.to_owned())
    }

    fn int(v: &str) -> PyValue {
        PyValue::Int(v.to_owned())
    }

    fn items(list: &[&str]) -> Vec<String> {
        list.iter().map(|v| (*v).to_owned()).collect()
    }

    fn cli(dt: Option<&str>, dtf: Option<&str>, vars: &[&str]) -> Result<Variables, VarError> {
        cli_variables(dt, dtf, "DEV", &items(vars))
    }

    #[test]
    fn var_errors() {
        let cases: &[(&[&str], VarError)] = &[
            (&["region"], VarError::NotKeyValue { item: "region".into() }),
            (&["ok=1", ""], VarError::NotKeyValue { item: "".into() }),
            (&["=x"], VarError::EmptyName { item: "=x".into() }),
            (&["  =x"], VarError::EmptyName { item: "  =x".into() }),
            (&["\u{1f}=x"], VarError::EmptyName { item: "\u{1f}=x".into() }),
            (&["1x=a"], VarError::NotIdentifier { item: "1x=a".into(), name: "1x".into() }),
            (&["a-b=c"], VarError::NotIdentifier { item: "a-b=c".into(), name: "a-b".into() }),
            (&["a\u{200d}b=c"], VarError::NotIdentifier { item: "a\u{200d}b=c".into(), name: "a\u{200d}b".into() }),
            (&["a b=c"], VarError::NotIdentifier { item: "a b=c".into(), name: "a b".into() }),
            (&["env=prod"], VarError::Reserved { item: "env=prod".into(), name: "env".into() }),
            (&["task_dir=/x"], VarError::Reserved { item: "task_dir=/x".into(), name: "task_dir".into() }),
            (&[" env =prod"], VarError::Reserved { item: " env =prod".into(), name: "env".into() }),
            (&["mode=PROD"], VarError::Mode { item: "mode=PROD".into() }),
        ];
        for (vars, want) in cases {
            assert_eq!(cli(None, None, vars).as_ref(), Err(want), "--var {vars:?}");
        }
    }

    #[test]
    fn var_error_messages() {
        let err = cli(None, None, &["region"]).expect_err("no '='");
        assert_eq!(err.to_string(), "--var expects key=value, got 'region'. Example: --var region=gauteng");
        let err = cli(None, None, &["mode=PROD"]).expect_err("mode");
        assert!(err.to_string().contains("set mode with -m/--mode, not --var"));
        let err = cli(Some("a"), None, &["dt=b"]).expect_err("dt twice");
        assert_eq!(err.to_string(), "'dt' is given twice with different values ('a' and 'b'); pass one");
    }

    #[test]
    fn dt_and_dtf_given_twice() {
        assert_eq!(
            cli(Some("a"), None, &["dt=b"]),
            Err(VarError::GivenTwice { name: "dt".into(), flag: "a".into(), var: "b".into() })
        );
        assert_eq!(
            cli(None, Some("%Y"), &["dtf=%d"]),
            Err(VarError::GivenTwice { name: "dtf".into(), flag: "%Y".into(), var: "%d".into() })
        );
        assert_eq!(
            cli(Some(""), None, &["dt=x"]),
            Err(VarError::GivenTwice { name: "dt".into(), flag: "".into(), var: "x".into() })
        );
        // The same value twice is fine, and so is a later --var that settles it.
        let want =
            vec![("dt".to_owned(), s("2025-01-01")), ("dtf".to_owned(), PyValue::None), ("mode".to_owned(), s("DEV"))];
        assert_eq!(cli(Some("2025-01-01"), None, &["dt=2025-01-01"]), Ok(want.clone()));
        assert_eq!(cli(Some("2025-01-01"), None, &["dt=x", "dt=2025-01-01"]), Ok(want.clone()));
        assert_eq!(cli(None, None, &["dt=2025-01-01"]), Ok(want));
    }

    #[test]
    fn var_values() {
        let got =
            cli(None, None, &[" region =Gauteng ", "note=a=b c", "empty=", "région=x", "_u=1"]).expect("valid vars");
        assert_eq!(
            got,
            vec![
                ("dt".to_owned(), PyValue::None),
                ("dtf".to_owned(), PyValue::None),
                ("mode".to_owned(), s("DEV")),
                ("region".to_owned(), s("Gauteng ")),
                ("note".to_owned(), s("a=b c")),
                ("empty".to_owned(), s("")),
                ("région".to_owned(), s("x")),
                ("_u".to_owned(), s("1")),
            ]
        );
        // A repeated name keeps its first place and its last value.
        let got = cli(None, None, &["a=1", "b=2", "a=3"]).expect("valid vars");
        assert_eq!(&got[3..], &[("a".to_owned(), s("3")), ("b".to_owned(), s("2"))]);
    }

    #[test]
    fn json_round_trip() {
        let v: Value =
            serde_json::from_str(r#"{"a": [1, 1.50, -0, 1e400, null, true, "x"], "b": {}}"#).expect("test JSON parses");
        let py = PyValue::from_json(&v);
        assert_eq!(
            py,
            PyValue::Dict(vec![
                (
                    s("a"),
                    PyValue::List(vec![
                        int("1"),
                        PyValue::Float(1.5),
                        int("0"),
                        PyValue::Float(f64::INFINITY),
                        PyValue::None,
                        PyValue::Bool(true),
                        s("x"),
                    ])
                ),
                (s("b"), PyValue::Dict(vec![])),
            ])
        );
        assert_eq!(py.to_json(), None, "infinity is not JSON");
        let ok = PyValue::List(vec![
            int("18446744073709551617"),
            PyValue::Float(1.0),
            PyValue::Dict(vec![(s("k"), PyValue::None)]),
        ]);
        let json = ok.to_json().expect("JSON-expressible");
        assert_eq!(
            crate::pyjson::dumps(&json, crate::pyjson::Style::COMPACT),
            r#"[18446744073709551617, 1.0, {"k": null}]"#
        );
        assert_eq!(PyValue::Dict(vec![(int("1"), int("2"))]).to_json(), None);
        assert_eq!(PyValue::Float(f64::NAN).to_json(), None);
    }

    #[test]
    fn variables_from_json_needs_an_object() {
        let v: Value = serde_json::from_str(r#"{"dt": "2025-01-01", "n": 13}"#).expect("parses");
        assert_eq!(variables_from_json(&v), Ok(vec![("dt".to_owned(), s("2025-01-01")), ("n".to_owned(), int("13"))]));
        assert_eq!(variables_from_json(&Value::Null), Err(VarError::NotAnObject { found: "null" }));
        assert_eq!(variables_from_json(&serde_json::json!([1])), Err(VarError::NotAnObject { found: "a list" }));
    }
}
