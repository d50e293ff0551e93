//! `ubunye doctor`: what the engine leaves for people. It reports; it never
//! removes anything (the repairs do that, through the engine).

pub mod store;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use std::collections::BTreeMap;

use crate::beneath::{Beneath, is_staging_name, normpath};
use crate::state::staging::measure;
use crate::state::{Batch, Flag, Scan, ScanError, ScanOptions, State, UnreadableFile};
use crate::sys::{Now, Sys};

/// One thing to look at.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// needs-repair, stray-staging, moved-aside, temp-file, old-tombstone,
    /// done-without-lease, running-record, path-outside, unreadable,
    /// misplaced, unknown-file, stalled, clock-behind, not-json.
    pub kind: &'static str,
    /// The file or folder it is about (for `needs-repair`, the batch's lease).
    #[serde(serialize_with = "crate::state::lossy_path")]
    pub path: PathBuf,
    /// What is wrong and what to do, in one line.
    pub detail: String,
    /// The task of the batch it is about; None when it is about no one batch.
    pub task: Option<String>,
    /// The key of the batch it is about; None when it is about no one batch.
    pub key: Option<String>,
}

/// The root folder of an output that holds `file`: its folder, above any
/// `name=value` partition folders.
fn output_root(file: &Path) -> Option<PathBuf> {
    let mut d = file.parent()?.to_path_buf();
    while d.file_name().is_some_and(|n| n.to_string_lossy().contains('=')) {
        d.pop();
    }
    Some(d)
}

/// A path a lease or note names: its output folder is one to look in for stray
/// staging; a path that resolves outside the use case is a finding.
fn note_path(
    beneath: &Beneath,
    path: &str,
    file: &Path,
    (task, key): (Option<String>, Option<String>),
    outputs: &mut BTreeSet<PathBuf>,
    out: &mut Vec<Finding>,
) {
    match beneath.resolve(path) {
        Ok(i) => outputs.extend(output_root(&i.full)),
        Err(r) => {
            out.push(Finding { kind: "path-outside", path: file.to_path_buf(), detail: r.to_string(), task, key })
        }
    }
}

/// What [`look`] found.
#[derive(Clone, Debug)]
pub struct Look {
    /// The use-case folder, as opened.
    pub root: PathBuf,
    /// What was found: the folders first, then each batch's, then stray staging
    /// folders.
    pub findings: Vec<Finding>,
    /// Batches looked at.
    pub looked_at: usize,
}

/// Read a use-case folder a task at a time and look at each batch as it
/// comes: a use case of 100,000 batches is never held whole
/// (docs/performance.md). What `ubunye doctor` and the dashboard's doctor
/// view show.
pub fn look(uc: &Path, opts: &ScanOptions, sys: &Sys) -> Result<Look, ScanError> {
    let head = crate::state::head(uc, opts, sys)?;
    let Some(mut examiner) = Examiner::new(&head.root, head.now) else {
        return Err(ScanError::NoFolder(head.root, "it cannot be opened".into()));
    };
    let mut looked_at = 0usize;
    let done = crate::state::scan_tasks(uc, opts, sys, |_, batches| {
        looked_at += batches.len();
        for b in &batches {
            examiner.batch(b);
        }
    })?;
    Ok(Look { root: head.root, findings: examiner.finish(&done.problems), looked_at })
}

/// Look at a scanned use case.
pub fn examine(scan: &Scan) -> Vec<Finding> {
    let Some(mut e) = Examiner::new(&scan.root, scan.now) else { return Vec::new() };
    for b in &scan.batches {
        e.batch(b);
    }
    e.finish(&scan.problems)
}

/// A file a scan could not read, or found where no engine looks, as a
/// finding (`unreadable`, `misplaced`).
pub fn problem(p: &UnreadableFile) -> Finding {
    Finding {
        kind: if p.misplaced { "misplaced" } else { "unreadable" },
        path: p.path.clone(),
        detail: p.why.clone(),
        task: None,
        key: None,
    }
}

