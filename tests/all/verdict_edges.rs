//! The state model's verdicts where they are easy to get wrong
//! (docs/reliability.md): a file server's clock, unreadable files that decide
//! nothing, a lease a refused takeover handed back, a live run's write.

use crate::common;

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::*;
use ubunye::state::{ClockRead, Flag, ScanOptions, State, scan, scan_one};
use ubunye::sys::{ClockSource, Now};

const DEAD: &str = "7d106ca76674f2a1";
const FINISHED: &str = "39bc42311894ddba";
const OTHER_HOST: &str = "elsewhere|pid:[1]";

/// A file server whose clock is `skew` ahead of this machine's: a probe reads
/// its time; looking without writing cannot (no O_TMPFILE on it), or can only
/// under `readable`.
#[derive(Debug)]
struct FileServer {
    local: SystemTime,
    skew: Duration,
    /// Folders whose path contains this are on the server; others are local.
    on: &'static str,
}

impl ubunye::sys::Clock for FileServer {
    fn now(&self) -> SystemTime {
        self.local
    }
    fn disk_now(&self, dir: &Path) -> Now {
        if dir.to_string_lossy().contains(self.on) {
            Now { time: self.local + self.skew, source: ClockSource::Disk }
        } else {
            Now { time: self.local, source: ClockSource::LocalFileSystem }
        }
    }
    fn disk_now_looking(&self, dir: &Path) -> Now {
        if dir.to_string_lossy().contains(self.on) {
            Now { time: self.local, source: ClockSource::Local }
        } else {
            Now { time: self.local, source: ClockSource::LocalFileSystem }
        }
    }
}

/// On a file server whose clock runs ahead, a lease untouched for 16 minutes
/// by the server's clock would be listed live by this machine's clock (and a
/// fresh one dead when it runs behind). Looking without the disk's clock
/// judges nobody dead; a repair reads it with a probe and judges by it.
#[test]
fn without_the_disks_clock_no_lease_is_judged_dead_and_a_repair_probes() {
    let (_d, uc, m) = fixture("dead-killed");
    let lease = uc.join(format!(".ubunye/leases/demo/sales/ingest/{DEAD}.json"));
    let (mut sys, _, _) = fake_sys(OTHER_HOST, m.captured_at());
    // The lease was written 16 minutes ago by the server's clock, which runs
    // 20 minutes ahead of this machine's: by this machine's, it is 4 minutes
    // in the future.
    let local = SystemTime::now();
    set_mtime(&lease, local + Duration::from_secs(4 * 60));
    sys.clock = Arc::new(FileServer { local, skew: Duration::from_secs(20 * 60), on: "/uc" });
    let looking = scan(&uc, &ScanOptions::default(), &sys).unwrap();
    let b = looking.batches.iter().find(|b| b.key == DEAD).unwrap();
    assert_ne!(b.state, State::Dead);
    assert!(b.flags.contains(&Flag::LocalClock), "{:?}", b.flags);
    // Behind instead: a lease written 5 s ago looks 25 minutes old here.
    set_mtime(&lease, local - Duration::from_secs(25 * 60));
    let behind = FileServer { local, skew: Duration::ZERO, on: "/uc" };
    sys.clock = Arc::new(behind);
    let b = scan(&uc, &ScanOptions::default(), &sys).unwrap().batches.into_iter().find(|b| b.key == DEAD).unwrap();
    assert_ne!(b.state, State::Dead, "never dead by a clock that is not the disk's: {}", b.note);
    assert!(b.note.contains("not judged"), "{}", b.note);
    // A repair probes: by the server's clock (20 minutes ahead) it is dead.
    set_mtime(&lease, local + Duration::from_secs(4 * 60));
    sys.clock = Arc::new(FileServer { local, skew: Duration::from_secs(20 * 60), on: "/uc" });
    let probe = ScanOptions { clock: ClockRead::Probe, ..ScanOptions::default() };
    let (_, b) = scan_one(&uc, "demo/sales/ingest", DEAD, &probe, &sys).unwrap();
    assert_eq!(b.unwrap().state, State::Dead);
}

