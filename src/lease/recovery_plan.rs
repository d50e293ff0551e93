//! What recovering a dead run will do, decided before anything is done: the
//! same decision the engine's takeover acts on (`recover.rs` calls
//! [`plan_recovery`]), so that `ubunye leases explain`, `--dry-run` and the
//! dashboard's repair popup show exactly what a takeover would carry out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::beneath::Beneath;
use crate::documents::{self, LeaseDoc};
use crate::fsx;
use crate::layout::{LeasePaths, TaskPath};

/// The files a batch's recovery touches, without a lease.
#[derive(Clone, Copy, Debug)]
pub struct BatchFiles<'a> {
    /// The use-case folder, which every path to remove must resolve beneath.
    pub beneath: &'a Beneath,
    /// The names of the batch's files in its lease folder.
    pub paths: &'a LeasePaths,
    /// The folder of run records (`<dir>/<task>/<run_id>.json`).
    pub lineage_dir: &'a Path,
    /// The task: `<usecase>/<package>/<task>`.
    pub task: &'a TaskPath,
    /// How long a busy file is retried (the peer's 2 s).
    pub busy: Duration,
}

impl BatchFiles<'_> {
    /// `<lineage>/<task>/<run_id>.json`
    pub fn record_path(&self, run_id: &str) -> PathBuf {
        self.lineage_dir.join(self.task.as_str()).join(format!("{run_id}.json"))
    }
}

/// One file recovery would remove.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedFile {
    /// The output it belongs to.
    pub output: String,
    /// As the lease or note lists it.
    pub claim: String,
    /// Where it resolves (None: refused, see `refused`).
    pub path: Option<PathBuf>,
    /// It is there now (else it never landed, or is already gone).
    pub present: bool,
    /// Its size in bytes, when it is there.
    pub size: Option<u64>,
    /// Neither it nor its folder is visible from here.
    pub unseen: bool,
    /// A folder stands where the claimed file should be: never removed (the
    /// engine removes only files a run claimed), so the plan is refused.
    pub folder: bool,
}

/// Why a dead run counts as finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishedBy {
    /// Its lease says `committed`.
    Committed,
    /// Its done mark `<key>.done-<run>` is there.
    DoneMark,
    /// Its run record says success (it is written before commit).
    SuccessRecord,
}

/// What recovering one dead run will do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecoveryPlan {
    /// The dead run's id (empty for a lease that named none).
    pub run_id: String,
    /// It had finished: its appends are the batch and stay; its commit is
    /// completed for it (note, replaced files, done mark).
    pub finished: Option<FinishedBy>,
    /// The finished note that will be written for it (a finished run whose lease
    /// lists outputs, in a named batch).
    pub write_note: Option<PathBuf>,
    /// Files removed: its claims (unfinished), or the replaced run's files
    /// (finished, `replaces`).
    pub remove: Vec<PlannedFile>,
    /// Staging folders removed (with all they hold: nothing in them landed; for
    /// a finished run, an overwrite's old copy).
    pub staging: Vec<String>,
    /// Overwrite outputs `ubunye exec` published by a swap, put back as they
    /// were before the run (it did not finish).
    pub restore: Vec<String>,
    /// Its record, which says running, marked as ended: interrupted (in a
    /// store, success for a run that had committed).
    pub mark_record: Option<PathBuf>,
    /// What its record says (None: no record, or one half-written).
    pub record_status: Option<String>,
    /// Its record exists but cannot be parsed (half-written when its run
    /// died): why. Recovery goes ahead past it, as the peer's does, and
    /// leaves it as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_damaged: Option<String>,
    /// Its done mark, removed once the rest is done.
    pub remove_done: Option<PathBuf>,
    /// Append outputs that may hold part of its batch and cannot be taken back.
    pub unrepaired: Vec<String>,
    /// Paths it names that this engine will not remove (outside the use-case
    /// folder, under `.ubunye/`, through a symlink): recovery refuses.
    pub refused: Vec<String>,
}

impl RecoveryPlan {
    /// Files that will really be removed (present now).
    pub fn present(&self) -> impl Iterator<Item = &PlannedFile> {
        self.remove.iter().filter(|f| f.present)
    }
}

