//! Recovering a dead run on a disk (FORMAT.md §7.1): the protocol's recovery
//! (`crate::protocol::recover`: finish the commit of a run that had finished,
//! or take back what an unfinished run claimed and mark its record
//! interrupted) over the batch's files ([`DiskBatch`]). Only claimed files,
//! the staging folder the lease names and a replaced run's listed files are
//! ever removed; no output folder is listed to decide what to delete.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::beneath::{PathRefusal, Removal};
use crate::documents::{LeaseDoc, Map};
use crate::fsx;
use crate::layout::TaskPath;
pub use crate::protocol::Recovery;
use crate::protocol::{LeaseStore, Taker, Versioned};

use super::RunLease;
use super::claims::Own;
use super::recovery_plan::{BatchFiles, plan_recovery};

/// Why a dead run could not be recovered (the takeover then hands the lease back
/// or refuses).
#[derive(Debug)]
pub(super) enum RecoverError {
    /// Its record (or its lease) cannot be read: whether it finished cannot be told.
    Unreadable { path: PathBuf, why: String },
    /// Some files could not be removed (or the note could not be written, or a
    /// path was refused, or a staging folder or an overwrite's old copy could not
    /// be removed or put back): they stay listed, never forgotten.
    InUse {
        left: Vec<(String, Vec<String>)>,
        replaces: bool,
        note: bool,
        refused: Vec<PathRefusal>,
        staging: Vec<(String, String)>,
        /// Why each claim that is there could not be removed: (file, why).
        failures: Vec<(PathBuf, String)>,
    },
}

/// Why a claimed file could not be removed, in words a person can act on.
fn failure_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EISDIR) => "a folder where a claimed file should be: the engine removes only the files a run claimed, never a folder; move it out of the way by hand".into(),
        Some(libc::EACCES) | Some(libc::EPERM) => format!("{e}: give this user write access to its folder (or remove the immutable flag)"),
        Some(libc::EBUSY) | Some(libc::ETXTBSY) => format!("{e}: in use; close whatever has it open"),
        _ => format!("{e}"),
    }
}

