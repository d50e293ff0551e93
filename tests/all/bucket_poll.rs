//! The dashboard's view of a store (`ubunye top -d s3://`) polls: a
//! [`Poller`] lists the leases and reads again only the objects whose ETag or
//! modification time changed. Its verdicts must be `leases list`'s (a full
//! [`look`]) after every change, and it must not read what did not change.

use std::time::Duration;

use ubunye::bucket::Objects;
use ubunye::state::store::{Poller, look};

use crate::common;
use common::bucket::*;
use ubunye_testkit::Rng;

const KEYS: [&str; 5] =
    ["0000000000000001", "0000000000000002", "00000000000000a3", "1111111111111111", "ffffffffffffffff"];
const TASKS: [&str; 2] = ["demo/sales/ingest", "demo/sales/report"];

/// Real documents to copy around: a live lease, a lease with claims, a
/// finished note; and bodies no engine writes.
fn bodies(w: &World) -> Vec<Vec<u8>> {
    let _a = w.held(A);
    let lease = w.lease_body().unwrap().into_bytes();
    let (held, _dir, files) = w.landing(2);
    let claimed = w.lease_body().unwrap().into_bytes();
    w.land(&held, &files).unwrap();
    let note_key = w.place.note_key();
    let note = w.mem.get(&note_key).unwrap().unwrap().body;
    vec![lease, claimed, note, b"{not json".to_vec(), b"[1]".to_vec(), Vec::new()]
}

fn key_of(t: usize, k: usize, note: bool) -> String {
    format!("uc/.ubunye/leases/{}/{}{}", TASKS[t], KEYS[k], if note { ".finished.json" } else { ".json" })
}

#[test]
fn a_poller_agrees_with_a_full_look_after_every_change_and_reads_only_what_changed() {
    for seed in 1..=20u64 {
        let w = world();
        let docs = bodies(&w);
        // All but the use case's folder marker (runs have used it).
        for (k, _) in w.mem.snapshot().into_iter().filter(|(k, _)| !k.ends_with('/')) {
            w.mem.delete(&k).unwrap();
        }
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut poller = Poller::new();
        for step in 0..60 {
            // Each step changes at most `changed` objects, then both look.
            let mut changed = std::collections::BTreeSet::new();
            match rng.below(5) {
                0 | 1 => {
                    let key = key_of(rng.below(2) as usize, rng.below(5) as usize, rng.below(3) == 0);
                    w.mem.put(&key, docs[rng.below(docs.len() as u64) as usize].clone()).unwrap();
                    changed.insert(key);
                }
                2 => {
                    let key = key_of(rng.below(2) as usize, rng.below(5) as usize, rng.below(2) == 0);
                    w.mem.delete(&key).unwrap();
                }
                // Time alone: live leases go dead (a poll reads nothing).
                3 => w.clock.advance(Duration::from_secs(rng.below(2 * w.timing.heartbeat_timeout.as_secs()))),
                // The same bytes again, later: the ETag is the same, the
                // modification time is not, and the lease's age changes.
                _ => {
                    if let Some((key, body)) = w.mem.snapshot().into_iter().nth(rng.below(4) as usize) {
                        w.clock.advance(Duration::from_secs(3));
                        w.mem.put(&key, body).unwrap();
                        changed.insert(key);
                    }
                }
            }
            let gets = w.mem.calls("get");
            let polled = poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
            let read = w.mem.calls("get") - gets;
            let (now, full) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
            assert_eq!(polled.batches, full, "seed {seed} step {step}");
            assert_eq!(polled.now, now, "seed {seed} step {step}");
            assert_eq!(polled.read, read, "seed {seed} step {step}: the count it says is the GETs it made");
            assert!(read <= changed.len(), "seed {seed} step {step}: {read} reads for {} change(s)", changed.len());
            let again = poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
            assert_eq!(again.read, 0, "seed {seed} step {step}: nothing changed, nothing read");
            assert_eq!(again.batches, full);
        }
    }
}

#[test]
fn a_first_look_reads_everything_and_a_saved_lease_alone_is_read_again() {
    let w = world();
    let a = w.held(A);
    let mut poller = Poller::new();
    assert_eq!(poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap().read, 1);
    a.save(|_| ()).unwrap();
    let p = poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!(p.read, 1);
    assert_eq!(p.batches.len(), 1);
    a.release().unwrap();
    let p = poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert_eq!((p.read, p.batches.len()), (0, 0), "a released lease is forgotten without a read");
}

#[test]
fn an_object_that_changed_between_the_list_and_the_get_is_read_again() {
    // Removed just before the GET, put back byte for byte in the same second
    // (the same ETag and time in the next listing).
    let w = world();
    let _a = w.held(A);
    let key = w.place.lease_key();
    let body = w.mem.get(&key).unwrap().unwrap().body;
    let mut poller = Poller::new();
    let mem = w.mem.clone();
    let k2 = key.clone();
    w.mem.before("get", move || {
        mem.delete(&k2).unwrap();
    });
    let p = poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
    assert!(p.batches.is_empty(), "the GET found nothing: no batch, this time");
    w.mem.put(&key, body).unwrap();
    for _ in 0..3 {
        let p = poller.look(&*w.mem, &w.place.uc, &w.timing).unwrap();
        let (_, full) = look(&*w.mem, &w.place.uc, &w.timing).unwrap();
        assert_eq!(p.batches, full);
        assert_eq!(p.batches.len(), 1);
    }
}
