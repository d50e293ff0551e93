//! Recovering a dead run, the same in both stores: a run that had committed
//! has its commit completed for it (its finished note, the files its
//! `--rerun` replaces); any other has what it claimed taken back and its
//! record marked interrupted. Only what its lease claims (or replaces) is
//! ever removed; no output is listed to decide what to delete.

use std::path::PathBuf;

use serde::Serialize;

use super::LeaseStore;
use crate::documents::{self, LeaseDoc};

/// What was done for a dead run, in either store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    /// Its run id ("" for a lease that named none).
    pub run_id: String,
    /// It had finished (committed, or on a disk a done mark or a success
    /// record): its appends are the batch; its note was written and replaced
    /// files removed for it.
    pub finished: bool,
    /// The finished note was written for it.
    pub note_written: bool,
    /// Removed: its claims, or the files of the run it replaced (paths on a
    /// disk, `s3://` URLs in a store).
    pub removed: Vec<String>,
    /// Staging folders removed (a disk's).
    pub staging_removed: Vec<String>,
    /// Uploads aborted (a store's claims that were not yet visible).
    pub aborted: usize,
    /// Claims left alone, and why: a store's lease whose claims are not what
    /// a run of this engine writes is never acted on.
    pub left: Vec<(String, String)>,
    /// Append outputs that may hold part or all of its batch and could not be
    /// taken back.
    pub unrepaired: Vec<String>,
    /// Its record said running and now says how it ended: interrupted, or,
    /// in a store, success for a run that had committed (a store's run
    /// writes its record's end after its commit).
    pub record_marked: bool,
    /// Its record exists but cannot be parsed (half-written): left as it is,
    /// as the peer leaves it. Its path, and why.
    pub record_left: Option<(PathBuf, String)>,
    /// It was a dead lease left beside the lease (an orphan, on a disk).
    pub from_orphan: bool,
    /// Processes of it still running on this host (a command's background
    /// processes that outlived it), stopped before anything was taken back.
    pub processes_stopped: usize,
}

/// Who takes a dead run over, as its record's note names it.
#[derive(Clone, Copy, Debug)]
pub struct Taker<'a> {
    /// The taking run's id.
    pub run_id: &'a str,
    /// A repair's name (`ubunye leases takeover`); None for a run.
    pub actor: Option<&'a str>,
    /// When, as the record says it (`2026-12-05T10:00:00Z`).
    pub at: &'a str,
}

impl Taker<'_> {
    /// `run 1a2b3c4d`, or `ubunye leases takeover (run 1a2b3c4d)`.
    pub fn who(&self) -> String {
        match self.actor {
            Some(a) => format!("{a} (run {})", documents::short(self.run_id)),
            None => format!("run {}", documents::short(self.run_id)),
        }
    }
}

/// Recover `dead` (its notes already read without damage), found `finished`
/// by its store's rule, for `taker`.
pub fn recover<S: LeaseStore>(
    store: &S,
    dead: &mut LeaseDoc,
    finished: bool,
    taker: &Taker<'_>,
) -> Result<Recovery, S::Error> {
    let mut r = Recovery { run_id: dead.run_id(), finished, ..Recovery::default() };
    if finished {
        // Its appends are the batch: its note, if it died before writing it,
        // then the files of the run it replaced, then what it leaves behind.
        if store.named()
            && let Ok(Some(note)) = documents::finished_note(dead, store.task().as_str(), taker.at)
        {
            r.note_written = store.write_note(dead, &note)?;
        }
        store.remove_replaced(dead, &mut r)?;
        store.settle_finished(dead, &mut r)?;
        return Ok(r);
    }
    store.take_back(dead, &mut r)?;
    r.record_marked = mark_interrupted(store, &r.run_id, taker, &r.unrepaired)?;
    Ok(r)
}

/// Rewrite a dead run's `running` record as `interrupted`; a record that
/// cannot be read, or says anything else, is left alone.
fn mark_interrupted<S: LeaseStore>(
    store: &S,
    run_id: &str,
    taker: &Taker<'_>,
    unrepaired: &[String],
) -> Result<bool, S::Error> {
    rewrite_record(store, run_id, |body| super::record::interrupted(body, &taker.who(), taker.at, unrepaired))
}

/// Rewrite the record of the dead run `run_id` as `rewrite` makes it (None:
/// left as it is), on the version it was read at: whether it was. A run id
/// that cannot name a record names none.
pub fn rewrite_record<S: LeaseStore>(
    store: &S,
    run_id: &str,
    rewrite: impl FnOnce(&[u8]) -> Option<String>,
) -> Result<bool, S::Error> {
    if run_id.is_empty() || !crate::layout::run_id_is_safe(run_id) {
        return Ok(false);
    }
    let Some(rec) = store.record(run_id)? else { return Ok(false) };
    match rewrite(&rec.body) {
        Some(text) => store.rewrite_record(run_id, &text, &rec.version),
        None => Ok(false),
    }
}