/// The same, unseen at first: the use case on a local disk, one task's lease
/// folder on the file server. That task is judged by its own disk's
/// clock, not the use case's.
#[test]
fn each_task_is_judged_by_the_clock_of_its_own_lease_folder() {
    let (_d, uc, m) = fixture("dead-killed");
    let (mut sys, _, _) = fake_sys(OTHER_HOST, m.captured_at());
    let local = SystemTime::now();
    let lease = uc.join(format!(".ubunye/leases/demo/sales/ingest/{DEAD}.json"));
    set_mtime(&lease, local - Duration::from_secs(25 * 60));
    // Only the task's folder (…/ingest) is "on the server".
    sys.clock = Arc::new(FileServer { local, skew: Duration::ZERO, on: "/ingest" });
    let b = scan(&uc, &ScanOptions::default(), &sys).unwrap().batches.into_iter().find(|b| b.key == DEAD).unwrap();
    assert_ne!(b.state, State::Dead, "{}", b.note);
    assert!(b.flags.contains(&Flag::LocalClock));
}

/// An unreadable file makes its batch `unreadable` ("nothing is run, taken
/// over or removed") only where it decides the next step; not where the next
/// run goes ahead: a note beside a dead lease (the takeover goes ahead, the
/// finished check refuses later), a dead run's record when its done mark
/// says it committed, the record of a run already taken over.
#[test]
fn only_a_file_that_decides_the_next_step_makes_a_batch_unreadable() {
    let (_d, uc, m) = fixture("dead-killed");
    let dir = uc.join(".ubunye/leases/demo/sales/ingest");
    let records = uc.join(".ubunye/lineage/demo/sales/ingest");
    let run = "a7ee7676-3983-4c1b-8fff-47937b7a2497";
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let state_of = |key: &str| {
        let s = scan(&uc, &ScanOptions::default(), &sys).unwrap();
        let b = s.batches.into_iter().find(|b| b.key == key).unwrap();
        (b.state, b.flags, b.note)
    };
    // C1: a note that is not JSON beside the dead lease.
    let note = dir.join(format!("{DEAD}.finished.json"));
    fs::write(&note, "{not json").unwrap();
    let (state, flags, note_text) = state_of(DEAD);
    assert_eq!(state, State::Dead, "{note_text}");
    assert!(flags.contains(&Flag::UnreadableFiles) && note_text.contains(&format!("{DEAD}.finished.json")));
    fs::remove_file(&note).unwrap();
    // The dead run's record is not UTF-8: its plan needs it, so it blocks...
    let rec = records.join(format!("{run}.json"));
    fs::write(&rec, b"\xff\xfe").unwrap();
    assert_eq!(state_of(DEAD).0, State::Unreadable);
    // C2: ... unless its done mark says it committed.
    fs::write(dir.join(format!("{DEAD}.done-{run}")), "").unwrap();
    assert_ne!(state_of(DEAD).0, State::Unreadable);
    fs::remove_file(dir.join(format!("{DEAD}.done-{run}"))).unwrap();
    // C3: the run was taken over (no lease left, its mark): its record decides nothing.
    fs::remove_file(dir.join(format!("{DEAD}.json"))).unwrap();
    fs::write(dir.join(format!("{DEAD}.taken-{run}")), "").unwrap();
    let (state, flags, _) = state_of(DEAD);
    assert_eq!(state, State::Interrupted);
    assert!(flags.contains(&Flag::UnreadableFiles));
    // A record that is all a batch has is unreadable, as before.
    fs::write(records.join("zzz.json"), b"\xff").unwrap();
    assert_eq!(state_of(&"?".repeat(16)).0, State::Unreadable);
}

