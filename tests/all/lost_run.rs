//! A run that lost its lease must never remove or rename anything it cannot
//! prove is its own. A run frozen just before its overwrite
//! swap (or before it moved its claimed appends in) is taken over by a run on
//! another host, which removes the frozen run's staging folder, publishes its
//! own output and commits. The frozen run then wakes: its swap (or move) fails,
//! and its rollback must leave the taker's committed output alone, even where
//! the taker's new folder got the inode number the frozen run recorded (ext4
//! hands a freed inode number to the next folder made beside it).

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::*;
use ubunye::exec::outputs;
use ubunye::layout::TaskPath;
use ubunye::{LeaseSpec, RunLease};

fn summary_spec(uc: &Path) -> LeaseSpec {
    LeaseSpec::new(
        uc,
        TaskPath::parse("demo/sales/summary").unwrap(),
        vars("2025-01-01"),
        uuid::Uuid::new_v4().to_string(),
    )
}

/// Begin an overwrite of `out` as `ubunye exec` does, up to (not including)
/// the swap: noted, staging folder named and made, `t.csv` written in it, its
/// identity saved. Returns the staging folder.
fn stage_overwrite(lease: &RunLease, out: &Path, content: &str, folder: Option<PathBuf>) -> PathBuf {
    lease.writing("s", false, true).unwrap();
    let staging = folder.unwrap_or_else(|| outputs::overwrite_staging(out));
    lease.staging("s", &staging).unwrap();
    if !staging.exists() {
        fs::create_dir(&staging).unwrap();
    }
    fs::write(staging.join("t.csv"), content).unwrap();
    let id = outputs::check_publishable(&staging, out).unwrap();
    lease.note_swaps(&[("s".to_string(), id)]).unwrap();
    staging
}

/// A staging folder name beside `out` for the taker, made now: the first of a
/// few tries whose inode number is `ino` (the number the frozen run recorded),
/// as ext4 tends to hand out; else the last one made.
fn taker_folder(out: &Path, ino: u64) -> PathBuf {
    let mut made = Vec::new();
    for _ in 0..20 {
        let p = outputs::overwrite_staging(out);
        fs::create_dir(&p).unwrap();
        let reused = fs::metadata(&p).unwrap().ino() == ino;
        made.push(p);
        if reused {
            break;
        }
    }
    let chosen = made.pop().unwrap();
    for p in made {
        fs::remove_dir(p).unwrap();
    }
    chosen
}

/// A use case whose output `out/summary` holds `t.csv` = OLD, and run A (on
/// host-a, at `t0`) holding the summary batch, its new folder staged with
/// `t.csv` = `content` and its identity saved.
struct Overwrite {
    _d: tempfile::TempDir,
    uc: PathBuf,
    out: PathBuf,
    t0: SystemTime,
    lease_a: RunLease,
    staging_a: PathBuf,
}

fn overwrite_begun(content: &str) -> Overwrite {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().to_path_buf();
    let out = uc.join("out/summary");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("t.csv"), "OLD").unwrap();
    let t0 = SystemTime::now();
    let (sys_a, _, _) = fake_sys("host-a|pid:[1]", t0);
    let (lease_a, _) = RunLease::acquire(summary_spec(&uc), sys_a).unwrap();
    let staging_a = stage_overwrite(&lease_a, &out, content, None);
    Overwrite { _d: d, uc, out, t0, lease_a, staging_a }
}

