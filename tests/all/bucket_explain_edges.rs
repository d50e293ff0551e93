//! A store's batch, explained, checked and taken over, in states the random
//! trees of bucket_agreement do not make: a taker that died while it took
//! over an uncommitted run, a committed `--rerun` whose replaced files are
//! half removed, a lease whose run id is empty, a lease with claims under two
//! outputs, a lease and a note that disagree, and a run that committed over
//! a note that lists no outputs. For each: looking writes nothing, the repair
//! check allows exactly what the engine's takeover then does, and the plan
//! (`plans[0]`) says what the takeover does (the run, finished or not, the
//! note written, the record marked, the objects deleted).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use ubunye::bucket::{Acquire, Holder, Lease, Objects, acquire};
use ubunye::explain::Explanation;
use ubunye::repair::store::{TakeoverEnd, takeover};
use ubunye::repair::{Kind, check};
use ubunye::state::State;
use ubunye::sys::{Hook, Step};

use crate::common;
use common::bucket::*;

/// The world, its batch keyed as a run keys it (the hash of its variables),
/// so that its records are filed to it by their variables.
fn keyed(vars: &serde_json::Map<String, Value>) -> World {
    let mut w = world();
    w.place.key = ubunye::state::record_key("demo/sales/ingest", vars).expect("plain variables hash");
    w
}

fn vars() -> serde_json::Map<String, Value> {
    let mut v = serde_json::Map::new();
    v.insert("dt".into(), "2026-01-01".into());
    v
}

/// Every call that changes the store.
fn writes(w: &World) -> usize {
    ["create", "update", "put", "delete_if", "delete", "start_uploads", "send_parts", "complete_new", "abort"]
        .iter()
        .map(|op| w.mem.calls(op))
        .sum()
}

/// Look (list, find, explain, both checks), then take over as
/// `leases takeover` does: looking writes nothing, the check allows exactly
/// what the takeover does, and the plan says what it did. Returns the
/// explanation and how the takeover ended.
fn look_then_take_over(w: &World, case: &str) -> (Explanation, TakeoverEnd) {
    let before = writes(w);
    let b = w.one();
    let e = w.explained(&b);
    let take = check(Kind::Takeover, &e);
    let finish = check(Kind::Finish, &e);
    assert_eq!(writes(w) - before, 0, "{case}: looking wrote to the store");
    let case = &format!("{case} (explained {}, next: {})", e.batch.state.word(), e.next.action);
    let ended = takeover(w.objects(), &w.place, &holder(C), w.clock.clone(), &w.timing).unwrap();
    let r = match &ended {
        TakeoverEnd::TookOver(r) | TakeoverEnd::Completed(r, _) => Some(r.clone()),
        _ => None,
    };
    assert_eq!(take.is_ok(), r.is_some(), "{case}: the check said {take:?}, the takeover {ended:?}");
    if finish.is_ok() {
        assert!(matches!(ended, TakeoverEnd::Completed(..)), "{case}: finish allowed, the takeover {ended:?}");
    }
    let Some(r) = r else { return (e, ended) };
    let p = &e.plans[0];
    assert_eq!(p.run_id, r.run_id, "{case}: the plan recovers another run than the takeover did");
    assert_eq!(p.finished.is_some(), r.finished, "{case}: finished? plan {:?}, takeover {r:?}", p.finished);
    assert_eq!(
        p.write_note.is_some(),
        r.note_written,
        "{case}: the plan's note to write is {:?}, the takeover wrote one: {}",
        p.write_note,
        r.note_written
    );
    assert_eq!(
        p.mark_record.is_some(),
        r.record_marked,
        "{case}: the plan marks the record {:?}, the takeover marked it: {}",
        p.mark_record,
        r.record_marked
    );
    let planned: BTreeSet<&str> = p.present().map(|f| f.claim.as_str()).collect();
    let removed: BTreeSet<&str> = r.removed.iter().map(String::as_str).collect();
    assert_eq!(planned, removed, "{case}: the plan deletes {planned:?}, the takeover deleted {removed:?}");
    (e, ended)
}

/// A run killed at `step` of its landing, its record saying running.
fn killed(w: &World, step: Step) {
    let (lease, _d, files) = w.landing(2);
    w.mem.put(&w.place.record_key(A), record_body(A, "running", &vars())).unwrap();
    w.killed_at(&lease, &files, step);
}

