//! `ubunye exec` (second review): output that never panics, and the wording of
//! a killed command.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command as Cmd;

/// The binary under test (`UBUNYE_TEST_BIN` runs these tests against another
/// build, e.g. the one before the fixes, to see them fail).
fn bin() -> PathBuf {
    std::env::var_os("UBUNYE_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ubunye")), PathBuf::from)
}

/// `ubunye exec -d uc`, run from beside `uc` (so `-d` is relative, as people type it).
fn exec(uc: &Path) -> Cmd {
    let mut c = Cmd::new(bin());
    c.current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_SETTLE", "30ms")
        .env_remove("UBUNYE_RUN_LEASE")
        .args(["exec", "-d", "uc"]);
    c
}

fn use_case() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join("out")).unwrap();
    (d, uc)
}

/// Review 2, finding 16a: a closed stdout (`| head`) made the [SKIP] line panic
/// (exit 101).
#[test]
fn a_closed_stdout_never_panics() {
    let (_d, uc) = use_case();
    let ingest = ["--task", "demo/sales/ingest", "-dt", "2025-01-01", "--append", "events=out/events"];
    exec(&uc).args(ingest).args(["--", "true"]).assert().success();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = std::process::Command::new(bin())
        .current_dir(uc.parent().unwrap())
        .args(["exec", "-d", "uc"])
        .args(ingest)
        .args(["--resume", "--", "true"])
        .stdout(writer)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The other commands print through the same helper.
    for cmd in [&["key", "--task", "demo/sales/ingest", "-dt", "1"][..], &["runs", "-d", "uc"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = std::process::Command::new(bin())
            .current_dir(uc.parent().unwrap())
            .args(cmd)
            .stdout(writer)
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "{cmd:?}");
        assert_ne!(o.status.code(), Some(101), "{cmd:?}");
    }
}

/// Review 2, finding 16c: "the command killed by SIGTERM" lacked its verb.
#[test]
fn a_killed_command_is_said_in_a_sentence() {
    let (_d, uc) = use_case();
    let o = exec(&uc).args(["--task", "demo/sales/ingest", "--", "sh", "-c", "kill -TERM $$"]).output().unwrap();
    assert_eq!(o.status.code(), Some(143));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the command was killed by SIGTERM; what it wrote was taken back."), "{err}");
}