#[test]
fn a_lost_run_never_removes_the_overwrite_its_taker_committed() {
    let Overwrite { _d, uc, out, t0, lease_a, staging_a } = overwrite_begun("FROM-A");
    let uc = uc.as_path();
    let recorded = fs::metadata(&staging_a).unwrap().ino();
    // A freezes just before its exchange. Sixteen minutes later by the disk's
    // clock, B (another host) takes it over, publishes its own output, commits.
    set_mtime(&lease_a.path(), t0);
    let (sys_b, _, _) = fake_sys("host-b|pid:[2]", t0 + Duration::from_secs(16 * 60));
    let (lease_b, acq) = RunLease::acquire(summary_spec(uc), sys_b).unwrap();
    assert!(acq.took_over.is_some());
    assert!(!staging_a.exists(), "the taker removed the frozen run's staging folder");
    let staging_b = stage_overwrite(&lease_b, &out, "FROM-B", Some(taker_folder(&out, recorded)));
    outputs::swap_in(&staging_b, &out, true, |_| Ok(()), || {}).unwrap();
    lease_b.swap_made("s");
    assert!(matches!(lease_b.end(true).unwrap(), ubunye::lease::Ended::Committed { .. }));
    assert_eq!(fs::read_to_string(out.join("t.csv")).unwrap(), "FROM-B");
    let reused = fs::metadata(&out).unwrap().ino() == recorded;
    // A wakes: its exchange fails (its staging folder is gone); it rolls back.
    assert!(outputs::swap_in(&staging_a, &out, true, |_| Ok(()), || {}).is_err());
    let _ = lease_a.end(false);
    assert_eq!(
        fs::read_to_string(out.join("t.csv")).ok().as_deref(),
        Some("FROM-B"),
        "the taker's committed output stays (its folder had the frozen run's inode number: {reused})"
    );
    let beside: Vec<String> =
        fs::read_dir(uc.join("out")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(beside, ["summary"]);
}

/// The same for appends: a file the frozen run claimed but never moved in is
/// not its own, and the taker's file of that name stays.
#[test]
fn a_lost_run_never_removes_an_append_its_taker_committed() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let t0 = SystemTime::now();
    let (sys_a, _, _) = fake_sys("host-a|pid:[1]", t0);
    let (lease_a, _) =
        RunLease::acquire(LeaseSpec::new(uc, task(), vars("2025-01-01"), uuid::Uuid::new_v4().to_string()), sys_a)
            .unwrap();
    lease_a.writing("events", true, true).unwrap();
    let st = ubunye::append::StagedAppend::begin(&lease_a, "events", &uc.join("out/events")).unwrap();
    fs::write(st.staging.join("part-0.parquet"), "A").unwrap();
    let mut landing = st.prepare(&lease_a).unwrap();
    landing.claim(&lease_a).unwrap();
    // A freezes before its first move; B takes over and appends the same name.
    set_mtime(&lease_a.path(), t0);
    let (sys_b, _, _) = fake_sys("host-b|pid:[2]", t0 + Duration::from_secs(16 * 60));
    append_run(uc, sys_b, "2025-01-01", false, &[("part-0.parquet", "B")]).unwrap();
    let target = uc.join("out/events/part-0.parquet");
    assert_eq!(fs::read_to_string(&target).unwrap(), "B");
    // A wakes: its move fails (its staging folder is gone); it rolls back.
    assert!(landing.move_in(&lease_a).is_err());
    let _ = lease_a.end(false);
    assert_eq!(fs::read_to_string(&target).ok().as_deref(), Some("B"), "the taker's committed file stays");
}

/// A run that made no swap (its exchange failed) puts nothing back, whatever
/// is at the output: here even its own new folder, published there by hand.
#[test]
fn a_run_whose_swap_failed_moves_nothing() {
    let Overwrite { _d, uc, out, lease_a: lease, staging_a: staging, .. } = overwrite_begun("NEW");
    fs::rename(&out, uc.join("out/by-hand")).unwrap();
    fs::rename(&staging, &out).unwrap();
    assert!(outputs::swap_in(&staging, &out, true, |_| Ok(()), || {}).is_err());
    let _ = lease.end(false);
    assert_eq!(fs::read_to_string(out.join("t.csv")).ok().as_deref(), Some("NEW"));
    assert_eq!(fs::read_to_string(uc.join("out/by-hand/t.csv")).unwrap(), "OLD");
}

/// A takeover that cannot recognise the dead run's new folder (its device
/// number differs, as a network file system's does from another client, and
/// there is no birth time to go by) cannot tell whether the swap was made: the
/// folder at the staging name may be the old output, exchanged there. It is
/// never removed; the takeover refuses, naming it.
#[test]
fn a_takeover_that_cannot_recognise_the_new_folder_never_removes_the_old_output() {
    let Overwrite { _d, uc, out, t0, lease_a, staging_a: staging } = overwrite_begun("NEW");
    let uc = uc.as_path();
    outputs::swap_in(&staging, &out, true, |_| Ok(()), || {}).unwrap();
    assert_eq!(fs::read_to_string(staging.join("t.csv")).unwrap(), "OLD", "exchanged");
    // A dies here. Its lease as another client sees it: another device number, no birth time.
    let path = lease_a.path();
    std::mem::forget(lease_a);
    let mut doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let swap = &mut doc["outputs"]["s"]["swap"];
    swap["dev"] = serde_json::json!(swap["dev"].as_u64().unwrap() + 1);
    swap.as_object_mut().unwrap().remove("born");
    fs::write(&path, doc.to_string()).unwrap();
    set_mtime(&path, t0);
    let (sys_b, _, _) = fake_sys("host-b|pid:[2]", t0 + Duration::from_secs(16 * 60));
    let got = RunLease::acquire(summary_spec(uc), sys_b);
    assert_eq!(fs::read_to_string(staging.join("t.csv")).unwrap(), "OLD", "the old output is never removed");
    assert_eq!(fs::read_to_string(out.join("t.csv")).unwrap(), "NEW");
    match got {
        Err(e) => assert!(e.to_string().contains("not the run's new folder"), "{e}"),
        Ok((_, acq)) => panic!("the takeover went on: {acq:?}"),
    }
}
