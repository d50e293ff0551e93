//! Where a `ubunye::tally` could differ from a full count after the look
//! that should make them equal, held as tests: a record rewritten in place
//! by a run with leases off, a record read half-written, an orphan on a file
//! server whose clock is ahead, and a use case away for an instant mid-look.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ubunye::census::{self, Census};
use ubunye::state::ScanOptions;
use ubunye::sys::{Clock, ClockSource, Now, Sys};
use ubunye::tally::Tally;
use ubunye_testkit::{ELSEWHERE, FakeClock, Manifest, fake_sys, fixture, set_mtime};

const RUNNING: &str = "3a4c5780-2b72-4a7b-bb74-3cc66043ff2f";

fn said(c: &Census) -> String {
    let mut c = c.clone();
    c.duration = Duration::ZERO;
    c.findings.clear();
    format!("{c:#?}")
}

fn full(uc: &Path, sys: &Sys) -> Census {
    census::count(uc, "uc", &ScanOptions::default(), sys, true)
}

/// The fixture's files with their captured times (whole seconds).
fn captured(name: &str) -> (tempfile::TempDir, PathBuf, Manifest) {
    let (d, uc, m) = fixture(name);
    for p in m.paths() {
        let secs = m.mtime(&p).duration_since(UNIX_EPOCH).unwrap().as_secs();
        set_mtime(&uc.join(&p), UNIX_EPOCH + Duration::from_secs(secs));
    }
    (d, uc, m)
}

