//! The state model: every batch of a use case, read from its lease folder and
//! run records, with the engine's own judgement of each lease and exactly one
//! primary state. No printing: the CLI and the dashboard render it.
//!
//! Severity, most urgent first: unreadable, damaged, dead, orphan, pending, handed-back,
//! kept, live, interrupted, failed, finished.

mod by_run;
mod classify;
pub mod days;
mod history;
mod index;
mod locate;
mod one;
mod read;
mod record;
mod scan;
pub mod staging;
pub mod store;
mod var_filter;

use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use crate::documents::LeaseDoc;
use crate::liveness::{FileTimes, Judgement};
use crate::sys::Now;

pub use by_run::{RUN_PREFIX, may_be_run_id};
pub use classify::{classify, rejudge};
pub use history::{Happened, HistoryEntry};
pub use locate::{Located, locate};
pub use one::scan_one;
pub use read::{note_of, record_key, task_dirs};
pub use record::{read_record, record_of};
pub use scan::{
    BatchId, Found, ScanHead, file_records, find, head, scan, scan_batch, scan_named_tasks, scan_tasks, shorten,
    task_clock,
};
pub use var_filter::VarFilter;

/// A batch's one primary state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// A lease, orphan or note exists but cannot be read or parsed.
    Unreadable,
    /// The lease is empty or not JSON (torn by a crash, or written by hand):
    /// it names no run and no claims. The engines take it over by its age
    /// (15 minutes by the disk's clock), as the Python engine does.
    Damaged,
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
    /// Its place in [`State::ALL`], most severe first (0: unreadable): the
    /// order of a listing.
    pub const fn rank(self) -> usize {
        self as usize
    }

    /// Every state, most severe first: the order a scan sorts by.
    pub const ALL: [State; 11] = [
        State::Unreadable,
        State::Damaged,
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

    /// The one-character sign `leases list` and `top` show before the word.
    pub fn glyph(self) -> &'static str {
        match self {
            State::Unreadable => "?",
            State::Damaged => "≠",
            State::Dead => "✖",
            State::Orphan => "◌",
            State::Pending => "◔",
            State::HandedBack => "↩",
            State::Kept => "⚑",
            State::Live => "●",
            State::Interrupted => "◐",
            State::Failed => "✗",
            State::Finished => "✓",
        }
    }

    /// The word used on screen, in JSON and in `--state`.
    pub fn word(self) -> &'static str {
        match self {
            State::Unreadable => "unreadable",
            State::Damaged => "damaged",
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

    /// The state a `--state` word names; None for any other word.
    pub fn parse(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|st| st.word() == s)
    }

    /// What the state asks of the person looking: the one table both the CLI
    /// and the dashboard colour by.
    pub const fn tone(self) -> Tone {
        match self {
            State::Dead | State::Orphan => Tone::Repair,
            State::Unreadable | State::Damaged => Tone::Look,
            State::Pending | State::HandedBack | State::Kept => Tone::Attend,
            State::Live => Tone::Running,
            State::Interrupted => Tone::Redo,
            State::Failed => Tone::Failed,
            State::Finished => Tone::Done,
        }
    }
}

impl Tone {
    /// The tone of a run record's status: that of the state it leaves the
    /// batch in (a status the engine does not write, or none, asks a look).
    pub fn of_record(status: Option<&str>) -> Tone {
        match status {
            Some("success") => State::Finished.tone(),
            Some("running") => State::Live.tone(),
            Some("interrupted") => State::Interrupted.tone(),
            Some("error") => State::Failed.tone(),
            _ => State::Unreadable.tone(),
        }
    }
}

/// What a state asks of the person looking, for front ends to colour by
/// (each its own way: the terminal's named colours, readable on light and
/// dark themes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// A takeover is needed (dead, orphan): red, bold.
    Repair,
    /// It cannot be told: look at the file (unreadable): yellow, bold.
    Look,
    /// A finish or a look is needed (pending, handed back, kept): yellow.
    Attend,
    /// Running (live): green.
    Running,
    /// Its next run redoes it (interrupted): cyan.
    Redo,
    /// Its run failed and was taken back: magenta, not the red of dead.
    Failed,
    /// Nothing to do (finished): the terminal's own colour.
    Done,
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
    /// A run record of the batch exists but cannot be parsed (half-written):
    /// its status is not known; repairs leave it as it is.
    DamagedRecord,
    /// Files named after the batch's key that this engine does not know.
    UnknownFiles,
    /// Files of the batch that cannot be read but decide nothing now (a
    /// finished note beside a lease, the record of a run already taken
    /// over): named in the note and in `unreadable`.
    UnreadableFiles,
}

