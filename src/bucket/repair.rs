//! `ubunye leases takeover` of a batch in a store: exactly what the next run
//! of the batch would do (take the dead lease over, settle, recover), then
//! hand the lease back. A live lease is never taken.

use std::sync::Arc;

use super::inspect::Explained;
use super::lease::{Acquire, BucketError, Holder, Refused, acquire};
use super::objects::Objects;
use super::place::Place;
use crate::documents::short;
use crate::protocol::Recovery;
use crate::repair::Kind;
use crate::state::State;
use crate::sys::{Clock, Timing};

/// How a takeover ended.
#[derive(Debug)]
pub enum TakeoverEnd {
    /// A dead run's lease was taken over, recovered, and released.
    TookOver(Recovery),
    /// The batch was finished (a dead run had marked its lease done, or its
    /// note was there): what the recovery did, and the run the note names.
    Completed(Recovery, String),
    /// There was no lease (a run released it meanwhile): nothing to do.
    Free,
    /// Refused: a live holder, a finished batch, an unreadable file.
    Refused(Refused),
}

/// Take over the batch at `place` as `holder`, then release it.
pub fn takeover(
    objects: Arc<dyn Objects>,
    place: &Place,
    holder: &Holder,
    clock: Arc<dyn Clock>,
    timing: &Timing,
) -> Result<TakeoverEnd, BucketError> {
    Ok(match acquire(objects, place, holder, clock, timing)? {
        Acquire::Held(lease, recovered) => {
            lease.release()?;
            match recovered {
                Some(r) => TakeoverEnd::TookOver(r),
                None => TakeoverEnd::Free,
            }
        }
        Acquire::Completed { recovered, finished_by } => TakeoverEnd::Completed(recovered, finished_by),
        Acquire::Refused(r) => TakeoverEnd::Refused(r),
    })
}

/// Whether `kind` applies to the batch `e` explains, or why not (one line):
/// what `leases takeover|finish` and the dashboard ask before they show a
/// plan. [`takeover`] checks again as it acts.
pub fn applies(e: &Explained, kind: Kind) -> Result<(), String> {
    let b = &e.batch;
    match (b.state, kind) {
        (State::Dead | State::Pending, Kind::Finish) if !e.committed => {
            Err("its run had not marked its lease done: nothing to finish; `ubunye leases takeover` takes it back"
                .into())
        }
        // A lease that names no run: the engine takes it over by its age alone.
        (State::Damaged, Kind::Finish) => Err(
            "its lease names no run and was never marked done: nothing to finish; `ubunye leases takeover` takes it over once it is dead"
                .into(),
        ),
        (State::Damaged, _) if b.lease_dead != Some(true) => Err(format!(
            "its lease names no run and is not yet older than its lifetime: it is never taken over before ({})",
            b.note
        )),
        (State::Dead | State::Pending | State::Damaged | State::Orphan, _) => Ok(()),
        (State::Live | State::HandedBack | State::Kept, _) => Err(format!(
            "run {} holds it (live): a live lease is never taken over",
            b.run_id.as_deref().map(short).unwrap_or_default()
        )),
        (State::Finished, _) => Err("it is finished: nothing to take over".into()),
        (State::Failed | State::Interrupted, _) => {
            Err(format!("no lease holds it ({}): nothing to take over; the next run goes ahead", b.state.word()))
        }
        (State::Unreadable, _) => Err(format!("{} cannot be read: it is never judged free or dead", b.url)),
    }
}
