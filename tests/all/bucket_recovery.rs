//! Recovering a dead run's uploads in a store, and the probe at the start of
//! a run, on the in-memory store of
//! tests/all/bucket_protocol.rs: uploads whose ids were never saved, a completion
//! during the taker's settle, forged and damaged leases, stores that break a
//! promise the protocol rests on, names the S3 client would change.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ubunye::bucket::{Acquire, LandError, Memory, Objects, Refused, StoreUrl, plan, probe};
use ubunye::sys::{Hook, Step};

use crate::common;
use common::bucket::*;

/// Killed after its uploads started, before their ids were saved: the taker
/// finds them by listing the open uploads of each claimed key, and aborts them.
#[test]
fn uploads_whose_ids_were_never_saved_are_found_and_aborted() {
    let w = world();
    let (a, _d, files) = w.landing(3);
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
    let Acquire::Held(_b, Some(rec)) = w.take(B) else { panic!("no takeover") };
    assert_eq!(rec.aborted, 3, "{rec:?}");
    let open: Vec<String> = w.mem.open_uploads("").unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(open, ["lake/ev/foreign.csv"]);
}

/// A holder that completes while its taker settles.
/// The taker aborts the claimed uploads before it settles, so the late
/// completion is refused and nothing appears.
#[test]
fn a_completion_during_the_takers_settle_is_refused() {
    let mut w = world();
    w.timing.settle = Duration::from_millis(300);
    let w = Arc::new(w);
    let (a, _d, files) = w.landing(2);
    let w2 = w.clone();
    w.mem.before("complete_new", move || {
        // After run A's last look at its lease: run B takes over in the
        // background, and run A completes while B is in its settle.
        w2.past_timeout();
        let w3 = w2.clone();
        std::thread::spawn(move || {
            let _ = w3.take(B);
        });
        std::thread::sleep(Duration::from_millis(150));
    });
    let e = w.land(&a, &files).unwrap_err();
    // Refused by the taker's abort: said as the lease lost, naming the taker.
    assert!(
        matches!(&e, LandError::Lease(ubunye::bucket::BucketError::Lost { why, .. }) if why.contains("run bbbbbbbb")),
        "{e}"
    );
    std::thread::sleep(Duration::from_millis(400));
    assert!(w.visible().is_empty(), "{:?}", w.visible());
}

