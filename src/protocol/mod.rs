//! The steps of the lease protocol that are the same whatever holds the
//! batch's documents, written once over a [`LeaseStore`]: a disk (the peer's
//! files, `crate::lease`) and an object store (`crate::bucket`).
//!
//! What differs between the two is how a document is replaced (the peer's
//! rename dance on a disk, a conditional write on an ETag in a store), how a
//! holder is judged dead (its process and heartbeat on a disk, the lease's
//! age by the store's clock in a store) and how a claim is taken back (a
//! file removed; an upload aborted and its object deleted). Those stay each
//! store's own; what a step *does* with them is here:
//!
//! | step | written here | each store's part |
//! |---|---|---|
//! | recovery of a dead run | [`recover`]: a finished run's commit completed (note, replaced files), else its claims taken back and its record marked interrupted | [`LeaseStore::take_back`], [`LeaseStore::write_note`], [`LeaseStore::remove_replaced`], [`LeaseStore::settle_finished`] |
//! | the finished check | [`finished`]: what a note says a run may do, read the same by a run, the state model and explain | reading the note |
//! | a run record marked interrupted | [`record::interrupted`]: the peer's note, who took over | [`LeaseStore::record`], [`LeaseStore::rewrite_record`] |
//! | what a store cannot do | [`Capabilities`], refused in one line | — |
//!
//! The outcome of a recovery is one type, [`Recovery`], for both stores: the
//! reports, `--json` and the audit read one shape.

pub mod finished;
pub mod record;
mod recovery;

pub use recovery::{Recovery, Taker, recover, rewrite_record};

use crate::documents::LeaseDoc;
use crate::layout::TaskPath;

/// What a store can and cannot do, so that what it lacks is refused in one
/// line instead of being half done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// An output folder can be replaced whole in one step (`--overwrite`,
    /// published by a swap of two folders).
    pub atomic_swap: bool,
}

impl Capabilities {
    /// A local or shared disk.
    pub const DISK: Capabilities = Capabilities { atomic_swap: true };
    /// An object store (S3 and what speaks it).
    pub const STORE: Capabilities = Capabilities { atomic_swap: false };

    /// `--overwrite` to `place`, refused in one line when the store has no
    /// atomic swap.
    pub fn overwrite(&self, place: &str) -> Result<(), String> {
        if self.atomic_swap {
            return Ok(());
        }
        Err(format!(
            "{place}: --overwrite to an object store is refused: a store has no atomic swap of a prefix, so readers could see a half-replaced output; use --append, or a table format (Delta Lake, Apache Iceberg) that replaces by a commit"
        ))
    }
}

/// A document as read, and the version it was read at.
#[derive(Clone, Debug)]
pub struct Versioned<V> {
    /// Its bytes.
    pub body: Vec<u8>,
    /// Its version.
    pub version: V,
}

/// The documents of one batch, and what is done to its claims, in one store.
/// A dead run's recovery ([`recover`]) goes through these alone.
pub trait LeaseStore {
    /// What went wrong (and what is kept to be retried).
    type Error;
    /// A document's version as read: an ETag in a store; nothing on a disk,
    /// whose documents are replaced whole by a rename, as the peer's are.
    type Version;

    /// The batch's task (its finished note names it).
    fn task(&self) -> &TaskPath;

    /// Whether the batch is named (has variables): only a named batch has a
    /// finished note.
    fn named(&self) -> bool;

    /// Write the finished note of `dead`, a run that had committed but died
    /// before its note was there: whether it was written. `note` is the note
    /// as the run would have written it.
    fn write_note(&self, dead: &LeaseDoc, note: &str) -> Result<bool, Self::Error>;

    /// Remove what a committed `--rerun` lease replaces (the files of the run
    /// it replaced), adding them to `r.removed`.
    fn remove_replaced(&self, dead: &LeaseDoc, r: &mut Recovery) -> Result<(), Self::Error>;

    /// What else a finished run leaves for its taker (on a disk: its staging
    /// folders and its done mark).
    fn settle_finished(&self, dead: &LeaseDoc, r: &mut Recovery) -> Result<(), Self::Error>;

    /// Take back what an unfinished run `dead` claimed; what cannot be taken
    /// back stays listed in `dead` (never forgotten) and is an error. Outputs
    /// that may hold part of its batch and cannot be taken back go in
    /// `r.unrepaired` (the record's note names them).
    fn take_back(&self, dead: &mut LeaseDoc, r: &mut Recovery) -> Result<(), Self::Error>;

    /// A run's record as it is now, and its version; None when there is none
    /// (or it cannot be read: it is then left as it is).
    fn record(&self, run_id: &str) -> Result<Option<Versioned<Self::Version>>, Self::Error>;

    /// Put `text` in place of the record read at `version`: whether it was.
    fn rewrite_record(&self, run_id: &str, text: &str, version: &Self::Version) -> Result<bool, Self::Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_store_lacks_is_refused_in_one_line_naming_where() {
        assert_eq!(Capabilities::DISK.overwrite("-d uc"), Ok(()));
        let why = Capabilities::STORE.overwrite("-d s3://b/uc").unwrap_err();
        assert!(why.starts_with("-d s3://b/uc: --overwrite to an object store is refused"), "{why}");
        assert!(!why.contains('\n'));
    }
}
