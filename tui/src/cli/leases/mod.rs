//! `ubunye leases list|explain|takeover|finish`.

mod bulk;
pub(crate) mod explain;
pub(crate) mod history;
pub(crate) mod list;
pub(crate) mod repair;
pub(crate) mod store;
mod stream;

use clap::{Args, Subcommand};

use crate::cli::{BatchArg, DirArg, LineageArg};
use ubunye::state::{self, Batch, Located, ScanOptions};
use ubunye::suggest;
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
    /// One task's batches by date: which days ran, failed, were interrupted
    /// or never ran.
    History(history::HistoryArgs),
}

pub fn run(a: &LeasesArgs, colour: bool) -> i32 {
    match &a.command {
        LeasesCommand::List(l) => list::run(l, colour),
        LeasesCommand::Explain(e) => explain::run(e),
        LeasesCommand::Takeover(r) => repair_batches(r, repair::Kind::Takeover),
        LeasesCommand::Finish(r) => repair_batches(r, repair::Kind::Finish),
        LeasesCommand::History(h) => history::run(h, colour),
    }
}

/// What a query must be: any key prefix to look, 4 hex digits or more to repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Look,
    Repair,
}

/// Shortest key (or run id) prefix that names a batch, as git asks for its
/// short hashes: the same for a look, a dry run and a repair.
pub const REPAIR_PREFIX: usize = ubunye::state::RUN_PREFIX;

/// A query that cannot name a batch, before anything is read.
fn check_query(query: &str) -> Result<(), String> {
    if query.contains('/') {
        return Ok(());
    }
    if query.is_empty() {
        return Err("an empty batch key names no batch: give a key or run id (4 hex digits or more), or the path of a lease-folder file".into());
    }
    let hex = query.bytes().filter(u8::is_ascii_hexdigit).count();
    if !query.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') || query.starts_with('-') {
        return Err(format!(
            "'{}' is neither a batch key nor a run id (hex digits 0-9, a-f, and a run id's dashes) nor a path (a path holds a `/`: for a file in this folder, write ./{})",
            state::shorten(query),
            state::shorten(query)
        ));
    }
    if hex < REPAIR_PREFIX {
        return Err(format!(
            "'{query}' is {hex} hex digit(s): a batch is named by at least {REPAIR_PREFIX} digits of its key or run id, as git asks for short hashes"
        ));
    }
    Ok(())
}

/// The listing of the use cases `ucs` names, as a command that runs as
/// printed from any folder.
fn list_command(ucs: &crate::cli::UseCasesArg) -> String {
    let abs = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut cmd = String::from("`ubunye leases list --all");
    for d in &ucs.dirs {
        cmd.push_str(&format!(" {}", suggest::dir(&abs(d))));
    }
    for f in &ucs.find {
        cmd.push_str(&format!(" --find {}", suggest::quote(&abs(f).display().to_string())));
    }
    cmd.push_str("` shows them");
    cmd
}

/// How a batch is read for a purpose.
fn options(lineage: &LineageArg, purpose: Purpose, sys: &Sys) -> ScanOptions {
    let clock = if purpose == Purpose::Repair { state::ClockRead::Probe } else { state::ClockRead::Looking };
    // Looking may use an index of the task kept outside the use case
    // (`ubunye::state::scan_one`: a file is trusted only while its stamp,
    // taken before it was read, stands); a repair reads the task whole.
    let index_dir = match purpose {
        Purpose::Look => sys.knobs.cache_dir.as_ref().map(|d| d.join("index")),
        Purpose::Repair => None,
    };
    ScanOptions { lineage_dir: lineage.lineage_dir.clone(), task_glob: None, clock, index_dir, index_settle: None }
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
    let root = std::fs::canonicalize(&dir.dir).unwrap_or_else(|_| dir.dir.clone());
    check_query(query).map_err(|e| format!("{e}: `ubunye leases list --all {}` shows them", suggest::dir(&root)))?;
    // A repair about to act may write: it reads the disk's clock with a probe,
    // as the run it stands for does (a file server's clock).
    let opts = options(lineage, purpose, sys);
    let q = state::shorten(query);
    match state::locate(&dir.dir, query, task, &opts, sys).map_err(|e| e.to_string())? {
        Located::Located(scan, b) => Ok((*scan, *b)),
        Located::Ambiguous(c) => {
            let list: Vec<String> = c.iter().map(|b| format!("{} {}", suggest::batch(&root, &b.key), b.task)).collect();
            Err(format!("'{q}' names {} batches: {}. Give more of the key, or --task.", c.len(), list.join("; ")))
        }
        Located::NotALeaseFile(why) => Err(why),
        Located::NotFound { root, near } if near.is_empty() => Err(format!(
            "no batch with a key or run id starting '{q}' in {}: `ubunye leases list --all {}` shows them",
            root.display(),
            suggest::dir(&root)
        )),
        Located::NotFound { root, near } => {
            let near: Vec<String> =
                near.iter().map(|b| format!("{} {}", suggest::batch(&root, &b.key), b.task)).collect();
            Err(format!("no batch with a key starting '{q}'; the nearest: {}", near.join("; ")))
        }
        Located::Gone(id) => Err(format!("{} {}: its files went while it was being read; look again", id.task, id.key)),
    }
}

