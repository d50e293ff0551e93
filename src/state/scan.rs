//! Scanning a use case: every batch, one task at a time, or one batch alone.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::read::*;
use super::*;
use crate::fsx;
use crate::layout::{self, Entry};
use crate::sys::{Now, Sys};

/// What a scan found besides its batches.
#[derive(Clone, Debug)]
pub struct ScanHead {
    /// The use-case folder, resolved (symlinks followed).
    pub root: PathBuf,
    /// The folder run records are read from (default `<uc>/.ubunye/lineage`).
    pub lineage_dir: PathBuf,
    /// The disk's time when the use case was opened, and which clock said it.
    pub now: Now,
    /// Folders that could not be listed.
    pub problems: Vec<UnreadableFile>,
}

impl ScanHead {
    /// A scan of no batches with what this one found (a report on a batch
    /// read apart, that needs the use case's root, clock and problems).
    pub fn into_scan(self) -> Scan {
        Scan {
            root: self.root,
            lineage_dir: self.lineage_dir,
            now: self.now,
            batches: Vec::new(),
            problems: self.problems,
        }
    }
}

/// A use-case folder, checked and ready to read.
pub(super) struct Opened {
    pub(super) root: PathBuf,
    pub(super) beneath: crate::beneath::Beneath,
    pub(super) leases_root: PathBuf,
    pub(super) lineage_dir: PathBuf,
    pub(super) now: Now,
}

fn use_case_root(uc: &Path) -> Result<PathBuf, ScanError> {
    let root = fs::canonicalize(uc).map_err(|e| ScanError::NoFolder(uc.to_path_buf(), e.to_string()))?;
    if !root.join(".ubunye").is_dir() {
        return Err(ScanError::NotAUseCase(root));
    }
    Ok(root)
}

pub(super) fn open(uc: &Path, opts: &ScanOptions, sys: &Sys) -> Result<Opened, ScanError> {
    let root = use_case_root(uc)?;
    let beneath = crate::beneath::Beneath::new(&root).map_err(|e| ScanError::NoFolder(root.clone(), e.to_string()))?;
    let leases_root = layout::leases_root(&root);
    // The peer's --lineage-dir is relative to the use-case folder as given.
    let lineage_dir = match &opts.lineage_dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => uc.join(d),
        None => layout::lineage_root(&root),
    };
    let now = read_clock(opts, sys, if leases_root.is_dir() { &leases_root } else { &root });
    Ok(Opened { root, beneath, leases_root, lineage_dir, now })
}

/// The disk's time by the folder `dir` is on. Looking never writes: without
/// [`ClockRead::Probe`] no probe file is made (docs/clock.md).
fn read_clock(opts: &ScanOptions, sys: &Sys, dir: &Path) -> Now {
    match opts.clock {
        ClockRead::Looking => sys.clock.disk_now_looking(dir),
        ClockRead::Probe => sys.clock.disk_now(dir),
    }
}

/// The time by a task's lease folder, which may be on another disk than the
/// use case's (a symlink onto a file server).
pub fn task_clock(opts: &ScanOptions, sys: &Sys, leases: Option<&Path>, default: Now) -> Now {
    match leases {
        Some(dir) => read_clock(opts, sys, dir),
        None => default,
    }
}

/// Open a use-case folder as a scan would (its root, lineage folder and the
/// disk's time now) without reading any batch: what a reader of
/// [`scan_tasks`] needs before the first task comes.
pub fn head(uc: &Path, opts: &ScanOptions, sys: &Sys) -> Result<ScanHead, ScanError> {
    let Opened { root, lineage_dir, now, .. } = open(uc, opts, sys)?;
    Ok(ScanHead { root, lineage_dir, now, problems: Vec::new() })
}

/// Scan a use-case folder: every batch, most severe first.
pub fn scan(uc: &Path, opts: &ScanOptions, sys: &Sys) -> Result<Scan, ScanError> {
    let mut batches = Vec::new();
    let head = scan_tasks(uc, opts, sys, |_, mut of_task| batches.append(&mut of_task))?;
    batches.sort_by(|a, b| a.state.cmp(&b.state).then_with(|| a.task.cmp(&b.task)).then_with(|| a.key.cmp(&b.key)));
    // Grown by doubling, task after task: up to a third of it unused, 360
    // bytes a slot (benches/scan_memory.rs).
    batches.shrink_to_fit();
    Ok(Scan { root: head.root, lineage_dir: head.lineage_dir, now: head.now, batches, problems: head.problems })
}

