//! A store's odd batches, each judged as its engine acts on it: the list's
//! state, explain's words and the repair check (`applies`) against what
//! `acquire`/`takeover` do. Each case is one a store can come to: a dead
//! run's record that cannot be read, a lease that is an empty object, a
//! disk's `kept` lease copied into a bucket, a taker that died while it
//! recovered a committed run, a success record without its note, a run
//! that starts while the use case is listed, leases under folders that are
//! not tasks; and what explain and doctor cost in reads.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use ubunye::bucket::{Acquire, Objects, Place};
use ubunye::explain::store::{Found, explain, find};
use ubunye::layout::TaskPath;
use ubunye::repair::store::{TakeoverEnd, takeover};
use ubunye::repair::{Kind, check};
use ubunye::state::State;
use ubunye::state::store::{Poller, look};
use ubunye::sys::Step;

use crate::common;
use common::bucket::*;

fn record(run: &str, status: &str) -> Vec<u8> {
    let mut vars = serde_json::Map::new();
    vars.insert("dt".into(), "2026-01-01".into());
    record_body(run, status, &vars)
}

fn take_over(w: &World) -> TakeoverEnd {
    takeover(w.objects(), &w.place, &holder(C), w.clock.clone(), &w.timing).unwrap()
}

fn took(t: &TakeoverEnd) -> bool {
    matches!(t, TakeoverEnd::TookOver(_) | TakeoverEnd::Completed(..))
}

#[test]
fn a_dead_runs_record_that_cannot_be_read_decides_nothing() {
    let w = world();
    let (lease, _d, files) = w.landing(1);
    w.killed_at(&lease, &files, Step::Completed);
    w.mem.put(&w.place.record_key(A), vec![0xff, 0xfe]).unwrap();
    w.past_timeout();
    let b = w.one();
    assert_eq!(b.state, State::Dead, "{b:?}");
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    let f = d.iter().find(|f| f.kind == "needs-repair").expect("a dead lease needs a repair");
    assert!(f.detail.ends_with("or `ubunye leases takeover s3://bkt/uc:01234567`"), "{}", f.detail);
    let e = w.explained(&b);
    assert!(check(Kind::Takeover, &e).is_ok());
    assert!(took(&take_over(&w)));
    assert!(w.visible().is_empty(), "{:?}", w.visible());
}

#[test]
fn an_empty_lease_is_judged_by_its_age_as_the_engine_judges_it() {
    let w = world();
    w.mem.put(&w.place.lease_key(), b"{}".to_vec()).unwrap();
    w.clock.advance(Duration::from_secs(5));
    let b = w.one();
    assert_eq!(b.state, State::Damaged, "{b:?}");
    assert!(b.note.contains("names no run") && b.note.contains("taken over once"), "{}", b.note);
    let e = w.explained(&b);
    assert!(check(Kind::Takeover, &e).is_err(), "a fresh empty lease is taken over by no engine");
    assert!(check(Kind::Finish, &e).is_err());
    assert!(matches!(take_over(&w), TakeoverEnd::Refused(_)));
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    assert_eq!(d.iter().map(|f| f.kind).collect::<Vec<_>>(), ["not-json"], "named whatever its age, as on disk");
    w.past_timeout();
    let b = w.one();
    assert!(b.note.contains("past the"), "{}", b.note);
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    // The repair named as it runs from any folder: the store's use case
    // and the key's start, as explain names it.
    let f = d.iter().find(|f| f.kind == "needs-repair").expect("a dead empty lease needs a repair");
    assert!(f.detail.ends_with("or `ubunye leases takeover s3://bkt/uc:01234567`"), "{}", f.detail);
    let e = w.explained(&b);
    assert!(check(Kind::Takeover, &e).is_ok());
    assert!(check(Kind::Finish, &e).is_err());
    assert!(took(&take_over(&w)));
}

