//! The poll's listing: what it names, what it stats, and when.

use super::*;

fn uc() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let leases = d.path().join(".ubunye/leases");
    let lineage = d.path().join(".ubunye/lineage");
    for t in ["demo/p/a", "demo/p/b"] {
        std::fs::create_dir_all(leases.join(t)).unwrap();
        std::fs::create_dir_all(lineage.join(t)).unwrap();
    }
    (d, leases, lineage)
}

const KEY: &str = "0123456789abcdef";

/// Wait out the file system's timestamp tick, so that a change made now
/// cannot carry the stamp of the one before.
fn tick() {
    std::thread::sleep(Duration::from_millis(20));
}

fn listing(leases: &Path, lineage: &Path) -> Listing {
    Listing::with_window(leases, lineage, Duration::ZERO)
}

#[test]
fn a_poll_sees_files_made_replaced_removed_and_leases_written_in_place() {
    let (_d, leases, lineage) = uc();
    let (a, b) = (leases.join("demo/p/a"), leases.join("demo/p/b"));
    let lease = a.join(format!("{KEY}.json"));
    let note = b.join(format!("{KEY}.finished.json"));
    std::fs::write(&lease, "{}").unwrap();
    std::fs::write(&note, "{}").unwrap();
    let mut l = listing(&leases, &lineage);
    assert_eq!(l.poll(), Polled::default(), "nothing changed");
    tick();
    // A lease written in place, the same size: only its times tell.
    std::fs::write(&lease, "[]").unwrap();
    assert_eq!(l.poll().changed, vec![lease.clone()]);
    tick();
    // A note replaced by a rename: its folder changed (its task is read again).
    let tmp = note.with_extension("tmp");
    std::fs::write(&tmp, "{\"a\": 1}").unwrap();
    std::fs::rename(&tmp, &note).unwrap();
    assert_eq!(l.poll().changed, vec![b.clone()]);
    tick();
    // A record that appears, then is written in place when its run ends.
    let rec = lineage.join("demo/p/a/run-1.json");
    std::fs::write(&rec, "{\"status\": \"running\"}").unwrap();
    assert_eq!(l.poll().changed, vec![lineage.join("demo/p/a"), rec.clone()]);
    tick();
    std::fs::write(&rec, "{\"status\": \"success\"}").unwrap();
    assert_eq!(l.poll().changed, vec![rec.clone()], "a new record is stat'ed at each poll");
    tick();
    // A lease removed: it and its folder.
    std::fs::remove_file(&lease).unwrap();
    assert_eq!(l.poll().changed, vec![a.clone(), lease.clone()]);
    tick();
    // A lease replaced by a rename (a new inode, its folder changed).
    std::fs::write(&lease, "{}").unwrap();
    assert_eq!(l.poll().changed, vec![a.clone(), lease.clone()], "a lease that appears");
    tick();
    let tmp = a.join(format!("{KEY}.0000abcd.tmp"));
    std::fs::write(&tmp, "{}").unwrap();
    std::fs::rename(&tmp, &lease).unwrap();
    assert_eq!(l.poll().changed, vec![a.clone(), lease.clone()]);
    tick();
    // A new task's folder, with a lease in it.
    std::fs::create_dir_all(leases.join("demo/q/c")).unwrap();
    let newer = leases.join("demo/q/c").join(format!("{KEY}.json"));
    std::fs::write(&newer, "{}").unwrap();
    let p = l.poll();
    assert!(p.changed.contains(&leases.join("demo/q")), "{p:?}");
    assert!(p.changed.contains(&leases.join("demo/q/c")) && p.changed.contains(&newer), "{p:?}");
    assert_eq!(l.poll(), Polled::default());
    // A task's folder removed.
    std::fs::remove_dir_all(leases.join("demo/q")).unwrap();
    let p = l.poll();
    assert!(p.changed.contains(&leases.join("demo/q")) && p.changed.contains(&newer), "{p:?}");
    assert_eq!(l.poll(), Polled::default());
}

