//! Every batch-key vector captured from the real ubunye-engine 0.8.0
//! (`fixtures/peer/batch_key_vectors.json`).

use serde_json::Value;
use ubunye::key::{batch_key, canonical_text, names_a_batch};
use ubunye::vars::{PyValue, Variables, cli_variables};

fn load() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/peer/batch_key_vectors.json");
    let text = std::fs::read_to_string(path).expect("read batch_key_vectors.json");
    serde_json::from_str(&text).expect("batch_key_vectors.json is JSON")
}

/// A value of the "python" group: JSON, or a `{"$py": ...}` tag for what JSON cannot carry.
fn decode_py(v: &Value) -> PyValue {
    let Some(tag) = v.get("$py").and_then(Value::as_str) else {
        return match v {
            Value::Array(items) => PyValue::List(items.iter().map(decode_py).collect()),
            Value::Object(map) => {
                PyValue::Dict(map.iter().map(|(k, v)| (PyValue::Str(k.clone()), decode_py(v))).collect())
            }
            other => PyValue::from_json(other),
        };
    };
    match tag {
        "date" | "datetime" | "Decimal" | "set" | "bytes" | "PosixPath" => {
            PyValue::Str(v["str"].as_str().expect("tag has str").to_owned())
        }
        "float" => PyValue::Float(match v["repr"].as_str().expect("float tag has repr") {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            other => other.parse().expect("float repr"),
        }),
        "tuple" => PyValue::List(v["items"].as_array().expect("tuple items").iter().map(decode_py).collect()),
        "dict" => PyValue::Dict(
            v["items"]
                .as_array()
                .expect("dict items")
                .iter()
                .map(|pair| {
                    let pair = pair.as_array().expect("dict item is a pair");
                    assert_eq!(pair.len(), 2, "dict item is a pair");
                    (decode_py(&pair[0]), decode_py(&pair[1]))
                })
                .collect(),
        ),
        other => panic!("unknown $py tag {other}"),
    }
}

fn decode_vars(vector: &Value) -> Variables {
    let vars = &vector["variables"];
    if vars.is_null() {
        return Vec::new();
    }
    let map = vars.as_object().expect("variables is an object or null");
    let python = vector["group"] == "python";
    map.iter()
        .map(|(k, v)| {
            let v = if python { decode_py(v) } else { PyValue::from_json(v) };
            (k.clone(), v)
        })
        .collect()
}

/// Splits a command line into words: whitespace separates, `'…'` is literal,
/// `"…"` allows `\"`, `\\`, `\$`, `` \` ``, and a bare `\` escapes the next char.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&n) if matches!(n, '"' | '\\' | '$' | '`') => {
                                word.push(n);
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The capture writes non-ASCII characters of a command as `\uXXXX`; undo that.
fn decode_u_escapes(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("\\u") {
        out.push_str(&rest[..at]);
        let hex = rest.get(at + 2..at + 6);
        match hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32) {
            Some(c) => {
                out.push(c);
                rest = &rest[at + 6..];
            }
            None => {
                out.push_str("\\u");
                rest = &rest[at + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Rebuilds the variables of an `ubunye run` command line through `cli_variables`.
fn vars_from_command(command: &str) -> Variables {
    let words: Vec<String> = shell_words(command).iter().map(|w| decode_u_escapes(w)).collect();
    assert_eq!(&words[..2], ["ubunye", "run"], "{command}");
    let (mut dt, mut dtf, mut mode) = (None, None, "DEV".to_owned());
    let mut vars = Vec::new();
    let mut i = 2;
    while i < words.len() {
        let flag = words[i].as_str();
        let takes_value = matches!(
            flag,
            "-dt" | "--data-timestamp" | "-dtf" | "-m" | "--mode" | "--var" | "-d" | "-u" | "-p" | "-t" | "--backend"
        );
        let value = if takes_value {
            i += 1;
            Some(words.get(i).unwrap_or_else(|| panic!("{flag} needs a value: {command}")).clone())
        } else {
            None
        };
        match (flag, value) {
            ("-dt" | "--data-timestamp", Some(v)) => dt = Some(v),
            ("-dtf", Some(v)) => dtf = Some(v),
            ("-m" | "--mode", Some(v)) => mode = v,
            ("--var", Some(v)) => vars.push(v),
            ("-d" | "-u" | "-p" | "-t" | "--backend", Some(_)) => {}
            ("--rerun" | "--all" | "--lineage" | "--resume", None) => {}
            (other, _) => panic!("unexpected word {other:?} in {command}"),
        }
        i += 1;
    }
    cli_variables(dt.as_deref(), dtf.as_deref(), &mode, &vars)
        .unwrap_or_else(|e| panic!("cli_variables failed for {command}: {e}"))
}

#[test]
fn all_vectors() {
    let doc = load();
    let vectors = doc["vectors"].as_array().expect("vectors is a list");
    assert_eq!(doc["count"], 67);
    assert_eq!(vectors.len(), 67);
    let mut checked = 0;
    let mut cli_checked = 0;
    for (n, vector) in vectors.iter().enumerate() {
        let label = format!(
            "vector {n} ({} {})",
            vector["group"],
            vector.get("name").or_else(|| vector.get("command")).unwrap_or(&Value::Null)
        );
        let task = vector["task_path"].as_str().expect("task_path");
        let vars = decode_vars(vector);
        if let Some(error) = vector.get("error") {
            let err = batch_key(task, &vars).expect_err(&label);
            assert_eq!(Value::String(err.to_string()), *error, "{label}");
            assert!(canonical_text(task, &vars).is_err(), "{label}");
            checked += 1;
            continue;
        }
        let hashed = vector["hashed"].as_str().expect("hashed");
        let key = vector["key"].as_str().expect("key");
        let named = vector["names_a_batch"].as_bool().expect("names_a_batch");
        assert_eq!(canonical_text(task, &vars).as_deref(), Ok(hashed), "{label}");
        assert_eq!(batch_key(task, &vars).as_deref(), Ok(key), "{label}");
        assert_eq!(names_a_batch(&vars), named, "{label}");
        if vector["group"] == "cli" {
            let command = vector["command"].as_str().expect("command");
            let rebuilt = vars_from_command(command);
            assert_eq!(rebuilt, vars, "{label}: variables from the command line");
            assert_eq!(batch_key(task, &rebuilt).as_deref(), Ok(key), "{label}");
            assert_eq!(names_a_batch(&rebuilt), named, "{label}");
            cli_checked += 1;
        }
        checked += 1;
    }
    assert_eq!(checked, 67);
    assert_eq!(cli_checked, 20);
}

#[test]
fn shell_word_splitting() {
    assert_eq!(
        shell_words(r#"a "b c" 'd "e"' "" x\ y "q\"r" "s\u00e9""#),
        ["a", "b c", "d \"e\"", "", "x y", "q\"r", "s\\u00e9"]
    );
    assert_eq!(decode_u_escapes(r"Zo\u00eb \u00e9\uzz"), "Zoë é\\uzz");
}
