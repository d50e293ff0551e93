//! Reading the files of a use case: lease folders (leases, orphans, notes,
//! marks) and run records. Damaged files become [`UnreadableFile`]s, never errors
//! that stop a scan.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::*;
use crate::documents::{self, LeaseDoc};
use crate::layout::{self, Entry};
use crate::liveness;
use crate::sys::{Now, Sys};

/// The task folders three levels under `base` (`<u>/<p>/<t>`). Symlinked
/// folders are followed, as both engines follow them when they open a lease or
/// record by its path. What cannot be a task's folder is reported, never passed
/// over in silence: a name that is not UTF-8 (no task is named so, and two such
/// names could not be told apart), a symlink that leads nowhere, a `.json` file
/// at a level where only folders belong.
pub fn task_dirs(base: &Path, problems: &mut Vec<UnreadableFile>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let list = |d: &Path, level: usize, problems: &mut Vec<UnreadableFile>| -> Vec<(String, PathBuf)> {
        let rd = match fs::read_dir(d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && level == 0 => return Vec::new(),
            Err(e) => {
                problems.push(UnreadableFile::new(d, format!("cannot be listed: {e}")));
                return Vec::new();
            }
        };
        let mut v = Vec::new();
        for e in rd.flatten() {
            let path = e.path();
            let is_link = e.file_type().is_ok_and(|t| t.is_symlink());
            match fs::metadata(&path) {
                Ok(m) if m.is_dir() => match e.file_name().into_string() {
                    Ok(name) => v.push((name, path)),
                    Err(raw) => problems.push(UnreadableFile::misplaced(
                        &path,
                        format!(
                            "its name ({}) is not UTF-8, so it cannot be a task's folder and nothing in it is looked at: rename it",
                            std::os::unix::ffi::OsStrExt::as_bytes(raw.as_os_str()).escape_ascii()
                        ),
                    )),
                },
                Ok(_) if path.extension().is_some_and(|x| x == "json") => problems.push(UnreadableFile::misplaced(
                    &path,
                    format!(
                        "a .json file {} levels down, where only folders belong: leases and records are files in <usecase>/<package>/<task>/, so no engine looks at this one",
                        level + 1
                    ),
                )),
                Ok(_) => {}
                Err(err) if is_link => {
                    problems.push(UnreadableFile::misplaced(&path, format!("a symlink that leads nowhere ({err})")))
                }
                Err(err) => problems.push(UnreadableFile::new(&path, format!("cannot be read: {err}"))),
            }
        }
        v.sort();
        v
    };
    for (u, ud) in list(base, 0, problems) {
        for (p, pd) in list(&ud, 1, problems) {
            for (t, td) in list(&pd, 2, problems) {
                out.push((format!("{u}/{p}/{t}"), td));
            }
        }
    }
    out
}

/// What one lease folder holds, by key.
#[derive(Default)]
pub(super) struct Folder {
    pub(super) leases: Vec<PathBuf>,
    pub(super) finished: Vec<PathBuf>,
    pub(super) dead: Vec<PathBuf>,
    pub(super) done: Vec<(String, PathBuf)>,
    pub(super) taken: Vec<(String, PathBuf)>,
    pub(super) tmp: Vec<PathBuf>,
    pub(super) unknown: Vec<PathBuf>,
}

pub(super) fn read_folder(dir: &Path, problems: &mut Vec<UnreadableFile>) -> BTreeMap<String, Folder> {
    let mut by_key: BTreeMap<String, Folder> = BTreeMap::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            problems.push(UnreadableFile::new(dir, format!("cannot be listed: {e}")));
            return by_key;
        }
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        sort_entry(&mut by_key, problems, &name, e.path(), || e.file_type().is_ok_and(|t| t.is_dir()));
    }
    by_key
}