/// An `ubunye exec` run's log beside its record is no record: a poll
/// neither watches nor reads it, however it grows.
#[test]
fn a_runs_log_is_not_watched_as_a_record() {
    let (_d, leases, lineage) = uc();
    let mut l = listing(&leases, &lineage);
    let log = lineage.join("demo/p/a/run-1.log");
    std::fs::write(&log, "line\n").unwrap();
    assert_eq!(l.poll().changed, vec![lineage.join("demo/p/a")], "only its folder changed");
    tick();
    std::fs::write(&log, "line\nmore\n").unwrap();
    assert_eq!(l.poll(), Polled::default(), "a log that grows is not named");
    assert_eq!(l.watched().1, 0, "nor stat'ed");
}

/// At the first look, what was written lately is named by the first poll:
/// the dashboard's first read ran beside the look.
#[test]
fn what_was_written_lately_is_named_by_the_first_poll() {
    let (_d, leases, lineage) = uc();
    let lease = leases.join("demo/p/a").join(format!("{KEY}.json"));
    std::fs::write(&lease, "{}").unwrap();
    let mut l = Listing::new(&leases, &lineage);
    let p = l.poll();
    assert!(p.changed.contains(&lease) && p.changed.contains(&leases.join("demo/p/a")), "{p:?}");
    // Still within RACY of its write: named again; then no more.
    std::thread::sleep(RACY + Duration::from_millis(100));
    l.poll();
    assert_eq!(l.poll(), Polled::default());
}

#[test]
fn unchanged_folders_are_not_listed_and_old_records_are_not_stated() {
    let (_d, leases, lineage) = uc();
    let old = SystemTime::now() - 2 * RECENT;
    for i in 0..50 {
        let rec = lineage.join(format!("demo/p/a/run-{i}.json"));
        std::fs::write(&rec, "{}").unwrap();
        std::fs::File::options().write(true).open(&rec).unwrap().set_modified(old).unwrap();
        std::fs::write(leases.join(format!("demo/p/a/{:015x}{:x}.finished.json", 0, i % 16)), "{}").unwrap();
    }
    let mut l = listing(&leases, &lineage);
    assert_eq!(l.watched(), (10, 0), "the roots, demo, p, a and b on both sides; no lease, no recent record");
    assert_eq!(l.poll(), Polled::default());
    assert!((2..BACKSTOP).all(|_| !l.poll().full) && l.poll().full, "the backstop comes");
    let recent = lineage.join("demo/p/b/run-new.json");
    std::fs::write(&recent, "{}").unwrap();
    assert_eq!(Listing::new(&leases, &lineage).watched(), (10, 1), "a record of the last minutes is stat'ed");
}

/// A record as the peer writes it (the fields a poll reads).
fn rec(run: &str, status: &str, error: &str, ended: &str) -> String {
    format!(
        "{{\n  \"run_id\": \"{run}\",\n  \"task_path\": \"demo/p/a\",\n  \"started_at\": \"2026-12-04T10:00:00.000000+00:00\",\n  \"ended_at\": {ended},\n  \"status\": \"{status}\",\n  \"error\": {error}\n}}"
    )
}