/// A lease whose claims are not what a run writes (another run's file, a key
/// outside its output, a damaged uploads map) is unreadable: never taken
/// over, nothing deleted or aborted.
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
        assert!(matches!(w.take(B), Acquire::Refused(Refused::Unreadable { .. })), "{doc}");
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
        fn open_uploads_aged(
            &self,
            p: &str,
        ) -> Result<Vec<(String, String, Option<SystemTime>)>, ubunye::bucket::StoreError> {
            self.mem.open_uploads_aged(p)
        }
    }
    let w = world();
    let scratch = tempfile::tempdir().unwrap();
    for ignore in ["if-none-match", "if-match", "delete-if-match", "abort", "complete-if-none-match", "clock"] {
        let store = Careless { mem: Memory::new("bkt", w.clock.clone()), ignore };
        let e = probe(&store, &w.place.uc, A, scratch.path()).unwrap_err();
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

/// A dead run's lease beside its own finished note (left by a kill after the
/// note, or put back by a restore): its claims are the batch, and are kept;
/// the taker says the batch is finished.
#[test]
fn a_lease_beside_its_own_finished_note_keeps_its_files() {
    let w = world();
    let (a, _d, files) = w.landing(2);
    let stale = w.mem.get(&w.place.lease_key()).unwrap().unwrap().body;
    w.land(&a, &files).unwrap();
    assert!(a.release().unwrap());
    // The lease as it was mid-landing, put back beside the note.
    let mut doc: serde_json::Value = serde_json::from_slice(&stale).unwrap();
    doc["outputs"] = serde_json::json!({"ev": {"appends": true, "exact": true, "state": "writing",
        "url": "s3://bkt/lake/ev", "claimed": w.visible().iter().map(|k| format!("s3://bkt/{k}")).collect::<Vec<_>>()}});
    w.mem.put(&w.place.lease_key(), doc.to_string().into_bytes()).unwrap();
    w.past_timeout();
    match w.take(B) {
        Acquire::Recovered { recovered, refused: Refused::Finished { run_id: finished_by } } => {
            assert_eq!(finished_by, A);
            assert!(recovered.finished && recovered.removed.is_empty(), "{recovered:?}");
        }
        _ => panic!("not told finished"),
    }
    assert_eq!(w.visible().len(), 2, "the finished batch's files were deleted");
    assert!(w.lease_body().is_none(), "the lease was handed back");
}

/// An upload started by a retried request whose first answer was lost (an
/// id nobody saved) is aborted by the run itself.
#[test]
fn an_upload_of_a_claimed_key_that_no_save_names_is_aborted() {
    let w = Arc::new(world());
    let (a, _d, files) = w.landing(2);
    let (w2, key) = (w.clone(), files[0].key.clone());
    w.mem.before("start_uploads", move || {
        // The first try of the request, whose answer never came back.
        w2.mem.start_uploads(std::slice::from_ref(&key)).unwrap();
    });
    w.land(&a, &files).unwrap();
    assert!(w.mem.open_uploads("").unwrap().is_empty(), "{:?}", w.mem.open_uploads(""));
}

/// A release whose first try gets no answer is tried again; the batch is
/// handed back.
#[test]
fn a_release_without_an_answer_is_tried_again() {
    let w = world();
    let a = w.held(A);
    w.mem.fail_next("delete_if");
    assert!(a.release().unwrap());
    assert!(w.mem.get(&w.place.lease_key()).unwrap().is_none());
}

/// A dead run's `running` record is rewritten by the protocol's one rule
/// (`protocol::record::interrupted`), the disk's words: a run names itself,
/// a repair names its command and run.
#[test]
fn a_dead_runs_record_names_its_taker_in_the_disks_words() {
    for actor in [None, Some("ubunye leases takeover")] {
        let w = world();
        let (a, _d, files) = w.landing(1);
        let running = br#"{"run_id": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "status": "running"}"#.to_vec();
        w.mem.put(&w.place.record_key(A), running.clone()).unwrap();
        w.killed_at(&a, &files, ubunye::sys::Step::UploadsClaimed);
        w.past_timeout();
        let at = ubunye::timefmt::utc_z(ubunye::sys::Clock::now(&*w.clock));
        let holder = ubunye::bucket::Holder { actor: actor.map(str::to_string), ..holder(B) };
        let got = ubunye::bucket::acquire(w.objects(), &w.place, &holder, w.clock.clone(), &w.timing).unwrap();
        let Acquire::Held(_, Some(r)) = got else { panic!("no takeover") };
        assert!(r.record_marked && !r.finished, "{r:?}");
        let who = match actor {
            Some(a) => format!("{a} (run bbbbbbbb)"),
            None => "run bbbbbbbb".to_string(),
        };
        let want = ubunye::protocol::record::interrupted(&running, &who, &at, &[]).unwrap();
        let body = w.mem.get(&w.place.record_key(A)).unwrap().unwrap().body;
        assert_eq!(String::from_utf8(body).unwrap(), want);
        assert!(want.contains(&format!("The run did not finish; {who} took over its lease at {at}")), "{want}");
    }
}

/// A store run with two outputs, one of which got no file (Spark writes only
/// `_SUCCESS` for an empty frame): its lease notes that output with
/// `claimed: []`, which in a store means nothing was uploaded there (keys are
/// claimed before any upload starts). Killed after its uploads were claimed,
/// the takeover has nothing to take back in it. The disk's rule for
/// `unrepaired` (exact, yet no claim and no staging: "may hold part of its
/// batch") is not a store's: neither the record nor the outcome may send a
/// user to check an output nothing was written to.
#[test]
fn a_store_output_that_got_no_file_is_not_called_unrepaired() {
    let w = world();
    let a = w.held(A);
    let running = br#"{"run_id": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "status": "running"}"#.to_vec();
    w.mem.put(&w.place.record_key(A), running).unwrap();
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("ev");
    let empty = d.path().join("empty");
    let files = w.files(&full, A, 2);
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("_SUCCESS"), b"").unwrap();
    let empty_url = StoreUrl::parse("s3://bkt/lake/empty").unwrap();
    assert!(plan("empty", &empty, &empty_url, A).unwrap().is_empty());
    let outputs = [("ev".to_string(), out()), ("empty".to_string(), empty_url)];
    let hook = Hook(Some(Arc::new(|s| {
        if s == Step::UploadsClaimed {
            panic!("killed at {s:?}");
        }
    })));
    let run = std::panic::AssertUnwindSafe(|| {
        let _ = ubunye::bucket::land(&*w.mem, &a, &outputs, &files, &hook, &w.landing_timing());
    });
    assert!(std::panic::catch_unwind(run).is_err(), "not killed");
    w.past_timeout();
    let Acquire::Held(_b, Some(r)) = w.take(B) else { panic!("no takeover") };
    assert!(!r.finished && r.record_marked, "{r:?}");
    assert!(w.mem.list("lake/empty").unwrap().is_empty(), "nothing was ever written under lake/empty");
    let record = String::from_utf8(w.mem.get(&w.place.record_key(A)).unwrap().unwrap().body).unwrap();
    assert!(!record.contains("may hold part"), "{record}");
    assert!(r.unrepaired.is_empty(), "said unrepaired in a store: {:?}", r.unrepaired);
}

