//! The lease protocol over an object store (issue 13), step by step, on the
//! in-memory store that keeps S3's rules (ETags by content, times to the
//! second, uploads invisible until completed and dead once aborted) on a
//! fake clock: every interleaving a test wants, without a server. The same
//! protocol against real servers is tests/bucket_s3.rs.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ubunye::bucket::{
    Acquire, BucketError, Holder, LandError, Lease, Memory, Objects, Place, Refused, StoreUrl, StoreVerdict, acquire,
    look, plan, probe,
};
use ubunye::layout::TaskPath;
use ubunye::sys::{Hook, Timing};
use ubunye_testkit::{FakeClock, fast_timing};

const T0: u64 = 1_780_000_000;

struct World {
    clock: Arc<FakeClock>,
    mem: Arc<Memory>,
    place: Place,
    timing: Timing,
}

fn world() -> World {
    let clock = FakeClock::at(UNIX_EPOCH + Duration::from_secs(T0));
    let mem = Arc::new(Memory::new("bkt", clock.clone()));
    let place = Place {
        uc: StoreUrl::parse("s3://bkt/uc").unwrap(),
        task: TaskPath::parse("demo/sales/ingest").unwrap(),
        key: "0123456789abcdef".into(),
    };
    World { clock, mem, place, timing: fast_timing() }
}

fn out() -> StoreUrl {
    StoreUrl::parse("s3://bkt/lake/ev").unwrap()
}

fn holder(run: &str) -> Holder {
    Holder { run_id: run.into(), host: "h".into(), pid: 1 }
}

impl World {
    fn objects(&self) -> Arc<dyn Objects> {
        self.mem.clone()
    }
    fn take(&self, run: &str) -> Acquire {
        acquire(self.objects(), &self.place, &holder(run), self.clock.clone(), &self.timing).expect("no store error")
    }
    fn held(&self, run: &str) -> Arc<Lease> {
        match self.take(run) {
            Acquire::Held(l, _) => l,
            Acquire::Refused(r) => panic!("{run} was refused: {r:?}"),
            Acquire::Completed(r) => panic!("{run} completed a dead run's commit: {r:?}"),
        }
    }
    fn past_timeout(&self) {
        self.clock.advance(self.timing.heartbeat_timeout + Duration::from_secs(2));
    }
    fn lease_body(&self) -> Option<String> {
        self.mem.get(&self.place.lease_key()).unwrap().map(|g| String::from_utf8(g.body).unwrap())
    }
    /// A staging folder with `n` files, planned into `s3://bkt/lake/ev`.
    fn files(&self, dir: &Path, run: &str, n: usize) -> Vec<ubunye::bucket::Planned> {
        std::fs::create_dir_all(dir).unwrap();
        for i in 0..n {
            std::fs::write(dir.join(format!("part-{i}.csv")), format!("row {i} of {run}\n")).unwrap();
        }
        plan("ev", dir, &StoreUrl::parse("s3://bkt/lake/ev").unwrap(), run).unwrap()
    }
    fn visible(&self) -> Vec<String> {
        self.mem.list("lake/").unwrap().into_iter().map(|l| l.key).collect()
    }
}

#[test]
fn one_holder_a_second_is_refused_and_a_dead_one_is_taken_over() {
    let w = world();
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    match w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") {
        Acquire::Refused(Refused::Busy { run_id, .. }) => assert_eq!(run_id, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"),
        _ => panic!("a live lease was not refused"),
    }
    // Just within the timeout (by the store's clock): still live.
    w.clock.advance(w.timing.heartbeat_timeout);
    assert!(matches!(w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"), Acquire::Refused(Refused::Busy { .. })));
    w.clock.advance(Duration::from_secs(2));
    let Acquire::Held(b, Some(rec)) = w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") else {
        panic!("a dead lease was not taken over")
    };
    assert_eq!(rec.run_id, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    assert!(w.lease_body().unwrap().contains("\"run_id\": \"bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb\""));
    assert!(!w.lease_body().unwrap().contains("taking_over"), "the takeover's note of the dead run is cleared");
    // The dead holder wakes: every save is refused, and its release leaves
    // the taker's lease alone.
    let lost = a.save(|_| {}).unwrap_err();
    assert!(matches!(&lost, BucketError::Lost { why, .. } if why.contains("holds it now")), "{lost}");
    assert!(a.lost().is_some());
    assert!(!a.release().unwrap());
    assert!(w.lease_body().is_some());
    assert!(b.release().unwrap());
    assert!(w.lease_body().is_none());
}

#[test]
fn every_save_changes_the_body_so_an_etag_is_never_seen_twice() {
    let w = world();
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let mut etags = vec![w.mem.head(&w.place.lease_key()).unwrap().unwrap().etag];
    for _ in 0..3 {
        a.save(|_| {}).unwrap();
        etags.push(w.mem.head(&w.place.lease_key()).unwrap().unwrap().etag);
    }
    let mut unique = etags.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), etags.len(), "{etags:?}");
}

