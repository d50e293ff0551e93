//! Same repairs as the peer: this engine's run over each captured dead state
//! leaves the same files, and the same JSON fields up to run ids and times, as
//! the real ubunye-engine 0.8.0 left in the matching `*-recovered` fixture.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use common::*;
use regex::Regex;
use serde_json::Value;
use ubunye::RefusalKind;

fn normalize(s: &str) -> String {
    let rules = [
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>"),
        (r"\.dead-[0-9a-f]{8}", ".dead-<hex>"),
        (r"_ubunye-[0-9a-f]{12}", "_ubunye-<hex>"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)", "<time>"),
        (r"\brun [0-9a-f]{8}\b", "run <id>"),
    ];
    let mut out = s.to_string();
    for (re, with) in rules {
        out = Regex::new(re).unwrap().replace_all(&out, with).into_owned();
    }
    out
}

fn normalize_json(v: &Value) -> Value {
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

/// The state a run leaves, as a sorted list of (normalized path, normalized
/// content). Records are compared only for runs that existed before (the taker's
/// own record is the run's business, not the repair's).
fn snapshot(uc: &Path, records_before: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for top in [".ubunye", "out"] {
        for f in files(&uc.join(top)) {
            let rel = format!("{top}/{f}");
            let path = uc.join(&rel);
            if rel.starts_with(".ubunye/lineage/") {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                if !records_before.contains(&stem) {
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

fn records(uc: &Path) -> BTreeSet<String> {
    files(&uc.join(".ubunye/lineage"))
        .iter()
        .map(|f| Path::new(f).file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn peer_file_name() -> String {
    format!("part-00000-{}-c000.snappy.parquet", uuid::Uuid::new_v4())
}

/// Run this engine over `dead` as the peer's next `ubunye run` did, and compare
/// with `recovered`.
fn same_as_peer(dead: &str, recovered: &str, dt: &str, expect: Option<RefusalKind>) {
    let (_d, uc, m) = fixture(dead);
    let before = records(&uc);
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let name = peer_file_name();
    let result = append_run_per_file(&uc, sys, dt, false, &[(name.as_str(), "data")]);
    match (&result, expect) {
        (Ok(_), None) => {}
        (Err(e), Some(k)) => assert_eq!(e.kind(), Some(k), "{dead}: {e}"),
        (r, want) => {
            panic!("{dead}: got {:?}, wanted refusal {want:?}", r.as_ref().map(|_| ()).map_err(|e| e.to_string()))
        }
    }
    let (_p, peer_uc, _) = fixture(recovered);
    let ours = snapshot(&uc, &before);
    let theirs = snapshot(&peer_uc, &before);
    if ours != theirs {
        let o: BTreeSet<_> = ours.iter().collect();
        let t: BTreeSet<_> = theirs.iter().collect();
        panic!(
            "{dead} -> {recovered} differs\nonly ours: {:#?}\nonly the peer's: {:#?}",
            o.difference(&t).collect::<Vec<_>>(),
            t.difference(&o).collect::<Vec<_>>()
        );
    }
}

#[test]
fn dead_killed_is_taken_over_as_the_peer_did() {
    same_as_peer("dead-killed", "taken-over-done", "2025-01-02", None);
}

#[test]
fn orphan_is_adopted_as_the_peer_did() {
    same_as_peer("orphan", "orphan-adopted", "2025-01-02", None);
}

#[test]
fn rerun_pending_is_finished_as_the_peer_did() {
    same_as_peer("rerun-pending", "rerun-pending-recovered", "2025-01-01", Some(RefusalKind::Finished));
}

#[test]
fn kept_is_recovered_as_the_peer_did() {
    same_as_peer("kept", "kept-recovered", "2025-01-02", None);
}

#[test]
fn dead_before_commit_is_finished_as_the_peer_did() {
    same_as_peer("dead-before-commit", "dead-before-commit-recovered", "2025-01-02", Some(RefusalKind::Finished));
}

#[test]
fn dead_spark_staged_is_taken_over_as_the_peer_did() {
    same_as_peer("dead-spark-staged", "dead-spark-staged-taken-over", "2025-01-03", None);
}
