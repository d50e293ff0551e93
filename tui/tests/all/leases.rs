//! `ubunye leases list|explain|takeover|finish`, `ubunye runs`, `ubunye doctor`
//! on the peer's fixtures, through the binary. Verdicts are pinned by judging
//! from another host (UBUNYE_TEST_HOST): every fixture lease is then judged by
//! its age, which is always past 15 minutes now.

use std::fs;

use assert_cmd::Command;

use crate::common;
use common::{fixture, tree, ubunye};
use std::path::Path;

fn out(c: &mut Command) -> String {
    let o = c.output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

macro_rules! snap {
    ($name:expr, $text:expr) => {
        insta::with_settings!({filters => vec![
            (r"\b\d+[smhd]( \d+[smhd])?\b( stalled)?", "[AGE]"),
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)", "[TIME]"),
            (r"/tmp/\.tmp[^/\s]+", "[TMP]"),
            // Ages change width as the fixtures get older, and so does every
            // column's padding: keep the words, not the widths.
            (r"(?m) +$", ""),
            (r" {2,}", "  "),
        ]}, {
            insta::assert_snapshot!($name, $text);
        });
    };
}

#[test]
fn list_shows_what_needs_attention() {
    for name in
        ["dead-killed", "orphan", "rerun-pending", "kept", "takeover-refused-in-use", "dead-spark-staged", "resumed"]
    {
        let (_d, uc, _) = fixture(name);
        snap!(format!("list-{name}"), out(ubunye(&uc).args(["leases", "list", "-d", "uc", "--all"])));
    }
}

#[test]
fn explain_is_the_triage_report() {
    for (name, key) in [
        ("dead-killed", "7d10"),
        ("orphan", "7d10"),
        ("rerun-pending", "39bc"),
        ("kept", "7d10"),
        ("dead-before-commit", "7d10"),
        ("dead-spark-staged", "540a"),
        ("finished", "39bc"),
    ] {
        let (_d, uc, _) = fixture(name);
        snap!(format!("explain-{name}"), out(ubunye(&uc).args(["leases", "explain", key, "-d", "uc"])));
    }
}

#[test]
fn list_json_has_the_documented_fields() {
    let (_d, uc, _) = fixture("dead-killed");
    let o = ubunye(&uc).args(["leases", "list", "-d", "uc", "--all", "--json"]).output().unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // A temp folder is on a local file system: its times are this machine's
    // clock's, read without a probe (looking never writes).
    assert_eq!(v["clock"], "local-file-system");
    let b = &v["batches"][0];
    for field in [
        "task",
        "key",
        "state",
        "flags",
        "variables",
        "run_id",
        "pid",
        "host",
        "heartbeat_age_s",
        "dead",
        "claims",
        "note",
    ] {
        assert!(b.get(field).is_some(), "{field} missing: {b}");
    }
    assert_eq!(b["state"], "dead");
    assert_eq!(b["variables"]["dt"], "2025-01-02");
    assert_eq!(b["run_id"], "a7ee7676-3983-4c1b-8fff-47937b7a2497");
    assert_eq!(v["batches"][1]["state"], "finished");
    let o = ubunye(&uc).args(["leases", "list", "-d", "uc", "--state", "finished", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["batches"].as_array().unwrap().len(), 1);
    let o = ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["next"]["action"], "takeover");
    assert_eq!(v["plans"][0]["remove"][0]["present"], true);
    assert_eq!(v["batch"]["state"], "dead");
}