impl Flag {
    /// Every flag, in order.
    pub const ALL: [Flag; 13] = [
        Flag::Stalled,
        Flag::ClockBehind,
        Flag::HolderAlive,
        Flag::Committed,
        Flag::Replaces,
        Flag::LeftoverDone,
        Flag::TempFiles,
        Flag::PathsOutside,
        Flag::LocalClock,
        Flag::NotJson,
        Flag::DamagedRecord,
        Flag::UnknownFiles,
        Flag::UnreadableFiles,
    ];

    /// Its word in JSON (`stalled`, `clock-behind`, ...).
    pub fn word(self) -> &'static str {
        match self {
            Flag::Stalled => "stalled",
            Flag::ClockBehind => "clock-behind",
            Flag::HolderAlive => "holder-alive",
            Flag::Committed => "committed",
            Flag::Replaces => "replaces",
            Flag::LeftoverDone => "leftover-done",
            Flag::TempFiles => "temp-files",
            Flag::PathsOutside => "paths-outside",
            Flag::LocalClock => "local-clock",
            Flag::NotJson => "not-json",
            Flag::DamagedRecord => "damaged-record",
            Flag::UnknownFiles => "unknown-files",
            Flag::UnreadableFiles => "unreadable-files",
        }
    }
}

/// Who holds a lease.
#[derive(Clone, Debug, Serialize)]
pub struct Holder {
    /// The holding run (`run_id`); empty when the lease names none.
    pub run_id: String,
    /// The holder's process id (`pid`, read as Python's `int()` reads it); None
    /// when the lease has none.
    pub pid: Option<i64>,
    /// The holder's host string (`host`): `<hostname>|<pid namespace>`, as the
    /// peer writes it.
    pub host: Option<String>,
    /// When the holder took the lease (`started_at`, UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    pub started_at: Option<String>,
    /// The lease's `heartbeat` (epoch seconds): shown only; age is judged by
    /// the file's mtime.
    pub heartbeat: Option<f64>,
    /// The engine's judgement; None for an orphan, dead by being one (a lease
    /// whose `pid` is damaged is `unreadable`, never judged).
    pub judgement: Option<Judgement>,
}

/// One claimed (or replaced) file and whether it is there.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimInfo {
    /// The claimed path, as the lease writes it (relative to the use case).
    pub claim: String,
    /// Whether a file (or symlink) is there now.
    pub present: bool,
    /// Its size in bytes, when a file is there.
    pub size: Option<u64>,
    /// A folder stands where the claimed file should be: no engine removes
    /// it (a run claims files, never folders), so a takeover is refused
    /// until it is moved by hand.
    #[serde(skip_serializing_if = "is_false")]
    pub folder: bool,
}

/// One output note.
#[derive(Clone, Debug, Serialize)]
pub struct OutputInfo {
    /// The output's name (its key in the lease's `outputs`).
    pub name: String,
    /// The output appends (`appends`); else the run overwrites it.
    pub appends: bool,
    /// The backend claims its files exactly (`exact`): pandas always, Spark
    /// once it has a staging folder.
    pub exact: bool,
    /// The lease's own word for it (`writing`, `done`), when it has one.
    pub state: Option<String>,
    /// Its staging folder (`staging`), as the lease writes it: `_ubunye-<12hex>`
    /// in the output, or `.<name>.ubunye-<12hex>` beside it.
    pub staging: Option<String>,
    /// Whether that staging folder is there now.
    pub staging_exists: bool,
    /// Its claimed files (`claimed`), each looked up on disk.
    pub claims: Vec<ClaimInfo>,
}