#[test]
fn a_kept_lease_copied_from_a_disk_is_taken_over_once_dead() {
    let w = world();
    let _a = w.held(A);
    let mut doc: serde_json::Map<String, Value> = serde_json::from_str(&w.lease_body().unwrap()).unwrap();
    doc.insert("kept".into(), true.into());
    w.mem.put(&w.place.lease_key(), Value::Object(doc).to_string().into_bytes()).unwrap();
    w.past_timeout();
    let b = w.one();
    assert_eq!(b.state, State::Dead, "{b:?}");
    assert!(check(Kind::Takeover, &w.explained(&b)).is_ok());
    assert!(took(&take_over(&w)));
}

#[test]
fn a_dead_taker_of_a_committed_run_is_pending_and_finish_keeps_its_files() {
    let w = world();
    let (lease, _d, files) = w.landing(2);
    w.land(&lease, &files).unwrap();
    w.mem.delete(&w.place.note_key()).unwrap();
    w.mem.put(&w.place.record_key(A), record(A, "success")).unwrap();
    w.past_timeout();
    // B dies just after its lease wraps A's (`taking_over`).
    let mem = w.mem.clone();
    w.mem.before("update", move || mem.before("get", || panic!("B killed after taking_over")));
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.take(B))).is_err());
    w.past_timeout();
    let b = w.one();
    assert_eq!((b.state, b.claims), (State::Pending, 2), "{b:?}");
    let e = w.explained(&b);
    assert!(e.plans[0].finished.is_some(), "{e:?}");
    assert!(e.next.steps[0].contains("which had marked its lease done"), "{:?}", e.next);
    assert!(check(Kind::Finish, &e).is_ok());
    let before = w.visible();
    assert!(matches!(take_over(&w), TakeoverEnd::Completed(..)));
    assert_eq!(w.visible(), before, "a committed run's files are the batch");
}

#[test]
fn a_success_record_without_its_note_does_not_say_a_run_is_refused() {
    let w = world();
    w.mem.put(&w.place.record_key(A), record(A, "success")).unwrap();
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    let b = rows[0].clone();
    assert_eq!(b.state, State::Finished);
    let e = w.explained(&b);
    assert!(e.next.steps.iter().any(|n| n.contains("goes ahead")), "{:?}", e.next);
    assert!(!e.next.steps.iter().any(|n| n.contains("is refused")), "{:?}", e.next);
    assert!(matches!(w.take(B), Acquire::Held(..)));
}

/// A run acquires its lease and writes its "running" record before the
/// listing of `list` calls number `at` (counted from 1).
fn run_starts_before_list(w: &World, at: usize, run: &'static str) {
    let (mem, place, clock, timing) = (w.mem.clone(), w.place.clone(), w.clock.clone(), w.timing);
    let start: Box<dyn FnOnce() + Send> = Box::new(move || {
        let objs: Arc<dyn Objects> = mem.clone();
        let Acquire::Held(l, _) = ubunye::bucket::acquire(objs, &place, &holder(run), clock, &timing).unwrap() else {
            panic!("{run} did not start")
        };
        std::mem::forget(l);
        mem.put(&place.record_key(run), record(run, "running")).unwrap();
    });
    fn chain(mem: Arc<ubunye::bucket::Memory>, n: usize, f: Box<dyn FnOnce() + Send>) {
        if n == 1 {
            mem.before("list", f);
        } else {
            let m = mem.clone();
            mem.before("list", move || chain(m, n - 1, f));
        }
    }
    chain(w.mem.clone(), at, start);
}

#[test]
fn a_run_that_starts_while_the_use_case_is_listed_is_never_a_record_without_a_lease() {
    let w = world();
    run_starts_before_list(&w, 2, A);
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert!(rows.iter().all(|r| r.state == State::Live), "{rows:?}");
    w.mem.delete(&w.place.lease_key()).unwrap();
    w.mem.delete(&w.place.record_key(A)).unwrap();
    run_starts_before_list(&w, 2, B);
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    assert!(d.iter().all(|f| f.kind != "running-record"), "{d:?}");
}

