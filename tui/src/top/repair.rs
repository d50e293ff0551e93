//! The dashboard's two-phase repair (a folder's or a store's): a popup that lists exactly what
//! the repair will do (the steps of the library's plan) or why none applies,
//! answered No unless the user says yes; then the repair itself, through the
//! library, and its outcome or refusal.

use std::path::Path;

use ubunye::explain;
use ubunye::repair::{self, Kind, RepairPlan};
use ubunye::state;

use crate::top::model::{Model, Source};
use crate::top::popup::{Phase, Popup};

/// What the popup acts on: the library's plan, which the engine checks again
/// as it acts. With tagged batches, `more` holds the plans of the others,
/// and `skipped` the tagged batches no repair applies to, and why.
#[derive(Clone, Debug)]
pub struct Repair {
    pub plan: Box<RepairPlan>,
    pub more: Vec<RepairPlan>,
    pub skipped: Vec<String>,
}

/// The dashboard's popup.
pub type RepairPopup = Popup<Repair>;

fn verb(kind: Kind) -> &'static str {
    match kind {
        Kind::Takeover => "Take over",
        Kind::Finish => "Finish",
    }
}

/// The popup's title: `Take over demo/sales/ingest 7d106ca7`.
pub fn title(kind: Kind, task: &str, key: &str) -> String {
    format!("{} {task} {}", verb(kind), &key[..key.len().min(8)])
}

/// Read the batch again (as the model files it: the same batch a full scan
/// and `leases explain` give), explain it, and ask the library whether the
/// repair applies. A folder's only: a store's is planned off the screen's
/// thread ([`plan_ids`] over [`crate::top::store::Store::explain`]).
fn check(model: &mut Model, kind: Kind, task: &str, key: &str) -> Result<RepairPlan, String> {
    let batch = model.fresh(&(task.to_string(), key.to_string()))?;
    repair::check(kind, &explain::explain(&model.scan, batch))
}

/// Phase one: the plan of one batch, or why none applies.
pub fn plan(model: &mut Model, kind: Kind, task: &str, key: &str) -> RepairPopup {
    let ids = [(task.to_string(), key.to_string())];
    let root = model.scan.root.clone();
    plan_ids(kind, &ids, &root, |t, k| check(model, kind, t, k))
}

/// Phase one for tagged batches: each read again and checked, one popup
/// for all (the first plan, the others, and those skipped with why).
pub fn plan_many(model: &mut Model, kind: Kind, ids: &[(String, String)]) -> RepairPopup {
    let root = model.scan.root.clone();
    plan_ids(kind, ids, &root, |t, k| check(model, kind, t, k))
}

/// The popup of one batch's plan or several's, each batch checked by
/// `check` (its repair's plan, or why none applies); `root` names the use
/// case in the command it is the same as.
pub fn plan_ids(
    kind: Kind,
    ids: &[(String, String)],
    root: &Path,
    mut check: impl FnMut(&str, &str) -> Result<RepairPlan, String>,
) -> RepairPopup {
    if let [(task, key)] = ids {
        return match check(task, key) {
            Ok(plan) => asking(root, Repair { plan: Box::new(plan), more: Vec::new(), skipped: Vec::new() }),
            Err(reason) => refused(title(kind, task, key), reason),
        };
    }
    let (mut plans, mut skipped) = (Vec::new(), Vec::new());
    for (task, key) in ids {
        match check(task, key) {
            Ok(plan) => plans.push(plan),
            Err(reason) => skipped.push(reason),
        }
    }
    if plans.is_empty() {
        return refused(many_title(kind, ids.len()), format!("none of them needs it: {}", skipped.join("; ")));
    }
    let plan = Box::new(plans.remove(0));
    asking(root, Repair { plan, more: plans, skipped })
}

/// The title of a repair of `n` tagged batches.
fn many_title(kind: Kind, n: usize) -> String {
    format!("{} {n} tagged batch(es)", verb(kind))
}

/// The popup while the plan of `ids` is read (a store's, off the screen's
/// thread): its title is the one the plan's popup will have.
pub fn planning(kind: Kind, ids: &[(String, String)]) -> RepairPopup {
    let title = match ids {
        [(task, key)] => title(kind, task, key),
        _ => many_title(kind, ids.len()),
    };
    Popup::new(title, vec!["Reading the batch again from the store…".into()], Phase::Planning)
}

fn refused(title: String, reason: String) -> RepairPopup {
    let lines = vec!["Nothing to do here, and nothing was done:".into(), String::new(), reason];
    Popup::new(title, lines, Phase::Refused)
}