/// Doctor's look, a batch at a time: what it needs across batches (the output
/// folders in which to look for stray staging, the staging folders leases
/// name) is kept; each batch can be dropped once looked at, so a use case of
/// 100,000 batches is examined while holding one task's batches at a time
/// (with [`crate::state::scan_tasks`]).
pub struct Examiner {
    root: PathBuf,
    beneath: Beneath,
    now: Now,
    outputs: BTreeSet<PathBuf>,
    recorded_staging: BTreeSet<PathBuf>,
    /// Where each task's outputs are, by name, as notes, claims and records say.
    folders: BTreeMap<(String, String), PathBuf>,
    /// Outputs of unfinished runs that claimed nothing and name no staging
    /// folder: (task, output name) -> the batches. A stray staging folder in
    /// or beside such an output may be theirs.
    unclaimed: BTreeMap<(String, String), Vec<(String, bool)>>,
    problems: Vec<Finding>,
    out: Vec<Finding>,
}

impl Examiner {
    /// For the use case at `root` (as a scan found it), at the scan's time.
    /// None when its folder cannot be opened.
    pub fn new(root: &Path, now: Now) -> Option<Examiner> {
        Some(Examiner {
            root: root.to_path_buf(),
            beneath: Beneath::new(root).ok()?,
            now,
            outputs: BTreeSet::new(),
            recorded_staging: BTreeSet::new(),
            folders: BTreeMap::new(),
            unclaimed: BTreeMap::new(),
            problems: Vec::new(),
            out: Vec::new(),
        })
    }

