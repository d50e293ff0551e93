//! The state model: every batch of a use case, read from its lease folder and
//! run records, with the engine's own judgement of each lease and exactly one
//! primary state. No printing: the CLI and the dashboard render it.
//!
//! Severity, most urgent first: unreadable, dead, orphan, pending, handed-back,
//! kept, live, interrupted, failed, finished.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use crate::doc::{self, LeaseDoc, Parsed};
use crate::layout::{self, Entry};
use crate::liveness::{self, FileTimes, Judgement, Why};
use crate::sys::{Now, Sys};

/// A batch's one primary state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// A lease, orphan or note exists but cannot be read or parsed.
    Unreadable,
    /// A lease the engine judges dead: the next run (or a takeover) takes it over.
    Dead,
    /// A `.dead-*.json` left beside the lease folder: claims still to be taken back.
    Orphan,
    /// A committed lease of a dead holder with replaced files or the note still to do.
    Pending,
    /// A lease whose takeover was refused (its files were in use).
    HandedBack,
    /// A failed run's lease, kept with claims it could not remove.
    Kept,
    /// Held by a live run.
    Live,
    /// No lease; the latest run record says interrupted.
    Interrupted,
    /// No lease; the latest run record says error.
    Failed,
    /// Finished (note, or a success record), no lease.
    Finished,
}

impl State {
    pub const ALL: [State; 10] = [
        State::Unreadable,
        State::Dead,
        State::Orphan,
        State::Pending,
        State::HandedBack,
        State::Kept,
        State::Live,
        State::Interrupted,
        State::Failed,
        State::Finished,
    ];

    /// The word used on screen and in `--state`.
    pub fn word(self) -> &'static str {
        match self {
            State::Unreadable => "unreadable",
            State::Dead => "dead",
            State::Orphan => "orphan",
            State::Pending => "pending",
            State::HandedBack => "handed-back",
            State::Kept => "kept",
            State::Live => "live",
            State::Interrupted => "interrupted",
            State::Failed => "failed",
            State::Finished => "finished",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|st| st.word() == s)
    }
}

/// Facts about a batch beside its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flag {
    /// Judged alive, but its lease has not been written for three heartbeats.
    Stalled,
    /// The lease's times are ahead of the disk's clock: the clock was set back.
    ClockBehind,
    /// A kept lease whose process still runs (a notebook): it cannot be taken
    /// over until that process ends.
    HolderAlive,
    /// The lease is committed.
    Committed,
    /// Files of a replaced run (`--rerun`) are still listed.
    Replaces,
    /// A done mark is there without the lease that goes with it.
    LeftoverDone,
    /// Temp files (`*.tmp`) of a killed save are there.
    TempFiles,
    /// The lease names paths this engine will not remove.
    PathsOutside,
    /// The lease's age was read by this machine's clock (the probe failed).
    LocalClock,
    /// The lease is empty or not JSON: judged by its age alone, as the peer
    /// judges it (held until 15 minutes old, then taken over).
    NotJson,
}

/// Who holds a lease.
#[derive(Clone, Debug, Serialize)]
pub struct Holder {
    pub run_id: String,
    pub pid: Option<i64>,
    pub host: Option<String>,
    pub started_at: Option<String>,
    pub heartbeat: Option<f64>,
    /// The engine's judgement, None when the lease is damaged.
    pub judgement: Option<Judgement>,
}

/// One claimed (or replaced) file and whether it is there.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimInfo {
    pub claim: String,
    pub present: bool,
    pub size: Option<u64>,
}

/// One output note.
#[derive(Clone, Debug, Serialize)]
pub struct OutputInfo {
    pub name: String,
    pub appends: bool,
    pub exact: bool,
    pub state: Option<String>,
    pub staging: Option<String>,
    pub staging_exists: bool,
    pub claims: Vec<ClaimInfo>,
}