/// The whole plan in words: each batch's steps, the batches skipped and
/// why, and how it is checked and audited.
fn asking(root: &Path, r: Repair) -> RepairPopup {
    let mut lines = Vec::new();
    for p in std::iter::once(&*r.plan).chain(&r.more) {
        lines.push(format!("{} {} ({}):", p.task, &p.key[..8.min(p.key.len())], p.state.word()));
        lines.extend(p.steps.iter().cloned());
        lines.push(String::new());
    }
    lines.extend(r.skipped.iter().map(|s| format!("skip: {s}")));
    if !r.skipped.is_empty() {
        lines.push(String::new());
    }
    let (kind, n) = (r.plan.kind, r.more.len() + 1);
    // A store's repairs are audited an object each, under its batch.
    let audit = match root.to_str().is_some_and(ubunye::bucket::is_store_url) {
        true => "under .ubunye/repairs/ in the store",
        false => "in .ubunye/repairs.jsonl",
    };
    let title = if n == 1 {
        lines.push(format!("The same as `{} {}`.", kind.command(), ubunye::suggest::batch(root, &r.plan.key)));
        lines.push(format!("It is audited {audit}."));
        title(kind, &r.plan.task, &r.plan.key)
    } else {
        lines.push(format!(
            "{n} batches, each read again and re-checked by the engine as its turn comes, each audited {audit}."
        ));
        format!("{} {n} tagged batches", verb(kind))
    };
    Popup::new(title, lines, Phase::Asking { what: r, yes: false })
}

/// The popup while the repair, answered yes, is under way.
pub fn running(r: &Repair) -> RepairPopup {
    let title = match r.more.len() {
        0 => title(r.plan.kind, &r.plan.task, &r.plan.key),
        more => format!("Repairing {} tagged batches", more + 1),
    };
    let says = "Repairing through the engine: it holds the batch and waits its settle time (3 s by default) before it takes anything back…";
    Popup::new(title, vec![says.into()], Phase::Running)
}

/// The popup of what a repair did (`ok`), in words.
pub fn done(title: String, ok: bool, text: &str) -> RepairPopup {
    Popup::new(title, text.lines().map(str::to_string).collect(), Phase::Done { ok })
}

/// What a repair did.
#[derive(Debug)]
pub struct RepairDone {
    pub plan: RepairPlan,
    /// What it did in words, or why it was refused.
    pub outcome: Result<String, String>,
    /// The audit line could not be written.
    pub audit_error: Option<String>,
}

/// Phase two, after a yes: read the batch again, let the engine re-check and
/// act (its own acquire and release), and leave the audit line. Blocks for the
/// takeover's settle wait: run it off the UI thread.
pub fn carry_out(src: &Source, plan: RepairPlan) -> RepairDone {
    if let Some(store) = &src.store {
        let outcome = store.repair(&plan, &src.sys);
        return RepairDone { plan, outcome, audit_error: None };
    }
    // The batch as `leases takeover` reads it before acting: its task read,
    // the disk's clock read with a probe (a repair may write).
    let opts = state::ScanOptions { clock: state::ClockRead::Probe, ..src.opts.clone() };
    let outcome = state::scan_one(&src.uc, &plan.task, &plan.key, &opts, &src.sys)
        .map_err(|e| e.to_string())
        .and_then(|(_, current)| current.ok_or_else(|| format!("{} {}: its files went", plan.task, plan.key)))
        .and_then(|current| {
            repair::execute(&src.uc, &plan, &current, src.opts.lineage_dir.clone(), src.sys.clone())
                .map_err(|e| e.to_string())
        });
    let root = std::fs::canonicalize(&src.uc).unwrap_or_else(|_| src.uc.clone());
    let audit_error = repair::audit(&root, &plan, &outcome, &src.sys)
        .err()
        .map(|e| format!("could not write the audit line to {}: {e}", root.join(".ubunye/repairs.jsonl").display()));
    let outcome = outcome.map(|o| crate::report::repair_outcome(&o)).map_err(|e| format!("Refused: {e}"));
    RepairDone { plan, outcome, audit_error }
}

/// The outcome in words, as `ubunye leases takeover` prints it.
pub fn outcome_text(done: &RepairDone) -> (bool, String) {
    let mut out = String::new();
    let ok = done.outcome.is_ok();
    let (Ok(text) | Err(text)) = &done.outcome;
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    if let Some(a) = &done.audit_error {
        out.push_str(&format!("{a}\n"));
    }
    (ok, out)
}
