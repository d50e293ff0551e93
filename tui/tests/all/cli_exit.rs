//! The exit codes, one table (docs/json.md, `ubunye --help`), held against
//! every command: 0 done (doctor: nothing found); 1 refused or doctor's
//! findings; 2 usage; and for `ubunye exec` also 126/127 and the command's
//! own code. Each case that is not 0 says why in one line on stderr.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use crate::common;
use common::{empty_use_case, fixture, set_mtime, tree, ubunye};

/// Run `args` from beside `uc`; assert the code, one stderr line when it is
/// not 0, and that the stderr line says `says`. Returns stderr.
fn expect(uc: &Path, args: &[&str], code: i32, says: &str) -> String {
    let o = ubunye(uc).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    if code != 0 {
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    }
    assert!(err.contains(says), "{args:?}: wanted {says:?} in: {err}");
    err
}

/// Every command that reads a use case, on folders that are not one: 2 (was 1).
#[test]
fn a_dir_that_is_not_a_use_case_is_a_usage_error_that_says_what_it_is() {
    let (_d, uc, _) = fixture("dead-killed");
    fs::write(uc.parent().unwrap().join("afile"), "x").unwrap();
    fs::create_dir_all(uc.parent().unwrap().join("plain")).unwrap();
    let commands: [&[&str]; 7] = [
        &["leases", "list"],
        &["leases", "explain", "7d10"],
        &["leases", "takeover", "7d10", "--dry-run"],
        &["leases", "finish", "7d10", "--yes"],
        &["runs"],
        &["doctor"],
        &["top"],
    ];
    let before = tree(&uc);
    for cmd in commands {
        for (dir, says) in [
            ("nowhere", "nowhere does not exist"),
            ("afile", "afile is a file, not a folder"),
            ("plain", "the Python engine's `ubunye run -d`"),
            ("uc/.ubunye", "is Ubunye's own .ubunye/ folder"),
            ("uc/.ubunye/leases/demo", "point -d at the folder that holds it"),
        ] {
            let args: Vec<&str> = cmd.iter().copied().chain(["-d", dir]).collect();
            let err = expect(&uc, &args, 2, says);
            if dir.starts_with("uc/.ubunye") {
                let parent = fs::canonicalize(&uc).unwrap();
                assert!(err.trim_end().ends_with(&format!("-d {}", parent.display())), "{err}");
            }
        }
    }
    assert_eq!(tree(&uc), before, "nothing changed");
}