#[test]
fn a_write_that_landed_but_was_answered_refused_is_recognised_as_this_runs_own() {
    let w = world();
    w.mem.lie_next("create");
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    w.mem.lie_next("update");
    a.save(|d| d.set("x", 1.into())).unwrap();
    a.save(|_| {}).unwrap();
    assert!(a.lost().is_none());
    assert!(w.lease_body().unwrap().contains("\"x\": 1"));
}

#[test]
fn an_unreadable_lease_is_never_judged_dead_and_is_left_as_it_is() {
    let w = world();
    w.mem.put(&w.place.lease_key(), b"{\"run_id\": \"x\", \"outp".to_vec()).unwrap();
    w.past_timeout();
    let before = w.mem.snapshot();
    match w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") {
        Acquire::Refused(Refused::Unreadable { url, why }) => {
            assert!(url.ends_with(".ubunye/leases/demo/sales/ingest/0123456789abcdef.json"), "{url}");
            assert!(why.contains("not a JSON object"), "{why}");
        }
        _ => panic!("an unreadable lease was not refused"),
    }
    assert_eq!(w.mem.snapshot(), before);
    // Claims in a shape the peer would crash on: also refused, never taken over.
    w.mem.put(&w.place.lease_key(), br#"{"run_id": "x", "outputs": {"ev": {"claimed": [1]}}}"#.to_vec()).unwrap();
    w.past_timeout();
    assert!(matches!(w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"), Acquire::Refused(Refused::Unreadable { .. })));
}

#[test]
fn a_lease_from_the_stores_future_is_not_judged() {
    let w = world();
    let _a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    // The store's clock steps back (a fault of its own): the lease looks
    // written ahead of now, and its age cannot be told.
    w.clock.set(UNIX_EPOCH + Duration::from_secs(T0) - w.timing.future_tolerance - Duration::from_secs(5));
    assert!(matches!(w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"), Acquire::Refused(Refused::Unreadable { .. })));
}

#[test]
fn a_finished_batch_hands_the_lease_back_and_is_refused() {
    let w = world();
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 2);
    ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap();
    assert!(a.release().unwrap());
    match w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") {
        Acquire::Refused(Refused::Finished { run_id }) => assert_eq!(run_id, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"),
        _ => panic!("a finished batch was not refused"),
    }
    assert!(w.lease_body().is_none(), "the refused run handed its lease back");
    let note = String::from_utf8(w.mem.get(&w.place.note_key()).unwrap().unwrap().body).unwrap();
    assert!(note.contains("s3://bkt/lake/ev/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa-part-0.csv"), "{note}");
    assert_eq!(
        w.visible(),
        [
            "lake/ev/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa-part-0.csv",
            "lake/ev/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa-part-1.csv"
        ]
    );
    assert!(w.mem.open_uploads("").unwrap().is_empty());
}

/// The zombie: a holder paused after its claims are saved and its parts
/// sent, taken over, then resumed: its completions are refused, nothing of
/// it is visible, and it never commits.
#[test]
fn a_paused_holder_taken_over_makes_nothing_visible() {
    let w = Arc::new(world());
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 3);
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        // While run A is paused: the timeout passes and run B takes over.
        w2.past_timeout();
        let Acquire::Held(b, Some(rec)) = w2.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") else {
            panic!("no takeover")
        };
        assert_eq!(rec.aborted, 3, "{rec:?}");
        assert!(rec.removed.is_empty());
        b.release().unwrap();
    });
    let e = ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap_err();
    assert!(matches!(e, LandError::Refused { .. } | LandError::Lease(BucketError::Lost { .. })), "{e}");
    assert!(w.visible().is_empty(), "{:?}", w.visible());
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    assert!(w.mem.get(&w.place.note_key()).unwrap().is_none(), "the zombie wrote a finished note");
    assert!(a.save(|_| {}).is_err());
}