#[test]
fn a_lease_under_a_folder_that_is_not_a_task_is_unreadable_never_dead() {
    let w = world();
    let _a = w.held(A);
    let good = w.lease_body().unwrap().into_bytes();
    w.mem.delete(&w.place.lease_key()).unwrap();
    for task in ["a", "a/b/c/d", "../../x"] {
        w.mem.put(&format!("uc/.ubunye/leases/{task}/0123456789abcdef.json"), good.clone()).unwrap();
    }
    w.past_timeout();
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    // A name with `..` is one no engine gives: never read, a problem of the
    // listing (below); the others are rows no engine reads.
    assert_eq!(rows.len(), 2);
    let (_, _, problems) = ubunye::state::store::batches(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert!(problems.len() == 1 && problems[0].path.to_string_lossy().contains("/../../x/"), "{problems:?}");
    for r in &rows {
        assert_eq!(r.state, State::Unreadable, "{r:?}");
        assert!(TaskPath::parse(&r.task).is_err());
        let (_, found) = find(&*w.mem, &w.place.uc, &r.key, Some(&r.task), &w.timing).unwrap();
        let Found::One(row, read) = found else { panic!("{r:?} is not found") };
        assert!(check(Kind::Takeover, &explain(&*w.mem, &w.place.uc, &row, &read, &w.timing).unwrap()).is_err());
    }
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    let kinds: Vec<&str> = d.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, ["misplaced", "unreadable", "unreadable"], "{d:?}");
}

#[test]
fn the_poller_looks_at_a_dead_leases_claims_again_within_half_a_minute() {
    let w = world();
    let (lease, _d, files) = w.landing(1);
    w.killed_at(&lease, &files, Step::Completed);
    w.past_timeout();
    let mut p = Poller::new();
    let first = p.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert!(first.batches[0].note.contains("1 of 1 claimed file(s) present"), "{:?}", first.batches);
    for k in w.visible() {
        w.mem.delete(&k).unwrap();
    }
    w.clock.advance(Duration::from_secs(31));
    let polled = p.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!(polled.batches, rows);
    assert!(rows[0].note.contains("0 of 1 claimed file(s) present"), "{rows:?}");
}

#[test]
fn explain_reads_its_task_only_and_doctor_reads_each_object_once() {
    let w = world();
    let tasks = ["demo/sales/ingest", "demo/sales/report"];
    let mut first = None;
    for n in 0..40u64 {
        let task = tasks[(n % 2) as usize];
        let mut vars = serde_json::Map::new();
        vars.insert("dt".into(), format!("d{n}").into());
        let key = ubunye::state::record_key(task, &vars).unwrap();
        let place = Place { uc: w.place.uc.clone(), task: TaskPath::parse(task).unwrap(), key: key.clone() };
        let note = format!("{{\"run_id\":\"r{n}-4\",\"finished_at\":\"2026-01-01T00:05:00Z\"}}");
        w.mem.put(&place.note_key(), note.into_bytes()).unwrap();
        for r in 0..5 {
            let run = format!("r{n}-{r}");
            let body = serde_json::json!({"run_id": run, "task": task, "status": "success",
                "started_at": format!("2026-01-01T00:0{r}:00+00:00"), "variables": vars});
            w.mem.put(&place.record_key(&run), body.to_string().into_bytes()).unwrap();
        }
        first.get_or_insert((task, key));
    }
    let (task, key) = first.unwrap();
    let gets = || w.mem.calls("get");
    let g0 = gets();
    let (_, found) = find(&*w.mem, &w.place.uc, &key, Some(task), &w.timing).unwrap();
    let Found::One(row, read) = found else { panic!("{key} is not found") };
    assert_eq!(gets() - g0, 20 * 6, "explain reads its task's objects, once each");
    // Named by its key alone (as `<url>:<key>`), its task is told by one
    // listing of the leases and notes: the same reads, the same batch.
    let g0 = gets();
    let (_, found) = find(&*w.mem, &w.place.uc, &key[..8], None, &w.timing).unwrap();
    assert!(matches!(&found, Found::One(r, _) if *r == row), "{found:?}");
    assert_eq!(gets() - g0, 20 * 6, "a key's task is read, not every task");
    let g = gets();
    let e = explain(&*w.mem, &w.place.uc, &row, &read, &w.timing).unwrap();
    assert_eq!(gets() - g, 0, "what the look read is not read again");
    assert_eq!(e.batch.records[0].status.as_deref(), Some("success"));
    let g1 = gets();
    ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!(gets() - g1, 40 * 6, "doctor reads each object once");
}

