//! A finished batch (FORMAT.md §8, §10): the finished check before a run starts,
//! commit in the peer's order, `--rerun` removal after commit, release, and the
//! end of a run (kept leases, §9).

use serde::Serialize;
use serde_json::Value;

use crate::documents::{self, Map};
use crate::error::{Refusal, RefusalKind, Result};
use crate::fsx;
use crate::protocol::finished;
use crate::sys::Step;

use super::claims::Rollback;
use super::recover::claims_map;
use super::{RunLease, lock, outside_refusal, unreadable};

/// Claims per output: (output name, claims).
type Claims = (String, Vec<String>);

/// What the finished check found.
#[derive(Debug, Default, Serialize)]
pub struct FinishedCheck {
    /// "run 45fffa8e (finished 2026-11-29T10:32:07Z)" when a finished note lists outputs.
    pub finished_by: Option<String>,
    /// With `--rerun`: the finished run's claimed files, removed once this run commits.
    pub replaces: Vec<(String, Vec<String>)>,
    /// With `--rerun`: append outputs the finished run did not claim, which get the batch again.
    pub again: Vec<String>,
}

/// What commit did.
#[derive(Debug, Default, Serialize)]
pub struct Commit {
    /// The lease was no longer this run's: nothing was committed.
    pub lost: bool,
    /// The finished note was written (a named batch with outputs).
    pub note_written: bool,
    /// The note could not be written: the lease is kept for the next run.
    pub note_failed: bool,
    /// Files of the replaced run removed (`--rerun`).
    pub replaced_removed: Vec<std::path::PathBuf>,
    /// Files of the replaced run that could not be removed: the lease is kept.
    pub replaced_left: Vec<(String, Vec<String>)>,
    /// Staging folders (an overwrite's old copy among them) that could not be
    /// removed, and why: they stay listed and the lease is kept.
    pub old_copies_left: Vec<(String, String)>,
}

/// How a run ended.
#[derive(Debug, Serialize)]
#[serde(tag = "ended", rename_all = "kebab-case")]
pub enum Ended {
    /// It succeeded and committed.
    Committed {
        /// What commit did.
        commit: Commit,
        /// Something could not be cleaned up (replaced files, old copies, the
        /// note): the lease is kept for the next run.
        kept: bool,
    },
    /// It failed and took back what it claimed.
    RolledBack {
        /// What the rollback did; None when it failed (the lease is then kept).
        rollback: Option<Rollback>,
        /// Claims could not be removed (or the rollback failed): the lease is
        /// kept for the next run.
        kept: bool,
    },
}

