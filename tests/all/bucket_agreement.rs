//! Every surface over a store tells the same story, on random use cases the
//! engine itself makes (live, killed at each landing step, committed without
//! its note, finished, failed, unreadable; run records of every status):
//! `leases list` (a full look), the dashboard (a poller), `leases explain`
//! (find and explain one batch), and the repair check (`applies`) agree on
//! each batch's state; and the engine's own takeover does exactly what the
//! repair check said it would: it takes over every batch the check allows,
//! refuses or finds free every other, and leaves none dead.

use std::sync::Arc;

use ubunye::bucket::{Objects, Place};
use ubunye::explain::store::{Found, explain, find};
use ubunye::layout::TaskPath;
use ubunye::repair::Kind;
use ubunye::repair::check;
use ubunye::repair::store::{TakeoverEnd, takeover};
use ubunye::state::State;
use ubunye::state::store::{Poller, look};
use ubunye::sys::Step;

use crate::common;
use common::bucket::*;
use ubunye_testkit::Rng;

const TASKS: [&str; 2] = ["demo/sales/ingest", "demo/sales/report"];

/// A run id of its own for each batch (`n`), as runs make them.
fn run_of(n: u64) -> String {
    format!("{n:08x}-0000-4000-8000-{n:012x}")
}

/// What a batch's run did.
#[derive(Clone, Copy, Debug)]
enum Made {
    /// Holds its lease.
    Holding,
    /// Killed at a step of its landing.
    Killed(Step),
    /// Committed, and died before its finished note.
    Committed,
    /// Landed, noted and released.
    Finished,
    /// Gave its lease back without landing (a failed run).
    Failed,
    /// Its lease is not a lease.
    Junk,
    /// Its lease is an empty JSON object: it names no run.
    Empty,
}

/// The batch of `task` whose variables are `dt=<day>`, at its place.
fn place_of(task: &str, day: u64) -> (Place, serde_json::Map<String, serde_json::Value>) {
    let mut vars = serde_json::Map::new();
    vars.insert("dt".into(), format!("2026-01-{:02}", day + 1).into());
    let key = ubunye::state::record_key(task, &vars).expect("plain variables hash");
    let place = Place {
        uc: ubunye::bucket::StoreUrl::parse("s3://bkt/uc").unwrap(),
        task: TaskPath::parse(task).unwrap(),
        key,
    };
    (place, vars)
}

/// The run record a store's run writes, with `status`.
fn record(run: &str, task: &str, status: &str, vars: &serde_json::Map<String, serde_json::Value>) -> Vec<u8> {
    let ended = if status == "running" { serde_json::Value::Null } else { "2026-01-01T00:01:00.000000+00:00".into() };
    let error =
        if status == "error" { serde_json::Value::from("ValueError: bad rows") } else { serde_json::Value::Null };
    serde_json::json!({
        "run_id": run, "task": task, "status": status, "backend": "exec",
        "started_at": "2026-01-01T00:00:00.000000+00:00", "ended_at": ended, "error": error,
        "variables": vars, "outputs": []
    })
    .to_string()
    .into_bytes()
}

/// Make one batch as `made` says, and its run record (or none, or a
/// damaged one).
fn make(w: &World, n: u64, rng: &mut Rng) -> Made {
    let task = TASKS[rng.below(2) as usize];
    let (place, vars) = place_of(task, n);
    let b = World { clock: w.clock.clone(), mem: w.mem.clone(), place, timing: w.timing };
    let run = run_of(n + 1);
    let made = match rng.below(10) {
        0 | 1 => Made::Holding,
        2 => Made::Killed(Step::KeysClaimed),
        3 => Made::Killed(Step::UploadsClaimed),
        4 => Made::Killed(Step::Completed),
        5 => Made::Committed,
        6 => Made::Finished,
        7 => Made::Failed,
        8 => Made::Empty,
        _ => Made::Junk,
    };
    let dir = tempfile::tempdir().unwrap();
    let status = match made {
        Made::Junk | Made::Empty => {
            let body = if matches!(made, Made::Junk) { &b"{not json"[..] } else { &b"{}"[..] };
            b.mem.put(&b.place.lease_key(), body.to_vec()).unwrap();
            "running"
        }
        _ => {
            let lease = b.held(&run);
            let files = b.files(dir.path(), &run, 1 + rng.below(2) as usize);
            match made {
                Made::Holding => "running",
                Made::Killed(step) => {
                    b.killed_at(&lease, &files, step);
                    "running"
                }
                Made::Committed => {
                    b.land(&lease, &files).unwrap();
                    b.mem.delete(&b.place.note_key()).unwrap();
                    "running"
                }
                Made::Finished => {
                    b.land(&lease, &files).unwrap();
                    assert!(lease.release().unwrap());
                    "success"
                }
                _ => {
                    assert!(lease.release().unwrap());
                    "error"
                }
            }
        }
    };
    let key = b.place.record_key(&run);
    match rng.below(6) {
        0 => {}
        1 => {
            b.mem.put(&key, b"{\"run_id\": \"".to_vec()).unwrap();
        }
        _ => {
            b.mem.put(&key, record(&run, task, status, &vars)).unwrap();
        }
    }
    made
}

