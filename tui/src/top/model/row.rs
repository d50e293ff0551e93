//! One batch of the model as the table, the filter and the runs view see it:
//! a whole batch, or a packed one read in place ([`super::packed`]). Nothing
//! is copied: each field is borrowed from the model.

use std::borrow::Cow;

use serde_json::{Map, Value};
use ubunye::state::{Batch, Flag, LeaseInfo, RecordInfo, State};

use super::Id;
use super::packed::{Packed, RecordFields};

/// A batch of the model, borrowed.
#[derive(Clone, Copy, Debug)]
pub enum BatchRef<'a> {
    /// Kept whole (a lease, a problem, anything not finished), with its
    /// variables as one line.
    Whole { batch: &'a Batch, vars: Option<&'a str> },
    /// A finished batch, packed; its task kept apart. Each field is read
    /// from the packing when asked for (the key first, at once).
    Packed { task: &'a str, packed: &'a Packed },
}

impl<'a> BatchRef<'a> {
    pub fn task(&self) -> &'a str {
        match self {
            BatchRef::Whole { batch, .. } => &batch.task,
            BatchRef::Packed { task, .. } => task,
        }
    }

    pub fn key(&self) -> &'a str {
        match self {
            BatchRef::Whole { batch, .. } => &batch.key,
            BatchRef::Packed { packed, .. } => packed.key(),
        }
    }

    /// Its task and key, owned: how a batch is named across changes.
    pub fn id(&self) -> Id {
        (self.task().to_string(), self.key().to_string())
    }

    pub fn state(&self) -> State {
        match self {
            BatchRef::Whole { batch, .. } => batch.state,
            BatchRef::Packed { .. } => State::Finished,
        }
    }

    /// Its flags (a packed batch has none).
    pub fn flags(&self) -> &'a [Flag] {
        match self {
            BatchRef::Whole { batch, .. } => &batch.flags,
            BatchRef::Packed { .. } => &[],
        }
    }

    pub fn run_id(&self) -> Option<Cow<'a, str>> {
        match self {
            BatchRef::Whole { batch, .. } => batch.run_id.as_deref().map(Cow::Borrowed),
            BatchRef::Packed { packed, .. } => packed.run_id(),
        }
    }

    pub fn note(&self) -> Cow<'a, str> {
        match self {
            BatchRef::Whole { batch, .. } => Cow::Borrowed(&batch.note),
            BatchRef::Packed { packed, .. } => packed.note(),
        }
    }

    /// Its variables as one line (`dt=2025-01-02 mode=DEV`), when known.
    pub fn vars(&self) -> Option<&'a str> {
        match self {
            BatchRef::Whole { vars, .. } => *vars,
            BatchRef::Packed { packed, .. } => packed.vars(),
        }
    }

    pub fn lease(&self) -> Option<&'a LeaseInfo> {
        match self {
            BatchRef::Whole { batch, .. } => batch.lease.as_deref(),
            BatchRef::Packed { .. } => None,
        }
    }

    pub fn orphans(&self) -> &'a [LeaseInfo] {
        match self {
            BatchRef::Whole { batch, .. } => &batch.orphans,
            BatchRef::Packed { .. } => &[],
        }
    }

    /// Claims listed by its lease and orphans.
    pub fn claim_count(&self) -> usize {
        match self {
            BatchRef::Whole { batch, .. } => batch.claim_count(),
            BatchRef::Packed { .. } => 0,
        }
    }

    /// How many run records it has.
    pub fn record_count(&self) -> usize {
        match self {
            BatchRef::Whole { batch, .. } => batch.records.len(),
            BatchRef::Packed { packed, .. } => packed.record_count(),
        }
    }

    /// Its records, newest first.
    pub fn records(&self) -> Box<dyn Iterator<Item = RecordRef<'a>> + 'a> {
        match *self {
            BatchRef::Whole { batch, .. } => Box::new(batch.records.iter().map(RecordRef::Whole)),
            BatchRef::Packed { packed, .. } => Box::new(packed.records().map(RecordRef::Packed)),
        }
    }

    /// Record `i`, newest first.
    pub fn record(&self, i: usize) -> Option<RecordRef<'a>> {
        match self {
            BatchRef::Whole { batch, .. } => batch.records.get(i).map(RecordRef::Whole),
            BatchRef::Packed { packed, .. } => packed.record(i).map(RecordRef::Packed),
        }
    }

    /// The whole batch, when it is kept whole.
    pub fn batch(&self) -> Option<&'a Batch> {
        match self {
            BatchRef::Whole { batch, .. } => Some(batch),
            BatchRef::Packed { .. } => None,
        }
    }
}

/// One run record of a batch: borrowed from a whole batch, read from a
/// packed one.
#[derive(Clone, Debug)]
pub enum RecordRef<'a> {
    Whole(&'a RecordInfo),
    Packed(RecordFields<'a>),
}

fn opt<'a>(s: &'a Option<String>) -> Option<Cow<'a, str>> {
    s.as_deref().map(Cow::Borrowed)
}

impl<'a> RecordRef<'a> {
    pub fn run_id(&self) -> Cow<'_, str> {
        match self {
            RecordRef::Whole(r) => Cow::Borrowed(&r.run_id),
            RecordRef::Packed(r) => Cow::Borrowed(&r.run_id),
        }
    }

    /// Its file; empty when it is the usual one of a light batch
    /// (`<lineage>/<task>/<run id>.json`).
    pub fn path(&self) -> &'a std::path::Path {
        match self {
            RecordRef::Whole(r) => &r.path,
            RecordRef::Packed(r) => std::path::Path::new(r.path),
        }
    }

    pub fn status(&self) -> Option<Cow<'_, str>> {
        match self {
            RecordRef::Whole(r) => opt(&r.status),
            RecordRef::Packed(r) => r.status.as_deref().map(Cow::Borrowed),
        }
    }

    pub fn started_at(&self) -> Option<Cow<'_, str>> {
        match self {
            RecordRef::Whole(r) => opt(&r.started_at),
            RecordRef::Packed(r) => r.started_at.as_deref().map(Cow::Borrowed),
        }
    }

    pub fn ended_at(&self) -> Option<Cow<'_, str>> {
        match self {
            RecordRef::Whole(r) => opt(&r.ended_at),
            RecordRef::Packed(r) => r.ended_at.as_deref().map(Cow::Borrowed),
        }
    }

    pub fn error(&self) -> Option<Cow<'_, str>> {
        match self {
            RecordRef::Whole(r) => opt(&r.error),
            RecordRef::Packed(r) => r.error.as_deref().map(Cow::Borrowed),
        }
    }

    /// Its own variables, when they are not its batch's (a packed batch's
    /// records have none of their own).
    pub fn variables(&self) -> Option<&'a Map<String, Value>> {
        match self {
            RecordRef::Whole(r) => r.variables.as_ref(),
            RecordRef::Packed(_) => None,
        }
    }
}