/// `text` written to a temporary file beside `path`, renamed over it (as a
/// taker replaces a record).
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("0badcafe.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

const ENDED: &str = "\"2026-12-04T10:20:00.000000+00:00\"";

/// A record whose run wrote its end is settled, stat'ed about once a
/// [`ROUND`] of polls, not at each: one of the last minutes at the first
/// look (its folder is named by the first poll instead), and one a poll
/// has named. One running, or half-written, stays watched.
#[test]
fn records_whose_runs_wrote_their_end_are_settled() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let (done, going, half) = (a.join("run-done.json"), a.join("run-going.json"), a.join("run-half.json"));
    std::fs::write(&done, rec("run-done", "success", "null", ENDED)).unwrap();
    std::fs::write(&going, rec("run-going", "running", "null", "null")).unwrap();
    std::fs::write(&half, "{\"run_id\": \"run-half\", \"sta").unwrap();
    std::thread::sleep(RACY + Duration::from_millis(100));
    let mut l = Listing::new(&leases, &lineage);
    assert_eq!((l.watched().1, l.settled()), (2, 1), "the running and the half-written records watched");
    let p = l.poll();
    assert!(p.changed.contains(&a) && !p.changed.contains(&done), "its folder instead: {p:?}");
    tick();
    // The run ends: its record written in place. Named, then settled.
    std::fs::write(&going, rec("run-going", "error", "\"OSError: gone\"", ENDED)).unwrap();
    assert!(l.poll().changed.contains(&going));
    std::thread::sleep(RACY + Duration::from_millis(100));
    l.poll();
    assert_eq!((l.watched().1, l.settled()), (1, 2), "the half-written record only");
    std::fs::write(&half, rec("run-half", "interrupted", "\"lost\"", ENDED)).unwrap();
    assert!(l.poll().changed.contains(&half));
    std::thread::sleep(RACY + Duration::from_millis(100));
    l.poll();
    assert_eq!((l.watched().1, l.settled()), (0, 3));
    // A record that appears ended (a replace): named once, then settled.
    replace(&a.join("run-new.json"), &rec("run-new", "success", "null", ENDED));
    assert!(l.poll().changed.contains(&a.join("run-new.json")));
    std::thread::sleep(RACY + Duration::from_millis(100));
    l.poll();
    assert_eq!((l.watched().1, l.settled()), (0, 4));
    // One that appears running stays watched until it ends.
    std::fs::write(a.join("run-next.json"), rec("run-next", "running", "null", "null")).unwrap();
    assert!(l.poll().changed.contains(&a.join("run-next.json")));
    assert_eq!((l.watched().1, l.settled()), (1, 4));
}

/// Run A stalls; taker B marks its `running` record `interrupted` by a
/// rename (`ended_at` left null) and finishes the batch; A resumes and
/// writes its own end in place. Not final until then, so still watched:
/// named.
#[test]
fn a_lost_run_writing_its_end_in_place_after_the_takers_rename_is_named() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let r = a.join("run-a.json");
    let mut l = listing(&leases, &lineage);
    std::fs::write(&r, rec("run-a", "running", "null", "null")).unwrap();
    assert!(l.poll().changed.contains(&r), "A's record appears");
    tick();
    replace(&r, &rec("run-a", "interrupted", "\"The run did not finish; run bbbbbbbb took over\"", "null"));
    let p = l.poll();
    assert!(p.changed.contains(&a) && p.changed.contains(&r), "{p:?}");
    tick();
    std::fs::write(&r, rec("run-a", "error", "\"OSError: part gone\"", ENDED)).unwrap();
    let p = l.poll();
    assert!(p.changed.contains(&r), "A's own end, in place: {p:?}");
}

/// The same at the first look: the taker's record of the last minutes is
/// not final, so watched.
#[test]
fn a_takers_record_at_the_first_look_is_watched() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let r = a.join("run-a.json");
    replace(&r, &rec("run-a", "interrupted", "\"took over\"", "null"));
    let mut l = Listing::new(&leases, &lineage);
    assert!(l.poll().changed.contains(&a));
    std::thread::sleep(RACY + Duration::from_millis(100));
    l.poll();
    assert_eq!(l.poll(), Polled::default());
    std::fs::write(&r, rec("run-a", "interrupted", "\"Run aaaaaaaa lost its lease\"", ENDED)).unwrap();
    let p = l.poll();
    assert!(p.changed.contains(&r), "A's own end, in place: {p:?}");
}

