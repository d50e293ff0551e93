//! `ubunye exec`: render the engine's run of a command under a lease.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use super::VarArgs;
use super::{DirArg, exit, say_err};
use ubunye::exec::{self, Event, ExecEnd, Lineage};
use ubunye::layout::TaskPath;

/// Run any program as a batch under a lease.
///
/// One live run per batch (the task and its variables, as the Python engine
/// keys them): a second run of the batch is refused in one line; a dead one is
/// taken over and what it appended is taken back. Each `--append` output gets a
/// staging folder inside it (`$UBUNYE_OUT_<NAME>`): when the command succeeds,
/// every file the command wrote there (names starting with `_` or `.` too; only
/// a `_SUCCESS` marker at its top is not moved, as ubunye writes the output's
/// own) is claimed in the lease and moved into the output, once. A symlink or a
/// special file there, or a mount point, is refused. Each `--overwrite` output
/// gets a fresh folder beside it, swapped in in one step once every append has
/// landed; the old copy is kept until the run commits. A failed command (or one
/// that fails to publish) leaves the outputs as they were.
///
/// When the command exits, any process it left running (a background job) is
/// sent SIGTERM, then SIGKILL after UBUNYE_EXEC_GRACE (default 2s), before
/// anything lands: no writer outlives its run.
///
/// Safe when the machine loses power, not only when a process is killed:
/// the lease, each claim, the landed files (the command's own writes
/// included) and the done mark reach the disk in order (fsync; see
/// docs/design.md, Durability). UBUNYE_DURABILITY=process turns the syncs
/// off and keeps only the safety against kills. A file system that refuses
/// fsync is named in a warning at the end.
///
/// The command also gets UBUNYE_RUN_ID, UBUNYE_BATCH_KEY, UBUNYE_TASK,
/// UBUNYE_USECASE_DIR and each variable as UBUNYE_VAR_<NAME>.
///
/// With -d s3://bucket/prefix the lease, notes and records are in an object
/// store (credentials and endpoint from AWS_*), and each --append is an
/// s3:// prefix in the same bucket: the command writes into a local staging
/// folder, and its files land as claimed multipart uploads under
/// <run id>-<name>, which a takeover of a dead run aborts (see
/// docs/object-storage.md). --overwrite is refused there.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ubunye exec -d uc -u demo -p sales -t ingest -dt 2025-01-01 \\
    --append events=out/events -- ./ingest.sh
  ubunye exec -d uc --task demo/sales/summary -dt 2025-01-01 \\
    --overwrite totals=out/summary -- duckdb -c \"COPY ...\"
  ubunye exec -d s3://bucket/uc --task demo/sales/ingest -dt 2025-01-01 \\
    --append events=s3://bucket/lake/events -- ./ingest.sh
  ubunye exec -d uc --task demo/sales/ingest -dt 2025-01-01 --timeout 2h \\
    --append events=out/events -- ./ingest.sh

The command's stdout and stderr are also kept in <run id>.log beside its
run record (when it has no terminal, as under a scheduler): at most
UBUNYE_EXEC_LOG_MAX (10MiB), then rotated to .log.1; UBUNYE_EXEC_LOG=off
keeps none. `ubunye runs show <run>` prints its end.

Exit codes:
  0      done, or skipped with --resume
  1      refused: another run holds the batch, a run finished it, the lease
         was lost (or --refused-exit N); also exec's own failure (a file it
         could not write)
  2      usage: bad flags, an output or a folder that cannot work
  126    the command is there but cannot be executed
  124    the command ran past --timeout and was stopped; nothing landed
  126    the command is there but cannot be executed
  127    the command is not found
  other  the command's own exit code; 128+N when signal N killed it
