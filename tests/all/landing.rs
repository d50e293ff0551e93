//! Landing an append through its staging folder, at the engine level.

use crate::common;

use std::fs;
use std::time::{Duration, SystemTime};

use common::{FIXTURE_HOST, fake_sys, files, set_mtime, task, vars};
use ubunye::append::StagedAppend;
use ubunye::lease::Ended;
use ubunye::{LeaseSpec, RefusalKind, RunLease};

/// The time by which each landed file existed is not the staging folder's
/// mtime, which a file written into a subfolder (`dt=…/`, as partitioned
/// writers do) does not change: such a file would look born after it, taking
/// it back would judge it not the run's and leave it (its claim dropped),
/// and the batch would land twice.
#[test]
fn a_partitioned_file_is_taken_back_when_the_run_fails() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, SystemTime::now());
    let (lease, _) = RunLease::acquire(LeaseSpec::new(uc, task(), vars("2025-01-01"), "run-a"), sys).unwrap();
    lease.writing("events", true, true).unwrap();
    let st = StagedAppend::begin(&lease, "events", &uc.join("out/events")).unwrap();
    fs::create_dir(st.staging.join("dt=2025-01-01")).unwrap();
    fs::write(st.staging.join("dt=2025-01-01/part-a.csv"), "row\n").unwrap();
    fs::write(st.staging.join("part-top.csv"), "row\n").unwrap();
    // The staging folder last changed well before the file in its subfolder
    // was born (a writer makes `dt=…/` first and fills it later).
    set_mtime(&st.staging, SystemTime::now() - Duration::from_secs(3600));
    st.land(&lease).unwrap();
    assert!(uc.join("out/events/dt=2025-01-01/part-a.csv").exists());
    let Ended::RolledBack { rollback, kept } = lease.end(false).unwrap() else { panic!("rolled back") };
    assert!(!kept, "{rollback:?}");
    assert_eq!(rollback.unwrap().removed.len(), 2);
    assert_eq!(files(&uc.join("out/events")), Vec::<String>::new(), "both files taken back, _SUCCESS with them");
}

/// A staging folder replaced by a symlink, at the engine level: never listed
/// through, and nothing is claimed from it.
#[test]
fn a_staging_folder_replaced_by_a_symlink_lands_nothing() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(&uc).unwrap();
    fs::create_dir_all(d.path().join("elsewhere")).unwrap();
    fs::write(d.path().join("elsewhere/keep.csv"), "precious").unwrap();
    let (sys, _, _) = fake_sys(FIXTURE_HOST, SystemTime::now());
    let (lease, _) = RunLease::acquire(LeaseSpec::new(&uc, task(), vars("2025-01-01"), "run-a"), sys).unwrap();
    lease.writing("events", true, true).unwrap();
    let st = StagedAppend::begin(&lease, "events", &uc.join("out/events")).unwrap();
    fs::remove_dir(&st.staging).unwrap();
    std::os::unix::fs::symlink(d.path().join("elsewhere"), &st.staging).unwrap();
    let err = st.land(&lease).unwrap_err();
    assert_eq!(err.kind(), Some(RefusalKind::Outside), "{err}");
    let claimed = lease.doc().0["outputs"]["events"].get("claimed").cloned();
    assert!(claimed.as_ref().is_none_or(|c| c.as_array().is_some_and(Vec::is_empty)), "nothing claimed: {claimed:?}");
    lease.end(false).unwrap();
    assert_eq!(fs::read_to_string(d.path().join("elsewhere/keep.csv")).unwrap(), "precious");
    assert_eq!(files(&uc.join("out/events")), Vec::<String>::new(), "the link went, never its target");
}