/// `out/events/a (why); out/events/b (why)`: claims with why each is left.
pub(super) fn left_text(left: &[(String, Vec<String>)], failures: &[(PathBuf, String)]) -> String {
    left.iter()
        .flat_map(|(_, c)| c.iter())
        .map(|c| match failures.iter().find(|(p, _)| p.ends_with(c)) {
            Some((_, why)) => format!("{c} ({why})"),
            None => c.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The result of removing what some outputs claimed.
#[derive(Debug, Default)]
pub(super) struct TakeBack {
    pub(super) removed: Vec<PathBuf>,
    pub(super) staging_removed: Vec<String>,
    /// Staging folders (or old copies) still there, and why: they stay listed.
    pub(super) staging_left: Vec<(String, String)>,
    /// Claims that could not be removed (or were refused), per output.
    pub(super) left: Vec<(String, Vec<String>)>,
    pub(super) refused: Vec<PathRefusal>,
    /// (file, error) for each claim that could not be removed.
    pub(super) failures: Vec<(PathBuf, String)>,
}

/// Why a staging folder was not removed although nothing refused it.
const STAGING_LEFT: &str =
    "something in it cannot be removed (a mount point inside it, or a file in use or without permission)";

/// Keep an output listed (with no claims, if it has none left).
fn keep_listed(left: &mut Vec<(String, Vec<String>)>, name: &str) {
    if !left.iter().any(|(n, _)| n == name) {
        left.push((name.to_string(), Vec::new()));
    }
}

fn push_left(left: &mut Vec<(String, Vec<String>)>, name: &str, claim: String) {
    match left.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => v.push(claim),
        None => left.push((name.to_string(), vec![claim])),
    }
}

/// Build `{name: {"claimed": [...]}}` from `replaces`-like lists.
pub(super) fn claims_map(lists: &[(String, Vec<String>)]) -> Map {
    let mut m = Map::new();
    for (n, files) in lists {
        let mut o = Map::new();
        o.insert("claimed".into(), files.iter().cloned().map(Value::String).collect());
        m.insert(n.clone(), Value::Object(o));
    }
    m
}

impl RunLease {
    /// Remove what the notes in `outputs` claimed: their staging folders, then each
    /// claimed file that exists. A claim not found is skipped (it never landed);
    /// if its folder is not visible either it is flagged `unseen` in place. After
    /// each removal, a `_SUCCESS` left over an output with no data goes too.
    ///
    /// `own`: a run taking back its own work (its rollback) gives what it did
    /// itself, and only that is undone: a swap it did not make is not put back,
    /// a staged claim it did not move in is not removed, and a file it moved in
    /// is removed only while it is still that file. A takeover (None) goes by the
    /// dead run's lease, as the peer does.
    pub(super) fn take_back(&self, outputs: &mut Map, own: Option<&Own>) -> TakeBack {
        let b = &self.s.beneath;
        let mut out = TakeBack::default();
        for (name, note) in outputs.iter_mut() {
            let Value::Object(note) = note else { continue };
            if let Some(Value::String(staging)) = note.get("staging").cloned()
                && !staging.is_empty()
            {
                // An overwrite published by a swap is put back first: until
                // then its staging name may hold the old output.
                let made = own.is_none_or(|o| o.swapped.contains(name.as_str()));
                let undone = match crate::documents::swap_note(note) {
                    None => Ok(None),
                    // Never made by this run (its exchange failed, or it never got
                    // there): nothing to put back, and no old copy of its own.
                    Some(Ok(_)) if !made => Ok(None),
                    Some(Ok(sw)) => b.undo_swap(&staging, sw.id, sw.old.as_deref()).map(|()| sw.old),
                    Some(Err(())) => Err(PathRefusal::Invalid {
                        path: staging.clone(),
                        why: "its overwrite's swap record cannot be read, so whether it was swapped cannot be told",
                    }),
                };
                let removed = undone.and_then(|old| {
                    let gone = b.remove_staging(&staging)?;
                    Ok(gone && old.map_or(Ok(true), |o| b.remove_staging(&o))?)
                });
                match removed {
                    Ok(true) => out.staging_removed.push(staging.clone()),
                    Ok(false) => {
                        out.staging_left.push((staging.clone(), STAGING_LEFT.to_string()));
                        keep_listed(&mut out.left, name);
                    }
                    Err(r) => {
                        // Kept listed (with whatever claims stay) so it is never forgotten.
                        out.refused.push(r);
                        keep_listed(&mut out.left, name);
                    }
                }
            }
            let claims: Vec<String> = match note.get("claimed") {
                Some(Value::Array(a)) => a.iter().filter_map(|c| c.as_str().map(str::to_string)).collect(),
                _ => Vec::new(),
            };
            let mut removed_here: Vec<(String, PathBuf)> = Vec::new();
            for claim in claims {
                let moved = own.and_then(|o| o.moved.get(&claim).copied());
                if own.is_some_and(|o| o.staged.contains(&claim)) && moved.is_none() {
                    // Claimed for a landing that never moved it in: not this run's.
                    continue;
                }
                match b.remove_claim_if(&claim, moved) {
                    Removal::Removed(p) => {
                        self.s.sys.hook.at(crate::sys::Step::FileRemoved);
                        if let Some(parent) = p.parent() {
                            b.drop_success_marker(parent);
                        }
                        removed_here.push((claim.clone(), p.clone()));
                        out.removed.push(p);
                    }
                    Removal::Missing { unseen } => {
                        if unseen {
                            note.insert("unseen".into(), Value::Bool(true));
                        }
                    }
                    Removal::Failed(p, e) => {
                        out.failures.push((p, failure_text(&e)));
                        push_left(&mut out.left, name, claim);
                    }
                    Removal::Refused(r) => {
                        out.refused.push(r);
                        push_left(&mut out.left, name, claim);
                    }
                }
            }
            // The removals on the disk before the lease that claims the files
            // can forget them (a power cut could bring back files no lease
            // claims): a folder that cannot be synced keeps its files' claims
            // listed.
            let dirs: BTreeSet<PathBuf> =
                removed_here.iter().filter_map(|(_, p)| p.parent().map(Path::to_path_buf)).collect();
            for d in dirs {
                if let Err(e) = crate::durable::dir(&d) {
                    for (c, p) in removed_here.iter().filter(|(_, p)| p.parent() == Some(d.as_path())) {
                        out.failures.push((p.clone(), format!("removed, but the removal cannot be synced: {e}")));
                        push_left(&mut out.left, name, c.clone());
                    }
                }
            }
        }
        out
    }

    /// Recover a dead run from its lease document (see the module docs): the
    /// protocol's recovery ([`crate::protocol::recover`]) over this batch's
    /// files, decided by the plan (`explain` and `--dry-run` show what this
    /// does).
    pub(super) fn recover(&self, dead: &mut LeaseDoc, orphan: bool) -> Result<Recovery, RecoverError> {
        let s = &*self.s;
        let dead_id = dead.run_id();
        // No writer outlives its run: a dead `ubunye exec`'s command's background
        // processes, on this host, are stopped before anything is taken back.
        let processes_stopped = if dead.0.get("host").and_then(Value::as_str) == Some(s.sys.host.as_str()) {
            crate::reap::stop_run_processes(&dead_id)
        } else {
            0
        };
        let files = self.batch_files();
        let plan = plan_recovery(&files, dead, Some(s.named))
            .map_err(|u| RecoverError::Unreadable { path: u.path, why: u.why })?;
        let now = s.now_z();
        let taker = Taker { run_id: &s.run_id, actor: s.actor.as_deref(), at: &now };
        let mut r = crate::protocol::recover(&DiskBatch(self), dead, plan.finished.is_some(), &taker)?;
        if !r.finished {
            r.record_left = plan.record_damaged.map(|why| (files.record_path(&dead_id), why));
        }
        r.from_orphan = orphan;
        r.processes_stopped = processes_stopped;
        Ok(r)
    }

    /// A finished run's staging folders go: nothing in them is part of its batch
    /// (an append's files were all moved in before it committed). An overwrite
    /// published by a swap is settled first ([`crate::beneath::Beneath::settle_swap`]):
    /// its old copy is what its staging name holds. Returns the folders removed,
    /// and those left (with why), which stay listed.
    pub(super) fn settle_staging(&self, outputs: &Map) -> (Vec<String>, Vec<(String, String)>) {
        let b = &self.s.beneath;
        let (mut settled, mut left) = (Vec::new(), Vec::new());
        for note in outputs.values() {
            let Value::Object(note) = note else { continue };
            let Some(Value::String(staging)) = note.get("staging") else { continue };
            if staging.is_empty() {
                continue;
            }
            let done = match crate::documents::swap_note(note) {
                Some(sw) => b.settle_swap(staging, sw.ok().and_then(|sw| sw.old).as_deref()),
                None => b.remove_staging(staging),
            };
            match done {
                Ok(true) => settled.push(staging.clone()),
                Ok(false) => left.push((staging.clone(), STAGING_LEFT.to_string())),
                Err(r) => left.push((staging.clone(), r.to_string())),
            }
        }
        (settled, left)
    }

    fn record_path(&self, run_id: &str) -> PathBuf {
        self.s.lineage_dir.join(self.s.task.as_str()).join(format!("{run_id}.json"))
    }

    fn batch_files(&self) -> BatchFiles<'_> {
        let s = &*self.s;
        BatchFiles {
            beneath: &s.beneath,
            paths: &s.paths,
            lineage_dir: &s.lineage_dir,
            task: &s.task,
            busy: s.sys.timing.busy_for,
        }
    }
}

/// A batch's files on a disk, as the protocol's recovery sees them: the
/// peer's documents, each written whole by a rename (the peer's way; a disk
/// has no compare-and-swap, so a version is not kept: the dead run's record
/// and note are written only by the run that holds its lease).
struct DiskBatch<'a>(&'a RunLease);

