//! The engine, in process, on real files: acquire, refusals, takeover, orphans,
//! hand-back, the finished check, commit, --rerun, rollback and kept leases, and
//! the paths this engine will not remove. Time and pids are injected.

use crate::common;

use std::fs;
use std::time::Duration;

use common::*;
use ubunye::lease::Ended;
use ubunye::sys::Step;
use ubunye::{LeaseSpec, RefusalKind, RunLease};

const DT2_KEY: &str = "7d106ca76674f2a1";

fn lease_dir(uc: &std::path::Path) -> std::path::PathBuf {
    uc.join(".ubunye/leases/demo/sales/ingest")
}

fn spec(uc: &std::path::Path, dt: &str) -> LeaseSpec {
    LeaseSpec::new(uc, task(), vars(dt), uuid::Uuid::new_v4().to_string())
}

#[test]
fn fresh_acquire_writes_the_peer_layout_and_release_removes_it() {
    let d = tempfile::tempdir().unwrap();
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    procs.add(sys.pid, Some("123"));
    let (lease, acq) = RunLease::acquire(spec(d.path(), "2025-01-02"), sys.clone()).unwrap();
    assert!(acq.took_over.is_none() && acq.adopted.is_empty());
    assert_eq!(lease.key(), DT2_KEY);
    let text = fs::read_to_string(lease.path()).unwrap();
    let keys: Vec<String> =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text).unwrap().keys().cloned().collect();
    assert_eq!(keys, ["run_id", "task", "pid", "pid_started", "host", "started_at", "heartbeat", "outputs"]);
    assert!(
        text.contains(&format!("\"pid\": {}, \"pid_started\": \"123\", \"host\": \"{FIXTURE_HOST}\"", sys.pid)),
        "{text}"
    );
    assert!(text.ends_with("\"outputs\": {}}"), "{text}");
    assert!(lease.release());
    assert_eq!(files(d.path()), Vec::<String>::new(), "release leaves nothing");
}

#[test]
fn a_live_holder_is_refused_in_one_line_naming_it() {
    let (_d, uc, m) = fixture("live");
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, m.captured_at());
    let holder = &m.json["leases"][0];
    procs.add(holder["pid"].as_i64().unwrap() as i32, holder["pid_started"].as_str());
    let before = tree(&uc);
    let err = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Held));
    let line = err.refusal().unwrap().one_line();
    assert!(!line.contains('\n'));
    assert!(line.starts_with("Run 3a4c5780 of demo/sales/ingest with the same variables is still running (process 24702 on vm|pid:[4026531836], since 2026-11-29T10:32:16Z)."), "{line}");
    assert_eq!(tree(&uc), before, "a refusal changes nothing");
}

#[test]
fn dead_same_host_run_is_taken_over() {
    let (_d, uc, m) = fixture("dead-killed");
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let dead_file = uc.join("out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet");
    let kept_file = uc.join("out/events/part-00000-ff869a38-8d2f-43ac-b8d6-303681ac89db-c000.snappy.parquet");
    let (lease, acq) = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap();
    let r = acq.took_over.unwrap();
    assert_eq!(r.run_id, "a7ee7676-3983-4c1b-8fff-47937b7a2497");
    assert!(!r.finished && r.record_marked);
    assert_eq!(r.removed, vec![fs::canonicalize(uc.join("out/events")).unwrap().join(dead_file.file_name().unwrap())]);
    assert!(!dead_file.exists() && kept_file.exists());
    assert!(uc.join("out/events/_SUCCESS").exists(), "another batch's data is still there");
    assert!(lease_dir(&uc).join(format!("{DT2_KEY}.taken-a7ee7676-3983-4c1b-8fff-47937b7a2497")).exists());
    let rec: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(uc.join(".ubunye/lineage/demo/sales/ingest/a7ee7676-3983-4c1b-8fff-47937b7a2497.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rec["status"], "interrupted");
    let note = rec["error"].as_str().unwrap();
    assert!(
        note.starts_with(&format!(
            "The run did not finish; run {} took over its lease at 2026-11-29T",
            &lease.run_id()[..8]
        )),
        "{note}"
    );
    assert!(note.ends_with("and removed the files it had appended."));
    let names = files(&lease_dir(&uc));
    assert!(names.iter().all(|n| !n.contains(".dead-")), "the dead lease is gone: {names:?}");
    lease.release();
}

#[test]
fn another_host_is_judged_by_age_by_the_disk_clock() {
    let (_d, uc, m) = fixture("live");
    let lease_rel = format!(".ubunye/leases/demo/sales/ingest/{DT2_KEY}.json");
    let mtime = m.mtime(&lease_rel);
    // 14 minutes: refused.
    let (sys, _, _) = fake_sys("other|pid:[1]", mtime + Duration::from_secs(14 * 60));
    let err = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Held));
    // 16 minutes: taken over.
    let (sys, _, _) = fake_sys("other|pid:[1]", mtime + Duration::from_secs(16 * 60));
    let (lease, acq) = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap();
    assert_eq!(acq.took_over.unwrap().run_id, m.json["leases"][0]["run_id"].as_str().unwrap());
    lease.release();
}

