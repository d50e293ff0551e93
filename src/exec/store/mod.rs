//! `ubunye exec` against a store: the command runs on this machine and writes
//! into local staging folders; the batch's lease, claims, note and record are
//! in the bucket, and its files land there by claimed multipart uploads
//! (`bucket::land`) once it succeeds. A run that loses its lease makes nothing
//! visible from then on, and its record never says success.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::SystemTime;

mod staging;

pub use staging::{Staging, base_in as staging_base_in};

use super::child::{self, Ran};
use super::env_name;
use crate::bucket::{
    Acquire, BucketError, ErrorKind, Holder, LandError, Lease, Objects, Place, Refused, StoreError, StoreUrl, acquire,
    land, plan, probe,
};
use crate::layout::TaskPath;
use crate::lineage::{RecordSpec, RunRecord};
use crate::protocol::Recovery;
use crate::sys::Sys;
use crate::vars::Variables;

/// What to run.
#[derive(Clone, Debug)]
pub struct BucketRun {
    /// The use case in the store (`-d s3://bucket/prefix`).
    pub uc: StoreUrl,
    /// The task.
    pub task: TaskPath,
    /// The batch's variables.
    pub variables: Variables,
    /// Its batch key.
    pub key: String,
    /// Its append outputs, by name, each in the use case's bucket.
    pub appends: Vec<(String, StoreUrl)>,
    /// A finished batch is skipped (exit 0), not refused.
    pub resume: bool,
    /// A finished batch is replaced: its files are removed once this run
    /// has committed.
    pub rerun: bool,
    /// Whether a run record is written (under `<prefix>/.ubunye/lineage`).
    pub lineage: bool,
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// This run's id (a fresh uuid4).
    pub run_id: String,
    /// The program to start as the command's group keeper, if any.
    pub keeper: Option<PathBuf>,
    /// Its maximum runtime (`--timeout`): past it the command is stopped and
    /// nothing lands.
    pub timeout: Option<std::time::Duration>,
}

/// How a run against a store ended.
#[derive(Debug)]
pub enum BucketEnd {
    /// The command succeeded and its files landed; the batch is finished.
    Done {
        /// Files landed per output.
        landed: Vec<(String, usize)>,
        /// A dead run taken over first.
        recovered: Option<Recovery>,
        /// Why the lease could not be handed back after the commit (the
        /// batch is finished either way; the next run finds its note once
        /// the lease is dead).
        unreleased: Option<String>,
        /// Why its run record does not say success (it could not be written).
        unrecorded: Option<String>,
    },
    /// `--resume` and a run finished the batch.
    Skipped {
        /// That run.
        run_id: String,
    },
    /// The batch may not be run now.
    Refused(Refused),
    /// A dead run was taken over, then the batch was refused: most often it
    /// had finished (its commit was completed, and the batch is finished by
    /// it: a skip with `resume`, a refusal without); or its note cannot be
    /// read.
    Recovered {
        /// What was done for it.
        recovered: Recovery,
        /// Why the batch is refused.
        refused: Refused,
        /// Whether the run was asked to skip a finished batch.
        resume: bool,
    },
    /// This run lost its lease: nothing more of it became visible.
    Lost {
        /// What was found instead.
        why: String,
    },
    /// The command failed (or its files could not land): nothing of it is
    /// visible.
    Failed {
        /// The exit code to give.
        code: i32,
        /// Why, in one line.
        note: String,
        /// A dead run taken over first.
        recovered: Option<Recovery>,
    },
    /// The command could not be started.
    NotStarted {
        /// 126 or 127.
        code: i32,
        /// Why.
        note: String,
    },
}

fn child_env(spec: &BucketRun, staging: &[(String, PathBuf)]) -> Vec<(String, OsString)> {
    let mut env = vec![
        ("UBUNYE_RUN_ID".to_string(), OsString::from(&spec.run_id)),
        ("UBUNYE_BATCH_KEY".to_string(), OsString::from(&spec.key)),
        ("UBUNYE_TASK".to_string(), OsString::from(spec.task.as_str())),
        ("UBUNYE_USECASE_DIR".to_string(), OsString::from(spec.uc.to_string())),
    ];
    env.extend(crate::exec::variables_env(&spec.variables));
    for (name, dir) in staging {
        env.push((env_name("UBUNYE_OUT_", name), dir.clone().into_os_string()));
    }
    env
}

/// The run record, put under its key at each change; a failure to write it
/// is not the run's failure (as on disk), only said.
struct Record<'a> {
    objects: &'a dyn Objects,
    key: String,
    rec: Option<RunRecord>,
}

