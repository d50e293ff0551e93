//! Filters: `--task` takes a prefix or a glob (the dashboard's `/task:` rule,
//! `ubunye::state::task_matches`), a filter that leaves nothing says which
//! and what there is without it, `runs --status` is checked, and a `--limit`
//! that cut the list says how much it left out.

use std::path::Path;
use std::process::Command;

use crate::common;
use common::bin;

fn json(args: &[&str], dir: &Path) -> (serde_json::Value, String) {
    let o = Command::new(bin()).args(args).arg("-d").arg(dir).arg("--json").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    (serde_json::from_slice(&o.stdout).unwrap(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn text(args: &[&str], dir: &Path) -> (i32, String, String) {
    let o = Command::new(bin()).args(args).arg("-d").arg(dir).env("NO_COLOR", "1").output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap_or(-1), s(&o.stdout), s(&o.stderr))
}

fn tasks(v: &serde_json::Value, list: &str) -> Vec<String> {
    v[list].as_array().unwrap().iter().map(|b| b["task"].as_str().unwrap().to_string()).collect()
}

/// The demo's sandbox: three tasks, every state, made by the engine.
fn sandbox() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let o = Command::new(bin()).args(["demo", "--no-top", "--dir"]).arg(&s).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (d, s)
}

/// `leases list --task demo` said "No batch needs attention (0 batches)"
/// while four needed it: a task filter is a prefix too, as in the dashboard.
#[test]
fn list_task_takes_a_prefix_or_a_glob_and_an_empty_result_says_why() {
    let (_d, s) = sandbox();
    let (all, _) = json(&["leases", "list", "--all"], &s);
    let every = tasks(&all, "batches");
    let attention = all["batches"].as_array().unwrap().iter().filter(|b| b["state"] != "finished").count();
    assert!(attention >= 4, "{all:#}");
    let (v, _) = json(&["leases", "list", "--task", "demo"], &s);
    assert_eq!(tasks(&v, "batches").len(), attention, "every task starts with demo");
    let (v, _) = json(&["leases", "list", "--all", "--task", "demo/sales/"], &s);
    let sales = tasks(&v, "batches");
    assert!(!sales.is_empty() && sales.iter().all(|t| t.starts_with("demo/sales/")), "{sales:?}");
    assert_eq!(sales.len(), every.iter().filter(|t| t.starts_with("demo/sales/")).count());
    let (v, _) = json(&["leases", "list", "--all", "--task", "*/clicks"], &s);
    assert!(tasks(&v, "batches").iter().all(|t| t == "demo/web/clicks"));
    assert_eq!(tasks(&v, "batches").len(), every.iter().filter(|t| *t == "demo/web/clicks").count());

    let without = format!("of its {} batch(es) need attention", every.len());
    let (code, out, _) = text(&["leases", "list", "--task", "nope"], &s);
    assert_eq!(code, 0);
    assert!(out.starts_with("No batch matches --task 'nope' in "), "{out}");
    assert!(out.contains(&format!("without it: {attention} {without}")), "{out}");
    assert!(out.contains("the start of a task's name, or a pattern"), "{out}");
    let (code, out, _) = text(&["leases", "list", "--state", "live", "--task", "demo/web"], &s);
    assert_eq!(code, 0);
    assert!(
        out.contains("--task 'demo/web' --state live") && out.contains(&format!("without them: {attention}")),
        "{out}"
    );
    let (v, err) = json(&["leases", "list", "--task", "nope"], &s);
    assert_eq!(v["batches"].as_array().unwrap().len(), 0);
    assert!(err.contains("No batch matches --task 'nope'") && err.lines().count() == 1, "{err}");
}

/// `runs`: --task is a prefix too; --status is one of the four words (a
/// typo was silently "nothing"); a filter that leaves nothing says so; a
/// --limit that cut the list says how many it left out.
#[test]
fn runs_filters_are_checked_and_say_what_they_left_out() {
    let (_d, s) = sandbox();
    let (v, _) = json(&["runs", "--limit", "1000"], &s);
    let n = v["records"].as_array().unwrap().len();
    assert!(n >= 8, "{v:#}");
    assert_eq!(v["left_out"], 0);
    let (v, _) = json(&["runs", "--limit", "1000", "--task", "demo/sales"], &s);
    let sales = tasks(&v, "records");
    assert!(!sales.is_empty() && sales.iter().all(|t| t.starts_with("demo/sales/")), "{sales:?}");

    let (code, _, err) = text(&["runs", "--status", "eror"], &s);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("possible values: running, success, error, interrupted"), "{err}");
    let (v, _) = json(&["runs", "--status", "error"], &s);
    assert!(v["records"].as_array().unwrap().iter().all(|r| r["status"] == "error"));

    let (code, out, _) = text(&["runs", "--task", "nope", "--status", "error"], &s);
    assert_eq!(code, 0);
    assert!(out.starts_with("No run records match --task 'nope' --status error in "), "{out}");
    assert!(out.contains(&format!("without them: {n} record(s)")), "{out}");

    let (code, out, err) = text(&["runs", "--limit", "2"], &s);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 3, "a header and two records:\n{out}");
    assert_eq!(
        err.trim_end(),
        format!("ubunye: {} older record(s) left out by --limit 2: a larger --limit shows them", n - 2)
    );
    let (v, _) = json(&["runs", "--limit", "2"], &s);
    assert_eq!(v["left_out"], n - 2);
    assert_eq!(v["records"].as_array().unwrap().len(), 2);
}