/// A lease (or an orphan) as read.
#[derive(Clone, Debug, Serialize)]
pub struct LeaseInfo {
    pub path: PathBuf,
    #[serde(skip)]
    pub doc: LeaseDoc,
    #[serde(skip)]
    pub times: Option<FileTimes>,
    pub holder: Holder,
    pub committed: bool,
    pub kept: bool,
    pub outputs: Vec<OutputInfo>,
    pub replaces: Vec<(String, Vec<ClaimInfo>)>,
    /// A takeover mark for its own run is beside it.
    pub tombstoned: bool,
    /// Paths it names that this engine will not remove, each with the reason
    /// (outside the use case, through a symlinked folder, not a staging name).
    pub refused_paths: Vec<String>,
}

/// A marker file: a done mark or a takeover tombstone.
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    pub run_id: String,
    pub path: PathBuf,
    #[serde(serialize_with = "opt_time")]
    pub time: Option<SystemTime>,
}

fn opt_time<S: serde::Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&crate::timefmt::rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// The finished note.
#[derive(Clone, Debug, Serialize)]
pub struct FinishedInfo {
    pub path: PathBuf,
    pub run_id: Option<String>,
    pub finished_at: Option<String>,
    /// (output, claimed files, staged)
    pub outputs: Vec<(String, Vec<String>, bool)>,
}

/// A run record, as far as the state needs it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordInfo {
    pub run_id: String,
    pub path: PathBuf,
    pub status: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub error: Option<String>,
    pub backend: Option<String>,
    #[serde(skip)]
    pub variables: Option<serde_json::Map<String, Value>>,
    /// Where its outputs went (`outputs[].location`).
    #[serde(skip)]
    pub locations: Vec<String>,
}

/// A file that exists and cannot be read.
#[derive(Clone, Debug, Serialize)]
pub struct UnreadableFile {
    pub path: PathBuf,
    pub why: String,
}

/// One batch (task and key) with everything known of it.
#[derive(Clone, Debug, Serialize)]
pub struct Batch {
    pub task: String,
    pub key: String,
    pub state: State,
    pub flags: Vec<Flag>,
    /// The batch's variables, from a run record whose variables hash to the key.
    pub variables: Option<serde_json::Map<String, Value>>,
    /// The run this row is about: the lease's, the orphan's, the note's, or the
    /// latest record's.
    pub run_id: Option<String>,
    pub lease: Option<LeaseInfo>,
    pub orphans: Vec<LeaseInfo>,
    pub done_marks: Vec<Mark>,
    pub tombstones: Vec<Mark>,
    pub finished: Option<FinishedInfo>,
    /// Newest first.
    pub records: Vec<RecordInfo>,
    pub unreadable: Vec<UnreadableFile>,
    pub temp_files: Vec<PathBuf>,
    /// One line for a table.
    pub note: String,
}

impl Batch {
    fn new(task: &str, key: &str) -> Batch {
        Batch {
            task: task.to_string(),
            key: key.to_string(),
            state: State::Finished,
            flags: Vec::new(),
            variables: None,
            run_id: None,
            lease: None,
            orphans: Vec::new(),
            done_marks: Vec::new(),
            tombstones: Vec::new(),
            finished: None,
            records: Vec::new(),
            unreadable: Vec::new(),
            temp_files: Vec::new(),
            note: String::new(),
        }
    }

    /// `dt=2025-01-02 mode=DEV`, or None when the variables are not known.
    pub fn variables_text(&self) -> Option<String> {
        let v = self.variables.as_ref()?;
        Some(
            v.iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    /// Claims listed by its lease and orphans.
    pub fn claim_count(&self) -> usize {
        self.lease.iter().chain(&self.orphans).map(|l| l.outputs.iter().map(|o| o.claims.len()).sum::<usize>()).sum()
    }
}

/// Options of a scan.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// Where run records are (default `<uc>/.ubunye/lineage`).
    pub lineage_dir: Option<PathBuf>,
    /// Only these tasks (`usecase/package/task`, `*` as a wildcard).
    pub task_glob: Option<String>,
}

/// A whole use case, read.
#[derive(Clone, Debug, Serialize)]
pub struct Scan {
    pub root: PathBuf,
    pub lineage_dir: PathBuf,
    #[serde(skip)]
    pub now: Now,
    pub batches: Vec<Batch>,
    /// Folders that could not be listed.
    pub problems: Vec<UnreadableFile>,
}

/// Why a folder cannot be scanned at all.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("{0} does not exist or cannot be read ({1})")]
    NoFolder(PathBuf, String),
    #[error(
        "{0} has no .ubunye/ folder, so it is not a use-case folder Ubunye has run in. Point -d at the folder you pass to `ubunye run -d` (or `ubunye exec -d`)."
    )]
    NotAUseCase(PathBuf),
}

