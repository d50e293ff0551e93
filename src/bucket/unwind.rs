//! A landing whose request failed: before anything is said, the lease is
//! read again, so that a run that lost its lease while it was paused (its
//! first request after the pause meeting a dropped connection) says it lost
//! it, naming the taker, and a store that stopped answering is waited for, a
//! bounded time, so that what the run made visible is taken back by the run
//! itself rather than fifteen minutes later by the next one.
//!
//! The lease, read again:
//! - another run's, or gone: lost (the taker recovers);
//! - this run's and marked done: committed (its files are the batch; never
//!   taken back);
//! - this run's: its uploads aborted and what it completed deleted, again
//!   until nothing is left, then said;
//! - no answer within the bound: one line of what may be visible, and when
//!   the next run takes it back.

use std::time::{Duration, Instant};

use super::append::LandError;
use super::lease::{BucketError, Lease};
use super::objects::{Objects, StoreError};
use super::recover::{Recovered, take_back};
use crate::sys::Timing;

/// The longest pause between two reads of the lease while the store does not
/// answer.
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// Where in its landing the run was when the request failed: whether an
/// object of it may have become visible, and whether it may have committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Before any completion: only open uploads, which no reader sees.
    Unseen,
    /// At or after the completions: objects may be visible.
    Seen,
    /// At the done mark, which may have landed: the run may have committed.
    DoneMark,
}

/// What to say of a landing that failed with `e` at `stage`, after reading
/// the lease again for `timing.store_outage` (a request in flight then ends
/// within the store's own timeouts). Its own uploads are taken back as a
/// taker would: aborted, a settle, then what was completed deleted.
pub(super) fn after_failure(
    objects: &dyn Objects,
    lease: &Lease,
    e: StoreError,
    stage: Stage,
    timing: &Timing,
) -> LandError {
    let outage = timing.store_outage;
    let start = Instant::now();
    let mut pause = Duration::from_millis(250);
    let mut answered_once = false;
    // What was taken back, over every try (a try cut short by the store
    // going away again is carried on by the next): the objects deleted by
    // any try, and the most uploads one try aborted (a try aborts them all
    // again; an abort of one aborted already is no error).
    let mut done = Recovered { run_id: lease.run_id().into(), ..Default::default() };
    loop {
        match lease.reread() {
            Ok(true) => return LandError::Committed(e),
            Ok(false) => {
                answered_once = true;
                let doc = lease.doc();
                let mut r = Recovered { run_id: lease.run_id().into(), ..Default::default() };
                let took = take_back(objects, &doc, &lease.place().uc, timing.settle, &mut r);
                done.aborted = done.aborted.max(r.aborted);
                for url in r.removed {
                    if !done.removed.contains(&url) {
                        done.removed.push(url);
                    }
                }
                done.left = r.left;
                if took.is_ok() {
                    return LandError::Failed(e, Box::new(done));
                }
            }
            Err(lost @ BucketError::Lost { .. }) => return LandError::Lease(lost),
            Err(_) => {}
        }
        let spent = start.elapsed();
        if spent >= outage {
            return unreachable(lease, e, stage, spent, answered_once);
        }
        std::thread::sleep(pause.min(outage - spent));
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// The store did not answer (or not long enough to take everything back):
/// what may be visible, and what the next run does, and when.
fn unreachable(lease: &Lease, e: StoreError, stage: Stage, waited: Duration, answered_once: bool) -> LandError {
    let doc = lease.doc();
    let uc = &lease.place().uc;
    let claims = super::claims::store_claims(&doc, uc).unwrap_or_default();
    let keys: Vec<&str> = claims.iter().flat_map(|o| o.keys.iter().map(String::as_str)).collect();
    let prefix = super::recover::common_prefix(&keys);
    LandError::Unreachable(Box::new(super::append::Unreachable {
        error: e,
        claimed: keys.len(),
        prefix: format!("s3://{}/{prefix}", lease.place().uc.bucket),
        visible: stage != Stage::Unseen,
        may_have_committed: stage == Stage::DoneMark,
        // Whole seconds: what was waited, the request in flight included.
        waited: Duration::from_secs(waited.as_secs()),
        answered_once,
        lifetime: super::lease::lifetime_of(&doc, &crate::sys::Timing::peer()),
    }))
}
