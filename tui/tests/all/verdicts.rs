//! The state model's scenarios, one test each: what every surface says of
//! a batch after a failed rerun, after the takeover of an empty lease, with a
//! half-written run record, an unknown file, an orphan, an overwrite-only
//! task, a dead run that left a staging folder no lease names; and that
//! doctor reports batches needing a repair.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{TASK, fixture, key_of, set_mtime, ubunye};
use serde_json::{Value, json};

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.code().is_some(), "killed");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn row<'a>(list: &'a Value, key: &str) -> &'a Value {
    list["batches"].as_array().unwrap().iter().find(|b| b["key"] == key).unwrap_or_else(|| panic!("no {key} in {list}"))
}

fn list(uc: &Path) -> Value {
    json_of(&ubunye(uc).args(["leases", "list", "-d", "uc", "--all", "--json"]).output().unwrap())
}

fn explain_json(uc: &Path, key: &str) -> Value {
    json_of(&ubunye(uc).args(["leases", "explain", key, "-d", "uc", "--json"]).output().unwrap())
}

fn explain_text(uc: &Path, key: &str) -> String {
    text(&ubunye(uc).args(["leases", "explain", key, "-d", "uc"]).output().unwrap())
}

fn lease_dir(uc: &Path) -> PathBuf {
    uc.join(".ubunye/leases").join(TASK)
}

fn records(uc: &Path) -> PathBuf {
    uc.join(".ubunye/lineage").join(TASK)
}

fn record(run: &str, status: &str, started: &str, error: Option<&str>) -> String {
    json!({"run_id": run, "task_path": TASK, "started_at": started, "ended_at": started, "status": status,
        "error": error, "backend": "pandas", "variables": {"dt": "2025-01-01", "mode": "DEV"}, "outputs": []})
    .to_string()
}

/// `ubunye exec` of the fixtures' ingest batch `dt`, appending one file.
fn exec(uc: &Path, dt: &str) -> std::process::Output {
    ubunye(uc)
        .args(["exec", "-q", "-d", "uc", "--task", TASK, "--dt", dt, "--append", "events=out/events", "--"])
        .args(["sh", "-c", "echo x > \"$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.csv\""])
        .output()
        .unwrap()
}

const RERUN: &str = "0f1e2d3c-0000-4000-8000-00000000fa11";

/// A finished batch, then a `--rerun` that failed after its append landed
/// (its files taken back, its record `error`): finished on every surface
/// (a plain run is refused, as the peer refuses it with BatchFinished), the
/// failed rerun in its history and, as a note, in its row.
#[test]
fn a_failed_rerun_leaves_the_batch_finished_everywhere() {
    let (_d, uc, _) = fixture("finished");
    let key = key_of("2025-01-01");
    fs::write(
        records(&uc).join(format!("{RERUN}.json")),
        record(RERUN, "error", "2026-11-30T08:00:00.000000+00:00", Some("ValueError: boom")),
    )
    .unwrap();
    let l = list(&uc);
    let r = row(&l, &key);
    assert_eq!(r["state"], "finished");
    let note = r["note"].as_str().unwrap();
    assert!(note.contains("a later run 0f1e2d3c failed: ValueError: boom"), "{note}");
    assert!(r["history"].as_array().unwrap().iter().any(|h| h["run_id"] == RERUN && h["status"] == "error"));
    let e = explain_json(&uc, &key);
    assert_eq!(e["batch"]["state"], "finished");
    assert_eq!(e["history"], r["history"]);
    let t = explain_text(&uc, &key);
    assert!(history_row(&t, &["record", "0f1e2d3c"]).is_some_and(|l| l.contains("error: ValueError: boom")), "{t}");
    // A plain run of it is refused (exit 1), as a finished batch is.
    let o = exec(&uc, "2025-01-01");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("already finished this batch"), "{}", text(&o));
}