/// The explanation of the batch the command line names (see [`locate`]);
/// with several use cases, the one batch the query names among them all.
pub fn explained(
    which: &BatchArg,
    purpose: Purpose,
    sys: &Sys,
) -> Result<(state::Scan, ubunye::explain::Explanation), String> {
    let (scan, batch) = match which.ucs.single() {
        Some(_) => locate(&which.dir, &which.lineage, &which.batch, which.task.as_deref(), purpose, sys)?,
        None => among(which, sys)?,
    };
    let e = ubunye::explain::explain(&scan, batch);
    Ok((scan, e))
}

/// The one batch, of several use cases, a key (or prefix) names: refused,
/// naming each, when it names batches in more than one, and when it names
/// none in any (saying which could not be read). Looking only.
fn among(which: &BatchArg, sys: &Sys) -> Result<(state::Scan, Batch), String> {
    check_query(&which.batch).map_err(|e| format!("{e}: {}", list_command(&which.ucs)))?;
    if which.batch.contains('/') {
        return Err(format!("'{}' is a path: it names its own use case; give it without -d or --find", which.batch));
    }
    let q = state::shorten(&which.batch);
    let opts = options(&which.lineage, Purpose::Look, sys);
    let ucs = which.ucs.resolve();
    let (mut hits, mut names, mut unread) = (Vec::new(), Vec::new(), Vec::new());
    for uc in &ucs {
        if let Some(e) = &uc.error {
            unread.push(format!("{}: {e}", uc.name()));
            continue;
        }
        let name = |id: &state::BatchId| format!("{}:{} {}", uc.name(), id.key, id.task);
        match state::locate(&uc.shown, &which.batch, which.task.as_deref(), &opts, sys) {
            Ok(Located::Located(scan, b)) => {
                names.push(format!("{}:{} {}", uc.name(), b.key, b.task));
                hits.push((uc.shown.clone(), *scan, *b));
            }
            Ok(Located::Ambiguous(c)) => names.extend(c.iter().map(name)),
            Ok(Located::Gone(id)) => unread.push(format!("{}: its files went while it was read", name(&id))),
            Ok(Located::NotFound { .. } | Located::NotALeaseFile(_)) => {}
            Err(e) => unread.push(format!("{}: {e}", uc.name())),
        }
    }
    match (names.len(), hits.pop()) {
        // One found, but a use case that could not be read may hold the
        // same prefix: which one is meant cannot be told, so none is shown.
        (1, Some((shown, _, b))) if !unread.is_empty() => Err(format!(
            "'{q}' names {}:{} {}, but {} use case(s) could not be read and may hold it too ({}); give {}:{}",
            shown.display(),
            b.key,
            b.task,
            unread.len(),
            unread.join("; "),
            shown.display(),
            b.key
        )),
        (1, Some((_, scan, b))) => Ok((scan, b)),
        (0, _) => Err(format!(
            "no batch with a key starting '{q}' in any of {} use case(s){}",
            ucs.len(),
            if unread.is_empty() { String::new() } else { format!("; not read: {}", unread.join("; ")) }
        )),
        (n, _) => Err(format!(
            "'{q}' names {n} batches in {} use case(s): {}. Give <usecase>:<key> (or more of the key, or --task).",
            ucs.len(),
            names.join("; ")
        )),
    }
}

/// `leases takeover|finish`: one batch, or many (`--state`, `--task`, `--dt`,
/// `--var`), each in its own module.
fn repair_batches(a: &repair::RepairArgs, kind: repair::Kind) -> i32 {
    let bulk = !a.states.is_empty() || !a.filter.vars.is_empty() || a.filter.dt.is_some();
    match (a.which.batch.is_empty(), bulk) {
        (true, true) => return bulk::run(a, kind),
        (true, false) if a.which.task.is_some() => return bulk::run(a, kind),
        (true, false) => {
            crate::cli::say_err(
                "name a batch (its key or run id, 4 hex digits or more, or the path of a lease-folder file), or choose batches with --state (and --task, --dt, --var)",
            );
            return crate::cli::exit::USAGE;
        }
        (false, true) => {
            crate::cli::say_err(&format!(
                "give a batch ('{}') or --state/--dt/--var for many, not both",
                ubunye::state::shorten(&a.which.batch)
            ));
            return crate::cli::exit::USAGE;
        }
        (false, false) => {}
    }
    repair::run_one(a, kind)
}
