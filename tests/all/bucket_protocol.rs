//! The lease protocol over an object store, step by step, on the
//! in-memory store that keeps S3's rules (ETags by content, times to the
//! second, uploads invisible until completed and dead once aborted) on a
//! fake clock: every interleaving a test wants, without a server. Recovery's
//! harder cases and the probe are in tests/all/bucket_recovery.rs; the same
//! protocol against real servers in tui/tests/slow/store.rs.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ubunye::bucket::{Acquire, BucketError, LandError, Objects, Refused, acquire, probe};
use ubunye::state::State;
use ubunye::state::store::look;
use ubunye::sys::Step;

use crate::common;
use common::bucket::*;

#[test]
fn one_holder_a_second_is_refused_and_a_dead_one_is_taken_over() {
    let w = world();
    let a = w.held(A);
    match w.take(B) {
        Acquire::Refused(Refused::Busy { run_id, .. }) => assert_eq!(run_id, A),
        _ => panic!("a live lease was not refused"),
    }
    // Just within the timeout (by the store's clock): still live.
    w.clock.advance(w.timing.heartbeat_timeout);
    assert!(matches!(w.take(B), Acquire::Refused(Refused::Busy { .. })));
    w.clock.advance(Duration::from_secs(2));
    let Acquire::Held(b, Some(rec)) = w.take(B) else { panic!("a dead lease was not taken over") };
    assert_eq!(rec.run_id, A);
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
    let a = w.held(A);
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
    let a = w.held(A);
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
    match w.take(B) {
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
    assert!(matches!(w.take(B), Acquire::Refused(Refused::Unreadable { .. })));
}

#[test]
fn a_lease_from_the_stores_future_is_not_judged() {
    let w = world();
    let _a = w.held(A);
    // The store's clock steps back (a fault of its own): the lease looks
    // written ahead of now, and its age cannot be told.
    w.clock.set(UNIX_EPOCH + Duration::from_secs(T0) - w.timing.future_tolerance - Duration::from_secs(5));
    assert!(matches!(w.take(B), Acquire::Refused(Refused::Unreadable { .. })));
}

#[test]
fn a_finished_batch_hands_the_lease_back_and_is_refused() {
    let w = world();
    let (a, _d, files) = w.landing(2);
    w.land(&a, &files).unwrap();
    assert!(a.release().unwrap());
    match w.take(B) {
        Acquire::Refused(Refused::Finished { run_id }) => assert_eq!(run_id, A),
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
    let (a, _d, files) = w.landing(3);
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        // While run A is paused: the timeout passes and run B takes over.
        w2.past_timeout();
        let Acquire::Held(b, Some(rec)) = w2.take(B) else { panic!("no takeover") };
        assert_eq!(rec.aborted, 3, "{rec:?}");
        assert!(rec.removed.is_empty());
        b.release().unwrap();
    });
    let e = w.land(&a, &files).unwrap_err();
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
    let (a, _d, files) = w.landing(2);
    let w2 = w.clone();
    // The done mark is the first update after the completions.
    w.mem.before("complete_new", move || {
        let w3 = w2.clone();
        w2.mem.before("update", move || {
            w3.past_timeout();
            let Acquire::Held(b, Some(rec)) = w3.take(B) else { panic!("no takeover") };
            assert_eq!(rec.removed.len(), 2, "{rec:?}");
            b.release().unwrap();
        });
    });
    let e = w.land(&a, &files).unwrap_err();
    assert!(matches!(e, LandError::Lease(BucketError::Lost { .. })), "{e}");
    assert!(w.visible().is_empty(), "{:?}", w.visible());
    assert!(w.mem.get(&w.place.note_key()).unwrap().is_none());
}