#[test]
fn a_batch_known_by_its_records_alone_is_found_by_its_runs_id() {
    let w = world();
    // A failed run's record (its lease handed back), and a record whose
    // variables are masked: its batch's key cannot be told.
    w.mem.put(&w.place.record_key(A), record(A, "error")).unwrap();
    let masked = String::from_utf8(record(B, "interrupted")).unwrap().replace("2026-01-01", "***");
    w.mem.put(&w.place.record_key(B), masked.into_bytes()).unwrap();
    let mut vars = serde_json::Map::new();
    vars.insert("dt".into(), "2026-01-01".into());
    let key = ubunye::state::record_key("demo/sales/ingest", &vars).unwrap();
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    let states: Vec<(&str, State)> = rows.iter().map(|r| (r.key.as_str(), r.state)).collect();
    assert_eq!(states, [(key.as_str(), State::Failed), ("????????????????", State::Interrupted)]);
    for (run, key) in [(&A[..8], key.as_str()), (B, "????????????????")] {
        let (_, found) = find(&*w.mem, &w.place.uc, run, None, &w.timing).unwrap();
        let Found::One(row, _) = found else { panic!("run {run} names no one batch: {found:?}") };
        assert_eq!(row.key, key);
    }
    // A key prefix comes first; a query that is neither names nothing.
    let (_, found) = find(&*w.mem, &w.place.uc, &key[..6], None, &w.timing).unwrap();
    assert!(matches!(found, Found::One(ref row, _) if row.key == key));
    let (_, found) = find(&*w.mem, &w.place.uc, "ffff", None, &w.timing).unwrap();
    assert!(matches!(found, Found::None(2)), "{found:?}");
}

#[test]
fn an_upload_under_nested_outputs_is_one_stray_and_the_leases_are_read_again_once() {
    let w = world();
    for (run, location) in [(A, "s3://bkt/lake"), (B, "s3://bkt/lake/r3")] {
        let mut v: Value = serde_json::from_slice(&record(run, "success")).unwrap();
        v["outputs"] = serde_json::json!([{ "name": "ev", "location": location }]);
        w.mem.put(&w.place.record_key(run), v.to_string().into_bytes()).unwrap();
    }
    let _live = w.held(C);
    w.mem.start_uploads(&["lake/r3/stray.bin".into()]).unwrap();
    let gets = w.mem.calls("get");
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    let strays: Vec<_> = d.iter().filter(|f| f.kind == "stray-upload").collect();
    assert_eq!(strays.len(), 1, "{d:?}");
    // The lease, the two records, then the one lease read again.
    assert_eq!(w.mem.calls("get") - gets, 4);
}