    /// Look at one batch.
    pub fn batch(&mut self, b: &Batch) {
        let id = || (Some(b.task.clone()), Some(b.key.clone()));
        if matches!(b.state, State::Dead | State::Orphan | State::Pending | State::HandedBack | State::Kept)
            || (b.state == State::Damaged
                && b.lease.as_ref().and_then(|l| l.holder.judgement.as_ref()).is_some_and(|j| j.dead))
        {
            let (task, key) = id();
            let path = b.lease.as_ref().map(|l| l.path.clone()).or_else(|| b.orphans.first().map(|o| o.path.clone()));
            // Runs as printed, from any folder.
            let short = crate::suggest::batch(&self.root, &b.key);
            let list = crate::suggest::dir(&self.root);
            // A folder where a claimed or replaced file should be, in the
            // lease or an orphan: a takeover (or finish) is refused over it.
            let leases = b.lease.iter().map(|l| &**l).chain(&b.orphans);
            let folder = leases
                .flat_map(|l| l.outputs.iter().flat_map(|o| &o.claims).chain(l.replaces.iter().flat_map(|(_, c)| c)))
                .find(|c| c.folder);
            let how = if let Some(c) = folder {
                // Its takeover is refused until a person moves it.
                format!(
                    "A folder stands where its claimed file {} should be, which no run or repair removes: move it out of the way by hand, then `ubunye leases {} {short}`",
                    self.root.join(&c.claim).display(),
                    if b.state == State::Pending { "finish" } else { "takeover" }
                )
            } else if b.flags.contains(&Flag::HolderAlive) {
                // No run and no takeover repairs it while its process lives.
                let pid = b.lease.as_ref().and_then(|l| l.holder.pid).unwrap_or(0);
                format!(
                    "Its process {pid} still runs, so nothing takes it over: end that process, then `ubunye leases takeover {short}`"
                )
            } else if b.state == State::Pending {
                format!("The next run of the batch finishes it, or `ubunye leases finish {short}` now")
            } else {
                format!("The next run of the batch repairs it, or `ubunye leases takeover {short}` now")
            };
            self.out.push(Finding {
                kind: "needs-repair",
                path: path.unwrap_or_default(),
                detail: format!(
                    "{}: {}. {how} (`ubunye leases explain {short}` shows the plan; `ubunye leases list {list}` lists every batch needing one)",
                    b.state.word(),
                    b.note,
                ),
                task,
                key,
            });
        }
        for u in &b.unreadable {
            let (task, key) = id();
            self.out.push(Finding {
                kind: "unreadable",
                path: u.path.clone(),
                detail: format!("its {} cannot be read: {}", u.kind.word(), u.why),
                task,
                key,
            });
        }
        for r in b.records.iter().filter(|r| r.damaged.is_some()) {
            let (task, key) = id();
            self.out.push(Finding {
                kind: "unreadable",
                path: r.path.clone(),
                detail: format!(
                    "this run record cannot be parsed: {}. Its status is not known; the engine (as the Python engine) goes ahead past it and leaves it as it is. Look at it: if its run is surely over, remove or repair it by hand",
                    r.damaged.clone().unwrap_or_default()
                ),
                task,
                key,
            });
        }
        for u in &b.unknown_files {
            let (task, key) = id();
            self.out.push(Finding {
                kind: "unknown-file",
                path: u.path.clone(),
                detail: "named after the batch's key, but not a file this engine knows (a newer engine's? ubunye-engine 0.9.1 leaves <key>.tried after a failed run that committed a keyed Delta write); nothing here reads or removes it".into(),
                task,
                key,
            });
        }
        for t in &b.temp_files {
            let (task, key) = id();
            self.out.push(Finding { kind: "temp-file", path: t.clone(), detail: "left by a save killed between its write and its rename; safe to remove once no run of the batch is live".into(), task, key });
        }
        for t in &b.tombstones {
            if t.time
                .and_then(|m| self.now.time.duration_since(m).ok())
                .is_some_and(|age| age > Duration::from_secs(7 * 86_400))
            {
                let (task, key) = id();
                self.out.push(Finding {
                    kind: "old-tombstone",
                    path: t.path.clone(),
                    detail: "a takeover mark older than 7 days: the next run of the batch removes it".into(),
                    task,
                    key,
                });
            }
        }
        if b.flags.contains(&Flag::LeftoverDone) {
            for d in &b.done_marks {
                let (task, key) = id();
                self.out.push(Finding {
                    kind: "done-without-lease",
                    path: d.path.clone(),
                    detail: format!(
                        "run {} was killed between removing its lease and this mark; harmless, and nothing removes it",
                        crate::documents::short(&d.run_id)
                    ),
                    task,
                    key,
                });
            }
        }
        if b.state == State::Interrupted && b.records.first().is_some_and(|r| r.status.as_deref() == Some("running")) {
            let r = &b.records[0];
            let (task, key) = id();
            self.out.push(Finding { kind: "running-record", path: r.path.clone(), detail: "the record says running, but no lease holds the batch and so no process runs it (a run without a lease, or one killed before taking it)".into(), task, key });
        }
        if let Some(l) = &b.lease {
            let (task, key) = id();
            if b.flags.contains(&Flag::Stalled) && b.state == State::Live {
                self.out.push(Finding {
                    kind: "stalled",
                    path: l.path.clone(),
                    detail: b.note.clone(),
                    task: task.clone(),
                    key: key.clone(),
                });
            }
            if l.doc.0.is_empty() {
                self.out.push(Finding {
                    kind: "not-json",
                    path: l.path.clone(),
                    detail: "the lease is empty or not JSON (a crash while it was created, or a hand edit): it holds the batch until it is 15 minutes old, then the next run takes it over; look at it, do not delete it while a run may be writing it".into(),
                    task: task.clone(),
                    key: key.clone(),
                });
            }
            if b.flags.contains(&Flag::ClockBehind) {
                self.out.push(Finding { kind: "clock-behind", path: l.path.clone(), detail: "the lease's times are ahead of the disk's clock: the clock was set back; it is not judged dead until the clock catches up".into(), task, key });
            }
        }
        for o in b.orphans.iter().filter(|o| o.doc.0.is_empty()) {
            let (task, key) = id();
            self.out.push(Finding {
                kind: "not-json",
                path: o.path.clone(),
                detail: "a dead run's lease left by a killed takeover, empty or not JSON: it names no run and no claims; the next run of the batch adopts it (removes it) as the Python engine does".into(),
                task,
                key,
            });
        }
        for l in b.lease.as_deref().into_iter().chain(&b.orphans) {
            for o in &l.outputs {
                if let Some(c) = o.claims.first() {
                    self.note_folder(&b.task, &o.name, &c.claim);
                }
                if o.exact && o.claims.is_empty() && o.staging.is_none() {
                    // A live run's write in progress looks the same: it is told
                    // apart.
                    let live = b.state == State::Live;
                    self.unclaimed.entry((b.task.clone(), o.name.clone())).or_default().push((b.key.clone(), live));
                }
                if let Some(st) = &o.staging
                    && let Ok(i) = self.beneath.resolve(st)
                {
                    // An overwrite's old copy, where no exchange exists, is
                    // the run's too (`<staging>.old`).
                    let mut old = i.full.clone().into_os_string();
                    old.push(".old");
                    self.recorded_staging.insert(PathBuf::from(old));
                    self.recorded_staging.insert(i.full.clone());
                    let last = i.parts.last().cloned().unwrap_or_default();
                    if let Some(parent) = i.full.parent() {
                        if is_staging_name(&last) && last.starts_with('_') {
                            self.outputs.insert(parent.to_path_buf());
                        } else {
                            // `.<output>.ubunye-<hex>` names the output beside it.
                            let output = last
                                .strip_prefix('.')
                                .and_then(|r| r.rsplit_once(".ubunye-"))
                                .map_or(o.name.as_str(), |(out, _)| out);
                            self.outputs.insert(parent.join(output));
                        }
                    }
                }
            }
            for p in l.doc.paths().unwrap_or_default() {
                note_path(&self.beneath, &p, &l.path, id(), &mut self.outputs, &mut self.out);
            }
        }
        if let Some(f) = &b.finished {
            for (name, claims, _) in &f.outputs {
                for c in claims {
                    note_path(&self.beneath, c, &f.path, id(), &mut self.outputs, &mut self.out);
                }
                if let Some(c) = claims.first() {
                    self.note_folder(&b.task, name, c);
                }
            }
        }
        for r in &b.records {
            for (name, loc) in &r.locations {
                // A missing output too: an old copy of it moved aside may be
                // beside it.
                let p = normpath(Path::new(loc));
                if p.starts_with(&self.root) && (p.is_dir() || !p.exists()) {
                    self.outputs.insert(p.clone());
                    self.folders.entry((b.task.clone(), name.clone())).or_insert(p);
                }
            }
        }
    }