/// Dead after its done mark: the taker completes its commit (the note), and
/// the batch is finished by the dead run.
#[test]
fn a_dead_run_that_had_marked_done_is_finished_for_it() {
    let w = Arc::new(world());
    let (a, _d, files) = w.landing(2);
    // Its record says running: a store's run writes its end after its commit.
    let started = ubunye::timefmt::iso_micros(ubunye::sys::Clock::now(&*w.clock));
    let running = format!(r#"{{"run_id": "{A}", "status": "running", "started_at": "{started}", "ended_at": null}}"#);
    w.mem.put(&w.place.record_key(A), running.into_bytes()).unwrap();
    let w2 = w.clone();
    // The note's create is the first create after the done mark: run A dies there.
    w.mem.before("create", move || {
        w2.past_timeout();
        match w2.take(B) {
            Acquire::Recovered { recovered: r, .. } => {
                assert!(r.run_id == A && r.finished && r.note_written && r.record_marked, "{r:?}")
            }
            _ => panic!("the done run's commit was not completed"),
        }
    });
    // run A resumes: its note is there already (its own), so it commits.
    w.land(&a, &files).unwrap();
    assert_eq!(w.visible().len(), 2);
    // Its record says it ended in success: the batch is its.
    let rec: serde_json::Value =
        serde_json::from_slice(&w.mem.get(&w.place.record_key(A)).unwrap().unwrap().body).unwrap();
    assert_eq!(rec["status"], "success", "{rec}");
    assert!(rec["duration_sec"].as_f64().is_some_and(|d| d > 0.0), "{rec}");
}

/// A taker that died while recovering (its lease still names the dead run
/// in `taking_over`): the next taker recovers that run.
#[test]
fn a_taker_that_died_mid_recovery_is_taken_over_in_turn() {
    let w = Arc::new(world());
    let (a, _d, files) = w.landing(2);
    // run A dies after its completions, before the done mark.
    w.killed_at(&a, &files, Step::Completed);
    assert_eq!(w.visible().len(), 2, "run A's files were completed");
    // run B takes over and dies before it deletes anything.
    w.past_timeout();
    w.mem.fail_next("head");
    assert!(acquire(w.objects(), &w.place, &holder(B), w.clock.clone(), &w.timing).is_err());
    assert!(w.lease_body().unwrap().contains("taking_over"));
    w.past_timeout();
    let Acquire::Held(_c, Some(rec)) = w.take(C) else { panic!("no takeover of the dead taker") };
    assert_eq!(rec.run_id, A, "the run to recover is the one the dead taker was recovering");
    assert_eq!(rec.removed.len(), 2);
    assert!(w.visible().is_empty());
}

/// The done mark's save gets no answer: the lease is read again. Not
/// committed and still this run's: one more try, and the run commits; if that
/// fails too, what it made visible is taken back at once.
#[test]
fn a_done_mark_without_an_answer_is_read_again() {
    let w = world();
    let (a, _d, files) = w.landing(2);
    let mem = w.mem.clone();
    w.mem.before("complete_new", move || mem.fail_next("update"));
    assert_eq!(w.land(&a, &files).unwrap().files, [("ev".to_string(), 2)]);
    assert!(w.mem.get(&w.place.note_key()).unwrap().is_some());
    assert!(a.release().unwrap());

    let mut w = world();
    w.place.key = "fedcba9876543210".into();
    let (a, _d, files) = w.landing(2);
    let mem = w.mem.clone();
    w.mem.before("complete_new", move || {
        mem.fail_next("update");
        mem.fail_next("update");
    });
    let e = w.land(&a, &files).unwrap_err();
    assert!(matches!(e, LandError::Failed(..)), "{e}");
    assert!(w.visible().is_empty(), "a failed run's files stay visible: {:?}", w.visible());
    assert!(w.mem.get(&w.place.note_key()).unwrap().is_none());
}

#[test]
fn the_probe_passes_on_a_store_that_keeps_the_rules() {
    let w = world();
    let scratch = tempfile::tempdir().unwrap();
    let before = w.mem.snapshot();
    probe(&*w.mem, &w.place.uc, A, scratch.path()).unwrap();
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0, "the probe leaves no local file");
    assert!(w.mem.snapshot() == before, "the probe leaves nothing");
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    // A probe killed part way left an upload and an object: the next probes
    // leave them while they are young (a probe may be running), and remove
    // them once they are ten minutes old.
    w.mem.start_uploads(&["uc/.ubunye/probe/x.aborted".into()]).unwrap();
    w.mem.put("uc/.ubunye/probe/x", b"probe 1".to_vec()).unwrap();
    probe(&*w.mem, &w.place.uc, B, scratch.path()).unwrap();
    assert_eq!(w.mem.open_uploads("").unwrap().len(), 1, "a young probe upload stays");
    assert_eq!(w.mem.snapshot().len(), before.len() + 1, "a young probe object stays");
    w.clock.advance(Duration::from_secs(601));
    probe(&*w.mem, &w.place.uc, C, scratch.path()).unwrap();
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    assert!(w.mem.snapshot() == before);
}

