//! The dashboard's watcher: the folders it watches (down to the tasks',
//! found without a `stat` of any file), and folders made while it runs,
//! watched as soon as their event is handed to it (as the loop hands it).

use crate::common;
use common::dash::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use ubunye_tui::top::event::Event;
use ubunye_tui::top::watch::{Requested, Watch, folders};

/// Hand each change to the watcher, as the loop does, until one names
/// `want` (5 s at most).
fn until_named(watch: &mut Watch, rx: &Receiver<Event>, want: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::FsChange(paths)) => {
                watch.noticed(&paths).unwrap();
                if paths.iter().any(|p| p == want) {
                    return true;
                }
            }
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

fn start(root: &Path) -> (Watch, Receiver<Event>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let watch = Watch::start(Requested::Notify, Duration::from_secs(2), root, &ubunye::layout::lineage_root(root), tx);
    assert_eq!(watch.mode, "notify");
    (watch, rx)
}

#[test]
fn the_folders_watched_stop_at_the_tasks_and_follow_a_symlinked_task_as_the_scan_does() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let leases = root.join(".ubunye/leases");
    fs::create_dir_all(leases.join("demo/sales/ingest/below")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), leases.join("demo/sales/alias")).unwrap();
    std::os::unix::fs::symlink(leases.join("demo/sales/ingest/7d106ca76674f2a1.json"), leases.join("demo/sales/file"))
        .unwrap();
    let got: Vec<PathBuf> = folders(&leases, 0).into_iter().map(|(p, _)| p).collect();
    for want in ["", "demo", "demo/sales", "demo/sales/ingest", "demo/sales/alias"] {
        let want = if want.is_empty() { leases.clone() } else { leases.join(want) };
        assert!(got.contains(&want), "{} not watched: {got:?}", want.display());
    }
    assert!(!got.contains(&leases.join("demo/sales/ingest/below")), "below a task's folder: {got:?}");
    assert!(!got.contains(&leases.join("demo/sales/file")), "a symlink to a file: {got:?}");
    assert!(folders(&leases.join("demo/sales/ingest/7d106ca76674f2a1.json"), 3).is_empty());
}

#[test]
fn a_task_made_while_watching_is_watched_and_so_is_one_made_anew() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let (mut watch, rx) = start(&root);
    let task = root.join(".ubunye/leases/demo/sales/fresh");
    fs::create_dir(&task).unwrap();
    assert!(until_named(&mut watch, &rx, &task), "no event for the new task's folder");
    let lease = task.join("0123456789abcdef.json");
    fs::write(&lease, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &lease), "no event for a lease in a task made while watching");
    // Removed and made again: a new folder at the same path.
    fs::remove_dir_all(&task).unwrap();
    assert!(until_named(&mut watch, &rx, &task), "no event for the task's folder removed");
    fs::create_dir(&task).unwrap();
    assert!(until_named(&mut watch, &rx, &task), "no event for the task's folder made anew");
    let lease = task.join("fedcba9876543210.json");
    fs::write(&lease, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &lease), "no event for a lease in a task made anew");
}

#[test]
fn a_package_made_with_its_task_at_once_has_the_task_watched() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let (mut watch, rx) = start(&root);
    // As `mkdir -p`: the task's folder is made before its package's event
    // can arrive, so only a walk of the package finds it.
    let package = root.join(".ubunye/lineage/demo/billing");
    fs::create_dir_all(package.join("invoice")).unwrap();
    assert!(until_named(&mut watch, &rx, &package), "no event for the new package");
    let record = package.join("invoice/run-1.json");
    fs::write(&record, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &record), "no event for a record in a task made with its package");
}