/// A dead run its own note names keeps that note as it is: its commit is
/// not completed again.
#[test]
fn a_dead_run_its_own_note_names_keeps_its_note_byte_for_byte() {
    let w = world();
    let note = w.noted_but_lease_not_done();
    w.past_timeout();
    let Acquire::Recovered { recovered: r, refused: Refused::Finished { run_id: finished_by } } = w.take(B) else {
        panic!("not completed")
    };
    assert!(r.finished && !r.note_written && finished_by == A, "{r:?}");
    assert_eq!(w.mem.get(&w.place.note_key()).unwrap().unwrap().body, note);
    assert_eq!(w.visible().len(), 2, "its files are the batch");
}

/// A dead run its own note names has nothing written for it (its note is
/// there): no request is sent that could only be refused, so a store that
/// fails a request then cannot fail the takeover and leave the taker's lease
/// holding the batch (`taking_over`) for a lease lifetime.
#[test]
fn a_failed_request_that_could_do_nothing_does_not_fail_the_takeover_of_a_noted_run() {
    let w = world();
    let note = w.noted_but_lease_not_done();
    w.past_timeout();
    let mem = w.mem.clone();
    // The takeover's update of the lease comes first; the next create is the
    // note's.
    w.mem.before("update", move || mem.fail_next("create"));
    let got = ubunye::bucket::acquire(w.objects(), &w.place, &holder(B), w.clock.clone(), &w.timing);
    assert_eq!(w.mem.get(&w.place.note_key()).unwrap().unwrap().body, note);
    let lease = w.lease_body().unwrap_or_default();
    assert!(
        matches!(got, Ok(Acquire::Recovered { .. })),
        "the takeover failed on the note's create: {:?}; the lease left: {lease}",
        got.err()
    );
}

/// A dead run with claims in two outputs: every claimed upload of both is
/// aborted before any claimed key is looked at, so that one settle covers
/// them all (a settle an output made a takeover of N outputs wait N
/// settles).
#[test]
fn every_output_is_fenced_before_any_claim_is_looked_at() {
    let w = world();
    let a = w.held(A);
    let mut keys = Vec::new();
    for out in ["ev", "ev2"] {
        let urls: Vec<serde_json::Value> =
            (0..2).map(|i| format!("s3://bkt/lake/{out}/{A}-part-{i}.csv").into()).collect();
        keys.extend((0..2).map(|i| format!("lake/{out}/{A}-part-{i}.csv")));
        a.save(|d| {
            d.outputs_mut().insert(
                out.into(),
                serde_json::json!({"appends": true, "exact": true, "state": "writing", "url": format!("s3://bkt/lake/{out}"), "claimed": urls}),
            );
        })
        .unwrap();
    }
    w.mem.start_uploads(&keys).unwrap();
    let aborted_at_first_head = Arc::new(std::sync::Mutex::new(None));
    let (seen, mem) = (aborted_at_first_head.clone(), w.mem.clone());
    w.mem.before("head", move || *seen.lock().unwrap() = Some(mem.calls("abort")));
    w.past_timeout();
    let Acquire::Held(_b, Some(rec)) = w.take(B) else { panic!("no takeover") };
    assert_eq!(rec.aborted, 4, "{rec:?}");
    assert_eq!(
        *aborted_at_first_head.lock().unwrap(),
        Some(4),
        "a claim was looked at before every upload was aborted"
    );
    assert!(w.mem.open_uploads("").unwrap().is_empty());
}
