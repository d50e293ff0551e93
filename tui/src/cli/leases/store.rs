//! `ubunye leases explain|takeover|finish` with
//! `-d s3://bucket/prefix`.

use ubunye::bucket::{self, Holder};
use ubunye::explain::Explanation;
use ubunye::explain::store::Found;
use ubunye::repair::AuditEntry;

use super::explain::ExplainArgs;
use super::repair::{Kind, RepairArgs, confirm};
use crate::cli::store::open;
use crate::cli::{BatchArg, exit, out, print_json, say_err};

/// The one batch `which` names in the store at `dir`, explained; or the exit
/// code. The batch is named as in a folder (4 hex digits of its key or run
/// id or more), but never by a path: a store has no lease-folder files to
/// name.
fn one(
    which: &BatchArg,
    dir: &str,
) -> Result<(ubunye::bucket::StoreUrl, std::sync::Arc<dyn ubunye::bucket::Objects>, Explanation), i32> {
    let usage = |m: String| {
        say_err(&m);
        exit::USAGE
    };
    let q = which.batch.as_str();
    let listing = format!("`ubunye leases list -d {dir} --all` shows the keys and runs");
    if q.contains('/') {
        return Err(usage(format!(
            "'{}' is a path: a batch in a store is named by its key or run id (4 hex digits or more); {listing}",
            ubunye::state::shorten(q)
        )));
    }
    super::check_query(q).map_err(|e| usage(format!("{e}; {listing}")))?;
    if which.lineage.lineage_dir.is_some() {
        return Err(usage(crate::cli::store::no_lineage_dir(dir)));
    }
    let (uc, objects) = open(dir)?;
    let sys = crate::console::machine::sys();
    let store_err = |e: ubunye::bucket::StoreError| {
        let (code, why) = crate::cli::store::failed(e);
        say_err(&why);
        code
    };
    let (_, found) =
        ubunye::explain::store::find(&*objects, &uc, q, which.task.as_deref(), &sys.timing).map_err(store_err)?;
    let (batch, read) = match found {
        Found::One(b, read) => (b, read),
        Found::None(n) => {
            return Err(usage(format!(
                "no batch's key or run starts with '{q}' in {uc} ({n} batch(es); `ubunye leases list -d {dir} --all` shows them)"
            )));
        }
        Found::Several(bs) => {
            let names: Vec<String> = bs.iter().take(5).map(|b| format!("{} {}", b.task, b.key)).collect();
            return Err(usage(format!(
                "'{q}' names {} batches in {uc}: {}{}; give more digits, or --task",
                bs.len(),
                names.join(", "),
                if bs.len() > 5 { ", ..." } else { "" }
            )));
        }
    };
    let e = ubunye::explain::store::explain(&*objects, &uc, &batch, &read, &sys.timing).map_err(store_err)?;
    Ok((uc, objects, e))
}

/// `ubunye leases explain -d s3://...`.
pub fn explain(a: &ExplainArgs, dir: &str) -> i32 {
    match one(&a.which, dir) {
        Ok((_, _, e)) => {
            if a.json {
                print_json(&e);
            } else {
                out(&crate::report::explanation(&e, crate::console::table::terminal_width()));
            }
            exit::OK
        }
        Err(code) => code,
    }
}

/// `ubunye leases takeover|finish -d s3://...`: the disk's plan, question
/// and outcome, the engine's takeover in the store.
pub fn repair(a: &RepairArgs, kind: Kind, dir: &str) -> i32 {
    if !a.states.is_empty() || !a.filter.vars.is_empty() || a.filter.dt.is_some() {
        say_err(&format!(
            "repairs of many batches (--state, --dt, --var) read a folder; in a store, repair one batch at a time: `ubunye leases list -d {dir} --state dead,damaged,pending` lists them"
        ));
        return exit::USAGE;
    }
    if let Err(code) = super::repair::can_ask(a) {
        return code;
    }
    let (uc, objects, e) = match one(&a.which, dir) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let plan = match ubunye::repair::check(kind, &e) {
        Ok(p) => p,
        Err(why) => {
            say_err(&why);
            return exit::REFUSED;
        }
    };
    let sys = crate::console::machine::sys();
    if let Err(code) = confirm(a, &plan, store_wait(&plan, sys.timing.settle)) {
        return code;
    }
    let holder = Holder::repair(kind, &sys);
    // The batch may have changed while the plan was shown: it is read again
    // and acted on only as planned, and the engine re-checks as it acts (a
    // lease that came alive since is refused).
    let ended = ubunye::repair::store::execute(objects.clone(), &uc, &plan, &holder, sys.clock.clone(), &sys.timing);
    let outcome = crate::report::store::outcome(&uc, &plan, ended);
    // Every repair is audited, as on disk, done or not; an audit that cannot
    // be written is said, and is not the repair's failure.
    let entry = AuditEntry::of_outcome(&plan, &outcome);
    if let Err(e) = bucket::audit(&*objects, &uc, &plan.task, &plan.key, &entry.json(&sys)) {
        let under = objects.url(&uc.key(".ubunye/repairs/"));
        say_err(&format!("could not write the audit entry under {under}: {e}"));
    }
    match outcome {
        Ok(o) if a.json => {
            print_json(&o);
            exit::OK
        }
        Ok(o) => {
            out(&crate::report::repair_outcome(&o));
            exit::OK
        }
        Err(why) => {
            say_err(&why);
            exit::REFUSED
        }
    }
}

/// What a store's repair waits for: one settle after the dead run's uploads
/// are aborted, for a completion the store had already accepted to show (it
/// is then deleted); none when the run finished (its uploads are the batch)
/// or claimed nothing (it started no upload). A lease is taken over at once:
/// nothing waits for its run.
fn store_wait(plan: &ubunye::repair::RepairPlan, settle: std::time::Duration) -> Option<String> {
    let p = plan.plans.iter().find(|p| p.finished.is_none() && !p.remove.is_empty())?;
    Some(format!(
        "aborting the uploads of run {}'s {} claimed object(s), then waiting {} for a completion already sent to show…",
        ubunye::documents::short(&p.run_id),
        p.remove.len(),
        humantime::format_duration(settle)
    ))
}
