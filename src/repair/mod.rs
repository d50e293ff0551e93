//! Guarded repairs, through the engine: `ubunye leases takeover` and
//! `ubunye leases finish` run the same acquire the next run of the batch would
//! (rename, verify, create, settle, re-check, tombstone, recover, adopt orphans),
//! then release the batch without running anything. First the plan, from the
//! same code that will carry it out; a live holder, stalled or not, is never
//! taken over; every repair leaves one line in `.ubunye/repairs.jsonl`.

pub mod store;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::explain::Explanation;
use crate::layout::TaskPath;
use crate::lease::Recovery;
use crate::lease::recovery_plan::RecoveryPlan;
use crate::lease::{LeaseSpec, RunLease};
use crate::state::{Batch, Flag, State};
use crate::sys::Sys;

/// Which repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `ubunye leases takeover`: take a dead run's lease over, as its next run
    /// would.
    Takeover,
    /// `ubunye leases finish`: complete the commit of a run that got to commit
    /// (pending).
    Finish,
}

impl Kind {
    /// The command that runs it: `ubunye leases takeover` or `ubunye leases finish`.
    pub fn command(self) -> &'static str {
        match self {
            Kind::Takeover => "ubunye leases takeover",
            Kind::Finish => "ubunye leases finish",
        }
    }
}

/// What a repair will do: the batch, its state, and the recovery plans.
#[derive(Clone, Debug, Serialize)]
pub struct RepairPlan {
    /// Which repair.
    pub kind: Kind,
    /// The task: `<usecase>/<package>/<task>`.
    pub task: String,
    /// The batch key (16 hex digits).
    pub key: String,
    /// Its state when the plan was made: the repair refuses if it has changed.
    pub state: State,
    /// The run whose lease is taken over (empty for an orphan-only batch).
    pub holder: Option<String>,
    /// What recovering each dead run (the holder, each orphan) will do.
    pub plans: Vec<RecoveryPlan>,
    /// The plan in words, as `leases explain` shows it.
    pub steps: Vec<String>,
}

/// What a repair did.
#[derive(Clone, Debug, Serialize)]
pub struct RepairOutcome {
    /// Which repair.
    pub kind: Kind,
    /// The task: `<usecase>/<package>/<task>`.
    pub task: String,
    /// The batch key (16 hex digits).
    pub key: String,
    /// What was done for each dead run.
    pub recovered: Vec<Recovery>,
    /// Takeover marks older than 7 days that the acquire removed.
    pub expired_tombstones: Vec<PathBuf>,
}

/// Whether this repair applies to the batch, and if not, why not: one line.
pub fn check(kind: Kind, e: &Explanation) -> std::result::Result<RepairPlan, String> {
    let b = &e.batch;
    let why_not = |what: &str| format!("{} {} is {}: {what}", b.task, b.key, b.state.word());
    match (kind, b.state) {
        (_, State::Live) => {
            let v = e.verdict.clone().unwrap_or_default();
            return Err(why_not(&format!(
                "a live run holds it, and a live run is never taken over ({v}). {}",
                e.next.steps.join(" ")
            )));
        }
        (_, State::Kept) if b.flags.contains(&Flag::HolderAlive) => {
            return Err(why_not(
                "its lease was kept by a run whose process still runs; end that process first, then take it over",
            ));
        }
        (_, State::Unreadable) => {
            return Err(why_not(&format!(
                "{} Nothing is repaired while a file cannot be read.",
                e.next.steps.first().cloned().unwrap_or_default()
            )));
        }
        (_, State::Interrupted | State::Failed | State::Finished) => {
            return Err(why_not(&format!(
                "no lease holds it, so there is nothing to take over or finish. {}",
                e.next.steps.join(" ")
            )));
        }
        (_, State::Damaged) if !b.lease.as_ref().and_then(|l| l.holder.judgement.as_ref()).is_some_and(|j| j.dead) => {
            return Err(why_not(&e.next.steps.join(" ")));
        }
        (Kind::Finish, State::Dead | State::Damaged | State::Orphan | State::Kept | State::HandedBack) => {
            return Err(why_not(&format!(
                "its run did not commit, so there is nothing to finish: use `ubunye leases takeover {}`",
                crate::suggest::batch(&e.use_case, &b.key)
            )));
        }
        (_, State::Dead | State::Damaged | State::Orphan | State::Kept | State::HandedBack | State::Pending) => {}
    }
    if let Some(r) = e.plans.iter().flat_map(|p| &p.refused).next() {
        return Err(why_not(&format!("its lease names a path this engine will not remove: {r}. Nothing was changed.")));
    }
    if e.next.command.is_none() {
        return Err(why_not(&e.next.steps.join(" ")));
    }
    Ok(RepairPlan {
        kind,
        task: b.task.clone(),
        key: b.key.clone(),
        state: b.state,
        holder: b.lease.as_ref().map(|l| l.holder.run_id.clone()),
        plans: e.plans.clone(),
        steps: e.next.steps.clone(),
    })
}

