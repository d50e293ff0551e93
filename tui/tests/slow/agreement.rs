//! One verdict for a batch on every surface: over random use-case
//! trees and every captured fixture, the state, flags, note and history of
//! each batch are the same in the full scan (`leases list`), in `explain`
//! (`state::scan_one`, its task read), in the dashboard's model (after its
//! reads, and read whole for its detail pane), and the repair check agrees
//! with the state. On some trees the binary is asked too: `leases list --all
//! --json` and `leases explain --json` of every batch.
//!
//! `UBUNYE_AGREEMENT_CASES` sets the number of random trees (default 300;
//! `scripts/agreement 100000` for the recorded run, docs/reliability.md).

use crate::common;

use std::path::Path;
use std::time::SystemTime;

use common::dash::{Walk, app, read_all, settle};
use common::trees;
use common::{ELSEWHERE, FIXTURES, fake_sys};
use ubunye::explain::explain;
use ubunye::repair::{Kind, check};
use ubunye::state::{self, Batch, ScanOptions, State};
use ubunye::sys::Sys;

fn sys(now: SystemTime, alive: &[i32]) -> Sys {
    let (sys, _, procs) = fake_sys(ELSEWHERE, now);
    for &pid in alive {
        procs.add(pid, Some("4242"));
    }
    sys
}

/// What must agree: state, flags, note, and the history.
fn verdict(b: &Batch) -> (State, Vec<state::Flag>, String, Vec<state::HistoryEntry>) {
    (b.state, b.flags.clone(), b.note.clone(), b.history())
}

/// Compare every surface for the use case at `uc`. Returns how many batches.
fn agree(uc: &Path, sys: &Sys, what: &str) -> usize {
    let opts = ScanOptions::default();
    let scan = state::scan(uc, &opts, sys).unwrap();
    let mut a = app(uc, sys.clone());
    let events = read_all(&a);
    let effects = a.handle_all(events);
    settle(&mut a, effects);
    assert_eq!(a.model.len(), scan.batches.len(), "{what}: the dashboard has as many batches");
    for b in &scan.batches {
        let id = (b.task.clone(), b.key.clone());
        let (one_scan, one) = state::scan_one(uc, &b.task, &b.key, &opts, sys).unwrap();
        let one = one.unwrap_or_else(|| panic!("{what}: scan_one finds {}", b.key));
        assert_eq!(verdict(&one), verdict(b), "{what}: explain's batch is the list's ({})", b.key);
        let shown = a.model.batch(&id).unwrap_or_else(|| panic!("{what}: the dashboard has {}", b.key));
        assert_eq!(shown.state, b.state, "{what}: the dashboard's state ({})", b.key);
        assert_eq!(shown.note, b.note, "{what}: the dashboard's note ({})", b.key);
        let whole = a.model.whole(&id).unwrap().unwrap();
        assert_eq!(verdict(&whole), verdict(b), "{what}: the dashboard's detail ({})", b.key);
        let e = explain(&one_scan, one);
        assert_eq!(e.history, b.history(), "{what}: explain's history ({})", b.key);
        // The report renders (never panics) on any batch.
        assert!(ubunye_tui::report::explanation(&e, None).contains(&b.key));
        match check(Kind::Takeover, &e) {
            Ok(plan) => {
                assert_eq!(plan.state, b.state, "{what}: the plan's state ({})", b.key);
                // A damaged lease (not JSON) is taken over by its age alone.
                let old = b.lease.as_ref().and_then(|l| l.holder.judgement.as_ref()).is_some_and(|j| j.dead);
                assert!(
                    matches!(b.state, State::Dead | State::Orphan | State::Kept | State::HandedBack | State::Pending)
                        || (b.state == State::Damaged && old),
                    "{what}: a takeover is planned only for a batch that needs one: {:?}",
                    b.state
                );
            }
            Err(why) => assert!(
                why.contains(&format!(" is {}: ", b.state.word())),
                "{what}: the refusal names the state {}: {why}",
                b.state.word()
            ),
        }
    }
    scan.batches.len()
}

/// `leases list --all --json` and `leases explain --json` of each batch, from
/// the binary: the same state, note, flags and history.
fn agree_in_the_binary(uc: &Path, what: &str) {
    let list = common::ubunye(uc).args(["leases", "list", "-d", "uc", "--all", "--json"]).output().unwrap();
    assert!(list.status.success(), "{what}: {}", String::from_utf8_lossy(&list.stderr));
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    for row in v["batches"].as_array().unwrap() {
        let key = row["key"].as_str().unwrap();
        if key.starts_with('?') {
            continue;
        }
        let task = row["task"].as_str().unwrap();
        let o =
            common::ubunye(uc).args(["leases", "explain", key, "--task", task, "-d", "uc", "--json"]).output().unwrap();
        assert!(o.status.success(), "{what}: explain {key}: {}", String::from_utf8_lossy(&o.stderr));
        let e: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for field in ["state", "note", "flags"] {
            assert_eq!(e["batch"][field], row[field], "{what}: {field} of {key}");
        }
        assert_eq!(e["history"], row["history"], "{what}: history of {key}");
    }
}

fn cases() -> u64 {
    std::env::var("UBUNYE_AGREEMENT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

#[test]
fn every_surface_gives_one_verdict_over_random_trees() {
    let n = cases();
    let mut batches = 0;
    let mut seen = std::collections::BTreeSet::new();
    for case in 0..n {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        let mut w = Walk::new(case);
        let now = SystemTime::now();
        let t = trees::random(&mut w, &uc, now);
        let what = format!("tree {case} (UBUNYE_AGREEMENT_CASES, seed {case})");
        batches += agree(&uc, &sys(t.now, &t.alive), &what);
        let scan = state::scan(&uc, &ScanOptions::default(), &sys(t.now, &t.alive)).unwrap();
        seen.extend(scan.batches.iter().map(|b| b.state));
        if case % 25 == 0 {
            agree_in_the_binary(&uc, &what);
        }
        if n > 1000 && (case + 1) % 5000 == 0 {
            eprintln!("agreement: {} trees so far, {batches} batches", case + 1);
        }
    }
    eprintln!("agreement: {n} trees, {batches} batches, states seen: {seen:?}");
    // The trees reach every state a use case can be in, so the property is
    // tested on each.
    if n >= 300 {
        for s in State::ALL {
            assert!(seen.contains(&s), "no tree reached {s:?}: the generator must make it");
        }
    }
}

#[test]
fn every_fixture_gives_one_verdict() {
    for name in FIXTURES {
        let (_d, uc, captured) = common::dash::fixture(name);
        for after in [std::time::Duration::from_secs(60), common::dash::LATER] {
            agree(&uc, &sys(captured + after, &[]), name);
        }
        agree_in_the_binary(&uc, name);
    }
}