/// Scan a use-case folder one task at a time, handing each task's name and
/// batches (classified, in key order; none for a task whose folders hold no
/// batch) to `each` as soon as they are read. A batch only
/// ever involves files of its own task, so this gives the same batches as
/// [`scan`] while holding one task's files at a time: what a listing of
/// 100,000 batches needs to stay small.
pub fn scan_tasks(
    uc: &Path,
    opts: &ScanOptions,
    sys: &Sys,
    mut each: impl FnMut(&str, Vec<Batch>),
) -> Result<ScanHead, ScanError> {
    let Opened { root, beneath, leases_root, lineage_dir, now } = open(uc, opts, sys)?;
    let mut problems = Vec::new();
    let mut tasks: BTreeMap<String, (Option<PathBuf>, Option<PathBuf>)> = BTreeMap::new();
    for (task, dir) in task_dirs(&leases_root, &mut problems) {
        tasks.entry(task).or_default().0 = Some(dir);
    }
    for (task, dir) in task_dirs(&lineage_dir, &mut problems) {
        tasks.entry(task).or_default().1 = Some(dir);
    }
    let tasks: Vec<(String, Option<PathBuf>, Option<PathBuf>)> = tasks
        .into_iter()
        .filter(|(task, _)| opts.task_glob.as_deref().is_none_or(|g| task_matches(g, task)))
        .map(|(task, (leases, records))| (task, leases, records))
        .collect();
    // A pipeline: the next task's files are read (on every core) while this
    // one's are put together and handed over, so that no core waits.
    let beneath = &beneath;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(String, Now, TaskRead)>(1);
        s.spawn(move || {
            for (task, leases, records) in tasks {
                let now = task_clock(opts, sys, leases.as_deref(), now);
                let read = read_task(&task, leases.as_deref(), records.as_deref(), beneath, sys, now);
                if tx.send((task, now, read)).is_err() {
                    break;
                }
            }
        });
        for (task, now, mut read) in rx {
            problems.append(&mut read.problems);
            let mut batches = file_task(&task, read, now);
            batches.sort_by(|a, b| a.key.cmp(&b.key));
            each(&task, batches);
        }
    });
    Ok(ScanHead { root, lineage_dir, now, problems })
}

/// Read some tasks only, each as [`scan_tasks`] reads it (so with exactly
/// the batches a whole scan gives that task), handing each task's name and
/// batches to `each`: what a dashboard reads again when files of those tasks
/// change. A task whose folders are gone has no batches; a name that is not
/// `<usecase>/<package>/<task>` is passed over.
pub fn scan_named_tasks(
    uc: &Path,
    opts: &ScanOptions,
    sys: &Sys,
    tasks: &[String],
    mut each: impl FnMut(&str, Vec<Batch>),
) -> Result<ScanHead, ScanError> {
    let Opened { root, beneath, leases_root, lineage_dir, now } = open(uc, opts, sys)?;
    let mut problems = Vec::new();
    for task in tasks {
        let parts: Vec<&str> = task.split('/').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
            continue;
        }
        let (leases, records) = (leases_root.join(task), lineage_dir.join(task));
        let leases = leases.is_dir().then_some(leases.as_path());
        let records = records.is_dir().then_some(records.as_path());
        let now = task_clock(opts, sys, leases, now);
        let mut read = read_task(task, leases, records, &beneath, sys, now);
        problems.append(&mut read.problems);
        let mut batches = file_task(task, read, now);
        batches.sort_by(|a, b| a.key.cmp(&b.key));
        each(task, batches);
    }
    Ok(ScanHead { root, lineage_dir, now, problems })
}

/// One task's files, read (on every core) but not yet put together.
struct TaskRead {
    /// A batch for each key of the lease folder, its files read.
    batches: Vec<Batch>,
    /// Each run record, with the key its variables hash to.
    records: Vec<Result<(RecordInfo, Option<String>), UnreadableFile>>,
    problems: Vec<UnreadableFile>,
}