/// A fourth run, the taker that dies.
const D: &str = "dddddddd-dddd-4ddd-8ddd-dddddddddddd";

/// Run D dies just after its lease wraps the dead one (`taking_over`).
fn taker_dies(w: &World) {
    w.past_timeout();
    let mem = w.mem.clone();
    w.mem.before("update", move || mem.before("get", || panic!("D killed after taking_over")));
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.take(D))).is_err());
    assert!(w.lease_body().unwrap().contains("taking_over"));
    w.past_timeout();
}

#[test]
fn a_dead_run_killed_at_each_step_is_planned_as_taken_over() {
    for step in [Step::KeysClaimed, Step::UploadsClaimed, Step::Completed] {
        let w = keyed(&vars());
        killed(&w, step);
        w.past_timeout();
        let (_, ended) = look_then_take_over(&w, &format!("killed at {step:?}"));
        assert!(matches!(ended, TakeoverEnd::TookOver(_)), "{ended:?}");
        assert!(w.visible().is_empty(), "{:?}", w.visible());
    }
}

#[test]
fn a_dead_taker_of_an_uncommitted_run_is_planned_as_its_targets_takeover() {
    let w = keyed(&vars());
    killed(&w, Step::Completed);
    taker_dies(&w);
    let (e, _) = look_then_take_over(&w, "dead taker of an uncommitted run");
    assert_eq!(e.plans[0].run_id, A);
    assert!(w.visible().is_empty(), "{:?}", w.visible());
}

/// A batch whose variables hold a secret: its records are written with the
/// secret redacted (`***`), so their variables hash to no key, and they are
/// filed to a batch by the run a lease names. A taker that died names itself
/// only; the run it was taking over is the one whose record the next
/// takeover marks interrupted, and the plan must say so.
#[test]
fn a_dead_taker_of_a_run_with_a_secret_variable_plans_the_record_it_marks() {
    let w = keyed(&vars());
    let mut redacted = vars();
    redacted.insert("token".into(), ubunye::secrets::REDACTED.into());
    let (lease, _d, files) = w.landing(1);
    w.mem.put(&w.place.record_key(A), record_body(A, "running", &redacted)).unwrap();
    w.killed_at(&lease, &files, Step::Completed);
    // Before the taker died, the plan marks the record (the lease names A).
    w.past_timeout();
    let e = w.explained(&w.one());
    assert!(e.plans[0].mark_record.is_some(), "the holder's record is its batch's: {:?}", e.plans[0]);
    // The taker dies; the plan should still mark the record of the run it was
    // taking over, as the takeover does.
    taker_dies(&w);
    look_then_take_over(&w, "dead taker of a run whose record has a redacted variable");
}

/// Run B, a `--rerun` of A's finished batch, committed and died while it
/// removed A's files: `left` of A's two files are still there, and A's note
/// is still there when `keep_a_note` (B died before its note replaced it).
fn rerun_committed(w: &World, keep_a_note: bool, left: usize) {
    let (a, _d, files) = w.landing(2);
    w.land(&a, &files).unwrap();
    assert!(a.release().unwrap());
    let a_files = w.visible();
    let a_note = w.mem.get(&w.place.note_key()).unwrap().unwrap().body;
    let rerun = Holder { rerun: true, ..holder(B) };
    let b: Arc<Lease> = match acquire(w.objects(), &w.place, &rerun, w.clock.clone(), &w.timing).unwrap() {
        Acquire::Held(l, _) => l,
        _ => panic!("the rerun is refused"),
    };
    let d = tempfile::tempdir().unwrap();
    let bf = w.files(d.path(), B, 1);
    w.land(&b, &bf).unwrap();
    // Died before its note (A's note put back) or after it; A's files put
    // back as far as `left`.
    if keep_a_note {
        w.mem.put(&w.place.note_key(), a_note).unwrap();
    }
    for f in a_files.iter().take(left) {
        w.mem.put(f, b"a's row\n".to_vec()).unwrap();
    }
    w.mem.put(&w.place.record_key(B), record_body(B, "running", &vars())).unwrap();
}

