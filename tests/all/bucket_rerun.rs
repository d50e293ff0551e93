//! `--rerun` in a store: a finished batch's files are replaced
//! once the new run has committed, in the disk's order (done mark, the note
//! replaced, then the old files removed), and a run killed at each step is
//! finished or taken back by the next, on the in-memory store of
//! tests/all/bucket_protocol.rs.

use std::sync::Arc;

use ubunye::bucket::{Acquire, Holder, Lease, Objects, acquire};
use ubunye::sys::Step;

use crate::common;
use common::bucket::*;

impl World {
    fn rerun(&self, run: &str) -> Arc<Lease> {
        let h = Holder { run_id: run.into(), host: "h".into(), pid: 1, rerun: true, actor: None };
        match acquire(self.objects(), &self.place, &h, self.clock.clone(), &self.timing).unwrap() {
            Acquire::Held(l, _) => l,
            _ => panic!("a --rerun was not let in"),
        }
    }
    fn note_run(&self) -> String {
        let got = self.mem.get(&self.place.note_key()).unwrap().unwrap();
        serde_json::from_slice::<serde_json::Value>(&got.body).unwrap()["run_id"].as_str().unwrap().to_string()
    }
    fn of(&self, run: &str) -> usize {
        self.visible().iter().filter(|k| k.contains(run)).count()
    }
}

/// Run `f` at the replacement of the note: the second update after the
/// completions (the first is the done mark).
fn at_the_note(w: &Arc<World>, f: impl FnOnce(&World) + Send + 'static) {
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        let w3 = w2.clone();
        w2.mem.before("update", move || {
            let w4 = w3.clone();
            w3.mem.before("update", move || f(&w4));
        });
    });
}

/// Land under `lease`, the run killed (a panic, caught) by a hook.
fn land_killed(w: &World, lease: &Lease, files: &[ubunye::bucket::Planned]) {
    let run = std::panic::AssertUnwindSafe(|| {
        let _ = w.land(lease, files);
    });
    assert!(std::panic::catch_unwind(run).is_err(), "the run was not killed");
}

/// Run A finishes the batch with 2 files; run B's --rerun stages 3.
fn finished_then_rerun(w: &World) -> (Arc<Lease>, tempfile::TempDir, Vec<ubunye::bucket::Planned>) {
    let (a, _d, files) = w.landing(2);
    w.land(&a, &files).unwrap();
    assert!(a.release().unwrap());
    let b = w.rerun(B);
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), B, 3);
    (b, d, files)
}

#[test]
fn a_rerun_replaces_the_finished_batch() {
    let w = world();
    let (b, _d, files) = finished_then_rerun(&w);
    assert_eq!(b.replacing().unwrap().run_id, A);
    w.land(&b, &files).unwrap();
    assert!(b.release().unwrap());
    assert_eq!((w.of(A), w.of(B)), (0, 3), "{:?}", w.visible());
    assert_eq!(w.note_run(), B);
    // A plain run is refused: B finished it.
    assert!(matches!(w.take(C), Acquire::Refused(ubunye::bucket::Refused::Finished { run_id }) if run_id == B));
}

#[test]
fn a_rerun_killed_before_its_done_mark_leaves_the_old_batch() {
    let w = world();
    let (b, _d, files) = finished_then_rerun(&w);
    w.killed_at(&b, &files, Step::Completed);
    assert_eq!(w.of(B), 3, "its completions landed before it died");
    w.past_timeout();
    match w.take(C) {
        Acquire::Recovered { recovered, refused: ubunye::bucket::Refused::Finished { run_id: finished_by } } => {
            assert_eq!(finished_by, A);
            assert_eq!(recovered.removed.len(), 3, "{recovered:?}");
        }
        _ => panic!("not taken over"),
    }
    assert_eq!((w.of(A), w.of(B)), (2, 0), "{:?}", w.visible());
    assert_eq!(w.note_run(), A);
}

#[test]
fn a_rerun_killed_after_its_done_mark_is_finished_by_the_next_run() {
    let w = Arc::new(world());
    let (b, _d, files) = finished_then_rerun(&w);
    // Killed as the note is to be replaced.
    at_the_note(&w, |_| panic!("killed before the note"));
    land_killed(&w, &b, &files);
    assert_eq!(w.note_run(), A);
    w.past_timeout();
    match w.take(C) {
        Acquire::Recovered { recovered, refused: ubunye::bucket::Refused::Finished { run_id: finished_by } } => {
            assert_eq!(finished_by, B);
            assert!(recovered.finished && recovered.note_written, "{recovered:?}");
            assert_eq!(recovered.removed.len(), 2, "{recovered:?}");
        }
        _ => panic!("not finished for it"),
    }
    assert_eq!((w.of(A), w.of(B)), (0, 3), "{:?}", w.visible());
    assert_eq!(w.note_run(), B);
}