/// Read a task's files: the lease folder's, a batch at a time, on every core;
/// then the records, likewise. Each folder is opened once and its files read
/// by name.
fn read_task(
    task: &str,
    leases: Option<&Path>,
    records: Option<&Path>,
    beneath: &crate::beneath::Beneath,
    sys: &Sys,
    now: Now,
) -> TaskRead {
    let mut problems = Vec::new();
    let batches: Vec<Batch> = match leases {
        Some(dir) => {
            let folder: Vec<(String, Folder)> = read_folder(dir, &mut problems).into_iter().collect();
            let opened = crate::fsx::Dir::open(dir).ok();
            par_map(folder, opened.as_ref(), |(key, f), reader| {
                let mut b = Batch::new(task, &key);
                fill(&mut b, f, reader, beneath, sys, now);
                b
            })
        }
        None => Vec::new(),
    };
    let paths: Vec<PathBuf> = match records.map(fs::read_dir) {
        None => Vec::new(),
        Some(Ok(rd)) => rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect(),
        Some(Err(e)) => {
            problems.push(UnreadableFile::new(records.unwrap_or(Path::new("")), format!("cannot be listed: {e}")));
            Vec::new()
        }
    };
    let opened = records.and_then(|d| crate::fsx::Dir::open(d).ok());
    // Each record's key is hashed where it is read (on every core).
    let records = par_map(paths, opened.as_ref(), |p, reader| {
        reader.record(&p).map(|r| {
            let hashed = r.variables.as_ref().and_then(|v| record_key(task, v));
            (r, hashed)
        })
    });
    TaskRead { batches, records, problems }
}

/// Put a task's batches (each read from its lease folder) and run records
/// (each with the key its variables hash to) together, as a scan does: each
/// record filed to its batch, each batch classified. For a store, whose
/// objects are read elsewhere but judged as files are.
pub fn file_records(
    task: &str,
    batches: Vec<Batch>,
    records: Vec<Result<(RecordInfo, Option<String>), UnreadableFile>>,
    now: Now,
) -> Vec<Batch> {
    file_task(task, TaskRead { batches, records, problems: Vec::new() }, now)
}

/// Put a task's files together: each run record filed to its batch, each
/// batch classified (in key order).
fn file_task(task: &str, read: TaskRead, now: Now) -> Vec<Batch> {
    let TaskRead { batches: mut out, records: read, .. } = read;
    let unknown = "?".repeat(16);
    let mut index: HashMap<String, usize> = out.iter().enumerate().map(|(i, b)| (b.key.clone(), i)).collect();
    let mut at = |out: &mut Vec<Batch>, key: &str| -> usize {
        *index.entry(key.to_string()).or_insert_with(|| {
            out.push(Batch::new(task, key));
            out.len() - 1
        })
    };
    // Run records: by run id where a lease, orphan, note or mark names it; else
    // by re-hashing the record's variables to the key.
    let mut by_run: HashMap<String, usize> = HashMap::new();
    for (i, b) in out.iter().enumerate() {
        for r in b.named_runs() {
            by_run.insert(r.to_string(), i);
        }
    }
    for rec in read {
        match rec {
            Ok((mut r, hashed)) => {
                let i = match by_run.get(&r.run_id) {
                    Some(&i) => i,
                    None => at(&mut out, hashed.as_deref().unwrap_or(&unknown)),
                };
                let b = &mut out[i];
                // Variables that hash to the batch's key are the batch's: it
                // keeps one copy (a scan of 100,000 batches keeps every record).
                if hashed.as_deref() == Some(b.key.as_str()) {
                    let vars = r.variables.take();
                    if b.variables.is_none() {
                        b.variables = vars;
                    }
                }
                // Most batches have one record: no room for four.
                b.records.reserve_exact(1);
                b.records.push(r);
            }
            // A record that cannot be read goes to the batch that names its
            // run (its file is `<run id>.json`), else to the unknown batch.
            Err(u) => {
                let stem = u.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let i = match by_run.get(&stem) {
                    Some(&i) => i,
                    None => at(&mut out, &unknown),
                };
                out[i].unreadable.push(u);
            }
        }
    }
    for b in &mut out {
        b.records.sort_by(|a, c| c.started_at.cmp(&a.started_at));
        classify(b, now);
    }
    out
}

