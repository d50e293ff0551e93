//! A census kept up to date (`ubunye::tally`) equals a full count of the
//! use case as it is now, after each kind of change: time alone (a live
//! holder's heartbeat grows old), a lease written in one task, a task made,
//! a task removed, a file that cannot be read, and the use case gone. The
//! fleet view shows nothing else, so its rows are a full count's.

use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use ubunye::census::{self, Census};
use ubunye::state::ScanOptions;
use ubunye::sys::Sys;
use ubunye::tally::Tally;
use ubunye_testkit::{ELSEWHERE, copy_tree, fake_sys, fixture, fixture_dir, set_mtime};

/// What a census says, its time of reading left out; doctor's findings only
/// when `findings` (a tally counts them again at its full counts).
fn said(c: &Census, findings: bool) -> String {
    let mut c = c.clone();
    c.duration = Duration::ZERO;
    if !findings {
        c.findings.clear();
    }
    format!("{c:#?}")
}

fn same(t: &Tally, uc: &Path, sys: &Sys, findings: bool) {
    let full = census::count(uc, "uc", &ScanOptions::default(), sys, true);
    assert_eq!(said(&t.census, findings), said(&full, findings));
}

#[test]
fn a_tally_equals_a_full_count_after_every_kind_of_change() {
    // The live fixture (a held lease, a finished batch), judged from
    // another host: by the heartbeat's age alone.
    let (_d, uc, m) = fixture("live");
    for p in m.paths() {
        let secs = m.mtime(&p).duration_since(UNIX_EPOCH).unwrap().as_secs();
        set_mtime(&uc.join(&p), UNIX_EPOCH + Duration::from_secs(secs));
    }
    let (sys, clock, _) = fake_sys(ELSEWHERE, m.captured_at());
    let mut t = Tally::new(&uc, "uc", ScanOptions::default(), true, Duration::from_secs(3600));
    assert!(t.refresh(&sys), "the first refresh reads it");
    same(&t, &uc, &sys, true);
    let live = t.census.tasks.values().map(|c| c.states[ubunye::state::State::Live.rank()]).sum::<u64>();
    assert_eq!(live, 1, "{:#?}", t.census);

    // A live holder's lease rewritten where it is (no engine saves so: a
    // write and a rename, which changes its folder) is seen at the next look.
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    let text = fs::read_to_string(&lease).unwrap();
    fs::write(&lease, text.replace("3a4c5780-2b72-4a7b-bb74-3cc66043ff2f", "3a4c5780-2b72-4a7b-bb74-3cc66043ff2e"))
        .unwrap();
    let mtime = m.mtime(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    set_mtime(&lease, UNIX_EPOCH + Duration::from_secs(mtime.duration_since(UNIX_EPOCH).unwrap().as_secs()));
    t.refresh(&sys);
    same(&t, &uc, &sys, false);
    assert!(t.census.held.iter().any(|h| h.run_id.ends_with("ff2e")), "{:#?}", t.census);

    // Time alone: twenty minutes without a heartbeat, and the holder is dead.
    clock.advance(Duration::from_secs(20 * 60));
    assert!(t.refresh(&sys), "a verdict changed");
    same(&t, &uc, &sys, false);
    let dead = t.census.tasks.values().map(|c| c.states[ubunye::state::State::Dead.rank()]).sum::<u64>();
    assert_eq!(dead, 1, "{:#?}", t.census);
    // Nothing changed, not even the time: a look says so.
    assert!(!t.refresh(&sys), "a look with nothing changed said it changed");

    // A lease saved in its task, as engines save (a write and a rename); a
    // new task; a file that cannot be read.
    let task = uc.join(".ubunye/leases/demo/sales/ingest");
    let kept = fixture_dir("kept").join("uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    fs::copy(&kept, task.join("7d106ca76674f2a1.0badc0de.tmp")).unwrap();
    fs::rename(task.join("7d106ca76674f2a1.0badc0de.tmp"), task.join("7d106ca76674f2a1.json")).unwrap();
    copy_tree(
        &fixture_dir("orphan").join("uc/.ubunye/leases/demo/sales/ingest"),
        &uc.join(".ubunye/leases/demo/web/clicks"),
    );
    fs::write(uc.join(".ubunye/leases/demo/web/clicks/00000000000000ab.json"), "{not json").unwrap();
    t.refresh(&sys);
    same(&t, &uc, &sys, false);
    assert!(t.census.tasks.contains_key("demo/web/clicks"), "{:#?}", t.census);

    // A task removed.
    fs::remove_dir_all(uc.join(".ubunye/leases/demo/web/clicks")).unwrap();
    t.refresh(&sys);
    same(&t, &uc, &sys, false);
    assert!(!t.census.tasks.contains_key("demo/web/clicks"));

    // The use case gone, and back.
    let aside = uc.with_extension("aside");
    fs::rename(&uc, &aside).unwrap();
    assert!(t.refresh(&sys));
    assert!(t.census.error.is_some() && t.census.tasks.is_empty());
    same(&t, &uc, &sys, true);
    fs::rename(&aside, &uc).unwrap();
    assert!(t.refresh(&sys));
    same(&t, &uc, &sys, true);
}

#[test]
fn a_full_count_comes_again_and_counts_findings() {
    let (_d, uc, _) = fixture("dead-killed");
    let (sys, _, _) = fake_sys(ELSEWHERE, std::time::SystemTime::now());
    let mut t = Tally::new(&uc, "uc", ScanOptions::default(), false, Duration::ZERO);
    t.refresh(&sys);
    let full = census::count(&uc, "uc", &ScanOptions::default(), &sys, false);
    assert_eq!(said(&t.census, true), said(&full, true));
    // A stray staging folder: doctor's finding, seen by the next full count
    // (every refresh is one here).
    fs::create_dir_all(uc.join("out/.events.ubunye-0123456789abcdef.staging")).unwrap();
    t.refresh(&sys);
    let full = census::count(&uc, "uc", &ScanOptions::default(), &sys, false);
    assert_eq!(said(&t.census, true), said(&full, true));
}
