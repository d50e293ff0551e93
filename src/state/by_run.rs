//! Which batch a run id names. The listings show a run id on every row (the
//! RUN column, a record's file name, the `run` line of explain), so a paged
//! engineer pastes it where a batch is asked for: it must name that run's
//! batch, never a batch whose key happens to start alike.
//!
//! Looked up by names first, then by the few files that hold a run id in
//! their text: a run mark (`<key>.taken-<run>`, `<key>.done-<run>`) and a
//! record's file name (`<lineage>/<task>/<run>.json`) name the run; a lease
//! or a dead run's lease beside it is read (a use case holds few: finished
//! batches have none). A finished note is not read: its run's record names
//! the same batch.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::BatchId;
use super::read::{record_key, task_dirs};
use crate::documents::{self, LeaseDoc};
use crate::fsx;
use crate::layout::{self, Entry};

/// The shortest run-id prefix looked up: as for a key, fewer digits name
/// too many runs to be meant.
pub const RUN_PREFIX: usize = 4;

/// Whether `query` can be (the start of) a run id: hex digits and the dashes
/// of a uuid, with at least [`RUN_PREFIX`] hex digits.
pub fn may_be_run_id(query: &str) -> bool {
    query.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        && query.bytes().filter(u8::is_ascii_hexdigit).count() >= RUN_PREFIX
        && !query.starts_with('-')
}

/// The batches whose runs' ids start with `query` (case does not matter),
/// in the use case at `root` whose run records are in `lineage_dir`. `task`
/// (a glob or prefix, as `--task` takes it) narrows it.
pub fn batches_of_run(root: &Path, lineage_dir: &Path, query: &str, task: Option<&str>) -> BTreeSet<BatchId> {
    let q = query.to_ascii_lowercase();
    let starts = |run: &str| run.to_ascii_lowercase().starts_with(&q);
    let wanted = |t: &str| task.is_none_or(|want| super::task_matches(want, t));
    let mut found = BTreeSet::new();
    let mut problems = Vec::new();
    for (t, dir) in task_dirs(&layout::leases_root(root), &mut problems) {
        if !wanted(&t) {
            continue;
        }
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            let key = match layout::classify(&name) {
                Entry::Done { key, run } | Entry::Taken { key, run } if starts(&run) => Some(key),
                Entry::Lease { key } | Entry::Dead { key } if lease_run(&e.path()).is_some_and(|r| starts(&r)) => {
                    Some(key)
                }
                _ => None,
            };
            if let Some(key) = key {
                found.insert(BatchId { task: t.clone(), key });
            }
        }
    }
    for (t, dir) in task_dirs(lineage_dir, &mut problems) {
        if !wanted(&t) {
            continue;
        }
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(run) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
            if !starts(run) {
                continue;
            }
            let Ok(r) = super::read_record(&e.path()) else { continue };
            if let Some(key) = r.variables.as_ref().and_then(|v| record_key(&t, v)) {
                found.insert(BatchId { task: t.clone(), key });
            }
        }
    }
    found
}

/// The run id a lease (or a dead run's lease) names, when it can be read.
fn lease_run(path: &Path) -> Option<String> {
    let bytes = fsx::read_regular(path).ok()?;
    let doc = LeaseDoc::from_parsed(documents::parse_doc(&bytes).ok()?);
    Some(doc.run_id()).filter(|r| !r.is_empty())
}