/// `*` matches any run of characters (`/` included).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The task folders three levels under `base` (`<u>/<p>/<t>`).
pub fn task_dirs(base: &Path, problems: &mut Vec<UnreadableFile>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let list = |d: &Path, problems: &mut Vec<UnreadableFile>| -> Vec<(String, PathBuf)> {
        match fs::read_dir(d) {
            Ok(rd) => {
                let mut v: Vec<(String, PathBuf)> = rd
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .collect();
                v.sort();
                v
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                problems.push(UnreadableFile { path: d.to_path_buf(), why: e.to_string() });
                Vec::new()
            }
        }
    };
    for (u, ud) in list(base, problems) {
        for (p, pd) in list(&ud, problems) {
            for (t, td) in list(&pd, problems) {
                out.push((format!("{u}/{p}/{t}"), td));
            }
        }
    }
    out
}

/// What one lease folder holds, by key.
#[derive(Default)]
struct Folder {
    leases: Vec<PathBuf>,
    finished: Vec<PathBuf>,
    dead: Vec<PathBuf>,
    done: Vec<(String, PathBuf)>,
    taken: Vec<(String, PathBuf)>,
    tmp: Vec<PathBuf>,
}

fn read_folder(dir: &Path, problems: &mut Vec<UnreadableFile>) -> BTreeMap<String, Folder> {
    let mut by_key: BTreeMap<String, Folder> = BTreeMap::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            problems.push(UnreadableFile { path: dir.to_path_buf(), why: e.to_string() });
            return by_key;
        }
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        match layout::classify(&name) {
            Entry::Lease { key } => by_key.entry(key).or_default().leases.push(path),
            Entry::Finished { key } => by_key.entry(key).or_default().finished.push(path),
            Entry::Dead { key } => by_key.entry(key).or_default().dead.push(path),
            Entry::Done { key, run } => by_key.entry(key).or_default().done.push((run, path)),
            Entry::Taken { key, run } => by_key.entry(key).or_default().taken.push((run, path)),
            Entry::Tmp { key } => by_key.entry(key).or_default().tmp.push(path),
            Entry::Clock | Entry::Other => {}
        }
    }
    by_key
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn claim_info(root: &crate::beneath::Beneath, claim: &str) -> ClaimInfo {
    match root.resolve(claim) {
        Ok(inside) => {
            let m = fs::symlink_metadata(&inside.full);
            ClaimInfo { claim: claim.to_string(), present: m.is_ok(), size: m.ok().map(|m| m.len()) }
        }
        Err(_) => ClaimInfo { claim: claim.to_string(), present: false, size: None },
    }
}

/// Read a lease or orphan file into a [`LeaseInfo`], or say why it cannot be.
fn read_lease(
    path: &Path,
    root: &crate::beneath::Beneath,
    sys: &Sys,
    now: Now,
    judge_it: bool,
) -> Result<LeaseInfo, UnreadableFile> {
    let unreadable = |why: String| UnreadableFile { path: path.to_path_buf(), why };
    let bytes = fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let parsed = doc::parse_doc(&bytes).map_err(|d| unreadable(d.to_string()))?;
    let doc = LeaseDoc::from_parsed(parsed);
    let notes = doc.notes().map_err(|d| unreadable(d.to_string()))?;
    let replaces = doc.replaces().map_err(|d| unreadable(d.to_string()))?;
    let times = fs::metadata(path).ok().map(|m| FileTimes::of(&m));
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
    })
}