#[test]
fn a_batchs_audit_entries_are_its_own_in_order_and_oversized_ones_are_passed_over() {
    use ubunye::bucket::{audit, repairs_of};
    let w = world();
    let (uc, task, key) = (&w.place.uc, "demo/sales/ingest", w.place.key.as_str());
    for n in 0..3 {
        let entry = serde_json::json!({"task": task, "key": key, "n": n});
        audit(&*w.mem, uc, task, key, &entry).unwrap();
        w.clock.advance(Duration::from_millis(1));
    }
    // Another batch's entry, and an object no repair wrote.
    audit(&*w.mem, uc, task, "ffffffffffffffff", &serde_json::json!({"task": task, "key": "ffffffffffffffff"}))
        .unwrap();
    let big = format!("{{\"task\": \"{task}\", \"key\": \"{key}\", \"pad\": \"{}\"}}", "x".repeat(70_000));
    w.mem.put(&format!("uc/.ubunye/repairs/{task}/{key}/0-big.json"), big.into_bytes()).unwrap();
    let gets = w.mem.calls("get");
    let got = repairs_of(&*w.mem, uc, task, key).unwrap();
    assert_eq!(got.iter().map(|v| v["n"].as_u64()).collect::<Vec<_>>(), [Some(0), Some(1), Some(2)]);
    assert_eq!(w.mem.calls("get") - gets, 3, "only the batch's own entries are read");
}

#[test]
fn a_census_again_reads_only_what_changed() {
    let w = world();
    let (lease, _d, files) = w.landing(1);
    w.killed_at(&lease, &files, Step::Completed);
    w.mem.put(&w.place.record_key(A), record(A, "running")).unwrap();
    w.past_timeout();
    let mut p = Poller::new();
    let first = p.census(&*w.mem, &w.place.uc, &w.timing, "s3://bkt/uc", false);
    assert_eq!(first.tasks["demo/sales/ingest"].states[State::Dead.rank()], 1, "{first:?}");
    let gets = w.mem.calls("get");
    let again = p.census(&*w.mem, &w.place.uc, &w.timing, "s3://bkt/uc", false);
    assert_eq!(w.mem.calls("get") - gets, 0, "nothing changed, nothing read");
    assert_eq!(again.tasks["demo/sales/ingest"].states, first.tasks["demo/sales/ingest"].states);
}

/// A finished note that lists no outputs makes no batch finished, on disk
/// (the peer's rule) as in a store: the list, explain and a run agree.
#[test]
fn a_note_without_outputs_finishes_nothing_and_a_run_goes_ahead() {
    for note in [
        serde_json::json!({"run_id": A, "task": "demo/sales/ingest", "finished_at": "2026-01-01T00:01:00Z"}),
        serde_json::json!({"run_id": A, "task": "demo/sales/ingest", "finished_at": "2026-01-01T00:01:00Z", "outputs": {}}),
    ] {
        let w = world();
        w.mem.put(&w.place.note_key(), note.to_string().into_bytes()).unwrap();
        let b = w.one();
        assert!(b.note.contains("a new run of it goes ahead"), "{note}: listed {b:?}");
        let e = w.explained(&b);
        assert!(e.next.steps.iter().any(|n| n.contains("a new run of it goes ahead")), "{:?}", e.next);
        let Acquire::Held(lease, _) = w.take(B) else {
            panic!("{note}: a run was refused by a note that finishes nothing")
        };
        // It lands, and its note replaces the one that was there.
        let d = tempfile::tempdir().unwrap();
        let files = w.files(d.path(), B, 1);
        w.land(&lease, &files).unwrap();
        assert!(lease.release().unwrap());
        let after: Value = serde_json::from_slice(&w.mem.get(&w.place.note_key()).unwrap().unwrap().body).unwrap();
        assert_eq!(after["run_id"], B, "{after}");
        let b = w.one();
        assert_eq!((b.state, b.run_id.as_deref()), (State::Finished, Some(B)), "{b:?}");
    }
}

