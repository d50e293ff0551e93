//! Which batch a query names, read whole: what `leases explain`, `takeover`
//! and `finish` act on. A decision, so the library's: the front end only
//! renders what it returns.

use std::path::Path;

use super::by_run;
use super::one::scan_one;
use super::scan::{BatchId, Found, find, scan_tasks};
use super::{Batch, Scan, ScanError, ScanOptions};
use crate::sys::Sys;

/// What a query names.
#[derive(Debug)]
pub enum Located {
    /// One batch, read as a whole scan reads it (its task read).
    Located(Box<Scan>, Box<Batch>),
    /// Several batches start with the prefix (`--task` narrows it).
    Ambiguous(Vec<BatchId>),
    /// None in the use case at `root`; the keys that come closest, if any.
    NotFound {
        /// The use-case folder, resolved.
        root: std::path::PathBuf,
        /// The batches whose keys start most like the query (at most 5).
        near: Vec<BatchId>,
    },
    /// The query is a path, but not of a file in a task's lease folder of
    /// this use case: why.
    NotALeaseFile(String),
    /// It was found by name, and its files went while it was read.
    Gone(BatchId),
}

/// Find the batch a key, a key prefix, a run id (or its start) or the path
/// of a lease-folder file names (`task`, a glob or prefix, narrows it), and
/// read it whole: by the names in the lease folders first, then by the run
/// ids of its leases, marks and records, then, for a batch known only by its
/// run records (interrupted, failed), by a scan of the tasks.
pub fn locate(uc: &Path, query: &str, task: Option<&str>, opts: &ScanOptions, sys: &Sys) -> Result<Located, ScanError> {
    let id = match find(uc, query, task)? {
        Found::One(id) => id,
        Found::Ambiguous(c) => return Ok(Located::Ambiguous(c)),
        Found::NotALeaseFile(why) => return Ok(Located::NotALeaseFile(why)),
        Found::None(near) => {
            // A run id (or its start), as the RUN column and the records show it.
            if by_run::may_be_run_id(query) {
                let opened = super::scan::open(uc, opts, sys)?;
                let ids = by_run::batches_of_run(&opened.root, &opened.lineage_dir, query, task);
                let mut ids = ids.into_iter();
                match (ids.next(), ids.next()) {
                    (Some(one), None) => return read_one(uc, one, opts, sys),
                    (Some(a), Some(b)) => return Ok(Located::Ambiguous([a, b].into_iter().chain(ids).collect())),
                    _ => {}
                }
            }
            if query.contains('-') {
                let root = super::scan::open(uc, opts, sys)?.root;
                return Ok(Located::NotFound { root, near: Vec::new() });
            }
            let opts = ScanOptions { task_glob: task.map(str::to_string), ..opts.clone() };
            let q = query.to_ascii_lowercase();
            let mut hits: Vec<Batch> = Vec::new();
            let head = scan_tasks(uc, &opts, sys, |_, batches| {
                hits.extend(batches.into_iter().filter(|b| b.key.starts_with(&q)));
            })?;
            let scan = head.into_scan();
            return Ok(match hits.len() {
                1 => Located::Located(Box::new(scan), Box::new(hits.remove(0))),
                0 => Located::NotFound { root: scan.root, near },
                _ => Located::Ambiguous(hits.into_iter().map(|b| BatchId { task: b.task, key: b.key }).collect()),
            });
        }
    };
    read_one(uc, id, opts, sys)
}

/// The batch as a whole scan reads it, so that explain and the repairs say
/// what `leases list` says.
fn read_one(uc: &Path, id: BatchId, opts: &ScanOptions, sys: &Sys) -> Result<Located, ScanError> {
    Ok(match scan_one(uc, &id.task, &id.key, opts, sys)? {
        (scan, Some(b)) => Located::Located(Box::new(scan), Box::new(b)),
        (_, None) => Located::Gone(id),
    })
}
