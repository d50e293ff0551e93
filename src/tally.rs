//! A census kept up to date ([`Tally`]) without reading the use case again:
//! what the fleet view shows between its full counts.
//!
//! Each refresh reads the use case's clock, lists its task folders (both the
//! lease and the run-record side, three levels: no file is opened) and
//! compares each folder's times and size with the last refresh's. A task
//! whose folder changed (a lease written: saves are a write and a rename; a
//! lease or a note made or removed; a record made), or whose held lease was
//! rewritten where it is, is read again, alone, as a full count reads it. The batches that hold a lease or an orphan, the
//! only ones whose verdict time alone can change (a holder gone, a heartbeat
//! too old, stalled), are judged again with the library's [`state::rejudge`]:
//! those judged alive at each refresh, the others (whose ages alone move on)
//! at every tenth, as the dashboard's tick does.
//! Everything else is counted as it was. A change that touches no folder (a
//! record rewritten in place with nothing else) is seen at the next full
//! count, which also counts doctor's findings again: every `full_every`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::census::{Census, TaskCount};
use crate::state::{self, Batch, ScanOptions};
use crate::sys::Sys;

/// A folder's times and size (what changes when an entry is made, removed
/// or renamed in it), or a file's (when it is written).
type Stamp = Option<(SystemTime, SystemTime, u64)>;

/// One task: its batches counted as they will stay, and those time can
/// change, kept whole; its folders' stamps; its clock.
#[derive(Debug, Default)]
struct Part {
    fixed: TaskCount,
    held: Vec<Batch>,
    stamps: (Stamp, Stamp),
    /// The time its held batches were last judged at, by its disk's clock.
    now: Option<SystemTime>,
    /// What reading it could not read.
    problems: Vec<state::UnreadableFile>,
    /// The run records that can still change where they are (the peer
    /// rewrites a record in place, not atomically): of batches not finished
    /// and holding no lease (a run with leases off), and records read
    /// damaged (read mid-write); with their stamps when read.
    records: Vec<(PathBuf, Stamp)>,
}

/// A use case's census, brought up to date by [`Tally::refresh`].
#[derive(Debug)]
pub struct Tally {
    uc: PathBuf,
    label: String,
    opts: ScanOptions,
    per_batch: bool,
    full_every: Duration,
    last_full: Option<Instant>,
    /// Refreshes so far.
    looks: u64,
    parts: BTreeMap<String, Part>,
    findings: BTreeMap<&'static str, u64>,
    /// The census as of the last refresh.
    pub census: Census,
}

fn stamp(dir: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    let ctime =
        SystemTime::UNIX_EPOCH + Duration::new(m.ctime().max(0) as u64, m.ctime_nsec().clamp(0, 999_999_999) as u32);
    Some((m.modified().ok()?, ctime, m.size()))
}

/// Its lease's holder was judged alive.
fn alive(b: &Batch) -> bool {
    b.lease.as_ref().is_some_and(|l| !l.holder.judgement.as_ref().is_some_and(|j| j.dead))
}

/// Whether time alone can change the batch's verdict.
fn timed(b: &Batch) -> bool {
    b.lease.is_some() || !b.orphans.is_empty()
}

impl Tally {
    /// A tally of the use case at `uc`, labelled `label`, read whole again
    /// every `full_every`. Nothing is read until [`Tally::refresh`].
    pub fn new(uc: &Path, label: &str, opts: ScanOptions, per_batch: bool, full_every: Duration) -> Tally {
        Tally {
            uc: uc.to_path_buf(),
            label: label.to_string(),
            opts,
            per_batch,
            full_every,
            last_full: None,
            looks: 0,
            parts: BTreeMap::new(),
            findings: BTreeMap::new(),
            census: Census { use_case: label.to_string(), ..Census::default() },
        }
    }

    /// Read it whole at the next refresh (`r` in the fleet view).
    pub fn read_whole_next(&mut self) {
        self.last_full = None;
    }

