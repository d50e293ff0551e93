//! `ubunye leases takeover` and `ubunye leases finish`: render the engine's plan,
//! ask, re-check, act, and leave an audit line.

use std::io::{BufRead, IsTerminal, Write};

use clap::Args;

use super::{Purpose, locate};
use crate::cli::{BatchArg, exit, say_err};
use ubunye::repair;
pub use ubunye::repair::Kind;

/// Repair one batch through the engine, or every batch a filter names.
#[derive(Args, Debug)]
#[command(mut_arg("batch", |a| a.required(false).default_value("")))]
#[command(after_help = "First the plan: every file it removes, every record it marks, every note it writes.\n\
On a terminal it then asks (default No); --yes answers for scripts; --dry-run only shows the plan.\n\
A live holder, stalled or not, is never taken over. There is no --force.\n\
Each repair appends a line to <DIR>/.ubunye/repairs.jsonl.\n\n\
Many at once: instead of a batch, --state (and --task, --dt, --var to narrow) names every batch to repair;\n\
one plan for all of them is shown and asked once; each is looked at again as it is acted on:\n\
  ubunye leases takeover -d uc --state dead --task 'demo/*' --dry-run")]
pub struct RepairArgs {
    #[command(flatten)]
    pub which: BatchArg,
    /// Repair every batch in these states (comma-separated or repeated)
    /// instead of one batch.
    #[arg(long = "state", value_name = "S", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(REPAIRABLE.map(ubunye::state::State::word)))]
    pub states: Vec<String>,
    #[command(flatten)]
    pub filter: crate::cli::VarFilterArgs,
    /// Show the plan and change nothing.
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
    /// Do it without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The plan (with --dry-run) or the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) use crate::report::repair_plan as render_plan;

pub(crate) fn ask(question: &str) -> bool {
    crate::cli::out(&format!("{question} [y/N] "));
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
}

/// A repair that must ask and cannot (no terminal, no `--yes`) is refused
/// before anything is read.
pub(crate) fn can_ask(a: &RepairArgs) -> Result<(), i32> {
    if a.dry_run || a.yes || std::io::stdin().is_terminal() {
        return Ok(());
    }
    say_err("not on a terminal, so nobody can confirm: add --yes to repair, or --dry-run to only see the plan");
    Err(exit::USAGE)
}

/// What comes between a repair's plan and the act, for a folder and a store
/// alike: a dry run prints the plan and stops; otherwise the plan is shown
/// and asked about (unless `--yes`), and `wait`, the line that says what the
/// repair will wait for and how long, is said before it, so that a pause is
/// not taken for a hang. `Err`: the exit code to stop with, having changed
/// nothing.
pub(crate) fn confirm(a: &RepairArgs, plan: &repair::RepairPlan, wait: Option<String>) -> Result<(), i32> {
    if a.dry_run {
        if a.json {
            crate::cli::outln(&serde_json::to_string_pretty(plan).unwrap_or_default());
        } else {
            crate::cli::out(&render_plan(plan));
            crate::cli::outln("(--dry-run: nothing was changed)");
        }
        return Err(exit::OK);
    }
    if !a.yes {
        can_ask(a)?;
        crate::cli::out(&render_plan(plan));
        if !ask("Go ahead?") {
            crate::cli::outln("Nothing was done.");
            return Err(exit::REFUSED);
        }
    } else if !a.json {
        crate::cli::out(&render_plan(plan));
    }
    if let Some(wait) = wait {
        say_err(&wait);
    }
    Ok(())
}

/// What a folder's repair waits for: one settle, for the run whose lease it
/// takes over to write it again (an orphan has no lease: nothing is waited).
fn disk_wait(plan: &repair::RepairPlan, settle: std::time::Duration) -> Option<String> {
    if plan.state == ubunye::state::State::Orphan {
        return None;
    }
    let run = plan.holder.as_deref().filter(|r| !r.is_empty()).map(ubunye::documents::short);
    Some(format!(
        "waiting {} for {} to write its lease again (a live run is left alone)…",
        humantime::format_duration(settle),
        run.map(|r| format!("run {r}")).unwrap_or_else(|| "its run".into())
    ))
}

/// The states a bulk repair can be asked for: those a repair applies to.
pub const REPAIRABLE: [ubunye::state::State; 6] = {
    use ubunye::state::State;
    [State::Dead, State::Damaged, State::Orphan, State::Pending, State::Kept, State::HandedBack]
};

/// One batch repaired, as [`RepairArgs::which`] names it.
pub fn run_one(a: &RepairArgs, kind: Kind) -> i32 {
    if let Err(code) = can_ask(a) {
        return code;
    }
    let sys = crate::console::machine::sys_for(&a.which.dir.dir);
    // The plan shown before a question (or a dry run) only looks: the
    // disk's clock is read without writing, so a repair declined leaves the
    // use case as it was. The batch is read again to act on, by the clock
    // the engine acts by, and refused if it is not as planned.
    let purpose = if a.dry_run || !a.yes { Purpose::Look } else { Purpose::Repair };
    let mut read = super::explained(&a.which, purpose, &sys);
    // A disk whose clock cannot be read without writing (a network file
    // system with no O_TMPFILE) judges no lease by a look: a repair that
    // will ask reads it as it will act, with the peer's probe file.
    if !a.dry_run
        && purpose == Purpose::Look
        && read.as_ref().is_ok_and(|(scan, _)| scan.now.source == ubunye::sys::ClockSource::Local)
    {
        read = super::explained(&a.which, Purpose::Repair, &sys);
    }
    let (scan, e) = match read {
        Ok(x) => x,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    let plan = match repair::check(kind, &e) {
        Ok(p) => p,
        Err(why) => {
            say_err(&why);
            return exit::REFUSED;
        }
    };
    if let Err(code) = confirm(a, &plan, disk_wait(&plan, sys.timing.settle)) {
        return code;
    }
    // The state may have changed while the plan was read: look again, then let
    // the engine re-check everything as it acts.
    let outcome = locate(&a.which.dir, &a.which.lineage, &plan.key, Some(&plan.task), Purpose::Repair, &sys)
        .map_err(|e| e.to_string())
        .and_then(|(_, current)| {
            repair::execute(&a.which.dir.dir, &plan, &current, a.which.lineage.lineage_dir.clone(), sys.clone())
                .map_err(|e| e.to_string())
        });
    if let Err(e) = repair::audit(&scan.root, &plan, &outcome, &sys) {
        say_err(&format!(
            "could not write the audit line to {}: {e}",
            scan.root.join(".ubunye/repairs.jsonl").display()
        ));
    }
    match outcome {
        Ok(o) => {
            if a.json {
                crate::cli::outln(&serde_json::to_string_pretty(&o).unwrap_or_default());
            } else {
                crate::cli::out(&crate::report::repair_outcome(&o));
            }
            exit::OK
        }
        Err(e) => {
            say_err(&e);
            exit::REFUSED
        }
    }
}
