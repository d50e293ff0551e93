//! The state model: every fixture gets the state FORMAT.md §13 says, and
//! synthetic trees cover every state with an injected clock and process table.

use crate::common;

use std::fs;
use std::time::Duration;

use common::*;
use ubunye::state::{Flag, ScanOptions, State, scan};

fn states(fixture: &str, host: &str, alive: bool) -> Vec<(String, String, State, Option<String>)> {
    let (_d, uc, m) = common::fixture(fixture);
    let (sys, _, procs) = fake_sys(host, m.captured_at());
    if alive {
        for l in m.json["leases"].as_array().unwrap() {
            if l["pid_alive_at_capture"] == true {
                procs.add(l["pid"].as_i64().unwrap() as i32, l["pid_started"].as_str());
            }
        }
    }
    let s = scan(&uc, &ScanOptions::default(), &sys).unwrap();
    s.batches.iter().map(|b| (b.task.clone(), b.key.clone(), b.state, b.variables_text())).collect()
}

#[test]
fn every_fixture_gets_the_state_format_md_says() {
    use State::*;
    let table: &[(&str, &[(&str, State)])] = &[
        ("finished", &[("39bc42311894ddba", Finished)]),
        ("finished-rerun", &[("39bc42311894ddba", Finished)]),
        ("resumed", &[("39bc42311894ddba", Finished), ("7d106ca76674f2a1", Finished), ("faa6514a45a85a31", Finished)]),
        ("live", &[("7d106ca76674f2a1", Live), ("39bc42311894ddba", Finished)]),
        ("dead-killed", &[("7d106ca76674f2a1", Dead), ("39bc42311894ddba", Finished)]),
        ("taken-over", &[("7d106ca76674f2a1", Live), ("39bc42311894ddba", Finished)]),
        ("taken-over-done", &[("39bc42311894ddba", Finished), ("7d106ca76674f2a1", Finished)]),
        ("takeover-refused-in-use", &[("7d106ca76674f2a1", HandedBack), ("39bc42311894ddba", Finished)]),
        ("dead-before-commit", &[("7d106ca76674f2a1", Dead), ("39bc42311894ddba", Finished)]),
        ("dead-before-commit-recovered", &[("39bc42311894ddba", Finished), ("7d106ca76674f2a1", Finished)]),
        ("rerun-pending", &[("39bc42311894ddba", Pending)]),
        ("rerun-pending-recovered", &[("39bc42311894ddba", Finished)]),
        ("rerun-pending-kept", &[("39bc42311894ddba", Pending)]),
        ("kept", &[("7d106ca76674f2a1", Kept), ("39bc42311894ddba", Finished)]),
        ("kept-recovered", &[("39bc42311894ddba", Finished), ("7d106ca76674f2a1", Finished)]),
        ("orphan", &[("7d106ca76674f2a1", Orphan), ("39bc42311894ddba", Finished)]),
        ("orphan-adopted", &[("39bc42311894ddba", Finished), ("7d106ca76674f2a1", Finished)]),
        ("dead-spark-staged", &[("540a6418b2f41334", Dead), ("39bc42311894ddba", Finished)]),
        ("dead-spark-staged-taken-over", &[("39bc42311894ddba", Finished), ("540a6418b2f41334", Finished)]),
    ];
    for (fixture, want) in table {
        let got = states(fixture, FIXTURE_HOST, true);
        let got: Vec<(&str, State)> = got.iter().map(|(_, k, s, _)| (k.as_str(), *s)).collect();
        assert_eq!(&got, want, "{fixture}");
    }
    // Variables come from the records whose variables hash to the key.
    let got = states("dead-killed", FIXTURE_HOST, true);
    assert_eq!(got[0].3.as_deref(), Some("dt=2025-01-02 mode=DEV"));
    assert_eq!(got[1].3.as_deref(), Some("dt=2025-01-01 mode=DEV"));
    // From another host, right at capture, the killed run's lease is fresh: live.
    let got = states("dead-killed", "elsewhere|pid:[1]", false);
    assert_eq!(got[0].2, State::Live);
}

fn lease_json(pid: i64, token: &str, host: &str, extra: &str) -> String {
    format!(
        r#"{{"run_id": "r-1", "task": "demo/sales/ingest", "pid": {pid}, "pid_started": "{token}", "host": "{host}", "started_at": "2026-11-29T10:00:00Z", "heartbeat": 1795946400.0, "outputs": {{}}{extra}}}"#
    )
}

