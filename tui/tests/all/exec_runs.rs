//! `ubunye exec` end to end: the runs that are easy to get wrong (a
//! relative -d, a failed publish, a staging folder swapped for a symlink or
//! holding odd names or a mount, background processes, dropped files).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::Command as Cmd;

use crate::common;
use common::{bin, empty_use_case, entries};

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

const INGEST: [&str; 6] = ["--task", "demo/sales/ingest", "-dt", "2025-01-01", "--append", "events=out/events"];
const LEASES: &str = ".ubunye/leases/demo/sales/ingest";
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
/// It runs in a session of its own, as under a scheduler (no terminal).
fn killed_run(uc: &Path, extra: &[&str], script: &str, mark: &Path) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| rustix::process::setsid().map(|_| ()).map_err(Into::into));
    }
    let mut child = cmd
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
    let mut out: Vec<String> = entries(&uc.join(RECORDS))
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

/// Whether a process is gone (or a zombie nobody reaped yet: it runs no more).
fn gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')),
    }
}

/// With a relative -d, the lineage folder is joined onto the use-case folder
/// once: joined twice, a takeover would look for the dead run's record in
/// `uc/uc/.ubunye/lineage`, leave it `running`, and take back a batch whose
/// record says success.
#[test]
fn a_relative_usecase_folder_finds_the_dead_runs_record() {
    let (d, uc) = empty_use_case();
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
    let (d, uc) = empty_use_case();
    let mark = d.path().join("started");
    killed_run(&uc, &INGEST, &format!("echo x > {}; sleep 30", mark.display()), &mark);
    let rec = uc.join(RECORDS).join(&entries(&uc.join(RECORDS))[0]);
    let text = fs::read_to_string(&rec).unwrap().replace("\"status\": \"running\"", "\"status\": \"success\"");
    fs::write(&rec, text).unwrap();
    let o = exec(&uc).args(INGEST).args(["--", "true"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("had finished") && err.contains("already finished this batch"), "{err}");
    assert!(entries(&uc.join("out/events")).iter().all(|f| !f.contains("_ubunye-")), "its staging folder went");
}

/// Overwrites swapped in (and their old copies deleted) one by one, before a
/// later output failed, would let the failed run replace the output while it
/// says nothing was moved: every output is left as it was.
#[test]
fn a_run_that_fails_to_publish_leaves_every_output_as_it_was() {
    let (_d, uc) = empty_use_case();
    fs::create_dir_all(uc.join("out/summary")).unwrap();
    fs::create_dir_all(uc.join("out/events")).unwrap();
    fs::write(uc.join("out/summary/total.csv"), "OLD").unwrap();
    fs::write(uc.join("out/events/part.csv"), "someone else's").unwrap();
    let before = entries(&uc.join("out"));
    let o = exec(&uc)
        .args(["--task", "demo/sales/report", "-dt", "2025-01-01"])
        .args(["--overwrite", "a_summary=out/summary", "--append", "b_events=out/events", "--append", "c=out/c"])
        .args(["--", "sh", "-c"])
        .arg("echo NEW > \"$UBUNYE_OUT_A_SUMMARY/total.csv\"; echo mine > \"$UBUNYE_OUT_B_EVENTS/part.csv\"; echo c > \"$UBUNYE_OUT_C/c.csv\"")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("already exists in the output") && err.contains("Nothing was claimed or moved"), "{err}");
    assert_eq!(fs::read_to_string(uc.join("out/summary/total.csv")).unwrap(), "OLD");
    assert_eq!(fs::read_to_string(uc.join("out/events/part.csv")).unwrap(), "someone else's");
    let after: Vec<String> = entries(&uc.join("out")).into_iter().filter(|f| f != "c").collect();
    assert_eq!(after, before, "no staging, no old copy, nothing landed");
    assert_eq!(entries(&uc.join(".ubunye/leases/demo/sales/report")), Vec::<String>::new(), "lease released");
}