/// What the look found of a dead run's claims (a HEAD of each) is what
/// explain tells: it HEADs none of them again.
#[test]
fn explain_heads_no_claim_the_look_looked_at() {
    let w = world();
    let (lease, _d, files) = w.landing(2);
    w.killed_at(&lease, &files, Step::Completed);
    w.past_timeout();
    let (_, found) = find(&*w.mem, &w.place.uc, &w.place.key, None, &w.timing).unwrap();
    let Found::One(row, read) = found else { panic!("not found") };
    let heads = w.mem.calls("head");
    let e = explain(&*w.mem, &w.place.uc, &row, &read, &w.timing).unwrap();
    assert_eq!(w.mem.calls("head"), heads, "explain HEADed claims the look had");
    assert_eq!(e.plans[0].present().count(), 2, "{:?}", e.plans);
}

/// A live lease not written for three of its holder's saves (each the
/// lifetime over six, at most the heartbeat) is `stalled`, as a lease on
/// disk is after three missed heartbeats; it stays live until its lifetime
/// has passed, and a save clears the flag.
#[test]
fn a_live_lease_not_written_for_three_saves_is_stalled() {
    use ubunye::state::Flag;
    let mut w = world();
    // A lifetime of a minute: saved every 10 s, stalled past 30 s and the
    // second the store's times are told to.
    w.timing.store_ttl = Duration::from_secs(60);
    let a = w.held(A);
    let flags = |w: &World| {
        let (_, b, _) = ubunye::state::store::batches(&*w.mem, &w.place.uc, &w.timing).unwrap();
        (b[0].state, b[0].flags.contains(&Flag::Stalled))
    };
    w.clock.advance(Duration::from_secs(31));
    assert_eq!(flags(&w), (State::Live, false));
    w.clock.advance(Duration::from_secs(1));
    assert_eq!(flags(&w), (State::Live, true));
    // doctor says it, as a folder's doctor does.
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    assert!(d.iter().any(|f| f.kind == "stalled" && f.key.as_deref() == Some(w.place.key.as_str())), "{d:?}");
    // A lease of a second: never stalled, as the store cannot tell it.
    let mut short = world();
    short.timing.store_ttl = Duration::from_secs(1);
    let _s = short.held(A);
    short.clock.advance(Duration::from_secs(1));
    assert_eq!(flags(&short), (State::Live, false));
    a.save(|_| {}).unwrap();
    assert_eq!(flags(&w), (State::Live, false));
    w.clock.advance(Duration::from_secs(61));
    assert_eq!(flags(&w), (State::Dead, false));
}

