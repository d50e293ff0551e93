//! `ubunye exec`: run any program as a batch under a lease, so that ADR 008's
//! guarantees reach jobs written in any language. One live run per batch; a dead
//! run taken over; appends written into a staging folder, claimed and moved in
//! once the program succeeds; overwrites published in one step; a finished batch
//! refused (`--rerun` replaces it, `--resume` skips it); a run record in the
//! peer's format.
//!
//! The engine never prints: [`run`] reports [`Event`]s and returns an [`ExecEnd`]
//! or an error; the CLI renders them.

pub mod child;
pub mod outputs;
mod publish;
pub mod sentinel;
mod spec;
pub mod store;
pub mod tee;
mod unleased;

pub use spec::{ExecSpec, Lineage, Output, env_name, masked_command, recorded_command};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::key;
use crate::layout::TaskPath;
use crate::lease::{Commit, Ended, LeaseSpec, Recovery, RunLease};
use crate::lineage::{RecordSpec, RunRecord};
use crate::sys::Sys;
use crate::vars::PyValue;
use child::ChildEnd;
use outputs::Swap;
use publish::Prepared;

/// What happened along the way, for the CLI to tell.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A dead run's lease was taken over.
    TookOver {
        /// What was done for the dead run.
        recovery: Recovery,
    },
    /// A dead lease left beside the lease was recovered.
    Adopted {
        /// What was done for the orphan's run.
        recovery: Recovery,
    },
    /// `--rerun`: the finished run's files are removed once this run commits.
    Replacing {
        /// The finished run: `run 45fffa8e (finished 2026-11-29T10:32:07Z)`.
        finished_by: String,
        /// How many of its claimed files go once this run commits.
        files: usize,
    },
    /// `--rerun`: outputs the finished run did not claim get the batch again.
    AppendsAgain {
        /// The finished run: `run 45fffa8e (finished 2026-11-29T10:32:07Z)`.
        finished_by: String,
        /// The append outputs it did not claim, by name.
        outputs: Vec<String>,
    },
    /// Leases are off (`UBUNYE_RUN_LEASE`): no protection against a concurrent run.
    LeasesOff,
    /// The end of the run record could not be written: it still says
    /// `running`. The run's outcome stands (as the peer's does); the record
    /// is wrong until someone fixes it. Said once, when the run is over.
    RecordUnfinished {
        /// The record.
        path: PathBuf,
        /// Why it could not be written.
        error: String,
    },
    /// The command is about to start.
    Started {
        /// This run's id.
        run_id: String,
        /// The batch key.
        key: String,
    },
    /// An append output's files were claimed and moved in.
    Landed {
        /// The output's name.
        output: String,
        /// How many files were moved in.
        files: usize,
    },
    /// An overwrite output was published.
    Swapped {
        /// The output's name.
        output: String,
        /// How the new folder took the old one's place.
        how: Swap,
    },
    /// The run failed and some of what it wrote could not be taken back (in use,
    /// a mount point in a staging folder): the lease is kept for the next run.
    Kept {
        /// The batch key, for the next run or `ubunye leases takeover`.
        key: String,
    },
    /// The command exited leaving processes running: they were stopped (SIGTERM,
    /// then SIGKILL after the grace) before anything landed. `unstopped` of them
    /// could not be stopped: then nothing lands and the run fails.
    LeftBehind {
        /// How many processes were left running.
        processes: usize,
        /// How many of them could not be stopped.
        unstopped: usize,
    },
    /// How long a phase took (the CLI shows it when `UBUNYE_EXEC_TIMINGS` is set).
    Timing {
        /// The phase: `land` or `commit`.
        phase: &'static str,
        /// Seconds it took.
        seconds: f64,
    },
}

/// How `ubunye exec` ended, short of an error.
#[derive(Debug, Serialize)]
#[serde(tag = "end", rename_all = "kebab-case")]
pub enum ExecEnd {
    /// The command succeeded and the run committed.
    Done {
        /// This run's id.
        run_id: String,
        /// The batch key.
        key: String,
        /// What commit did (None if ending the lease rolled back instead).
        commit: Option<Commit>,
        /// Something could not be cleaned up (a replaced file, an old copy, the
        /// note): the lease is kept for the next run to finish.
        kept: bool,
    },
    /// `--resume`: the batch was finished by an earlier run; nothing ran.
    Skipped {
        /// The refusal `--resume` passed over: which run finished the batch.
        message: String,
    },
    /// The command failed (or was interrupted); what it wrote was taken back.
    CommandFailed {
        /// How the command ended.
        child: ChildEnd,
        /// Some of what it wrote could not be taken back: the lease is kept for
        /// the next run.
        kept: bool,
    },
}