/// One name of a lease folder put where it belongs: a batch's file, or a
/// problem. `is_dir` is asked only of a name no engine writes.
pub(super) fn sort_entry(
    by_key: &mut BTreeMap<String, Folder>,
    problems: &mut Vec<UnreadableFile>,
    name: &str,
    path: PathBuf,
    is_dir: impl FnOnce() -> bool,
) {
    match layout::classify(name) {
        Entry::Lease { key } => by_key.entry(key).or_default().leases.push(path),
        Entry::Finished { key } => by_key.entry(key).or_default().finished.push(path),
        Entry::Dead { key } => by_key.entry(key).or_default().dead.push(path),
        Entry::Done { key, run } => by_key.entry(key).or_default().done.push((run, path)),
        Entry::Taken { key, run } => by_key.entry(key).or_default().taken.push((run, path)),
        Entry::Tmp { key } => by_key.entry(key).or_default().tmp.push(path),
        Entry::Clock => {}
        _ if is_dir() => problems.push(UnreadableFile::misplaced(
            &path,
            "a folder inside a task's lease folder, where only lease files belong: no engine looks in it",
        )),
        Entry::Unknown { key } => by_key.entry(key).or_default().unknown.push(path),
        Entry::Other if name.ends_with(".json") => problems.push(UnreadableFile::misplaced(
            &path,
            "a .json file in a lease folder not named as Ubunye names its files (<16 hex key>.json, .finished.json, .dead-<8hex>.json): no engine reads it",
        )),
        Entry::Other => problems.push(UnreadableFile::misplaced(
            &path,
            "a file in a lease folder that no engine writes (its name does not start with a batch key): nothing reads it; look at it, and remove it if nothing of yours needs it",
        )),
    }
}

/// Reads a folder's files by name into one buffer (one per thread).
pub(super) struct Reader<'a> {
    dir: Option<&'a crate::fsx::Dir>,
    buf: Vec<u8>,
}

impl<'a> Reader<'a> {
    /// Files of `dir` (opened once); by their whole path when it could not be opened.
    pub(super) fn new(dir: Option<&'a crate::fsx::Dir>) -> Reader<'a> {
        Reader { dir, buf: Vec::new() }
    }

    /// A file's bytes and metadata (a regular file only: [`crate::fsx::open_regular`]).
    fn read(&mut self, path: &Path) -> std::io::Result<(&[u8], Option<fs::Metadata>)> {
        match (self.dir, path.file_name()) {
            (Some(d), Some(name)) => {
                let m = d.read_into(name, &mut self.buf)?;
                Ok((&self.buf, Some(m)))
            }
            _ => {
                self.buf = crate::fsx::read_regular(path)?;
                Ok((&self.buf, fs::metadata(path).ok()))
            }
        }
    }

    /// A run record, read and parsed.
    pub(super) fn record(&mut self, path: &Path) -> Result<RecordInfo, UnreadableFile> {
        let (bytes, _) = self.read(path).map_err(|e| UnreadableFile::new(path, e.to_string()))?;
        super::record::record_of(bytes, path)
    }
}

/// `f` over every item on the machine's cores (up to 4), each thread with a
/// [`Reader`] of `dir`; the results in the items' order.
pub(super) fn par_map<T: Send, R: Send>(
    items: Vec<T>,
    dir: Option<&crate::fsx::Dir>,
    f: impl Fn(T, &mut Reader) -> R + Sync,
) -> Vec<R> {
    const BLOCK: usize = 128;
    // Asked once, and only when there is enough to share (it reads the
    // cgroup's files).
    let threads = match items.len() < 2 * BLOCK {
        true => 1,
        false => std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4),
    };
    if threads == 1 {
        let mut r = Reader::new(dir);
        return items.into_iter().map(|t| f(t, &mut r)).collect();
    }
    let mut blocks = std::collections::VecDeque::new();
    let mut items = items.into_iter().peekable();
    let mut n = 0;
    while items.peek().is_some() {
        blocks.push_back((n, items.by_ref().take(BLOCK).collect::<Vec<T>>()));
        n += 1;
    }
    let queue = std::sync::Mutex::new(blocks);
    let f = &f;
    let queue = &queue;
    let mut done: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut r = Reader::new(dir);
                    let mut out = Vec::new();
                    loop {
                        let next = queue.lock().map(|mut q| q.pop_front()).unwrap_or(None);
                        let Some((i, block)) = next else { break };
                        out.push((i, block.into_iter().map(|t| f(t, &mut r)).collect::<Vec<R>>()));
                    }
                    out
                })
            })
            .collect();
        // A worker that panicked takes its blocks with it: the scan must not
        // go on without them (a batch missing from a listing).
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    // Sized once: a growing Vec would copy its results again at each doubling.
    let mut out = Vec::with_capacity(done.iter().map(|(_, v)| v.len()).sum());
    for (_, v) in done {
        out.extend(v);
    }
    out
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn claim_info(root: &crate::beneath::Beneath, claim: &str) -> ClaimInfo {
    match root.resolve(claim) {
        Ok(inside) => {
            let m = fs::symlink_metadata(&inside.full).ok();
            let folder = m.as_ref().is_some_and(|m| m.is_dir());
            let size = m.as_ref().filter(|_| !folder).map(|m| m.len());
            ClaimInfo { claim: claim.to_string(), present: m.is_some(), size, folder }
        }
        Err(_) => ClaimInfo { claim: claim.to_string(), present: false, size: None, folder: false },
    }
}

