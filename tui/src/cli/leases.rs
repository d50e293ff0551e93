//! `ubunye leases list|explain|takeover|finish`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{DirArg, exit, say_err};
use ubunye::explain;
use ubunye::state::{self, Batch, Located, ScanOptions, State};
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
    List(super::list::ListArgs),
    /// The triage report of one batch: who holds it, the verdict, what it wrote,
    /// its history, and what happens next.
    Explain(ExplainArgs),
    /// Take over a dead, kept or handed-back lease, or adopt an orphan, exactly as
    /// the next run would; then release the batch.
    Takeover(super::repair::RepairArgs),
    /// Finish the commit of a dead run that committed (pending): note, replaced
    /// files, done mark; then release the batch.
    Finish(super::repair::RepairArgs),
}

/// Where the run records are.
#[derive(Args, Debug, Clone, Default)]
pub struct LineageArg {
    /// Where run records are, if not <DIR>/.ubunye/lineage (the Python engine's --lineage-dir).
    #[arg(long, value_name = "DIR")]
    pub lineage_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye leases explain 7d106ca7 -d uc\n  ubunye leases explain \\\n    uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json"
)]
pub struct ExplainArgs {
    /// A batch key, a unique prefix of one, or the path of a lease-folder file.
    pub batch: String,
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// The task, when a prefix names batches of several tasks.
    #[arg(long, value_name = "U/P/T")]
    pub task: Option<String>,
    /// The report as JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &LeasesArgs, colour: bool) -> i32 {
    match &a.command {
        LeasesCommand::List(l) => super::list::run(l, colour),
        LeasesCommand::Explain(e) => explain_cmd(e),
        LeasesCommand::Takeover(r) => super::repair::run(r, super::repair::Kind::Takeover),
        LeasesCommand::Finish(r) => super::repair::run(r, super::repair::Kind::Finish),
    }
}

/// The glyph and colour (an SGR code) of a state.
pub fn glyph_colour(s: State) -> (&'static str, Option<&'static str>) {
    (s.glyph(), sgr(s.tone()))
}

/// The SGR code of a tone: the terminal's named colours only (never faint
/// text or colour 8, unreadable on many dark themes), as the dashboard;
/// None for the terminal's own colour.
pub fn sgr(t: ubunye::state::Tone) -> Option<&'static str> {
    use ubunye::state::Tone;
    Some(match t {
        Tone::Repair => "1;31",
        Tone::Look => "1;33",
        Tone::Attend => "33",
        Tone::Running => "32",
        Tone::Redo => "36",
        Tone::Failed => "35",
        Tone::Done => return None,
    })
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
    let opts = ScanOptions { lineage_dir: lineage.lineage_dir.clone(), task_glob: None, clock };
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

/// The explanation of the batch a query names (see [`locate`]).
pub fn explained(
    dir: &DirArg,
    lineage: &LineageArg,
    query: &str,
    task: Option<&str>,
    purpose: Purpose,
    sys: &Sys,
) -> Result<(state::Scan, explain::Explanation), String> {
    let (scan, batch) = locate(dir, lineage, query, task, purpose, sys)?;
    let e = explain::explain(&scan, batch, &dir.dir);
    Ok((scan, e))
}

fn explain_cmd(a: &ExplainArgs) -> i32 {
    let e = match explained(&a.dir, &a.lineage, &a.batch, a.task.as_deref(), Purpose::Look, &Sys::real()) {
        Ok((_, e)) => e,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    if a.json {
        super::print_json(&e);
    } else {
        super::out(&crate::report::explanation(&e));
    }
    exit::OK
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readable on light and dark themes, as the dashboard: the terminal's
    /// named colours only, never faint text (`2`), colour 8 or the bright
    /// colours; dead and failed told apart.
    #[test]
    fn state_colours_are_named_colours_only() {
        for s in State::ALL {
            if let (_, Some(code)) = glyph_colour(s) {
                for part in code.split(';') {
                    assert!(matches!(part, "1" | "31" | "32" | "33" | "35" | "36"), "{s:?}: {code}");
                }
            }
        }
        assert_ne!(glyph_colour(State::Dead).1, glyph_colour(State::Failed).1);
        assert_eq!(glyph_colour(State::Finished).1, None);
    }
}
