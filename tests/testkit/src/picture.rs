//! Pictures of a folder, to compare before and after ("nothing changed") or
//! with what the peer left: its files, its entries, their bytes, and a
//! normalised picture of a use case in which run ids and times are masked.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::Value;

/// Every file under `dir`, relative, sorted (none when `dir` is missing).
pub fn files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(rd) = fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Every file and folder under `dir`, relative, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(rd) = fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Every file's path and bytes under `dir` (for "nothing changed").
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir)
        .into_iter()
        .map(|f| {
            let b = fs::read(dir.join(&f)).unwrap_or_default();
            (f, b)
        })
        .collect()
}

/// `s` with each `(regex, replacement)` applied in turn.
pub fn rewrite(s: &str, rules: &[(&str, &str)]) -> String {
    let mut out = s.to_string();
    for (re, with) in rules {
        out = regex::Regex::new(re).unwrap().replace_all(&out, *with).into_owned();
    }
    out
}

/// `s` with run ids, dead-lease and staging suffixes and times masked, so
/// that two engines' files can be compared. A repair's note names its actor
/// and run (`ubunye leases takeover (run 1a2b3c4d)`); the peer's only the run.
pub fn normalize(s: &str) -> String {
    rewrite(
        s,
        &[
            (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>"),
            (r"\.dead-[0-9a-f]{8}", ".dead-<hex>"),
            (r"_ubunye-[0-9a-f]{12}", "_ubunye-<hex>"),
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)", "<time>"),
            (r"\brun [0-9a-f]{8}\b", "run <id>"),
            (r"ubunye leases (takeover|finish) \(run <id>\)", "run <id>"),
        ],
    )
}

/// A JSON document with every string [`normalize`]d and its `heartbeat`s
/// and `pid`s nulled.
pub fn normalize_json(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(normalize(s)),
        Value::Array(a) => Value::Array(a.iter().map(normalize_json).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), if k == "heartbeat" || k == "pid" { Value::Null } else { normalize_json(v) }))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The state of a use case as a sorted list of (normalised path, normalised
/// content), of the files under each of `tops` (folders below `uc`); output
/// files by name only, and of the run records (`.ubunye/lineage/**/<run>.json`)
/// only those of the runs in `records`.
pub fn snapshot(uc: &Path, tops: &[&str], records: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for top in tops {
        for f in files(&uc.join(top)) {
            let rel = format!("{top}/{f}");
            let path = uc.join(&rel);
            if rel.starts_with(".ubunye/lineage/") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if !records.iter().any(|r| name == format!("{r}.json")) {
                    continue;
                }
            }
            let content = if rel.starts_with("out/") {
                if f.ends_with("_SUCCESS") { String::new() } else { "<data>".into() }
            } else if rel.ends_with(".json") {
                let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
                serde_json::to_string(&normalize_json(&v)).unwrap()
            } else {
                normalize(&fs::read_to_string(&path).unwrap())
            };
            out.push((normalize(&rel), content));
        }
    }
    out.sort();
    out
}

/// The run ids whose records a use case holds.
pub fn record_ids(uc: &Path) -> Vec<String> {
    files(&uc.join(".ubunye/lineage"))
        .iter()
        .map(|f| Path::new(f).file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Fail, naming what differs, unless our snapshot is the peer's.
pub fn same_snapshot(ours: &[(String, String)], theirs: &[(String, String)], what: &str) {
    if ours != theirs {
        let o: BTreeSet<_> = ours.iter().collect();
        let t: BTreeSet<_> = theirs.iter().collect();
        panic!(
            "{what} differs\nonly ours: {:#?}\nonly the peer's: {:#?}",
            o.difference(&t).collect::<Vec<_>>(),
            t.difference(&o).collect::<Vec<_>>()
        );
    }
}
