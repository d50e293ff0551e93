//! What only a store's engine says (`ubunye::bucket`), as text: a
//! takeover's end as a folder's repair outcome, and why a run or a repair
//! was refused the batch; for the CLI (`cli/store/`) and the dashboard over
//! a store (`top/store.rs`) alike. A store's batch is explained as a
//! folder's (`report::explanation`).

use ubunye::bucket::{BucketError, Refused};
use ubunye::documents::short;
use ubunye::repair::store::TakeoverEnd;
use ubunye::repair::{Kind, RepairOutcome};

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

/// What a takeover ended with: what was done, as a folder's repair says it
/// ([`RepairOutcome`]); else whether it counts as done (a lease released
/// meanwhile: nothing to do) and the line that says why.
pub fn outcome(
    kind: Kind,
    task: &str,
    key: &str,
    ended: Result<TakeoverEnd, BucketError>,
) -> Result<RepairOutcome, (bool, String)> {
    let head = format!("{task} {key}");
    match ended {
        Ok(TakeoverEnd::TookOver(r)) | Ok(TakeoverEnd::Completed(r, _)) => Ok(RepairOutcome {
            kind,
            task: task.to_string(),
            key: key.to_string(),
            recovered: vec![r],
            expired_tombstones: Vec::new(),
        }),
        Ok(TakeoverEnd::Free) => Err((true, format!("{head}: its lease was released meanwhile: nothing to do."))),
        Ok(TakeoverEnd::Refused(r)) => Err((false, refusal(&head, &r))),
        Err(e) => Err((false, e.to_string())),
    }
}

/// [`outcome`] as text, and whether it was done (false: refused or failed).
pub fn outcome_text(kind: Kind, task: &str, key: &str, ended: Result<TakeoverEnd, BucketError>) -> (bool, String) {
    match outcome(kind, task, key, ended) {
        Ok(o) => (true, crate::report::repair_outcome(&o)),
        Err(x) => x,
    }
}