fn read_note(path: &Path) -> Result<FinishedInfo, UnreadableFile> {
    let unreadable = |why: String| UnreadableFile { path: path.to_path_buf(), why };
    let bytes = fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let m = match doc::parse_doc(&bytes).map_err(|d| unreadable(d.to_string()))? {
        Parsed::Doc(m) if !m.is_empty() => m,
        _ => {
            return Err(unreadable(
                "not valid JSON (a note is written in one replace, so something else changed it)".into(),
            ));
        }
    };
    let f = doc::Finished { doc: m };
    let outputs = f.outputs().map_err(|d| unreadable(d.to_string()))?;
    Ok(FinishedInfo {
        path: path.to_path_buf(),
        run_id: f.run_id().map(str::to_string),
        finished_at: f.doc.get("finished_at").and_then(Value::as_str).map(str::to_string),
        outputs: outputs.into_iter().map(|o| (o.name, o.claimed, o.staged)).collect(),
    })
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct RecordHead {
    run_id: Option<Value>,
    status: Option<Value>,
    started_at: Option<Value>,
    ended_at: Option<Value>,
    error: Option<Value>,
    backend: Option<Value>,
    variables: Option<Value>,
    outputs: Option<Value>,
}

fn text(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Read one run record (only the fields the state needs).
pub fn read_record(path: &Path) -> Result<RecordInfo, UnreadableFile> {
    let unreadable = |why: String| UnreadableFile { path: path.to_path_buf(), why };
    let bytes = fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let head: RecordHead = match serde_json::from_slice(&bytes) {
        Ok(h) => h,
        Err(_) => {
            let s = std::str::from_utf8(&bytes).map_err(|_| unreadable("it is not UTF-8 text".into()))?;
            match crate::pyparse::python_accepts(s) {
                // Half-written when its run died: a record with no status.
                None => RecordHead::default(),
                Some(_) => serde_json::from_str(&crate::pyparse::sanitize(s)).map_err(|e| unreadable(e.to_string()))?,
            }
        }
    };
    Ok(RecordInfo {
        run_id: text(head.run_id).unwrap_or(stem),
        path: path.to_path_buf(),
        status: text(head.status),
        started_at: text(head.started_at),
        ended_at: text(head.ended_at),
        error: text(head.error),
        backend: text(head.backend),
        variables: match head.variables {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        },
        locations: match head.outputs {
            Some(Value::Array(a)) => {
                a.iter().filter_map(|o| o.get("location").and_then(Value::as_str).map(str::to_string)).collect()
            }
            _ => Vec::new(),
        },
    })
}

/// Read every record file, on two threads (the machine's cores), keeping order.
fn read_records(paths: Vec<PathBuf>) -> Vec<Result<RecordInfo, UnreadableFile>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    if paths.len() < 64 || threads == 1 {
        return paths.iter().map(|p| read_record(p)).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(|p| read_record(p)).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The key a record's variables hash to (None when masked or not hashable).
fn record_key(task: &str, vars: &serde_json::Map<String, Value>) -> Option<String> {
    if vars.values().any(|v| v == crate::secrets::REDACTED) {
        return None;
    }
    let v = crate::key::variables_from_json(&Value::Object(vars.clone())).ok()?;
    crate::key::batch_key(task, &v).ok()
}

/// Scan a use-case folder.
pub fn scan(uc: &Path, opts: &ScanOptions, sys: &Sys) -> Result<Scan, ScanError> {
    let root = fs::canonicalize(uc).map_err(|e| ScanError::NoFolder(uc.to_path_buf(), e.to_string()))?;
    if !root.join(".ubunye").is_dir() {
        return Err(ScanError::NotAUseCase(root));
    }
    let beneath = crate::beneath::Beneath::new(&root).map_err(|e| ScanError::NoFolder(root.clone(), e.to_string()))?;
    let leases_root = layout::leases_root(&root);
    let lineage_dir = match &opts.lineage_dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => uc.join(d),
        None => layout::lineage_root(&root),
    };
    let now = sys.clock.disk_now(if leases_root.is_dir() { &leases_root } else { &root });
    let mut problems = Vec::new();
    let wanted = |task: &str| opts.task_glob.as_deref().is_none_or(|g| glob_match(g, task));
    let mut batches: BTreeMap<(String, String), Batch> = BTreeMap::new();
    for (task, dir) in task_dirs(&leases_root, &mut problems) {
        if !wanted(&task) {
            continue;
        }
        for (key, f) in read_folder(&dir, &mut problems) {
            let b = batches.entry((task.clone(), key.clone())).or_insert_with(|| Batch::new(&task, &key));
            fill(b, f, &beneath, sys, now);
        }
    }
    // Run records: by run id where a lease, orphan, note or mark names it; else
    // by re-hashing the record's variables to the key.
    let mut by_run: HashMap<(String, String), (String, String)> = HashMap::new();
    for ((task, key), b) in &batches {
        let runs = b
            .lease
            .iter()
            .chain(&b.orphans)
            .map(|l| l.holder.run_id.clone())
            .chain(b.finished.iter().filter_map(|f| f.run_id.clone()))
            .chain(b.done_marks.iter().chain(&b.tombstones).map(|m| m.run_id.clone()));
        for r in runs.filter(|r| !r.is_empty()) {
            by_run.insert((task.clone(), r), (task.clone(), key.clone()));
        }
    }
    let mut record_files: Vec<(String, PathBuf)> = Vec::new();
    for (task, dir) in task_dirs(&lineage_dir, &mut problems) {
        if !wanted(&task) {
            continue;
        }
        match fs::read_dir(&dir) {
            Ok(rd) => record_files.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .map(|p| (task.clone(), p)),
            ),
            Err(e) => problems.push(UnreadableFile { path: dir.clone(), why: e.to_string() }),
        }
    }
    let (tasks, paths): (Vec<String>, Vec<PathBuf>) = record_files.into_iter().unzip();
    for (task, rec) in tasks.into_iter().zip(read_records(paths)) {
        match rec {
            Ok(r) => {
                let key = by_run
                    .get(&(task.clone(), r.run_id.clone()))
                    .map(|(_, k)| k.clone())
                    .or_else(|| r.variables.as_ref().and_then(|v| record_key(&task, v)));
                let key = key.unwrap_or_else(|| "?".repeat(16));
                let b = batches.entry((task.clone(), key.clone())).or_insert_with(|| Batch::new(&task, &key));
                if b.variables.is_none()
                    && r.variables.as_ref().and_then(|v| record_key(&task, v)).as_deref() == Some(&key)
                {
                    b.variables = r.variables.clone();
                }
                b.records.push(r);
            }
            Err(u) => {
                let b =
                    batches.entry((task.clone(), "?".repeat(16))).or_insert_with(|| Batch::new(&task, &"?".repeat(16)));
                b.unreadable.push(u);
            }
        }
    }
    let mut out: Vec<Batch> = batches.into_values().collect();
    for b in &mut out {
        b.records.sort_by(|a, c| c.started_at.cmp(&a.started_at));
        classify(b, now);
    }
    out.sort_by(|a, b| a.state.cmp(&b.state).then_with(|| a.task.cmp(&b.task)).then_with(|| a.key.cmp(&b.key)));
    Ok(Scan { root, lineage_dir, now, batches: out, problems })
}

/// Read one batch only: its lease-folder files and the run records they name
/// (no folder of records is listed), for `explain`, which must answer fast in a
/// use case of 100,000 batches.
pub fn scan_batch(uc: &Path, task: &str, key: &str, opts: &ScanOptions, sys: &Sys) -> Result<(Scan, Batch), ScanError> {
    let root = fs::canonicalize(uc).map_err(|e| ScanError::NoFolder(uc.to_path_buf(), e.to_string()))?;
    if !root.join(".ubunye").is_dir() {
        return Err(ScanError::NotAUseCase(root));
    }
    let beneath = crate::beneath::Beneath::new(&root).map_err(|e| ScanError::NoFolder(root.clone(), e.to_string()))?;
    let leases_root = layout::leases_root(&root);
    let lineage_dir = match &opts.lineage_dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => uc.join(d),
        None => layout::lineage_root(&root),
    };
    let now = sys.clock.disk_now(if leases_root.is_dir() { &leases_root } else { &root });
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
                _ => {}
            }
        }
    }
    fill(&mut b, folder, &beneath, sys, now);
    let mut runs: Vec<String> = b
        .lease
        .iter()
        .chain(&b.orphans)
        .map(|l| l.holder.run_id.clone())
        .chain(b.finished.iter().filter_map(|f| f.run_id.clone()))
        .chain(b.done_marks.iter().chain(&b.tombstones).map(|m| m.run_id.clone()))
        .filter(|r| !r.is_empty() && layout::run_id_is_safe(r))
        .collect();
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
    pub task: String,
    pub key: String,
}