/// A record or lease that exists but cannot be read: whether the run finished
/// cannot be told, so nothing can be planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why it cannot be read, in words.
    pub why: String,
}

/// What a run record says, read as the engine reads it before a takeover.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordSays {
    /// Its status (None: no record, or one that is not a JSON object).
    pub status: Option<String>,
    /// It exists but is not a JSON object (half-written when its run died):
    /// why. The engine, like the peer, takes it as "not finished".
    pub damaged: Option<String>,
}

/// A run record's status, read as the engine reads it before a takeover.
pub fn record_status(files: &BatchFiles<'_>, run_id: &str) -> Result<RecordSays, Unreadable> {
    if run_id.is_empty() {
        return Ok(RecordSays::default());
    }
    let path = files.record_path(run_id);
    let bytes = match fsx::read_patient(&path, files.busy) {
        Ok(None) => return Ok(RecordSays::default()),
        Ok(Some(b)) => b,
        Err(e) => return Err(Unreadable { path, why: e.to_string() }),
    };
    let status = crate::lineage::status_of(&bytes).map_err(|why| Unreadable { path, why })?;
    let damaged = crate::lineage::damage_of(&bytes);
    Ok(RecordSays { status, damaged })
}

fn planned(files: &BatchFiles<'_>, output: &str, claim: &str) -> (PlannedFile, Option<String>) {
    match files.beneath.resolve(claim).and_then(|inside| files.beneath.check_walk(claim).map(|()| inside)) {
        Ok(inside) => {
            let meta = std::fs::symlink_metadata(&inside.full);
            let unseen = meta.is_err() && !inside.full.parent().is_some_and(Path::is_dir);
            let folder = meta.as_ref().is_ok_and(|m| m.is_dir());
            let f = PlannedFile {
                output: output.to_string(),
                claim: claim.to_string(),
                present: meta.is_ok(),
                size: meta.ok().map(|m| m.len()),
                path: Some(inside.full),
                unseen,
                folder,
            };
            // Said before anyone is asked: the removal would fail after the
            // settle, with the lease renamed aside.
            let refused = folder.then(|| {
                format!("{claim} is a folder where a claimed file should be (the engine removes only the files a run claimed, never a folder): move it out of the way by hand")
            });
            (f, refused)
        }
        Err(r) => {
            let f = PlannedFile {
                output: output.to_string(),
                claim: claim.to_string(),
                path: None,
                present: false,
                size: None,
                unseen: false,
                folder: false,
            };
            (f, Some(r.to_string()))
        }
    }
}

/// Plan the removal of a staging folder the lease names, or refuse it: outside
/// the use case, through a symlinked folder, or not a name Ubunye makes.
fn plan_staging(files: &BatchFiles<'_>, plan: &mut RecoveryPlan, st: String) {
    match files.beneath.resolve(&st).and_then(|inside| files.beneath.check_walk(&st).map(|()| inside)) {
        Ok(inside) if crate::beneath::is_staging_name(inside.parts.last().map(String::as_str).unwrap_or_default()) => {
            plan.staging.push(st)
        }
        Ok(_) => plan.refused.push(format!("{st} is not a staging folder name Ubunye makes")),
        Err(r) => plan.refused.push(r.to_string()),
    }
}

