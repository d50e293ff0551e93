//! Many use cases in one listing: `-d` repeated and `--find
//! ROOT`, for `leases list`, `doctor`, `runs` and `explain`; rows carry their
//! use case, a prefix that names batches in two use cases is refused naming
//! both, `<usecase>:<key>` names one, and a use case that cannot be read is a
//! row, not the end of the listing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::*;

fn run(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(bin()).current_dir(cwd).args(args).env("NO_COLOR", "1").output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap_or(-1), s(&o.stdout), s(&o.stderr))
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// `root/` holding `dead/` (the fixture), `team/a/` and `team/b/` (two copies
/// of one fixture: the same keys), `demo/` (a demo sandbox) and `notes/`,
/// which is no use case.
fn fleet() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    copy_tree(&fixture_dir("dead-killed").join("uc"), &root.join("dead"));
    copy_tree(&fixture_dir("kept").join("uc"), &root.join("team/a"));
    copy_tree(&fixture_dir("kept").join("uc"), &root.join("team/b"));
    let o = Command::new(bin()).args(["demo", "--no-top", "--dir"]).arg(root.join("demo")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::create_dir_all(root.join("notes/2026")).unwrap();
    (d, root)
}

fn keys_of(uc: &Path) -> BTreeSet<String> {
    let (code, out, err) = run(uc, &["leases", "list", "--all", "--json"]);
    assert_eq!(code, 0, "{err}");
    json(&out)["batches"].as_array().unwrap().iter().map(|b| b["key"].as_str().unwrap().to_string()).collect()
}