#[test]
fn an_empty_lease_is_judged_by_age_even_on_this_host() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join(".ubunye/leases/demo/sales/ingest");
    fs::create_dir_all(&dir).unwrap();
    let lease = dir.join(format!("{DT2_KEY}.json"));
    fs::write(&lease, "").unwrap();
    let now = std::time::SystemTime::now();
    set_mtime(&lease, now - Duration::from_secs(30));
    let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
    let err = RunLease::acquire(spec(d.path(), "2025-01-02"), sys.clone()).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Held));
    assert!(err.refusal().unwrap().message.starts_with(
        "Run ? of demo/sales/ingest with the same variables is still running (process None on None, since None)."
    ));
    set_mtime(&lease, now - Duration::from_secs(20 * 60));
    let (l, acq) = RunLease::acquire(spec(d.path(), "2025-01-02"), sys).unwrap();
    assert_eq!(acq.took_over.unwrap().run_id, "");
    assert!(dir.join(format!("{DT2_KEY}.taken-")).exists(), "the tombstone of a lease with no run id");
    l.release();
}

#[test]
fn an_unreadable_lease_is_refused_naming_it_and_nothing_is_touched() {
    for damage in ["folder", "not-utf8", "bad-pid", "nan"] {
        let (_d, uc, m) = fixture("dead-killed");
        let lease = lease_dir(&uc).join(format!("{DT2_KEY}.json"));
        match damage {
            "folder" => {
                fs::remove_file(&lease).unwrap();
                fs::create_dir(&lease).unwrap();
            }
            "not-utf8" => fs::write(&lease, b"{\"run_id\": \"\xff\"}").unwrap(),
            "bad-pid" => fs::write(
                &lease,
                format!(r#"{{"run_id": "x", "pid": "abc", "host": "{FIXTURE_HOST}", "outputs": {{}}}}"#),
            )
            .unwrap(),
            _ => fs::write(
                &lease,
                r#"{"run_id": "x", "heartbeat": NaN, "outputs": {"events": {"claimed": ["out/events/a"]}}}"#,
            )
            .unwrap(),
        }
        set_mtime(&lease, m.captured_at() - Duration::from_secs(3600));
        let before = tree(&uc);
        let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
        let err = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap_err();
        assert_eq!(err.kind(), Some(RefusalKind::Unreadable), "{damage}: {err}");
        assert!(
            err.to_string().contains(&format!("{DT2_KEY}.json for demo/sales/ingest exists but cannot be read")),
            "{damage}: {err}"
        );
        assert_eq!(tree(&uc), before, "{damage}: nothing changed");
    }
}

#[test]
fn an_orphan_is_adopted_without_a_tombstone() {
    let (_d, uc, m) = fixture("orphan");
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let (lease, acq) = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap();
    assert!(acq.took_over.is_none());
    assert_eq!(acq.adopted.len(), 1);
    let r = &acq.adopted[0];
    assert!(r.from_orphan && r.record_marked && r.removed.len() == 1);
    let names = files(&lease_dir(&uc));
    assert!(names.iter().all(|n| !n.contains(".dead-") && !n.contains(".taken-")), "{names:?}");
    lease.release();
}

#[test]
fn a_claim_that_cannot_be_removed_hands_the_lease_back() {
    let (_d, uc, m) = fixture("dead-killed");
    let claim = uc.join("out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet");
    fs::remove_file(&claim).unwrap();
    fs::create_dir(&claim).unwrap();
    fs::write(claim.join("inner"), "x").unwrap();
    let lease_path = lease_dir(&uc).join(format!("{DT2_KEY}.json"));
    let dead_text = fs::read_to_string(&lease_path).unwrap();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let err = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::InUse));
    assert_eq!(
        err.refusal().unwrap().message,
        // A claim that is a folder is said to be one, not "in use".
        "Run a7ee7676 of demo/sales/ingest died, and its appended files cannot be removed yet: out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet (a folder where a claimed file should be: the engine removes only the files a run claimed, never a folder; move it out of the way by hand)"
    );
    // Handed back: the dead run's lease, same content, and the tombstone stays.
    assert_eq!(fs::read_to_string(&lease_path).unwrap(), dead_text);
    let names = files(&lease_dir(&uc));
    assert!(names.contains(&format!("{DT2_KEY}.taken-a7ee7676-3983-4c1b-8fff-47937b7a2497")), "{names:?}");
    assert!(names.iter().all(|n| !n.contains(".dead-")), "{names:?}");
    let rec =
        fs::read_to_string(uc.join(".ubunye/lineage/demo/sales/ingest/a7ee7676-3983-4c1b-8fff-47937b7a2497.json"))
            .unwrap();
    assert!(rec.contains("\"status\": \"running\""), "the record is not marked while the files stay");
    // The same state as the peer's takeover-refused-in-use fixture.
    let peer = fs::read_to_string(
        fixture_dir("takeover-refused-in-use").join(format!("uc/.ubunye/leases/demo/sales/ingest/{DT2_KEY}.json")),
    )
    .unwrap();
    assert_eq!(fs::read_to_string(&lease_path).unwrap(), peer);
}

