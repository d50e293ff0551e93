//! Path safety under a race: while takeovers of a dead run run, another thread
//! keeps swapping the claimed file's folder for a symlink to a folder outside
//! the use case that holds a canary of the same name. The canary survives every
//! takeover (removal walks from the use-case folder with O_NOFOLLOW).

use crate::common;

use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use common::*;
use ubunye::{LeaseSpec, RunLease};

#[test]
fn a_symlink_swapped_in_between_check_and_delete_never_leads_out() {
    let mut refused = 0;
    let mut removed = 0;
    for _ in 0..150 {
        let (d, uc, m) = fixture("dead-killed");
        let name = "part-00000-f0b49ced-ff22-4930-98f1-f9e0268bb0a6-c000.snappy.parquet";
        let outside = d.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join(name), "canary").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flips = Arc::new(AtomicU32::new(0));
        let swapper = {
            let (events, outside, stop, flips) = (uc.join("out/events"), outside.clone(), stop.clone(), flips.clone());
            std::thread::spawn(move || {
                let real = events.with_file_name("events.real");
                let link = events.with_file_name("events.link");
                let _ = std::os::unix::fs::symlink(&outside, &link);
                while !stop.load(Ordering::Relaxed) {
                    // events <-> symlink to outside, each in one rename.
                    if fs::rename(&events, &real).is_ok() {
                        let _ = fs::rename(&link, &events);
                        std::thread::yield_now();
                        let _ = fs::rename(&events, &link);
                        let _ = fs::rename(&real, &events);
                    }
                    flips.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // The race is only a race once the swapper runs (on a loaded machine
        // the takeover could otherwise be over before it starts).
        while flips.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
        let spec = LeaseSpec::new(&uc, task(), vars("2025-01-02"), uuid::Uuid::new_v4().to_string());
        match RunLease::acquire(spec, sys) {
            Ok((l, _)) => {
                removed += 1;
                l.release();
            }
            Err(_) => refused += 1,
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(fs::read_to_string(outside.join(name)).unwrap(), "canary", "the canary outside survived");
    }
    eprintln!(
        "150 takeovers racing a symlink swap: {removed} took over, {refused} refused; the canary always survived"
    );
}
