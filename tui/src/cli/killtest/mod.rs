//! `ubunye killtest`: seed 004's kill test for a user's own job. Its
//! verifier is the library's (`ubunye::killtest`); this runs and kills the
//! processes, and prints what was found.

mod example;
mod plan;
mod procs;
mod report;
mod rounds;
mod sandbox;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::cli::{exit, outln, say_err};
use rounds::{Ask, How, Outcome, Runner};

/// Prove a job safe to rerun: kill it at random moments, then check what is
/// left against one uninterrupted run.
///
/// Give killtest's own options, then `--`, then exactly what you would give
/// `ubunye exec` (its options, `--`, the command). killtest never runs the
/// command on your real outputs. It makes a sandbox beside the use case (or
/// --sandbox DIR) holding two copies of it, whose outputs start empty but for
/// one file of killtest's own in each append output (no run may remove it):
///
/// 1. A reference run: every batch once, uninterrupted, under `ubunye exec`.
///    What it leaves in each output is the expectation.
/// 2. --kills rounds on the other copy: each runs the batches (with --resume;
///    with --rerun once all are finished) and SIGKILLs `ubunye exec`, its
///    command and everything they started (their whole session, as a crash
///    would) at a random moment within the reference run's time. One round
///    in three, when a killed run left a lease, a `ubunye leases takeover`
///    instead, itself killed at a random moment half the time.
/// 3. One clean pass with --resume, then one --rerun of every batch; after
///    each, the outputs are compared with the reference by content (a
///    multiset of file contents per path, run ids taken out of file names),
///    and the sandbox is searched for what runs left behind.
///
/// The command runs in your current folder and reads its inputs where they
/// are; -d, $UBUNYE_USECASE_DIR and every $UBUNYE_OUT_<NAME> point into the
/// sandbox. Files inside the use case that the command needs (its config, its
/// inputs) are copied in with --copy. A command that writes by a path of its
/// own, not beneath $UBUNYE_OUT_<NAME>, is named (a kill leaves such a file
/// behind), and so is any change to the real use case's outputs.
///
/// What it cannot watch: writes outside the use case (by absolute paths, or
/// in your current folder) and side effects that are not files (a database,
/// an API); make those idempotent (seed 004).
///
/// Inside the sandbox a takeover's settle wait is 20 ms, not 3 s: killtest
/// stops every process of a killed round before the next one starts (it is
/// the subreaper of all it starts, so a process that leaves the round's
/// session is still found, named as a cause, and killed), so no holder judged
/// dead can still be alive.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ubunye killtest -- -d uc --task demo/sales/ingest -dt 2025-01-01 \\
    --append events=out/events -- ./ingest.sh
  ubunye killtest --kills 50 --seed 7 --batches dt=2025-01-01,dt=2025-01-02 \\
    --copy uc/config.yaml -- -d uc --task demo/sales/ingest \\
    --append events=out/events -- python ingest.py
  ubunye killtest --example     # seed 004's three ways of one job, side by side

The table: missing (files the reference wrote that are not there), corrupt
(contents it did not write: torn or different), doubled (extra copies),
redone (runs begun again after a kill: expected, not a failure), leftover
(leases, staging folders, temp files, records left running), foreign-lost.

Exit codes:
  0  PASS: every output exactly as one uninterrupted run left it, nothing left
  1  FAIL: the table and one line per cause say why
  2  usage, a command that cannot run, or a reference run that failed; nothing
     is written outside the sandbox
  130  interrupted (Ctrl-C): every process killtest started is stopped; the
     sandbox is kept, its path in the last line")]
pub struct KilltestArgs {
    /// Kill rounds (default 20; 10 for --example).
    #[arg(long, value_name = "N")]
    pub kills: Option<u64>,
    /// The seed of the random moments (default: a new one, printed, so a run
    /// can be repeated).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// The batches each round runs, in order: `dt=2025-01-01,dt=2025-01-02`
    /// (several variables of one batch joined by `;`: `dt=1;mode=PROD`); each
    /// over the exec arguments' own. Default: the one batch they name.
    #[arg(long, value_name = "LIST")]
    pub batches: Vec<String>,
    /// Where to make the sandbox (a new or empty folder; kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub sandbox: Option<PathBuf>,
    /// A file or folder of the use case to copy into the sandbox (repeatable).
    #[arg(long = "copy", value_name = "PATH")]
    pub copies: Vec<PathBuf>,
    /// Compare the outputs with your own command instead of by content: run
    /// by `sh -c` with $UBUNYE_REFERENCE and $UBUNYE_RESULT (the two use
    /// cases), $UBUNYE_REF_OUT_<NAME> and $UBUNYE_OUT_<NAME> (each output in
    /// each); exit 0 means the same.
    #[arg(long, value_name = "CMD")]
    pub compare: Option<String>,
    /// Run the command alone, not under `ubunye exec` ($UBUNYE_OUT_<NAME> is
    /// then the output itself): what a kill does to it unguarded.
    #[arg(long)]
    pub bare: bool,
    /// Keep the sandbox after a PASS (it is always kept after a FAIL).
    #[arg(long)]
    pub keep: bool,
    /// Print the report as JSON (docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Run seed 004's example: one small job three ways (naive, skip-if-exists,
    /// and naive under ubunye exec), and print the table of each.
    #[arg(long, conflicts_with_all = ["exec", "batches", "sandbox", "copies", "compare", "bare"])]
    pub example: bool,
    /// `ubunye exec`'s arguments: its options, `--`, the command.
    #[arg(last = true, value_name = "EXEC ARGS")]
    pub exec: Vec<OsString>,
}

