//! The lease one run holds on its batch: acquire, takeover, ownership, saves, the
//! heartbeat and release, in the peer's order (FORMAT.md §5–7).
//!
//! [`RunLease`] is this module's, with every method it has, in one tree:
//! acquiring and taking over in `acquire.rs`, saving (in place where it can be)
//! in `write.rs`, outputs and claims in `claims.rs`, recovery of a dead run in
//! `recover.rs`, the finished check, commit and the end of a run in
//! `finished.rs`. What recovering a dead run will do is decided, without a
//! lease, in [`recovery_plan`] (what `explain`, `--dry-run` and a takeover all
//! go by). The lease's shared state and its one `lock` are here; the
//! submodules reach them as their parent's, and nothing outside sees them.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use crate::beneath::Beneath;
use crate::documents::{self, LeaseDoc, Parsed};
use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::fsx;
use crate::layout::{LeasePaths, TaskPath};
use crate::sys::{Step, Sys};
use crate::timefmt;
use crate::vars::Variables;

mod acquire;
mod claims;
mod finished;
mod recover;
pub mod recovery_plan;
mod write;

pub use claims::Rollback;
pub use finished::{Commit, Ended, FinishedCheck};
pub use recover::Recovery;

/// What a run asks a lease for.
#[derive(Clone, Debug)]
pub struct LeaseSpec {
    /// The use-case folder (`-d`); resolved, it is the peer's `<root>`.
    pub usecase_dir: PathBuf,
    /// The task: `<usecase>/<package>/<task>`.
    pub task: TaskPath,
    /// The batch's variables, which its key hashes.
    pub variables: Variables,
    /// This run's id (the CLI's is a uuid4): what the lease, marks and record name.
    pub run_id: String,
    /// Where run records are (`<dir>/<task>/<run_id>.json`); default
    /// `<root>/.ubunye/lineage`.
    pub lineage_dir: Option<PathBuf>,
    /// Who takes a dead run over, for its record's note: None for a run (the
    /// peer's wording), `Some("ubunye leases takeover")` for a repair.
    pub actor: Option<String>,
    /// A repair knows the batch by its key, not always by its variables: the key,
    /// and whether the batch is named (None: unknown, taken as named, so that a
    /// finished run's note is written; an unnamed batch never reads one).
    pub key: Option<(String, Option<bool>)>,
}

impl LeaseSpec {
    /// What a run asks for: records in `<root>/.ubunye/lineage`, the key from
    /// the variables.
    pub fn new(
        usecase_dir: impl Into<PathBuf>,
        task: TaskPath,
        variables: Variables,
        run_id: impl Into<String>,
    ) -> LeaseSpec {
        LeaseSpec {
            usecase_dir: usecase_dir.into(),
            task,
            variables,
            run_id: run_id.into(),
            lineage_dir: None,
            actor: None,
            key: None,
        }
    }
}

/// What acquiring did besides taking the lease.
#[derive(Debug, Default, Serialize)]
pub struct Acquired {
    /// The dead run this run took over, and what was done for it.
    pub took_over: Option<Recovery>,
    /// Dead leases left beside the lease (orphans) that were recovered.
    pub adopted: Vec<Recovery>,
    /// Takeover tombstones older than 7 days that were removed.
    pub expired_tombstones: Vec<PathBuf>,
    /// Temp files of the batch's lease folder left by a dead run's killed
    /// save, removed after a takeover.
    pub temps_removed: Vec<PathBuf>,
}

struct State {
    doc: LeaseDoc,
    /// The in-place window for per-file claims, while the lease file is the one
    /// this run last wrote (see [`Shared::append_claims`]).
    tail: Option<Tail>,
    /// Claims (or replaced files) that could not be removed: the lease is kept.
    left: Vec<(String, Vec<String>)>,
    /// What this run itself did (files moved in, swaps made): its own rollback
    /// undoes only that.
    own: claims::Own,
    /// Handles on the new folders of this run's overwrites, kept open until the
    /// run ends so that their inode numbers cannot be handed to other folders.
    held: Vec<std::os::fd::OwnedFd>,
    /// The finished note could not be written: the lease is kept.
    keep: bool,
}

/// The lease file this run last wrote, kept open so that small changes can be
/// written into it in place (see [`Shared::append_claims`]).
struct Tail {
    file: fs::File,
    ino: u64,
    dev: u64,
    /// Its length.
    len: u64,
    /// Whitespace reserved inside one output's `claimed` list, if any.
    window: Option<Window>,
}

/// Where further claims of one output go in the lease file.
struct Window {
    output: String,
    /// Where the next item goes (just after the last claim, or after `[`).
    at: u64,
    /// Where the reserved whitespace ends (the list's `]`).
    end: u64,
    /// The list is empty: the next item has no leading `, `.
    empty: bool,
}

