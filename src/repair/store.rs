//! `ubunye leases takeover` of a batch in a store: exactly what the next run
//! of the batch would do (take the dead lease over, settle, recover), then
//! hand the lease back. A live lease is never taken. Whether a repair
//! applies is asked as on disk, of the batch's report
//! ([`crate::repair::check`]).

use std::path::Path;
use std::sync::Arc;

use super::RepairPlan;
use crate::bucket::{Acquire, BucketError, Holder, Objects, Place, Refused, StoreUrl, acquire};
use crate::explain::store::{Found, find};
use crate::layout::TaskPath;
use crate::protocol::Recovery;
use crate::sys::{Clock, Timing};

impl Holder {
    /// Who a repair takes a batch as: a run of its own (a fresh uuid4, on
    /// this machine), named in the record it marks by the repair's command.
    pub fn repair(kind: super::Kind, sys: &crate::sys::Sys) -> Holder {
        Holder {
            run_id: uuid::Uuid::new_v4().to_string(),
            host: sys.host.clone(),
            pid: sys.pid,
            rerun: false,
            actor: Some(kind.command().to_string()),
        }
    }
}

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
    /// The batch read again was not as the plan was made for: why, and how
    /// to look again. Nothing was done.
    Changed(String),
}

/// Carry `plan` out on its batch in the store `uc`, as `holder`: the batch
/// is read again and acted on only if it is as planned ([`super::unchanged`],
/// the disk's rule), then taken over ([`takeover`], which re-checks as it
/// acts).
pub fn execute(
    objects: Arc<dyn Objects>,
    uc: &StoreUrl,
    plan: &RepairPlan,
    holder: &Holder,
    clock: Arc<dyn Clock>,
    timing: &Timing,
) -> Result<TakeoverEnd, BucketError> {
    let (_, found) = find(&*objects, uc, &plan.key, Some(&plan.task), timing)?;
    let now = match &found {
        Found::One(_, b) if b.key == plan.key => Some(&**b),
        _ => None,
    };
    if let Err(why) = super::unchanged(plan, now, Path::new(&uc.to_string())) {
        return Ok(TakeoverEnd::Changed(why));
    }
    let task = match TaskPath::parse(&plan.task) {
        Ok(t) => t,
        Err(why) => return Ok(TakeoverEnd::Changed(format!("{uc}: the task '{}' cannot be taken: {why}", plan.task))),
    };
    let place = Place { uc: uc.clone(), task, key: plan.key.clone() };
    takeover(objects, &place, holder, clock, timing)
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
        Acquire::Recovered { recovered, refused: Refused::Finished { run_id } } => {
            TakeoverEnd::Completed(recovered, run_id)
        }
        // Taken over; the batch's note is another matter, which explain says.
        Acquire::Recovered { recovered, .. } => TakeoverEnd::TookOver(recovered),
        Acquire::Refused(r) => TakeoverEnd::Refused(r),
    })
}