/// Whether the batch, read again as `now` (None: it is gone), is as `plan`
/// was made for: the same state and the same holder. Else why not, and how
/// to look again at it in the use case `uc`: a repair acts on no batch that
/// changed while its plan was shown, on a disk or in a store.
pub fn unchanged(plan: &RepairPlan, now: Option<&Batch>, uc: &Path) -> std::result::Result<(), String> {
    let holder = now.and_then(|b| b.lease.as_ref()).map(|l| l.holder.run_id.clone());
    if now.is_some_and(|b| b.state == plan.state) && holder == plan.holder {
        return Ok(());
    }
    let is = match now {
        Some(b) => format!(
            "{} now{}",
            b.state.word(),
            holder.map(|h| format!(", held by run {}", crate::documents::short(&h))).unwrap_or_default()
        ),
        None => "not there now".into(),
    };
    Err(format!(
        "{} {} changed since the plan was shown (it is {is}): nothing was done. Look again with `ubunye leases explain {}`.",
        plan.task,
        plan.key,
        crate::suggest::batch(uc, &plan.key)
    ))
}

/// Carry a repair out: the engine's own acquire, then release. `expected`
/// holder: the run the plan was made for; if the batch changed hands since the
/// plan was shown, nothing is done.
pub fn execute(
    uc: &Path,
    plan: &RepairPlan,
    current: &Batch,
    lineage_dir: Option<PathBuf>,
    sys: Sys,
) -> Result<RepairOutcome> {
    unchanged(plan, Some(current), uc).map_err(|why| Refusal::new(RefusalKind::Contended, why))?;
    let task = TaskPath::parse(&plan.task).map_err(Error::Usage)?;
    let named = current
        .variables
        .as_ref()
        .and_then(|v| crate::vars::variables_from_json(&serde_json::Value::Object(v.clone())).ok())
        .map(|v| crate::key::names_a_batch(&v));
    let spec = LeaseSpec {
        usecase_dir: uc.to_path_buf(),
        task,
        variables: Vec::new(),
        run_id: uuid::Uuid::new_v4().to_string(),
        lineage_dir,
        actor: Some(plan.kind.command().to_string()),
        key: Some((plan.key.clone(), named)),
    };
    let (lease, acquired) = RunLease::acquire(spec, sys)?;
    lease.release();
    let mut recovered: Vec<Recovery> = acquired.took_over.into_iter().collect();
    recovered.extend(acquired.adopted);
    // Every plan takes a dead run (or an orphan) over. None taken: another
    // repair or run took it over while this one waited for the lease, and
    // found it free; this one did nothing, and says so.
    if recovered.is_empty() {
        return Err(Refusal::new(
            RefusalKind::Contended,
            format!(
                "{} {} was taken over by another repair or run while this one waited: nothing was done by this one. Look again with `ubunye leases explain {}`.",
                plan.task,
                plan.key,
                crate::suggest::batch(uc, &plan.key)
            ),
        )
        .into());
    }
    Ok(RepairOutcome {
        kind: plan.kind,
        task: plan.task.clone(),
        key: plan.key.clone(),
        recovered,
        expired_tombstones: acquired.expired_tombstones,
    })
}