/// Read one batch only: its lease-folder files and the run records they name
/// (no folder of records is listed), for `explain`, which must answer fast in a
/// use case of 100,000 batches.
pub fn scan_batch(uc: &Path, task: &str, key: &str, opts: &ScanOptions, sys: &Sys) -> Result<(Scan, Batch), ScanError> {
    let Opened { root, beneath, leases_root, lineage_dir, now } = open(uc, opts, sys)?;
    let mut problems = Vec::new();
    let dir = leases_root.join(task);
    let mut b = Batch::new(task, key);
    let mut folder = Folder::default();
    if let Ok(rd) = fs::read_dir(&dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(key) {
                continue;
            }
            let path = e.path();
            match layout::classify(&name) {
                Entry::Lease { key: k } if k == key => folder.leases.push(path),
                Entry::Finished { key: k } if k == key => folder.finished.push(path),
                Entry::Dead { key: k } if k == key => folder.dead.push(path),
                Entry::Done { key: k, run } if k == key => folder.done.push((run, path)),
                Entry::Taken { key: k, run } if k == key => folder.taken.push((run, path)),
                Entry::Tmp { key: k } if k == key => folder.tmp.push(path),
                Entry::Unknown { key: k } if k == key && !e.file_type().is_ok_and(|t| t.is_dir()) => {
                    folder.unknown.push(path)
                }
                _ => {}
            }
        }
    }
    let now = task_clock(opts, sys, dir.is_dir().then_some(dir.as_path()), now);
    fill(&mut b, folder, &mut Reader::new(None), &beneath, sys, now);
    let mut runs: Vec<String> = b.named_runs().filter(|r| layout::run_id_is_safe(r)).map(str::to_string).collect();
    runs.sort();
    runs.dedup();
    for r in runs {
        let path = lineage_dir.join(task).join(format!("{r}.json"));
        if !path.exists() {
            continue;
        }
        match read_record(&path) {
            Ok(rec) => {
                if b.variables.is_none()
                    && rec.variables.as_ref().and_then(|v| record_key(task, v)).as_deref() == Some(key)
                {
                    b.variables = rec.variables.clone();
                }
                b.records.push(rec);
            }
            Err(u) => b.unreadable.push(u),
        }
    }
    b.records.sort_by(|a, c| c.started_at.cmp(&a.started_at));
    classify(&mut b, now);
    let scan = Scan { root, lineage_dir, now, batches: Vec::new(), problems: std::mem::take(&mut problems) };
    Ok((scan, b))
}

/// Where a batch is: its task and key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct BatchId {
    /// The task: `<usecase>/<package>/<task>`.
    pub task: String,
    /// The batch key (16 hex digits).
    pub key: String,
}

/// What a key, key prefix or lease path names.
#[derive(Debug)]
pub enum Found {
    /// Exactly one batch.
    One(BatchId),
    /// Several batches start with that prefix.
    Ambiguous(Vec<BatchId>),
    /// None; the keys that come closest.
    None(Vec<BatchId>),
    /// The query is a path (it holds a `/`), but not of a file in a task's lease
    /// folder of this use case: why.
    NotALeaseFile(String),
}

/// A query as it is echoed back: at most 80 characters.
pub fn shorten(query: &str) -> String {
    match query.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &query[..at]),
        None => query.to_string(),
    }
}