/// `--dt DATE|A..B` and `--var K=V` keep the batches (and records) whose
/// variables match, on list and runs; `leases history` shows a task's
/// days in order, the days between with no batch as gaps, failed and
/// interrupted marked; a filter that keeps nothing says so.
#[test]
fn dates_and_variables_filter_listings_and_history_shows_the_days() {
    let (_d, s) = sandbox();
    let (v, _) = json(&["leases", "list", "--all", "--dt", "2025-01-02..2025-01-04"], &s);
    let dts: Vec<&str> =
        v["batches"].as_array().unwrap().iter().map(|b| b["variables"]["dt"].as_str().unwrap()).collect();
    assert!(!dts.is_empty() && dts.iter().all(|d| ("2025-01-02"..="2025-01-04").contains(d)), "{dts:?}");
    assert!(dts.contains(&"2025-01-02") && dts.contains(&"2025-01-04"), "both ends included: {dts:?}");
    let (v, _) = json(&["runs", "--dt", "2025-01-03", "--var", "mode=DEV"], &s);
    let runs = v["records"].as_array().unwrap();
    assert!(!runs.is_empty() && runs.iter().all(|r| r["variables"]["dt"] == "2025-01-03"), "{v}");
    let (v, _) = json(&["runs", "--var", "mode=PROD"], &s);
    assert_eq!(v["records"].as_array().unwrap().len(), 0);
    let (code, out, _) = text(&["leases", "list", "--dt", "2026-01-01"], &s);
    assert_eq!(code, 0);
    assert!(out.contains("No batch matches --dt 2026-01-01"), "{out}");
    let (code, _, err) = text(&["leases", "list", "--dt", "2025-02-01..2025-01-01"], &s);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the range ends before it starts"), "{err}");
    // History: the ingest task's days, a gap widened to the range's ends.
    let (code, out, err) =
        text(&["leases", "history", "--task", "demo/sales/ingest", "--dt", "2024-12-31..2025-01-08"], &s);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("demo/sales/ingest · 2024-12-31 … 2025-01-08 · 7 batch(es), 2 day(s) with none"),
        "{out}"
    );
    let days: Vec<&str> = lines[2..].iter().map(|l| l.split_whitespace().next().unwrap()).collect();
    let mut sorted = days.clone();
    sorted.sort();
    assert_eq!(days, sorted, "in date order:\n{out}");
    assert_eq!(days.len(), 9, "every day of the range, once:\n{out}");
    assert!(out.contains("2024-12-31  · no batch") && out.contains("2025-01-08  · no batch"), "{out}");
    assert!(out.lines().any(|l| l.starts_with(" 2025-01-03  ✗ failed")), "{out}");
    let (v, _) = json(&["leases", "history", "--task", "demo/sales/summary"], &s);
    let days = v["tasks"][0]["days"].as_array().unwrap();
    assert_eq!(
        days.iter().map(|d| d["batch"]["state"].as_str().unwrap()).collect::<Vec<_>>(),
        ["finished", "interrupted"]
    );
}