/// Key prefixes: empty, not hex, naming nothing or several are usage errors;
/// a look, a dry run and a repair all need 4 hex digits or more (as git's
/// short hashes).
#[test]
fn key_prefixes_follow_the_table() {
    let (_d, uc, _) = fixture("dead-killed");
    let before = tree(&uc);
    let d = ["-d", "uc"];
    let with = |a: &[&'static str]| -> Vec<&'static str> { a.iter().copied().chain(d).collect() };
    for repair in ["takeover", "finish"] {
        expect(&uc, &with(&["leases", repair, "", "--yes"]), 2, "name a batch");
        expect(&uc, &with(&["leases", repair, "7d1", "--yes"]), 2, "a batch is named by at least 4");
        expect(&uc, &with(&["leases", repair, "7d1", "--dry-run"]), 2, "a batch is named by at least 4");
        expect(&uc, &with(&["leases", repair, "7d10", "--dry-run"]), if repair == "takeover" { 0 } else { 1 }, "");
        expect(&uc, &with(&["leases", repair, "zz9", "--yes"]), 2, "write ./zz9");
    }
    expect(&uc, &with(&["leases", "explain", ""]), 2, "an empty batch key names no batch");
    expect(&uc, &with(&["leases", "explain", "7"]), 2, "a batch is named by at least 4");
    expect(&uc, &with(&["leases", "explain", "7d10"]), 0, "");
    expect(&uc, &with(&["leases", "explain", "7d106ca76674f2a1.json"]), 2, "write ./7d106ca76674f2a1.json");
    expect(&uc, &with(&["leases", "explain", "ffff"]), 2, "no batch with a key or run id starting 'ffff'");
    assert_eq!(tree(&uc), before, "nothing changed");
    fs::write(uc.join(".ubunye/leases/demo/sales/ingest/7d10ffffffffffff.finished.json"), "{\"run_id\": \"x\"}")
        .unwrap();
    expect(&uc, &with(&["leases", "explain", "7d10"]), 2, "names 2 batches");
    expect(&uc, &with(&["leases", "takeover", "7d10", "--yes"]), 2, "names 2 batches");
}

/// 1: a live holder, a repair that does not apply; 0 when it is done;
/// doctor 0 clean and 1 with findings; bad flags 2 everywhere (clap's own
/// message, which is not one line).
#[test]
fn refusals_findings_and_bad_flags_follow_the_table() {
    let (_d, uc, _) = fixture("live");
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    set_mtime(&lease, SystemTime::now());
    let before = tree(&uc);
    expect(&uc, &["leases", "takeover", "7d10", "-d", "uc", "--yes"], 1, "live");
    expect(&uc, &["leases", "takeover", "39bc", "-d", "uc", "--yes"], 1, "is finished");
    assert_eq!(tree(&uc), before, "nothing changed");

    let (_d, uc, _) = fixture("dead-killed");
    expect(&uc, &["leases", "finish", "7d10", "-d", "uc", "--yes"], 1, "nothing to finish");
    expect(&uc, &["leases", "takeover", "7d10", "-d", "uc", "--yes"], 0, "");
    let (_d, uc, _) = fixture("taken-over-done");
    expect(&uc, &["doctor", "-d", "uc"], 0, "");
    fs::write(uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.abcd1234.tmp"), "{").unwrap();
    let o = ubunye(&uc).args(["doctor", "-d", "uc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "doctor's findings");
    assert!(String::from_utf8_lossy(&o.stdout).contains("temp-file"));
    for args in [
        &["leases", "list", "-d", "uc", "--state", "deda"][..],
        &["leases", "list", "--bogus"],
        &["runs", "-d", "uc", "--since", "yesterday"],
        &["doctor", "-d", "uc", "--json", "--bogus"],
        &["key", "--task", "demo/sales"],
        &["top", "--watch", "never"],
        &[],
    ] {
        let o = ubunye(&uc).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    expect(&uc, &["top", "-d", "uc"], 2, "top needs a terminal");
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("keep"), "x").unwrap();
    let dir = d.path().to_string_lossy().into_owned();
    expect(&uc, &["demo", "--no-top", "--dir", &dir], 2, "not empty");
}

/// `ubunye exec`: 0, 1 refused (or --refused-exit N), 2 usage, 126 cannot be
/// executed, 127 not found, else the command's own code (128+N for signal N).
#[test]
fn exec_tells_a_scheduler_each_outcome_apart() {
    let (d, uc) = empty_use_case();
    fs::create_dir_all(uc.join(".ubunye")).unwrap();
    let plain = d.path().join("plain.sh");
    fs::write(&plain, "#!/bin/sh\nexit 0\n").unwrap();
    let plain = plain.to_string_lossy().into_owned();
    let folder = d.path().to_string_lossy().into_owned();
    let run = |dt: &str, extra: &[&str], cmd: &[&str]| -> Vec<String> {
        let mut v: Vec<String> =
            ["exec", "-d", "uc", "--task", "demo/sales/ingest", "-dt", dt].map(String::from).to_vec();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.push("--".into());
        v.extend(cmd.iter().map(|s| s.to_string()));
        v
    };
    let case = |args: Vec<String>, code: i32, says: &str| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        expect(&uc, &a, code, says);
    };
    let append = ["--append", "e=out/e"];
    case(run("1", &append, &["sh", "-c", "echo x > \"$UBUNYE_OUT_E/p\""]), 0, "done");
    case(run("1", &append, &["true"]), 1, "already finished this batch");
    case(run("1", &["--append", "e=out/e", "--refused-exit", "75"], &["true"]), 75, "already finished this batch");
    case(run("2", &[], &["sh", "-c", "exit 3"]), 3, "exited with code 3");
    case(run("3", &[], &["sh", "-c", "kill -TERM $$"]), 143, "was killed by SIGTERM");
    let before = common::entries(d.path());
    case(run("4", &[], &["no-such-program-here"]), 127, "no such program");
    case(run("4", &[], &["./no/such/path"]), 127, "no such program");
    case(run("4", &[], &[&plain]), 126, "cannot be executed");
    case(run("4", &[], &[&folder]), 126, "cannot be executed");
    case(run("4", &["--append", "bad"], &["true"]), 2, "NAME=PATH");
    let zero = run("4", &["--refused-exit", "0"], &["true"]);
    assert_eq!(ubunye(&uc).args(&zero).output().unwrap().status.code(), Some(2), "0 means done: not a refusal's code");
    assert_eq!(common::entries(d.path()), before, "nothing written for 2, 126 and 127");
    // A usage error wins over a command that cannot start: the call is wrong first.
    case(run("4", &["--append", "bad"], &["no-such-program-here"]), 2, "NAME=PATH");
}

/// The hidden words are the binary's own: the demo's
/// actor is `__demo-actor`, and only a child of the demo acts; a variable
/// named like the old switch changes nothing.
#[test]
fn the_demos_actor_is_a_word_only_the_demo_uses() {
    let (_d, uc) = empty_use_case();
    let before = tree(&uc);
    let err = expect(
        &uc,
        &["__demo-actor", "dead", "uc", "demo/sales/ingest", "2025-01-01", "events", "out/events"],
        2,
        "__demo-actor is started by `ubunye demo` only",
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(tree(&uc), before, "typed by hand, it changes nothing");
    let o = ubunye(&uc).env("UBUNYE_DEMO_ACTOR", "dead").arg("--version").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("ubunye-rs "));
}

/// A durability that is not one is refused by every command that writes,
/// before anything is done; the commands that only look ignore it.
#[test]
fn a_bad_durability_setting_is_a_usage_error_for_the_writers_and_nothing_changes() {
    let (_d, uc, _) = fixture("dead-killed");
    let before = tree(&uc);
    for args in [
        vec!["exec", "-d", "uc", "--task", "demo/sales/ingest", "-dt", "2025-01-09", "--", "true"],
        vec!["leases", "takeover", "7d10", "--yes", "-d", "uc"],
        vec!["leases", "finish", "7d10", "--yes", "-d", "uc"],
    ] {
        let o = ubunye(&uc).env("UBUNYE_DURABILITY", "off").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("UBUNYE_DURABILITY=off is not a durability"), "{args:?}: {err}");
    }
    assert_eq!(tree(&uc), before, "nothing changed");
    let o = ubunye(&uc).env("UBUNYE_DURABILITY", "off").args(["leases", "list", "-d", "uc"]).output().unwrap();
    assert!(o.status.code() != Some(2), "looking is not refused: {}", String::from_utf8_lossy(&o.stderr));
}

/// With --json, an error is one JSON object on stdout (docs/json.md,
/// "Errors") and the same one line on stderr; nothing changes.
#[test]
fn a_json_error_is_one_object_on_stdout_and_one_line_on_stderr() {
    let (_d, uc, _) = fixture("dead-killed");
    let before = tree(&uc);
    for (args, code, kind) in [
        (&["leases", "explain", "f1", "-d", "uc", "--json"][..], 2, "usage"),
        (&["leases", "explain", "ffff", "-d", "uc", "--json"], 2, "usage"),
        (&["leases", "takeover", "39bc", "-d", "uc", "--yes", "--json"], 1, "refused"),
        (&["leases", "list", "-d", "nowhere", "--json"], 2, "usage"),
        (&["runs", "-d", "nowhere", "--json"], 2, "usage"),
        (&["doctor", "-d", "nowhere", "--json"], 2, "usage"),
        (&["leases", "list", "-d", "uc", "--json", "--state", "bogus"], 2, "usage"),
    ] {
        let o = ubunye(&uc).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)));
        assert_eq!(v["error"]["kind"], kind, "{args:?}: {v}");
        assert_eq!(v["error"]["exit_code"], code, "{args:?}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty() && err.contains(message), "{args:?}: {message:?} not in {err}");
    }
    // A command that wrote its document adds no error object.
    let o = ubunye(&uc).args(["doctor", "-d", "uc", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("error").is_none(), "{v}");
    assert_eq!(tree(&uc), before, "nothing changed");
}
