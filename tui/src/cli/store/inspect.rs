//! `ubunye leases explain|takeover|finish` with
//! `-d s3://bucket/prefix`.

use std::io::IsTerminal;

use ubunye::bucket::{self, Explained, Found, Holder, Place, TakeoverEnd};
use ubunye::layout::TaskPath;

use super::open;
use crate::cli::leases::explain::ExplainArgs;
use crate::cli::leases::repair::{Kind, RepairArgs, ask};
use crate::cli::{BatchArg, exit, out, outln, print_json, say_err};
use crate::report::store::{explained as render, takeover_outcome};

/// The one batch `which` names in the store at `dir`, explained; or the exit code.
fn one(
    which: &BatchArg,
    dir: &str,
    repair: bool,
) -> Result<(ubunye::bucket::StoreUrl, std::sync::Arc<dyn ubunye::bucket::Objects>, Explained), i32> {
    let usage = |m: String| {
        say_err(&m);
        exit::USAGE
    };
    let q = which.batch.as_str();
    let key_like = !q.is_empty() && q.chars().all(|c| c.is_ascii_hexdigit()) && q.len() <= 16;
    if !key_like && !ubunye::state::may_be_run_id(q) {
        return Err(usage(format!(
            "'{q}' is neither a batch key nor a run id, nor the start of one (hex digits): `ubunye leases list -d {dir} --all` shows the keys and runs"
        )));
    }
    if repair && q.len() < crate::cli::leases::REPAIR_PREFIX {
        return Err(usage(format!("a repair takes 4 hex digits of the key or more, not '{q}'")));
    }
    let (uc, objects) = open(dir)?;
    let sys = crate::console::machine::sys();
    let store_err = |e: ubunye::bucket::StoreError| {
        say_err(&e.to_string());
        exit::REFUSED
    };
    let (now, found) = bucket::find(&*objects, &uc, q, which.task.as_deref(), &sys.timing).map_err(store_err)?;
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
    let e = bucket::explain(&*objects, &uc, &batch, &read, now, &sys.timing).map_err(store_err)?;
    Ok((uc, objects, e))
}

/// `ubunye leases explain -d s3://...`.
pub fn explain(a: &ExplainArgs, dir: &str) -> i32 {
    match one(&a.which, dir, false) {
        Ok((_, _, e)) => {
            if a.json {
                print_json(&e);
            } else {
                out(&render(&e));
            }
            exit::OK
        }
        Err(code) => code,
    }
}

/// `ubunye leases takeover|finish -d s3://...`.
pub fn repair(a: &RepairArgs, kind: Kind, dir: &str) -> i32 {
    let (uc, objects, e) = match one(&a.which, dir, !a.dry_run) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let b = &e.batch;
    let head = format!("{} {}", b.task, b.key);
    let why_not = bucket::applies(&e, kind).err();
    if let Some(why) = why_not {
        say_err(&format!("refused: {head}: {why}"));
        return exit::REFUSED;
    }
    let plan = render(&e);
    if a.dry_run {
        if a.json {
            print_json(&e);
        } else {
            out(&plan);
            outln("(--dry-run: nothing was changed)");
        }
        return exit::OK;
    }
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            say_err("not on a terminal, so nobody can confirm: add --yes to repair, or --dry-run to only see the plan");
            return exit::USAGE;
        }
        out(&plan);
        if !ask("Go ahead?") {
            outln("Nothing was done.");
            return exit::REFUSED;
        }
    } else if !a.json {
        out(&plan);
    }
    let sys = crate::console::machine::sys();
    let Ok(task) = TaskPath::parse(&b.task) else {
        say_err(&format!("{}: the task '{}' is not <usecase>/<package>/<task>", b.url, b.task));
        return exit::REFUSED;
    };
    let place = Place { uc, task, key: b.key.clone() };
    let holder = Holder {
        run_id: uuid::Uuid::new_v4().to_string(),
        host: sys.host.clone(),
        pid: sys.pid,
        rerun: false,
        actor: Some(kind.command().to_string()),
    };
    // The engine re-checks everything as it acts: a lease that came alive
    // since the plan is refused.
    let ended = bucket::takeover(objects.clone(), &place, &holder, sys.clock.clone(), &sys.timing);
    // Every repair the engine acted on is audited, as on disk; an audit
    // that cannot be written is said, and is not the repair's failure.
    let (taken_over, files_removed, records_marked, outcome) = match &ended {
        // A lease that named no run: no run id to say.
        Ok(TakeoverEnd::TookOver(r) | TakeoverEnd::Completed(r, _)) => (
            [r.run_id.clone()].into_iter().filter(|r| !r.is_empty()).collect(),
            r.removed.clone(),
            if r.record_marked { vec![r.run_id.clone()] } else { Vec::new() },
            "done".to_string(),
        ),
        Ok(TakeoverEnd::Free) => (Vec::new(), Vec::new(), Vec::new(), "done: no lease held it".to_string()),
        Ok(TakeoverEnd::Refused(r)) => (Vec::new(), Vec::new(), Vec::new(), crate::report::store::refusal(&head, r)),
        Err(e) => (Vec::new(), Vec::new(), Vec::new(), format!("refused: {e}")),
    };
    let entry = ubunye::repair::AuditEntry {
        command: kind.command(),
        task: &b.task,
        key: &b.key,
        state: b.state,
        taken_over,
        files_removed,
        records_marked,
        outcome,
    };
    if let Err(e) = bucket::audit(&*objects, &place.uc, &b.task, &b.key, &entry.json(&sys)) {
        let under = objects.url(&place.uc.key(".ubunye/repairs/"));
        say_err(&format!("could not write the audit entry under {under}: {e}"));
    }
    if a.json
        && let Ok(TakeoverEnd::TookOver(r) | TakeoverEnd::Completed(r, _)) = &ended
    {
        print_json(r);
        return exit::OK;
    }
    let (ok, text) = takeover_outcome(&head, &ended);
    if ok {
        outln(&text);
        exit::OK
    } else {
        say_err(&text);
        exit::REFUSED
    }
}
