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

use super::lease::{BucketError, Lease};
use super::objects::{Objects, StoreError};
use super::recover::take_back;
use crate::protocol::Recovery;
use crate::sys::Timing;

/// How landing ended short of a commit.
#[derive(Debug, thiserror::Error)]
pub enum LandError {
    /// The lease was lost (or a save failed): nothing more was done; the
    /// taker recovers what this run claimed.
    #[error(transparent)]
    Lease(#[from] BucketError),
    /// A request failed mid-way; the store answered again (within the
    /// bound of [`super::unwind`]) and the lease was still this run's: what
    /// it had made visible was taken back (what was done).
    #[error("{0}")]
    Failed(StoreError, Box<Recovery>),
    /// A request failed after the lease was marked done: the run committed,
    /// its files are the batch, and its finished note is not written yet
    /// (the next run, or `leases takeover`, writes it).
    #[error("{0}")]
    Committed(StoreError),
    /// The store did not answer again within the bound: nothing could be
    /// taken back by this run.
    #[error("{0}")]
    Unreachable(Box<Unreachable>),
    /// A completion was refused while the lease was still held: an object
    /// had the key already, or the upload was aborted.
    #[error(
        "{url}: the upload was refused (the key exists, or the upload was aborted); what this run made visible was taken back"
    )]
    Refused {
        /// The object.
        url: String,
        /// What was taken back.
        rolled_back: Box<Recovery>,
    },
}

/// A run whose store did not answer again within the bound: what it had
/// claimed, and what may be visible of it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{error}; the store did not answer for {}{}: {}{} the next run of the batch aborts and deletes them once this run's lease is {} old by the store's clock (or `ubunye leases takeover` then)",
    humantime::format_duration(*waited),
    if *answered_once { " long enough to take back what this run made visible" } else { "" },
    if *may_have_committed { "its done mark may have landed, and then the batch is this run's: the next run finds the lease marked done and writes its note; if it did not, " } else { "" },
    what_may_show(*claimed, prefix, *visible),
    humantime::format_duration(*lifetime)
)]
pub struct Unreachable {
    /// The request that failed.
    pub error: StoreError,
    /// How many keys the lease claims.
    pub claimed: usize,
    /// Their common prefix, `s3://bucket/...`.
    pub prefix: String,
    /// Whether the failure came at or after the completions (objects may be
    /// visible), or before (only open uploads, which no reader sees).
    pub visible: bool,
    /// Whether it came at the done mark, which may have landed.
    pub may_have_committed: bool,
    /// How long the store was waited for.
    pub waited: std::time::Duration,
    /// Whether it answered at all meanwhile.
    pub answered_once: bool,
    /// The lease's lifetime (its `ttl_s`).
    pub lifetime: std::time::Duration,
}

/// What may be visible of a run the store stopped answering to.
fn what_may_show(claimed: usize, prefix: &str, visible: bool) -> String {
    match visible {
        true => format!(
            "up to {claimed} object(s) of this run under {prefix} may be visible (completed before it stopped answering), and uploads of it may be open;"
        ),
        false => format!(
            "nothing of this run is visible (it had completed no upload), and up to {claimed} upload(s) of it under {prefix} may be open;"
        ),
    }
}

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
    let mut done = Recovery { run_id: lease.run_id().into(), ..Default::default() };
    loop {
        match lease.reread() {
            Ok(true) => return LandError::Committed(e),
            Ok(false) => {
                answered_once = true;
                let doc = lease.doc();
                let mut r = Recovery { run_id: lease.run_id().into(), ..Default::default() };
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
            return unreachable(lease, e, stage, spent, answered_once, timing);
        }
        std::thread::sleep(pause.min(outage - spent));
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// The store did not answer (or not long enough to take everything back):
/// what may be visible, and what the next run does, and when.
fn unreachable(
    lease: &Lease,
    e: StoreError,
    stage: Stage,
    waited: Duration,
    answered_once: bool,
    timing: &Timing,
) -> LandError {
    let doc = lease.doc();
    let uc = &lease.place().uc;
    let claims = super::claims::store_claims(&doc, uc).unwrap_or_default();
    let keys: Vec<&str> = claims.iter().flat_map(|o| o.keys.iter().map(String::as_str)).collect();
    let prefix = super::recover::common_prefix(&keys);
    LandError::Unreachable(Box::new(Unreachable {
        error: e,
        claimed: keys.len(),
        prefix: format!("s3://{}/{prefix}", lease.place().uc.bucket),
        visible: stage != Stage::Unseen,
        may_have_committed: stage == Stage::DoneMark,
        // Whole seconds: what was waited, the request in flight included.
        waited: Duration::from_secs(waited.as_secs()),
        answered_once,
        lifetime: super::lease::lifetime_of(&doc, timing),
    }))
}
