//! The variables of a run as the peer's CLI builds them (`-dt`, `-dtf`, `-m`,
//! `--var k=v`) or as its Python API takes them (a JSON object).

use serde_json::Value;

use crate::key::{PyValue, Variables};

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

/// Variables from a JSON object (the Python-API form, `ubunye key --vars-json`).
/// Err if not an object.
pub fn variables_from_json(v: &Value) -> Result<Variables, VarError> {
    match v {
        Value::Object(map) => Ok(map.iter().map(|(k, v)| (k.clone(), PyValue::from_json(v))).collect()),
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

/// Python's `str.isspace()`: Unicode White_Space plus `\x1c`..`\x1f`.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

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
        if let Some(flag) = flag {
            if flag != value {
                return Err(VarError::GivenTwice { name, flag: flag.to_owned(), var: value });
            }
        }
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = PyValue::Str(value),
            None => out.push((name, PyValue::Str(value))),
        }
    }
    Ok(out)
}