/// What a key, key prefix or lease path names.
#[derive(Debug)]
pub enum Found {
    One(BatchId),
    /// Several batches start with that prefix.
    Ambiguous(Vec<BatchId>),
    /// None; the keys that come closest.
    None(Vec<BatchId>),
}

/// Find the batch a key, a unique key prefix, or a path to a lease-folder file
/// names, by file names in the lease folders only. `task` narrows it.
pub fn find(uc: &Path, query: &str, task: Option<&str>) -> Result<Found, ScanError> {
    let root = fs::canonicalize(uc).map_err(|e| ScanError::NoFolder(uc.to_path_buf(), e.to_string()))?;
    if !root.join(".ubunye").is_dir() {
        return Err(ScanError::NotAUseCase(root));
    }
    let leases_root = layout::leases_root(&root);
    // A path to a lease, note, orphan or mark.
    let as_path = Path::new(query);
    if query.contains('/') && as_path.exists() {
        if let (Ok(full), Some(name)) = (fs::canonicalize(as_path), as_path.file_name()) {
            if let Ok(rel) = full.parent().unwrap_or(Path::new("/")).strip_prefix(&leases_root) {
                let key = match layout::classify(&name.to_string_lossy()) {
                    Entry::Lease { key } | Entry::Finished { key } | Entry::Dead { key } | Entry::Tmp { key } => {
                        Some(key)
                    }
                    Entry::Done { key, .. } | Entry::Taken { key, .. } => Some(key),
                    _ => None,
                };
                if let Some(key) = key {
                    return Ok(Found::One(BatchId { task: rel.to_string_lossy().into_owned(), key }));
                }
            }
        }
    }
    let q = query.to_ascii_lowercase();
    let mut all = std::collections::BTreeSet::new();
    let mut problems = Vec::new();
    for (t, dir) in task_dirs(&leases_root, &mut problems) {
        if task.is_some_and(|want| !glob_match(want, &t)) {
            continue;
        }
        if let Ok(rd) = fs::read_dir(&dir) {
            for e in rd.flatten() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.len() >= 16 && layout::is_key(&name[..16]) {
                    all.insert(BatchId { task: t.clone(), key: name[..16].to_string() });
                }
            }
        }
    }
    let hits: Vec<BatchId> = all.iter().filter(|b| b.key.starts_with(&q)).cloned().collect();
    Ok(match hits.len() {
        1 => Found::One(hits.into_iter().next().unwrap_or_else(|| unreachable!())),
        0 => {
            let common = |k: &str| k.chars().zip(q.chars()).take_while(|(a, b)| a == b).count();
            let best = all.iter().map(|b| common(&b.key)).max().unwrap_or(0);
            Found::None(all.into_iter().filter(|b| best > 0 && common(&b.key) == best).take(5).collect())
        }
        _ => Found::Ambiguous(hits),
    })
}