/// An empty (0-byte) lease taken over leaves only `<key>.taken-`: the batch
/// never ran, so it is not finished; its history says an empty lease was
/// taken over (no empty run id), and a new run goes ahead.
#[test]
fn an_empty_lease_taken_over_is_not_a_finished_batch() {
    let (_d, uc) = common::empty_use_case();
    let key = key_of("2025-01-03");
    fs::create_dir_all(lease_dir(&uc)).unwrap();
    let lease = lease_dir(&uc).join(format!("{key}.json"));
    fs::write(&lease, b"").unwrap();
    set_mtime(&lease, SystemTime::now() - Duration::from_secs(20 * 60));
    let o = ubunye(&uc).args(["leases", "takeover", &key[..8], "-d", "uc", "--yes"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(lease_dir(&uc).join(format!("{key}.taken-")).exists());
    let l = list(&uc);
    assert_eq!(row(&l, &key)["state"], "interrupted");
    let e = explain_json(&uc, &key);
    assert_eq!(e["batch"]["state"], "interrupted");
    assert_eq!(e["history"][0]["what"], "taken-over");
    assert_eq!(e["history"][0]["run_id"], Value::Null);
    let t = explain_text(&uc, &key);
    assert!(t.contains("an empty lease (it named no run) was taken over"), "{t}");
    assert!(!t.contains("run  was"), "{t}");
    assert!(!t.contains("The batch is finished"), "{t}");
    assert!(t.contains("A new run of it goes ahead"), "{t}");
    let o = exec(&uc, "2025-01-03");
    assert!(o.status.success(), "a new run goes ahead: {}", text(&o));
    assert_eq!(row(&list(&uc), &key)["state"], "finished");
}

/// A dead run's record cut off half-way: named on every surface, the
/// takeover goes ahead past it (as the peer's next run does) and says it
/// leaves it as it is.
#[test]
fn a_half_written_record_is_named_and_a_takeover_says_it_leaves_it() {
    let (_d, uc, _) = fixture("dead-killed");
    let key = "7d106ca76674f2a1";
    let run = "a7ee7676-3983-4c1b-8fff-47937b7a2497";
    let rec = records(&uc).join(format!("{run}.json"));
    let bytes = fs::read(&rec).unwrap();
    fs::write(&rec, &bytes[..bytes.len() / 2]).unwrap();
    let r = row(&list(&uc), key).clone();
    assert_eq!(r["state"], "dead");
    assert!(r["flags"].as_array().unwrap().contains(&json!("damaged-record")), "{r}");
    let t = explain_text(&uc, key);
    let row = history_row(&t, &["record", "a7ee7676"]);
    assert!(row.is_some_and(|l| l.contains(&format!("UNREADABLE: {run}.json cannot be parsed: it is cut off"))), "{t}");
    assert!(t.contains(&format!("leave its run record {run}.json as it is: it cannot be parsed")), "{t}");
    assert!(t.contains("(variables not known") || t.contains("dt=2025-01-02"), "{t}");
    assert!(!t.contains("(no run record to mark)"), "{t}");
    let doc = json_of(&ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap());
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(&format!("{run}.json")));
    assert_eq!(f.map(|f| f["kind"].clone()), Some(json!("unreadable")), "{doc}");
    let dry = text(&ubunye(&uc).args(["leases", "takeover", key, "-d", "uc", "--dry-run"]).output().unwrap());
    assert!(dry.contains("as it is: it cannot be parsed"), "{dry}");
    let o = ubunye(&uc).args(["leases", "takeover", key, "-d", "uc", "--yes"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("was left as it is: it is cut off"), "{}", text(&o));
    assert_eq!(fs::read(&rec).unwrap(), bytes[..bytes.len() / 2], "the record is left as it was");
}

/// `<key>.tried` (ubunye-engine 0.9.1) is shown in the history and by
/// doctor, never ignored.
#[test]
fn an_unknown_file_beside_a_lease_is_shown() {
    let (_d, uc, _) = fixture("finished");
    let key = key_of("2025-01-01");
    fs::write(lease_dir(&uc).join(format!("{key}.tried")), b"").unwrap();
    let t = explain_text(&uc, &key);
    assert!(history_row(&t, &["file"]).is_some_and(|l| l.contains(&format!("{key}.tried: not a file"))), "{t}");
    let doc = json_of(&ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap());
    assert!(
        doc["findings"].as_array().unwrap().iter().any(|f| f["kind"] == "unknown-file" && f["key"] == key.as_str()),
        "{doc}"
    );
}

/// An orphan's report names its file and pid and never says "beside the
/// lease" when there is none; an empty lease says so.
#[test]
fn an_orphan_and_an_empty_lease_are_said_as_they_are() {
    let (_d, uc, _) = fixture("orphan");
    let t = explain_text(&uc, "7d106ca7");
    assert!(t.contains("7d106ca76674f2a1.dead-cf0bcc83.json") && t.contains("pid 26203"), "{t}");
    assert!(!t.contains("beside the lease"), "{t}");
    let (_d, uc) = common::empty_use_case();
    let key = key_of("2025-01-04");
    fs::create_dir_all(lease_dir(&uc)).unwrap();
    fs::write(lease_dir(&uc).join(format!("{key}.json")), b"").unwrap();
    let t = explain_text(&uc, &key);
    assert!(t.contains("an empty lease (no run, pid or host written"), "{t}");
    assert!(!t.contains("(none) on (no host)"), "{t}");
}

/// A finished batch whose task only overwrites: a plain run goes ahead.
#[test]
fn a_finished_overwrite_only_batch_says_a_plain_run_goes_ahead() {
    let (_d, uc, _) = fixture("resumed");
    let t = explain_text(&uc, "faa6514a");
    assert!(
        t.contains("a new run whose outputs all overwrite goes ahead and replaces them (it is not refused)"),
        "{t}"
    );
}

/// A dead run that claimed nothing, whose writer left a staging folder
/// beside the output (as the peer's pandas writer does, unnamed in the
/// lease): explain and the plan name it with what it holds; doctor reports it
/// with the batch it probably belongs to; an empty one is said to be empty.
#[test]
fn a_staging_folder_no_lease_names_is_named_with_what_it_holds() {
    let (_d, uc, _) = fixture("dead-killed");
    let key = "7d106ca76674f2a1";
    let lease = lease_dir(&uc).join(format!("{key}.json"));
    let mut doc: Value = serde_json::from_slice(&fs::read(&lease).unwrap()).unwrap();
    for c in doc["outputs"]["events"]["claimed"].as_array().unwrap() {
        let _ = fs::remove_file(uc.join(c.as_str().unwrap()));
    }
    doc["outputs"]["events"]["claimed"] = json!([]);
    let mtime = fs::metadata(&lease).unwrap().modified().unwrap();
    fs::write(&lease, doc.to_string()).unwrap();
    set_mtime(&lease, mtime);
    let side = uc.join("out/.events.ubunye-0123456789ab");
    fs::create_dir_all(&side).unwrap();
    fs::write(side.join("part-0.parquet"), vec![0u8; 2048]).unwrap();
    fs::write(side.join("part-1.parquet"), vec![0u8; 1024]).unwrap();
    let t = explain_text(&uc, key);
    assert!(t.contains("out/.events.ubunye-0123456789ab/ (2 file(s), 3.0 KiB)"), "{t}");
    assert!(t.contains("named by no lease"), "{t}");
    let e = explain_json(&uc, key);
    assert_eq!(e["staging"][0]["size"]["files"], 2, "{e}");
    let doc = json_of(&ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap());
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "stray-staging").cloned().unwrap();
    assert_eq!((f["task"].clone(), f["key"].clone()), (json!(TASK), json!(key)), "{f}");
    assert!(f["detail"].as_str().unwrap().contains("2 file(s), 3.0 KiB"), "{f}");
    for p in fs::read_dir(&side).unwrap() {
        fs::remove_file(p.unwrap().path()).unwrap();
    }
    let doc = json_of(&ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap());
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "stray-staging").cloned().unwrap();
    assert!(f["detail"].as_str().unwrap().starts_with("an empty staging folder"), "{f}");
}

/// Doctor does not call a use case clean while batches need a repair.
#[test]
fn doctor_reports_batches_that_need_a_repair() {
    for (name, state) in [("dead-killed", "dead"), ("orphan", "orphan"), ("kept", "kept")] {
        let (_d, uc, _) = fixture(name);
        let o = ubunye(&uc).args(["doctor", "-d", "uc"]).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains("needs-repair") && t.contains(&format!("{state}: ")), "{name}: {t}");
        assert!(t.contains("ubunye leases list"), "{name}: {t}");
        assert!(!t.contains("clean"), "{name}: {t}");
    }
}

/// The row of explain's history table whose first cells are `first`.
fn history_row<'a>(text: &'a str, first: &[&str]) -> Option<&'a str> {
    text.lines()
        .skip_while(|l| *l != "History")
        .find(|l| l.split_whitespace().take(first.len()).eq(first.iter().copied()))
}