fn child_env(spec: &ExecSpec, key: &str, prepared: &[Prepared<'_>]) -> Vec<(String, OsString)> {
    let mut env = vec![
        ("UBUNYE_RUN_ID".to_string(), OsString::from(&spec.run_id)),
        ("UBUNYE_BATCH_KEY".to_string(), OsString::from(key)),
        ("UBUNYE_TASK".to_string(), OsString::from(spec.task.as_str())),
        ("UBUNYE_USECASE_DIR".to_string(), spec.usecase_dir.clone().into_os_string()),
    ];
    env.extend(variables_env(&spec.variables));
    for p in prepared {
        env.push((p.out.env.clone(), p.staging.clone().into_os_string()));
    }
    env
}

/// Each variable as `UBUNYE_VAR_<NAME>` (a `None` is left out; a value that
/// is not text as its compact JSON), as the command gets them.
pub fn variables_env(vars: &crate::vars::Variables) -> Vec<(String, OsString)> {
    let mut env = Vec::new();
    for (k, v) in vars {
        let value = match v {
            PyValue::None => continue,
            PyValue::Str(s) => s.clone(),
            other => {
                other.to_json().map(|j| crate::pyjson::dumps(&j, crate::pyjson::Style::COMPACT)).unwrap_or_default()
            }
        };
        env.push((env_name("UBUNYE_VAR_", k), OsString::from(value)));
    }
    env
}

/// The run record of an exec run.
fn record_spec(spec: &ExecSpec) -> RecordSpec {
    RecordSpec {
        run_id: spec.run_id.clone(),
        task: spec.task.clone(),
        variables: spec.variables.clone(),
        backend: "exec".into(),
        command: Some(recorded_command(spec)),
    }
}

fn failed_note(spec: &ExecSpec, end: &ChildEnd) -> String {
    command_failed(&spec.command[0], spec.timeout, end)
}

/// Why a run's command failed, as its record says it (`CommandFailed`,
/// `TimedOut`, `Terminated`): the same words for a run on a disk and in a
/// store.
pub(crate) fn command_failed(
    command: &std::ffi::OsStr,
    timeout: Option<std::time::Duration>,
    end: &ChildEnd,
) -> String {
    let cmd = command.to_string_lossy();
    if end.unstopped > 0 && end.interrupted_by.is_none() {
        return format!(
            "CommandFailed: {} process(es) that {cmd} left running could not be stopped (they kept forking), so nothing landed.",
            end.unstopped
        );
    }
    if end.timed_out {
        return format!(
            "TimedOut: {cmd} ran past --timeout {} and was stopped (SIGTERM, then SIGKILL after the grace); nothing landed and what it wrote was taken back.",
            timeout.map(|t| humantime::format_duration(t).to_string()).unwrap_or_default()
        );
    }
    match (end.interrupted_by, end.signal) {
        // Not "Interrupted": that is the status a taker writes, and this
        // record says error.
        (Some(sig), _) => format!(
            "Terminated: ubunye exec received {}; the command ({cmd}) was stopped and what it wrote was taken back.",
            child::signal_name(sig)
        ),
        (None, Some(sig)) => format!("CommandFailed: {cmd} was killed by {}.", child::signal_name(sig)),
        (None, None) => format!("CommandFailed: {cmd} exited with code {}.", end.code),
    }
}

/// Run the command as a batch under its lease.
pub fn run(spec: &ExecSpec, sys: Sys, events: &mut dyn FnMut(Event)) -> Result<ExecEnd> {
    let unfinished = RecordEnd::default();
    let out = run_under_lease(spec, sys, events, &unfinished);
    if let Some((path, error)) = unfinished.0.into_inner() {
        events(Event::RecordUnfinished { path, error });
    }
    out
}

/// A run record whose end could not be written, kept so that the run says so.
#[derive(Default)]
struct RecordEnd(std::cell::RefCell<Option<(PathBuf, String)>>);

impl RecordEnd {
    /// Write the end of `record`, if there is one; a failure is kept to be said.
    fn finish(&self, record: &mut Option<RunRecord>, status: &str, note: Option<String>, now: std::time::SystemTime) {
        if let Some(r) = record.as_mut()
            && let Err(e) = r.finish(status, note, now)
        {
            self.0.borrow_mut().get_or_insert_with(|| (r.path().to_path_buf(), e.to_string()));
        }
    }
}

fn run_under_lease(spec: &ExecSpec, sys: Sys, events: &mut dyn FnMut(Event), ends: &RecordEnd) -> Result<ExecEnd> {
    let key = key::batch_key(spec.task.as_str(), &spec.variables).map_err(|e| Error::Usage(e.to_string()))?;
    if !sys.knobs.leases {
        events(Event::LeasesOff);
        return unleased::run(spec, &key, sys, events, ends);
    }
    let lineage_dir = match &spec.lineage {
        Lineage::Dir(d) => Some(d.clone()),
        Lineage::Off => None,
    };
    let lspec = LeaseSpec {
        usecase_dir: spec.usecase_dir.clone(),
        task: spec.task.clone(),
        variables: spec.variables.clone(),
        run_id: spec.run_id.clone(),
        lineage_dir,
        actor: None,
        key: None,
    };
    let (lease, acquired) = RunLease::acquire(lspec, sys.clone())?;
    if let Some(r) = acquired.took_over {
        events(Event::TookOver { recovery: r });
    }
    for r in acquired.adopted {
        events(Event::Adopted { recovery: r });
    }
    let appends: Vec<String> = spec.outputs.iter().filter(|o| o.append).map(|o| o.name.clone()).collect();
    match lease.check_finished(&appends, spec.rerun) {
        Err(e) if e.kind() == Some(RefusalKind::Finished) && spec.resume => {
            lease.release();
            let message = e.refusal().map(|r| r.message.clone()).unwrap_or_default();
            return Ok(ExecEnd::Skipped { message });
        }
        Err(e) => {
            lease.release();
            return Err(e);
        }
        Ok(check) => {
            if let Some(who) = &check.finished_by {
                let files = check.replaces.iter().map(|(_, f)| f.len()).sum();
                if files > 0 {
                    events(Event::Replacing { finished_by: who.clone(), files });
                }
                if !check.again.is_empty() {
                    events(Event::AppendsAgain { finished_by: who.clone(), outputs: check.again.clone() });
                }
            }
        }
    }
    // Note every output, and name its staging folder in the lease before it exists.
    let mut prepared: Vec<Prepared<'_>> = Vec::new();
    for out in &spec.outputs {
        match publish::prepare(&lease, out) {
            Ok(p) => prepared.push(p),
            Err(e) => {
                let _ = lease.end(false);
                return Err(e);
            }
        }
    }
    let mut record = match &spec.lineage {
        Lineage::Off => None,
        Lineage::Dir(dir) => match RunRecord::start(dir, &record_spec(spec), sys.clock.now(), sys.timing.busy_for) {
            Ok(mut r) => {
                r.set_outputs(
                    spec.outputs
                        .iter()
                        .map(|o| {
                            (
                                o.name.clone(),
                                if o.append { "append" } else { "overwrite" }.to_string(),
                                o.path.display().to_string(),
                            )
                        })
                        .collect(),
                );
                Some(r)
            }
            Err(e) => {
                let _ = lease.end(false);
                return Err(Error::io("write the run record in", dir, e));
            }
        },
    };
    let mut finish_record =
        |status: &str, note: Option<String>| ends.finish(&mut record, status, note, sys.clock.now());
    events(Event::Started { run_id: spec.run_id.clone(), key: key.clone() });
    let end = match child::run(&spec.command, &child_env(spec, &key, &prepared), child_options(spec, &sys)) {
        Ok(child::Ran::Ended(end)) => end,
        Ok(child::Ran::NotStarted(why, e)) => {
            let ended = lease.end(false);
            finish_record("error", Some(format!("CommandFailed: {}", not_started_text(spec, &e))));
            ended?;
            return Err(Error::NotStarted { why, message: not_started_text(spec, &e) });
        }
        Err(e) => {
            let ended = lease.end(false);
            finish_record(
                "error",
                Some(format!("CommandFailed: {} could not be started: {e}", spec.command[0].to_string_lossy())),
            );
            ended?;
            return Err(Error::io("start", PathBuf::from(&spec.command[0]), e));
        }
    };
    if end.left_behind > 0 {
        events(Event::LeftBehind { processes: end.left_behind, unstopped: end.unstopped });
    }
    if !end.success() {
        let kept = matches!(lease.end(false)?, Ended::RolledBack { kept: true, .. });
        finish_record("error", Some(failed_note(spec, &end)));
        return Ok(ExecEnd::CommandFailed { child: end, kept });
    }
    // The command succeeded: land the appends, publish the overwrites.
    let t = std::time::Instant::now();
    let published = publish::publish(&lease, &prepared, sys.knobs.exchange, events);
    events(Event::Timing { phase: "land", seconds: t.elapsed().as_secs_f64() });
    if let Err(e) = published {
        let lost = e.kind() == Some(RefusalKind::Lost);
        if let Ok(Ended::RolledBack { kept: true, .. }) = lease.end(false) {
            events(Event::Kept { key: key.clone() });
        }
        let note = if lost { lost_text(spec) } else { format!("{e}") };
        finish_record(if lost { "interrupted" } else { "error" }, Some(note));
        return Err(e);
    }
    for p in &prepared {
        lease.written(&p.out.name)?;
    }
    if let Some(note) = lease.lost_note() {
        finish_record("interrupted", Some(note));
        return Err(lease.end(true).err().unwrap_or_else(|| Refusal::new(RefusalKind::Lost, lost_text(spec)).into()));
    }
    // As the peer: the record says success before the lease is committed, so a
    // run killed in between is treated as finished by the next one.
    finish_record("success", None);
    let t = std::time::Instant::now();
    let ended = lease.end(true);
    events(Event::Timing { phase: "commit", seconds: t.elapsed().as_secs_f64() });
    match ended {
        Ok(Ended::Committed { commit, kept }) => {
            Ok(ExecEnd::Done { run_id: spec.run_id.clone(), key, commit: Some(commit), kept })
        }
        Ok(Ended::RolledBack { .. }) => {
            Ok(ExecEnd::Done { run_id: spec.run_id.clone(), key, commit: None, kept: false })
        }
        Err(e) => {
            finish_record("interrupted", Some(lost_text(spec)));
            Err(e)
        }
    }
}

/// How the command is run: its keeper, its grace, its log beside the run
/// record (none without a record), its maximum runtime.
fn child_options<'a>(spec: &'a ExecSpec, sys: &'a Sys) -> child::Options<'a> {
    let log = match (&spec.lineage, spec.log_max) {
        (Lineage::Dir(d), Some(max)) => {
            let secret: crate::vars::Variables =
                spec.variables.iter().filter(|(k, _)| crate::secrets::looks_secret(k)).cloned().collect();
            let secrets = variables_env(&secret)
                .into_iter()
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .filter(|v| v.len() >= 4)
                .collect();
            Some(tee::LogSpec { path: log_path(d, &spec.task, &spec.run_id), max, secrets })
        }
        _ => None,
    };
    child::Options { keeper: spec.keeper.as_deref(), timing: &sys.timing, log, timeout: spec.timeout }
}

/// A run's log: `<lineage>/<task>/<run>.log`, beside its record.
pub fn log_path(lineage_dir: &Path, task: &TaskPath, run_id: &str) -> PathBuf {
    crate::lineage::RunRecord::path_for(lineage_dir, task, run_id).with_extension("log")
}

/// The command could not be started (it was there when the invocation was checked).
fn not_started_text(spec: &ExecSpec, e: &std::io::Error) -> String {
    format!("cannot start '{}': {e}; nothing landed", spec.command[0].to_string_lossy())
}

fn lost_text(spec: &ExecSpec) -> String {
    format!(
        "Run {} lost its lease on {} to another run (it was judged dead). That run takes back what this one appended and writes the batch itself: check its record before running the batch again.",
        crate::documents::short(&spec.run_id),
        spec.task
    )
}
