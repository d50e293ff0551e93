//! `ubunye exec`: invocations that would do harm, each a usage error
//! (exit 2, one line) found before anything is written; and the
//! command line recorded with secrets masked, output that never panics, and
//! the wording of a killed command.

use std::fs;
use std::path::Path;

use assert_cmd::Command as Cmd;

use crate::common;
use common::{bin, empty_use_case, entries};

/// `ubunye exec -d uc`, run from beside `uc` (so `-d` is relative, as people type it).
fn exec(uc: &Path) -> Cmd {
    let mut c = Cmd::new(bin());
    c.current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_SETTLE", "30ms")
        .env_remove("UBUNYE_RUN_LEASE")
        .args(["exec", "-d", "uc"]);
    c
}

/// Each case: exit 2, one line saying `says`, and nothing written anywhere
/// (no `.ubunye/`, no staging, no output folder, nothing outside).
fn refused(d: &Path, uc: &Path, cases: &[(&[&str], &str)]) {
    for (args, says) in cases {
        let before = entries(d);
        let o = exec(uc).args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        assert_eq!(entries(d), before, "{args:?}: nothing written");
    }
}

const T: [&str; 3] = ["--task", "demo/sales/ingest", "-dt=2025-01-01"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    T.iter().copied().chain(extra.iter().copied()).collect()
}

/// `dt` and `DT` (or `é` and `ü`) are two variables of the batch and one
/// environment name: the command would see one value while the
/// batch is keyed by both.
#[test]
fn variables_that_meet_in_the_environment_are_a_usage_error() {
    let (d, uc) = empty_use_case();
    let a = args(&["--var", "DT=1999-12-31", "--", "true"]);
    let b = args(&["--var", "MODE=PROD", "--", "true"]);
    let c = args(&["--var", "é=1", "--var", "ü=2", "--", "true"]);
    refused(d.path(), &uc, &[(&a, "UBUNYE_VAR_DT"), (&b, "UBUNYE_VAR_MODE"), (&c, "UBUNYE_VAR__")]);
}

/// Names the disk cannot hold, outputs outside the use-case folder and a
/// script whose interpreter is missing are found before the lease and the
/// record are written (found after, a long output name would leave a kept
/// lease that refuses the batch for good).
#[test]
fn what_cannot_work_is_refused_before_anything_is_written() {
    let (d, uc) = empty_use_case();
    fs::create_dir_all(d.path().join("outside")).unwrap();
    std::os::unix::fs::symlink(d.path().join("outside"), uc.join("lnk")).unwrap();
    let script = d.path().join("bad.sh");
    fs::write(&script, "#!/nonexistent/interp\necho hi\n").unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let long = "x".repeat(300);
    let long_out = format!("e=out/{long}");
    let long_task = format!("demo/sales/{long}");
    let overwrite_235 = format!("s=out/{}", "y".repeat(240));
    let script = script.to_string_lossy().into_owned();
    let abs = format!("e={}", d.path().join("outside/x").display());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (args(&["--append", &long_out, "--", "true"]), "300 bytes long"),
        (vec!["--task", &long_task, "-dt", "1", "--", "true"], "300 bytes long"),
        (args(&["--overwrite", &overwrite_235, "--", "true"]), "staging folder beside it adds"),
        (args(&["--append", "e=../outside/x", "--", "true"]), "outside the use-case folder"),
        (args(&["--append", &abs, "--", "true"]), "outside the use-case folder"),
        (args(&["--append", "e=lnk/x", "--", "true"]), "outside the use-case folder"),
        // A lease's lifetime is a store's: the peer's 15 minutes bind a disk.
        (args(&["--lease-ttl", "2m", "--", "true"]), "--lease-ttl is for a use case in a store"),
    ];
    let cases: Vec<(&[&str], &str)> = cases.iter().map(|(a, s)| (a.as_slice(), *s)).collect();
    refused(d.path(), &uc, &cases);
    // A script whose interpreter is missing is there but cannot be executed:
    // 126, as `env` tells it, and still before anything is written.
    let before = entries(d.path());
    let o = exec(&uc).args(args(&["--", &script])).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(126), "{err}");
    assert!(err.contains("/nonexistent/interp") && err.trim_end().lines().count() == 1, "{err}");
    assert_eq!(entries(d.path()), before, "nothing written");
    // The batch is not wedged: the corrected run runs.
    exec(&uc)
        .args(args(&["--append", "events=out/events", "--", "sh", "-c", "echo x > \"$UBUNYE_OUT_EVENTS/p\""]))
        .assert()
        .success();
}