#[test]
fn a_dead_committed_rerun_with_its_replaced_files_half_removed_is_planned_as_finished() {
    for (note_of_a, left) in [(false, 1), (true, 1), (true, 2), (false, 0)] {
        let w = keyed(&vars());
        rerun_committed(&w, note_of_a, left);
        w.past_timeout();
        let case = format!("committed rerun, A's note back: {note_of_a}, A's files left: {left}");
        let (e, ended) = look_then_take_over(&w, &case);
        assert_eq!(e.batch.state, State::Pending, "{case}");
        assert!(matches!(ended, TakeoverEnd::Completed(..)), "{case}: {ended:?}");
        let note: Value = serde_json::from_slice(&w.mem.get(&w.place.note_key()).unwrap().unwrap().body).unwrap();
        assert_eq!(note["run_id"], B, "{case}");
        assert_eq!(w.visible().len(), 1, "{case}: only B's file is left: {:?}", w.visible());
    }
}

#[test]
fn a_dead_taker_of_a_committed_rerun_with_its_replaced_files_half_removed_is_planned_as_its_target() {
    let w = keyed(&vars());
    rerun_committed(&w, true, 1);
    taker_dies(&w);
    let (e, ended) = look_then_take_over(&w, "dead taker of a committed rerun");
    assert_eq!(e.plans[0].run_id, B);
    assert!(matches!(ended, TakeoverEnd::Completed(..)), "{ended:?}");
    assert_eq!(w.visible().len(), 1, "{:?}", w.visible());
}

#[test]
fn a_dead_lease_whose_run_id_is_empty_is_planned_as_taken_over() {
    let w = keyed(&vars());
    let _a = w.held(A);
    let mut doc: serde_json::Map<String, Value> = serde_json::from_str(&w.lease_body().unwrap()).unwrap();
    doc.insert("run_id".into(), "".into());
    w.mem.put(&w.place.lease_key(), Value::Object(doc).to_string().into_bytes()).unwrap();
    w.past_timeout();
    look_then_take_over(&w, "empty run id");
    assert!(w.lease_body().is_none());
}

#[test]
fn a_dead_lease_with_claims_under_two_outputs_is_planned_claim_by_claim() {
    let w = keyed(&vars());
    let a = w.held(A);
    w.mem.put(&w.place.record_key(A), record_body(A, "running", &vars())).unwrap();
    let d = tempfile::tempdir().unwrap();
    let two = ubunye::bucket::StoreUrl::parse("s3://bkt/lake/two").unwrap();
    let mut files = w.files(&d.path().join("ev"), A, 2);
    std::fs::create_dir_all(d.path().join("two")).unwrap();
    std::fs::write(d.path().join("two/x.csv"), b"x\n").unwrap();
    files.extend(ubunye::bucket::plan("two", &d.path().join("two"), &two, A).unwrap());
    let outputs = [("ev".to_string(), out()), ("two".to_string(), two)];
    // Killed once its uploads are completed; one of them is gone since.
    let hook = Hook(Some(Arc::new(|s| {
        if s == Step::Completed {
            panic!("killed at {s:?}");
        }
    })));
    let run = std::panic::AssertUnwindSafe(|| {
        let _ = ubunye::bucket::land(&*w.mem, &a, &outputs, &files, &hook, &w.landing_timing());
    });
    assert!(std::panic::catch_unwind(run).is_err());
    let gone = w.mem.list("lake/two/").unwrap()[0].key.clone();
    w.mem.delete(&gone).unwrap();
    w.past_timeout();
    let (e, _) = look_then_take_over(&w, "claims under two outputs");
    assert_eq!(e.plans[0].remove.len(), 3, "{:?}", e.plans[0].remove);
    assert!(w.visible().is_empty(), "{:?}", w.visible());
}

/// Run A committed and wrote its note, then died before it released; its
/// lease is as it was before its done mark (put back by a restore): the
/// lease says it did not commit, its note says it finished.
#[test]
fn a_lease_its_own_note_calls_finished_is_planned_as_the_takeover_finds_it() {
    let w = keyed(&vars());
    w.mem.put(&w.place.record_key(A), record_body(A, "running", &vars())).unwrap();
    w.noted_but_lease_not_done();
    w.past_timeout();
    let (_, ended) = look_then_take_over(&w, "a lease not done beside its own note");
    assert!(matches!(ended, TakeoverEnd::Completed(..)), "{ended:?}");
    assert_eq!(w.visible().len(), 2, "its files are the batch");
}

