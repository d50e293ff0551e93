//! Finished batches kept light: what the dashboard keeps of each batch beside
//! it, and what it drops of a finished one (docs/design.md, "The dashboard's
//! model stays small").

use std::path::PathBuf;

use ubunye::state::{self, Batch, State};

/// What the model keeps beside each batch.
#[derive(Clone, Debug)]
pub(super) struct Side {
    pub stamp: u32,
    /// Its task's number ([`super::tasks::Tasks`]).
    pub task: u32,
    pub light: bool,
    /// Its variables as one line (`dt=2025-01-02 mode=DEV`): a light batch
    /// keeps them only so.
    pub vars: Option<Box<str>>,
}

/// A batch made ready for the model ([`keep`]).
#[derive(Debug)]
pub struct Kept {
    pub(super) batch: Batch,
    pub(super) light: bool,
    pub(super) vars: Option<Box<str>>,
}

/// Make a batch, read whole, ready for the model: its variables as one line,
/// and light when it is finished. The first read and the rescans do this on
/// their own thread, as each task's batches are read, so that a task's whole
/// batches are let go before the next task is read.
pub fn keep(mut b: Batch) -> Kept {
    let (light, vars) = prepare(&mut b);
    Kept { batch: b, light, vars }
}

/// [`keep`], in place: whether it was made light, and its variables.
pub(super) fn prepare(b: &mut Batch) -> (bool, Option<Box<str>>) {
    let vars = b.variables.as_ref().map(|v| state::variables_text(v).into_boxed_str());
    (lighten(b), vars)
}

/// Keep a finished batch light: what the table, the filter and the runs view
/// show stays (state, note, run, its records' run, status, times and error);
/// the rest goes: the finished note (its run is the batch's `run_id`), the
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
    b.finished = None;
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
/// threads allocate in malloc arenas of their own; what they freed (each
/// task's full batches, made light here) would otherwise stay resident.
pub(super) fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}