#[test]
fn a_rerun_killed_after_its_note_has_its_removals_done_by_the_next_run() {
    let w = Arc::new(world());
    let (b, _d, files) = finished_then_rerun(&w);
    // Killed at the first look for an old file, after the note is B's.
    at_the_note(&w, |w| w.mem.before("head", || panic!("killed before the removals")));
    land_killed(&w, &b, &files);
    assert_eq!(w.note_run(), B);
    assert_eq!(w.of(A), 2, "not removed yet");
    w.past_timeout();
    match w.take(C) {
        Acquire::Recovered { recovered, refused: ubunye::bucket::Refused::Finished { run_id: finished_by } } => {
            assert_eq!(finished_by, B);
            assert_eq!(recovered.removed.len(), 2, "{recovered:?}");
        }
        _ => panic!("not finished for it"),
    }
    assert_eq!((w.of(A), w.of(B)), (0, 3), "{:?}", w.visible());
}

/// A finished note that claims files outside this run's output (another
/// output's, another use case's, or one its run never landed) is not
/// replaced: the rerun is refused, nothing is deleted.
#[test]
fn a_rerun_replaces_only_files_under_its_own_output() {
    let w = world();
    let (b, _d, _files) = finished_then_rerun(&w);
    let mut rep = b.replacing().unwrap();
    let out = vec![("ev".to_string(), out())];
    assert!(rep.check_against(&out, &w.place.uc).is_ok());
    rep.claimed = vec![("ev".into(), vec![format!("s3://bkt/lake2/ev/{A}-y.csv")])];
    let e = rep.check_against(&out, &w.place.uc).unwrap_err();
    assert!(e.contains("not under its output"), "{e}");
    rep.claimed = vec![("other".into(), vec![format!("s3://bkt/lake/other/{A}-y.csv")])];
    let e = rep.check_against(&out, &w.place.uc).unwrap_err();
    assert!(e.contains("does not write"), "{e}");
    // A lease whose `replaces` reaches outside its output is unreadable to
    // a taker: never acted on.
    let mut doc = ubunye::documents::LeaseDoc(
        serde_json::json!({"run_id": B, "outputs": {"ev": {"url": "s3://bkt/lake/ev", "claimed": []}},
            "replaces_run": A, "replaces": {"ev": [format!("s3://bkt/lake/other/{A}-y.csv")]}})
        .as_object()
        .unwrap()
        .clone(),
    );
    assert!(ubunye::bucket::store_replaces(&doc, &w.place.uc).is_err());
    doc.0.insert("replaces".into(), serde_json::json!({"ev": [format!("s3://bkt/lake/ev/{A}-y.csv")]}));
    assert!(ubunye::bucket::store_replaces(&doc, &w.place.uc).is_ok());
}

/// An old file that cannot be removed keeps the lease (the batch is
/// committed), and the next run removes it.
#[test]
fn an_old_file_that_cannot_be_removed_is_removed_by_the_next_run() {
    let w = Arc::new(world());
    let (b, _d, files) = finished_then_rerun(&w);
    // The first delete after the note names B: the removal of an old file.
    at_the_note(&w, |w| w.mem.fail_next("delete"));
    let landed = w.land(&b, &files).unwrap();
    assert_eq!(landed.replaced_left, 1);
    assert_eq!(w.of(A), 1, "{:?}", w.visible());
    assert_eq!(w.note_run(), B);
    // The lease is kept (the run does not release it); once dead, the next
    // run removes what was left.
    w.past_timeout();
    match w.take(C) {
        Acquire::Recovered { recovered, refused: ubunye::bucket::Refused::Finished { run_id: finished_by } } => {
            assert_eq!(finished_by, B);
            assert_eq!(recovered.removed.len(), 1, "{recovered:?}");
        }
        _ => panic!("not finished for it"),
    }
    assert_eq!((w.of(A), w.of(B)), (0, 3), "{:?}", w.visible());
}