/// Who runs this: `$USER`, else the name /etc/passwd gives this uid, else the uid.
pub fn user_name() -> String {
    if let Ok(u) = std::env::var("USER").or_else(|_| std::env::var("LOGNAME"))
        && !u.is_empty()
    {
        return u;
    }
    let uid = rustix::process::getuid().as_raw().to_string();
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 2 && f[2] == uid).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// What one repair did, as its audit entry says: who, which batch, what was
/// taken over, removed and marked, and how it ended. The same entry on disk
/// (a line of `.ubunye/repairs.jsonl`) and in a store (an object under
/// `.ubunye/repairs/`).
pub struct AuditEntry<'a> {
    /// `takeover` or `finish`.
    pub command: &'static str,
    /// The batch's task.
    pub task: &'a str,
    /// The batch's key.
    pub key: &'a str,
    /// Its state when the plan was made.
    pub state: State,
    /// The runs taken over.
    pub taken_over: Vec<String>,
    /// The files (or objects' URLs) removed.
    pub files_removed: Vec<String>,
    /// The runs whose record was marked interrupted.
    pub records_marked: Vec<String>,
    /// `done`, or `refused: <why>`.
    pub outcome: String,
}

impl<'a> AuditEntry<'a> {
    /// The entry of a repair of `plan` that recovered `recovered` (nothing,
    /// when it was refused or no lease held the batch), ended as `outcome`.
    /// A run is named only where its lease named one.
    pub fn of(plan: &'a RepairPlan, recovered: &[Recovery], outcome: String) -> AuditEntry<'a> {
        AuditEntry {
            command: plan.kind.command(),
            task: &plan.task,
            key: &plan.key,
            state: plan.state,
            taken_over: recovered.iter().map(|r| r.run_id.clone()).filter(|r| !r.is_empty()).collect(),
            files_removed: recovered.iter().flat_map(|r| r.removed.iter().cloned()).collect(),
            records_marked: recovered.iter().filter(|r| r.record_marked).map(|r| r.run_id.clone()).collect(),
            outcome,
        }
    }

    /// The entry of a repair of `plan` that ended as `outcome`: `done`, or
    /// `refused: <why>` (said once, whatever already says it).
    pub fn of_outcome(plan: &'a RepairPlan, outcome: &std::result::Result<RepairOutcome, String>) -> AuditEntry<'a> {
        match outcome {
            Ok(o) => AuditEntry::of(plan, &o.recovered, "done".into()),
            Err(why) => AuditEntry::of(plan, &[], format!("refused: {}", why.strip_prefix("refused: ").unwrap_or(why))),
        }
    }

    /// The entry as its JSON object, stamped with who and when.
    pub fn json(&self, sys: &Sys) -> serde_json::Value {
        serde_json::json!({
            "time": crate::timefmt::utc_z(sys.clock.now()),
            "user": user_name(),
            "host": sys.host,
            "pid": sys.pid,
            "command": self.command,
            "task": self.task,
            "key": self.key,
            "state": self.state,
            "taken_over": self.taken_over,
            "files_removed": self.files_removed,
            "records_marked": self.records_marked,
            "outcome": self.outcome,
        })
    }
}

/// Append one line to `<uc>/.ubunye/repairs.jsonl`, in one `O_APPEND` write.
pub fn audit(
    root: &Path,
    plan: &RepairPlan,
    outcome: &std::result::Result<RepairOutcome, String>,
    sys: &Sys,
) -> std::io::Result<()> {
    let entry = AuditEntry::of_outcome(plan, outcome);
    let mut text = serde_json::to_string(&entry.json(sys))?;
    text.push('\n');
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(root.join(".ubunye/repairs.jsonl"))?;
    f.write_all(text.as_bytes())
}