#[test]
fn list_poll_explain_and_repair_check_agree_and_takeover_does_what_the_check_said() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 1..=16u64 {
        let w = world();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut made = Vec::new();
        for n in 0..10 {
            made.push(make(&w, n, &mut rng));
            // Some leases made before this step outlive their lifetime.
            if rng.below(3) == 0 {
                w.past_timeout();
            }
        }
        let uc = w.place.uc.clone();
        let (_, rows) = look(&*w.mem, &uc, &w.timing).unwrap();
        let polled = Poller::new().look(&*w.mem, &uc, &w.timing).unwrap();
        assert_eq!(polled.batches, rows, "seed {seed}: the dashboard and the list differ ({made:?})");
        let mut allowed = Vec::new();
        for row in &rows {
            seen.insert(row.state);
            let (_, found) = find(&*w.mem, &uc, &row.key, Some(&row.task), &w.timing).unwrap();
            let Found::One(b, read) = found else { panic!("seed {seed}: explain does not find {row:?}") };
            assert_eq!(&b, row, "seed {seed}: explain's row is not the list's");
            let e = explain(&*w.mem, &uc, &b, &read, &w.timing).unwrap();
            assert_eq!((e.batch.state, &e.batch.key, &e.batch.task), (row.state, &row.key, &row.task));
            let take = check(Kind::Takeover, &e).is_ok();
            let finish = check(Kind::Finish, &e).is_ok();
            let dead = matches!(row.state, State::Dead | State::Pending)
                || (row.state == State::Damaged && row.lease_dead == Some(true));
            assert_eq!(take, dead, "seed {seed}: {row:?}");
            let committed = e.plans.first().is_some_and(|p| p.finished.is_some());
            // What explain says comes next is what the check allows.
            let action = e.next.action;
            assert_eq!(take, matches!(action, "takeover" | "finish"), "seed {seed}: next is {action}: {row:?}");
            assert_eq!(finish, action == "finish", "seed {seed}: next is {action}: {row:?}");
            assert_eq!(e.next.command.is_some(), take, "seed {seed}: {:?}: {row:?}", e.next);
            assert!(!finish || (take && committed), "seed {seed}: finish allowed where takeover is not: {row:?}");
            allowed.push((row.clone(), take, finish));
        }
        // The engine acts on every batch, as `leases takeover` would.
        let objects: Arc<dyn Objects> = w.mem.clone();
        for (row, take, finish) in &allowed {
            let place = Place { uc: uc.clone(), task: TaskPath::parse(&row.task).unwrap(), key: row.key.clone() };
            let ended = takeover(objects.clone(), &place, &holder(C), w.clock.clone(), &w.timing).unwrap();
            let took = matches!(ended, TakeoverEnd::TookOver(_) | TakeoverEnd::Completed(..));
            assert_eq!(took, *take, "seed {seed}: the check said {take}, the engine {ended:?}: {row:?}");
            if *finish {
                assert!(matches!(ended, TakeoverEnd::Completed(..)), "seed {seed}: {ended:?}: {row:?}");
            }
        }
        let (_, after) = look(&*w.mem, &uc, &w.timing).unwrap();
        let left: Vec<_> = after
            .iter()
            .filter(|b| matches!(b.state, State::Dead | State::Pending) || b.lease_dead == Some(true))
            .collect();
        assert!(left.is_empty(), "seed {seed}: dead after every takeover: {left:?}");
        seen.extend(after.iter().map(|b| b.state));
    }
    // The random use cases reach every state a store gives.
    for s in [
        State::Damaged,
        State::Live,
        State::Dead,
        State::Pending,
        State::Unreadable,
        State::Failed,
        State::Interrupted,
        State::Finished,
    ] {
        assert!(seen.contains(&s), "no batch was {} in any seed: {seen:?}", s.word());
    }
}