/// Objects no engine reads (a name a store's engine never gives, a place
/// where no lease or record belongs) are said by the listing, doctor, the
/// census and `runs`, each naming the object, as a folder's scan says such
/// files; nothing is judged from them and the batch beside them is listed.
#[test]
fn objects_no_engine_reads_are_said_never_passed_over() {
    let w = world();
    let _a = w.held(A);
    let odd = [
        "uc/.ubunye/leases/demo/sales/ingest/ZZ.json",
        "uc/.ubunye/leases/demo/sales/ingest/0123456789abcdef.done-x",
        "uc/.ubunye/leases/x.json",
        "uc/.ubunye/lineage/x.json",
        "uc/.ubunye/lineage/demo/sales/r.json",
        // Names no engine gives, which a GET would send as other names.
        "uc/.ubunye/leases/demo//ingest/0123456789abcdef.json",
        "uc/.ubunye/leases/demo/sales/ingest/\u{1b}[31m.json",
        "uc/.ubunye/lineage/demo/sales/ingest/../r.json",
        // A folder marker that is not empty is an object like any other.
        "uc/.ubunye/leases/demo/sales/ingest/1111111111111111.json/",
    ];
    for k in odd {
        w.mem.put(k, b"{}".to_vec()).unwrap();
    }
    // Not a .json at a record's depth, and a folder marker (what a
    // console's "create folder" makes): left alone, as a folder's are.
    w.mem.put("uc/.ubunye/lineage/README", b"notes".to_vec()).unwrap();
    w.mem.put("uc/.ubunye/leases/demo/sales/ingest/", Vec::new()).unwrap();
    let said = |paths: Vec<String>| {
        let mut p = paths;
        p.sort();
        let mut want: Vec<String> = odd.iter().map(|k| format!("s3://bkt/{k}")).collect();
        want.sort();
        assert_eq!(p, want);
    };
    let gets = w.mem.calls("get");
    let (_, batches, problems) = ubunye::state::store::batches(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!(batches.len(), 1);
    assert_eq!(w.mem.calls("get") - gets, 1, "only the lease is read");
    assert!(problems.iter().all(|p| p.misplaced && !p.why.is_empty()), "{problems:?}");
    // What is odd in a name is named, escaped.
    let esc = problems.iter().find(|p| p.path.to_string_lossy().contains('\u{1b}')).unwrap();
    assert!(esc.why.contains("\\u{1b}") && esc.why.contains("no engine reads it"), "{esc:?}");
    // What is in a lease folder is not called a run record.
    for p in &problems {
        let in_leases = p.path.to_string_lossy().contains("/.ubunye/leases/");
        assert_eq!(p.kind == ubunye::state::FileKind::Record, !in_leases, "{p:?}");
    }
    said(problems.iter().map(|p| p.path.to_string_lossy().into_owned()).collect());
    let d = ubunye::doctor::store::look(&*w.mem, &w.place.uc, &w.timing).unwrap().findings;
    said(d.iter().filter(|f| f.kind == "misplaced").map(|f| f.path.to_string_lossy().into_owned()).collect());
    let c = ubunye::census::store::count(&*w.mem, &w.place.uc, &w.timing, "uc", false);
    assert_eq!((c.scan_errors, c.findings.get("misplaced").copied()), (9, Some(9)), "{c:?}");
    let (_, unread) = ubunye::state::store::records(&*w.mem, &w.place.uc).unwrap();
    let lineage: Vec<&str> = odd.iter().copied().filter(|k| k.contains("/lineage/")).collect();
    assert_eq!(unread.len(), lineage.len(), "{unread:?}");
}

/// A lease whose save counter is the largest a JSON integer the engine reads
/// can hold is taken over, and saved, without overflowing (a debug build
/// panicked, and no run could ever recover the batch): the counter wraps,
/// and so still changes with each save (what makes each save's ETag new).
#[test]
fn a_save_counter_at_its_largest_is_taken_over() {
    let w = world();
    let _a = w.held(A);
    let mut doc: Value = serde_json::from_str(&w.lease_body().unwrap()).unwrap();
    doc["saves"] = Value::from(u64::MAX);
    w.mem.put(&w.place.lease_key(), serde_json::to_vec(&doc).unwrap()).unwrap();
    w.past_timeout();
    let Acquire::Held(b, Some(_)) = w.take(B) else { panic!("no takeover") };
    b.save(|_| {}).unwrap();
    let saved: Value = serde_json::from_str(&w.lease_body().unwrap()).unwrap();
    // Wrapped at the takeover (0), then its recovery's end and this save.
    assert_eq!(saved["saves"], Value::from(2), "{saved}");
}

/// `--task` reads only the tasks it matches, as a folder's scan reads only
/// their folders: another task's leases and records are listed, never read.
#[test]
fn a_listing_by_task_reads_only_that_tasks_objects() {
    let w = world();
    let _a = w.held(A);
    let other = Place { task: TaskPath::parse("demo/sales/report").unwrap(), ..w.place.clone() };
    let _b = ubunye::bucket::acquire(w.objects(), &other, &holder(B), w.clock.clone(), &w.timing);
    w.mem.put(&w.place.record_key(A), record(A, "running")).unwrap();
    let gets = w.mem.calls("get");
    let (_, batches, _) =
        ubunye::state::store::batches_of(&*w.mem, &w.place.uc, &w.timing, Some("demo/sales/rep")).unwrap();
    assert_eq!(batches.iter().map(|b| b.task.as_str()).collect::<Vec<_>>(), ["demo/sales/report"]);
    assert_eq!(w.mem.calls("get") - gets, 1, "only the matching task's lease is read");
    let (_, all, _) = ubunye::state::store::batches_of(&*w.mem, &w.place.uc, &w.timing, None).unwrap();
    assert_eq!(all.len(), 2);
}

/// A repair acts on no batch that changed while its plan was shown: on a
/// store as on disk, the batch is read again and its state and holder must
/// be the plan's; another repair that got there first, or the batch gone,
/// leave this one having done nothing (said, and how to look again).
#[test]
fn a_repair_of_a_batch_changed_since_its_plan_does_nothing() {
    use ubunye::repair::store::execute;
    let w = world();
    let (lease, _d, files) = w.landing(1);
    w.killed_at(&lease, &files, Step::Completed);
    w.past_timeout();
    let plan = check(Kind::Takeover, &w.explained(&w.one())).unwrap();
    // As planned: it acts.
    let again = |run: &str| execute(w.objects(), &w.place.uc, &plan, &holder(run), w.clock.clone(), &w.timing).unwrap();
    // Another run took the batch since the plan was shown (it is live now).
    let other = w.take(B);
    assert!(matches!(other, Acquire::Held(..)), "the next run takes the dead lease over");
    let before = w.mem.snapshot();
    match again(C) {
        TakeoverEnd::Changed(why) => {
            assert!(why.contains("changed since the plan was shown (it is live now, held by run bbbbbbbb)"), "{why}");
            assert!(why.contains("Look again with `ubunye leases explain s3://"), "{why}");
        }
        other => panic!("acted on a batch another run holds: {other:?}"),
    }
    assert!(w.mem.snapshot() == before, "nothing was written");
    // Gone: released by its holder.
    let Acquire::Held(held, _) = other else { unreachable!() };
    held.release().unwrap();
    match again(C) {
        TakeoverEnd::Changed(why) => assert!(why.contains("(it is not there now)"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A fresh dead run, planned and left alone: the repair acts.
    let (lease, _d, files) = w.landing(1);
    w.killed_at(&lease, &files, Step::Completed);
    w.past_timeout();
    let plan2 = check(Kind::Takeover, &w.explained(&w.one())).unwrap();
    let ended = execute(w.objects(), &w.place.uc, &plan2, &holder(C), w.clock.clone(), &w.timing).unwrap();
    assert!(took(&ended), "{ended:?}");
}

/// A prefix no run has used (mistyped, or a bucket's root) is said so by
/// every reading, never read as a use case with nothing wrong in it; a use
/// case whose objects are all released or never read is one still.
#[test]
fn a_prefix_no_run_has_used_is_not_a_use_case() {
    use ubunye::bucket::{ErrorKind, StoreUrl};
    let w = world();
    for url in ["s3://bkt/uC", "s3://bkt"] {
        let typo = StoreUrl::parse(url).unwrap();
        let kind = |r: Result<(), ubunye::bucket::StoreError>| r.map_err(|e| e.kind);
        assert_eq!(kind(look(&*w.mem, &typo, &w.timing).map(|_| ())), Err(ErrorKind::NotAUseCase), "{url}");
        assert_eq!(kind(ubunye::state::store::records(&*w.mem, &typo).map(|_| ())), Err(ErrorKind::NotAUseCase));
        assert_eq!(
            kind(ubunye::doctor::store::look(&*w.mem, &typo, &w.timing).map(|_| ())),
            Err(ErrorKind::NotAUseCase)
        );
        assert_eq!(kind(Poller::new().look(&*w.mem, &typo, &w.timing).map(|_| ())), Err(ErrorKind::NotAUseCase));
    }
    // The world's use case holds only a folder marker under .ubunye/: used.
    assert!(look(&*w.mem, &w.place.uc, &w.timing).unwrap().1.is_empty());
    let a = w.held(A);
    a.release().unwrap();
    assert!(look(&*w.mem, &w.place.uc, &w.timing).unwrap().1.is_empty());
}
