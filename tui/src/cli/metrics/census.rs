//! What `ubunye metrics` counts in one use case, read a task at a time (no
//! use case is held whole): batches by task and state, flags, the held
//! leases' heartbeat ages, the oldest lease of each state that waits for
//! someone, doctor's findings by kind, and the scan's own time and errors.
//! Every verdict is the library's; this only counts them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use ubunye::state::{self, Batch, Flag, ScanOptions, State};
use ubunye::sys::Sys;

/// The states whose oldest lease is measured: each waits for a person or
/// the next run.
pub const WAITING: [State; 4] = [State::Dead, State::Kept, State::Pending, State::Orphan];

/// One task's counts.
#[derive(Clone, Debug, Default)]
pub struct TaskCount {
    /// Batches in each state, at [`State::rank`].
    pub states: [u64; State::ALL.len()],
    /// Batches with each flag.
    pub flags: BTreeMap<Flag, u64>,
    /// The oldest heartbeat among its held leases (the lease file's age by
    /// the disk's clock), when it has one.
    pub max_heartbeat_age: Option<Duration>,
}

/// One held lease, for `--per-batch`.
#[derive(Clone, Debug)]
pub struct Held {
    pub task: String,
    pub key: String,
    pub run_id: String,
    pub heartbeat_age: Duration,
    pub stalled: bool,
}

/// One use case's counts.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// Its label: the folder resolved (as found, when it cannot be).
    pub use_case: String,
    /// Why it could not be read at all.
    pub error: Option<String>,
    pub tasks: BTreeMap<String, TaskCount>,
    /// The age of the oldest lease in each of [`WAITING`] (dead runs'
    /// leases renamed aside for `orphan`).
    pub oldest: BTreeMap<State, Duration>,
    /// Doctor's findings by kind.
    pub findings: BTreeMap<&'static str, u64>,
    /// What the scan could not read: folders that cannot be listed, files
    /// that cannot be read; and the use case itself.
    pub scan_errors: u64,
    pub duration: Duration,
    /// Each held lease, when asked for.
    pub held: Vec<Held>,
}

fn age_of(b: &Batch) -> Option<Duration> {
    b.lease.as_ref()?.holder.judgement.as_ref()?.age.as_ref().map(|a| a.age)
}

impl Census {
    fn add(&mut self, b: &Batch, now: std::time::SystemTime, per_batch: bool) {
        let t = self.tasks.entry(b.task.clone()).or_default();
        t.states[b.state.rank()] += 1;
        for f in &b.flags {
            *t.flags.entry(*f).or_default() += 1;
        }
        if let Some(age) = age_of(b) {
            t.max_heartbeat_age = Some(t.max_heartbeat_age.map_or(age, |m| m.max(age)));
            if per_batch {
                self.held.push(Held {
                    task: b.task.clone(),
                    key: b.key.clone(),
                    run_id: b.lease.as_ref().map(|l| l.holder.run_id.clone()).unwrap_or_default(),
                    heartbeat_age: age,
                    stalled: b.flags.contains(&Flag::Stalled),
                });
            }
        }
        let age = match b.state {
            State::Orphan => {
                b.orphans.iter().filter_map(|o| o.times.as_ref().and_then(|t| now.duration_since(t.mtime).ok())).max()
            }
            s if WAITING.contains(&s) => age_of(b),
            _ => None,
        };
        if let Some(age) = age {
            let o = self.oldest.entry(b.state).or_default();
            *o = (*o).max(age);
        }
    }
}

/// Count the use case at `uc` (`label` names it when it cannot be read).
/// Never fails: a use case that cannot be read is a census with its error.
pub fn count(uc: &Path, label: &str, opts: &ScanOptions, sys: &Sys, per_batch: bool) -> Census {
    let started = Instant::now();
    let mut c = Census { use_case: label.to_string(), ..Census::default() };
    let head = match state::head(uc, opts, sys) {
        Ok(h) => h,
        Err(e) => {
            c.error = Some(e.to_string());
            c.scan_errors = 1;
            c.duration = started.elapsed();
            return c;
        }
    };
    c.use_case = head.root.to_string_lossy().into_owned();
    let now = head.now.time;
    let mut examiner = ubunye::doctor::Examiner::new(&head.root, head.now);
    let done = state::scan_tasks(uc, opts, sys, |_, batches| {
        for b in &batches {
            c.add(b, now, per_batch);
            if let Some(e) = examiner.as_mut() {
                e.batch(b);
            }
        }
    });
    match done {
        Ok(done) => {
            c.scan_errors += done.problems.len() as u64;
            for b in c.tasks.values() {
                c.scan_errors += b.states[State::Unreadable.rank()];
            }
            for f in examiner.map(|e| e.finish(&done.problems)).unwrap_or_default() {
                *c.findings.entry(f.kind).or_default() += 1;
            }
        }
        Err(e) => {
            c.error = Some(e.to_string());
            c.scan_errors += 1;
        }
    }
    c.duration = started.elapsed();
    c
}
