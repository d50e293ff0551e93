//! Outputs and claims (FORMAT.md §4–5, §9): every output is noted before it is
//! written, every appended file is claimed in the lease before it lands, and a run
//! that fails takes back what it claimed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::beneath::{FileId, PathRefusal, is_staging_name};
use crate::documents::{self, Map};
use crate::error::{Error, Refusal, RefusalKind, Result};

use super::{RunLease, lock};

/// What a rollback did.
#[derive(Debug, Default, Serialize)]
pub struct Rollback {
    /// Claimed files removed, as full paths.
    pub removed: Vec<PathBuf>,
    /// Staging folders removed with all they held, as the lease names them.
    pub staging_removed: Vec<String>,
    /// Claims that could not be removed, per output: the lease is kept for them.
    pub left: Vec<(String, Vec<String>)>,
    /// (file, error) for each claim that could not be removed.
    pub failures: Vec<(PathBuf, String)>,
    /// Append outputs this run wrote that cannot be taken back.
    pub unrepaired: Vec<String>,
    /// Paths the lease names that this engine will not remove, each with why:
    /// left listed.
    pub refused: Vec<String>,
}

/// What this run itself did, kept in memory. Its own rollback (it failed, or
/// lost its lease) undoes only that: once a run may have been taken over, the
/// lease no longer tells what is still its own (the taker may have removed its
/// staging folder, published and committed under the same names, in folders
/// that got the same inode numbers).
#[derive(Clone, Debug, Default)]
pub(super) struct Own {
    /// The identity of each file this run moved in, by claim: taking its own
    /// files back never removes a same-named file someone else put there since.
    pub(super) moved: HashMap<String, FileId>,
    /// Claims made for a staged landing ([`crate::append::Landing`]): the run's
    /// own only once moved in. One it never moved is not removed by its rollback.
    pub(super) staged: HashSet<String>,
    /// Overwrite outputs whose swap this run made, wholly or in part (the old
    /// output moved aside). A swap it did not make (its exchange failed) is never
    /// undone by it.
    pub(super) swapped: HashSet<String>,
}

fn claim_refusal(lease: &RunLease, r: &PathRefusal) -> Error {
    Refusal::new(
        RefusalKind::Outside,
        format!("Run {} of {} will not claim {r}. Nothing was moved.", documents::short(lease.run_id()), lease.task()),
    )
    .hint("Write appended files beneath the use-case folder (-d): only those can be taken back safely.")
    .into()
}

impl RunLease {
    /// An output is about to be written. `exact`: its files are claimed.
    pub fn writing(&self, output: &str, appends: bool, exact: bool) -> Result<()> {
        let s = &*self.s;
        let mut st = lock(&s.state);
        st.doc.outputs_mut().insert(output.to_string(), documents::writing_note(appends, exact));
        if !s.save(&mut st)? {
            return Err(s.lost());
        }
        Ok(())
    }

    /// An output was written (`state: done`).
    pub fn written(&self, output: &str) -> Result<()> {
        let s = &*self.s;
        let mut st = lock(&s.state);
        if let Some(Value::Object(note)) = st.doc.outputs_mut().get_mut(output) {
            note.insert("state".into(), Value::String("done".into()));
            s.save(&mut st)?;
        }
        Ok(())
    }

    /// Before a file is moved into an append output: record it as this run's.
    /// Nothing may be moved if this fails.
    pub fn claim(&self, output: &str, path: &Path) -> Result<()> {
        self.claim_all(output, &[path.to_path_buf()]).map(|_| ())
    }