#[test]
fn finished_batches_are_refused_and_rerun_replaces_after_commit() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    let (_, ended) = append_run(uc, sys.clone(), "2025-01-01", false, &[("part-a.parquet", "one")]).unwrap();
    assert!(matches!(ended, Ended::Committed { kept: false, .. }));
    let note = fs::read_to_string(lease_dir(uc).join("39bc42311894ddba.finished.json")).unwrap();
    assert!(note.contains("\"out/events/part-a.parquet\""), "{note}");
    assert!(note.contains("\"staged\": true"), "{note}");
    assert_eq!(files(&lease_dir(uc)), vec!["39bc42311894ddba.finished.json"]);
    // Again: refused, nothing written, the lease removed.
    let err = append_run(uc, sys.clone(), "2025-01-01", false, &[("part-b.parquet", "two")]).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Finished));
    let msg = err.refusal().unwrap().one_line();
    assert!(msg.starts_with("demo/sales/ingest already finished this batch (run "), "{msg}");
    assert!(msg.contains("and appends to events: running it again would add the batch twice. To replace the batch, run again with --rerun."), "{msg}");
    assert_eq!(files(&uc.join("out/events")), vec!["_SUCCESS", "part-a.parquet"]);
    assert_eq!(files(&lease_dir(uc)), vec!["39bc42311894ddba.finished.json"]);
    // --rerun: the old file goes only after the new one committed.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut sys2 = sys.clone();
    let (seen2, out) = (seen.clone(), uc.join("out/events"));
    sys2.hook = ubunye::sys::Hook(Some(std::sync::Arc::new(move |s: Step| {
        if s == Step::CommittedSaved {
            seen2.lock().unwrap().push(files(&out));
        }
    })));
    let (_, ended) = append_run(uc, sys2, "2025-01-01", true, &[("part-c.parquet", "three")]).unwrap();
    let Ended::Committed { commit, kept } = ended else { panic!() };
    assert!(!kept && commit.replaced_removed.len() == 1);
    assert_eq!(seen.lock().unwrap()[0], vec!["_SUCCESS", "part-a.parquet", "part-c.parquet"], "both present at commit");
    assert_eq!(files(&uc.join("out/events")), vec!["_SUCCESS", "part-c.parquet"]);
    assert_eq!(files(&lease_dir(uc)), vec!["39bc42311894ddba.finished.json"]);
}

