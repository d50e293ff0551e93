//! `ubunye leases explain|takeover|finish` with
//! `-d s3://bucket/prefix`.

use ubunye::bucket::{self, Holder, Place};
use ubunye::explain::Explanation;
use ubunye::explain::store::Found;
use ubunye::layout::TaskPath;
use ubunye::repair::AuditEntry;
use ubunye::repair::store::TakeoverEnd;

use super::explain::ExplainArgs;
use super::repair::{Kind, RepairArgs, confirm};
use crate::cli::store::open;
use crate::cli::{BatchArg, exit, out, outln, print_json, say_err};

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
        say_err(&e.to_string());
        exit::REFUSED
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
    // The batch may have changed while the plan was shown: it is looked at
    // again, and acted on only as planned (the engine re-checks as it acts).
    let again = ubunye::explain::store::find(&*objects, &uc, &plan.key, Some(&plan.task), &sys.timing);
    let now = match &again {
        Ok((_, Found::One(_, read))) => Some((read.state, read.lease.as_ref().map(|l| l.holder.run_id.clone()))),
        _ => None,
    };
    if now != Some((plan.state, plan.holder.clone())) {
        let is = now.map(|(s, _)| s.word()).unwrap_or("not there");
        say_err(&format!(
            "{} {} changed since the plan was shown (it is {is} now): nothing was done. Look again with `ubunye leases explain -d {dir} --task {} {}`.",
            plan.task,
            plan.key,
            plan.task,
            &plan.key[..plan.key.len().min(8)]
        ));
        return exit::REFUSED;
    }
    let Ok(task) = TaskPath::parse(&plan.task) else {
        say_err(&format!("{uc}: the task '{}' is not <usecase>/<package>/<task>", plan.task));
        return exit::REFUSED;
    };
    let place = Place { uc, task, key: plan.key.clone() };
    let holder = Holder::repair(kind, &sys);
    // The engine re-checks everything as it acts: a lease that came alive
    // since the plan is refused.
    let ended = ubunye::repair::store::takeover(objects.clone(), &place, &holder, sys.clock.clone(), &sys.timing);
    let head = format!("{} {}", plan.task, plan.key);
    // Every repair the engine acted on is audited, as on disk; an audit
    // that cannot be written is said, and is not the repair's failure.
    let entry = match &ended {
        Ok(TakeoverEnd::TookOver(r) | TakeoverEnd::Completed(r, _)) => {
            AuditEntry::of(&plan, std::slice::from_ref(r), "done".into())
        }
        Ok(TakeoverEnd::Free) => AuditEntry::of(&plan, &[], "done: no lease held it".into()),
        Ok(TakeoverEnd::Refused(r)) => AuditEntry::of(&plan, &[], crate::report::store::refusal(&head, r)),
        Err(e) => AuditEntry::of(&plan, &[], format!("refused: {e}")),
    };
    if let Err(e) = bucket::audit(&*objects, &place.uc, &plan.task, &plan.key, &entry.json(&sys)) {
        let under = objects.url(&place.uc.key(".ubunye/repairs/"));
        say_err(&format!("could not write the audit entry under {under}: {e}"));
    }
    match crate::report::store::outcome(kind, &plan.task, &plan.key, ended) {
        Ok(o) if a.json => {
            print_json(&o);
            exit::OK
        }
        Ok(o) => {
            out(&crate::report::repair_outcome(&o));
            exit::OK
        }
        Err((true, text)) => {
            outln(&text);
            exit::OK
        }
        Err((false, text)) => {
            say_err(&text);
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
