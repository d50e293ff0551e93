//! `ubunye exec` end to end: the runs the second review proved wrong (a
//! relative -d).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::Command as Cmd;

/// The binary under test (`UBUNYE_TEST_BIN` runs these tests against another
/// build, e.g. the one before the fixes, to see them fail).
fn bin() -> PathBuf {
    std::env::var_os("UBUNYE_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ubunye")), PathBuf::from)
}

/// `ubunye exec -d uc`, run from beside `uc`: `-d` relative, as people type it.
fn exec(uc: &Path) -> Cmd {
    let mut c = Cmd::new(bin());
    c.current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_SETTLE", "30ms")
        .env("UBUNYE_EXEC_GRACE", "200ms")
        .env_remove("UBUNYE_RUN_LEASE")
        .args(["exec", "-d", "uc"]);
    c
}

fn files(dir: &Path) -> Vec<String> {
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

fn use_case() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join("out")).unwrap();
    (d, uc)
}

const INGEST: [&str; 6] = ["--task", "demo/sales/ingest", "-dt", "2025-01-01", "--append", "events=out/events"];
const RECORDS: &str = ".ubunye/lineage/demo/sales/ingest";

/// Wait (up to 10 s) until `p` exists and ends with a newline.
fn wait_for(p: &Path) {
    for _ in 0..1000 {
        if fs::read_to_string(p).is_ok_and(|s| s.ends_with('\n')) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", p.display());
}

/// Start `ubunye exec` (relative -d) with `script`, wait for `mark`, SIGKILL it.
fn killed_run(uc: &Path, extra: &[&str], script: &str, mark: &Path) {
    let mut child = Command::new(bin())
        .current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_SETTLE", "30ms")
        .args(["exec", "-d", "uc"])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(mark);
    child.kill().unwrap();
    child.wait().unwrap();
}

fn statuses(uc: &Path) -> Vec<String> {
    let mut out: Vec<String> = files(&uc.join(RECORDS))
        .iter()
        .map(|f| {
            let v: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(uc.join(RECORDS).join(f)).unwrap()).unwrap();
            v["status"].as_str().unwrap().to_string()
        })
        .collect();
    out.sort();
    out
}

/// Review 2, finding 1: with a relative -d, the lineage folder was joined onto
/// the use-case folder twice: a takeover looked for the dead run's record in
/// `uc/uc/.ubunye/lineage`, left it `running`, and took back a batch whose
/// record said success.
#[test]
fn a_relative_usecase_folder_finds_the_dead_runs_record() {
    let (d, uc) = use_case();
    let mark = d.path().join("started");
    let script = format!("echo a > \"$UBUNYE_OUT_EVENTS/p-$UBUNYE_RUN_ID\"; echo x > {}; sleep 30", mark.display());
    killed_run(&uc, &INGEST, &script, &mark);
    assert_eq!(statuses(&uc), ["running"]);
    exec(&uc)
        .args(INGEST)
        .args(["--", "sh", "-c", "echo b > \"$UBUNYE_OUT_EVENTS/p-$UBUNYE_RUN_ID\""])
        .assert()
        .success();
    assert_eq!(statuses(&uc), ["interrupted", "success"], "the dead run's record is marked");
    assert!(!uc.join("uc").exists(), "nothing under uc/uc");
    // A dead run whose record says success (killed after it, before its
    // commit) finished the batch: the next run of the batch is refused.
    let (d, uc) = use_case();
    let mark = d.path().join("started");
    killed_run(&uc, &INGEST, &format!("echo x > {}; sleep 30", mark.display()), &mark);
    let rec = uc.join(RECORDS).join(&files(&uc.join(RECORDS))[0]);
    let text = fs::read_to_string(&rec).unwrap().replace("\"status\": \"running\"", "\"status\": \"success\"");
    fs::write(&rec, text).unwrap();
    let o = exec(&uc).args(INGEST).args(["--", "true"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("had finished") && err.contains("already finished this batch"), "{err}");
}
