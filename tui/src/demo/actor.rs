//! The demo's actors: this binary re-executed as `ubunye __demo-actor <what>`,
//! driving the library as a run of a batch would (acquire, finished check,
//! record, staged append, land, end) and killing itself with SIGKILL at a
//! protocol step through `Sys.hook`, as the kill tests' driver does. So every
//! state the demo shows is the engine's own doing, not hand-written JSON.
//!
//! args: `<use-case folder> <task> <dt> <output name> <output path>`. Only a
//! child of the demo acts (it carries the demo's sandbox tag): typed by hand,
//! the word does nothing.
//!
//! * `dead`: killed at the second file moved into the output, after claiming.
//! * `takeover-killed`: acquires the dead run's batch and is killed once it has
//!   renamed the dead lease aside: an orphan.
//! * `kept`: fails after its first file landed, which meanwhile was replaced
//!   by a non-empty folder, so the rollback keeps the lease.
//! * `rerun-killed`: `--rerun` of a finished batch, killed after its note was
//!   written and before the replaced files were removed: pending.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ubunye::append::StagedAppend;
use ubunye::layout::{TaskPath, lineage_root};
use ubunye::lineage::{RecordSpec, RunRecord};
use ubunye::sys::{Hook, Step};
use ubunye::vars::{Variables, cli_variables};
use ubunye::{LeaseSpec, RunLease, Sys};

/// The hidden word that makes this binary an actor: `ubunye __demo-actor
/// <what> <args>`, as the demo starts it (no help or completion offers it).
pub const SUBCOMMAND: &str = "__demo-actor";

/// Act as `what` with `args`; the exit code (3 when it could not act).
pub fn run(what: &str, args: &[String]) -> i32 {
    if std::env::var_os(super::children::TAG).is_none() {
        crate::console::print::errln("ubunye: __demo-actor is started by `ubunye demo` only; it does nothing here.");
        return crate::console::exit::USAGE;
    }
    match act(what, args) {
        Ok(()) => 0,
        Err(e) => {
            crate::console::print::errln(&format!("ubunye demo ({what}): {e}"));
            3
        }
    }
}

/// A `Sys` that kills this process with SIGKILL the `nth` time `step` is reached.
fn killing_at(step: Step, nth: usize) -> Sys {
    let mut sys = crate::console::machine::sys();
    let seen = Arc::new(AtomicUsize::new(0));
    sys.hook = Hook(Some(Arc::new(move |s: Step| {
        if s == step && seen.fetch_add(1, Ordering::SeqCst) + 1 == nth {
            let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
            std::thread::sleep(std::time::Duration::from_secs(10));
        }
    })));
    sys
}

fn act(what: &str, args: &[String]) -> Result<(), String> {
    let [uc, task, dt, output, out_path] = args else {
        return Err("expected: <use-case folder> <task> <dt> <output name> <output path>".into());
    };
    let uc = PathBuf::from(uc);
    let task = TaskPath::parse(task)?;
    let vars = cli_variables(Some(dt), None, "DEV", &[]).map_err(|e| e.to_string())?;
    let job = Job { uc: &uc, task, vars, output, out_dir: uc.join(out_path), what };
    match what {
        "dead" => job.append(Some((Step::Moved, 2)), false, false),
        "kept" => job.append(None, false, true),
        "rerun-killed" => job.append(Some((Step::OutputsCleared, 1)), true, false),
        "takeover-killed" => {
            let spec = LeaseSpec::new(&uc, job.task, job.vars, uuid::Uuid::new_v4().to_string());
            RunLease::acquire(spec, killing_at(Step::DeadRenamed, 1)).map_err(|e| e.to_string())?;
            Err("the takeover was not stopped at the rename: is the batch's run alive?".into())
        }
        other => Err(format!("no such actor: {other}")),
    }
}

struct Job<'a> {
    uc: &'a Path,
    task: TaskPath,
    vars: Variables,
    output: &'a str,
    out_dir: PathBuf,
    what: &'a str,
}

impl Job<'_> {
    /// A run that appends three files to its output through a staging folder.
    fn append(self, kill: Option<(Step, usize)>, rerun: bool, keep: bool) -> Result<(), String> {
        let e = |e: ubunye::Error| e.to_string();
        let run_id = uuid::Uuid::new_v4().to_string();
        let sys = match kill {
            Some((step, nth)) => killing_at(step, nth),
            None => crate::console::machine::sys(),
        };
        let spec = LeaseSpec::new(self.uc, self.task.clone(), self.vars.clone(), run_id.clone());
        let (lease, _) = RunLease::acquire(spec, sys.clone()).map_err(e)?;
        if let Err(err) = lease.check_finished(&[self.output.to_string()], rerun) {
            lease.release();
            return Err(err.to_string());
        }
        let rs = RecordSpec {
            run_id: run_id.clone(),
            task: self.task.clone(),
            variables: self.vars.clone(),
            backend: "demo".into(),
            command: Some(vec!["ubunye".into(), "demo".into(), self.what.into()]),
        };
        let mut record = RunRecord::start(&lineage_root(self.uc), &rs, sys.clock.now(), sys.timing.busy_for)
            .map_err(|e| e.to_string())?;
        record.set_outputs(vec![(self.output.into(), "append".into(), self.out_dir.display().to_string())]);
        lease.writing(self.output, true, true).map_err(e)?;
        let st = StagedAppend::begin(&lease, self.output, &self.out_dir).map_err(e)?;
        for i in 0..3 {
            let p = st.staging.join(format!("part-{i:05}-{run_id}.csv"));
            std::fs::write(&p, format!("order,{i}\n")).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        st.land(&lease).map_err(e)?;
        if keep {
            // Something took the landed file's place (a folder a reader holds
            // open): the rollback cannot remove it, so the lease is kept.
            let victim = self.out_dir.join(format!("part-00000-{run_id}.csv"));
            let _ = std::fs::remove_file(&victim);
            std::fs::create_dir_all(&victim).map_err(|e| format!("{}: {e}", victim.display()))?;
            let _ = std::fs::write(victim.join("in-use.txt"), "a reader's file\n");
            let _ = lease.end(false);
            let _ = record.finish(
                "error",
                Some(
                    "CommandFailed: the demo's job failed after its files landed; one of them could not be taken back"
                        .into(),
                ),
                sys.clock.now(),
            );
            return Ok(());
        }
        lease.written(self.output).map_err(e)?;
        record.finish("success", None, sys.clock.now()).map_err(|e| e.to_string())?;
        lease.end(true).map_err(e)?;
        match kill {
            Some(_) => Err("the run was not stopped at its kill point".into()),
            None => Ok(()),
        }
    }
}
