//! What `ubunye metrics` and the fleet dashboard count in one use case,
//! read a task at a time (no use case is held whole): batches by task and
//! state, flags, the held leases' heartbeat ages, the oldest lease of each
//! state that waits for someone, doctor's findings by kind, and the scan's
//! own time and errors. Every verdict is the library's; this only counts
//! them.

pub mod store;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::state::{self, Batch, Flag, ScanOptions, State};
use crate::sys::Sys;

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
    /// The task.
    pub task: String,
    /// The batch key.
    pub key: String,
    /// The holder's run id, as its lease says.
    pub run_id: String,
    /// The lease file's age by the disk's clock.
    pub heartbeat_age: Duration,
    /// Its holder is alive but its heartbeat stopped.
    pub stalled: bool,
}

/// One use case's counts.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// Its label: the folder as named, made absolute (the same whether it
    /// can be read or not), [`label`] of it.
    pub use_case: String,
    /// Why it could not be read at all.
    pub error: Option<String>,
    /// Each task's counts, by task.
    pub tasks: BTreeMap<String, TaskCount>,
    /// The age of the oldest lease in each of [`WAITING`] (dead runs'
    /// leases renamed aside for `orphan`).
    pub oldest: BTreeMap<State, Duration>,
    /// Doctor's findings by kind.
    pub findings: BTreeMap<&'static str, u64>,
    /// What the scan could not read: folders that cannot be listed, files
    /// that cannot be read; and the use case itself.
    pub scan_errors: u64,
    /// How long the count took.
    pub duration: Duration,
    /// Each held lease, when asked for.
    pub held: Vec<Held>,
}

fn age_of(b: &Batch) -> Option<Duration> {
    b.lease.as_ref()?.holder.judgement.as_ref()?.age.as_ref().map(|a| a.age)
}

impl Census {
    pub(crate) fn add(&mut self, b: &Batch, now: std::time::SystemTime, per_batch: bool) {
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

/// A path as a label: each `%`, and each byte that is not UTF-8, written
/// `%XX` (`%25` for `%`), so that two folders whose names differ keep two
/// labels however they are spelled.
pub fn label(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = p.as_os_str().as_bytes();
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '%' { out.push_str("%25") } else { out.push(c) }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Count the use case at `uc`, labelled `label`.
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
    let now = head.now.time;
    let mut examiner = crate::doctor::Examiner::new(&head.root, head.now);
    let leases_root = crate::layout::leases_root(&head.root);
    let done = state::scan_tasks(uc, opts, sys, |task, batches| {
        // An orphan's age by its own disk's clock, as its batch was judged
        // (a task's folder may be on a file server whose clock is ahead of
        // this one's).
        let dir = leases_root.join(task);
        let now = match batches.iter().any(|b| !b.orphans.is_empty()) {
            true => state::task_clock(opts, sys, dir.is_dir().then_some(dir.as_path()), head.now).time,
            false => now,
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_label_keeps_utf8_and_tells_apart_what_is_not() {
        assert_eq!(label(Path::new("/srv/a b/é")), "/srv/a b/é");
        let ff = label(Path::new(OsStr::from_bytes(b"/srv/uc\xff")));
        let pct = label(Path::new("/srv/uc%FF"));
        let fe = label(Path::new(OsStr::from_bytes(b"/srv/uc\xfe%")));
        assert_eq!((ff.as_str(), pct.as_str(), fe.as_str()), ("/srv/uc%FF", "/srv/uc%25FF", "/srv/uc%FE%25"));
    }
}