    /// [`RunLease::claim`] for many files, in one save of the lease. Each claim is
    /// the file's path relative to the use-case folder with its folder resolved;
    /// a file outside the use-case folder is refused before anything is saved.
    /// Returns the claims as recorded (relative to the use-case folder).
    pub fn claim_all(&self, output: &str, paths: &[PathBuf]) -> Result<Vec<String>> {
        let s = &*self.s;
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let claims = s.beneath.portable_many(paths).map_err(|r| claim_refusal(self, &r))?;
        let mut st = lock(&s.state);
        let Some(Value::Object(note)) = st.doc.outputs_mut().get_mut(output) else {
            return Err(Error::Usage(format!("output '{output}' is not being written: call writing() first")));
        };
        let list = note.entry("claimed").or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(a) = list {
            a.extend(claims.iter().cloned().map(Value::String));
        }
        // A few claims at a time (a per-file writer): written in place when the
        // lease file has room reserved for them, else one save that reserves room.
        let small = paths.len() <= 16;
        if small {
            let quoted: Vec<String> = claims
                .iter()
                .map(|c| {
                    let mut q = String::new();
                    crate::pyjson::write_str(&mut q, c, true);
                    q
                })
                .collect();
            match s.append_claims(&mut st, output, &quoted) {
                Some(Ok(true)) => return Ok(claims),
                Some(Ok(false)) => {
                    truncate_claims(&mut st.doc, output, claims.len());
                    return Err(s.lost());
                }
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        if !s.save_reserving(&mut st, small.then_some(output))? {
            truncate_claims(&mut st.doc, output, claims.len());
            return Err(s.lost());
        }
        Ok(claims)
    }

    /// Before an append is written into a new folder of this run's own (to be
    /// claimed and moved into the output afterwards): record that folder, and that
    /// this output's files will be claimed (`exact`). The folder must not exist
    /// yet and must be named `_ubunye-<12hex>` (inside the output) or
    /// `.<output>.ubunye-<12hex>` (beside it).
    pub fn staging(&self, output: &str, folder: &Path) -> Result<String> {
        let s = &*self.s;
        let name = folder.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if !is_staging_name(name) {
            return Err(Error::Usage(format!("{} is not a staging folder name (_ubunye-<12 hex>)", folder.display())));
        }
        let rel = s.beneath.portable(folder).map_err(|r| claim_refusal(self, &r))?;
        let mut st = lock(&s.state);
        let Some(Value::Object(note)) = st.doc.outputs_mut().get_mut(output) else {
            return Err(Error::Usage(format!("output '{output}' is not being written: call writing() first")));
        };
        let was = (note.get("exact").cloned(), note.get("staging").cloned());
        note.insert("exact".into(), Value::Bool(true));
        note.insert("staging".into(), Value::String(rel.clone()));
        if !s.save(&mut st)? {
            if let Some(Value::Object(note)) = st.doc.outputs_mut().get_mut(output) {
                restore(note, "exact", was.0);
                restore(note, "staging", was.1);
            }
            return Err(s.lost());
        }
        Ok(rel)
    }

    /// Take back a claim before anything was moved to it (the name turned out to
    /// be taken by a file that is not this run's).
    pub fn unclaim(&self, output: &str, path: &Path) -> Result<()> {
        let s = &*self.s;
        let claim = s.beneath.portable(path).map_err(|r| claim_refusal(self, &r))?;
        let mut st = lock(&s.state);
        if let Some(Value::Object(note)) = st.doc.outputs_mut().get_mut(output)
            && let Some(Value::Array(a)) = note.get_mut("claimed")
        {
            a.retain(|c| c.as_str() != Some(claim.as_str()));
        }
        if !s.save(&mut st)? {
            return Err(s.lost());
        }
        Ok(())
    }

    /// Remove this run's staging folder (as recorded in the lease).
    pub fn remove_staging(&self, staging_claim: &str) -> std::result::Result<bool, PathRefusal> {
        self.s.beneath.remove_staging(staging_claim)
    }

    /// Just after a claimed file was moved in: one stat of this run's takeover
    /// mark. A run taken over meanwhile removes the file again and stops.
    pub fn landed(&self, path: &Path) -> Result<()> {
        if self.s.tombstoned() {
            let _ = std::fs::remove_file(path);
            return Err(self.s.lost());
        }
        Ok(())
    }

    /// After the last claimed file of a write was moved in: the full ownership
    /// check. A lease that is gone or another run's has this write's files
    /// removed again.
    pub fn all_landed(&self, paths: &[PathBuf]) -> Result<()> {
        if self.s.owner() == Some(false) {
            for p in paths {
                let _ = std::fs::remove_file(p);
            }
            return Err(self.s.lost());
        }
        Ok(())
    }

    /// [`RunLease::landed`] for a file moved in under `claim` whose identity
    /// (device, inode) is `id`, as it was before the move. The identity is kept:
    /// when this run takes its files back (it failed, or lost its lease), a file
    /// that has since been replaced by another run's under the same name is left.
    pub fn landed_file(&self, claim: &str, id: FileId) -> Result<()> {
        lock(&self.s.state).own.moved.insert(claim.to_string(), id);
        if self.s.tombstoned() {
            let _ = self.s.beneath.remove_claim_if(claim, Some(id));
            return Err(self.s.lost());
        }
        Ok(())
    }

    /// [`RunLease::all_landed`] for files recorded with [`RunLease::landed_file`]:
    /// removed again only if they are still the files this run moved in.
    pub fn all_landed_files(&self, claims: &[String]) -> Result<()> {
        if self.s.owner() == Some(false) {
            let moved = lock(&self.s.state).own.moved.clone();
            for c in claims {
                let _ = self.s.beneath.remove_claim_if(c, moved.get(c).copied());
            }
            return Err(self.s.lost());
        }
        Ok(())
    }

    /// Claims of a staged landing (see [`Own::staged`]).
    pub(crate) fn staged_claims(&self, claims: &[String]) {
        lock(&self.s.state).own.staged.extend(claims.iter().cloned());
    }

    /// This run failed: remove the files it claimed and its staging folders, and
    /// put back the outputs it swapped. Only what this run itself did (`Own`):
    /// a claimed file it never moved in, or a swap it never made, is left. The
    /// lease's outputs are cut down to the claims that could not be removed.
    pub fn rollback(&self) -> Result<Rollback> {
        let s = &*self.s;
        let (mut outputs, own) = {
            let st = lock(&s.state);
            (st.doc.0.get("outputs").and_then(Value::as_object).cloned().unwrap_or_default(), st.own.clone())
        };
        let tb = self.take_back(&mut outputs, Some(&own));
        let notes: Vec<documents::Note> = documents::LeaseDoc({
            let mut m = Map::new();
            m.insert("outputs".into(), Value::Object(outputs.clone()));
            m
        })
        .notes()
        .unwrap_or_default();
        let unrepaired = documents::unrepaired(&notes);
        let mut kept = Map::new();
        for (n, claims) in &tb.left {
            let mut o = outputs.get(n).and_then(Value::as_object).cloned().unwrap_or_default();
            o.insert("claimed".into(), claims.iter().cloned().map(Value::String).collect());
            kept.insert(n.clone(), Value::Object(o));
        }
        {
            let mut st = lock(&s.state);
            st.doc.set("outputs", Value::Object(kept));
            s.save(&mut st)?;
            st.left = tb.left.clone();
        }
        Ok(Rollback {
            removed: tb.removed,
            staging_removed: tb.staging_removed,
            left: tb.left,
            failures: tb.failures,
            unrepaired,
            refused: tb.refused.iter().map(|r| r.to_string()).collect(),
        })
    }
}

fn not_checked(staging: &str, output: &str, why: &str) -> Error {
    Refusal::new(
        RefusalKind::Outside,
        format!(
            "The new folder of output {output}, {staging}: {why}. The overwrite is not published; nothing was replaced."
        ),
    )
    .hint("Write the output's files into the folder in $UBUNYE_OUT_<NAME>; leave the folder itself alone.")
    .into()
}

fn truncate_claims(doc: &mut documents::LeaseDoc, output: &str, added: usize) {
    if let Some(Value::Object(note)) = doc.outputs_mut().get_mut(output)
        && let Some(Value::Array(a)) = note.get_mut("claimed")
    {
        let keep = a.len().saturating_sub(added);
        a.truncate(keep);
    }
}

fn restore(note: &mut Map, key: &str, was: Option<Value>) {
    match was {
        Some(v) => {
            note.insert(key.into(), v);
        }
        None => {
            note.shift_remove(key);
        }
    }
}

impl RunLease {
    /// Before overwrite outputs are published: record, in one save, the identity
    /// of each one's new folder (its staging folder, which must still be the
    /// folder `(dev, ino)` checked before): device, inode and birth time. A run
    /// killed once this is saved is undone by whoever takes it over: an output
    /// that is the new folder is swapped back (docs/differences.md). The run
    /// keeps a handle on each new folder until it ends.
    pub fn note_swaps(&self, swaps: &[(String, (u64, u64))]) -> Result<()> {
        if swaps.is_empty() {
            return Ok(());
        }
        let s = &*self.s;
        let mut st = lock(&s.state);
        for (output, checked) in swaps {
            let staging = match st.doc.outputs_mut().get(output) {
                Some(Value::Object(note)) => {
                    note.get("staging").and_then(Value::as_str).unwrap_or_default().to_string()
                }
                _ => return Err(Error::Usage(format!("output '{output}' is not being written: call writing() first"))),
            };
            let held = s.beneath.hold_folder(&staging).map_err(|r| r.to_string());
            let (fd, id) = match held {
                Ok((fd, id)) if (id.dev, id.ino) == *checked => (fd, id),
                Ok(_) => return Err(not_checked(&staging, output, "it is no longer the folder that was checked")),
                Err(why) => return Err(not_checked(&staging, output, &why)),
            };
            st.held.push(fd);
            let mut m = Map::new();
            m.insert("dev".into(), Value::from(id.dev));
            m.insert("ino".into(), Value::from(id.ino));
            if let Some((sec, ns)) = id.born {
                m.insert("born".into(), Value::Array(vec![Value::from(sec), Value::from(ns)]));
            }
            if let Some(Value::Object(note)) = st.doc.outputs_mut().get_mut(output) {
                note.insert("swap".into(), Value::Object(m));
            }
        }
        if !s.save(&mut st)? {
            return Err(s.lost());
        }
        Ok(())
    }

    /// This run made (some of) the swap of `output`: the old output was moved
    /// aside or exchanged. Only then does its own rollback put the old output back.
    pub fn swap_made(&self, output: &str) {
        lock(&self.s.state).own.swapped.insert(output.to_string());
    }

    /// Where no exchange exists: before the old output is renamed aside to `old`,
    /// record that name (a run killed between the two renames is then put back).
    pub fn note_old_copy(&self, output: &str, old: &Path) -> Result<()> {
        let s = &*self.s;
        let claim = s.beneath.portable(old).map_err(|r| claim_refusal(self, &r))?;
        let mut st = lock(&s.state);
        match st.doc.outputs_mut().get_mut(output).and_then(|n| n.get_mut("swap")) {
            Some(Value::Object(m)) => {
                m.insert("old".into(), Value::String(claim));
            }
            _ => return Err(Error::Usage(format!("output '{output}' has no swap record: call note_swaps() first"))),
        }
        if !s.save(&mut st)? {
            return Err(s.lost());
        }
        Ok(())
    }
}