#[test]
fn an_unnamed_batch_is_never_refused_and_leaves_no_note() {
    let d = tempfile::tempdir().unwrap();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    let spec = |_: ()| {
        LeaseSpec::new(
            d.path(),
            task(),
            ubunye::vars::cli_variables(None, None, "DEV", &[]).unwrap(),
            uuid::Uuid::new_v4().to_string(),
        )
    };
    for _ in 0..2 {
        let (lease, _) = RunLease::acquire(spec(()), sys.clone()).unwrap();
        assert!(!lease.named());
        lease.check_finished(&["events".into()], false).unwrap();
        lease.writing("events", true, true).unwrap();
        lease.end(true).unwrap();
    }
    assert_eq!(files(&lease_dir(d.path())), Vec::<String>::new());
}

#[test]
fn a_failed_run_takes_back_its_claims_or_keeps_its_lease() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    // Everything removable: the lease goes.
    let (lease, _) = RunLease::acquire(spec(uc, "2025-01-02"), sys.clone()).unwrap();
    lease.writing("events", true, true).unwrap();
    let st = ubunye::append::StagedAppend::begin(&lease, "events", &uc.join("out/events")).unwrap();
    fs::write(st.staging.join("p1"), "x").unwrap();
    st.land(&lease).unwrap();
    fs::write(uc.join("out/events/foreign"), "not ours").unwrap();
    let Ended::RolledBack { rollback, kept } = lease.end(false).unwrap() else { panic!() };
    assert!(!kept && rollback.unwrap().removed.len() == 1);
    assert_eq!(files(&uc.join("out/events")), vec!["_SUCCESS", "foreign"]);
    assert_eq!(files(&lease_dir(uc)), Vec::<String>::new());
    // A claim that cannot be removed: the lease is kept, listing it.
    let (lease, _) = RunLease::acquire(spec(uc, "2025-01-02"), sys.clone()).unwrap();
    lease.writing("events", true, true).unwrap();
    let st = ubunye::append::StagedAppend::begin(&lease, "events", &uc.join("out/events")).unwrap();
    fs::write(st.staging.join("p2"), "x").unwrap();
    st.land(&lease).unwrap();
    fs::remove_file(uc.join("out/events/p2")).unwrap();
    fs::create_dir(uc.join("out/events/p2")).unwrap();
    fs::write(uc.join("out/events/p2/inner"), "x").unwrap();
    let Ended::RolledBack { kept, .. } = lease.end(false).unwrap() else { panic!() };
    assert!(kept);
    let doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(lease_dir(uc).join(format!("{DT2_KEY}.json"))).unwrap()).unwrap();
    assert_eq!(doc["kept"], true);
    assert_eq!(doc["outputs"]["events"]["claimed"], serde_json::json!(["out/events/p2"]));
    // The same process may take its own kept lease over at once.
    fs::remove_dir_all(uc.join("out/events/p2")).unwrap();
    fs::write(uc.join("out/events/p2"), "x").unwrap();
    let (lease, acq) = RunLease::acquire(spec(uc, "2025-01-02"), sys).unwrap();
    assert_eq!(acq.took_over.unwrap().removed.len(), 1);
    lease.release();
    assert_eq!(
        files(&uc.join("out/events")),
        vec!["_SUCCESS", "foreign"],
        "the foreign file (data) stays, so does _SUCCESS"
    );
}