#[test]
fn looking_judges_every_batch_by_the_stores_clock_and_writes_nothing() {
    let mut w = world();
    // A's lease lives 30 s (its ttl_s); the others, written without one,
    // the timeout below.
    w.timing.store_ttl = Duration::from_secs(30);
    let task = "demo/sales/ingest";
    let k = |key: &str, suffix: &str| format!("uc/.ubunye/leases/{task}/{key}{suffix}");
    let _live = w.held(A);
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
    let got: Vec<(&str, State)> = batches.iter().map(|b| (b.key.as_str(), b.state)).collect();
    assert_eq!(
        got,
        [
            ("0123456789abcdef", State::Dead),
            ("1111111111111111", State::Finished),
            ("2222222222222222", State::Unreadable),
            ("3333333333333333", State::Dead),
            ("4444444444444444", State::Live),
        ]
    );
    assert!(batches.iter().all(|b| b.task == task));
}

#[test]
fn a_run_that_lost_its_lease_before_landing_completes_nothing() {
    let w = Arc::new(world());
    let (a, _d, files) = w.landing(2);
    let w2 = w.clone();
    // Taken over while its uploads start: the claims save is refused, and
    // the uploads nobody else knows of are aborted.
    w.mem.before("start_uploads", move || {
        w2.past_timeout();
        let Acquire::Held(b, _) = w2.take(B) else { panic!("no takeover") };
        b.release().unwrap();
    });
    let e = w.land(&a, &files).unwrap_err();
    assert!(matches!(e, LandError::Lease(BucketError::Lost { .. })), "{e}");
    assert!(w.mem.open_uploads("").unwrap().is_empty());
    assert!(w.visible().is_empty());
}

#[test]
fn time_is_the_stores_not_this_machines() {
    // The lease's age is the store's clock minus the store's stamp: this
    // machine's clock (the heartbeat field) plays no part.
    let w = world();
    let _a = w.held(A);
    let mut body = w.lease_body().unwrap();
    body = body.replace("\"heartbeat\": ", "\"heartbeat\": 1.0, \"was\": ");
    w.mem.put(&w.place.lease_key(), body.into_bytes()).unwrap();
    assert!(matches!(w.take(B), Acquire::Refused(Refused::Busy { .. })));
    let _ = SystemTime::now();
}

/// A lease lives the `ttl_s` its holder wrote in it, by the store's clock;
/// one without (an older engine's) lives the disk's timeout; one whose
/// `ttl_s` is not a number of seconds is never judged.
#[test]
fn a_lease_lives_the_lifetime_its_holder_wrote_in_it() {
    let mut w = world();
    w.timing.store_ttl = Duration::from_secs(120);
    let _a = w.held(A);
    assert!(w.lease_body().unwrap().contains("\"ttl_s\": 120"), "{:?}", w.lease_body());
    w.clock.advance(Duration::from_secs(120));
    assert!(matches!(w.take(B), Acquire::Refused(Refused::Busy { .. })), "live within its 120 s");
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!((rows[0].state, rows[0].ttl_secs), (State::Live, Some(120.0)));
    w.clock.advance(Duration::from_secs(2));
    let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!(rows[0].state, State::Dead, "dead past its own lifetime, long before the disk's 15 minutes");
    let Acquire::Held(b, Some(rec)) = w.take(B) else { panic!("a lease past its ttl_s was not taken over") };
    assert_eq!(rec.run_id, A);
    assert!(b.release().unwrap());

    // Without ttl_s: the disk's timeout.
    let key = w.place.lease_key();
    let _c = w.held(C);
    let body = w.lease_body().unwrap().replace("\"ttl_s\": 120", "\"other\": 1");
    w.mem.put(&key, body.into_bytes()).unwrap();
    w.clock.advance(Duration::from_secs(600));
    assert!(matches!(w.take(A), Acquire::Refused(Refused::Busy { .. })), "no ttl_s: 15 minutes");
    // A ttl_s that is not a number of seconds: unreadable, never taken.
    for bad in ["\"2m\"", "0", "-5", "null"] {
        let body = w.lease_body().unwrap();
        let body = match body.find("\"ttl_s\"") {
            Some(_) => body,
            None => body.replacen("\"other\": 1", "\"ttl_s\": 1", 1),
        };
        let start = body.find("\"ttl_s\": ").unwrap() + "\"ttl_s\": ".len();
        let end = start + body[start..].find([',', '\n', '}']).unwrap();
        let body = format!("{}{bad}{}", &body[..start], &body[end..]);
        w.mem.put(&key, body.into_bytes()).unwrap();
        w.clock.advance(Duration::from_secs(3600));
        assert!(matches!(w.take(A), Acquire::Refused(Refused::Unreadable { .. })), "ttl_s {bad}");
        let (_, rows) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
        assert_eq!(rows[0].state, State::Unreadable, "ttl_s {bad}");
    }
}