    /// Bring the census up to date; whether anything it shows changed.
    pub fn refresh(&mut self, sys: &Sys) -> bool {
        let started = Instant::now();
        let before = self.shown();
        let head = match state::head(&self.uc, &self.opts, sys) {
            Ok(h) => h,
            Err(e) => {
                self.census = Census {
                    use_case: self.label.clone(),
                    error: Some(e.to_string()),
                    scan_errors: 1,
                    duration: started.elapsed(),
                    ..Census::default()
                };
                self.parts.clear();
                self.last_full = None;
                return before != self.shown();
            }
        };
        let full = self.last_full.is_none_or(|t| t.elapsed() >= self.full_every);
        self.looks = self.looks.wrapping_add(1);
        let mut problems = Vec::new();
        let mut seen: BTreeMap<String, (Stamp, Stamp)> = BTreeMap::new();
        let leases_root = crate::layout::leases_root(&head.root);
        for (task, dir) in state::task_dirs(&leases_root, &mut problems) {
            seen.entry(task).or_default().0 = stamp(&dir);
        }
        for (task, dir) in state::task_dirs(&head.lineage_dir, &mut problems) {
            seen.entry(task).or_default().1 = stamp(&dir);
        }
        seen.retain(|t, _| self.opts.task_glob.as_deref().is_none_or(|g| state::task_matches(g, t)));
        self.parts.retain(|t, _| seen.contains_key(t));
        let mut examiner = if full { crate::doctor::Examiner::new(&head.root, head.now) } else { None };
        let mut failed = None;
        for (task, stamps) in seen {
            let leases = leases_root.join(&task);
            let now = state::task_clock(&self.opts, sys, leases.is_dir().then_some(leases.as_path()), head.now);
            let part = self.parts.entry(task.clone()).or_default();
            // As the dashboard's tick: a holder judged alive each look (it
            // can die, or stall, at any moment), the rest every tenth
            // (their ages move on; their verdict waits for a file to change,
            // which a look sees). Judging stats the lease: one rewritten
            // where it is (not the engine's way: a save is a write and a
            // rename, which changes its folder) has new times, and its task
            // is read again; so is one whose records can change in place.
            let all = self.looks.is_multiple_of(10);
            let mut reread = full || part.stamps != stamps || part.records.iter().any(|(p, was)| stamp(p) != *was);
            if !reread {
                for b in part.held.iter_mut().filter(|b| all || alive(b)) {
                    let was = b.lease.as_ref().map(|l| l.times.map(|t| (t.mtime, t.ctime)));
                    state::rejudge(b, sys, now);
                    reread |= b.lease.as_ref().map(|l| l.times.map(|t| (t.mtime, t.ctime))) != was;
                }
                part.now = Some(now.time);
            }
            if reread {
                // Read again, alone, as a full count reads it.
                let (mut fresh, mut all) = (Part { stamps, now: Some(now.time), ..Part::default() }, Vec::new());
                let read = state::scan_named_tasks(&self.uc, &self.opts, sys, std::slice::from_ref(&task), |_, b| {
                    all = b;
                });
                match read {
                    Ok(h) => fresh.problems = h.problems,
                    // The task as it was is kept, and read again at the next
                    // look, whole: its stamps kept with no batches would leave
                    // it empty until the next full count.
                    Err(e) => {
                        failed = Some(e.to_string());
                        self.last_full = None;
                        continue;
                    }
                }
                for b in all {
                    if let Some(e) = examiner.as_mut() {
                        e.batch(&b);
                    }
                    for r in b
                        .records
                        .iter()
                        .filter(|r| r.damaged.is_some() || (b.lease.is_none() && b.state != state::State::Finished))
                    {
                        fresh.records.push((r.path.clone(), stamp(&r.path)));
                    }
                    if timed(&b) {
                        fresh.held.push(b);
                    } else {
                        fresh.fixed.states[b.state.rank()] += 1;
                        for f in &b.flags {
                            *fresh.fixed.flags.entry(*f).or_default() += 1;
                        }
                    }
                }
                *part = fresh;
            }
        }
        if let (Some(e), None) = (examiner, &failed) {
            self.findings.clear();
            let all: Vec<state::UnreadableFile> =
                problems.iter().cloned().chain(self.parts.values().flat_map(|p| p.problems.iter().cloned())).collect();
            for f in e.finish(&all) {
                *self.findings.entry(f.kind).or_default() += 1;
            }
            self.last_full = Some(Instant::now());
        }
        self.census = self.put_together(head.now.time, problems.len() as u64, failed);
        self.census.duration = started.elapsed();
        before != self.shown()
    }

    /// The census of the parts as they are now.
    fn put_together(&self, now: SystemTime, listing: u64, failed: Option<String>) -> Census {
        let mut c = Census { use_case: self.label.clone(), error: failed, ..Census::default() };
        c.scan_errors = listing + u64::from(c.error.is_some());
        for (task, part) in &self.parts {
            // A task with no batch has no counts, as in a full count.
            if part.fixed.states.iter().any(|&n| n > 0) {
                c.tasks.insert(task.clone(), part.fixed.clone());
            }
            c.scan_errors += part.problems.len() as u64;
            for b in &part.held {
                c.add(b, part.now.unwrap_or(now), self.per_batch);
            }
        }
        for t in c.tasks.values() {
            c.scan_errors += t.states[state::State::Unreadable.rank()];
        }
        c.findings = self.findings.clone();
        c
    }

    /// What a view shows of the census (all but its time).
    fn shown(&self) -> String {
        let mut c = self.census.clone();
        c.duration = Duration::ZERO;
        format!("{c:?}")
    }
}