#[test]
fn paths_outside_the_use_case_folder_are_never_removed() {
    for how in ["dotdot", "absolute", "symlinked-folder", "staging-outside", "staging-not-named-so"] {
        let (d, uc, m) = fixture("dead-killed");
        let outside = d.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("canary"), "keep me").unwrap();
        let lease_path = lease_dir(&uc).join(format!("{DT2_KEY}.json"));
        let mut doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&lease_path).unwrap()).unwrap();
        let events = &mut doc["outputs"]["events"];
        match how {
            "dotdot" => events["claimed"].as_array_mut().unwrap().push("../outside/canary".into()),
            "absolute" => {
                events["claimed"].as_array_mut().unwrap().push(outside.join("canary").to_string_lossy().into())
            }
            "symlinked-folder" => {
                std::os::unix::fs::symlink(&outside, uc.join("out/sneaky")).unwrap();
                events["claimed"].as_array_mut().unwrap().push("out/sneaky/canary".into());
            }
            "staging-outside" => events["staging"] = "../outside".into(),
            _ => events["staging"] = "out/events".into(),
        }
        fs::write(&lease_path, serde_json::to_string(&doc).unwrap()).unwrap();
        set_mtime(&lease_path, m.captured_at());
        let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
        let err = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap_err();
        assert_eq!(err.kind(), Some(RefusalKind::Outside), "{how}: {err}");
        assert!(outside.join("canary").exists(), "{how}");
        assert!(
            uc.join("out/events/part-00000-ff869a38-8d2f-43ac-b8d6-303681ac89db-c000.snappy.parquet").exists(),
            "{how}"
        );
        assert!(lease_path.exists(), "{how}: the lease is still there");
    }
}

#[test]
fn a_run_judged_dead_that_writes_its_lease_again_is_left_alone() {
    let (_d, uc, m) = fixture("dead-killed");
    let lease_path = lease_dir(&uc).join(format!("{DT2_KEY}.json"));
    let dead_text = fs::read_to_string(&lease_path).unwrap();
    let (mut sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    sys.timing.settle = Duration::from_millis(300);
    // The "dead" run saves during the settle: it puts its lease back.
    let writer = write_back_when_renamed(
        lease_dir(&uc),
        lease_path.clone(),
        dead_text,
        Duration::from_millis(50),
        Duration::from_secs(1),
    );
    let err = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap_err();
    writer.join().unwrap();
    assert_eq!(err.kind(), Some(RefusalKind::LookedDead), "{err}");
    assert!(
        uc.join("out/events/part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet").exists(),
        "nothing taken back"
    );
    let names = files(&lease_dir(&uc));
    assert!(names.iter().all(|n| !n.contains(".taken-") && !n.contains(".dead-")), "{names:?}");
}

#[test]
fn a_run_taken_over_stops_and_removes_what_it_moved() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    let (lease, _) = RunLease::acquire(spec(uc, "2025-01-02"), sys).unwrap();
    lease.writing("events", true, true).unwrap();
    let st = ubunye::append::StagedAppend::begin(&lease, "events", &uc.join("out/events")).unwrap();
    fs::write(st.staging.join("p1"), "x").unwrap();
    // Another run took it over (its tombstone for this run appears).
    fs::write(lease_dir(uc).join(format!("{DT2_KEY}.taken-{}", lease.run_id())), "2026-01-01T00:00:00Z").unwrap();
    let err = st.land(&lease).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Lost));
    assert!(!uc.join("out/events/p1").exists(), "the file it moved in was removed again");
    assert!(!lease.still_owned());
    assert!(lease.lost_note().unwrap().contains("lost its lease on demo/sales/ingest to another run"));
}