/// Read one batch's lease-folder files into the batch.
fn fill(b: &mut Batch, f: Folder, beneath: &crate::beneath::Beneath, sys: &Sys, now: Now) {
    for p in f.leases {
        match read_lease(&p, beneath, sys, now, true) {
            Ok(l) => b.lease = Some(l),
            Err(u) => b.unreadable.push(u),
        }
    }
    for p in f.dead {
        match read_lease(&p, beneath, sys, now, false) {
            Ok(l) => b.orphans.push(l),
            Err(u) => b.unreadable.push(u),
        }
    }
    for p in f.finished {
        match read_note(&p) {
            Ok(n) => b.finished = Some(n),
            Err(u) => b.unreadable.push(u),
        }
    }
    b.done_marks = f.done.into_iter().map(|(run_id, path)| Mark { time: mtime(&path), run_id, path }).collect();
    b.tombstones = f.taken.into_iter().map(|(run_id, path)| Mark { time: mtime(&path), run_id, path }).collect();
    b.temp_files = f.tmp;
    if let Some(l) = b.lease.as_mut() {
        l.tombstoned = b.tombstones.iter().any(|t| t.run_id == l.holder.run_id);
    }
}

/// Judge a batch's lease again, as time passes (dead and stalled depend on the
/// clock): re-stat the lease, re-probe its process, re-classify. Nothing else is
/// read. For a dashboard's once-a-second tick.
pub fn rejudge(b: &mut Batch, sys: &Sys, now: Now) {
    if let Some(l) = b.lease.as_mut() {
        l.times = fs::metadata(&l.path).ok().map(|m| FileTimes::of(&m));
        l.holder.judgement = liveness::judge(&l.doc, l.times, &mut || now, sys, true).ok();
    }
    classify(b, now);
}