/// A synthetic use case holding one lease for dt=2025-01-02, written `age` ago.
fn one_lease(content: &str, age: Duration) -> (tempfile::TempDir, std::path::PathBuf, std::time::SystemTime) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join(".ubunye/leases/demo/sales/ingest");
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join("7d106ca76674f2a1.json");
    fs::write(&p, content).unwrap();
    let now = std::time::SystemTime::now();
    set_mtime(&p, now - age);
    let uc = d.path().to_path_buf();
    (d, uc, now)
}

fn one(uc: &std::path::Path, sys: &ubunye::Sys) -> ubunye::state::Batch {
    let s = scan(uc, &ScanOptions::default(), sys).unwrap();
    assert_eq!(s.batches.len(), 1, "{:?}", s.batches);
    s.batches.into_iter().next().unwrap()
}

#[test]
fn synthetic_states_with_an_injected_clock_and_process_table() {
    let minute = Duration::from_secs(60);
    // Same host, process running, lease written 5 minutes ago: live but stalled.
    let (_d, uc, now) = one_lease(&lease_json(4242, "100", FIXTURE_HOST, ""), 5 * minute);
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, now);
    procs.add(4242, Some("100"));
    let b = one(&uc, &sys);
    assert_eq!((b.state, b.flags.contains(&Flag::Stalled)), (State::Live, true), "{}", b.note);
    assert!(b.note.starts_with("stalled"), "{}", b.note);
    // The same, written 10 s ago: live, not stalled.
    let (_d, uc, now) = one_lease(&lease_json(4242, "100", FIXTURE_HOST, ""), Duration::from_secs(10));
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, now);
    procs.add(4242, Some("100"));
    let b = one(&uc, &sys);
    assert_eq!((b.state, b.flags.contains(&Flag::Stalled)), (State::Live, false));
    // Reused pid: dead.
    procs.add(4242, Some("999"));
    assert_eq!(one(&uc, &sys).state, State::Dead);
    // Another host at 14 and 16 minutes.
    for (age, state) in [(14, State::Live), (16, State::Dead)] {
        let (_d, uc, now) = one_lease(&lease_json(1, "5", "elsewhere|pid:[1]", ""), age * minute);
        let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
        assert_eq!(one(&uc, &sys).state, state, "{age} minutes");
    }
    // An empty lease, or one that is not JSON: damaged, young or old (never
    // "live": it names no run), judged dead by its age alone as the peer
    // judges it, its note naming the file, its size and how it starts.
    for content in ["", "{garbage"] {
        for (age, dead) in [(1, false), (20, true)] {
            let (_d, uc, now) = one_lease(content, age * minute);
            let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
            let b = one(&uc, &sys);
            assert_eq!(
                (b.state, b.flags.contains(&Flag::NotJson)),
                (State::Damaged, true),
                "{content:?}, {age} minutes"
            );
            let j = b.lease.as_ref().and_then(|l| l.holder.judgement.as_ref()).map(|j| j.dead);
            assert_eq!(j, Some(dead), "{content:?}, {age} minutes");
            let size = if content.is_empty() {
                "empty (0 bytes)".to_string()
            } else {
                format!("{} bytes: {content}", content.len())
            };
            assert!(b.note.contains(&size) && b.note.contains(".json is not JSON"), "{}", b.note);
            if !dead {
                assert!(b.note.contains("not JSON"), "{}", b.note);
                let findings = ubunye::doctor::examine(&scan(&uc, &ScanOptions::default(), &sys).unwrap());
                assert!(findings.iter().any(|f| f.kind == "not-json"), "{findings:?}");
            }
        }
    }
    // A lease naming a file outside the use case, or a staging folder that is
    // not one Ubunye makes: flagged, so the list shows it before any takeover.
    let outside = r#", "outputs": {"events": {"appends": true, "exact": true, "claimed": ["../elsewhere/x.parquet"]}}"#;
    let staging = r#", "outputs": {"events": {"staging": "out/events"}}"#;
    for extra in [outside, staging] {
        let doc = lease_json(1, "5", "elsewhere|pid:[1]", "").replace(r#", "outputs": {}"#, extra);
        let (_d, uc, now) = one_lease(&doc, minute);
        let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
        let b = one(&uc, &sys);
        assert!(b.flags.contains(&Flag::PathsOutside), "{doc}: {:?}", b.flags);
        assert_eq!(b.lease.as_ref().unwrap().refused_paths.len(), 1, "{doc}");
    }
    let (_d, uc, now) = one_lease(&lease_json(1, "5", "elsewhere|pid:[1]", ""), minute);
    let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
    assert!(!one(&uc, &sys).flags.contains(&Flag::PathsOutside));
    // Kept by a process that still runs (a notebook): kept, holder alive.
    let (_d, uc, now) = one_lease(&lease_json(4242, "100", FIXTURE_HOST, r#", "kept": true"#), minute);
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, now);
    procs.add(4242, Some("100"));
    let b = one(&uc, &sys);
    assert_eq!((b.state, b.flags.contains(&Flag::HolderAlive)), (State::Kept, true));
    // The disk's clock set back a month: not dead, flagged.
    let (_d, uc, now) = one_lease(&lease_json(1, "5", "elsewhere|pid:[1]", ""), Duration::ZERO);
    let (sys, _, _) = fake_sys(FIXTURE_HOST, now - 30 * 24 * 60 * minute);
    let b = one(&uc, &sys);
    assert_eq!((b.state, b.flags.contains(&Flag::ClockBehind)), (State::Live, true));
}

#[test]
fn unreadable_files_become_rows_and_never_stop_the_scan() {
    let (_d, uc, m) = fixture("dead-killed");
    let dir = uc.join(".ubunye/leases/demo/sales/ingest");
    // A folder where the lease should be, and a damaged note of another batch.
    fs::remove_file(dir.join("7d106ca76674f2a1.json")).unwrap();
    fs::create_dir(dir.join("7d106ca76674f2a1.json")).unwrap();
    fs::write(dir.join("39bc42311894ddba.finished.json"), "{\"run_id\": ").unwrap();
    fs::write(dir.join("540a6418b2f41334.dead-0badc0de.json"), b"{\"run_id\": \"\xff\"}").unwrap();
    fs::write(uc.join(".ubunye/lineage/demo/sales/ingest/zzz.json"), b"\xff\xfe").unwrap();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let s = scan(&uc, &ScanOptions::default(), &sys).unwrap();
    let unreadable: Vec<_> = s.batches.iter().filter(|b| b.state == State::Unreadable).collect();
    assert_eq!(unreadable.len(), 4, "{:#?}", s.batches.iter().map(|b| (&b.key, b.state, &b.note)).collect::<Vec<_>>());
    for b in unreadable {
        assert!(!b.unreadable.is_empty() && b.note.contains(':'), "{}", b.note);
    }
}

#[test]
fn records_alone_give_interrupted_and_failed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join(".ubunye/lineage/demo/sales/ingest");
    fs::create_dir_all(&dir).unwrap();
    let rec = |id: &str, dt: &str, status: &str, started: &str| {
        format!(
            r#"{{"run_id": "{id}", "task_path": "demo/sales/ingest", "started_at": "{started}", "status": "{status}", "error": "boom", "variables": {{"dt": "{dt}", "mode": "DEV"}}}}"#
        )
    };
    fs::write(dir.join("a.json"), rec("a", "2025-01-01", "success", "2026-11-29T10:00:00+00:00")).unwrap();
    fs::write(dir.join("b.json"), rec("b", "2025-01-01", "interrupted", "2026-11-29T11:00:00+00:00")).unwrap();
    fs::write(dir.join("c.json"), rec("c", "2025-01-02", "error", "2026-11-29T11:00:00+00:00")).unwrap();
    fs::write(dir.join("d.json"), rec("d", "2025-01-03", "success", "2026-11-29T11:00:00+00:00")).unwrap();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    let s = scan(d.path(), &ScanOptions::default(), &sys).unwrap();
    let got: Vec<(String, State)> = s.batches.iter().map(|b| (b.variables_text().unwrap(), b.state)).collect();
    assert_eq!(
        got,
        vec![
            ("dt=2025-01-01 mode=DEV".to_string(), State::Interrupted),
            ("dt=2025-01-02 mode=DEV".to_string(), State::Failed),
            ("dt=2025-01-03 mode=DEV".to_string(), State::Finished),
        ]
    );
    assert_eq!(s.batches[0].key, "39bc42311894ddba", "keyed by re-hashing the record's variables");
}