#[test]
fn old_tombstones_expire_and_young_ones_stay() {
    let d = tempfile::tempdir().unwrap();
    let dir = lease_dir(d.path());
    fs::create_dir_all(&dir).unwrap();
    let now = std::time::SystemTime::now();
    for (name, age_days) in [("taken-old", 8), ("taken-new", 1)] {
        let p = dir.join(format!("{DT2_KEY}.{name}"));
        fs::write(&p, "2025-01-01T00:00:00Z").unwrap();
        set_mtime(&p, now - Duration::from_secs(age_days * 86_400));
    }
    let other = dir.join("0000000000000000.taken-old");
    fs::write(&other, "x").unwrap();
    set_mtime(&other, now - Duration::from_secs(8 * 86_400));
    let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
    let (lease, acq) = RunLease::acquire(spec(d.path(), "2025-01-02"), sys).unwrap();
    assert_eq!(acq.expired_tombstones.len(), 1);
    assert_eq!(
        files(&dir),
        vec!["0000000000000000.taken-old".to_string(), format!("{DT2_KEY}.json"), format!("{DT2_KEY}.taken-new")]
    );
    lease.release();
}

#[test]
fn the_heartbeat_rewrites_the_lease_and_stops_when_it_is_not_ours() {
    let d = tempfile::tempdir().unwrap();
    let (mut sys, clock, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    sys.timing.heartbeat_every = Duration::from_millis(30);
    let (lease, _) = RunLease::acquire(spec(d.path(), "2025-01-02"), sys).unwrap();
    let read = || serde_json::from_str::<serde_json::Value>(&fs::read_to_string(lease.path()).unwrap()).unwrap();
    let first = read()["heartbeat"].as_f64().unwrap();
    clock.advance(Duration::from_secs(30));
    let mut beat = first;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(10));
        beat = read()["heartbeat"].as_f64().unwrap();
        if beat != first {
            break;
        }
    }
    assert!((beat - first - 30.0).abs() < 1e-6, "{first} -> {beat}");
    // Another run's lease now: the heartbeat must not write it.
    let theirs = r#"{"run_id": "someone-else", "outputs": {}}"#;
    fs::write(lease.path(), theirs).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(fs::read_to_string(lease.path()).unwrap(), theirs);
    assert!(!lease.release(), "not ours: not removed");
    assert_eq!(fs::read_to_string(lease.path()).unwrap(), theirs);
}