/// Read a lease or orphan file into a [`LeaseInfo`], or say why it cannot be.
fn read_lease(
    reader: &mut Reader,
    path: &Path,
    root: &crate::beneath::Beneath,
    sys: &Sys,
    now: Now,
    judge_it: bool,
) -> Result<LeaseInfo, UnreadableFile> {
    let unreadable = |why: String| UnreadableFile::new(path, why);
    let (bytes, meta) = reader.read(path).map_err(|e| unreadable(e.to_string()))?;
    let parsed = documents::parse_doc(bytes).map_err(|d| unreadable(d.to_string()))?;
    let not_json = matches!(parsed, documents::Parsed::NotADoc).then(|| not_json_text(bytes));
    let doc = LeaseDoc::from_parsed(parsed);
    let notes = doc.notes().map_err(|d| unreadable(d.to_string()))?;
    let replaces = doc.replaces().map_err(|d| unreadable(d.to_string()))?;
    let times = meta.map(|m| FileTimes::of(&m));
    let judgement = if judge_it {
        Some(liveness::judge(&doc, times, &mut || now, sys, true).map_err(|d| unreadable(d.to_string()))?)
    } else {
        None
    };
    let outputs = notes
        .into_iter()
        .map(|n| OutputInfo {
            staging_exists: n.staging.as_deref().is_some_and(|s| root.resolve(s).is_ok_and(|i| i.full.is_dir())),
            claims: n.claimed.iter().map(|c| claim_info(root, c)).collect(),
            name: n.name,
            appends: n.appends,
            exact: n.exact,
            state: n.state,
            staging: n.staging,
        })
        .collect();
    let mut refused_paths: Vec<String> = doc
        .paths()
        .unwrap_or_default()
        .iter()
        .filter_map(|p| root.resolve(p).and_then(|_| root.check_walk(p)).err().map(|r| r.to_string()))
        .collect();
    for o in &outputs {
        let o: &OutputInfo = o;
        if let Some(st) = &o.staging {
            let name = st.rsplit('/').next().unwrap_or_default();
            if !crate::beneath::is_staging_name(name) && root.resolve(st).is_ok() {
                refused_paths.push(crate::beneath::PathRefusal::NotStaging { path: st.clone() }.to_string());
            }
        }
    }
    let replaces =
        replaces.into_iter().map(|(o, files)| (o, files.iter().map(|c| claim_info(root, c)).collect())).collect();
    Ok(LeaseInfo {
        path: path.to_path_buf(),
        holder: Holder {
            run_id: doc.run_id(),
            pid: doc.pid().ok().filter(|_| doc.0.contains_key("pid")),
            host: doc.host().map(str::to_string),
            started_at: doc.started_at().map(str::to_string),
            heartbeat: doc.heartbeat(),
            judgement,
        },
        committed: doc.committed(),
        kept: doc.kept(),
        outputs,
        replaces,
        tombstoned: false,
        refused_paths,
        times,
        doc,
        not_json,
    })
}