#[test]
fn a_folder_without_ubunye_is_not_a_use_case() {
    let d = tempfile::tempdir().unwrap();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, std::time::SystemTime::now());
    let e = scan(d.path(), &ScanOptions::default(), &sys).unwrap_err();
    assert!(e.to_string().contains("has no .ubunye/ folder") && e.to_string().contains("Point -d"), "{e}");
    assert!(scan(&d.path().join("nope"), &ScanOptions::default(), &sys).is_err());
}

/// The plan `explain` shows for each dead fixture is what the real peer did
/// next: the files it removed, the record it marked, the note it wrote, the
/// staging folder it removed (the `*-recovered`, `*-taken-over`, `*-adopted`
/// fixtures are the answers).
#[test]
fn the_explain_plan_is_what_the_peer_did_next() {
    use ubunye::beneath::Beneath;
    use ubunye::documents::{LeaseDoc, parse_doc};
    use ubunye::layout::{LeasePaths, TaskPath};
    use ubunye::lease::recovery_plan::{BatchFiles, plan_recovery};
    let pairs = [
        ("dead-killed", "taken-over-done", "7d106ca76674f2a1", false),
        ("orphan", "orphan-adopted", "7d106ca76674f2a1", true),
        ("rerun-pending", "rerun-pending-recovered", "39bc42311894ddba", false),
        ("kept", "kept-recovered", "7d106ca76674f2a1", false),
        ("dead-before-commit", "dead-before-commit-recovered", "7d106ca76674f2a1", false),
        ("dead-spark-staged", "dead-spark-staged-taken-over", "540a6418b2f41334", false),
    ];
    let task = TaskPath::parse("demo/sales/ingest").unwrap();
    for (dead, after, key, orphan) in pairs {
        let before_uc = fixture_dir(dead).join("uc");
        let after_uc = fixture_dir(after).join("uc");
        let beneath = Beneath::new(&before_uc).unwrap();
        let paths = LeasePaths::new(beneath.root(), &task, key);
        let lineage = beneath.root().join(".ubunye/lineage");
        let files =
            BatchFiles { beneath: &beneath, paths: &paths, lineage_dir: &lineage, task: &task, busy: Duration::ZERO };
        let lease_file = if orphan {
            fs::read_dir(&paths.dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().contains(".dead-"))
                .unwrap()
        } else {
            paths.lease()
        };
        let doc = LeaseDoc::from_parsed(parse_doc(&fs::read(&lease_file).unwrap()).unwrap());
        let plan = plan_recovery(&files, &doc, Some(true)).unwrap();
        // Files: what the plan removes is what disappeared.
        let planned: Vec<String> = plan.present().map(|f| f.claim.clone()).collect();
        let gone: Vec<String> = files_under(&before_uc, "out")
            .into_iter()
            .filter(|f| !f.contains("_ubunye-") && !f.ends_with("_SUCCESS") && !after_uc.join(f).exists())
            .collect();
        assert_eq!(planned, gone, "{dead}: removed files");
        // Staging folders: removed.
        for st in &plan.staging {
            assert!(before_uc.join(st).exists() && !after_uc.join(st).exists(), "{dead}: staging {st}");
        }
        // The record: marked interrupted iff the plan says so.
        let rec = |uc: &std::path::Path| {
            fs::read_to_string(uc.join(format!(".ubunye/lineage/demo/sales/ingest/{}.json", plan.run_id)))
                .ok()
                .map(|t| serde_json::from_str::<serde_json::Value>(&t).unwrap()["status"].as_str().unwrap().to_string())
        };
        let marked = rec(&before_uc).as_deref() == Some("running") && rec(&after_uc).as_deref() == Some("interrupted");
        assert_eq!(plan.mark_record.is_some(), marked, "{dead}: record");
        // The note: written for the dead run iff the plan says so.
        let note: Option<serde_json::Value> =
            fs::read_to_string(after_uc.join(format!(".ubunye/leases/demo/sales/ingest/{key}.finished.json")))
                .ok()
                .map(|t| serde_json::from_str(&t).unwrap());
        let noted_for_it = note.is_some_and(|n| n["run_id"] == plan.run_id.as_str())
            && !before_uc.join(format!(".ubunye/leases/demo/sales/ingest/{key}.finished.json")).exists();
        assert_eq!(plan.write_note.is_some(), noted_for_it, "{dead}: note");
        // The done mark: removed.
        if let Some(d) = &plan.remove_done {
            assert!(
                !after_uc.join(".ubunye/leases/demo/sales/ingest").join(d.file_name().unwrap()).exists(),
                "{dead}: done mark"
            );
        }
    }
}