/// Give a read batch its one state, flags and note.
pub fn classify(b: &mut Batch, now: Now) {
    let _ = now;
    b.flags.clear();
    if !b.temp_files.is_empty() {
        b.flags.push(Flag::TempFiles);
    }
    if b.lease.is_none() && !b.done_marks.is_empty() {
        b.flags.push(Flag::LeftoverDone);
    }
    if b.lease.iter().chain(&b.orphans).any(|l| !l.refused_paths.is_empty()) {
        b.flags.push(Flag::PathsOutside);
    }
    let latest = b.records.first();
    if !b.unreadable.is_empty() {
        b.state = State::Unreadable;
        let u = &b.unreadable[0];
        b.note =
            format!("{}: {}", u.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), u.why);
        b.run_id = b.lease.as_ref().map(|l| l.holder.run_id.clone());
        return;
    }
    if let Some(l) = &b.lease {
        b.run_id = Some(l.holder.run_id.clone()).filter(|r| !r.is_empty());
        let j = l.holder.judgement.as_ref();
        let dead = j.is_some_and(|j| j.dead);
        if j.is_some_and(|j| j.stalled) {
            b.flags.push(Flag::Stalled);
        }
        if j.and_then(|j| j.age).is_some_and(|a| a.clock_behind.is_some()) {
            b.flags.push(Flag::ClockBehind);
        }
        if j.and_then(|j| j.age).is_some_and(|a| a.clock == crate::sys::ClockSource::Local) {
            b.flags.push(Flag::LocalClock);
        }
        if l.committed {
            b.flags.push(Flag::Committed);
        }
        if l.doc.0.is_empty() {
            b.flags.push(Flag::NotJson);
        }

        if !l.replaces.is_empty() {
            b.flags.push(Flag::Replaces);
        }
        let claims: usize = l.outputs.iter().map(|o| o.claims.len()).sum();
        let present: usize = l.outputs.iter().map(|o| o.claims.iter().filter(|c| c.present).count()).sum();
        let replaced: usize = l.replaces.iter().map(|(_, f)| f.iter().filter(|c| c.present).count()).sum();
        let (state, note) = if l.committed && dead {
            let todo = if replaced > 0 {
                format!("{replaced} replaced file(s) still to remove")
            } else if b.finished.as_ref().and_then(|f| f.run_id.as_deref()) != Some(l.holder.run_id.as_str())
                && !l.outputs.is_empty()
            {
                "its finished note still to write".to_string()
            } else {
                "its release still to do".to_string()
            };
            (State::Pending, format!("committed, holder gone: {todo}"))
        } else if l.kept {
            if !dead {
                b.flags.push(Flag::HolderAlive);
            }
            let what = if l.committed { "file(s) of the run it replaced" } else { "claimed file(s)" };
            (State::Kept, format!("run ended and kept its lease: {} {what} it could not remove", present.max(replaced)))
        } else if l.tombstoned {
            (State::HandedBack, format!("takeover refused: {present} claimed file(s) could not be removed"))
        } else if l.committed {
            (State::Live, "committing".into())
        } else if dead {
            (State::Dead, format!("{}; {present} of {claims} claimed file(s) present", verdict_short(j)))
        } else {
            let age = j.and_then(|j| j.age).map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
            if l.doc.0.is_empty() {
                (
                    State::Live,
                    format!("empty or not JSON, written {age} ago: held until 15 min old, as the peer judges"),
                )
            } else if j.is_some_and(|j| j.stalled) {
                (State::Live, format!("stalled: lease not written for {age}"))
            } else {
                (State::Live, format!("running; lease written {age} ago"))
            }
        };
        b.state = state;
        b.note = note;
        return;
    }
    if let Some(o) = b.orphans.first() {
        b.state = State::Orphan;
        b.run_id = Some(o.holder.run_id.clone()).filter(|r| !r.is_empty());
        let present: usize =
            b.orphans.iter().flat_map(|o| &o.outputs).map(|o| o.claims.iter().filter(|c| c.present).count()).sum();
        b.note = format!("a dead run's lease left beside the lease: {present} claimed file(s) to take back");
        return;
    }
    let note_time = b.finished.as_ref().and_then(|f| f.finished_at.clone());
    let newer_record = latest.filter(|r| match (&r.started_at, &note_time) {
        (Some(s), Some(n)) => crate::timefmt::parse(s) > crate::timefmt::parse(n),
        _ => b.finished.is_none(),
    });
    match newer_record.and_then(|r| r.status.as_deref().map(|s| (r, s))) {
        Some((r, "interrupted")) => {
            b.state = State::Interrupted;
            b.run_id = Some(r.run_id.clone());
            b.note = r.error.clone().unwrap_or_else(|| "interrupted".into());
        }
        Some((r, "error")) => {
            b.state = State::Failed;
            b.run_id = Some(r.run_id.clone());
            b.note = r.error.clone().unwrap_or_else(|| "failed".into());
        }
        Some((r, "running")) => {
            // A record says running, yet no lease holds the batch: the run died
            // without one (leases off) or the record was never marked.
            b.state = State::Interrupted;
            b.run_id = Some(r.run_id.clone());
            b.note = "its record says running, but no lease holds the batch".into();
        }
        _ => {
            b.state = State::Finished;
            match &b.finished {
                Some(f) => {
                    b.run_id = f.run_id.clone();
                    b.note = format!("finished at {}", f.finished_at.clone().unwrap_or_default());
                }
                None => {
                    b.run_id = latest.map(|r| r.run_id.clone());
                    b.note = "finished (no note: the batch is not named, or predates notes)".into();
                }
            }
        }
    }
}

/// A short verdict of a dead lease.
fn verdict_short(j: Option<&Judgement>) -> String {
    let Some(j) = j else { return "damaged".into() };
    let age = j.age.map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
    match &j.why {
        Why::ProcessGone { pid } => format!("process {pid} gone (this host)"),
        Why::PidReused { pid, .. } => format!("pid {pid} reused by another process (this host)"),
        Why::OwnKeptLease { .. } => "kept by this process's own earlier run".into(),
        Why::Stale { .. } => format!("lease untouched for {age}"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("demo/*", "demo/sales/ingest"));
        assert!(glob_match("*/ingest", "demo/sales/ingest"));
        assert!(glob_match("demo/sales/ingest", "demo/sales/ingest"));
        assert!(glob_match("d*o/*/in*t", "demo/sales/ingest"));
        assert!(!glob_match("demo/sales", "demo/sales/ingest"));
        assert!(!glob_match("x*", "demo"));
    }

    #[test]
    fn states_have_words() {
        for s in State::ALL {
            assert_eq!(State::parse(s.word()), Some(s));
        }
    }
}