struct Shared {
    task: TaskPath,
    key: String,
    named: bool,
    run_id: String,
    paths: LeasePaths,
    lineage_dir: PathBuf,
    beneath: Beneath,
    sys: Sys,
    actor: Option<String>,
    in_place: bool,
    /// A handle on the lease folder, and this run's tombstone name in it.
    dir_fd: Option<std::os::fd::OwnedFd>,
    tomb_name: String,
    state: Mutex<State>,
    stop: Mutex<bool>,
    stop_cv: Condvar,
}

/// The lease of one run on one batch.
pub struct RunLease {
    s: Arc<Shared>,
    beat: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for RunLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLease")
            .field("task", &self.s.task)
            .field("key", &self.s.key)
            .field("run_id", &self.s.run_id)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unreadable(task: &TaskPath, path: &Path, why: impl std::fmt::Display) -> Error {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Refusal::new(
        RefusalKind::Unreadable,
        format!("{name} for {task} exists but cannot be read ({why}), so Ubunye cannot tell what it says. Nothing was run or taken back."),
    )
    .with("File", path.display())
    .hint("Close whatever holds it (a backup, a scanner, a file permission), then run again. If it is damaged, check it before removing it: it may list another run's files.")
    .into()
}

impl Shared {
    fn lease_path(&self) -> PathBuf {
        self.paths.lease()
    }

    fn busy(&self) -> Duration {
        self.sys.timing.busy_for
    }

    fn now_z(&self) -> String {
        timefmt::utc_z(self.sys.clock.now())
    }

    /// The lease as the peer's `_read`: None when missing, an empty document when
    /// it cannot be read or parsed right now.
    fn read_current(&self) -> Option<LeaseDoc> {
        match fsx::read_patient(&self.lease_path(), self.busy()) {
            Ok(None) => None,
            Ok(Some(b)) => Some(documents::parse_doc(&b).map(LeaseDoc::from_parsed).unwrap_or_default()),
            Err(_) => Some(LeaseDoc::default()),
        }
    }

    fn tombstoned(&self) -> bool {
        // Through a handle on the lease folder when there is one: this is checked
        // once per landed file.
        match &self.dir_fd {
            Some(fd) => !matches!(
                rustix::fs::statat(fd, self.tomb_name.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW),
                Err(rustix::io::Errno::NOENT)
            ),
            None => fsx::exists(&self.paths.taken(&self.run_id)),
        }
    }