/// Run A's note write fails after its commit (the note's update is the one
/// after the done mark); A then dies holding its lease.
fn committed_without_its_note(w: &World, lease: &Lease, files: &[ubunye::bucket::Planned]) {
    let mem = w.mem.clone();
    w.mem.before("complete_new", move || {
        let m2 = mem.clone();
        mem.before("update", move || {
            let m3 = m2.clone();
            m2.before("update", move || m3.fail_next("update"));
        });
    });
    let got = w.land(lease, files);
    assert!(matches!(got, Err(ubunye::bucket::LandError::Committed(_))), "{got:?}");
}

/// The notes that list no outputs, so refuse no run: with a run id, without
/// one, and with a null one.
fn notes_without_outputs() -> [Value; 3] {
    [
        serde_json::json!({"run_id": C, "task": "demo/sales/ingest", "finished_at": "2026-01-01T00:01:00Z", "outputs": {}}),
        serde_json::json!({"task": "demo/sales/ingest", "finished_at": "2026-01-01T00:01:00Z", "outputs": {}}),
        serde_json::json!({"run_id": null, "task": "demo/sales/ingest", "finished_at": "2026-01-01T00:01:00Z"}),
    ]
}

/// Run A went ahead over `old` (a note that lists no outputs), committed,
/// and died before its note replaced that one.
fn committed_over(old: &Value) -> World {
    let w = keyed(&vars());
    w.mem.put(&w.place.note_key(), old.to_string().into_bytes()).unwrap();
    let (a, _d, files) = w.landing(1);
    committed_without_its_note(&w, &a, &files);
    w.past_timeout();
    w
}

/// The next takeover completes A's commit: afterwards the note names A, and
/// a plain run of the batch is refused (A's file is the batch).
#[test]
fn a_run_that_committed_over_a_note_without_outputs_gets_its_note() {
    let mut wrong = Vec::new();
    for old in notes_without_outputs() {
        let w = committed_over(&old);
        let ended = takeover(w.objects(), &w.place, &holder(C), w.clock.clone(), &w.timing).unwrap();
        let note: Value = serde_json::from_slice(&w.mem.get(&w.place.note_key()).unwrap().unwrap().body).unwrap();
        let again = matches!(w.take(B), Acquire::Held(..));
        if note["run_id"] != A || again {
            wrong.push(format!(
                "over {old}: the takeover {ended:?} left the note {note}; a plain run goes ahead over A's file {:?}: {again}",
                w.visible()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The plan of that takeover says what it does (its note written), and
/// `leases finish`, which the check allows, finishes it.
#[test]
fn a_run_that_committed_over_a_note_without_outputs_is_planned_as_the_takeover_does() {
    for old in notes_without_outputs() {
        let w = committed_over(&old);
        let (e, _) = look_then_take_over(&w, &format!("committed over the note {old}"));
        assert!(e.plans[0].write_note.is_some(), "{old}: {:?}", e.plans[0]);
    }
}

/// A run that takes over a dead, uncommitted run beside a finished note
/// that cannot be read: the dead run's files are taken back (it did not
/// finish), so the batch must not be answered "finished by" that run: a
/// `--resume` run skips a batch so answered (`[SKIP] ... finished it`) and
/// exits 0, while nothing of the batch is left and no note can be read.
/// A note that cannot be read refuses a run as unreadable.
#[test]
fn a_dead_uncommitted_run_beside_a_note_that_cannot_be_read_is_not_said_to_have_finished_it() {
    for step in [Step::Completed, Step::UploadsClaimed] {
        let w = keyed(&vars());
        killed(&w, step);
        w.mem.put(&w.place.note_key(), b"{\"run_id\": \"".to_vec()).unwrap();
        w.past_timeout();
        match w.take(B) {
            Acquire::Recovered { recovered, refused: ubunye::bucket::Refused::Finished { run_id: finished_by } } => {
                panic!(
                    "killed at {step:?}: the batch is answered finished by run {finished_by}, whose files the takeover just took back ({recovered:?}); left: {:?}",
                    w.visible()
                )
            }
            // Refused as unreadable; what the takeover did is told beside it.
            Acquire::Recovered { recovered, refused: ubunye::bucket::Refused::Unreadable { .. } } => {
                assert!(!recovered.finished, "killed at {step:?}: {recovered:?}");
            }
            Acquire::Recovered { refused, .. } | Acquire::Refused(refused) => {
                panic!("killed at {step:?}: refused as {refused:?}, not as unreadable")
            }
            Acquire::Held(..) => panic!("killed at {step:?}: a note that cannot be read let a run go ahead"),
        }
    }
}