/// The peer's `Engine` keeps one run id for every
/// `run()`, so a notebook running a task twice starts the record anew in
/// place over its `success`. A settled record is stat'ed again within a
/// round of polls: named.
#[test]
fn a_run_id_used_again_is_named_within_a_round_of_polls() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let r = a.join("run-n.json");
    let mut l = listing(&leases, &lineage);
    // Others settled beside it (records that appear ended), so that a
    // round is more than one poll.
    for i in 0..3 * ROUND {
        std::fs::write(a.join(format!("run-{i}.json")), rec(&format!("run-{i}"), "success", "null", ENDED)).unwrap();
    }
    std::fs::write(&r, rec("run-n", "running", "null", "null")).unwrap();
    l.poll();
    tick();
    std::fs::write(&r, rec("run-n", "success", "null", ENDED)).unwrap();
    assert!(l.poll().changed.contains(&r));
    // Settled (a window of zero: nothing is racy here).
    l.poll();
    assert_eq!((l.watched().1, l.settled()), (0, 3 * ROUND + 1));
    tick();
    std::fs::write(&r, rec("run-n", "running", "null", "null")).unwrap();
    let named = (0..=ROUND).position(|_| l.poll().changed.contains(&r));
    assert!(named.is_some(), "the second run's start is named within a round");
    assert!(named.unwrap() > 0, "not at the first poll: a share of the settled is stat'ed at each");
    assert_eq!((l.watched().1, l.settled()), (1, 3 * ROUND), "watched at each poll again");
}

/// A stamp far in the future neither stops the poll (an overflow) nor is
/// named at every poll.
#[test]
fn stamps_of_the_future_are_named_once_and_never_stop_the_polls() {
    let (_d, leases, lineage) = uc();
    let far = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 40);
    let lease = leases.join("demo/p/a").join(format!("{KEY}.json"));
    let rec = lineage.join("demo/p/a/run-1.json");
    for p in [&lease, &rec] {
        std::fs::write(p, "{}").unwrap();
        std::fs::File::options().write(true).open(p).unwrap().set_modified(far).unwrap();
    }
    let mut l = Listing::new(&leases, &lineage);
    l.poll();
    l.poll();
    assert_eq!(l.poll(), Polled::default(), "not named at every poll");
}

// The settled records: their tests.

fn settle_records(l: &mut Listing, a: &Path, n: usize) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = (0..n).map(|i| a.join(format!("run-s{i}.json"))).collect();
    for (i, p) in paths.iter().enumerate() {
        std::fs::write(p, rec(&format!("run-s{i}"), "success", "null", ENDED)).unwrap();
    }
    l.poll();
    l.poll();
    paths
}

/// The most polls between two looks at any of `survivors` (settled
/// records), `churn` run before each poll. A look is told by setting the
/// survivor's stamp to None before each poll: a look names it (and, final,
/// it stays settled where it is: the order is not disturbed).
fn max_gap(l: &mut Listing, survivors: &[PathBuf], polls: usize, mut churn: impl FnMut(&mut Listing, usize)) -> usize {
    let mut last: HashMap<PathBuf, usize> = survivors.iter().map(|p| (p.clone(), 0)).collect();
    let mut max = 0;
    for i in 1..=polls {
        churn(l, i);
        for (path, s) in &mut l.settled {
            if last.contains_key(path) {
                s.stamp = None;
            }
        }
        for path in l.poll().changed {
            if let Some(t) = last.get_mut(&path) {
                max = max.max(i - *t);
                *t = i;
            }
        }
    }
    max.max(last.values().map(|t| polls + 1 - t).max().unwrap_or(0))
}

fn filler(l: &mut Listing, i: usize, until: SystemTime) {
    let path = PathBuf::from(format!("/nonexistent/review27/run-{i}.json"));
    l.settled.insert(path, Settled { stamp: None, until });
}

/// Each settled record is stat'ed about every ROUND polls.
#[test]
fn gap_baseline() {
    let (_d, leases, lineage) = uc();
    let mut l = listing(&leases, &lineage);
    let far = SystemTime::now() + RECENT;
    for i in 0..30_000 {
        filler(&mut l, i, far);
    }
    let surv = settle_records(&mut l, &lineage.join("demo/p/a"), 30);
    let gap = max_gap(&mut l, &surv, 300, |_, _| {});
    eprintln!("baseline: max gap {gap} polls (ROUND {ROUND})");
    assert!(gap <= ROUND + 1, "{gap}");
}