/// Paused after its completions but before its done mark: the taker deletes
/// what it made visible, and its done mark is refused.
#[test]
fn a_holder_taken_over_after_completing_loses_what_it_completed() {
    let w = Arc::new(world());
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 2);
    let w2 = w.clone();
    // The done mark is the first update after the completions.
    w.mem.before("complete_new", move || {
        let w3 = w2.clone();
        w2.mem.before("update", move || {
            w3.past_timeout();
            let Acquire::Held(b, Some(rec)) = w3.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") else {
                panic!("no takeover")
            };
            assert_eq!(rec.removed.len(), 2, "{rec:?}");
            b.release().unwrap();
        });
    });
    let e = ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap_err();
    assert!(matches!(e, LandError::Lease(BucketError::Lost { .. })), "{e}");
    assert!(w.visible().is_empty(), "{:?}", w.visible());
    assert!(w.mem.get(&w.place.note_key()).unwrap().is_none());
}

/// Dead after its done mark: the taker completes its commit (the note), and
/// the batch is finished by the dead run.
#[test]
fn a_dead_run_that_had_marked_done_is_finished_for_it() {
    let w = Arc::new(world());
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 2);
    let w2 = w.clone();
    // The note's create is the first create after the done mark: run A dies there.
    w.mem.before("create", move || {
        w2.past_timeout();
        match w2.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") {
            Acquire::Completed(r) => {
                assert!(r.run_id == "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa" && r.finished && r.note_written, "{r:?}")
            }
            _ => panic!("the done run's commit was not completed"),
        }
    });
    // run A resumes: its note is there already (its own), so it commits.
    ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap();
    assert_eq!(w.visible().len(), 2);
}

/// A taker that died while recovering (its lease still names the dead run
/// in `taking_over`): the next taker recovers that run.
#[test]
fn a_taker_that_died_mid_recovery_is_taken_over_in_turn() {
    let w = Arc::new(world());
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 2);
    // run A dies after its completions, before the done mark.
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        w2.mem.fail_next("update");
    });
    let _ = ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default());
    assert_eq!(w.visible().len(), 2, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa's files were completed");
    // run B takes over and dies before it deletes anything.
    w.past_timeout();
    w.mem.fail_next("head");
    assert!(
        acquire(w.objects(), &w.place, &holder("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"), w.clock.clone(), &w.timing)
            .is_err()
    );
    assert!(w.lease_body().unwrap().contains("taking_over"));
    w.past_timeout();
    let Acquire::Held(_c, Some(rec)) = w.take("cccccccc-cccc-4ccc-8ccc-cccccccccccc") else {
        panic!("no takeover of the dead taker")
    };
    assert_eq!(
        rec.run_id, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
        "the run to recover is the one the dead taker was recovering"
    );
    assert_eq!(rec.removed.len(), 2);
    assert!(w.visible().is_empty());
}

#[test]
fn a_store_failure_mid_landing_takes_back_what_became_visible() {
    let w = world();
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 2);
    // The done mark's save gets no answer (a network error).
    let mem = w.mem.clone();
    w.mem.before("complete_new", move || mem.fail_next("update"));
    let e = ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap_err();
    assert!(matches!(e, LandError::Lease(BucketError::Store(_))), "{e}");
    // Still held: the next save works, and a takeover after it dies would
    // take back the completed files (the lease names them).
    assert!(a.save(|_| {}).is_ok());
    assert!(w.lease_body().unwrap().contains("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa-part-0.csv"));
}