impl Record<'_> {
    fn put(&mut self) {
        if let Some(r) = &self.rec {
            // A record that cannot be written is not the run's failure.
            let _ = self.objects.put(&self.key, r.text().into_bytes());
        }
    }
    /// The record's end, tried three times: whether it was written (true
    /// without a record).
    fn end(&mut self, status: &str, error: Option<String>) -> bool {
        let Some(r) = &mut self.rec else { return true };
        r.end_with(status, error, SystemTime::now());
        let text = r.text().into_bytes();
        for tries in 1..=3 {
            if self.objects.put(&self.key, text.clone()).is_ok() {
                return true;
            }
            if tries < 3 {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
        }
        false
    }
}

/// What a record that could not be written at the end leaves, said.
fn unrecorded(objects: &dyn Objects, key: &str) -> String {
    format!("its run record {} could not be written: it still says running", objects.url(key))
}

/// The heartbeat: a save every `every` until told to stop; it stops by
/// itself once the lease is lost.
fn heartbeat(lease: Arc<Lease>, every: std::time::Duration) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
            if let Err(BucketError::Lost { .. }) = lease.save(|_| {}) {
                return;
            }
        }
    });
    (tx, h)
}

/// Run `spec` against `objects` (the use case's bucket).
pub fn run(spec: &BucketRun, objects: Arc<dyn Objects>, sys: &Sys) -> Result<BucketEnd, BucketError> {
    // The bucket is there, the credentials are taken, and the store honours
    // conditional writes: or nothing is done.
    objects.now()?;
    let staged = Staging::make(&staging::base(), &spec.run_id).map_err(|e| StoreError {
        kind: ErrorKind::Local,
        url: staging::base().display().to_string(),
        what: format!("cannot make this run's staging folder: {e}"),
    })?;
    probe(&*objects, &spec.uc, &spec.run_id, staged.root())?;
    let place = Place { uc: spec.uc.clone(), task: spec.task.clone(), key: spec.key.clone() };
    let holder =
        Holder { run_id: spec.run_id.clone(), host: sys.host.clone(), pid: sys.pid, rerun: spec.rerun, actor: None };
    let (lease, recovered) = match acquire(objects.clone(), &place, &holder, sys.clock.clone(), &sys.timing)? {
        Acquire::Held(l, r) => {
            // A --rerun replaces only files under this run's own outputs.
            if let Some(why) = l.replacing().and_then(|rep| rep.check_against(&spec.appends, &spec.uc).err()) {
                l.release()?;
                let url = objects.url(&place.note_key());
                return Ok(BucketEnd::Refused(Refused::Unreadable {
                    url,
                    why: format!("a --rerun cannot replace it: it {why}"),
                }));
            }
            (l, r)
        }
        Acquire::Refused(Refused::Finished { run_id }) if spec.resume => return Ok(BucketEnd::Skipped { run_id }),
        Acquire::Refused(r) => return Ok(BucketEnd::Refused(r)),
        Acquire::Recovered { recovered, refused } => {
            return Ok(BucketEnd::Recovered { recovered, refused, resume: spec.resume });
        }
    };
    let mut record = Record {
        objects: &*objects,
        key: place.record_key(&spec.run_id),
        rec: spec.lineage.then(|| {
            let rs = RecordSpec {
                run_id: spec.run_id.clone(),
                task: spec.task.clone(),
                variables: spec.variables.clone(),
                backend: "exec".into(),
                command: Some(crate::exec::masked_command(&spec.variables, &spec.command)),
            };
            let mut r =
                RunRecord::draft(std::path::Path::new(".ubunye/lineage"), &rs, SystemTime::now(), sys.timing.busy_for);
            r.set_outputs(spec.appends.iter().map(|(n, u)| (n.clone(), "exec".into(), u.to_string())).collect());
            r
        }),
    };
    record.put();
    // Six saves in a lease's lifetime (every 20 s of the 120 s default), or
    // the disk's 30 s when that is more often.
    let every = sys.timing.heartbeat_every.min(sys.timing.store_ttl / 6);
    let (stop, beat) = heartbeat(lease.clone(), every);
    let finish = |stop: mpsc::Sender<()>, beat: std::thread::JoinHandle<()>| {
        drop(stop);
        let _ = beat.join();
    };
    let root = staged.root();
    let staging: Vec<(String, PathBuf)> = spec.appends.iter().map(|(n, _)| (n.clone(), root.join(n))).collect();
    for (_, d) in &staging {
        if let Err(e) = std::fs::create_dir_all(d) {
            finish(stop, beat);
            let note = format!("{}: cannot make the staging folder: {e}", d.display());
            record.end("error", Some(note.clone()));
            lease.release()?;
            return Ok(BucketEnd::Failed { code: 1, note, recovered });
        }
    }
    let cleanup = || {
        for (_, d) in &staging {
            let _ = std::fs::remove_dir_all(d);
        }
    };
    let opts = child::Options { keeper: spec.keeper.as_deref(), timing: &sys.timing, log: None, timeout: spec.timeout };
    let ran = child::run(&spec.command, &child_env(spec, &staging), opts);
    let end = match ran {
        Err(e) => {
            let note = format!("cannot run the command: {e}");
            finish(stop, beat);
            record.end("error", Some(note.clone()));
            cleanup();
            lease.release()?;
            return Ok(BucketEnd::Failed { code: 1, note, recovered });
        }
        Ok(Ran::NotStarted(why, e)) => {
            let note = format!("cannot start '{}': {e}", spec.command[0].to_string_lossy());
            finish(stop, beat);
            record.end("error", Some(note.clone()));
            cleanup();
            lease.release()?;
            return Ok(BucketEnd::NotStarted { code: why.exit_code(), note });
        }
        Ok(Ran::Ended(end)) => end,
    };
    if !end.success() {
        let note = crate::exec::command_failed(&spec.command[0], spec.timeout, &end);
        finish(stop, beat);
        record.end("error", Some(note.clone()));
        cleanup();
        lease.release()?;
        // 124 past --timeout, as `timeout(1)` and a disk's run.
        let code = if end.timed_out { 124 } else { end.code.max(1) };
        return Ok(BucketEnd::Failed { code, note, recovered });
    }
    let mut files = Vec::new();
    for ((name, dir), (_, out)) in staging.iter().zip(&spec.appends) {
        match plan(name, dir, out, &spec.run_id) {
            Ok(p) => files.extend(p),
            Err(note) => {
                finish(stop, beat);
                record.end("error", Some(note.clone()));
                cleanup();
                lease.release()?;
                return Ok(BucketEnd::Failed { code: 1, note, recovered });
            }
        }
    }
    let landed = land(&*objects, &lease, &spec.appends, &files, &sys.hook, &sys.timing);
    finish(stop, beat);
    cleanup();
    match landed {
        Ok(landed) => {
            let unrecorded = (!record.end("success", None)).then(|| unrecorded(&*objects, &record.key));
            // Finished: a lease that cannot be handed back now is said, not
            // a failure (the files have landed). One whose --rerun left
            // replaced files is kept on purpose: the next run removes them.
            let unreleased = if landed.replaced_left > 0 {
                Some(format!(
                    "{} replaced file(s) could not be removed; the lease is kept so that the next run of the batch removes them",
                    landed.replaced_left
                ))
            } else {
                match lease.release() {
                    Ok(true) => None,
                    Ok(false) => Some("it had changed since this run's last save".to_string()),
                    Err(e) => Some(e.to_string()),
                }
            };
            Ok(BucketEnd::Done { landed: landed.files, recovered, unreleased, unrecorded })
        }
        Err(LandError::Lease(BucketError::Lost { why, .. })) => {
            record.end(
                "error",
                Some(format!("LeaseLost: this run lost its lease ({why}); nothing more of it was made visible.")),
            );
            Ok(BucketEnd::Lost { why })
        }
        Err(LandError::Lease(e)) => {
            record.end("error", Some(format!("{e}")));
            Err(e)
        }
        Err(LandError::Committed(e)) => {
            // Its files are the batch: the record says so, and the lease,
            // marked done, is kept for the next run to write the note.
            let unrecorded = (!record.end("success", None)).then(|| unrecorded(&*objects, &record.key));
            let unreleased = Some(format!(
                "its finished note could not be written ({e}): the lease is kept, marked done, and the next run of the batch (or `ubunye leases takeover`) writes the note"
            ));
            let landed = spec.appends.iter().map(|(o, _)| (o.clone(), files.iter().filter(|f| &f.output == o).count()));
            Ok(BucketEnd::Done { landed: landed.collect(), recovered, unreleased, unrecorded })
        }
        Err(LandError::Failed(e, undone)) => {
            let note = format!(
                "StoreFailed: {e}; once the store answered, what this run had made visible was taken back ({} upload(s) aborted, {} object(s) deleted): nothing of it is visible.",
                undone.aborted,
                undone.removed.len()
            );
            if record.end("error", Some(note.clone())) {
                let _ = lease.release();
                return Ok(BucketEnd::Failed { code: 1, note, recovered });
            }
            // The record says running: the lease is kept, so that the next
            // run, once it is dead, takes it over and marks the record.
            let ttl = humantime::format_duration(sys.timing.store_ttl);
            let note = format!(
                "{note} But {}; the lease is kept, so that the next run of the batch marks it interrupted once the lease is {ttl} old.",
                unrecorded(&*objects, &record.key)
            );
            Ok(BucketEnd::Failed { code: 1, note, recovered })
        }
        Err(e @ LandError::Unreachable(_)) => {
            // The record cannot be written while the store does not answer
            // (tried once more); the taker marks it interrupted.
            let note = format!("StoreUnreachable: {e}");
            record.end("error", Some(note.clone()));
            Ok(BucketEnd::Failed { code: 1, note, recovered })
        }
        Err(e @ LandError::Refused { .. }) => {
            let note = e.to_string();
            if record.end("error", Some(note.clone())) {
                lease.release()?;
            }
            Ok(BucketEnd::Failed { code: 1, note, recovered })
        }
    }
}