/// `29 bytes: {"run_id": "57f0…` (`empty` for no bytes): how a lease that is
/// not JSON starts, its control characters shown as escapes.
fn not_json_text(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "empty (0 bytes)".into();
    }
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]);
    // Control characters (and what reorders a line) as escapes; the rest
    // as written, quotes and all.
    let odd = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let shown: String = text.chars().flat_map(|c| if odd(c) { c.escape_debug().collect() } else { vec![c] }).collect();
    let more = if bytes.len() > 40 { "…" } else { "" };
    format!("{} bytes: {shown}{more}", bytes.len())
}

fn read_note(reader: &mut Reader, path: &Path) -> Result<FinishedInfo, UnreadableFile> {
    let (bytes, _) = reader.read(path).map_err(|e| UnreadableFile::new(path, e.to_string()))?;
    note_of(bytes, path)
}

/// A finished note's bytes, read from `path` (a file, or an object's URL).
pub fn note_of(bytes: &[u8], path: &Path) -> Result<FinishedInfo, UnreadableFile> {
    let f = crate::protocol::finished::parse(bytes).map_err(|why| UnreadableFile::new(path, why))?;
    let outputs = f.outputs().unwrap_or_default();
    Ok(FinishedInfo {
        path: path.to_path_buf(),
        run_id: f.run_id().map(str::to_string),
        finished_at: f.doc.get("finished_at").and_then(Value::as_str).map(str::to_string),
        outputs: outputs.into_iter().map(|o| (o.name, o.claimed, o.staged)).collect(),
    })
}

/// The key a record's variables hash to (None when masked or not hashable).
pub fn record_key(task: &str, vars: &serde_json::Map<String, Value>) -> Option<String> {
    if vars.values().any(|v| v == crate::secrets::REDACTED) {
        return None;
    }
    let v = crate::vars::variables_from_map(vars);
    crate::key::batch_key(task, &v).ok()
}

/// Read one batch's lease-folder files into the batch.
pub(super) fn fill(
    b: &mut Batch,
    f: Folder,
    reader: &mut Reader,
    beneath: &crate::beneath::Beneath,
    sys: &Sys,
    now: Now,
) {
    for p in f.leases {
        match read_lease(reader, &p, beneath, sys, now, true) {
            Ok(l) => b.lease = Some(Box::new(l)),
            Err(u) => b.unreadable.push(u),
        }
    }
    for p in f.dead {
        match read_lease(reader, &p, beneath, sys, now, false) {
            Ok(l) => b.orphans.push(l),
            Err(u) => b.unreadable.push(u),
        }
    }
    for p in f.finished {
        match read_note(reader, &p) {
            Ok(n) => b.finished = Some(Box::new(n)),
            Err(u) => b.unreadable.push(u),
        }
    }
    b.done_marks = f.done.into_iter().map(|(run_id, path)| Mark { time: mtime(&path), run_id, path }).collect();
    b.tombstones = f.taken.into_iter().map(|(run_id, path)| Mark { time: mtime(&path), run_id, path }).collect();
    b.temp_files = f.tmp;
    b.unknown_files =
        f.unknown.into_iter().map(|path| Mark { time: mtime(&path), run_id: String::new(), path }).collect();
    if let Some(l) = b.lease.as_mut() {
        // An empty lease names no run: a `<key>.taken-` mark beside it is an
        // earlier takeover's, not its own.
        l.tombstoned = !l.holder.run_id.is_empty() && b.tombstones.iter().any(|t| t.run_id == l.holder.run_id);
    }
}