impl RunLease {
    /// Before anything is written: refuse to append a batch a finished run already
    /// wrote, or with `rerun`, note the finished run's claimed files to remove once
    /// this run succeeds. Applies only when the task appends and the batch is named.
    pub fn check_finished(&self, appends: &[String], rerun: bool) -> Result<FinishedCheck> {
        let s = &*self.s;
        if appends.is_empty() || !s.named {
            return Ok(FinishedCheck::default());
        }
        let path = s.paths.finished();
        let bytes = match fsx::read_patient(&path, s.sys.timing.busy_for) {
            Err(e) => return Err(unreadable(&s.task, &path, e)),
            Ok(None) => return Ok(FinishedCheck::default()),
            Ok(Some(b)) => b,
        };
        let last = finished::parse(&bytes).map_err(|why| unreadable(&s.task, &path, why))?;
        if !finished::refuses(&last) {
            return Ok(FinishedCheck::default());
        }
        let outputs = last.outputs().unwrap_or_default();
        let who = format!("run {} (finished {})", last.run_short(), last.finished_at());
        let replaces: Vec<(String, Vec<String>)> =
            outputs.iter().filter(|o| !o.claimed.is_empty()).map(|o| (o.name.clone(), o.claimed.clone())).collect();
        let again: Vec<String> = appends
            .iter()
            .filter(|n| !outputs.iter().any(|o| &o.name == *n && (!o.claimed.is_empty() || o.staged)))
            .cloned()
            .collect();
        if !rerun {
            let hint = if again.is_empty() {
                "To replace the batch, run again with --rerun.".to_string()
            } else {
                format!(
                    "Output(s) {} cannot be taken back by Ubunye (not written as claimed files on a local or shared disk), so --rerun would append the batch to them again. Remove that run's rows first, or write them with mode overwrite_partitions.",
                    again.join(", ")
                )
            };
            return Err(Refusal::new(
                RefusalKind::Finished,
                format!("{} already finished this batch ({who}) and appends to {}: running it again would add the batch twice.", s.task, appends.join(", ")),
            )
            .with("Finished", path.display())
            .hint(format!("{hint} If each run adds new data to the same batch, give each run its own variable, for example --var hour=13."))
            .into());
        }
        // Stricter than the peer: a replaced file outside the use-case folder is
        // never removed, so the rerun is refused before it writes anything.
        for (_, files) in &replaces {
            for f in files {
                if let Err(r) = s.beneath.resolve(f) {
                    return Err(outside_refusal(&s.task, &path, &r));
                }
            }
        }
        {
            let mut st = lock(&s.state);
            let mut m = Map::new();
            for (n, files) in &replaces {
                m.insert(n.clone(), files.iter().cloned().map(Value::String).collect());
            }
            st.doc.set("replaces", Value::Object(m));
            if !s.save(&mut st)? {
                return Err(s.lost());
            }
        }
        Ok(FinishedCheck { finished_by: Some(who), replaces, again })
    }

    /// The run succeeded: its appends are the batch now. Order: the done mark;
    /// `committed` saved; the finished note; outputs cleared; then the files of
    /// the run it replaces removed. A crash at any point leaves the lease saying
    /// how far it got, and the next run finishes the job.
    pub fn commit(&self) -> Result<Commit> {
        let s = &*self.s;
        if s.owner() == Some(false) {
            return Ok(Commit { lost: true, ..Commit::default() });
        }
        // Not synced: the `committed` save just after is, and the landed
        // files were before either; a done mark a power cut loses
        // or empties tells nothing the lease does not.
        let _ = std::fs::write(s.paths.done(&s.run_id), s.now_z());
        s.sys.hook.at(Step::DoneMarked);
        let (note, replaces) = {
            let mut st = lock(&s.state);
            let fresh = !st.doc.0.contains_key("committed");
            st.doc.set("committed", Value::Bool(true));
            let saved = match fresh.then(|| s.append_field(&mut st, "committed", "true")).flatten() {
                Some(r) => r?,
                None => s.save(&mut st)?,
            };
            if !saved && (s.owner() == Some(false) || s.tombstoned()) {
                return Ok(Commit { lost: true, ..Commit::default() });
            }
            let note = if s.named {
                documents::finished_note(&st.doc, s.task.as_str(), &s.now_z()).unwrap_or(None)
            } else {
                None
            };
            (note, st.doc.replaces().unwrap_or_default())
        };
        s.sys.hook.at(Step::CommittedSaved);
        let note_written = note.is_some();
        if let Some(text) = note {
            if !matches!(fsx::write_atomic(&s.paths.finished(), text.as_bytes(), s.sys.timing.busy_for), Ok(true)) {
                lock(&s.state).keep = true;
                return Ok(Commit { note_failed: true, ..Commit::default() });
            }
            s.sys.hook.at(Step::Noted);
        }
        // The staging folders go now, and with them the old copies of overwrites
        // published by a swap: until the commit above, a takeover would have put
        // those back.
        let outputs = lock(&s.state).doc.0.get("outputs").and_then(Value::as_object).cloned().unwrap_or_default();
        let (_, old_copies_left) = self.settle_staging(&outputs);
        {
            let mut st = lock(&s.state);
            // Cleared, but for the notes of old copies still there: never forgotten.
            let kept: Map = outputs
                .into_iter()
                .filter(|(_, n)| {
                    let staging = n.get("staging").and_then(Value::as_str);
                    old_copies_left.iter().any(|(f, _)| Some(f.as_str()) == staging)
                })
                .collect();
            if !kept.is_empty() {
                st.keep = true;
            }
            st.doc.set("outputs", Value::Object(kept));
            s.save(&mut st)?;
        }
        s.sys.hook.at(Step::OutputsCleared);
        let (replaced_removed, replaced_left) = self.replace(&replaces)?;
        Ok(Commit { lost: false, note_written, note_failed: false, replaced_removed, replaced_left, old_copies_left })
    }