/// A task folder named twice (through a symlink, which the scan follows as
/// its own task) is one watch in the kernel: an event is named under both,
/// and forgetting the symlink when it goes leaves the folder watched.
#[test]
fn a_folder_named_through_a_symlink_is_watched_under_both_names() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let sales = root.join(".ubunye/leases/demo/sales");
    let alias = sales.join("alias");
    std::os::unix::fs::symlink(sales.join("ingest"), &alias).unwrap();
    let (mut watch, rx) = start(&root);
    let lease = sales.join("ingest/0123456789abcdef.json");
    fs::write(&lease, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &alias.join("0123456789abcdef.json")), "not named through the symlink");
    fs::remove_file(&alias).unwrap();
    assert!(until_named(&mut watch, &rx, &alias), "no event for the symlink removed");
    let lease = sales.join("ingest/fedcba9876543210.json");
    fs::write(&lease, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &lease), "the folder is no longer watched once its symlink went");
}

/// The lineage folder made after the dashboard started (a use case whose
/// first run has not ended yet) is watched from its own event.
#[test]
fn a_lineage_folder_made_while_watching_is_watched_to_its_tasks() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let lineage = ubunye::layout::lineage_root(&root);
    fs::remove_dir_all(&lineage).unwrap();
    let (mut watch, rx) = start(&root);
    fs::create_dir_all(lineage.join("demo/sales/ingest")).unwrap();
    assert!(until_named(&mut watch, &rx, &lineage), "no event for the lineage folder made");
    let record = lineage.join("demo/sales/ingest/run-1.json");
    fs::write(&record, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &record), "no event for a record in a lineage folder made while watching");
}

/// Only writes are watched for: another thread reading every file of the
/// watched folders, over and over (two million opens and closes at a
/// million batches, for the dashboard's own read), wakes the watcher for
/// nothing; one write after it is one burst.
#[test]
fn reading_every_file_many_times_is_no_burst_and_a_write_is_one() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let (_watch, rx) = start(&root);
    let ubunye = root.join(".ubunye");
    let files: Vec<PathBuf> = walk(&ubunye);
    assert!(files.len() >= 3, "the fixture's files: {files:?}");
    let reader = std::thread::spawn(move || {
        for _ in 0..300 {
            for f in &files {
                fs::read(f).unwrap();
            }
            for dir in folders(&ubunye.join("leases"), 0).into_iter().map(|(p, _)| p) {
                fs::read_dir(dir).unwrap().for_each(drop);
            }
        }
    });
    reader.join().unwrap();
    let bursts = |within: Duration| {
        let until = Instant::now() + within;
        let mut n = 0;
        while let Ok(e) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            if matches!(e, Event::FsChange(_)) {
                n += 1;
            }
        }
        n
    };
    assert_eq!(bursts(Duration::from_millis(500)), 0, "reads were sent as changes");
    fs::write(root.join(".ubunye/leases/demo/sales/ingest/0123456789abcdef.json"), "{}").unwrap();
    assert_eq!(bursts(Duration::from_secs(1)), 1, "one write, one burst");
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// A task's folder removed and made again over and over while the changes
/// are handed to the watcher and the levels are walked again (as after
/// every read: the walk may watch a new folder before the watcher has read
/// that the old one went): once it stops, the folder there is watched.
#[test]
fn a_task_removed_and_made_again_over_and_over_is_watched_at_the_end() {
    let (_d, uc, _) = fixture("dead-killed");
    let root = fs::canonicalize(&uc).unwrap();
    let (mut watch, rx) = start(&root);
    let task = root.join(".ubunye/leases/demo/sales/churn");
    let churn = {
        let task = task.clone();
        std::thread::spawn(move || {
            for _ in 0..400 {
                let _ = fs::remove_dir_all(&task);
                fs::create_dir(&task).unwrap();
            }
        })
    };
    while !churn.is_finished() {
        if let Ok(Event::FsChange(paths)) = rx.recv_timeout(Duration::from_millis(1)) {
            watch.noticed(&paths).unwrap();
        }
        watch.ensure().unwrap();
    }
    churn.join().unwrap();
    // The last changes handed over, then one lease in the folder left.
    while let Ok(e) = rx.recv_timeout(Duration::from_millis(300)) {
        if let Event::FsChange(paths) = e {
            watch.noticed(&paths).unwrap();
        }
    }
    let lease = task.join("0123456789abcdef.json");
    fs::write(&lease, "{}").unwrap();
    assert!(until_named(&mut watch, &rx, &lease), "no event for a lease in the folder made last");
}