#[test]
fn two_acquires_at_once_one_wins() {
    let d = tempfile::tempdir().unwrap();
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    procs.put(sys.pid, FakeProc { token: None, state: 'S', denied: false });
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (uc, sys, b) = (d.path().to_path_buf(), sys.clone(), barrier.clone());
            std::thread::spawn(move || {
                b.wait();
                RunLease::acquire(spec(&uc, "2025-01-02"), sys).map(|(l, _)| l)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
    assert_eq!(winners.len(), 1);
    for r in &results {
        if let Err(e) = r {
            assert_eq!(e.kind(), Some(RefusalKind::Held), "{e}");
        }
    }
}

#[test]
fn in_place_writes_read_as_the_peer_would_write_them() {
    // Per-file claims go into reserved whitespace; `committed` is appended at the
    // end. At every step the lease parses to the document a full save writes, and
    // the committed lease is byte for byte json.dumps of it.
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().to_path_buf();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(Step, String, u64)>::new()));
    let (mut sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    let (seen2, path) = (seen.clone(), uc.join(format!(".ubunye/leases/demo/sales/ingest/{DT2_KEY}.json")));
    sys.hook = ubunye::sys::Hook(Some(std::sync::Arc::new(move |s: Step| {
        if matches!(s, Step::Saved | Step::CommittedSaved) {
            use std::os::unix::fs::MetadataExt;
            let ino = fs::metadata(&path).map(|m| m.ino()).unwrap_or(0);
            seen2.lock().unwrap().push((s, fs::read_to_string(&path).unwrap_or_default(), ino));
        }
    })));
    let (lease, _) = RunLease::acquire(spec(&uc, "2025-01-02"), sys).unwrap();
    lease.writing("events", true, true).unwrap();
    let out = uc.join("out/events");
    fs::create_dir_all(&out).unwrap();
    for i in 0..200 {
        lease.claim("events", &out.join(format!("part-{i:05}-\u{e9}.parquet"))).unwrap();
    }
    let inodes: std::collections::BTreeSet<u64> = seen.lock().unwrap().iter().map(|(_, _, i)| *i).collect();
    // writing: 1 file; the first claim reserves room (8 KiB, then as much as the
    // lease weighs): a handful of rewrites for 200 claims, not 200.
    assert!(inodes.len() <= 6, "{} lease files written for 200 claims", inodes.len());
    let last = seen.lock().unwrap().last().unwrap().1.clone();
    let doc: serde_json::Value = serde_json::from_str(&last).unwrap();
    let claims = doc["outputs"]["events"]["claimed"].as_array().unwrap();
    assert_eq!(claims.len(), 200);
    assert_eq!(claims[199], "out/events/part-00199-\u{e9}.parquet");
    assert!(last.contains("part-00199-\\u00e9.parquet"), "written with ensure_ascii, as the peer");
    lease.end(true).unwrap();
    let committed = seen.lock().unwrap().iter().rev().find(|(s, _, _)| *s == Step::CommittedSaved).unwrap().1.clone();
    let doc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&committed).unwrap();
    assert_eq!(doc.keys().next_back().unwrap(), "committed");
    let squeezed = regex::Regex::new(r" {3,}").unwrap().replace_all(&committed, "").into_owned();
    assert_eq!(
        squeezed,
        ubunye::pyjson::dumps_map(&doc, ubunye::pyjson::Style::COMPACT),
        "json.dumps of the document, up to the reserve"
    );
}

fn ino_of(p: &std::path::Path) -> ubunye::beneath::FileId {
    use std::os::unix::fs::MetadataExt;
    let m = fs::symlink_metadata(p).unwrap();
    let dir = fs::metadata(p.parent().unwrap()).unwrap();
    ubunye::beneath::FileId { dev: m.dev(), ino: m.ino(), born_by: Some((dir.mtime(), dir.mtime_nsec() as u32)) }
}

/// A run frozen after moving its file in, and taken over meanwhile,
/// must not remove by name the file its taker wrote under the same name.
#[test]
fn a_frozen_run_never_removes_a_same_named_file_its_taker_committed() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let t0 = std::time::SystemTime::now();
    let (sys_d, _, _) = fake_sys("host-d|pid:[1]", t0);
    let (lease_d, _) = RunLease::acquire(spec(uc, "2025-01-01"), sys_d).unwrap();
    lease_d.writing("events", true, true).unwrap();
    let st = ubunye::append::StagedAppend::begin(&lease_d, "events", &uc.join("out/events")).unwrap();
    let staged = st.staging.join("events-2025-01-01.parquet");
    fs::write(&staged, "D").unwrap();
    let target = uc.join("out/events/events-2025-01-01.parquet");
    let id = ino_of(&staged);
    let claims = lease_d.claim_all("events", std::slice::from_ref(&target)).unwrap();
    fs::rename(&staged, &target).unwrap();
    // D freezes here. Sixteen minutes later by the disk's clock, T takes over.
    set_mtime(&lease_d.path(), t0);
    let (sys_t, _, _) = fake_sys("host-t|pid:[2]", t0 + Duration::from_secs(16 * 60));
    append_run(uc, sys_t, "2025-01-01", false, &[("events-2025-01-01.parquet", "T")]).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "T");
    // D resumes.
    let err = lease_d.landed_file(&claims[0], id).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Lost));
    assert_eq!(fs::read_to_string(&target).unwrap(), "T", "the taker's committed file stays");
    lease_d.end(false).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "T", "and stays after the frozen run's rollback");
}