#[test]
fn explain_finds_by_prefix_path_and_says_when_it_cannot() {
    let (_d, uc, _) = fixture("resumed");
    let o = ubunye(&uc)
        .args(["leases", "explain", "uc/.ubunye/leases/demo/sales/summary/faa6514a45a85a31.finished.json", "-d", "uc"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("demo/sales/summary  dt=2025-01-02 mode=DEV"));
    let o = ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc"]).output().unwrap();
    assert!(o.status.success(), "one batch starts with 7d10");
    let o = ubunye(&uc).args(["leases", "explain", "39bc5", "-d", "uc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "a prefix that names nothing is a usage error");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no batch with a key starting '39bc5'; the nearest: ")
            && err.contains("uc:39bc4231 demo/sales/ingest"),
        "{err}"
    );
    // A key that shares three digits is another batch, not a slip: no guess.
    let o = ubunye(&uc).args(["leases", "explain", "39bd", "-d", "uc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no batch with a key or run id starting '39bd'") && !err.contains("nearest"), "{err}");
    let (_d, uc, _) = fixture("dead-killed");
    fs::write(
        uc.join(".ubunye/leases/demo/sales/ingest/7d10ffffffffffff.finished.json"),
        "{\"run_id\": \"x\", \"outputs\": {}}",
    )
    .unwrap();
    let o = ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "a prefix that names several batches is a usage error");
    assert!(String::from_utf8_lossy(&o.stderr).contains("names 2 batches"), "{}", String::from_utf8_lossy(&o.stderr));
    // A path outside the lease folders, a missing one, a symlink to a lease, a
    // very long query: one line each, the query cut short.
    let lease = "uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json";
    std::os::unix::fs::symlink(uc.parent().unwrap().join(lease), uc.parent().unwrap().join("link.json")).unwrap();
    let long = "a".repeat(5000);
    for (query, code, want) in [
        ("/etc/passwd", 2, "is not in a task's lease folder of this use case"),
        ("uc/.ubunye/leases/demo/sales/ingest/nothere.json", 2, "No such file"),
        ("./link.json", 0, "key 7d106ca76674f2a1"),
        (long.as_str(), 2, "no batch with a key or run id starting 'aaaa"),
    ] {
        let o = ubunye(&uc).args(["leases", "explain", query, "-d", "uc"]).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{}: {text}", &query[..query.len().min(40)]);
        assert!(text.contains(want), "{text}");
        if code == 2 {
            assert!(o.stderr.len() < 300 && text.trim_end().lines().count() == 1, "{text}");
        }
    }
}

#[test]
fn a_folder_that_is_not_a_use_case_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    for args in [&["leases", "list"][..], &["leases", "explain", "7d10"], &["runs"], &["doctor"]] {
        let o = Command::cargo_bin("ubunye").unwrap().args(args).arg("-d").arg(d.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("has no .ubunye/ folder") && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
}

#[test]
fn runs_and_doctor() {
    let (_d, uc, _) = fixture("taken-over-done");
    let o = ubunye(&uc).args(["runs", "-d", "uc", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let statuses: Vec<&str> = v["records"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["success", "interrupted", "success"], "newest first");
    let o = ubunye(&uc).args(["runs", "-d", "uc", "--status", "interrupted", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["records"].as_array().unwrap().len(), 1);
    assert_eq!(v["records"][0]["variables"]["dt"], "2025-01-02");
    let o = ubunye(&uc).args(["runs", "-d", "uc", "--since", "1s"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("No run records"));
    // Doctor: clean here; a stray staging folder and a temp file are findings.
    ubunye(&uc).args(["doctor", "-d", "uc"]).assert().success();
    fs::create_dir_all(uc.join("out/events/_ubunye-0123456789ab")).unwrap();
    fs::write(uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.abcd1234.tmp"), "{").unwrap();
    let o = ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kinds: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["temp-file", "stray-staging"]);
    assert!(uc.join("out/events/_ubunye-0123456789ab").exists(), "doctor changes nothing");
}

/// `ubunye doctor` looks a task at a time (so 100,000 batches are never held
/// whole): on every fixture, with a stray staging folder, a temp file and an
/// unreadable lease added, it finds what the whole-scan `examine` finds.
#[test]
fn doctor_a_task_at_a_time_finds_what_a_whole_scan_finds() {
    let src = common::root().join("fixtures/peer");
    let mut fixtures: Vec<String> = fs::read_dir(&src)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("uc").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 15, "{fixtures:?}");
    let mut total = 0;
    for name in &fixtures {
        let (_d, uc, _) = fixture(name);
        let leases = uc.join(".ubunye/leases/demo/sales/ingest");
        fs::create_dir_all(&leases).unwrap();
        fs::write(leases.join("0123456789abcdef.abcd1234.tmp"), "{").unwrap();
        fs::write(leases.join("fedcba9876543210.json"), [0xff, 0xfe]).unwrap();
        fs::create_dir_all(uc.join("out/events/_ubunye-0123456789ab")).unwrap();
        let o = ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut cli: Vec<String> = v["findings"].as_array().unwrap().iter().map(|f| f.to_string()).collect();
        let sys = ubunye::Sys { host: common::ELSEWHERE.into(), ..ubunye::Sys::from_env() };
        let scan = ubunye::state::scan(&uc, &Default::default(), &sys).unwrap();
        let mut lib: Vec<String> =
            ubunye::doctor::examine(&scan).iter().map(|f| serde_json::to_value(f).unwrap().to_string()).collect();
        cli.sort();
        lib.sort();
        assert_eq!(cli, lib, "{name}");
        total += cli.len();
    }
    assert!(total >= 3 * fixtures.len(), "each fixture has the three added findings at least");
}

/// Where no exchange exists, a run that lost its lease can move the output
/// aside (to `.<output>.ubunye-<hex>.old`) and die before putting it back.
/// doctor reports it `moved-aside`, with how to put it back, whether or not
/// the output is there: never "clean" (a missing output is looked beside),
/// nor stray staging "to remove by hand" once the output is written again.
#[test]
fn doctor_reports_an_output_moved_aside_with_how_to_put_it_back() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join(".ubunye")).unwrap();
    ubunye(&uc)
        .args(["exec", "-d", "uc", "--task", "demo/sales/summary", "-dt", "2025-01-01"])
        .args(["--overwrite", "s=out/summary", "--", "sh", "-c", "echo committed > \"$UBUNYE_OUT_S/t.csv\""])
        .assert()
        .success();
    let aside = uc.join("out/.summary.ubunye-0123456789ab.old");
    fs::rename(uc.join("out/summary"), &aside).unwrap();
    let o = ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stdout));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["kind"], "moved-aside", "{v}");
    assert!(
        f["detail"].as_str().unwrap().contains("is missing") && f["detail"].as_str().unwrap().contains("mv '"),
        "{f}"
    );
    // Written again since: still moved-aside, never "remove by hand".
    fs::create_dir_all(uc.join("out/summary")).unwrap();
    let o = ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kinds: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["moved-aside"], "{v}");
    assert!(!v.to_string().contains("remove it by hand"), "{v}");
    assert_eq!(fs::read_to_string(aside.join("t.csv")).unwrap(), "committed\n", "doctor changes nothing");
}