/// A command that replaces its staging folder with a symlink to a folder
/// outside the use case never has that folder's files moved into the output
/// (where a --rerun or a failed run would then delete them).
#[test]
fn a_staging_folder_turned_into_a_symlink_is_never_followed() {
    for fail_later in [false, true] {
        let (d, uc) = empty_use_case();
        fs::create_dir_all(d.path().join("elsewhere")).unwrap();
        fs::write(d.path().join("elsewhere/keep.csv"), "precious").unwrap();
        fs::create_dir_all(uc.join("out/other")).unwrap();
        fs::write(uc.join("out/other/x.csv"), "foreign").unwrap();
        let mut script = format!(
            "rmdir \"$UBUNYE_OUT_EVENTS\" && ln -s {} \"$UBUNYE_OUT_EVENTS\"",
            d.path().join("elsewhere").display()
        );
        let mut c = exec(&uc);
        c.args(INGEST);
        if fail_later {
            c.args(["--append", "z=out/other"]);
            script.push_str("; echo y > \"$UBUNYE_OUT_Z/x.csv\"");
        }
        let o = c.args(["--", "sh", "-c", &script]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(fs::read_to_string(d.path().join("elsewhere/keep.csv")).unwrap(), "precious", "{err}");
        assert_eq!(entries(&uc.join("out/events")), Vec::<String>::new(), "nothing landed, no link left: {err}");
        assert_eq!(entries(&uc.join(LEASES)), Vec::<String>::new(), "lease released: {err}");
    }
}

/// A staging folder holding a folder whose name is not UTF-8 is removed, as a
/// takeover says it is.
#[test]
fn a_staging_folder_holding_names_that_are_not_utf8_is_removed() {
    let (d, uc) = empty_use_case();
    let weird = std::ffi::OsStr::from_bytes(b"p=\xff");
    // A failed command (rollback), a successful one (its odd name is refused, as
    // a claim must be text), and a killed one (takeover).
    let make = "d=\"$UBUNYE_OUT_EVENTS/$(printf 'p=\\377')\"; mkdir \"$d\"; echo row > \"$d/x\"";
    exec(&uc).args(INGEST).args(["--", "sh", "-c", &format!("{make}; exit 3")]).assert().code(3);
    let o = exec(&uc).args(INGEST).args(["--", "sh", "-c", make]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let mark = d.path().join("started");
    killed_run(&uc, &INGEST, &format!("{make}; echo x > {}; sleep 30", mark.display()), &mark);
    exec(&uc).args(INGEST).args(["--", "true"]).assert().success();
    assert!(!uc.join("out/events").join(weird).exists());
    let left: Vec<String> = entries(&uc.join("out/events")).into_iter().filter(|f| f.contains("_ubunye-")).collect();
    assert_eq!(left, Vec::<String>::new(), "no staging folder left");
}

/// No background process the command left keeps writing after landing
/// (recreating the staging folder, changing a committed file), nor outlives a
/// killed `ubunye exec`.
#[test]
fn no_process_of_the_command_outlives_its_run() {
    let (d, uc) = empty_use_case();
    let pidfile = d.path().join("bg.pid");
    let script = format!(
        "echo row > \"$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID\"; (trap '' TERM; sleep 30; mkdir -p \"$UBUNYE_OUT_EVENTS\"; echo late > \"$UBUNYE_OUT_EVENTS/late\") & echo $! > {}",
        pidfile.display()
    );
    let o = exec(&uc).args(INGEST).args(["--", "sh", "-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("process(es) running; they were stopped"), "{err}");
    let pid: i32 = fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(gone(pid), "the background process (which ignores SIGTERM) was killed before exec returned");
    // ubunye exec itself killed (with no terminal: its command
    // has a group of its own, with a keeper): the group dies with it, and the
    // next run finds nothing of it running.
    // The mark is written once the keeper is up (a process of this group
    // running `__group-keeper`, found through /proc): exec starts it just after
    // the command, and a kill between the two leaves the group to the next
    // takeover (`stop_run_processes`), not to the keeper.
    let mark = d.path().join("started");
    let keeper = r#"keeper() { for s in /proc/[0-9]*/stat; do set -- $(cat "$s" 2>/dev/null); [ "$5" = "$$" ] && grep -qa __group-keeper "${s%stat}cmdline" 2>/dev/null && return 0; done; return 1; }; i=0; until keeper || [ $i -gt 500 ]; do sleep 0.01; i=$((i+1)); done"#;
    let script =
        format!("(sleep 30) & echo $! > {}; {keeper}; echo x > {}; sleep 30", pidfile.display(), mark.display());
    let dt2 = ["--task", "demo/sales/ingest", "-dt", "2025-01-02", "--append", "events=out/events"];
    killed_run(&uc, &dt2, &script, &mark);
    let pid: i32 = fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    for _ in 0..200 {
        if gone(pid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone(pid), "the group keeper killed it when ubunye exec died");
    let o = exec(&uc).args(dt2).args(["--", "true"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("process(es) of it still running"), "{err}");
}

/// Files whose names start with `_` or `.` land, claimed like the rest, never
/// deleted with the staging folder while exec reports success; only the
/// writer's own top `_SUCCESS` is not moved (ubunye writes the output's).
#[test]
fn files_named_with_a_leading_underscore_or_dot_land_too() {
    let (_d, uc) = empty_use_case();
    let script = "o=\"$UBUNYE_OUT_EVENTS\"; echo d > \"$o/part-$UBUNYE_RUN_ID.parquet\"; echo s > \"$o/_common_metadata\"; mkdir \"$o/_delta_log\" \"$o/_k=1\"; echo '{}' > \"$o/_delta_log/0.json\"; echo v > \"$o/_k=1/p\"; echo h > \"$o/.manifest\"; touch \"$o/_SUCCESS\"";
    let o = exec(&uc).args(INGEST).args(["--", "sh", "-c", script]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = entries(&uc.join("out/events"));
    for want in [".manifest", "_SUCCESS", "_common_metadata", "_delta_log/0.json", "_k=1/p"] {
        assert!(out.contains(&want.to_string()), "{want} in {out:?}");
    }
    let note = fs::read_to_string(uc.join(LEASES).join("39bc42311894ddba.finished.json")).unwrap();
    for claimed in ["out/events/_common_metadata", "out/events/_delta_log/0.json", "out/events/.manifest"] {
        assert!(note.contains(claimed), "{claimed} claimed: {note}");
    }
    assert!(!note.contains("out/events/_SUCCESS"), "{note}");
}

/// Removing a staging folder never walks into a folder the command
/// bind-mounted there, which would delete files outside the use case. (Needs
/// root for `mount --bind`; says SKIPPED otherwise.)
#[test]
fn a_mount_point_in_a_staging_folder_is_never_crossed() {
    let (d, uc) = empty_use_case();
    fs::create_dir_all(d.path().join("outside")).unwrap();
    fs::write(d.path().join("outside/keep.csv"), "precious").unwrap();
    let script = format!(
        "mkdir \"$UBUNYE_OUT_EVENTS/_m\" && mount --bind {} \"$UBUNYE_OUT_EVENTS/_m\" 2>/dev/null || exit 99; echo d > \"$UBUNYE_OUT_EVENTS/part\"",
        d.path().join("outside").display()
    );
    let o = exec(&uc).args(INGEST).args(["--", "sh", "-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let mounts: Vec<String> = fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(1).filter(|m| m.starts_with(&*uc.to_string_lossy())).map(str::to_string))
        .collect();
    for m in &mounts {
        let _ = Command::new("umount").arg(m).status();
    }
    if o.status.code() == Some(99) {
        eprintln!("SKIPPED: mount --bind needs root");
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("mount point"), "{err}");
    assert_eq!(fs::read_to_string(d.path().join("outside/keep.csv")).unwrap(), "precious");
    assert!(err.contains("the lease is kept"), "the staging folder it could not remove stays listed: {err}");
    let lease: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(uc.join(LEASES).join("39bc42311894ddba.json")).unwrap()).unwrap();
    assert!(lease["outputs"]["events"]["staging"].as_str().unwrap().contains("_ubunye-"), "{lease}");
    // Unmounted, the next run takes the kept lease over and removes the rest.
    exec(&uc).args(INGEST).args(["--", "true"]).assert().success();
    assert!(entries(&uc.join("out/events")).iter().all(|f| !f.contains("_ubunye-")));
    assert_eq!(fs::read_to_string(d.path().join("outside/keep.csv")).unwrap(), "precious");
}

/// When the end of the run record cannot be written
/// (here the command put a folder where its record was), exec says so in
/// one warning line naming the record, also under --quiet; the run's outcome
/// stands (done, exit 0, as the peer's), and the record is left as it is.
#[test]
fn a_run_record_whose_end_cannot_be_written_is_said() {
    let (_d, uc) = empty_use_case();
    let records = uc.join(".ubunye/lineage/demo/sales/ingest");
    let script = format!(
        "echo row > \"$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID\"; r={}/$UBUNYE_RUN_ID.json; rm -f \"$r\"; mkdir \"$r\"",
        records.display()
    );
    for quiet in [false, true] {
        let dt = if quiet { "2025-01-02" } else { "2025-01-01" };
        let mut c = exec(&uc);
        c.args(["--task", "demo/sales/ingest", "-dt", dt, "--append", "events=out/events"]);
        if quiet {
            c.arg("--quiet");
        }
        let o = c.args(["--", "sh", "-c", &script]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let warned: Vec<&str> = err.lines().filter(|l| l.contains("could not be written")).collect();
        assert_eq!(warned.len(), 1, "one warning line: {err}");
        assert!(
            warned[0].contains(&records.display().to_string()) && warned[0].contains("still says running"),
            "{err}"
        );
    }
    let landed: Vec<String> = entries(&uc.join("out/events"));
    assert_eq!(landed.iter().filter(|n| n.starts_with("part-")).count(), 2, "both runs landed: {landed:?}");
}

/// `runs show RUN`: one run whole, by its run id (its first digits, as the
/// listings show it) or its record's path from any folder: its record, its
/// batch with the command that explains it, and the end of its log.
#[test]
fn runs_show_prints_a_run_whole_with_the_end_of_its_log() {
    let (_d, uc) = empty_use_case();
    let o = Command::new("setsid")
        .arg(bin())
        .args(["exec", "-d"])
        .arg(&uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-04", "--"])
        .args([
            "sh",
            "-c",
            // One stream (stderr) for all of it: two pipes are read as their
            // bytes arrive, so lines of stdout and stderr have no order between them.
            "i=0; while [ $i -lt 50 ]; do echo line-$i >&2; i=$((i+1)); done; echo 'no such file' >&2; exit 3",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let dir = uc.join(".ubunye/lineage/demo/sales/ingest");
    let record = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let run = record.file_stem().unwrap().to_string_lossy().into_owned();
    let show = |args: &[&str], from: &Path| {
        let o = Command::new(bin()).args(["runs", "show"]).args(args).current_dir(from).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let uc_s = uc.to_str().unwrap();
    let (code, text, err) = show(&[&run[..8], "-d", uc_s, "--lines", "5"], elsewhere.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(text.starts_with(&format!("run       {run}\ntask      demo/sales/ingest\n")), "{text}");
    assert!(text.contains("status    error") && text.contains("exited with code 3"), "{text}");
    assert!(text.contains(&format!("`ubunye leases explain {}:", fs::canonicalize(&uc).unwrap().display())), "{text}");
    assert!(text.contains("Log (its last 5 line(s) of "), "{text}");
    let log: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("Log (")).skip(1).collect();
    assert_eq!(log.len(), 5, "{text}");
    assert!(log.iter().any(|l| l.trim() == "no such file") && log.iter().any(|l| l.trim() == "line-49"), "{text}");
    // By its record's path, from another folder, no -d; as JSON.
    let (code, json, err) = show(&[record.to_str().unwrap(), "--json"], elsewhere.path());
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["record"]["run_id"], run.as_str());
    assert_eq!(v["key"].as_str().unwrap().len(), 16);
    assert_eq!(v["log_tail"].as_array().unwrap().len(), 40, "the default: the last 40 of its 51 lines");
    // Unknown and ambiguous: usage errors that say what to do.
    let (code, _, err) = show(&["ffff0000", "-d", uc_s], elsewhere.path());
    assert_eq!(code, Some(2));
    assert!(err.contains("no run id starting 'ffff0000'") && err.contains("`ubunye runs -d "), "{err}");
    fs::copy(&record, dir.join(format!("{}-0000-0000-0000-000000000000.json", &run[..8]))).unwrap();
    let (code, _, err) = show(&[&run[..8], "-d", uc_s], elsewhere.path());
    assert_eq!(code, Some(2));
    assert!(err.contains("names 2 runs"), "{err}");
}
