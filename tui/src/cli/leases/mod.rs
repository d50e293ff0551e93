//! `ubunye leases list|explain|takeover|finish`.

pub(crate) mod explain;
pub(crate) mod list;
pub(crate) mod repair;
mod stream;

use clap::{Args, Subcommand};

use crate::cli::{BatchArg, DirArg, LineageArg};
use ubunye::state::{self, Batch, Located, ScanOptions};
use ubunye::sys::Sys;

/// See and repair the leases of a use case.
#[derive(Args, Debug)]
pub struct LeasesArgs {
    #[command(subcommand)]
    pub command: LeasesCommand,
}

#[derive(Subcommand, Debug)]
pub enum LeasesCommand {
    /// Every batch that needs attention, most severe first (all batches with --all).
    List(list::ListArgs),
    /// The triage report of one batch: who holds it, the verdict, what it wrote,
    /// its history, and what happens next.
    Explain(explain::ExplainArgs),
    /// Take over a dead, kept or handed-back lease, or adopt an orphan, exactly as
    /// the next run would; then release the batch.
    Takeover(repair::RepairArgs),
    /// Finish the commit of a dead run that committed (pending): note, replaced
    /// files, done mark; then release the batch.
    Finish(repair::RepairArgs),
}

pub fn run(a: &LeasesArgs, colour: bool) -> i32 {
    match &a.command {
        LeasesCommand::List(l) => list::run(l, colour),
        LeasesCommand::Explain(e) => explain::run(e),
        LeasesCommand::Takeover(r) => repair::run(r, repair::Kind::Takeover),
        LeasesCommand::Finish(r) => repair::run(r, repair::Kind::Finish),
    }
}

/// What a query must be: any key prefix to look, 4 hex digits or more to repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Look,
    Repair,
}

/// Shortest key prefix a repair takes, as git asks for its short hashes.
pub const REPAIR_PREFIX: usize = 4;

/// A query that cannot name a batch, before anything is read.
fn check_query(query: &str, purpose: Purpose) -> Result<(), String> {
    if query.contains('/') {
        return Ok(());
    }
    if query.is_empty() {
        return Err("an empty batch key names no batch: give a key (or its first hex digits) or the path of a lease-folder file; `ubunye leases list` shows the keys".into());
    }
    if !query.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "'{}' is neither a batch key (hex digits 0-9, a-f) nor a path (a path holds a `/`: for a file in this folder, write ./{})",
            state::shorten(query),
            state::shorten(query)
        ));
    }
    if purpose == Purpose::Repair && query.len() < REPAIR_PREFIX {
        return Err(format!(
            "'{query}' is {} hex digit(s): a repair needs at least {REPAIR_PREFIX} that name one batch, as git asks for short hashes (`ubunye leases explain {query}` shows which batch it names)",
            query.len()
        ));
    }
    Ok(())
}

/// Find and read one batch for `explain` (and the repairs). Every error is
/// the query's or the folder's: a usage error (exit 2).
pub fn locate(
    dir: &DirArg,
    lineage: &LineageArg,
    query: &str,
    task: Option<&str>,
    purpose: Purpose,
    sys: &Sys,
) -> Result<(state::Scan, Batch), String> {
    check_query(query, purpose)?;
    // A repair about to act may write: it reads the disk's clock with a probe,
    // as the run it stands for does (a file server's clock).
    let clock = if purpose == Purpose::Repair { state::ClockRead::Probe } else { state::ClockRead::Looking };
    // Looking may use an index of the task kept outside the use case
    // (`ubunye::state::scan_one`: a file is trusted only while its stamp,
    // taken before it was read, stands); a repair reads the task whole.
    let index_dir = match purpose {
        Purpose::Look => sys.knobs.cache_dir.as_ref().map(|d| d.join("index")),
        Purpose::Repair => None,
    };
    let opts =
        ScanOptions { lineage_dir: lineage.lineage_dir.clone(), task_glob: None, clock, index_dir, index_settle: None };
    let q = state::shorten(query);
    match state::locate(&dir.dir, query, task, &opts, sys).map_err(|e| e.to_string())? {
        Located::Located(scan, b) => Ok((*scan, *b)),
        Located::Ambiguous(c) => {
            let list: Vec<String> = c.iter().map(|b| format!("{} {}", b.key, b.task)).collect();
            Err(format!("'{q}' names {} batches: {}. Give more of the key, or --task.", c.len(), list.join("; ")))
        }
        Located::NotALeaseFile(why) => Err(why),
        Located::NotFound { root, near } if near.is_empty() => {
            Err(format!("no batch with a key starting '{q}' in {}", root.display()))
        }
        Located::NotFound { near, .. } => {
            let near: Vec<String> = near.iter().map(|b| format!("{} {}", &b.key, b.task)).collect();
            Err(format!("no batch with a key starting '{q}'; the nearest: {}", near.join("; ")))
        }
        Located::Gone(id) => Err(format!("{} {}: its files went while it was being read; look again", id.task, id.key)),
    }
}

/// The explanation of the batch the command line names (see [`locate`]).
pub fn explained(
    which: &BatchArg,
    purpose: Purpose,
    sys: &Sys,
) -> Result<(state::Scan, ubunye::explain::Explanation), String> {
    let (scan, batch) = locate(&which.dir, &which.lineage, &which.batch, which.task.as_deref(), purpose, sys)?;
    let e = ubunye::explain::explain(&scan, batch, &which.dir.dir);
    Ok((scan, e))
}