fn files_under(uc: &std::path::Path, sub: &str) -> Vec<String> {
    files(&uc.join(sub)).into_iter().map(|f| format!("{sub}/{f}")).collect()
}

#[test]
fn a_scan_task_by_task_gives_the_same_batches_as_a_whole_scan() {
    for fixture in ["dead-killed", "orphan", "rerun-pending", "kept", "takeover-refused-in-use", "resumed", "finished"]
    {
        let (_d, uc, m) = common::fixture(fixture);
        let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
        let whole = scan(&uc, &ScanOptions::default(), &sys).unwrap();
        let mut parts = Vec::new();
        let mut calls = 0;
        ubunye::state::scan_tasks(&uc, &ScanOptions::default(), &sys, |task, b| {
            calls += 1;
            assert!(b.iter().all(|x| x.task == task), "{task}");
            parts.extend(b);
        })
        .unwrap();
        let id = |b: &ubunye::state::Batch| (b.task.clone(), b.key.clone(), b.state, b.note.clone(), b.records.len());
        let mut a: Vec<_> = whole.batches.iter().map(id).collect();
        let mut b: Vec<_> = parts.iter().map(id).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{fixture}");
        assert!(calls >= 1, "{fixture}: one call per task");
    }
}

/// What a scan meets in a lease folder that is not a plain task
/// folder of lease files is followed (symlinks, as the engines follow them) or
/// reported in one line (names that are not UTF-8, files at the wrong depth,
/// FIFOs), never passed over in silence, never a hang.
#[test]
fn odd_lease_folders_are_followed_or_reported() {
    use std::os::unix::ffi::OsStrExt;
    let sys_for = |m: &Manifest| fake_sys(FIXTURE_HOST, m.captured_at()).0;
    // A symlinked package folder: the same batches as without the link.
    let (_d, uc, m) = fixture("dead-killed");
    let want: Vec<_> = scan(&uc, &ScanOptions::default(), &sys_for(&m))
        .unwrap()
        .batches
        .iter()
        .map(|b| (b.key.clone(), b.state))
        .collect();
    let leases = uc.join(".ubunye/leases/demo");
    fs::rename(leases.join("sales"), uc.join("sales-elsewhere")).unwrap();
    std::os::unix::fs::symlink(uc.join("sales-elsewhere"), leases.join("sales")).unwrap();
    let s = scan(&uc, &ScanOptions::default(), &sys_for(&m)).unwrap();
    let got: Vec<_> = s.batches.iter().map(|b| (b.key.clone(), b.state)).collect();
    assert_eq!(got, want, "a symlinked folder is followed");
    assert!(s.problems.is_empty(), "{:?}", s.problems);

    // Two task folders whose names are not UTF-8, a lease at the wrong depth,
    // a folder inside a task folder, a .json not named as Ubunye names files.
    let (_d, uc, m) = fixture("dead-killed");
    let sales = uc.join(".ubunye/leases/demo/sales");
    let lease = fs::read(sales.join("ingest/7d106ca76674f2a1.json")).unwrap();
    for bad in [b"x\xff".as_slice(), b"x\xfe"] {
        let dir = sales.join(std::ffi::OsStr::from_bytes(bad));
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("7d106ca76674f2a1.json"), &lease).unwrap();
    }
    fs::create_dir_all(uc.join(".ubunye/leases/x/y")).unwrap();
    fs::write(uc.join(".ubunye/leases/x/y/7d106ca76674f2a1.json"), &lease).unwrap();
    fs::create_dir(sales.join("ingest/nested")).unwrap();
    fs::write(sales.join("ingest/notes.json"), "{}").unwrap();
    let s = scan(&uc, &ScanOptions::default(), &sys_for(&m)).unwrap();
    let why: Vec<String> = s.problems.iter().map(|p| format!("{} {}", p.misplaced, p.why)).collect();
    assert_eq!(s.problems.len(), 5, "{why:#?}");
    assert!(s.problems.iter().all(|p| p.misplaced), "{why:#?}");
    assert!(
        why.iter().any(|w| w.contains("(x\\xff) is not UTF-8")) && why.iter().any(|w| w.contains("(x\\xfe)")),
        "{why:#?}"
    );
    assert!(why.iter().any(|w| w.contains(".json file 3 levels down")), "{why:#?}");
    assert!(why.iter().any(|w| w.contains("a folder inside a task's lease folder")), "{why:#?}");
    assert!(why.iter().any(|w| w.contains("not named as Ubunye names its files")), "{why:#?}");
    // Doctor reports each; JSON of them is whole even for names that are not UTF-8.
    let findings = ubunye::doctor::examine(&s);
    assert_eq!(findings.iter().filter(|f| f.kind == "misplaced").count(), 5, "{findings:#?}");
    let json = serde_json::to_string(&s.problems).unwrap();
    assert!(json.contains("x\u{fffd}"), "{json}");

    // A FIFO where a lease, a note and a record should be: unreadable rows,
    // and the scan returns (a plain read would wait for a writer for ever).
    let (_d, uc, m) = fixture("dead-killed");
    let ingest = uc.join(".ubunye/leases/demo/sales/ingest");
    let fifo = |p: &std::path::Path| {
        let _ = fs::remove_file(p);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
    };
    fifo(&ingest.join("7d106ca76674f2a1.json"));
    fifo(&ingest.join("39bc42311894ddba.finished.json"));
    fifo(&uc.join(".ubunye/lineage/demo/sales/ingest/zzz.json"));
    let sys = sys_for(&m);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(scan(&uc, &ScanOptions::default(), &sys).map(|s| s.batches));
    });
    let batches =
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the scan must not block on a FIFO").unwrap();
    let unreadable: Vec<_> = batches.iter().filter(|b| b.state == State::Unreadable).map(|b| b.note.clone()).collect();
    assert_eq!(unreadable.len(), 3, "{unreadable:#?}");
    assert!(unreadable.iter().all(|n| n.contains("FIFO")), "{unreadable:#?}");
}