#[test]
fn the_probe_passes_on_a_store_that_keeps_the_rules() {
    let w = world();
    probe(&*w.mem, &w.place.uc, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa").unwrap();
    assert!(w.mem.snapshot().is_empty(), "the probe leaves nothing");
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    // A probe killed part way left an upload and an object: the next probe
    // aborts the upload at once, and removes the object once it is an hour old.
    w.mem.start_uploads(&["uc/.ubunye/probe/x.aborted".into()]).unwrap();
    w.mem.put("uc/.ubunye/probe/x", b"probe 1".to_vec()).unwrap();
    probe(&*w.mem, &w.place.uc, "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb").unwrap();
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    assert_eq!(w.mem.snapshot().len(), 1, "a young probe object stays: a probe may be running");
    w.clock.advance(Duration::from_secs(3601));
    probe(&*w.mem, &w.place.uc, "cccccccc-cccc-4ccc-8ccc-cccccccccccc").unwrap();
    assert!(w.mem.snapshot().is_empty());
}

#[test]
fn looking_judges_every_batch_by_the_stores_clock_and_writes_nothing() {
    let w = world();
    let task = "demo/sales/ingest";
    let k = |key: &str, suffix: &str| format!("uc/.ubunye/leases/{task}/{key}{suffix}");
    let _live = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    w.mem.put(&k("1111111111111111", ".finished.json"), br#"{"run_id": "run-f", "outputs": {}}"#.to_vec()).unwrap();
    w.mem.put(&k("2222222222222222", ".json"), b"not json".to_vec()).unwrap();
    w.mem.put(&k("3333333333333333", ".json"), br#"{"run_id": "run-d"}"#.to_vec()).unwrap();
    w.clock.advance(Duration::from_secs(60));
    // Just written: live; the others are a minute old.
    w.mem.put(&k("4444444444444444", ".json"), br#"{"run_id": "run-l"}"#.to_vec()).unwrap();
    let before = w.mem.snapshot();
    let mut timing = w.timing;
    timing.heartbeat_timeout = Duration::from_secs(30);
    let (_, batches) = look(&*w.mem, &w.place.uc, &timing).unwrap();
    assert_eq!(w.mem.snapshot(), before, "looking wrote something");
    let got: Vec<(&str, StoreVerdict)> = batches.iter().map(|b| (b.key.as_str(), b.state)).collect();
    assert_eq!(
        got,
        [
            ("0123456789abcdef", StoreVerdict::Dead),
            ("1111111111111111", StoreVerdict::Finished),
            ("2222222222222222", StoreVerdict::Unreadable),
            ("3333333333333333", StoreVerdict::Dead),
            ("4444444444444444", StoreVerdict::Live),
        ]
    );
    assert!(batches.iter().all(|b| b.task == task));
}

#[test]
fn a_run_that_lost_its_lease_before_landing_completes_nothing() {
    let w = Arc::new(world());
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 2);
    let w2 = w.clone();
    // Taken over while its uploads start: the claims save is refused, and
    // the uploads nobody else knows of are aborted.
    w.mem.before("start_uploads", move || {
        w2.past_timeout();
        let Acquire::Held(b, _) = w2.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") else { panic!("no takeover") };
        b.release().unwrap();
    });
    let e = ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap_err();
    assert!(matches!(e, LandError::Lease(BucketError::Lost { .. })), "{e}");
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    assert!(w.visible().is_empty());
}

#[test]
fn time_is_the_stores_not_this_machines() {
    // The lease's age is the store's clock minus the store's stamp: this
    // machine's clock (the heartbeat field) plays no part.
    let w = world();
    let _a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let mut body = w.lease_body().unwrap();
    body = body.replace("\"heartbeat\": ", "\"heartbeat\": 1.0, \"was\": ");
    w.mem.put(&w.place.lease_key(), body.into_bytes()).unwrap();
    assert!(matches!(w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"), Acquire::Refused(Refused::Busy { .. })));
    let _ = SystemTime::now();
}

/// Killed after its uploads started, before their ids were saved: the taker
/// finds them by listing the open uploads of each claimed key, and aborts them.
#[test]
fn uploads_whose_ids_were_never_saved_are_found_and_aborted() {
    let w = world();
    let a = w.held("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", 3);
    // What land() has done when it is killed between its two saves: the
    // keys are in the lease, the uploads started, their ids not saved.
    let urls: Vec<serde_json::Value> = files.iter().map(|f| format!("s3://bkt/{}", f.key).into()).collect();
    a.save(|d| {
        d.outputs_mut().insert(
            "ev".into(),
            serde_json::json!({"appends": true, "exact": true, "state": "writing", "url": "s3://bkt/lake/ev", "claimed": urls}),
        );
    })
    .unwrap();
    w.mem.start_uploads(&files.iter().map(|f| f.key.clone()).collect::<Vec<_>>()).unwrap();
    assert_eq!(w.mem.open_uploads("").unwrap().len(), 3);
    // An upload of another key (a foreign one) is left alone.
    w.mem.start_uploads(&["lake/ev/foreign.csv".into()]).unwrap();
    w.past_timeout();
    let Acquire::Held(_b, Some(rec)) = w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb") else { panic!("no takeover") };
    assert_eq!(rec.aborted, 3, "{rec:?}");
    let open: Vec<String> = w.mem.open_uploads("").unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(open, ["lake/ev/foreign.csv"]);
}

const A: &str = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";

/// Review 13, finding 1: a holder that completes while its taker settles.
/// The taker aborts the claimed uploads before it settles, so the late
/// completion is refused and nothing appears.
#[test]
fn a_completion_during_the_takers_settle_is_refused() {
    let mut w = world();
    w.timing.settle = Duration::from_millis(300);
    let w = Arc::new(w);
    let a = w.held(A);
    let d = tempfile::tempdir().unwrap();
    let files = w.files(d.path(), A, 2);
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        // After run A's last look at its lease: run B takes over in the
        // background, and run A completes while B is in its settle.
        w2.past_timeout();
        let w3 = w2.clone();
        std::thread::spawn(move || {
            let _ = w3.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb");
        });
        std::thread::sleep(Duration::from_millis(150));
    });
    let e = ubunye::bucket::land(&*w.mem, &a, &[("ev".into(), out())], &files, &Hook::default()).unwrap_err();
    assert!(matches!(e, LandError::Refused { .. }), "{e}");
    std::thread::sleep(Duration::from_millis(400));
    assert!(w.visible().is_empty(), "{:?}", w.visible());
}

/// Review 13, findings 5 and 6: a lease whose claims are not what a run
/// writes (another run's file, a key outside its output, a damaged uploads
/// map) is unreadable: never taken over, nothing deleted or aborted.
#[test]
fn a_forged_or_damaged_lease_is_never_acted_on() {
    let w = world();
    let other = "25f88e9d-6203-4a7e-9c1e-0123456789ab";
    w.mem.put(&format!("lake/ev/{other}-part-0.csv"), b"committed".to_vec()).unwrap();
    let up = w.mem.start_uploads(&["lake/ev/foreign.csv".into()]).unwrap();
    let forged = [
        // A piece of the other run's id as the run id.
        serde_json::json!({"run_id": "25f88e9d", "outputs": {"ev": {"url": "s3://bkt/lake/ev",
            "claimed": [format!("s3://bkt/lake/ev/{other}-part-0.csv")]}}}),
        // The other run's file claimed under this run's id.
        serde_json::json!({"run_id": A, "outputs": {"ev": {"url": "s3://bkt/lake/ev",
            "claimed": [format!("s3://bkt/lake/ev/{other}-part-0.csv")]}}}),
        // An upload outside the output.
        serde_json::json!({"run_id": A, "outputs": {"ev": {"url": "s3://bkt/lake/ev/x",
            "claimed": ["s3://bkt/lake/ev/foreign.csv"], "uploads": {"s3://bkt/lake/ev/foreign.csv": up[0]}}}}),
        // A damaged uploads map.
        serde_json::json!({"run_id": A, "outputs": {"ev": {"url": "s3://bkt/lake/ev",
            "claimed": [format!("s3://bkt/lake/ev/{A}-p.csv")], "uploads": [up[0]]}}}),
    ];
    for doc in forged {
        w.mem.put(&w.place.lease_key(), doc.to_string().into_bytes()).unwrap();
        w.past_timeout();
        let before = w.mem.snapshot();
        assert!(
            matches!(w.take("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"), Acquire::Refused(Refused::Unreadable { .. })),
            "{doc}"
        );
        assert_eq!(w.mem.snapshot(), before, "{doc}");
        assert_eq!(w.mem.open_uploads("").unwrap().len(), 1, "{doc}");
    }
}

/// Stores that break a promise the protocol rests on are refused at start.
#[test]
fn the_probe_refuses_a_store_that_breaks_a_promise() {
    struct Careless {
        mem: Memory,
        ignore: &'static str,
    }
    impl Objects for Careless {
        fn bucket(&self) -> &str {
            self.mem.bucket()
        }
        fn get(&self, k: &str) -> Result<Option<ubunye::bucket::Got>, ubunye::bucket::StoreError> {
            self.mem.get(k)
        }
        fn head(&self, k: &str) -> Result<Option<ubunye::bucket::Listed>, ubunye::bucket::StoreError> {
            self.mem.head(k)
        }
        fn create(&self, k: &str, b: Vec<u8>) -> Result<ubunye::bucket::Written, ubunye::bucket::StoreError> {
            if self.ignore == "if-none-match" {
                self.mem.put(k, b).map(ubunye::bucket::Written::Done)
            } else {
                self.mem.create(k, b)
            }
        }
        fn update(&self, k: &str, b: Vec<u8>, e: &str) -> Result<ubunye::bucket::Written, ubunye::bucket::StoreError> {
            if self.ignore == "if-match" {
                self.mem.put(k, b).map(ubunye::bucket::Written::Done)
            } else {
                self.mem.update(k, b, e)
            }
        }
        fn put(&self, k: &str, b: Vec<u8>) -> Result<String, ubunye::bucket::StoreError> {
            self.mem.put(k, b)
        }
        fn delete_if(&self, k: &str, e: &str) -> Result<bool, ubunye::bucket::StoreError> {
            if self.ignore == "delete-if-match" { self.mem.delete(k).map(|_| true) } else { self.mem.delete_if(k, e) }
        }
        fn delete(&self, k: &str) -> Result<(), ubunye::bucket::StoreError> {
            self.mem.delete(k)
        }
        fn list(&self, p: &str) -> Result<Vec<ubunye::bucket::Listed>, ubunye::bucket::StoreError> {
            self.mem.list(p)
        }
        fn now(&self) -> Result<SystemTime, ubunye::bucket::StoreError> {
            let t = self.mem.now()?;
            Ok(if self.ignore == "clock" { t + Duration::from_secs(3600) } else { t })
        }
        fn start_uploads(&self, k: &[String]) -> Result<Vec<String>, ubunye::bucket::StoreError> {
            self.mem.start_uploads(k)
        }
        fn send_parts(&self, u: &[ubunye::bucket::Upload]) -> Result<Vec<Vec<String>>, ubunye::bucket::StoreError> {
            self.mem.send_parts(u)
        }
        fn complete_new(
            &self,
            u: &[(ubunye::bucket::Upload, Vec<String>)],
        ) -> Result<Vec<ubunye::bucket::Written>, ubunye::bucket::StoreError> {
            if self.ignore == "complete-if-none-match" {
                for (up, _) in u {
                    let _ = self.mem.delete(&up.key);
                }
            }
            self.mem.complete_new(u)
        }
        fn abort(&self, k: &str, id: &str) -> Result<(), ubunye::bucket::StoreError> {
            if self.ignore == "abort" { Ok(()) } else { self.mem.abort(k, id) }
        }
        fn open_uploads(&self, p: &str) -> Result<Vec<(String, String)>, ubunye::bucket::StoreError> {
            self.mem.open_uploads(p)
        }
    }
    let w = world();
    for ignore in ["if-none-match", "if-match", "delete-if-match", "abort", "complete-if-none-match", "clock"] {
        let store = Careless { mem: Memory::new("bkt", w.clock.clone()), ignore };
        let e = probe(&store, &w.place.uc, A).unwrap_err();
        assert_eq!(e.kind, ubunye::bucket::ErrorKind::Unsupported, "{ignore}: {e}");
        assert!(e.to_string().contains("refused"), "{ignore}: {e}");
    }
}

#[test]
fn a_name_the_s3_client_would_change_is_refused_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a~b[1].csv"), "x").unwrap();
    let e = plan("ev", d.path(), &out(), A).unwrap_err();
    assert!(e.contains("a~b[1].csv") && e.contains("rename it"), "{e}");
}
