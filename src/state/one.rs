//! One batch, read as a whole scan reads it: from its task's files, or
//! from the index of its task when there is one. Above both readers, so
//! that neither knows the other's way.

use std::path::Path;

use super::index::scan_one_indexed;
use super::scan::scan_named_tasks;
use super::{Batch, Scan, ScanError, ScanOptions};
use crate::layout;
use crate::sys::Sys;

/// Read one batch as a whole scan reads it: its task is read (its lease
/// folder and its folder of run records), so that every run record is filed
/// by the same rules, and the batch is taken from it. What `leases explain`
/// and the repairs show, so that they say what `leases list` says. None when
/// the task holds no such batch (its files went since it was found). With
/// [`ScanOptions::index_dir`], the same batch from an index of the task
/// (`index`), reading only what changed.
pub fn scan_one(
    uc: &Path,
    task: &str,
    key: &str,
    opts: &ScanOptions,
    sys: &Sys,
) -> Result<(Scan, Option<Batch>), ScanError> {
    // The unknown batch (records that name no batch) is read whole: every
    // record of the task may be its.
    if let Some(dir) = opts.index_dir.as_deref().filter(|_| layout::is_key(key)) {
        return scan_one_indexed(uc, task, key, opts, sys, dir);
    }
    let mut found = None;
    let head = scan_named_tasks(uc, opts, sys, &[task.to_string()], |_, batches| {
        found = batches.into_iter().find(|b| b.key == key);
    })?;
    Ok((head.into_scan(), found))
}
