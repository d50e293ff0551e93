//! What only a store's engine says (`ubunye::bucket`), as text: a
//! takeover's end as a folder's repair outcome, and why a run or a repair
//! was refused the batch; for the CLI (`cli/store/`) and the dashboard over
//! a store (`top/store.rs`) alike. A store's batch is explained as a
//! folder's (`report::explanation`).

use ubunye::bucket::{BucketError, Refused, StoreUrl};
use ubunye::documents::short;
use ubunye::repair::store::TakeoverEnd;
use ubunye::repair::{RepairOutcome, RepairPlan};

/// Why a run or a repair was refused the batch (`head`: its task and key).
pub fn refusal(head: &str, r: &Refused) -> String {
    match r {
        Refused::Busy { run_id, age } => format!(
            "refused: {head}: run {} holds it (its lease was written {} ago, by the store's clock); try again once it ends",
            short(run_id),
            ubunye::timefmt::age(*age)
        ),
        Refused::Finished { run_id } => {
            format!("refused: {head}: run {} finished it; --resume skips a finished batch", short(run_id))
        }
        Refused::Unreadable { url, why } => format!(
            "refused: {url}: cannot be read ({why}); a lease or note like this is never judged free or dead: look at it, and remove it only if no run is writing"
        ),
    }
}

/// What a takeover of `plan`'s batch in `uc` ended with: what was done, as
/// a folder's repair says it ([`RepairOutcome`]), else the line that says
/// why nothing was (refused, changed since the plan, or failed).
pub fn outcome(
    uc: &StoreUrl,
    plan: &RepairPlan,
    ended: Result<TakeoverEnd, BucketError>,
) -> Result<RepairOutcome, String> {
    let head = format!("{} {}", plan.task, plan.key);
    match ended {
        Ok(TakeoverEnd::TookOver(r)) | Ok(TakeoverEnd::Completed(r, _)) => Ok(RepairOutcome {
            kind: plan.kind,
            task: plan.task.clone(),
            key: plan.key.clone(),
            recovered: vec![r],
            expired_tombstones: Vec::new(),
        }),
        // The plan took a dead run over; the lease was gone when the
        // engine came to it: as on disk, this repair did nothing.
        Ok(TakeoverEnd::Free) => Err(format!(
            "{head} was taken over or released by another repair or run while this one waited: nothing was done by this one. Look again with `ubunye leases explain {}`.",
            ubunye::suggest::batch(std::path::Path::new(&uc.to_string()), &plan.key)
        )),
        Ok(TakeoverEnd::Refused(r)) => Err(refusal(&head, &r)),
        Ok(TakeoverEnd::Changed(why)) => Err(why),
        Err(e) => Err(e.to_string()),
    }
}

/// [`outcome`] as text, and whether it was done (false: nothing was).
pub fn outcome_text(uc: &StoreUrl, plan: &RepairPlan, ended: Result<TakeoverEnd, BucketError>) -> (bool, String) {
    match outcome(uc, plan, ended) {
        Ok(o) => (true, crate::report::repair_outcome(&o)),
        Err(why) => (false, why),
    }
}