    /// Remove the files of the run this one replaced. Files that cannot be removed
    /// stay listed in the lease, which is then kept.
    fn replace(&self, replaces: &[Claims]) -> Result<(Vec<std::path::PathBuf>, Vec<Claims>)> {
        let s = &*self.s;
        if replaces.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut outputs = claims_map(replaces);
        let tb = self.take_back(&mut outputs, None);
        let mut st = lock(&s.state);
        if tb.left.is_empty() {
            st.doc.remove("replaces");
        } else {
            let mut m = Map::new();
            for (n, files) in &tb.left {
                m.insert(n.clone(), files.iter().cloned().map(Value::String).collect());
            }
            st.doc.set("replaces", Value::Object(m));
        }
        s.save(&mut st)?;
        st.left = tb.left.clone();
        Ok((tb.removed, tb.left))
    }

    /// Stop the heartbeat; if the lease is still this run's, remove it and this
    /// run's done mark. Returns whether the lease was removed.
    pub fn release(&self) -> bool {
        let s = &*self.s;
        self.stop_heartbeat();
        if s.owner() != Some(true) {
            return false;
        }
        let busy = s.sys.timing.busy_for;
        let gone = remove_patient(&s.lease_path(), busy);
        s.sys.hook.at(Step::Released);
        gone && remove_patient(&s.paths.done(&s.run_id), busy)
    }

    /// Leave the lease for the next run: stop the heartbeat and save `kept: true`.
    fn keep(&self) {
        let s = &*self.s;
        self.stop_heartbeat();
        let mut st = lock(&s.state);
        st.doc.set("kept", Value::Bool(true));
        let _ = s.save(&mut st);
    }

    /// End the run, as the peer's `runs.held` does on leaving its block.
    ///
    /// Success: commit (unless the lease was lost), then release; or keep the
    /// lease when the replaced run's files or the note could not be done. A lost
    /// lease is an error (the run must not record success).
    /// Failure: roll back; release, or keep the lease with the claims that could
    /// not be removed.
    pub fn end(self, succeeded: bool) -> Result<Ended> {
        if !succeeded {
            let rollback = self.rollback().ok();
            let kept = rollback.as_ref().is_none_or(|r| !r.left.is_empty());
            if kept {
                self.keep();
            } else {
                self.release();
            }
            return Ok(Ended::RolledBack { rollback, kept });
        }
        let mut commit = Commit { lost: !self.still_owned(), ..Commit::default() };
        if !commit.lost {
            commit = self.commit()?;
        }
        if commit.lost {
            // Taken over, or its lease displaced: this run's own files go (only
            // those that are still the files it moved in), so that a batch whose
            // lease is no longer this run's never keeps them: the run that holds
            // the lease may not know of them.
            let _ = self.rollback();
            self.stop_heartbeat();
            return Err(self.s.lost());
        }
        let (left, keep) = {
            let st = lock(&self.s.state);
            (!st.left.is_empty(), st.keep)
        };
        let kept = left || keep;
        if kept {
            self.keep();
        } else {
            self.release();
        }
        if commit.lost {
            return Err(self.s.lost());
        }
        Ok(Ended::Committed { commit, kept })
    }
}

fn remove_patient(path: &std::path::Path, busy: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + busy;
    loop {
        match fsx::remove_if_present(path) {
            Ok(()) => return true,
            Err(e) if fsx::is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(_) => return false,
        }
    }
}