/// A frozen save that lands after a takeover puts the dead run's lease
/// back over the taker's. The taker then finds its lease lost at the end: it
/// must take its own files back, or no later run would know of them.
#[test]
fn a_run_whose_lease_was_displaced_takes_its_own_files_back() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let t0 = std::time::SystemTime::now();
    let (sys_d, _, _) = fake_sys("host-d|pid:[1]", t0);
    let (lease_d, _) = RunLease::acquire(spec(uc, "2025-01-01"), sys_d).unwrap();
    lease_d.writing("events", true, true).unwrap();
    // D's next save is frozen between writing its temp file and the rename.
    let zombie = fs::read_to_string(lease_d.path()).unwrap();
    set_mtime(&lease_d.path(), t0);
    let (sys_t, _, _) = fake_sys("host-t|pid:[2]", t0 + Duration::from_secs(16 * 60));
    let (lease_t, acq) = RunLease::acquire(spec(uc, "2025-01-01"), sys_t.clone()).unwrap();
    assert!(acq.took_over.is_some());
    lease_t.writing("events", true, true).unwrap();
    let st = ubunye::append::StagedAppend::begin(&lease_t, "events", &uc.join("out/events")).unwrap();
    fs::write(st.staging.join("part-T.parquet"), "T").unwrap();
    st.land(&lease_t).unwrap();
    // The frozen rename lands.
    let tmp = lease_t.path().with_extension("zombie.tmp");
    fs::write(&tmp, &zombie).unwrap();
    fs::rename(&tmp, lease_t.path()).unwrap();
    let err = lease_t.end(true).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Lost));
    assert!(!uc.join("out/events/part-T.parquet").exists(), "the taker took its own file back");
    // D resumes, and stops: its takeover mark is there.
    assert_eq!(
        lease_d.claim("events", &uc.join("out/events/part-D.parquet")).unwrap_err().kind(),
        Some(RefusalKind::Lost)
    );
    lease_d.end(false).unwrap();

    // D's lease is still on disk; the next run takes it over and lands the batch once.
    let later = t0 + Duration::from_secs(40 * 60);
    set_mtime(&uc.join(".ubunye/leases/demo/sales/ingest/39bc42311894ddba.json"), t0);
    let (sys_3, _, _) = fake_sys("host-t|pid:[2]", later);
    append_run(uc, sys_3, "2025-01-01", false, &[("part-T3.parquet", "T3")]).unwrap();
    assert_eq!(files(&uc.join("out/events")), vec!["_SUCCESS", "part-T3.parquet"]);
}

/// Takeover marks expire by the disk's clock, not this host's.
#[test]
fn a_host_with_a_fast_clock_does_not_expire_a_fresh_takeover_mark() {
    #[derive(Debug)]
    struct Fast;
    impl ubunye::sys::Clock for Fast {
        fn now(&self) -> std::time::SystemTime {
            std::time::SystemTime::now() + Duration::from_secs(8 * 86_400)
        }
        fn disk_now(&self, dir: &std::path::Path) -> ubunye::sys::Now {
            ubunye::sys::SystemClock.disk_now(dir)
        }
        fn disk_now_looking(&self, dir: &std::path::Path) -> ubunye::sys::Now {
            ubunye::sys::SystemClock.disk_now_looking(dir)
        }
    }
    let d = tempfile::tempdir().unwrap();
    let dir = lease_dir(d.path());
    fs::create_dir_all(&dir).unwrap();
    let mark = dir.join(format!("{DT2_KEY}.taken-frozen-run"));
    fs::write(&mark, "2026-11-29T00:00:00Z").unwrap();
    let (mut sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    sys.clock = std::sync::Arc::new(Fast);
    let (lease, acq) = RunLease::acquire(spec(d.path(), "2025-01-02"), sys).unwrap();
    assert!(acq.expired_tombstones.is_empty());
    assert!(mark.exists());
    lease.release();
}