With 2, 126 and 127 nothing was written. A command can exit 1, 2, 126 or
127 itself: a scheduler that must tell a refusal from that gives
--refused-exit 75 (EX_TEMPFAIL: try again later). Each code but 0 comes with
one line on stderr saying why.")]
pub struct ExecArgs {
    #[command(flatten)]
    pub dir: DirArg,
    /// The task as <usecase>/<package>/<task> (or give -u, -p and -t).
    #[arg(long, value_name = "U/P/T", conflicts_with_all = ["usecase", "package", "task_name"])]
    pub task: Option<String>,
    /// The use case (with -p and -t).
    #[arg(short = 'u', long = "usecase", value_name = "U", requires_all = ["package", "task_name"])]
    pub usecase: Option<String>,
    /// The package (with -u and -t).
    #[arg(short = 'p', long = "package", value_name = "P", requires_all = ["usecase", "task_name"])]
    pub package: Option<String>,
    /// The task's name (with -u and -p).
    #[arg(short = 't', long = "task-name", value_name = "T", requires_all = ["usecase", "package"])]
    pub task_name: Option<String>,
    #[command(flatten)]
    pub vars: VarArgs,
    /// An append output, NAME=PATH (a folder, relative to -d; an s3:// prefix
    /// with -d s3://...). Repeatable.
    #[arg(long = "append", value_name = "NAME=PATH")]
    pub appends: Vec<String>,
    /// An overwrite output, NAME=PATH (a folder, relative to -d). Repeatable.
    #[arg(long = "overwrite", value_name = "NAME=PATH")]
    pub overwrites: Vec<String>,
    /// Replace a batch a finished run appended (its files are removed once this
    /// run has committed).
    #[arg(long, conflicts_with = "resume")]
    pub rerun: bool,
    /// Skip the batch, with one [SKIP] line and exit 0, if a run finished it.
    #[arg(long)]
    pub resume: bool,
    /// Where run records go (relative to -d; default .ubunye/lineage).
    #[arg(long, value_name = "DIR", conflicts_with = "no_lineage")]
    pub lineage_dir: Option<PathBuf>,
    /// Write no run record.
    #[arg(long)]
    pub no_lineage: bool,
    /// Say nothing but refusals and errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// The exit code of a refusal (the batch held, finished, or its lease
    /// lost), instead of 1: e.g. 75, EX_TEMPFAIL, so that a scheduler tells
    /// a refusal from the command's own exit 1.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..=255))]
    pub refused_exit: i32,
    /// Its maximum runtime (`30s`, `2h`): past it the command and all it
    /// started are stopped (SIGTERM, then SIGKILL after UBUNYE_EXEC_GRACE),
    /// nothing lands, what it wrote is taken back, its record says
    /// TimedOut, and exec exits 124.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// With -d s3://...: the lifetime this run writes in its lease (`ttl_s`,
    /// default 2m, saved six times in it): a lease not saved for that long is
    /// dead to the next run, which takes it over. On a disk the peer's 15
    /// minutes bind both engines, and this is refused.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub lease_ttl: Option<std::time::Duration>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub(crate) fn task_of(a: &ExecArgs) -> Result<TaskPath, String> {
    match (&a.task, &a.usecase, &a.package, &a.task_name) {
        (Some(t), _, _, _) => TaskPath::parse(t),
        (None, Some(u), Some(p), Some(t)) => TaskPath::from_parts(u, p, t),
        _ => Err("name the task: --task <usecase>/<package>/<task>, or -u U -p P -t T".into()),
    }
}

fn describe(e: &Event, run_id: &str, root: &std::path::Path, timings: bool) -> Option<String> {
    Some(match e {
        Event::TookOver { recovery: r } | Event::Adopted { recovery: r } => {
            let what =
                if matches!(e, Event::Adopted { .. }) { "a dead lease left beside this one" } else { "its lease" };
            crate::report::took_over(r, what)
        }
        Event::Replacing { finished_by, files } => format!(
            "--rerun: replacing the batch written by {finished_by}; its {files} file(s) are removed once this run succeeds."
        ),
        Event::AppendsAgain { finished_by, outputs } => format!(
            "--rerun: output(s) {} hold the batch written by {finished_by} and cannot be taken back, so this run appends the batch to them again.",
            outputs.join(", ")
        ),
        Event::LeasesOff => "UBUNYE_RUN_LEASE is off: no lease, so nothing stops a second run of this batch.".into(),
        Event::RecordUnfinished { path, error } => format!(
            "warning: the end of run record {} could not be written ({error}): it still says running, though the run is over as said here; fix or remove it by hand.",
            path.display()
        ),
        Event::Timing { phase, seconds } if timings => {
            format!("timing {phase} {:.3} ms", seconds * 1e3)
        }
        Event::Kept { key } => format!(
            "some of what this run wrote could not be taken back; the lease is kept so the next run takes it back: see `ubunye leases explain {}`",
            ubunye::suggest::batch(root, key)
        ),
        Event::LeftBehind { processes, unstopped: 0 } => format!(
            "the command left {processes} process(es) running; they were stopped (SIGTERM, then SIGKILL) before anything landed."
        ),
        Event::LeftBehind { processes, unstopped } => format!(
            "the command left {processes} process(es) running and {unstopped} of them could not be stopped (they keep forking): nothing lands. Stop them by hand: each has this run's id in its environment (`grep -l UBUNYE_RUN_ID={run_id} /proc/*/environ`)."
        ),
        Event::Started { .. } | Event::Landed { .. } | Event::Swapped { .. } | Event::Timing { .. } => return None,
    })
}