/// A lease (or an orphan) as read.
#[derive(Clone, Debug, Serialize)]
pub struct LeaseInfo {
    /// The lease file (`<key>.json`, or an orphan's `<key>.dead-<8hex>.json`).
    pub path: PathBuf,
    /// The document as read, kept for judging it again and for repairs.
    #[serde(skip)]
    pub doc: LeaseDoc,
    /// The file's mtime and ctime when read; None when it could not be stat'ed.
    #[serde(skip)]
    pub times: Option<FileTimes>,
    /// The run that holds it, and the engine's judgement of that run.
    pub holder: Holder,
    /// `committed: true`: its run got to commit (FORMAT.md §10).
    pub committed: bool,
    /// `kept: true`: its run ended and left the lease for the next run to clean
    /// up (FORMAT.md §9).
    pub kept: bool,
    /// Its output notes (`outputs`), in the lease's order.
    pub outputs: Vec<OutputInfo>,
    /// Files of the finished run a `--rerun` replaces (`replaces`), by output.
    pub replaces: Vec<(String, Vec<ClaimInfo>)>,
    /// A takeover mark for its own run is beside it.
    pub tombstoned: bool,
    /// Paths it names that this engine will not remove, each with the reason
    /// (outside the use case, through a symlinked folder, not a staging name).
    pub refused_paths: Vec<String>,
    /// When the file is empty or not a JSON object: its size and how it
    /// starts (`29 bytes: {"run_id": "57f0…`), what a damaged lease's note
    /// shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_json: Option<String>,
}

/// A marker file: a done mark or a takeover tombstone.
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    /// The run the mark names (after `.done-` or `.taken-`); empty for
    /// `<key>.taken-`.
    pub run_id: String,
    /// The mark's file.
    pub path: PathBuf,
    /// The file's mtime (when the mark was left); None when it could not be read.
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
    /// The note's file (`<key>.finished.json`).
    pub path: PathBuf,
    /// The run that finished the batch (`run_id`).
    pub run_id: Option<String>,
    /// When it finished (`finished_at`, UTC, `YYYY-MM-DDTHH:MM:SSZ`), as the
    /// note writes it.
    pub finished_at: Option<String>,
    /// (output, claimed files, staged)
    pub outputs: Vec<(String, Vec<String>, bool)>,
}

/// A run record, as far as the state needs it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordInfo {
    /// The record's `run_id`, or its file's name without `.json` when it has none.
    pub run_id: String,
    /// The record's file (`<lineage>/<task>/<run_id>.json`).
    pub path: PathBuf,
    /// Its `status`: `running`, `success`, `error` or `interrupted` (any other
    /// word kept as it is).
    pub status: Option<String>,
    /// When its run started (`started_at`: ISO 8601 with microseconds and `+00:00`).
    pub started_at: Option<String>,
    /// When its run ended (`ended_at`); None while it runs.
    pub ended_at: Option<String>,
    /// Its `error`: the exception, or the note a taker or a lost run wrote.
    pub error: Option<String>,
    /// The backend that ran it (`backend`: `pandas`, `spark`, `exec`, ...).
    pub backend: Option<String>,
    /// Set when the record exists and was read, but is not a JSON object
    /// (half-written when its run died, or changed by hand): why. Its status
    /// is then not known. The engine, like the peer, goes ahead past it and
    /// leaves it as it is; every surface names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
    /// Its variables. In a scan, None when they hash to the batch's key: then
    /// they are the batch's, kept there once.
    #[serde(skip)]
    pub variables: Option<serde_json::Map<String, Value>>,
    /// Where its outputs went: (`outputs[].name`, `outputs[].location`).
    #[serde(skip)]
    pub locations: Vec<(String, String)>,
}

impl RecordInfo {
    /// Whether its run wrote its own end: `ended_at` set, and the status
    /// `success`, `error` or `interrupted`. The peer writes a record in place
    /// when its task starts (`running`) and when it ends (its FORMAT.md,
    /// sections 5 and 11); a taker marks a `running` record `interrupted` by
    /// a rename and leaves `ended_at` null, and the run it took from may still
    /// write its end in place after that. A record whose run wrote
    /// its end is not written by that run again; the peer's `Engine` can use
    /// a run id again (a notebook running a task twice) and start the record
    /// anew in place, so a reader that stops watching a final record must
    /// still look at it now and then. A damaged record (half-written), one
    /// without a status, or of a word no engine writes, is not final.
    pub fn is_final(&self) -> bool {
        self.damaged.is_none()
            && self.ended_at.is_some()
            && matches!(self.status.as_deref(), Some("success" | "error" | "interrupted"))
    }
}