/// The first look's records share one `until`, so a day later they expire
/// at once; the round keeps its share, and the records left are still
/// looked at about every ROUND polls.
#[test]
fn gap_when_the_first_looks_records_expire_together() {
    let (_d, leases, lineage) = uc();
    let mut l = listing(&leases, &lineage);
    let far = SystemTime::now() + RECENT;
    let day_ends = SystemTime::now() + Duration::from_millis(300);
    for i in 0..30_000 {
        filler(&mut l, i, day_ends);
    }
    let surv = settle_records(&mut l, &lineage.join("demo/p/a"), 30);
    for s in l.settled.values_mut().skip(30_000) {
        s.until = far;
    }
    let mut waited = false;
    let gap = max_gap(&mut l, &surv, 700, |_, i| {
        if i == 40 && !waited {
            std::thread::sleep(Duration::from_millis(300));
            waited = true;
        }
    });
    eprintln!("mass expiry: max gap {gap} polls (ROUND {ROUND}), settled left {}", l.settled());
    assert!(gap <= 2 * ROUND, "a settled record unlooked at for {gap} polls");
}

/// While the settled set grows (a backfill seen by the polls), each settled
/// record is still stat'ed within two rounds.
#[test]
fn gap_while_the_settled_grow() {
    let (_d, leases, lineage) = uc();
    let mut l = listing(&leases, &lineage);
    let far = SystemTime::now() + RECENT;
    let surv = settle_records(&mut l, &lineage.join("demo/p/a"), 30);
    let mut n = 0;
    let gap = max_gap(&mut l, &surv, 400, |l, _| {
        for _ in 0..300 {
            filler(l, n, far);
            n += 1;
        }
    });
    eprintln!("growth: max gap {gap} polls (ROUND {ROUND}), settled {}", l.settled());
    assert!(gap <= 2 * ROUND, "a settled record unlooked at for {gap} polls");
}

/// A settled record written in place within RACY is
/// looked at again by the next poll (the settled are looked at after the
/// watched files, so its recheck is not used up in the same poll).
#[test]
fn a_settled_record_written_within_racy_is_looked_at_by_the_next_poll() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let r = a.join("run-r.json");
    std::fs::write(&r, rec("run-r", "success", "null", ENDED)).unwrap();
    std::thread::sleep(RACY + Duration::from_millis(100));
    let mut l = Listing::new(&leases, &lineage);
    assert_eq!(l.settled(), 1);
    l.poll();
    std::fs::write(&r, rec("run-r", "error", "\"E: again\"", ENDED)).unwrap();
    assert!(l.poll().changed.contains(&r), "one settled: looked at by every poll");
    eprintln!("after the racy look: watched {}, settled {}", l.watched().1, l.settled());
    assert!(l.poll().changed.contains(&r), "written within RACY: named again by the next poll");
}

/// The same for one started again (`running`).
#[test]
fn a_settled_record_started_again_within_racy_is_looked_at_by_the_next_poll() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let r = a.join("run-r.json");
    std::fs::write(&r, rec("run-r", "success", "null", ENDED)).unwrap();
    std::thread::sleep(RACY + Duration::from_millis(100));
    let mut l = Listing::new(&leases, &lineage);
    l.poll();
    std::fs::write(&r, rec("run-r", "running", "null", "null")).unwrap();
    assert!(l.poll().changed.contains(&r));
    assert!(l.poll().changed.contains(&r), "written within RACY: named again by the next poll");
}

/// The recheck poll reads the record again (a second write within the
/// tick, the same size, is emulated by giving the listing the stamp it
/// left): its run's end is named by the next poll, not a round later.
#[test]
fn the_recheck_poll_settles_on_a_stale_read() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let mut l = Listing::with_window(&leases, &lineage, FRESH);
    let _ = settle_records(&mut l, &a, 3 * ROUND);
    std::thread::sleep(RACY + Duration::from_millis(100));
    l.poll();
    l.poll();
    let r = a.join("run-r.json");
    let fin = rec("run-r", "success", "null", ENDED);
    let going = rec("run-r", "running", "null", "null");
    let going = format!("{going}{}", " ".repeat(fin.len() - going.len()));
    assert_eq!(fin.len(), going.len());
    std::fs::write(&r, &fin).unwrap();
    assert!(l.poll().changed.contains(&r), "P: found, read final, racy");
    std::fs::write(&r, &going).unwrap();
    // The second write within the tick: the stamp as it was.
    l.files.get_mut(&r).unwrap().stamp = stamp(&r);
    assert!(l.poll().changed.contains(&r), "P+1: named by its recheck");
    eprintln!("a running record: watched {}, settled {}", l.files.contains_key(&r), l.settled.contains_key(&r));
    tick();
    std::fs::write(&r, &fin).unwrap();
    assert!(l.poll().changed.contains(&r), "its run's end, written in place, named by the next poll");
}