/// Paths as the reports give them.
fn shown(paths: Vec<PathBuf>) -> Vec<String> {
    paths.into_iter().map(|p| p.to_string_lossy().into_owned()).collect()
}

impl LeaseStore for DiskBatch<'_> {
    type Error = RecoverError;
    type Version = ();

    fn task(&self) -> &TaskPath {
        &self.0.s.task
    }

    fn named(&self) -> bool {
        self.0.s.named
    }

    fn write_note(&self, dead: &LeaseDoc, note: &str) -> Result<bool, RecoverError> {
        let s = &*self.0.s;
        if let Ok(true) = fsx::write_atomic(&s.paths.finished(), note.as_bytes(), s.sys.timing.busy_for) {
            return Ok(true);
        }
        Err(RecoverError::InUse {
            left: dead.replaces().unwrap_or_default(),
            replaces: true,
            note: true,
            refused: Vec::new(),
            staging: Vec::new(),
            failures: Vec::new(),
        })
    }

    fn remove_replaced(&self, dead: &LeaseDoc, r: &mut Recovery) -> Result<(), RecoverError> {
        let mut outputs = claims_map(&dead.replaces().unwrap_or_default());
        let tb = self.0.take_back(&mut outputs, None);
        if !tb.left.is_empty() {
            let (left, refused, failures) = (tb.left, tb.refused, tb.failures);
            return Err(RecoverError::InUse {
                left,
                replaces: true,
                note: false,
                refused,
                staging: Vec::new(),
                failures,
            });
        }
        r.removed.extend(shown(tb.removed));
        Ok(())
    }

    fn settle_finished(&self, dead: &LeaseDoc, r: &mut Recovery) -> Result<(), RecoverError> {
        // Its staging folders go, its overwrites' old copies with them; then
        // its done mark.
        let outputs = dead.0.get("outputs").and_then(Value::as_object).cloned().unwrap_or_default();
        let (settled, staging) = self.0.settle_staging(&outputs);
        if !staging.is_empty() {
            let (left, refused, failures) = (Vec::new(), Vec::new(), Vec::new());
            return Err(RecoverError::InUse { left, replaces: true, note: false, refused, staging, failures });
        }
        r.staging_removed = settled;
        if !r.run_id.is_empty() {
            let _ = fsx::remove_if_present(&self.0.s.paths.done(&r.run_id));
        }
        Ok(())
    }

    fn take_back(&self, dead: &mut LeaseDoc, r: &mut Recovery) -> Result<(), RecoverError> {
        let mut outputs = match dead.0.get("outputs") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let tb = self.0.take_back(&mut outputs, None);
        // What was not seen is noted in the lease (`unseen`): its outputs are
        // then unrepaired.
        if dead.0.get("outputs").is_some_and(Value::is_object) {
            dead.set("outputs", Value::Object(outputs));
        }
        if !tb.left.is_empty() || !tb.refused.is_empty() {
            let (left, refused, staging, failures) = (tb.left, tb.refused, tb.staging_left, tb.failures);
            return Err(RecoverError::InUse { left, replaces: false, note: false, refused, staging, failures });
        }
        r.removed = shown(tb.removed);
        r.staging_removed = tb.staging_removed;
        r.unrepaired = crate::documents::unrepaired(&dead.notes().unwrap_or_default());
        Ok(())
    }

    fn record(&self, run_id: &str) -> Result<Option<Versioned<()>>, RecoverError> {
        Ok(fs::read(self.0.record_path(run_id)).ok().map(|body| Versioned { body, version: () }))
    }

    fn rewrite_record(&self, run_id: &str, text: &str, _: &()) -> Result<bool, RecoverError> {
        let s = &*self.0.s;
        let marked =
            matches!(fsx::write_atomic(&self.0.record_path(run_id), text.as_bytes(), s.sys.timing.busy_for), Ok(true));
        if marked {
            s.sys.hook.at(crate::sys::Step::RecordMarked);
        }
        Ok(marked)
    }
}
