//! `ubunye leases takeover` and `ubunye leases finish`, through the binary.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;

/// What the peer's next run did after its takeover: append one part file, one
/// claim and one rename (its pandas writer), and commit. Done here through the
/// library, as that next run.
fn next_run_appends(uc: &Path, dt: &str) {
    let spec = ubunye::LeaseSpec::new(uc, task(), vars(dt), uuid_like());
    let (lease, _) = ubunye::RunLease::acquire(spec, ubunye::Sys::from_env()).unwrap();
    lease.check_finished(&["events".into()], false).unwrap();
    lease.writing("events", true, true).unwrap();
    let name = format!("part-00000-{}-c000.snappy.parquet", uuid_like());
    let side = uc.join("out/.events.ubunye-0123456789ab");
    fs::create_dir_all(&side).unwrap();
    fs::write(side.join(&name), "data").unwrap();
    let target = uc.join("out/events").join(&name);
    lease.claim("events", &target).unwrap();
    fs::rename(side.join(&name), &target).unwrap();
    lease.landed(&target).unwrap();
    fs::remove_dir(&side).unwrap();
    lease.written("events").unwrap();
    lease.end(true).unwrap();
}

fn uuid_like() -> String {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let h = format!("{:032x}", n ^ (std::process::id() as u128) << 64);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The locked fixtures were captured with their output folder made undeletable
/// (`chattr +i`); the copies here are writable already: "unlocked".
fn unlock(_uc: &Path) {}

/// Repair a fixture with the CLI, let the next run do what the peer's did, and
/// compare with the peer's own recovery.
fn repaired_like_the_peer(dead: &str, command: &str, key: &str, next: Option<&str>, peer: &str) {
    let (_d, uc, _) = fixture(dead);
    unlock(&uc);
    // Records are compared when both fixtures come from the same runs (the
    // peer's `*-recovered` fixture continues its dead one).
    let (_q, peer_uc0, _) = fixture(peer);
    let before: Vec<String> = record_ids(&uc).into_iter().filter(|r| record_ids(&peer_uc0).contains(r)).collect();
    let o = ubunye(&uc).args(["leases", command, key, "-d", "uc", "--yes"]).output().unwrap();
    assert!(o.status.success(), "{dead}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    // A finished run's batch is said to be finished, never free.
    let said = String::from_utf8_lossy(&o.stdout);
    let finished = command == "finish" || said.contains(" had finished: ");
    let end = if finished { "the batch is finished." } else { "the next run of the batch starts clean." };
    assert!(said.trim_end().ends_with(end), "{dead}: {said}");
    if let Some(dt) = next {
        next_run_appends(&uc, dt);
    }
    // The audit line is this engine's; the peer has none.
    let audit = fs::read_to_string(uc.join(".ubunye/repairs.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 1);
    fs::remove_file(uc.join(".ubunye/repairs.jsonl")).unwrap();
    let (_p, peer_uc, _) = fixture(peer);
    let tops = [".ubunye/leases", ".ubunye/lineage", "out"];
    same_snapshot(&snapshot(&uc, &tops, &before), &snapshot(&peer_uc, &tops, &before), &format!("{dead} -> {peer}"));
}

#[test]
fn every_fixture_state_is_repaired_as_the_peer_repaired_it() {
    repaired_like_the_peer("dead-killed", "takeover", "7d10", Some("2025-01-02"), "taken-over-done");
    repaired_like_the_peer("orphan", "takeover", "7d10", Some("2025-01-02"), "orphan-adopted");
    repaired_like_the_peer("kept", "takeover", "7d10", Some("2025-01-02"), "kept-recovered");
    repaired_like_the_peer("takeover-refused-in-use", "takeover", "7d10", Some("2025-01-02"), "taken-over-done");
    repaired_like_the_peer("rerun-pending", "finish", "39bc", None, "rerun-pending-recovered");
    repaired_like_the_peer("rerun-pending-kept", "finish", "39bc", None, "rerun-pending-recovered");
    repaired_like_the_peer("dead-before-commit", "takeover", "7d10", None, "dead-before-commit-recovered");
    repaired_like_the_peer("dead-spark-staged", "takeover", "540a", Some("2025-01-03"), "dead-spark-staged-taken-over");
}

#[test]
fn the_record_and_the_audit_say_who_repaired_it() {
    let (_d, uc, _) = fixture("dead-killed");
    ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--yes"]).env("USER", "oncall").assert().success();
    let rec: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(uc.join(".ubunye/lineage/demo/sales/ingest/a7ee7676-3983-4c1b-8fff-47937b7a2497.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "interrupted");
    assert!(
        rec["error"].as_str().unwrap().starts_with("The run did not finish; ubunye leases takeover (run "),
        "{rec}"
    );
    let audit: serde_json::Value =
        serde_json::from_str(fs::read_to_string(uc.join(".ubunye/repairs.jsonl")).unwrap().trim()).unwrap();
    assert_eq!(audit["user"], "oncall");
    assert_eq!(audit["command"], "ubunye leases takeover");
    assert_eq!(audit["key"], "7d106ca76674f2a1");
    assert_eq!(audit["taken_over"][0], "a7ee7676-3983-4c1b-8fff-47937b7a2497");
    assert_eq!(audit["files_removed"].as_array().unwrap().len(), 1);
    assert_eq!(audit["outcome"], "done");
    // explain shows the past repair.
    let o = ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ubunye leases takeover by oncall@"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn dry_run_changes_nothing_and_nothing_repairable_is_one_line() {
    let (_d, uc, _) = fixture("dead-killed");
    let before = tree(&uc);
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--dry-run"]).output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("remove out/events/part-00000-f0b49ced"));
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--dry-run", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["plans"][0]["remove"][0]["present"], true);
    assert_eq!(tree(&uc), before, "--dry-run changed nothing");
    // Without a terminal and without --yes: refused before anything is
    // read, nothing changed (no probe of the disk's clock written and
    // removed: the lease folders' times are as they were).
    let mtimes = || {
        let leases = uc.join(".ubunye/leases");
        [leases.clone(), leases.join("demo/sales/ingest")].map(|d| std::fs::metadata(d).unwrap().modified().unwrap())
    };
    let was = mtimes();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc"]).write_stdin("").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nobody can confirm"));
    assert_eq!(tree(&uc), before);
    assert_eq!(mtimes(), was, "a refused repair wrote in the lease folders");
    for (args, code, says) in [
        (&["leases", "takeover", "39bc", "-d", "uc", "--yes"][..], 1, "is finished: no lease holds it"),
        (
            &["leases", "finish", "7d10", "-d", "uc", "--yes"],
            1,
            "is dead: its run did not commit, so there is nothing to finish",
        ),
        (&["leases", "takeover", "ffff", "-d", "uc", "--yes"], 2, "no batch with a key or run id starting 'ffff'"),
    ] {
        let o = ubunye(&uc).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
        assert_eq!(tree(&uc), before, "{args:?}");
    }
}

#[test]
fn unreadable_and_outside_are_refused_and_nothing_changes() {
    let (_d, uc, _) = fixture("dead-killed");
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    let outside = uc.parent().unwrap().join("canary");
    fs::write(&outside, "keep").unwrap();
    let text = fs::read_to_string(&lease).unwrap().replace("\"claimed\": [", "\"claimed\": [\"../canary\", ");
    fs::write(&lease, text).unwrap();
    set_mtime(&lease, UNIX_EPOCH + Duration::from_secs(1_795_948_390));
    let before = tree(&uc);
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("will not remove"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(tree(&uc), before);
    assert!(outside.exists());
    fs::write(&lease, b"{\"run_id\": \"\xff\"}").unwrap();
    let before = tree(&uc);
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be read"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(tree(&uc), before);
}

/// A real process holding a lease (an exec of `sleep`), then the same stopped:
/// refused, and the tree is unchanged.
#[test]
fn a_live_holder_is_never_taken_over_stalled_or_not() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(&uc).unwrap();
    let mark = d.path().join("started");
    let mut holder = Command::new(env!("CARGO_BIN_EXE_ubunye"))
        .args(["exec", "-q", "-d"])
        .arg(&uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-02", "--append", "events=out/events", "--"])
        .args(["sh", "-c", &format!("touch {}; sleep 30", mark.display())])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..500 {
        if mark.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let real = |uc: &Path| {
        let mut c = assert_cmd::Command::cargo_bin("ubunye").unwrap();
        c.current_dir(uc.parent().unwrap()).env("NO_COLOR", "1");
        c
    };
    let before = tree(&uc);
    let o = real(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is live: a live run holds it, and a live run is never taken over"), "{err}");
    // Stopped, and its lease last written 10 minutes ago: stalled, still refused.
    let pid = rustix::process::Pid::from_raw(holder.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    for _ in 0..500 {
        let stat = fs::read_to_string(format!("/proc/{}/stat", holder.id())).unwrap_or_default();
        if stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('T')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    set_mtime(&lease, SystemTime::now() - Duration::from_secs(600));
    let before_stalled = tree(&uc);
    let o = real(&uc).args(["leases", "explain", "7d10", "-d", "uc"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("alive but stalled: process {} is stopped (state T)", holder.id())), "{text}");
    let o = real(&uc).args(["leases", "takeover", "7d10", "-d", "uc", "--yes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("alive but stalled"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(tree(&uc), before_stalled, "nothing changed");
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let _ = before;
}

/// Two takeovers of one batch at once: one does it, the other refuses or finds
/// nothing to do; the dead run's file is removed once, the rest stays.
#[test]
fn two_takeovers_at_once() {
    for _ in 0..3 {
        let (_d, uc, _) = fixture("dead-killed");
        let spawn = || {
            ubunye(&uc)
                .args(["leases", "takeover", "7d10", "-d", "uc", "--yes"])
                .env("UBUNYE_TEST_SETTLE", "300ms")
                .timeout(Duration::from_secs(30))
                .output()
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(spawn);
            let b = s.spawn(spawn);
            (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
        });
        let ok = [&a, &b].iter().filter(|o| o.status.success()).count();
        assert_eq!(ok, 1, "{}\n{}", String::from_utf8_lossy(&a.stderr), String::from_utf8_lossy(&b.stderr));
        assert_eq!(
            files(&uc.join("out/events")),
            ["_SUCCESS", "part-00000-ff869a38-8d2f-43ac-b8d6-303681ac89db-c000.snappy.parquet"]
        );
        assert!(!uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json").exists(), "released");
    }
}

/// A "dead" run that writes its lease again during the settle wins: the repair
/// refuses and takes nothing back.
#[test]
fn a_dead_looking_run_that_writes_during_the_settle_wins() {
    let (_d, uc, _) = fixture("dead-killed");
    let dir = uc.join(".ubunye/leases/demo/sales/ingest");
    let lease = dir.join("7d106ca76674f2a1.json");
    let dead_text = fs::read_to_string(&lease).unwrap();
    let writer = write_back_when_renamed(
        dir.clone(),
        lease.clone(),
        dead_text,
        Duration::from_millis(100),
        Duration::from_secs(4),
    );
    let o = ubunye(&uc)
        .args(["leases", "takeover", "7d10", "-d", "uc", "--yes"])
        .env("UBUNYE_TEST_SETTLE", "1s")
        .output()
        .unwrap();
    assert!(writer.join().unwrap(), "the writer saw the takeover");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("looked dead but wrote its lease again"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        uc.join("out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet").exists(),
        "nothing taken back"
    );
    let audit = fs::read_to_string(uc.join(".ubunye/repairs.jsonl")).unwrap();
    assert!(audit.contains("\"outcome\":\"refused: "), "{audit}");
}

/// A takeover racing a new `ubunye exec` of the batch: exactly one holds it at a
/// time, and the batch lands once.
#[test]
fn a_takeover_racing_a_new_run_of_the_batch() {
    for _ in 0..3 {
        let (_d, uc, _) = fixture("dead-killed");
        let (t, e) = std::thread::scope(|s| {
            let t = s.spawn(|| {
                ubunye(&uc)
                    .args(["leases", "takeover", "7d10", "-d", "uc", "--yes"])
                    .env("UBUNYE_TEST_SETTLE", "200ms")
                    .output()
                    .unwrap()
            });
            let e = s.spawn(|| {
                ubunye(&uc)
                    .args([
                        "exec",
                        "-q",
                        "-d",
                        "uc",
                        "--task",
                        "demo/sales/ingest",
                        "-dt",
                        "2025-01-02",
                        "--append",
                        "events=out/events",
                        "--",
                    ])
                    .args(["sh", "-c", "echo new > \"$UBUNYE_OUT_EVENTS/part-new-$UBUNYE_RUN_ID.txt\""])
                    .env("UBUNYE_TEST_SETTLE", "200ms")
                    .output()
                    .unwrap()
            });
            (t.join().unwrap(), e.join().unwrap())
        });
        let out = files(&uc.join("out/events"));
        assert!(!out.iter().any(|f| f.contains("f0b49ced")), "the dead run's file was taken back: {out:?}");
        let new = out.iter().filter(|f| f.starts_with("part-new-")).count();
        assert_eq!(
            new,
            usize::from(e.status.success()),
            "the batch lands once ({out:?}); exec: {}",
            String::from_utf8_lossy(&e.stderr)
        );
        assert!(
            t.status.success() || e.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&t.stderr),
            String::from_utf8_lossy(&e.stderr)
        );
        assert!(!uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json").exists());
    }
}

/// A save a dead run's kill cut between its write and its rename leaves a
/// temp file in the lease folder (`ubunye killtest` found them). A takeover
/// removes its batch's, and only its batch's: no run of the batch can be
/// writing them once the lease is taken. Stricter than the peer
/// (docs/differences.md).
#[test]
fn a_takeover_removes_the_dead_runs_temp_files_of_its_batch_only() {
    let (_d, uc, _) = fixture("dead-killed");
    let dir = uc.join(".ubunye/leases/demo/sales/ingest");
    let ours = ["7d106ca76674f2a1.0123abcd.tmp", "7d106ca76674f2a1.finished.89abcdef.tmp"];
    let other = "39bc42311894ddba.0123abcd.tmp";
    for n in ours.iter().chain([&other]) {
        fs::write(dir.join(n), "{\"run_id\": \"half").unwrap();
    }
    let o = ubunye(&uc).args(["leases", "takeover", "7d10", "--yes", "-d", "uc"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    for n in ours {
        assert!(!dir.join(n).exists(), "{n} is removed");
    }
    assert!(dir.join(other).exists(), "another batch's temp file stays");
}

/// A claimed file that is now a folder: the plan says so before anyone is
/// asked (no "remove" of it), and the takeover is refused at once, with no
/// wait and nothing changed.
#[test]
fn a_plan_names_a_step_it_cannot_do_before_it_asks() {
    let (_d, uc, _) = fixture("dead-killed");
    let claim = "out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet";
    fs::remove_file(uc.join(claim)).unwrap();
    fs::create_dir(uc.join(claim)).unwrap();
    let before = tree(&uc);
    let o = ubunye(&uc).args(["leases", "explain", "7d10", "-d", "uc"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("REFUSE: {claim} is a folder where a claimed file should be")), "{text}");
    assert!(!text.contains(&format!("remove {claim}")), "{text}");
    for how in ["--yes", "--dry-run"] {
        let o = ubunye(&uc).args(["leases", "takeover", "7d10", "-d", "uc", how]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{how}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{how}: one line, no wait: {err}");
        assert!(err.contains("is a folder where a claimed file should be"), "{how}: {err}");
    }
    assert_eq!(tree(&uc), before, "nothing changed");
}

/// A bulk takeover (one plan for every batch a filter names) killed midway
/// leaves every batch repairable: each is done or still to repair, none
/// unreadable, and the same bulk takeover run again finishes them all.
#[test]
fn a_bulk_takeover_killed_midway_leaves_every_batch_repairable() {
    use std::io::{BufRead, BufReader};
    let d = tempfile::tempdir().unwrap();
    let sandbox = d.path().join("sandbox");
    let o = Command::new(bin()).args(["demo", "--no-top", "--dir"]).arg(&sandbox).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let uc = sandbox.to_str().unwrap();
    let states = |uc: &str| -> Vec<(String, String)> {
        let o = Command::new(bin()).args(["leases", "list", "--all", "--json", "-d", uc]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["batches"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["task"] == "demo/sales/ingest")
            .map(|b| (b["key"].as_str().unwrap()[..8].to_string(), b["state"].as_str().unwrap().to_string()))
            .collect()
    };
    let picked = ["f194d8cb", "501df1dd", "bc4afddd"];
    let bulk =
        ["leases", "takeover", "-d", uc, "--state", "dead,orphan,pending", "--task", "demo/sales/ingest", "--yes"];
    let mut child = Command::new(bin())
        .args(bulk)
        .env("UBUNYE_TEST_SETTLE", "1500ms")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the first batch is done, while the next one waits.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.by_ref().map_while(Result::ok).find(|l| l.starts_with("[1/3]"));
    assert!(first.is_some(), "the first batch was repaired before the kill");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let after = states(uc);
    let repairable = ["dead", "orphan", "pending", "handed-back"];
    let (mut done, mut left) = (0, 0);
    for key in picked {
        let state = &after.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("{key} gone: {after:?}")).1;
        match state.as_str() {
            "interrupted" | "finished" => done += 1,
            s if repairable.contains(&s) => left += 1,
            s => panic!("{key} is {s} after the kill: {after:?}"),
        }
    }
    assert!(done >= 1 && left >= 1, "killed midway: {after:?}");
    let o = Command::new(bin()).args(bulk).env("UBUNYE_TEST_SETTLE", "20ms").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let after = states(uc);
    for key in picked {
        let state = &after.iter().find(|(k, _)| k == key).unwrap().1;
        assert!(!repairable.contains(&state.as_str()), "{key} still {state}: {after:?}");
    }
}

/// A repair asked on a terminal and declined leaves the use case as it was,
/// to the folders' times: its plan is read as a look reads it (the disk's
/// clock read without writing a probe), and nothing else happens before the
/// answer.
#[test]
fn a_repair_declined_at_its_question_writes_nothing() {
    let (_d, uc, _) = fixture("dead-killed");
    let leases = uc.join(".ubunye/leases");
    let mtimes = || {
        [leases.clone(), leases.join("demo/sales/ingest")].map(|d| std::fs::metadata(d).unwrap().modified().unwrap())
    };
    let (before, was) = (tree(&uc), mtimes());
    std::thread::sleep(Duration::from_millis(20));
    let env = [("UBUNYE_TEST_HOST", Some(ELSEWHERE)), ("UBUNYE_TEST_SETTLE", Some("20ms")), ("NO_COLOR", Some("1"))];
    let Some((code, text)) = on_a_terminal(uc.parent().unwrap(), "leases takeover 7d10 -d uc", 100, &env, Some("n\n"))
    else {
        return;
    };
    assert!(text.contains("Go ahead? [y/N]") && text.contains("Nothing was done."), "{text}");
    assert_eq!(code, 1, "{text}");
    assert_eq!(tree(&uc), before);
    assert_eq!(mtimes(), was, "a declined repair wrote in the lease folders");
}

/// A bulk repair's `--task` naming one task whole acts on that task alone:
/// a sibling whose names only start the same (`demo/sales_eu/ingest`) is
/// never taken with it.
#[test]
fn a_bulk_repair_of_a_task_named_whole_leaves_its_siblings() {
    let (_d, uc, _) = fixture("dead-killed");
    let leases = uc.join(".ubunye/leases");
    copy_tree(&leases.join("demo/sales"), &leases.join("demo/sales_eu"));
    let lease = leases.join("demo/sales_eu/ingest/7d106ca76674f2a1.json");
    set_mtime(&lease, UNIX_EPOCH + Duration::from_secs(1_795_948_390));
    let o = ubunye(&uc)
        .args([
            "leases",
            "takeover",
            "-d",
            "uc",
            "--state",
            "dead",
            "--task",
            "demo/sales/ingest",
            "--dry-run",
            "--json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("demo/sales/ingest") && !text.contains("demo/sales_eu/ingest"), "{text}");
}