/// `handed-back` heeds whether its holder is alive: a lease a refused
/// takeover wrote back (fresh) is held by every engine until it is old
/// again: live, not handed back with a takeover plan. An empty lease is
/// not the `<key>.taken-` mark's.
#[test]
fn a_handed_back_lease_is_judged_like_any_lease() {
    let (_d, uc, m) = fixture("takeover-refused-in-use");
    let lease = uc.join(format!(".ubunye/leases/demo/sales/ingest/{DEAD}.json"));
    let (sys, clock, _) = fake_sys(OTHER_HOST, m.captured_at());
    set_mtime(&lease, m.captured_at());
    let state = |sys: &ubunye::Sys| {
        scan(&uc, &ScanOptions::default(), sys).unwrap().batches.into_iter().find(|b| b.key == DEAD).unwrap().state
    };
    assert_eq!(state(&sys), State::Live, "fresh: held");
    clock.advance(Duration::from_secs(16 * 60));
    assert_eq!(state(&sys), State::HandedBack, "old again: handed back");
    // An empty lease beside an earlier `<key>.taken-`.
    let d2 = tempfile::tempdir().unwrap();
    let uc2 = d2.path().to_path_buf();
    let dir = uc2.join(".ubunye/leases/demo/sales/ingest");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(format!("{FINISHED}.json")), "").unwrap();
    fs::write(dir.join(format!("{FINISHED}.taken-")), "").unwrap();
    let (sys, _, _) = fake_sys(OTHER_HOST, SystemTime::now());
    let b = scan(&uc2, &ScanOptions::default(), &sys).unwrap().batches.remove(0);
    // Not handed back: it names no run, so the mark is an earlier takeover's.
    assert_eq!(b.state, State::Damaged, "{}", b.note);
}

/// Doctor never tells people to remove by hand a staging folder that a live
/// run is writing (the peer's pandas writer, before its claim), nor promises
/// a repair for a kept lease whose process still runs.
#[test]
fn doctor_never_sends_anyone_to_remove_a_live_runs_write() {
    let (_d, uc, m) = fixture("dead-killed");
    let lease = uc.join(format!(".ubunye/leases/demo/sales/ingest/{DEAD}.json"));
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&lease).unwrap()).unwrap();
    doc["outputs"]["events"]["claimed"] = serde_json::json!([]);
    fs::write(&lease, doc.to_string()).unwrap();
    let side = uc.join("out/.events.ubunye-0123456789ab");
    fs::create_dir_all(&side).unwrap();
    fs::write(side.join("part-0.parquet"), "x").unwrap();
    // The holder lives (this host, its pid in the table).
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, m.captured_at());
    procs.add(doc["pid"].as_i64().unwrap() as i32, doc["pid_started"].as_str());
    let look = ubunye::doctor::look(&uc, &ScanOptions::default(), &sys).unwrap();
    let f = look.findings.iter().find(|f| f.kind == "stray-staging").unwrap();
    assert!(f.detail.contains("write in progress") && f.detail.contains("Leave it"), "{}", f.detail);
    assert!(!f.detail.contains("remove it by hand"), "{}", f.detail);
    // Kept, with its process alive: end it first.
    let (_d, uc, m) = fixture("kept");
    let lease = uc.join(format!(".ubunye/leases/demo/sales/ingest/{DEAD}.json"));
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(&lease).unwrap()).unwrap();
    let (sys, _, procs) = fake_sys(FIXTURE_HOST, m.captured_at());
    procs.add(doc["pid"].as_i64().unwrap() as i32, doc["pid_started"].as_str());
    let look = ubunye::doctor::look(&uc, &ScanOptions::default(), &sys).unwrap();
    let f = look.findings.iter().find(|f| f.kind == "needs-repair").unwrap();
    assert!(f.detail.contains("still runs") && f.detail.contains("end that process"), "{}", f.detail);
}