/// What kind of file a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// A lease (`<key>.json`).
    Lease,
    /// A dead run's lease renamed aside (`<key>.dead-<8hex>.json`).
    Orphan,
    /// A finished note.
    Note,
    /// A run record (`<run_id>.json` in the lineage folder).
    Record,
    /// A folder that cannot be listed, or one where no folder belongs.
    Folder,
    /// Any other file.
    Other,
}

impl FileKind {
    /// The kind of file at `path`, by its name and place.
    pub fn of(path: &std::path::Path) -> FileKind {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match crate::layout::classify(&name) {
            crate::layout::Entry::Lease { .. } => FileKind::Lease,
            crate::layout::Entry::Dead { .. } => FileKind::Orphan,
            crate::layout::Entry::Finished { .. } => FileKind::Note,
            // A `.json` in a lease folder that is no lease, note or dead
            // lease is no run record either.
            _ if name.ends_with(".json") && !path.to_string_lossy().contains("/.ubunye/leases/") => FileKind::Record,
            _ if path.is_dir() => FileKind::Folder,
            _ => FileKind::Other,
        }
    }

    /// The word used in text: "lease", "run record", ...
    pub fn word(self) -> &'static str {
        match self {
            FileKind::Lease => "lease",
            FileKind::Orphan => "dead run's lease",
            FileKind::Note => "finished note",
            FileKind::Record => "run record",
            FileKind::Folder => "folder",
            FileKind::Other => "file",
        }
    }
}

/// A file that exists and cannot be read.
#[derive(Clone, Debug, Serialize)]
pub struct UnreadableFile {
    /// The file or folder.
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// What kind of file it is, by its name and place.
    pub kind: FileKind,
    /// Why it cannot be read (the error, or what is wrong with it), in words.
    pub why: String,
    /// Readable, but where no engine looks (a lease-folder file at the wrong
    /// depth, a name that is not UTF-8): `misplaced` in doctor's findings.
    #[serde(skip_serializing_if = "is_false")]
    pub misplaced: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A path as JSON even when it is not UTF-8 (a reported problem often is one):
/// serde refuses such a path, which would cut a JSON document short.
pub fn lossy_path<S: serde::Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

impl UnreadableFile {
    /// A file or folder that cannot be read or listed.
    pub fn new(path: &std::path::Path, why: impl Into<String>) -> UnreadableFile {
        UnreadableFile { path: path.to_path_buf(), kind: FileKind::of(path), why: why.into(), misplaced: false }
    }

