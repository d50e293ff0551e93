//! Finished batches kept light: what the dashboard keeps of each batch beside
//! it, and what it drops of a finished one (docs/design.md, "The dashboard's
//! model stays small").

use std::path::PathBuf;

use ubunye::state::{self, Batch, State};

use super::packed::{Packed, Packer, pack};
use super::row::BatchRef;

/// What the model keeps beside each batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Side {
    pub stamp: u32,
    /// Its task's number ([`super::tasks::Tasks`]).
    pub task: u32,
}

/// What the model keeps of each batch: whole, or packed when it is a plain
/// finished one (most of a big use case).
#[derive(Debug)]
pub(super) enum Slot {
    Whole(Box<Whole>),
    Packed(Packed),
}

/// A batch kept whole.
#[derive(Debug)]
pub(super) struct Whole {
    pub batch: Batch,
    /// Made light ([`lighten`]): read whole again before it is explained.
    pub light: bool,
    /// Its variables as one line (`dt=2025-01-02 mode=DEV`): a light batch
    /// keeps them only so.
    pub vars: Option<Box<str>>,
}

impl Slot {
    /// The batch, borrowed, with its task's name (kept apart, by number).
    pub fn row<'a>(&'a self, task: &'a str) -> BatchRef<'a> {
        match self {
            Slot::Whole(w) => BatchRef::Whole { batch: &w.batch, vars: w.vars.as_deref() },
            Slot::Packed(p) => BatchRef::Packed { task, packed: p },
        }
    }

    pub fn key(&self) -> &str {
        match self {
            Slot::Whole(w) => &w.batch.key,
            Slot::Packed(p) => p.key(),
        }
    }

    /// Whether it was made light: what is kept is not all there is.
    pub fn light(&self) -> bool {
        match self {
            Slot::Whole(w) => w.light,
            Slot::Packed(_) => true,
        }
    }

    /// The batch, when it is kept whole.
    pub fn whole_mut(&mut self) -> Option<&mut Batch> {
        match self {
            Slot::Whole(w) => Some(&mut w.batch),
            Slot::Packed(_) => None,
        }
    }

    /// The batch as kept (light or not), owned.
    pub fn to_batch(&self, task: &str) -> Batch {
        match self {
            Slot::Whole(w) => w.batch.clone(),
            Slot::Packed(p) => p.unpack(task),
        }
    }
}

/// A batch made ready for the model ([`keep`]).
#[derive(Debug)]
pub struct Kept {
    pub(super) task: String,
    pub(super) slot: Slot,
}

/// Make a batch, read whole, ready for the model: its variables as one line,
/// and light (packed, when nothing of it needs more) when it is finished.
/// The first read and the rescans do this on their own thread, as each
/// task's batches are read, so that a task's whole batches are let go before
/// the next task is read.
pub fn keep(b: Batch) -> Kept {
    let (b, light, vars) = prepare(b);
    if light && let Some(p) = pack(&b, vars.as_deref()) {
        return Kept { task: b.task, slot: Slot::Packed(p) };
    }
    Kept { task: b.task.clone(), slot: whole(b, light, vars) }
}

/// [`keep`] for the batches of a read, the light ones packed in one chunk
/// (one allocation for a task of 10,000 batches, instead of one each among
/// what the read frees: what the allocator cannot give back).
pub fn keep_all(batches: Vec<Batch>) -> Vec<Kept> {
    enum Ready {
        Packed(String, super::packed::Span),
        Whole(Kept),
    }
    let mut packer = Packer::default();
    let ready: Vec<Ready> = batches
        .into_iter()
        .map(|b| {
            let (b, light, vars) = prepare(b);
            match light.then(|| packer.pack(&b, vars.as_deref())).flatten() {
                Some(span) => Ready::Packed(b.task, span),
                None => Ready::Whole(Kept { task: b.task.clone(), slot: whole(b, light, vars) }),
            }
        })
        .collect();
    let chunk = packer.finish();
    ready
        .into_iter()
        .map(|r| match r {
            Ready::Packed(task, span) => Kept { task, slot: Slot::Packed(chunk.get(span)) },
            Ready::Whole(k) => k,
        })
        .collect()
}

fn whole(batch: Batch, light: bool, vars: Option<Box<str>>) -> Slot {
    Slot::Whole(Box::new(Whole { batch, light, vars }))
}

/// Its variables as one line, then made light when it is finished.
fn prepare(mut b: Batch) -> (Batch, bool, Option<Box<str>>) {
    let vars = b.variables.as_ref().map(|v| state::variables_text(v).into_boxed_str());
    let light = lighten(&mut b);
    (b, light, vars)
}

/// Keep a finished batch light: what the table, the filter and the runs view
/// show stays (state, note, run, its records' run, status, times and error),
/// and the finished note's run and time (a run record is filed under the
/// batch that names its run); the rest goes: the note's claimed files and
/// its path (always `<key>.finished.json` in the task's lease folder), the
/// records' output locations and backend, a record's path when it is the
/// usual one ([`super::Model::record_path`]), and the variables, kept as a
/// line beside the batch. A light batch is never judged or explained from
/// what is left: [`super::Model::whole`] reads it whole again, a change of
/// its files reads it (and its task) whole, and doctor's view reads the use
/// case itself. At 100,000 batches this is what keeps `top` under 200 MB
/// (docs/performance.md). True when it was made light.
fn lighten(b: &mut Batch) -> bool {
    if b.state != State::Finished {
        return false;
    }
    if let Some(f) = b.finished.as_mut() {
        f.outputs = Vec::new();
        f.path = PathBuf::new();
    }
    for r in &mut b.records {
        r.locations = Vec::new();
        r.backend = None;
        if r.variables.is_some() && r.variables == b.variables {
            r.variables = None;
        }
        // Every record of a scan is in `<lineage>/<task>/`.
        if r.path.parent().is_some_and(|p| p.ends_with(&b.task))
            && r.path.file_stem().is_some_and(|s| s == r.run_id.as_str())
            && r.path.extension().is_some_and(|x| x == "json")
        {
            r.path = PathBuf::new();
        }
    }
    b.variables = None;
    true
}

/// Hand the memory a whole read freed back to the system. The read's
/// threads allocate in heaps of their own; what they freed (each task's full
/// batches, made light here) would otherwise stay resident until the
/// allocator's own delay.
pub(super) fn give_back_memory() {
    // SAFETY: mi_collect only frees and returns what is free already.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}