impl KilltestArgs {
    /// --kills, or `default`.
    pub(crate) fn kills_or(&self, default: u64) -> u64 {
        self.kills.unwrap_or(default)
    }
}

/// The progress bar on stderr (drawn only on a terminal).
struct Bar(indicatif::ProgressBar);

impl rounds::Progress for Bar {
    fn phase(&self, what: &str) {
        self.0.set_message(what.to_string());
    }
    fn round(&self) {
        self.0.inc(1);
    }
}

fn bar(kills: u64, hidden: bool) -> Bar {
    let b = if hidden {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::with_draw_target(Some(kills), indicatif::ProgressDrawTarget::stderr())
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} rounds  {elapsed}  {msg}") {
        b.set_style(style);
    }
    Bar(b)
}

/// What a killtest asks and where it runs, once checked.
pub(crate) struct Setup {
    plan: plan::Plan,
    how: How,
    sandbox: rounds::Sandbox,
}

/// Check the arguments and make the sandbox. `Err`: one line, exit 2.
pub(crate) fn setup(a: &KilltestArgs, how: How) -> Result<Setup, String> {
    if a.kills == Some(0) {
        return Err("--kills 0 kills nothing: give 1 or more (default 20)".into());
    }
    let e = plan::exec_args(&a.exec)?;
    let plan = plan::plan(&e, &a.batches, &a.copies)?;
    let sandbox = rounds::sandbox(&plan, a.sandbox.as_deref())?;
    Ok(Setup { plan, how, sandbox })
}

/// Run a set-up killtest to its outcome. `Err(code)`: it stopped (its line said).
pub(crate) fn outcome(
    s: &Setup,
    kills: u64,
    seed: u64,
    compare: Option<&str>,
    progress: &dyn rounds::Progress,
    stop: &procs::Stop,
) -> Result<Outcome, i32> {
    let bin = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ubunye"));
    let runner = Runner { plan: &s.plan, how: s.how, bin, sandbox: s.sandbox.root.clone() };
    let ask = Ask { kills: kills as usize, seed, compare };
    rounds::run(&runner, &s.sandbox, &ask, progress, stop).map_err(|e| match e {
        Ok(why) => {
            say_err(&why);
            exit::USAGE
        }
        Err(procs::Interrupted) => {
            say_err(&format!(
                "interrupted: every process killtest started is stopped; the sandbox is left at {}",
                s.sandbox.root.display()
            ));
            130
        }
    })
}

pub fn run(a: &KilltestArgs) -> i32 {
    if a.example {
        return example::run(a);
    }
    let how = if a.bare { How::Bare } else { How::Exec };
    procs::become_subreaper();
    let stop = procs::Stop::on_signals();
    let s = match setup(a, how) {
        Ok(s) => s,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    let seed = a.seed.unwrap_or_else(|| uuid::Uuid::new_v4().as_u64_pair().0 % 1_000_000);
    let kills = a.kills_or(20);
    let progress = bar(kills, a.json);
    let o = match outcome(&s, kills, seed, a.compare.as_deref(), &progress, &stop) {
        Ok(o) => o,
        Err(code) => {
            progress.0.finish_and_clear();
            return code;
        }
    };
    progress.0.finish_and_clear();
    let causes = report::causes(&o);
    let pass = causes.is_empty();
    let kept = !pass || a.keep || a.sandbox.is_some();
    if !kept {
        let _ = std::fs::remove_dir_all(&s.sandbox.root);
    }
    let sandbox = format!("{} ({})", s.sandbox.root.display(), if kept { "kept" } else { "removed" });
    if a.json {
        let j = report::Json {
            verdict: if pass { "PASS" } else { "FAIL" },
            seed,
            how,
            batches: s.plan.batches.iter().map(|b| b.label.as_str()).collect(),
            outcome: &o,
            causes,
            sandbox: s.sandbox.root.display().to_string(),
            kept,
        };
        crate::cli::print_json(&j);
    } else {
        let under = if how == How::Bare { "the command alone (--bare)" } else { "ubunye exec" };
        outln(&format!(
            "{} round(s) of {} batch(es) under {under}, seed {seed}: {} kill(s) of the run, {} takeover(s) ({} killed), {} round(s) with --rerun; the reference run took {:.2} s",
            o.rounds,
            s.plan.batches.len(),
            o.kills,
            o.takeovers,
            o.takeover_kills,
            o.rerun_rounds,
            o.reference_secs
        ));
        let rows: Vec<(String, _)> = o.rows.iter().map(|r| (r.check.clone(), report::figures(r))).collect();
        crate::cli::out(&report::table("check", &rows));
        for c in &causes {
            outln(&format!("- {c}"));
        }
        outln(&format!("sandbox: {sandbox}"));
        if pass {
            outln(&format!(
                "PASS: every output exactly as one uninterrupted run left it, nothing left behind (repeat with --seed {seed})"
            ));
        } else {
            outln(&format!("FAIL: {} (repeat with --seed {seed})", causes[0]));
        }
    }
    if pass { exit::OK } else { exit::REFUSED }
}