/// A settled record whose day ends is stat'ed once more: a change in its
/// day since its last look is named.
#[test]
fn a_settled_record_changed_before_its_day_ends_is_named() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let mut l = listing(&leases, &lineage);
    let paths = settle_records(&mut l, &a, 3 * ROUND);
    assert_eq!(l.settled(), 3 * ROUND);
    // Looked at; then the cursor moves on.
    let r = paths[0].clone();
    let at = l.settled.get_index_of(&r).unwrap();
    while l.next <= at {
        l.poll();
    }
    tick();
    std::fs::write(&r, rec("run-s0", "running", "null", "null")).unwrap();
    l.settled.get_mut(&r).unwrap().until = SystemTime::now();
    let named = (0..2 * ROUND).any(|_| l.poll().changed.contains(&r));
    assert!(named, "written within its day, never named");
}

/// A watched record whose day ends at the poll that sees a write of the
/// last RACY keeps its recheck.
#[test]
fn a_recheck_is_kept_when_a_records_day_ends() {
    let (_d, leases, lineage) = uc();
    let r = lineage.join("demo/p/a/run-r.json");
    let mut l = Listing::with_window(&leases, &lineage, FRESH);
    l.poll();
    std::fs::write(&r, rec("run-r", "running", "null", "null")).unwrap();
    assert!(l.poll().changed.contains(&r));
    assert!(l.poll().changed.contains(&r));
    tick();
    std::fs::write(&r, rec("run-r", "runnin2", "null", "null")).unwrap();
    l.files.get_mut(&r).unwrap().until = Some(SystemTime::now());
    assert!(l.poll().changed.contains(&r));
    assert!(l.poll().changed.contains(&r), "written within RACY: named again by the next poll");
}

/// A task's folder that goes and comes back (moved away and back, or a
/// listing that failed once on NFS) names its records again; each is
/// settled once.
#[test]
fn records_are_settled_once() {
    let (d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let away = d.path().join("away");
    let mut l = listing(&leases, &lineage);
    settle_records(&mut l, &a, 3 * ROUND);
    for k in 1..=3 {
        std::fs::rename(&a, &away).unwrap();
        l.poll();
        std::fs::rename(&away, &a).unwrap();
        l.poll();
        l.poll();
        eprintln!("after {k}: settled {} of {} records", l.settled(), 3 * ROUND);
    }
    assert_eq!(l.settled(), 3 * ROUND);
}

/// A record settled at the first look has its folder named by the first
/// poll, even when the folder's stamp is not of the window.
#[test]
fn the_first_poll_names_an_old_folder_of_a_settled_record() {
    let (_d, leases, lineage) = uc();
    let a = lineage.join("demo/p/a");
    let r = a.join("run-r.json");
    std::fs::write(&r, rec("run-r", "running", "null", "null")).unwrap();
    std::thread::sleep(Duration::from_millis(1600));
    std::fs::write(&r, rec("run-r", "success", "null", ENDED)).unwrap();
    std::thread::sleep(RACY + Duration::from_millis(100));
    let window = Duration::from_millis(2000);
    let mut l = Listing::with_window(&leases, &lineage, window);
    assert!(!fresh(&stamp(&a).unwrap(), SystemTime::now(), window), "the folder is older than the window");
    assert_eq!(l.settled(), 1);
    let p = l.poll();
    assert!(p.changed.contains(&a), "{p:?}");
    assert_eq!(l.poll(), Polled::default());
}