    /// A file or folder where no engine looks.
    pub fn misplaced(path: &std::path::Path, why: impl Into<String>) -> UnreadableFile {
        UnreadableFile { path: path.to_path_buf(), kind: FileKind::of(path), why: why.into(), misplaced: true }
    }
}

/// One batch (task and key) with everything known of it.
#[derive(Clone, Debug, Serialize)]
pub struct Batch {
    /// The task: `<usecase>/<package>/<task>`.
    pub task: String,
    /// The batch key (16 hex digits); `????????????????` for the records whose
    /// batch cannot be told (no variables, or masked ones).
    pub key: String,
    /// Its one primary state.
    pub state: State,
    /// Facts beside the state.
    pub flags: Vec<Flag>,
    /// The batch's variables, from a run record whose variables hash to the key.
    pub variables: Option<serde_json::Map<String, Value>>,
    /// The run this row is about: the lease's, the orphan's, the note's, or the
    /// latest record's.
    pub run_id: Option<String>,
    /// Boxed: most batches of a big use case have none, and a batch is kept
    /// for each of 100,000 batches.
    pub lease: Option<Box<LeaseInfo>>,
    /// Dead runs' leases renamed aside beside it (`<key>.dead-<8hex>.json`).
    pub orphans: Vec<LeaseInfo>,
    /// Its `<key>.done-<run>` marks: runs that got to commit.
    pub done_marks: Vec<Mark>,
    /// Its `<key>.taken-<run>` marks: runs taken over (kept 7 days).
    pub tombstones: Vec<Mark>,
    /// Its finished note (`<key>.finished.json`); boxed, as `lease` is.
    pub finished: Option<Box<FinishedInfo>>,
    /// Newest first.
    pub records: Vec<RecordInfo>,
    /// Its files that exist but cannot be read or parsed.
    pub unreadable: Vec<UnreadableFile>,
    /// Temp files (`*.tmp`) of saves killed between the write and the rename.
    pub temp_files: Vec<PathBuf>,
    /// Files named after the batch's key that no engine this one knows
    /// writes (`<key>.tried`, which ubunye-engine 0.9.1 leaves after a failed
    /// run that committed a keyed Delta write): shown, never ignored.
    pub unknown_files: Vec<Mark>,
    /// One line for a table.
    pub note: String,
}

/// Variables as one line: `dt=2025-01-02 mode=DEV`.
pub fn variables_text(vars: &serde_json::Map<String, Value>) -> String {
    vars.iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Batch {
    /// A batch known by its task and key only (nothing read yet).
    pub fn new(task: &str, key: &str) -> Batch {
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
            unknown_files: Vec::new(),
            note: String::new(),
        }
    }

    /// `dt=2025-01-02 mode=DEV`, or None when the variables are not known.
    pub fn variables_text(&self) -> Option<String> {
        self.variables.as_ref().map(variables_text)
    }

    /// The runs its lease, orphans, finished note and marks name (empty ids
    /// left out): the runs whose records are the batch's.
    pub fn named_runs(&self) -> impl Iterator<Item = &str> {
        self.lease
            .as_deref()
            .into_iter()
            .chain(&self.orphans)
            .map(|l| l.holder.run_id.as_str())
            .chain(self.finished.iter().filter_map(|f| f.run_id.as_deref()))
            .chain(self.done_marks.iter().chain(&self.tombstones).map(|m| m.run_id.as_str()))
            .filter(|r| !r.is_empty())
    }

    /// Whether nothing of it is left on disk (a batch read again whose files
    /// all went).
    pub fn is_empty(&self) -> bool {
        self.nothing_readable() && self.unreadable.is_empty()
    }

    /// Whether it has no file that could be read: no lease-folder file, no
    /// record (what it has, if anything, is unreadable).
    pub fn nothing_readable(&self) -> bool {
        self.lease.is_none()
            && self.orphans.is_empty()
            && self.finished.is_none()
            && self.done_marks.is_empty()
            && self.tombstones.is_empty()
            && self.records.is_empty()
            && self.temp_files.is_empty()
            && self.unknown_files.is_empty()
    }

    /// Claims listed by its lease and orphans.
    pub fn claim_count(&self) -> usize {
        self.lease
            .as_deref()
            .into_iter()
            .chain(&self.orphans)
            .map(|l| l.outputs.iter().map(|o| o.claims.len()).sum::<usize>())
            .sum()
    }
}

/// How a scan reads the disk's clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockRead {
    /// Without writing anything (inspection: docs/clock.md).
    #[default]
    Looking,
    /// With a probe file, as a run does: for a repair about to act, which may
    /// write (a file server's clock cannot always be read otherwise).
    Probe,
}

/// Options of a scan.
#[derive(Clone, Debug, Default)]
pub struct ScanOptions {
    /// How the disk's clock is read.
    pub clock: ClockRead,
    /// Where run records are (default `<uc>/.ubunye/lineage`).
    pub lineage_dir: Option<PathBuf>,
    /// Only these tasks: a prefix, or a pattern with `*` ([`task_matches`]).
    pub task_glob: Option<String>,
    /// A folder outside the use case where one batch's read may keep an
    /// index of its task's files ([`index`]): `leases explain`'s, so that it
    /// answers in milliseconds in a task of 10,000 batches. None: the task is
    /// read whole.
    pub index_dir: Option<PathBuf>,
    /// How long a file must have been left alone before the index keeps
    /// its line (None: two minutes, longer than the kernel keeps a page
    /// written through a shared mapping dirty). Tests shorten it.
    pub index_settle: Option<std::time::Duration>,
}

/// A whole use case, read.
#[derive(Clone, Debug, Serialize)]
pub struct Scan {
    /// The use-case folder, resolved (symlinks followed).
    pub root: PathBuf,
    /// The folder run records were read from (default `<uc>/.ubunye/lineage`).
    pub lineage_dir: PathBuf,
    /// The disk's time when the use case was opened, and which clock said it.
    #[serde(skip)]
    pub now: Now,
    /// Its batches, most severe first; empty for a batch read apart.
    pub batches: Vec<Batch>,
    /// Folders that could not be listed.
    pub problems: Vec<UnreadableFile>,
}