/// Land with a hook that runs at each step.
fn land_with(
    w: &World,
    lease: &ubunye::bucket::Lease,
    files: &[ubunye::bucket::Planned],
    at: impl Fn(Step) + Send + Sync + 'static,
) -> Result<ubunye::bucket::Landed, LandError> {
    let hook = ubunye::sys::Hook(Some(Arc::new(at)));
    ubunye::bucket::land(&*w.mem, lease, &[("ev".into(), out())], files, &hook, &w.landing_timing())
}

/// The store stops answering once the completions are made, and answers
/// again a moment later: the run itself takes back what it made visible
/// and aborts its uploads; its lease is still its own, to hand back.
#[test]
fn a_store_that_answers_again_sees_the_run_take_back_what_it_made_visible() {
    let w = world();
    let (a, _d, files) = w.landing(2);
    let mem = w.mem.clone();
    let e = land_with(&w, &a, &files, move |s| {
        if s == Step::Completed {
            mem.set_down(true);
            let mem = mem.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                mem.set_down(false);
            });
        }
    })
    .unwrap_err();
    let LandError::Failed(_, undone) = &e else { panic!("{e:?}") };
    assert_eq!(undone.removed.len(), 2, "{undone:?}");
    assert!(undone.aborted <= 2, "each upload counted once, however many tries: {undone:?}");
    assert!(w.visible().is_empty(), "{:?}", w.visible());
    assert!(w.mem.open_uploads("lake/").unwrap().is_empty());
    assert!(w.mem.get(&w.place.note_key()).unwrap().is_none());
    assert!(a.release().unwrap(), "the lease is still the run's to hand back");
}

/// The store does not answer within the bound: the run says what may be
/// visible and when the next run takes it back; the next run does, once the
/// lease is past its lifetime.
#[test]
fn a_store_that_stays_down_is_said_and_the_next_run_takes_it_back() {
    let w = world();
    let (a, _d, files) = w.landing(2);
    let mem = w.mem.clone();
    let e = land_with(&w, &a, &files, move |s| {
        if s == Step::Completed {
            mem.set_down(true);
        }
    })
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(&e, LandError::Unreachable(u) if u.claimed == 2 && u.visible), "{e:?}");
    assert!(text.contains("up to 2 object(s) of this run under s3://bkt/lake/ev/"), "{text}");
    // It failed at the done mark, which may have landed: said.
    assert!(text.contains("its done mark may have landed"), "{text}");
    assert!(text.contains("15m old") && text.contains("the next run of the batch"), "{text}");
    w.mem.set_down(false);
    assert_eq!(w.visible().len(), 2, "made visible before the store stopped answering");
    let (_b, rec) = w.take_over();
    assert_eq!(rec.removed.len(), 2);
    assert!(w.visible().is_empty());
}

/// A run paused past its lease's lifetime and taken over: its first request
/// afterwards fails (a dropped connection). It reads its lease again before
/// it says anything, and says it lost it, naming the taker.
#[test]
fn a_failed_request_after_a_takeover_is_told_as_a_lost_lease() {
    let w = Arc::new(world());
    let (a, _d, files) = w.landing(2);
    let w2 = w.clone();
    let e = land_with(&w, &a, &files, move |s| {
        if s == Step::PartsSent {
            let _ = w2.take_over();
            // The paused run's next request (its last look at the lease).
            w2.mem.fail_next("head");
        }
    })
    .unwrap_err();
    match &e {
        LandError::Lease(BucketError::Lost { why, .. }) => assert!(why.contains("run bbbbbbbb holds it now"), "{why}"),
        other => panic!("not told as lost: {other:?}"),
    }
    assert!(w.visible().is_empty());
}

/// A taker aborts the run's uploads between its last look and its
/// completions: the completions are refused, and the run, reading its lease,
/// says it lost it, naming the taker, not "the upload was refused".
#[test]
fn a_completion_refused_by_a_takers_abort_is_told_as_a_lost_lease() {
    let w = Arc::new(world());
    let (a, _d, files) = w.landing(2);
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        let _ = w2.take_over();
    });
    let e = w.land(&a, &files).unwrap_err();
    match &e {
        LandError::Lease(BucketError::Lost { why, .. }) => assert!(why.contains("run bbbbbbbb holds it now"), "{why}"),
        other => panic!("not told as lost: {other:?}"),
    }
    assert!(w.visible().is_empty(), "{:?}", w.visible());
}