#[test]
fn every_row_carries_its_use_case() {
    let (_d, root) = fleet();
    let ucs = ["dead", "demo", "team/a", "team/b"];
    let (code, out, err) = run(&root, &["leases", "list", "--all", "--json", "--find", "."]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let found: Vec<&str> = v["use_cases"].as_array().unwrap().iter().map(|u| u["shown"].as_str().unwrap()).collect();
    assert_eq!(found, ucs.map(|u| format!("./{u}")).iter().map(String::as_str).collect::<Vec<_>>());
    for uc in ucs {
        let real = std::fs::canonicalize(root.join(uc)).unwrap();
        let rows: BTreeSet<String> = v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["use_case"] == real.to_str().unwrap())
            .map(|b| b["key"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(rows, keys_of(&root.join(uc)), "the rows of {uc} are its own listing's");
    }
    // The same with -d given for each, and in the table, each row names
    // its batch as <usecase>:<key> (the key's first 8 digits, which every
    // command takes).
    let mut args = vec!["leases", "list", "--all"];
    for uc in ucs {
        args.extend(["-d", uc]);
    }
    let (code, table, err) = run(&root, &args);
    assert_eq!(code, 0, "{err}");
    assert!(table.lines().next().unwrap().contains("USE CASE:KEY"), "{table}");
    for uc in ucs {
        for key in keys_of(&root.join(uc)) {
            assert!(table.contains(&format!(" {uc}:{} ", &key[..8])), "{uc}:{key} in\n{table}");
        }
    }
    // One -d prints as it always did.
    let (_, one, _) = run(&root, &["leases", "list", "--all", "-d", "dead"]);
    assert!(!one.contains("USE CASE"), "{one}");
}

#[test]
fn a_prefix_in_two_use_cases_is_refused_naming_both() {
    let (_d, root) = fleet();
    // A batch of team/a, team/b and dead, not of a Spark fixture's use case.
    copy_tree(&fixture_dir("dead-spark-staged").join("uc"), &root.join("spark"));
    let key = "7d106ca76674f2a1".to_string();
    assert!(keys_of(&root.join("team/a")).contains(&key) && !keys_of(&root.join("spark")).contains(&key));
    let prefix = &key[..6];
    let (code, _, err) = run(&root, &["leases", "explain", prefix, "--find", "team"]);
    assert_eq!(code, 2, "{err}");
    for uc in ["team/a", "team/b"] {
        assert!(err.contains(&format!("{uc}:{key}")), "{uc} named in: {err}");
    }
    // Named with its use case, it is one batch; so with one -d.
    let (code, out, err) = run(&root, &["leases", "explain", &format!("team/b:{prefix}"), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["batch"]["key"], key.as_str(), "{out}");
    let (code, _, err) = run(&root, &["leases", "explain", prefix, "-d", "team/a", "-d", "spark"]);
    assert_eq!(code, 0, "one of the two use cases holds it: {err}");
    // A repair names one use case: two are refused, as is naming it twice.
    let (code, _, err) = run(&root, &["leases", "takeover", prefix, "-d", "team/a", "-d", "team/b", "--dry-run"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give -d once"), "{err}");
    let (code, _, err) = run(&root, &["leases", "takeover", &format!("team/a:{prefix}"), "-d", "team/a", "--dry-run"]);
    assert_eq!(code, 2, "{err}");
    let (code, out, err) = run(&root, &["leases", "takeover", &format!("team/a:{prefix}"), "--dry-run", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&key), "{out}");
}

#[test]
fn find_stays_inside_root_and_out_of_outputs() {
    let d = tempfile::tempdir().unwrap();
    let (root, outside) = (d.path().join("root"), d.path().join("outside"));
    copy_tree(&fixture_dir("kept").join("uc"), &root.join("uc"));
    copy_tree(&fixture_dir("kept").join("uc"), &outside.join("uc"));
    std::os::unix::fs::symlink(&outside, root.join("link-out")).unwrap();
    // An output folder of 10,000 files, inside the use case, with what looks
    // like a use case at its bottom: never looked at.
    let out = root.join("uc/out/big");
    std::fs::create_dir_all(out.join("part/.ubunye/leases")).unwrap();
    for i in 0..10_000 {
        std::fs::write(out.join(format!("f{i:05}.csv")), "x").unwrap();
    }
    let (code, out, err) = run(d.path(), &["leases", "list", "--all", "--json", "--find", "root", "--depth", "9"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let shown: Vec<&str> = v["use_cases"].as_array().unwrap().iter().map(|u| u["shown"].as_str().unwrap()).collect();
    assert_eq!(shown, ["root/uc"], "{v}");
    // The library's walk, asked directly: that it followed no link out is
    // the outside one not found; that it did not go into the output, the
    // kernel's word (the nested use case alone proves nothing: one found
    // inside another is also left out after the walk). inotify (through
    // notify, asked for opens alone) tells every opening of a watched
    // folder, a listing's first step.
    use notify::{Config, EventKindMask, INotifyWatcher, RecursiveMode, Watcher};
    let (tx, events) = std::sync::mpsc::channel();
    let mut ino = INotifyWatcher::new(tx, Config::default().with_event_kinds(EventKindMask::ACCESS_OPEN)).unwrap();
    let marker = d.path().join("marker");
    std::fs::create_dir(&marker).unwrap();
    for d in [root.join("uc/out"), root.join("uc/out/big"), marker.clone()] {
        ino.watch(&d, RecursiveMode::NonRecursive).unwrap();
    }
    // The folders opened until the marker's own listing is told: its event
    // comes after every one before it (one queue, in order).
    let opened = || {
        let _ = std::fs::read_dir(&marker).unwrap().count();
        let mut n = 0;
        loop {
            let e = events.recv_timeout(std::time::Duration::from_secs(10)).expect("the marker's opening").unwrap();
            if e.paths.contains(&marker) {
                return n;
            }
            n += 1;
        }
    };
    let f = ubunye::fleet::find(&root, 9).unwrap();
    assert_eq!(f.use_cases, vec![root.join("uc")]);
    assert_eq!(opened(), 0, "the walk opened a folder of the use case's outputs");
    // The watch sees a listing (so the zero above could have failed).
    let _ = std::fs::read_dir(root.join("uc/out/big")).unwrap().count();
    assert!(opened() > 0, "inotify saw no listing of the output");
}

#[test]
fn a_use_case_that_cannot_be_read_is_a_row() {
    let (_d, root) = fleet();
    let (code, out, err) = run(&root, &["leases", "list", "-d", "dead", "-d", "gone", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let rows = v["batches"].as_array().unwrap();
    let bad: Vec<_> = rows.iter().filter(|b| b["state"] == "unreadable").collect();
    assert_eq!(bad.len(), 1, "{v}");
    assert!(bad[0]["note"].as_str().unwrap().contains("gone"), "{v}");
    assert!(rows.iter().any(|b| b["state"] == "dead" || b["state"] == "live"), "the others are listed: {v}");
    assert!(v["use_cases"][1]["error"].is_string(), "{v}");
    let (code, table, _) =
        run(&root, &["leases", "list", "-d", "dead", "-d", "gone", "--state", "unreadable", "--fail-if-any"]);
    assert_eq!(code, 1, "{table}");
    assert!(table.contains("unreadable") && table.contains("gone"), "{table}");
    // Doctor: a finding of its own; the others still looked at.
    let (code, out, err) = run(&root, &["doctor", "-d", "dead", "-d", "gone", "--json"]);
    assert_eq!(code, 1, "{err}");
    let v = json(&out);
    let f = v["findings"].as_array().unwrap();
    // JSON names each use case as named, made absolute (as list, runs and
    // the metrics do), and as shown.
    let abs = |uc: &str| root.join(uc).to_str().unwrap().to_string();
    assert!(f.iter().any(|f| f["use_case"] == abs("gone").as_str() && f["kind"] == "unreadable"), "{v}");
    assert_eq!(v["use_cases"][0]["use_case"], abs("dead").as_str(), "{v}");
    assert_eq!(v["use_cases"][0]["shown"], "dead", "{v}");
    assert!(v["use_cases"][0]["looked_at"].as_u64().unwrap() > 0, "{v}");
    // Runs: a problem of the listing, in its JSON too (not on stderr only).
    let (code, out, err) = run(&root, &["runs", "-d", "dead", "-d", "gone", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["path"] == "gone" && p["why"].as_str().unwrap().contains("cannot be read")),
        "{v}"
    );
    assert!(!v["records"].as_array().unwrap().is_empty(), "the others are listed: {v}");
    // Explain: a prefix found once, beside a use case that could not be
    // read, may be in that one too: refused, naming both.
    let key = "7d106ca7";
    let (code, _, err) = run(&root, &["leases", "explain", key, "-d", "dead", "-d", "gone"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("could not be read") && err.contains("gone") && err.contains("dead:7d106ca7"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // One -d that is not a use case stays a usage error, as always.
    let (code, _, err) = run(&root, &["leases", "list", "-d", "gone"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn runs_and_doctor_name_the_use_case_of_each_row() {
    let (_d, root) = fleet();
    let (code, out, err) = run(&root, &["runs", "--find", ".", "--json", "--limit", "1000"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let ucs: BTreeSet<&str> =
        v["records"].as_array().unwrap().iter().map(|r| r["use_case"].as_str().unwrap()).collect();
    let abs = |uc: &str| root.join(uc).to_str().unwrap().to_string();
    assert!(ucs.contains(abs("demo").as_str()) && ucs.contains(abs("dead").as_str()), "{ucs:?}");
    for r in v["records"].as_array().unwrap() {
        let uc = r["use_case"].as_str().unwrap();
        assert!(r["path"].as_str().unwrap().starts_with(&format!("{uc}/.ubunye/")), "{r}");
    }
    let (_, table, _) = run(&root, &["runs", "--find", "."]);
    assert!(table.lines().next().unwrap().contains("USE CASE"), "{table}");
    let (code, out, _) = run(&root, &["doctor", "--find", ".", "--json"]);
    assert_eq!(code, 1, "the demo has findings");
    let v = json(&out);
    assert!(v["findings"].as_array().unwrap().iter().all(|f| f["use_case"].is_string()), "{v}");
    let (_, text, _) = run(&root, &["doctor", "--find", "."]);
    assert!(text.contains("== ./demo:") && text.contains("use case(s)."), "{text}");
}

/// One folder mounted at two places is one use case (counted twice, a sum
/// over the fleet would double it). Needs `mount --bind` (root).
#[test]
fn a_folder_mounted_twice_is_read_once() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    copy_tree(&fixture_dir("kept").join("uc"), &root.join("a/uc"));
    std::fs::create_dir_all(root.join("b")).unwrap();
    let mounted = Command::new("mount").arg("--bind").arg(root.join("a")).arg(root.join("b")).output();
    if !mounted.as_ref().is_ok_and(|o| o.status.success()) {
        let why = mounted.map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).unwrap_or_else(|e| e.to_string());
        eprintln!("a_folder_mounted_twice_is_read_once: SKIPPED, mount --bind is not allowed here: {why}");
        return;
    }
    let (code, out, err) = run(&root, &["leases", "list", "--all", "--json", "--find", "."]);
    let _ = Command::new("umount").arg(root.join("b")).status();
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_eq!(v["use_cases"].as_array().unwrap().len(), 1, "{v}");
}