/// The live fixture with its lease gone: a run with leases off.
fn leases_off() -> (tempfile::TempDir, PathBuf, Manifest) {
    let (d, uc, m) = captured("live");
    fs::remove_file(uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json")).unwrap();
    (d, uc, m)
}

#[test]
fn a_record_rewritten_in_place_is_seen_at_the_next_look() {
    let (_d, uc, m) = leases_off();
    let (sys, clock, _) = fake_sys(ELSEWHERE, m.captured_at());
    let mut t = Tally::new(&uc, "uc", ScanOptions::default(), true, Duration::from_secs(600));
    t.refresh(&sys);
    assert_eq!(said(&t.census), said(&full(&uc, &sys)));
    // As the peer ends a run: the record truncated and written again.
    let rec = uc.join(format!(".ubunye/lineage/demo/sales/ingest/{RUNNING}.json"));
    let text = fs::read_to_string(&rec).unwrap();
    fs::write(&rec, text.replace("\"status\": \"running\"", "\"status\": \"success\"")).unwrap();
    clock.advance(Duration::from_secs(1));
    t.refresh(&sys);
    assert_eq!(said(&t.census), said(&full(&uc, &sys)));
}

#[test]
fn a_record_read_half_written_is_read_again_once_whole() {
    let (_d, uc, m) = leases_off();
    let (sys, clock, _) = fake_sys(ELSEWHERE, m.captured_at());
    let mut t = Tally::new(&uc, "uc", ScanOptions::default(), true, Duration::from_secs(600));
    t.refresh(&sys);
    let src = uc.join(format!(".ubunye/lineage/demo/sales/ingest/{RUNNING}.json"));
    let other = "11111111-2222-4333-8444-555555555555";
    let text = fs::read_to_string(&src).unwrap().replace("2025-01-02", "2025-01-09").replace(RUNNING, other);
    let rec = uc.join(format!(".ubunye/lineage/demo/sales/ingest/{other}.json"));
    // Made empty (the folder changes, the look reads it so), then written.
    fs::write(&rec, "").unwrap();
    t.refresh(&sys);
    fs::write(&rec, &text).unwrap();
    clock.advance(Duration::from_secs(1));
    t.refresh(&sys);
    assert_eq!(said(&t.census), said(&full(&uc, &sys)));
}

/// A clock by which the disk under `remote` is `skew` ahead.
struct TwoDisks {
    base: Arc<FakeClock>,
    remote: PathBuf,
    skew: Duration,
}

impl Clock for TwoDisks {
    fn now(&self) -> SystemTime {
        self.base.now()
    }
    fn disk_now(&self, dir: &Path) -> Now {
        self.disk_now_looking(dir)
    }
    fn disk_now_looking(&self, dir: &Path) -> Now {
        let real = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let ahead = if real.starts_with(&self.remote) { self.skew } else { Duration::ZERO };
        Now { time: self.base.now() + ahead, source: ClockSource::Disk }
    }
}

#[test]
fn an_orphans_age_is_by_its_own_disks_clock_in_a_full_count_too() {
    let (d, uc, m) = captured("orphan");
    let remote = d.path().join("server");
    fs::create_dir_all(&remote).unwrap();
    let task = uc.join(".ubunye/leases/demo/sales/ingest");
    fs::rename(&task, remote.join("ingest")).unwrap();
    std::os::unix::fs::symlink(remote.join("ingest"), &task).unwrap();
    let (mut sys, clock, _) = fake_sys(ELSEWHERE, m.captured_at());
    let remote = fs::canonicalize(&remote).unwrap();
    sys.clock = Arc::new(TwoDisks { base: clock.clone(), remote, skew: Duration::from_secs(300) });
    let mut t = Tally::new(&uc, "uc", ScanOptions::default(), true, Duration::ZERO);
    t.refresh(&sys);
    let f = full(&uc, &sys);
    assert_eq!(said(&t.census), said(&f));
    let orphan = f.oldest.get(&ubunye::state::State::Orphan).copied().unwrap_or_default();
    assert!(orphan >= Duration::from_secs(300), "by the server's clock: {:?}", f.oldest);
}

/// A clock that moves the use case away the moment its task's clock is
/// asked: away for an instant between a look's start and its read.
struct Hiccup {
    base: Arc<FakeClock>,
    armed: std::sync::Mutex<Option<(PathBuf, PathBuf)>>,
}

impl Clock for Hiccup {
    fn now(&self) -> SystemTime {
        self.base.now()
    }
    fn disk_now(&self, dir: &Path) -> Now {
        self.disk_now_looking(dir)
    }
    fn disk_now_looking(&self, dir: &Path) -> Now {
        if dir.ends_with("demo/sales/ingest")
            && let Some((from, to)) = self.armed.lock().unwrap().take()
        {
            fs::rename(from, to).unwrap();
        }
        Now { time: self.base.now(), source: ClockSource::Disk }
    }
}

#[test]
fn a_use_case_away_for_an_instant_loses_no_task() {
    let (d, uc, m) = captured("live");
    let (mut sys, clock, _) = fake_sys(ELSEWHERE, m.captured_at());
    let hiccup = Arc::new(Hiccup { base: clock.clone(), armed: Default::default() });
    sys.clock = hiccup.clone();
    let mut t = Tally::new(&uc, "uc", ScanOptions::default(), true, Duration::from_secs(600));
    t.refresh(&sys);
    clock.advance(Duration::from_secs(20 * 60));
    t.refresh(&sys);
    assert_eq!(said(&t.census), said(&full(&uc, &sys)));
    // The task's folder changes (a clock probe made and removed), and the
    // use case is away just as the look reads the task again.
    let task = uc.join(".ubunye/leases/demo/sales/ingest");
    fs::write(task.join(".clock-0badc0de"), "").unwrap();
    fs::remove_file(task.join(".clock-0badc0de")).unwrap();
    let aside = d.path().join("aside");
    *hiccup.armed.lock().unwrap() = Some((uc.clone(), aside.clone()));
    t.refresh(&sys);
    fs::rename(&aside, &uc).unwrap();
    clock.advance(Duration::from_secs(1));
    t.refresh(&sys);
    assert_eq!(said(&t.census), said(&full(&uc, &sys)));
    assert!(!t.census.tasks.is_empty());
}