/// Decide what recovering the dead run of `dead` does (FORMAT.md §7.1). `named`:
/// whether the batch is named (only named batches get a finished note); None
/// when it is not known (no record gives the variables): a note is planned.
pub fn plan_recovery(files: &BatchFiles<'_>, dead: &LeaseDoc, named: Option<bool>) -> Result<RecoveryPlan, Unreadable> {
    let run_id = dead.run_id();
    let done = (!run_id.is_empty()).then(|| files.paths.done(&run_id));
    let done_there = done.as_ref().is_some_and(|d| fsx::exists(d));
    let mut says = None;
    let finished = if dead.committed() {
        Some(FinishedBy::Committed)
    } else if done_there {
        Some(FinishedBy::DoneMark)
    } else {
        let s = record_status(files, &run_id)?;
        let success = s.status.as_deref() == Some("success");
        says = Some(s);
        success.then_some(FinishedBy::SuccessRecord)
    };
    // Shown, not decided on: a record that cannot be read does not matter here.
    let RecordSays { status, damaged } = says.unwrap_or_else(|| record_status(files, &run_id).unwrap_or_default());
    let mut plan = RecoveryPlan {
        run_id,
        finished,
        write_note: None,
        remove: Vec::new(),
        staging: Vec::new(),
        restore: Vec::new(),
        mark_record: None,
        record_status: status.clone(),
        record_damaged: damaged,
        remove_done: None,
        unrepaired: Vec::new(),
        refused: Vec::new(),
    };
    let damaged = |d: documents::Damage| Unreadable { path: files.paths.lease(), why: d.to_string() };
    if finished.is_some() {
        let has_outputs = dead.0.get("outputs").is_some_and(crate::pyjson::truthy);
        if has_outputs && named != Some(false) {
            plan.write_note = Some(files.paths.finished());
        }
        for (output, claims) in dead.replaces().map_err(damaged)? {
            for c in claims {
                let (f, refused) = planned(files, &output, &c);
                plan.refused.extend(refused);
                plan.remove.push(f);
            }
        }
        // Its staging folders go (an overwrite's old copy is what they hold).
        for n in dead.notes().map_err(damaged)? {
            if let Some(st) = n.staging.filter(|st| fsx::exists(&files.beneath.root().join(st))) {
                plan_staging(files, &mut plan, st);
            }
        }
        plan.remove_done = done.filter(|_| done_there);
        return Ok(plan);
    }
    let raw = dead.0.get("outputs").and_then(serde_json::Value::as_object).cloned().unwrap_or_default();
    let mut notes = dead.notes().map_err(damaged)?;
    for n in &mut notes {
        match raw.get(&n.name).and_then(serde_json::Value::as_object).and_then(crate::documents::swap_note) {
            Some(Ok(_)) => plan.restore.push(n.name.clone()),
            Some(Err(())) => plan.refused.push(format!("the swap record of output {} cannot be read", n.name)),
            None => {}
        }
        if let Some(st) = &n.staging {
            plan_staging(files, &mut plan, st.clone());
        }
        for c in &n.claimed {
            let (f, refused) = planned(files, &n.name, c);
            if f.unseen {
                n.unseen = true;
            }
            plan.refused.extend(refused);
            plan.remove.push(f);
        }
    }
    plan.unrepaired = documents::unrepaired(&notes);
    if status.as_deref() == Some("running") {
        plan.mark_record = Some(files.record_path(&plan.run_id));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_the_fixtures() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/peer");
        let task = TaskPath::parse("demo/sales/ingest").unwrap();
        let case = |fixture: &str, key: &str| {
            let uc = root.join(fixture).join("uc");
            let beneath = Beneath::new(&uc).unwrap();
            let paths = LeasePaths::new(beneath.root(), &task, key);
            let lineage = beneath.root().join(".ubunye/lineage");
            let files = BatchFiles {
                beneath: &beneath,
                paths: &paths,
                lineage_dir: &lineage,
                task: &task,
                busy: Duration::ZERO,
            };
            let text = std::fs::read(paths.lease()).unwrap();
            let dead = LeaseDoc::from_parsed(documents::parse_doc(&text).unwrap());
            plan_recovery(&files, &dead, Some(true)).unwrap()
        };
        let p = case("dead-killed", "7d106ca76674f2a1");
        assert_eq!((p.finished, p.present().count(), p.mark_record.is_some()), (None, 1, true));
        let p = case("dead-before-commit", "7d106ca76674f2a1");
        assert_eq!(p.finished, Some(FinishedBy::SuccessRecord));
        assert!(p.write_note.is_some() && p.remove.is_empty() && p.mark_record.is_none());
        let p = case("rerun-pending", "39bc42311894ddba");
        assert_eq!(p.finished, Some(FinishedBy::Committed));
        assert_eq!((p.write_note.clone(), p.present().count(), p.remove_done.is_some()), (None, 1, true));
        let p = case("dead-spark-staged", "540a6418b2f41334");
        assert_eq!((p.finished, p.remove.len(), p.present().count(), p.staging.len()), (None, 3, 1, 1));
    }
}