/// Every id the listings show names its batch: a run id from the RUN
/// column (8 digits) or whole, a record's run id, the path of any
/// lease-folder file from another folder without -d, and never a batch
/// whose key merely starts like a run id.
#[test]
fn a_batch_is_found_by_its_run_id_and_by_any_of_its_files_path() {
    let (_d, uc, _) = fixture("dead-killed");
    let before = tree(&uc);
    let explain = |args: &[&str], from: &Path| {
        let o = Command::new(common::bin()).args(["leases", "explain"]).args(args).current_dir(from).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let parent = uc.parent().unwrap();
    // The dead batch's run, as RUN shows it, whole, and in capitals.
    for run in ["a7ee7676", "a7ee7676-3983-4c1b-8fff-47937b7a2497", "A7EE7676-3983"] {
        let (code, out, err) = explain(&[run, "-d", "uc"], parent);
        assert_eq!(code, Some(0), "{run}: {err}");
        assert!(out.contains("key 7d106ca76674f2a1   state DEAD"), "{run}:\n{out}");
    }
    // A finished batch known by its record's run id (its note names it too).
    let (code, out, err) = explain(&["b3e1fa02", "-d", "uc"], parent);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("key 39bc42311894ddba   state FINISHED"), "{out}");
    // A run id that names no run: said as such, no guess.
    let (code, _, err) = explain(&["a7ee-0000", "-d", "uc"], parent);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("nearest"), "{err}");
    // Paths, from a folder that is not the use case's parent, without -d:
    // relative, absolute, a note, a mark and a dead run's lease.
    let elsewhere = tempfile::tempdir().unwrap();
    let leases = fs::canonicalize(&uc).unwrap().join(".ubunye/leases/demo/sales/ingest");
    let taken = leases.join("7d106ca76674f2a1.taken-a7ee7676-3983-4c1b-8fff-47937b7a2497");
    fs::write(&taken, "").unwrap();
    let dead = leases.join("7d106ca76674f2a1.dead-cf0bcc83.json");
    fs::copy(leases.join("7d106ca76674f2a1.json"), &dead).unwrap();
    for (path, key) in [
        (leases.join("7d106ca76674f2a1.json"), "7d106ca76674f2a1"),
        (leases.join("39bc42311894ddba.finished.json"), "39bc42311894ddba"),
        (taken.clone(), "7d106ca76674f2a1"),
        (dead.clone(), "7d106ca76674f2a1"),
    ] {
        let (code, out, err) = explain(&[path.to_str().unwrap()], elsewhere.path());
        assert_eq!(code, Some(0), "{}: {err}", path.display());
        assert!(out.contains(&format!("key {key} ")), "{}:\n{out}", path.display());
    }
    let rel = "uc/.ubunye/leases/demo/sales/ingest/39bc42311894ddba.finished.json";
    let (code, out, err) = explain(&[rel], parent);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("key 39bc42311894ddba "), "{out}");
    fs::remove_file(&taken).unwrap();
    fs::remove_file(&dead).unwrap();
    assert_eq!(tree(&uc), before, "looking changed nothing");
}