/// An output that is (or is inside) a staging folder would be removed with it
/// when that run ends; and two paths that are one folder through a symlink
/// are the same output.
#[test]
fn staging_folders_and_aliases_are_refused_as_outputs() {
    let (d, uc) = empty_use_case();
    fs::create_dir_all(uc.join("out/events/_ubunye-0123456789ab")).unwrap();
    std::os::unix::fs::symlink(uc.join("out"), uc.join("alias")).unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--task", "demo/sales/other", "--append", "b=out/events/_ubunye-0123456789ab", "--", "true"], "staging"),
        (&["--task", "demo/sales/other", "--append", "b=out/.x.ubunye-0123456789ab/y", "--", "true"], "staging"),
        (&["--task", "demo/sales/other", "--append", "b=alias/events/_ubunye-0123456789ab/z", "--", "true"], "staging"),
        (&["--task", "demo/sales/x", "--append", "e=out/a", "--append", "f=alias/a", "--", "true"], "same folder"),
    ];
    refused(d.path(), &uc, &cases);
}

/// An overwrite output that is a symlink (or a dangling one) would be swapped
/// as a link, leaving the old link as debris no removal would touch: a usage
/// error; and an output the command turns into a file is not published and
/// leaves no debris.
#[test]
fn an_overwrite_output_must_be_a_real_folder() {
    let (d, uc) = empty_use_case();
    fs::create_dir_all(uc.join("releases/v1")).unwrap();
    fs::write(uc.join("releases/v1/total.csv"), "OLD").unwrap();
    std::os::unix::fs::symlink("releases/v1", uc.join("current")).unwrap();
    std::os::unix::fs::symlink("nowhere", uc.join("dangling")).unwrap();
    let cases: [(&[&str], &str); 2] = [
        (&["--task", "demo/sales/s", "--overwrite", "s=current", "--", "true"], "is a symlink"),
        (&["--task", "demo/sales/s", "--overwrite", "s=dangling", "--", "true"], "symlink to nothing"),
    ];
    refused(d.path(), &uc, &cases);
    let script = format!("echo x > \"$UBUNYE_OUT_S/a\"; echo oops > {}", uc.join("out/s").display());
    let o = exec(&uc)
        .args(["--task", "demo/sales/s", "--overwrite", "s=out/s", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a folder any more"));
    assert_eq!(entries(&uc.join("out")), vec!["s"], "the command's file stays; no staging left beside it");
    assert_eq!(fs::read_to_string(uc.join("releases/v1/total.csv")).unwrap(), "OLD");
}

/// A custom --lineage-dir is protected like .ubunye/: an overwrite of it would
/// delete every run record.
#[test]
fn the_run_record_folder_is_never_an_output() {
    let (d, uc) = empty_use_case();
    let rec = ["--lineage-dir", "records"];
    for dt in ["2025-01-01", "2025-01-02"] {
        exec(&uc)
            .args(["--task", "demo/sales/ingest", "-dt", dt, "--append", "events=out/events"])
            .args(rec)
            .args(["--", "sh", "-c", "echo x > \"$UBUNYE_OUT_EVENTS/p-$UBUNYE_RUN_ID\""])
            .assert()
            .success();
    }
    assert_eq!(entries(&uc.join("records/demo/sales/ingest")).len(), 2);
    let cases: [(&[&str], &str); 3] = [
        (
            &["--task", "demo/sales/s", "--lineage-dir", "records", "--overwrite", "s=records", "--", "true"],
            "run-record",
        ),
        (
            &["--task", "demo/sales/s", "--lineage-dir", "records", "--overwrite", "s=records/demo", "--", "true"],
            "run-record",
        ),
        (&["--task", "demo/sales/s", "--lineage-dir", "out/r", "--overwrite", "s=out", "--", "true"], "run-record"),
    ];
    refused(d.path(), &uc, &cases);
}

/// A secret value shorter than 4 characters is masked in the recorded command
/// line too, as the record's variables show it (`***`).
#[test]
fn short_secret_values_are_masked_in_the_recorded_command() {
    let (_d, uc) = empty_use_case();
    exec(&uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-01", "--var", "pwd=k9Z", "--var", "api_key=s3cr3tvalue"])
        .args(["--", "sh", "-c", "true", "--pwd", "k9Z", "--key=s3cr3tvalue", "Bearer k9Z", "k9Zed"])
        .assert()
        .success();
    let dir = uc.join(".ubunye/lineage/demo/sales/ingest");
    let rec = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(rec).unwrap()).unwrap();
    let cmd: Vec<&str> = v["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(cmd, ["sh", "-c", "true", "--pwd", "***", "--key=***", "Bearer ***", "k9Zed"]);
    assert_eq!(v["variables"]["pwd"], "***");
}

/// A closed stdout (`| head`) never makes the [SKIP] line panic (exit 101).
#[test]
fn a_closed_stdout_never_panics() {
    let (_d, uc) = empty_use_case();
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

/// A killed command is said in a sentence, with its verb ("the command was
/// killed by SIGTERM").
#[test]
fn a_killed_command_is_said_in_a_sentence() {
    let (_d, uc) = empty_use_case();
    let o = exec(&uc).args(["--task", "demo/sales/ingest", "--", "sh", "-c", "kill -TERM $$"]).output().unwrap();
    assert_eq!(o.status.code(), Some(143));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the command was killed by SIGTERM; what it wrote was taken back."), "{err}");
}