/// `find` (explain's lookup): a whole key is found by its lease or finished
/// note without listing the folder, an orphan alone by the listing, a prefix
/// by the listing; two tasks with a batch of that prefix are ambiguous; an
/// unknown key is none.
#[test]
fn find_by_whole_key_prefix_and_orphan_alone() {
    use ubunye::state::{Found, find};
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let a = uc.join(".ubunye/leases/demo/sales/a");
    let b = uc.join(".ubunye/leases/demo/sales/b");
    fs::create_dir_all(&a).unwrap();
    fs::create_dir_all(&b).unwrap();
    fs::write(a.join("aaaaaaaaaaaaaaaa.json"), "{}").unwrap();
    fs::write(a.join("abababababababab.finished.json"), "{}").unwrap();
    fs::write(b.join("acacacacacacacac.dead-0123abcd.json"), "{}").unwrap();
    let one = |q: &str| match find(uc, q, None).unwrap() {
        Found::One(id) => format!("{}:{}", id.task, id.key),
        other => format!("{other:?}"),
    };
    assert_eq!(one("aaaaaaaaaaaaaaaa"), "demo/sales/a:aaaaaaaaaaaaaaaa");
    assert_eq!(one("abababababababab"), "demo/sales/a:abababababababab");
    assert_eq!(one("acacacacacacacac"), "demo/sales/b:acacacacacacacac");
    assert_eq!(one("abab"), "demo/sales/a:abababababababab");
    assert!(matches!(find(uc, "a", None).unwrap(), Found::Ambiguous(v) if v.len() == 3));
    assert!(matches!(find(uc, "ffffffffffffffff", None).unwrap(), Found::None(_)));
    // The same whole key in two tasks (not made by any engine: the key hashes
    // the task) is ambiguous, never the first one found.
    fs::write(b.join("aaaaaaaaaaaaaaaa.finished.json"), "{}").unwrap();
    assert!(matches!(find(uc, "aaaaaaaaaaaaaaaa", None).unwrap(), Found::Ambiguous(v) if v.len() == 2));
    assert_eq!(
        match find(uc, "aaaaaaaaaaaaaaaa", Some("demo/sales/b")).unwrap() {
            Found::One(id) => id.task,
            other => format!("{other:?}"),
        },
        "demo/sales/b"
    );
}