    /// True: the lease is this run's. False: gone, another run's, or this run was
    /// taken over. None: cannot tell right now.
    fn owner(&self) -> Option<bool> {
        if self.tombstoned() {
            return Some(false);
        }
        for _ in 0..5 {
            // The run id comes first in every lease either engine writes: the
            // first 4 KiB decide, without reading claims by the thousand.
            match fsx::read_head_patient(&self.lease_path(), 4096, self.busy()) {
                Err(_) => return None,
                Ok(None) => return Some(false),
                Ok(Some((head, whole))) => {
                    if let Some(is_ours) = owner_by_head(&head, &self.run_id) {
                        return Some(is_ours);
                    }
                    let full = if whole { Ok(Some(head)) } else { fsx::read_patient(&self.lease_path(), self.busy()) };
                    match full {
                        Err(_) => return None,
                        Ok(None) => return Some(false),
                        Ok(Some(b)) => {
                            if let Some(is_ours) = owner_of(&b, &self.run_id) {
                                return Some(is_ours);
                            }
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    fn lost(&self) -> Error {
        Refusal::new(
            RefusalKind::Lost,
            format!(
                "Run {} no longer holds the lease on {} (or could not record in it); it stops before writing more.",
                documents::short(&self.run_id),
                self.task
            ),
        )
        .with("Lease", self.lease_path().display())
        .into()
    }

    fn stopped(&self) -> bool {
        *lock(&self.stop)
    }

    fn stop(&self) {
        *lock(&self.stop) = true;
        self.stop_cv.notify_all();
    }

    /// Every path a lease names must resolve beneath the use-case folder: the
    /// engine refuses, removing nothing, rather than follow one out.
    fn check_paths(&self, d: &LeaseDoc, file: &Path) -> Result<()> {
        let paths = d.paths().map_err(|e| unreadable(&self.task, file, e))?;
        for p in paths {
            if let Err(r) = self.beneath.resolve(&p).and_then(|_| self.beneath.check_walk(&p)) {
                return Err(outside_refusal(&self.task, file, &r));
            }
        }
        for n in d.notes().unwrap_or_default() {
            if let Some(st) = &n.staging {
                let name = st.rsplit('/').next().unwrap_or_default();
                if !crate::beneath::is_staging_name(name) {
                    return Err(outside_refusal(
                        &self.task,
                        file,
                        &crate::beneath::PathRefusal::NotStaging { path: st.clone() },
                    ));
                }
            }
        }
        // An overwrite's old copy moved aside (`ubunye exec` without an exchange).
        for note in d.0.get("outputs").and_then(serde_json::Value::as_object).into_iter().flat_map(|m| m.values()) {
            let Some(Ok(crate::documents::SwapNote { old: Some(old), .. })) =
                note.as_object().and_then(crate::documents::swap_note)
            else {
                continue;
            };
            if let Err(r) = self.beneath.resolve(&old).and_then(|_| self.beneath.check_walk(&old)) {
                return Err(outside_refusal(&self.task, file, &r));
            }
        }
        Ok(())
    }
}

fn outside_refusal(task: &TaskPath, file: &Path, r: &crate::beneath::PathRefusal) -> Error {
    Refusal::new(
        RefusalKind::Outside,
        format!("{} for {task} names a path Ubunye will not remove: {r}. Nothing was run or taken back.", file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
    )
    .with("File", file.display())
    .hint("The peer engine would delete it; this one only removes files beneath the use-case folder. Check that path by hand, then repair the batch (see `ubunye leases explain`).")
    .into()
}

/// Whose lease this is, from the first bytes only: `{"run_id": "<id>", ...`, as
/// both engines write it. None when the start is anything else.
fn owner_by_head(head: &[u8], run_id: &str) -> Option<bool> {
    let rest = head.strip_prefix(b"{\"run_id\": \"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"' && rest.get(end + 1) == Some(&b',')).then(|| &rest[..end] == run_id.as_bytes())
}

/// Whose lease these bytes are, from its `run_id`: None when it is empty or not
/// JSON (a lease being put back by a create) or cannot be read faithfully.
fn owner_of(bytes: &[u8], run_id: &str) -> Option<bool> {
    // Fast path: both engines write `run_id` first. A lease that does not start
    // the usual way is parsed in full.
    let prefix = b"{\"run_id\": \"";
    if let Some(rest) = bytes.strip_prefix(prefix)
        && let Some(end) = rest.iter().position(|&b| b == b'"' || b == b'\\')
        && rest[end] == b'"'
        && rest.get(end + 1) == Some(&b',')
        && !contains(&rest[end..], b"\"run_id\"")
    {
        return Some(&rest[..end] == run_id.as_bytes());
    }
    match documents::parse_doc(bytes) {
        Ok(Parsed::Doc(m)) if !m.is_empty() => Some(LeaseDoc(m).is_run(run_id)),
        _ => None,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

impl RunLease {
    /// The batch key (16 hex digits).
    pub fn key(&self) -> &str {
        &self.s.key
    }
    /// This run's id.
    pub fn run_id(&self) -> &str {
        &self.s.run_id
    }
    /// The task: `<usecase>/<package>/<task>`.
    pub fn task(&self) -> &TaskPath {
        &self.s.task
    }
    /// Whether the variables name a batch (only named batches get a finished note).
    pub fn named(&self) -> bool {
        self.s.named
    }
    /// The lease file.
    pub fn path(&self) -> PathBuf {
        self.s.lease_path()
    }
    /// The names of the batch's files in its lease folder.
    pub fn paths(&self) -> &LeasePaths {
        &self.s.paths
    }
    /// The resolved use-case folder.
    pub fn root(&self) -> &Path {
        self.s.beneath.root()
    }
    /// The folder of run records (`<dir>/<task>/<run_id>.json`).
    pub fn lineage_dir(&self) -> &Path {
        &self.s.lineage_dir
    }
    /// The lease document as this run last wrote it.
    pub fn doc(&self) -> LeaseDoc {
        lock(&self.s.state).doc.clone()
    }
    /// Report a step to the test hook (writers report [`Step::Moved`]).
    pub fn step(&self, step: Step) {
        self.s.sys.hook.at(step)
    }
    /// Whether the heartbeat thread has been told to stop.
    pub fn heartbeat_stopped(&self) -> bool {
        self.s.stopped()
    }
    /// Whether the lease is still this run's (checked before success is recorded).
    pub fn still_owned(&self) -> bool {
        self.s.owner() != Some(false)
    }
    /// Why this run may not record success, or None: the peer's `lost()`.
    pub fn lost_note(&self) -> Option<String> {
        if self.still_owned() {
            return None;
        }
        Some(format!(
            "Run {} lost its lease on {} to another run (it was judged dead). That run takes back what this one appended and writes the batch itself: check its record before running the batch again.",
            documents::short(&self.s.run_id),
            self.s.task
        ))
    }
}

impl Drop for RunLease {
    fn drop(&mut self) {
        self.s.stop();
        if let Some(h) = lock(&self.beat).take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::owner_of;

    #[test]
    fn owner_fast_path_agrees_with_the_full_parse() {
        let cases: &[(&str, Option<bool>)] = &[
            (r#"{"run_id": "abc", "task": "t"}"#, Some(true)),
            (r#"{"run_id": "abd", "task": "t"}"#, Some(false)),
            (r#"{"task": "t", "run_id": "abc"}"#, Some(true)),
            (r#"{"run_id": "x", "a": 1, "run_id": "abc"}"#, Some(true)),
            (r#"{"run_id": "ab\u0063", "task": "t"}"#, Some(true)),
            (r#"{}"#, None),
            (r#""#, None),
            (r#"{"run_id": "abc""#, None),
        ];
        for (text, want) in cases {
            assert_eq!(owner_of(text.as_bytes(), "abc"), *want, "{text}");
        }
    }
}