    /// Note where an output of a task is, from a file claimed in it.
    fn note_folder(&mut self, task: &str, output: &str, claim: &str) {
        if let Ok(i) = self.beneath.resolve(claim)
            && let Some(folder) = output_root(&i.full)
        {
            self.folders.entry((task.to_string(), output.to_string())).or_insert(folder);
        }
    }

    /// The batches whose runs may have written a staging folder in or beside
    /// `output`: those whose lease names that output without a claim or a
    /// staging folder, (key, live), with their task.
    fn writers_of(&self, output: &Path) -> Vec<(String, String, bool)> {
        self.unclaimed
            .iter()
            .filter(|((task, name), _)| self.folders.get(&(task.clone(), name.clone())).is_some_and(|f| f == output))
            .flat_map(|((task, _), keys)| keys.iter().map(move |(k, live)| (task.clone(), k.clone(), *live)))
            .collect()
    }

    /// The findings: the folders that could not be read first, then each
    /// batch's in the order they were looked at, then stray staging folders.
    pub fn finish(mut self, problems: &[UnreadableFile]) -> Vec<Finding> {
        self.problems.extend(problems.iter().map(problem));
        // Staging folders in (`_ubunye-*`) or beside (`.<name>.ubunye-*`) the
        // outputs found above, that no lease or orphan names.
        let mut seen = BTreeSet::new();
        for o in &self.outputs {
            let mut candidates = Vec::new();
            if let Ok(rd) = fs::read_dir(o) {
                candidates.extend(
                    rd.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("_ubunye-"))),
                );
            }
            if let (Some(parent), Some(name)) = (o.parent(), o.file_name()) {
                let prefix = format!(".{}.ubunye-", name.to_string_lossy());
                if let Ok(rd) = fs::read_dir(parent) {
                    candidates.extend(
                        rd.flatten()
                            .map(|e| e.path())
                            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix))),
                    );
                }
            }
            for c in candidates {
                let name = c.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if !is_staging_name(&name) || self.recorded_staging.contains(&c) || !seen.insert(c.clone()) {
                    continue;
                }
                if name.ends_with(".old") {
                    // Never "remove by hand": it may be the only copy of the
                    // output's committed data.
                    let detail = if o.exists() {
                        format!(
                            "an old copy of {} moved aside by an overwrite (on a file system without RENAME_EXCHANGE) that no lease names; it may hold data that was committed: compare it with the output before removing it",
                            o.display()
                        )
                    } else {
                        format!(
                            "{} is missing, and this is an old copy of it, moved aside by an overwrite (on a file system without RENAME_EXCHANGE) that did not finish and that no lease names: it may hold the output's committed data. Put it back: mv '{}' '{}'",
                            o.display(),
                            c.display(),
                            o.display()
                        )
                    };
                    self.out.push(Finding { kind: "moved-aside", path: c, detail, task: None, key: None });
                } else {
                    let writers = self.writers_of(o);
                    let live: Vec<&(String, String, bool)> = writers.iter().filter(|w| w.2).collect();
                    let owner = match (live.as_slice(), writers.as_slice()) {
                        ([one], _) => Some((one.0.clone(), one.1.clone(), true)),
                        ([], [one]) => Some(one.clone()),
                        _ => None,
                    };
                    let detail = match measure(&c) {
                        Some(z) if z.files == 0 && z.complete => {
                            "an empty staging folder no lease names: nothing in it to check; it can be removed by hand once no run of the task is live".to_string()
                        }
                        size => {
                            let held = size.map(|z| z.text()).unwrap_or_else(|| "not a folder".into());
                            match (&owner, live.len()) {
                                (Some((_, key, true)), _) => format!(
                                    "a staging folder no lease names ({held}), beside an output that the live run of batch {} is writing: it may be that run's write in progress. Leave it while that run lives",
                                    &key[..8.min(key.len())]
                                ),
                                (_, n) if n > 1 => format!(
                                    "a staging folder no lease names ({held}), beside an output that {n} live runs are writing: it may be one's write in progress. Leave it while they live"
                                ),
                                (Some((_, key, false)), _) => format!(
                                    "a staging folder no lease names ({held}): probably the unfinished write of batch {}, whose dead run's lease names this output and claimed nothing (it never reached the output); readers skip it; check it, then remove it by hand once no run of the task is live",
                                    &key[..8.min(key.len())]
                                ),
                                _ => format!(
                                    "a staging folder no lease names ({held}): its run was interrupted in a way no lease could record; readers skip it; check it, then remove it by hand once no run of the task is live"
                                ),
                            }
                        }
                    };
                    let (task, key) = owner.map_or((None, None), |(t, k, _)| (Some(t), Some(k)));
                    self.out.push(Finding { kind: "stray-staging", path: c, detail, task, key });
                }
            }
        }
        let mut all = self.problems;
        all.append(&mut self.out);
        all
    }
}