pub fn run(a: &ExecArgs) -> i32 {
    if a.lease_ttl.is_some() {
        say_err(
            "--lease-ttl is for a use case in a store (-d s3://...): on a disk a lease lives the peer's 15 minutes, which both engines must agree on",
        );
        return exit::USAGE;
    }
    let task = match task_of(a) {
        Ok(t) => t,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    let vars = match a.vars.variables() {
        Ok(v) => v,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    let lineage = if a.no_lineage {
        Lineage::Off
    } else {
        // Relative to -d, as the peer's --lineage-dir; the plan makes it absolute.
        Lineage::Dir(a.lineage_dir.clone().unwrap_or_else(|| PathBuf::from(".ubunye/lineage")))
    };
    let mut spec = match exec::ExecSpec::check(
        &a.dir.dir,
        task,
        vars,
        &a.appends,
        &a.overwrites,
        a.rerun,
        a.resume,
        lineage,
        a.command.clone(),
    ) {
        Ok(s) => s,
        Err(e) => {
            say_err(&e.to_string());
            return code_of(&e, a.refused_exit);
        }
    };
    if a.timeout.is_some_and(|t| t.is_zero()) {
        say_err("--timeout 0s would stop the command at once: give its maximum runtime (30s, 2h)");
        return exit::USAGE;
    }
    spec.timeout = a.timeout;
    spec.log_max = crate::console::machine::sys_for(&a.dir.dir).knobs.exec_log_max;
    let quiet = a.quiet;
    // A front-end switch (each phase's time on stderr), read once here.
    let timings = std::env::var_os("UBUNYE_EXEC_TIMINGS").is_some();
    let mut landed = Vec::new();
    // Suggested commands name the use case by its resolved folder: they
    // run as printed from any folder.
    let root = std::fs::canonicalize(&a.dir.dir).unwrap_or_else(|_| a.dir.dir.clone());
    let mut on_event = |e: Event| {
        match &e {
            Event::Landed { output, files } => landed.push(format!("{output} +{files} file(s)")),
            Event::Swapped { output, .. } => landed.push(format!("{output} replaced")),
            _ => {}
        }
        if let Some(line) = describe(&e, &spec.run_id, &root, timings)
            && (!quiet || matches!(e, Event::LeasesOff | Event::Timing { .. } | Event::RecordUnfinished { .. }))
        {
            say_err(&line);
        }
    };
    match exec::run(&spec, crate::console::machine::sys_for(&a.dir.dir), &mut on_event) {
        Ok(ExecEnd::Done { run_id, key, commit, kept }) => {
            if !quiet {
                let mut line = format!("{} {} done (run {})", spec.task, key, ubunye::documents::short(&run_id));
                if !landed.is_empty() {
                    line.push_str(&format!(": {}", landed.join(", ")));
                }
                if let Some(c) = &commit
                    && !c.replaced_removed.is_empty()
                {
                    line.push_str(&format!("; removed {} file(s) of the run it replaced", c.replaced_removed.len()));
                }
                say_err(&line);
            }
            if kept {
                let what = match commit.as_ref().and_then(|c| c.old_copies_left.first()) {
                    Some((folder, why)) => {
                        format!("the old copy {folder} of an overwritten output could not be removed ({why})")
                    }
                    None => "some files of the run it replaced could not be removed (in use?)".to_string(),
                };
                say_err(&format!(
                    "{what}; the lease is kept so the next run removes them: see `ubunye leases explain {}`",
                    ubunye::suggest::batch(&root, &key)
                ));
            }
            exit::OK
        }
        Ok(ExecEnd::Skipped { .. }) => {
            super::outln(&format!("[SKIP] {} already finished this batch (--resume); kept as it is.", spec.task));
            exit::OK
        }
        Ok(ExecEnd::CommandFailed { child, kept }) => {
            if let Some(why) = &child.log_failed {
                say_err(&format!(
                    "warning: the command's log could not be written ({why}); the run went on without it"
                ));
            }
            let what = match (child.interrupted_by, child.signal) {
                _ if child.timed_out => format!(
                    "ran past --timeout {} and was stopped",
                    spec.timeout.map(|t| humantime::format_duration(t).to_string()).unwrap_or_default()
                ),
                (None, _) if child.unstopped > 0 => format!(
                    "exited with code {} but left {} process(es) running that could not be stopped",
                    child.code, child.unstopped
                ),
                (Some(sig), _) => format!("was interrupted by {}", exec::child::signal_name(sig)),
                (None, Some(sig)) => format!("was killed by {}", exec::child::signal_name(sig)),
                (None, None) => format!("exited with code {}", child.code),
            };
            let back = if kept {
                "some of what it wrote could not be removed; the lease is kept for the next run"
            } else {
                "what it wrote was taken back"
            };
            say_err(&format!("{}: the command {what}; {back}.", spec.task));
            if child.timed_out {
                exit::TIMED_OUT
            } else if child.code == 0 {
                1
            } else {
                child.code
            }
        }
        Err(e) => {
            say_err(&e.to_string());
            code_of(&e, a.refused_exit)
        }
    }
}

/// The exit code of an error (see the table in `exec --help`).
fn code_of(e: &ubunye::Error, refused: i32) -> i32 {
    match e {
        ubunye::Error::Usage(_) => exit::USAGE,
        ubunye::Error::NotStarted { why, .. } => why.exit_code(),
        ubunye::Error::Refused(_) => refused,
        ubunye::Error::Io { .. } => exit::REFUSED,
    }
}