/// Why a folder cannot be scanned at all.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The folder does not exist or cannot be resolved: the path and the error.
    #[error("{0} does not exist or cannot be read ({1})")]
    NoFolder(PathBuf, String),
    /// The folder holds no `.ubunye/`: no engine has run in it.
    #[error(
        "{0} has no .ubunye/ folder, so it is not a use-case folder Ubunye has run in. Point -d at the folder you pass to the Python engine's `ubunye run -d` (or to `ubunye exec -d`)."
    )]
    NotAUseCase(PathBuf),
}

/// Whether a task passes a `--task` filter (and the dashboard's `/task:`):
/// the filter is a prefix of the task (`demo`, `demo/sales/`), a pattern
/// that matches it whole (`*/ingest`), or the task as a narrow table
/// shortens it (`d/s/ingest`: each folder by its first letter, the
/// last name whole), so that what a screen showed can be pasted. The one
/// rule for every surface.
pub fn task_matches(filter: &str, task: &str) -> bool {
    glob_match(filter, task) || task.starts_with(filter) || shortened(filter, task)
}

/// `d/s/ingest` for `demo/sales/ingest`, exactly as a narrow table writes
/// it: as many parts, the last the same, each other the first character of
/// the task's. Only that form: a task named whole (`demo/sales/ingest`)
/// never reaches its siblings (`demo/sales_eu/ingest`) this way.
fn shortened(filter: &str, task: &str) -> bool {
    let (f, t): (Vec<&str>, Vec<&str>) = (filter.split('/').collect(), task.split('/').collect());
    f.len() == t.len()
        && f.len() > 1
        && f.last() == t.last()
        && f[..f.len() - 1].iter().zip(&t).all(|(f, t)| f.chars().count() == 1 && t.starts_with(f))
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

#[cfg(test)]
mod tests {

    #[test]
    fn all_is_in_the_order_of_states_and_rank_is_a_place_in_it() {
        assert!(State::ALL.windows(2).all(|w| w[0] < w[1]));
        assert!(State::ALL.iter().enumerate().all(|(i, s)| s.rank() == i));
    }

    use super::*;

    /// `Flag::ALL` holds every flag once, in order, and `word` is its JSON
    /// word (the match below fails to compile when a flag is added).
    #[test]
    fn every_flag_is_in_all_with_its_json_word() {
        fn place(f: Flag) -> usize {
            match f {
                Flag::Stalled => 0,
                Flag::ClockBehind => 1,
                Flag::HolderAlive => 2,
                Flag::Committed => 3,
                Flag::Replaces => 4,
                Flag::LeftoverDone => 5,
                Flag::TempFiles => 6,
                Flag::PathsOutside => 7,
                Flag::LocalClock => 8,
                Flag::NotJson => 9,
                Flag::DamagedRecord => 10,
                Flag::UnknownFiles => 11,
                Flag::UnreadableFiles => 12,
            }
        }
        for (i, f) in Flag::ALL.iter().enumerate() {
            assert_eq!(place(*f), i);
            assert_eq!(serde_json::to_value(f).unwrap(), f.word());
        }
    }

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
    fn a_task_filter_is_a_prefix_or_a_pattern() {
        assert!(task_matches("demo", "demo/sales/ingest"));
        assert!(task_matches("demo/sales/", "demo/sales/ingest"));
        assert!(task_matches("*/ingest", "demo/sales/ingest"));
        assert!(task_matches("demo/sales/ingest", "demo/sales/ingest"));
        assert!(!task_matches("sales", "demo/sales/ingest"));
        assert!(!task_matches("*/summary", "demo/sales/ingest"));
        // As a narrow table shortens it: each folder by its first letter,
        // the last name whole.
        assert!(task_matches("d/s/ingest", "demo/sales/ingest"));
        assert!(!task_matches("dem/sal/ingest", "demo/sales/ingest"));
        // A task named whole reaches no sibling whose names only start so.
        assert!(!task_matches("demo/sales/ingest", "demo/sales_eu/ingest"));
        assert!(!task_matches("demo/sales/ingest", "demo2/salesx/ingest"));
        assert!(!task_matches("d/s/ingest", "demo/sales/ingestion"));
        assert!(!task_matches("d/x/ingest", "demo/sales/ingest"));
        assert!(!task_matches("d//ingest", "demo/sales/ingest"));
        assert!(!task_matches("s/ingest", "demo/sales/ingest"));
    }

    #[test]
    fn states_have_words() {
        for s in State::ALL {
            assert_eq!(State::parse(s.word()), Some(s));
        }
    }
}