/// A lease torn to `{"run_id":` is `damaged` on every surface, never `live`
/// without a run: the list names the file and its bytes, the cron check
/// lists it, explain's advice matches what the file holds, a repair waits
/// for its age as every engine does, then takes it over.
#[test]
fn a_torn_lease_is_damaged_on_every_surface() {
    let (_d, uc, _) = fixture("dead-killed");
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    fs::write(&lease, "{\"run_id\":").unwrap();
    let run = |args: &[&str]| {
        let o = ubunye(&uc).args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, list, _) =
        run(&["leases", "list", "-d", "uc", "--state", "dead,stalled,kept,unreadable,damaged", "--fail-if-any"]);
    assert_eq!(code, Some(1), "the cron check lists it:\n{list}");
    let row = list.lines().find(|l| l.contains("7d106ca7")).unwrap();
    assert!(
        row.contains("≠ damaged") && row.contains("7d106ca76674f2a1.json is not JSON (10 bytes: {\"run_id\":)"),
        "{row}"
    );
    assert!(!list.contains("● live"), "{list}");
    let (_, json, _) = run(&["leases", "list", "-d", "uc", "--json", "--state", "damaged"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["batches"][0]["state"], "damaged", "{v}");
    let (_, text, _) = run(&["leases", "explain", "7d10", "-d", "uc"]);
    assert!(text.contains("state DAMAGED") && text.contains("Its lease is not JSON (10 bytes"), "{text}");
    assert!(!text.contains("it lists that run's claimed files"), "advice that does not match the file:\n{text}");
    let before = tree(&uc);
    let (code, _, err) = run(&["leases", "takeover", "7d10", "-d", "uc", "--yes"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("15 minutes old"), "{err}");
    assert_eq!(tree(&uc), before, "nothing changed");
    // 20 minutes old: taken over by its age, as the next run would.
    common::set_mtime(&lease, std::time::SystemTime::now() - std::time::Duration::from_secs(20 * 60));
    let (_, list, _) = run(&["leases", "list", "-d", "uc"]);
    assert!(list.contains("≠ damaged") && list.contains("the next run takes it over by its age"), "{list}");
    let (code, _, err) = run(&["leases", "takeover", "7d10", "-d", "uc", "--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!lease.exists(), "taken over and released");
}

/// What the reports quote from the files they read cannot drive the
/// terminal: a lease whose host and started time carry escape sequences is
/// explained, planned and listed with them made plain text.
#[test]
fn escape_sequences_in_a_lease_never_reach_the_terminal() {
    let (_d, uc, _) = fixture("dead-killed");
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&lease).unwrap()).unwrap();
    doc["host"] = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J".into();
    doc["started_at"] = "x\u{1b}[31mred\r".into();
    let mtime = fs::metadata(&lease).unwrap().modified().unwrap();
    fs::write(&lease, serde_json::to_string(&doc).unwrap()).unwrap();
    common::set_mtime(&lease, mtime);
    // A file no engine writes, named to drive a terminal: said by name.
    let odd = uc.join(".ubunye/leases/demo/sales/ingest/esc\u{1b}[31mX\u{9b}2J\u{202e}gnp.json");
    fs::write(&odd, "{}").unwrap();
    for args in [
        &["leases", "explain", "7d10", "-d", "uc"][..],
        &["leases", "takeover", "7d10", "-d", "uc", "--dry-run"],
        &["leases", "list", "-d", "uc"],
        &["doctor", "-d", "uc"],
        &["leases", "history", "--task", "demo/sales/ingest", "-d", "uc"],
    ] {
        let o = ubunye(&uc).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(text.contains("pwned") || args[1] != "explain", "{args:?}: the host is still said:\n{text}");
        assert!(!text.contains(['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}']), "{args:?}:\n{text:?}");
        if args[0] == "doctor" || args[1] == "list" || args[1] == "history" {
            assert!(text.contains("31mX"), "{args:?}: the odd file is named:\n{text}");
        }
    }
}

/// A folder with many files no engine reads still shows its table: the
/// first twenty are said a line each, the rest counted in one line naming
/// where every one is listed, and `--json` lists them all.
#[test]
fn many_stray_files_are_said_in_a_bounded_number_of_lines() {
    let (_d, uc, _) = fixture("dead-killed");
    let folder = uc.join(".ubunye/leases/demo/sales/ingest");
    for i in 0..25 {
        fs::write(folder.join(format!("stray-{i:02}.json")), "{}").unwrap();
    }
    for args in [&["leases", "list", "-d", "uc"][..], &["leases", "history", "--task", "demo/sales/ingest", "-d", "uc"]]
    {
        let o = ubunye(&uc).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        let named = err.lines().filter(|l| l.contains("stray-")).count();
        assert_eq!(named, 20, "{args:?}:\n{err}");
        assert!(
            err.contains("... and 5 more files that cannot be read or are out of place; `--json`"),
            "{args:?}:\n{err}"
        );
        let o = ubunye(&uc).args(args).arg("--json").output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let listed = doc["problems"].as_array().unwrap();
        assert_eq!(listed.iter().filter(|p| p["path"].as_str().unwrap().contains("stray-")).count(), 25, "{args:?}");
    }
    let table = out(ubunye(&uc).args(["leases", "list", "-d", "uc"]));
    assert!(table.contains("7d106ca7"), "{table}");
}

/// An error that quotes what it was given (a folder's name here) writes it
/// to the terminal made plain text, as the reports quote what they read.
#[test]
fn an_error_quoting_its_input_never_drives_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let o = ubunye(d.path()).args(["leases", "list", "-d", "u\u{1b}]0;x\u{7}c\u{9b}2J"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("u ]0;x c"), "the folder is named: {err:?}");
    assert!(!err.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{err:?}");
}

/// A folder where a dead run's claimed file should be stops its takeover
/// (no engine removes a folder): explain, doctor and the repair say so
/// alike, and none offers a command that would only be refused.
#[test]
fn a_folder_in_a_claimed_files_place_is_for_a_person_to_move() {
    let (_d, uc, _) = fixture("dead-killed");
    let claim = uc.join("out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet");
    fs::remove_file(&claim).unwrap();
    fs::create_dir(&claim).unwrap();
    let before = tree(&uc);
    let text = out(ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc"]));
    assert!(text.contains("snappy.parquet  a folder, where a claimed file should be"), "{text}");
    assert!(text.contains("REFUSE: ") && text.contains("Nothing is taken over while a REFUSE stands"), "{text}");
    assert!(!text.contains("Run:  ubunye leases takeover"), "a command that would be refused is offered:\n{text}");
    let o = ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["next"]["action"].as_str(), v["next"]["command"].is_null()), (Some("check-the-file"), true), "{v}");
    let doc = out(ubunye(&uc).args(["doctor", "-d", "uc"]));
    let named = format!("A folder stands where its claimed file {} should be", claim.display());
    assert!(doc.replace('\n', " ").split_whitespace().collect::<Vec<_>>().join(" ").contains(&named), "{doc}");
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(tree(&uc), before, "nothing was changed");
    // Moved out of the way by hand: the repair goes ahead.
    fs::remove_dir(&claim).unwrap();
    let v: serde_json::Value = serde_json::from_slice(
        &ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc", "--json"]).output().unwrap().stdout,
    )
    .unwrap();
    assert_eq!(v["next"]["action"], "takeover", "{v}");
}

/// A task as a narrow table shortens it (`d/s/ingest`) is taken back by
/// `--task`, so that what the screen showed can be pasted.
#[test]
fn a_task_shortened_by_a_narrow_table_can_be_pasted_back() {
    let (_d, uc, _) = fixture("dead-killed");
    let shortened = (60..=100).any(|cols| {
        out(ubunye(&uc).env("COLUMNS", cols.to_string()).args(["leases", "list", "-d", "uc", "--all"]))
            .contains(" d/s/ingest ")
    });
    assert!(shortened, "no width between 60 and 100 columns shortens the task");
    for args in [
        &["leases", "list", "-d", "uc", "--all", "--task", "d/s/ingest"][..],
        &["leases", "history", "-d", "uc", "--task", "d/s/ingest"],
        &["runs", "-d", "uc", "--task", "d/s/ingest"],
    ] {
        let text = out(ubunye(&uc).args(args));
        assert!(text.contains("7d106ca7") || text.contains("a7ee7676"), "{args:?}:\n{text}");
    }
}

/// `runs` at 80 columns keeps which task a run was of (shortened, as
/// `--task` takes it back), and `runs show` takes a run as `<usecase>:<run>`,
/// its use case named with it.
#[test]
fn runs_at_80_columns_name_the_task_and_runs_show_takes_the_use_case_with_the_run() {
    let (_d, uc, _) = fixture("dead-killed");
    let table = out(ubunye(&uc).env("COLUMNS", "80").args(["runs", "-d", "uc"]));
    let head = table.lines().next().unwrap_or_default();
    assert!(head.contains(" TASK ") && head.contains(" RUN "), "{table}");
    assert!(table.lines().all(|l| unicode_width::UnicodeWidthStr::width(l) <= 80), "{table}");
    let shown = out(ubunye(&uc).args(["runs", "show", "uc:a7ee7676"]));
    assert!(shown.contains("run       a7ee7676-3983-4c1b-8fff-47937b7a2497"), "{shown}");
    let o = ubunye(&uc).args(["runs", "show", "uc:a7ee7676", "-d", "uc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give either -d or <usecase>:<run>"), "{o:?}");
}

/// A folder where an orphan's claimed file, or a pending run's replaced
/// file, should be: doctor says to move it, as for a dead lease's claim,
/// never that the next run or a repair will do.
#[test]
fn doctor_names_a_folder_in_an_orphans_or_a_pending_runs_place() {
    for (name, key, verb) in [("orphan", "7d10", "takeover"), ("rerun-pending", "39bc", "finish")] {
        let (_d, uc, _) = fixture(name);
        let o = ubunye(&uc).args(["leases", "explain", key, "-d", "uc", "--json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let plans = v["plans"].as_array().cloned().unwrap_or_default();
        let file = plans
            .iter()
            .flat_map(|p| p["remove"].as_array().cloned().unwrap_or_default())
            .find(|f| f["present"] == true);
        let claim = file.and_then(|f| f["claim"].as_str().map(str::to_string)).unwrap_or_else(|| panic!("{name}: {v}"));
        let path = uc.join(&claim);
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        let doc = out(ubunye(&uc).args(["doctor", "-d", "uc"])).split_whitespace().collect::<Vec<_>>().join(" ");
        let named = format!("A folder stands where its claimed file {} should be", path.display());
        assert!(doc.contains(&named) && doc.contains(&format!("then `ubunye leases {verb} ")), "{name}: {doc}");
    }
}

/// `runs show` quotes a record's fields made plain text, as `runs` does.
#[test]
fn runs_show_never_drives_the_terminal_with_a_records_words() {
    let (_d, uc, _) = fixture("dead-killed");
    let dir = uc.join(".ubunye/lineage/demo/sales/ingest");
    let record = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("a7ee7676")));
    let record = record.unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    doc["error"] = "boom \u{1b}]0;pwned\u{7}\u{1b}[2J \u{202e}evil".into();
    fs::write(&record, serde_json::to_string(&doc).unwrap()).unwrap();
    let shown = out(ubunye(&uc).args(["runs", "show", "a7ee7676", "-d", "uc"]));
    assert!(shown.contains("boom") && shown.contains("pwned"), "{shown}");
    assert!(!shown.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{shown:?}");
}

/// A filter that leaves nothing is quoted as typed, made plain text.
#[test]
fn a_filter_quoted_back_never_drives_the_terminal() {
    let (_d, uc, _) = fixture("dead-killed");
    let odd = "x\u{1b}]0;pwned\u{7}\u{202e}";
    for args in [
        &["leases", "list", "-d", "uc", "--task", odd][..],
        &["runs", "-d", "uc", "--task", odd],
        &["leases", "history", "-d", "uc", "--task", odd],
    ] {
        let o = ubunye(&uc).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(text.contains("pwned"), "{args:?}: {text}");
        assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{args:?}: {text:?}");
    }
}