/// Find the batch a key, a unique key prefix, or a path to a lease-folder file
/// names, by file names in the lease folders only. `task` narrows it.
pub fn find(uc: &Path, query: &str, task: Option<&str>) -> Result<Found, ScanError> {
    let root = use_case_root(uc)?;
    let leases_root = layout::leases_root(&root);
    // A path to a lease, note, orphan or mark (a symlink to one is followed).
    if query.contains('/') {
        let as_path = Path::new(query);
        let full = match fs::canonicalize(as_path) {
            Ok(f) => f,
            Err(e) => return Ok(Found::NotALeaseFile(format!("{}: {e}", shorten(query)))),
        };
        let key = full.file_name().and_then(|n| n.to_str()).and_then(|name| match layout::classify(name) {
            Entry::Lease { key } | Entry::Finished { key } | Entry::Dead { key } | Entry::Tmp { key } => Some(key),
            Entry::Done { key, .. } | Entry::Taken { key, .. } | Entry::Unknown { key } => Some(key),
            _ => None,
        });
        // Its task: under the lease folder once symlinks are resolved, or as
        // written (a task folder that is itself a symlink).
        let lexical = std::path::absolute(as_path).ok();
        let lexical_root = std::path::absolute(uc).ok().map(|u| u.join(".ubunye/leases"));
        let task =
            full.parent().and_then(|p| p.strip_prefix(&leases_root).ok()).map(|t| t.to_path_buf()).or_else(|| {
                let (l, r) = (lexical.as_ref()?, lexical_root.as_ref()?);
                l.parent()?.strip_prefix(r).ok().map(|t| t.to_path_buf())
            });
        let task = task.as_ref().map(|t| t.to_string_lossy());
        return Ok(match (task, key) {
            (Some(task), Some(key)) if task.split('/').count() == 3 => {
                Found::One(BatchId { task: task.into_owned(), key })
            }
            (Some(_), None) => Found::NotALeaseFile(format!(
                "{} is not named as a lease, note, orphan or mark (<16 hex key>.json, ...)",
                shorten(query)
            )),
            _ => Found::NotALeaseFile(format!(
                "{} is not in a task's lease folder of this use case ({}/<usecase>/<package>/<task>/)",
                shorten(query),
                leases_root.display()
            )),
        });
    }
    let q = query.to_ascii_lowercase();
    // One pass over the names, keeping only hits and the nearest misses: a use
    // case can hold 100,000 batches, and explain must answer at once.
    let common = |k: &str| k.bytes().zip(q.bytes()).take_while(|(a, b)| a == b).count();
    let mut hits = std::collections::BTreeSet::new();
    let mut near = std::collections::BTreeSet::new();
    // A near key shares at least 4 leading digits: fewer is a different
    // batch, not a slip of the keyboard.
    let mut best = 0;
    let mut problems = Vec::new();
    let dirs: Vec<(String, PathBuf)> = task_dirs(&leases_root, &mut problems)
        .into_iter()
        .filter(|(t, _)| task.is_none_or(|want| task_matches(want, t)))
        .collect();
    // A whole key: its lease or note is enough to find it, without listing
    // folders of 10,000 files (an orphan alone is found by the listing below).
    if layout::is_key(&q) {
        let hits: Vec<BatchId> = dirs
            .iter()
            .filter(|(_, dir)| {
                fsx::exists(&dir.join(format!("{q}.json"))) || fsx::exists(&dir.join(format!("{q}.finished.json")))
            })
            .map(|(t, _)| BatchId { task: t.clone(), key: q.clone() })
            .collect();
        match hits.as_slice() {
            [] => {}
            [one] => return Ok(Found::One(one.clone())),
            _ => return Ok(Found::Ambiguous(hits)),
        }
    }
    for (t, dir) in &dirs {
        let Ok(rd) = fs::read_dir(dir) else { continue };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(key) = name.to_str().and_then(|n| n.get(..16)).filter(|k| layout::is_key(k)) else {
                continue;
            };
            if key.starts_with(&q) {
                hits.insert(BatchId { task: t.clone(), key: key.to_string() });
            } else if hits.is_empty() {
                let c = common(key);
                if c > best {
                    best = c;
                    near.clear();
                }
                if c == best && c >= 4 && near.len() < 5 {
                    near.insert(BatchId { task: t.clone(), key: key.to_string() });
                }
            }
        }
    }
    let hits: Vec<BatchId> = hits.into_iter().collect();
    Ok(match hits.len() {
        1 => Found::One(hits.into_iter().next().unwrap_or_else(|| unreachable!())),
        0 => Found::None(near.into_iter().collect()),
        _ => Found::Ambiguous(hits),
    })
}
