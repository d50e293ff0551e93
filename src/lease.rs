//! The lease one run holds on its batch: acquire, takeover, ownership, saves, the
//! heartbeat and release, in the peer's order (FORMAT.md §5–7).
//!
//! Outputs and claims are in `claims.rs`, recovery of a dead run in `recover.rs`,
//! the finished note, commit and the end of a run in `finished.rs`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use crate::beneath::Beneath;
use crate::doc::{self, LeaseDoc, Parsed};
use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::fsx;
use crate::key::{self, Variables};
use crate::layout::{self, Entry, LeasePaths, TaskPath};
use crate::liveness::{self, FileTimes};
use crate::pyjson;
use crate::recover::{RecoverError, Recovery};
use crate::sys::{Step, Sys};
use crate::timefmt;

/// What a run asks a lease for.
#[derive(Clone, Debug)]
pub struct LeaseSpec {
    /// The use-case folder (`-d`); resolved, it is the peer's `<root>`.
    pub usecase_dir: PathBuf,
    pub task: TaskPath,
    pub variables: Variables,
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
}

pub(crate) struct State {
    pub(crate) doc: LeaseDoc,
    /// The in-place window for per-file claims, while the lease file is the one
    /// this run last wrote (see [`Shared::append_claims`]).
    pub(crate) tail: Option<Tail>,
    /// Claims (or replaced files) that could not be removed: the lease is kept.
    pub(crate) left: Vec<(String, Vec<String>)>,
    /// The identity of each file this run moved in, by claim: taking its own
    /// files back never removes a same-named file someone else put there since.
    pub(crate) moved: std::collections::HashMap<String, crate::beneath::FileId>,
    /// The finished note could not be written: the lease is kept.
    pub(crate) keep: bool,
}

/// The lease file this run last wrote, kept open so that small changes can be
/// written into it in place (see [`Shared::append_claims`]).
pub(crate) struct Tail {
    file: fs::File,
    ino: u64,
    dev: u64,
    /// Its length.
    len: u64,
    /// Whitespace reserved inside one output's `claimed` list, if any.
    window: Option<Window>,
}

/// Where further claims of one output go in the lease file.
pub(crate) struct Window {
    output: String,
    /// Where the next item goes (just after the last claim, or after `[`).
    at: u64,
    /// Where the reserved whitespace ends (the list's `]`).
    end: u64,
    /// The list is empty: the next item has no leading `, `.
    empty: bool,
}

/// File systems where a write within one page reaches the page cache whole or
/// not at all, even when the writer is killed (they write through the kernel's
/// generic_perform_write, which checks for a fatal signal only between pages),
/// and where readers on other hosts cannot see a stale copy: ext2/3/4, XFS, tmpfs.
fn in_place_ok(dir: &Path) -> bool {
    if std::env::var_os("UBUNYE_NO_IN_PLACE").is_some() {
        return false;
    }
    // f_type is i64 here, another integer type on other targets.
    #[allow(clippy::useless_conversion)]
    match rustix::fs::statfs(dir) {
        Ok(st) => matches!(i64::from(st.f_type), 0xEF53 | 0x5846_5342 | 0x0102_1994),
        Err(_) => false,
    }
}

const PAGE: u64 = 4096;

pub(crate) struct Shared {
    pub(crate) task: TaskPath,
    pub(crate) key: String,
    pub(crate) named: bool,
    pub(crate) run_id: String,
    pub(crate) paths: LeasePaths,
    pub(crate) lineage_dir: PathBuf,
    pub(crate) beneath: Beneath,
    pub(crate) sys: Sys,
    pub(crate) actor: Option<String>,
    pub(crate) in_place: bool,
    /// A handle on the lease folder, and this run's tombstone name in it.
    dir_fd: Option<std::os::fd::OwnedFd>,
    tomb_name: String,
    pub(crate) state: Mutex<State>,
    stop: Mutex<bool>,
    stop_cv: Condvar,
}

/// The lease of one run on one batch.
pub struct RunLease {
    pub(crate) s: Arc<Shared>,
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

/// Whether leases are on: `UBUNYE_RUN_LEASE` set to `off`, `0` or `false`
/// (trimmed, any case) turns them off.
pub fn enabled() -> bool {
    let v = std::env::var("UBUNYE_RUN_LEASE").unwrap_or_default();
    !matches!(v.trim().to_lowercase().as_str(), "off" | "0" | "false")
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn unreadable(task: &TaskPath, path: &Path, why: impl std::fmt::Display) -> Error {
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
    pub(crate) fn lease_path(&self) -> PathBuf {
        self.paths.lease()
    }

    fn busy(&self) -> Duration {
        self.sys.timing.busy_for
    }

    pub(crate) fn now_z(&self) -> String {
        timefmt::utc_z(self.sys.clock.now())
    }

    /// The lease as the peer's `_read`: None when missing, an empty document when
    /// it cannot be read or parsed right now.
    pub(crate) fn read_current(&self) -> Option<LeaseDoc> {
        match fsx::read_patient(&self.lease_path(), self.busy()) {
            Ok(None) => None,
            Ok(Some(b)) => Some(doc::parse_doc(&b).map(LeaseDoc::from_parsed).unwrap_or_default()),
            Err(_) => Some(LeaseDoc::default()),
        }
    }

    pub(crate) fn tombstoned(&self) -> bool {
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
    pub(crate) fn owner(&self) -> Option<bool> {
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

    /// Write the lease, only while it is this run's. The caller holds the state
    /// lock. Ok(false): not saved (not ours, refused, or taken over meanwhile).
    pub(crate) fn save(&self, st: &mut State) -> Result<bool> {
        self.save_reserving(st, None)
    }

    /// [`Shared::save`]; with `reserve`, whitespace is left inside that output's
    /// `claimed` list (as much as the lease already weighs, at least 8 KiB), so
    /// that the next claims are written in place instead of rewriting the lease.
    pub(crate) fn save_reserving(&self, st: &mut State, reserve: Option<&str>) -> Result<bool> {
        st.tail = None;
        if self.owner() != Some(true) {
            return Ok(false);
        }
        let path = self.lease_path();
        let (mut text, mark) = match reserve.filter(|_| self.in_place) {
            Some(out) => pyjson::dumps_map_marking(&st.doc.0, pyjson::Style::COMPACT, &["outputs", out, "claimed"]),
            None => (st.doc.to_json(), None),
        };
        let mut window = None;
        if let (Some(out), Some(at)) = (reserve, mark) {
            let pad = text.len().max(8192);
            text.insert_str(at, &" ".repeat(pad));
            let empty = text.as_bytes()[at - 1] == b'[';
            window = Some((out.to_string(), at as u64, (at + pad) as u64, empty));
        }
        match fsx::write_atomic_keep(&path, text.as_bytes(), self.busy()) {
            Ok(Some(file)) => {
                self.sys.hook.at(Step::Saved);
                if let (true, Ok(meta)) = (self.in_place, file.metadata()) {
                    use std::os::unix::fs::MetadataExt;
                    let window = window.map(|(output, at, end, empty)| Window { output, at, end, empty });
                    st.tail = Some(Tail { ino: meta.ino(), dev: meta.dev(), len: text.len() as u64, file, window });
                }
                Ok(!self.tombstoned())
            }
            Ok(None) => Ok(false),
            Err(e) => Err(Error::io("rewrite the lease", path, e)),
        }
    }

    /// Whether the lease file is still the one `tail` was written into.
    fn tail_is_current(&self, tail: &Tail) -> bool {
        use std::os::unix::fs::MetadataExt;
        !self.tombstoned()
            && fs::symlink_metadata(self.lease_path()).is_ok_and(|m| m.ino() == tail.ino && m.dev() == tail.dev)
    }

    /// Per-file claims without rewriting the lease: write `items` (the claims'
    /// JSON strings) into the whitespace reserved in `output`'s `claimed` list, in
    /// one `pwrite` that stays within one page, so a kill leaves the lease with
    /// or without the new claims, never torn. Only while the lease file is still
    /// the one this run wrote (same inode, no takeover mark), checked before and
    /// after the write. None: the window does not apply (the caller saves in
    /// full); Some(false): the lease is no longer this run's.
    pub(crate) fn append_claims(&self, st: &mut State, output: &str, items: &[String]) -> Option<Result<bool>> {
        let tail = st.tail.as_mut()?;
        let w = tail.window.as_ref().filter(|w| w.output == output)?;
        let mut bytes = String::new();
        for (i, item) in items.iter().enumerate() {
            if !(i == 0 && w.empty) {
                bytes.push_str(", ");
            }
            bytes.push_str(item);
        }
        let len = bytes.len() as u64;
        let mut off = w.at;
        if off / PAGE != (off + len - 1) / PAGE {
            off = (off / PAGE + 1) * PAGE;
        }
        if len > PAGE || off + len > w.end {
            return None;
        }
        let r = self.write_in_place(tail, bytes.as_bytes(), off)?;
        if let Some(w) = tail.window.as_mut() {
            w.at = off + len;
            w.empty = false;
        }
        Some(r)
    }

    /// A new top-level field (the doc must not have it yet) written in place at
    /// the end of the lease file, as `json.dumps` would place it: the final `}`
    /// becomes `, "<key>": <value>}`, in one write within one page.
    pub(crate) fn append_field(&self, st: &mut State, key: &str, value: &str) -> Option<Result<bool>> {
        let tail = st.tail.as_mut()?;
        let mut bytes = String::from(", ");
        pyjson::write_str(&mut bytes, key, true);
        bytes.push_str(": ");
        bytes.push_str(value);
        bytes.push('}');
        let off = tail.len.checked_sub(1)?;
        let len = bytes.len() as u64;
        if off / PAGE != (off + len - 1) / PAGE {
            return None;
        }
        let r = self.write_in_place(tail, bytes.as_bytes(), off)?;
        tail.len = off + len;
        Some(r)
    }

    /// One write into the lease file this run last wrote, only while it is still
    /// the lease (checked before and after).
    fn write_in_place(&self, tail: &Tail, bytes: &[u8], off: u64) -> Option<Result<bool>> {
        if !self.tail_is_current(tail) {
            return Some(Ok(false));
        }
        use std::os::unix::fs::FileExt;
        tail.file.write_all_at(bytes, off).ok()?;
        self.sys.hook.at(Step::Saved);
        Some(Ok(self.tail_is_current(tail)))
    }

    pub(crate) fn lost(&self) -> Error {
        Refusal::new(
            RefusalKind::Lost,
            format!(
                "Run {} no longer holds the lease on {} (or could not record in it); it stops before writing more.",
                doc::short(&self.run_id),
                self.task
            ),
        )
        .with("Lease", self.lease_path().display())
        .into()
    }

    fn stopped(&self) -> bool {
        *lock(&self.stop)
    }

    pub(crate) fn stop(&self) {
        *lock(&self.stop) = true;
        self.stop_cv.notify_all();
    }

    /// Every path a lease names must resolve beneath the use-case folder: the
    /// engine refuses, removing nothing, rather than follow one out.
    pub(crate) fn check_paths(&self, d: &LeaseDoc, file: &Path) -> Result<()> {
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
            let Some(Ok(crate::claims::SwapNote { old: Some(old), .. })) =
                note.as_object().and_then(crate::claims::swap_note)
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

pub(crate) fn outside_refusal(task: &TaskPath, file: &Path, r: &crate::beneath::PathRefusal) -> Error {
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
pub(crate) fn owner_by_head(head: &[u8], run_id: &str) -> Option<bool> {
    let rest = head.strip_prefix(b"{\"run_id\": \"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"' && rest.get(end + 1) == Some(&b',')).then(|| &rest[..end] == run_id.as_bytes())
}

/// Whose lease these bytes are, from its `run_id`: None when it is empty or not
/// JSON (a lease being put back by a create) or cannot be read faithfully.
pub(crate) fn owner_of(bytes: &[u8], run_id: &str) -> Option<bool> {
    // Fast path: both engines write `run_id` first. A lease that does not start
    // the usual way is parsed in full.
    let prefix = b"{\"run_id\": \"";
    if let Some(rest) = bytes.strip_prefix(prefix) {
        if let Some(end) = rest.iter().position(|&b| b == b'"' || b == b'\\') {
            if rest[end] == b'"' && rest.get(end + 1) == Some(&b',') && !contains(&rest[end..], b"\"run_id\"") {
                return Some(&rest[..end] == run_id.as_bytes());
            }
        }
    }
    match doc::parse_doc(bytes) {
        Ok(Parsed::Doc(m)) if !m.is_empty() => Some(LeaseDoc(m).is_run(run_id)),
        _ => None,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

impl RunLease {
    /// Take the lease on the batch, taking over a dead run's (its claimed files
    /// are removed, its record marked interrupted) and adopting orphans, or refuse.
    pub fn acquire(spec: LeaseSpec, sys: Sys) -> Result<(RunLease, Acquired)> {
        let beneath =
            Beneath::new(&spec.usecase_dir).map_err(|e| Error::io("open the use-case folder", &spec.usecase_dir, e))?;
        if !layout::run_id_is_safe(&spec.run_id) || spec.run_id.is_empty() {
            return Err(Error::Usage(format!("run id '{}' cannot name a file", spec.run_id)));
        }
        let (key, named) = match &spec.key {
            Some((k, named)) if layout::is_key(k) => (k.clone(), named.unwrap_or(true)),
            Some((k, _)) => return Err(Error::Usage(format!("'{k}' is not a batch key"))),
            None => (
                key::batch_key(spec.task.as_str(), &spec.variables).map_err(|e| Error::Usage(e.to_string()))?,
                key::names_a_batch(&spec.variables),
            ),
        };
        let root = beneath.root().to_path_buf();
        let paths = LeasePaths::new(&root, &spec.task, &key);
        // Relative to the use-case folder as given (the peer's `<uc>/<--lineage-dir>`),
        // made absolute once, against the current folder.
        let lineage_dir = match &spec.lineage_dir {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => std::env::current_dir()
                .map_err(|e| Error::io("read the current folder for", d, e))?
                .join(&spec.usecase_dir)
                .join(d),
            None => layout::lineage_root(&root),
        };
        let now = sys.clock.now();
        let doc = LeaseDoc::new(
            &spec.run_id,
            spec.task.as_str(),
            sys.pid,
            sys.own_start_token(),
            &sys.host,
            timefmt::utc_z(now),
            timefmt::epoch_secs(now),
        );
        let shared = Shared {
            named,
            task: spec.task,
            key,
            run_id: spec.run_id,
            paths,
            lineage_dir,
            beneath,
            sys,
            actor: spec.actor,
            in_place: false,
            dir_fd: None,
            tomb_name: String::new(),
            state: Mutex::new(State { doc, tail: None, left: Vec::new(), moved: Default::default(), keep: false }),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
        };
        let mut shared = shared;
        fs::create_dir_all(&shared.paths.dir)
            .map_err(|e| Error::io("create the lease folder", &shared.paths.dir, e))?;
        shared.in_place = in_place_ok(&shared.paths.dir);
        shared.dir_fd = rustix::fs::open(
            &shared.paths.dir,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok();
        shared.tomb_name = shared
            .paths
            .taken(&shared.run_id)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lease = RunLease { s: Arc::new(shared), beat: Mutex::new(None) };
        let acquired = lease.take()?;
        lease.start_heartbeat();
        Ok((lease, acquired))
    }

    fn create(&self, text: &[u8]) -> Result<bool> {
        let path = self.s.lease_path();
        let hook = &self.s.sys.hook;
        fsx::create_new_with(&path, text, || hook.at(Step::LeaseTempWritten))
            .map_err(|e| Error::io("create the lease", path, e))
    }

    fn take(&self) -> Result<Acquired> {
        let s = &*self.s;
        let path = s.lease_path();
        let own = lock(&s.state).doc.to_json();
        let mut acquired = Acquired::default();
        for _ in 0..3 {
            if self.create(own.as_bytes())? {
                s.sys.hook.at(Step::Created);
                self.adopt_or_refuse(&mut acquired)?;
                return Ok(acquired);
            }
            let held = match fsx::read_patient(&path, s.busy()) {
                Err(e) => return Err(unreadable(&s.task, &path, e)),
                Ok(None) => continue,
                Ok(Some(b)) => match doc::parse_doc(&b) {
                    Ok(p) => LeaseDoc::from_parsed(p),
                    Err(d) => return Err(unreadable(&s.task, &path, d)),
                },
            };
            let times = fs::metadata(&path).ok().map(|m| FileTimes::of(&m));
            let judged = liveness::judge(&held, times, &mut || s.sys.clock.disk_now(&s.paths.dir), &s.sys, false)
                .map_err(|d| unreadable(&s.task, &path, d))?;
            if !judged.dead {
                return Err(held_refusal(s, &held));
            }
            s.check_paths(&held, &path)?;
            // Take the dead run's lease over: one rename wins. Then check the file
            // renamed is the one judged dead.
            let stale = s.paths.dead_new();
            match rename_patient(&path, &stale, s.busy()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound || fsx::is_busy(&e) => continue,
                Err(e) => return Err(Error::io("rename the dead run's lease", path, e)),
            }
            s.sys.hook.at(Step::DeadRenamed);
            let text = match fsx::read_patient(&stale, s.busy()) {
                Ok(t) => t.unwrap_or_default(),
                Err(e) => {
                    self.put_back(&stale);
                    return Err(unreadable(&s.task, &stale, e));
                }
            };
            let mut taken = match doc::parse_doc(&text) {
                Ok(p) => LeaseDoc::from_parsed(p),
                Err(d) => {
                    self.put_back(&stale);
                    return Err(unreadable(&s.task, &stale, d));
                }
            };
            if !taken.same_run(&held) {
                // A live lease was renamed away: put it back only if nobody took the
                // name meanwhile (never overwrite a lease).
                if !text.is_empty() {
                    let _ = fsx::create_new(&path, &text);
                }
                let _ = fs::remove_file(&stale);
                continue;
            }
            if !self.create(own.as_bytes())? {
                continue; // another run got there first; the dead lease stays beside it
            }
            s.sys.hook.at(Step::TakeoverCreated);
            std::thread::sleep(s.sys.timing.settle);
            s.sys.hook.at(Step::Settled);
            if let Some(now) = s.read_current() {
                if !now.is_empty() && now.same_run(&taken) {
                    let _ = fs::remove_file(&stale);
                    return Err(Refusal::new(
                        RefusalKind::LookedDead,
                        format!("Run {} of {} looked dead but wrote its lease again: it is running. Nothing was taken back.", taken.run_short(), s.task),
                    )
                    .with("Lease", path.display())
                    .hint("Wait for it to finish.")
                    .into());
                }
            }
            if s.owner() != Some(true) {
                return Err(Refusal::new(
                    RefusalKind::Contended,
                    format!(
                        "The lease on {} changed hands while run {} was taking it over. Nothing was taken back.",
                        s.task,
                        doc::short(&s.run_id)
                    ),
                )
                .with("Lease", path.display())
                .hint("Run again in a moment.")
                .into());
            }
            if let Err(e) = s.check_paths(&taken, &stale) {
                self.hand_back(&taken, &stale);
                return Err(e);
            }
            // Mark the dead run as taken over before touching its files.
            let dead_id = taken.run_id();
            if !layout::run_id_is_safe(&dead_id) {
                self.hand_back(&taken, &stale);
                return Err(unreadable(&s.task, &stale, "its run_id cannot name a file"));
            }
            let tomb = s.paths.taken(&dead_id);
            fs::write(&tomb, s.now_z()).map_err(|e| Error::io("write the takeover mark", &tomb, e))?;
            s.sys.hook.at(Step::Tombstoned);
            match self.recover(&mut taken, false) {
                Ok(r) => acquired.took_over = Some(r),
                Err(e) => return Err(self.refuse_recovery(e, taken, &stale)),
            }
            s.sys.hook.at(Step::Recovered);
            let _ = fs::remove_file(&stale);
            self.adopt_or_refuse(&mut acquired)?;
            return Ok(acquired);
        }
        Err(Refusal::new(
            RefusalKind::Contended,
            format!("Could not take the lease on {}: another run keeps taking it.", s.task),
        )
        .with("Lease", path.display())
        .hint("Run again in a moment.")
        .into())
    }

    /// Put a lease renamed away for a takeover back, never over another lease (a
    /// hard link fails if the name is taken). If it cannot be, it stays beside the
    /// lease, where whoever holds the batch adopts it.
    fn put_back(&self, stale: &Path) {
        if fs::hard_link(stale, self.s.lease_path()).is_ok() {
            let _ = fs::remove_file(stale);
        }
    }

    /// Write the dead run's lease back over this run's new one, as it was.
    fn hand_back(&self, taken: &LeaseDoc, stale: &Path) {
        if let Ok(true) = fsx::write_atomic(&self.s.lease_path(), taken.to_json().as_bytes(), self.s.busy()) {
            let _ = fs::remove_file(stale);
        }
    }

    fn refuse_recovery(&self, e: RecoverError, mut taken: LeaseDoc, stale: &Path) -> Error {
        let s = &*self.s;
        match e {
            RecoverError::Unreadable { path, why } => {
                self.hand_back(&taken, stale);
                unreadable(&s.task, &path, why)
            }
            RecoverError::InUse { left, replaces, note, refused, staging } => {
                // Hand the lease back to the dead run with what is left, and refuse:
                // a forgotten claim would let its batch land twice.
                if replaces {
                    let mut m = doc::Map::new();
                    for (n, files) in &left {
                        m.insert(n.clone(), files.iter().cloned().map(serde_json::Value::String).collect());
                    }
                    taken.set("replaces", serde_json::Value::Object(m));
                } else {
                    let old = taken.0.get("outputs").and_then(|v| v.as_object()).cloned().unwrap_or_default();
                    let mut m = doc::Map::new();
                    for (n, files) in &left {
                        let mut o = old.get(n).and_then(|v| v.as_object()).cloned().unwrap_or_default();
                        o.insert("claimed".into(), files.iter().cloned().map(serde_json::Value::String).collect());
                        m.insert(n.clone(), serde_json::Value::Object(o));
                    }
                    taken.set("outputs", serde_json::Value::Object(m));
                }
                let text = taken.to_json();
                match fsx::write_atomic(&s.lease_path(), text.as_bytes(), s.busy()) {
                    Ok(true) => {
                        let _ = fs::remove_file(stale);
                    }
                    _ => {
                        let _ = fsx::write_atomic(stale, text.as_bytes(), s.busy());
                    }
                }
                if let Some(r) = refused.first() {
                    return outside_refusal(&s.task, &s.lease_path(), r);
                }
                let what = if note {
                    format!(
                        "the note of its finished batch cannot be written yet (in use): {}",
                        s.paths.finished().display()
                    )
                } else if let Some((folder, why)) = staging.first() {
                    format!("its staging folder {folder} cannot be removed yet: {why}")
                } else {
                    let files: Vec<&str> = left.iter().flat_map(|(_, c)| c.iter().map(String::as_str)).collect();
                    format!("its appended files cannot be removed yet (in use): {}", files.join(", "))
                };
                Refusal::new(RefusalKind::InUse, format!("Run {} of {} died, and {what}", taken.run_short(), s.task))
                    .with("Lease", s.lease_path().display())
                    .hint("Close whatever has those files open and run again.")
                    .into()
            }
        }
    }

    /// Adopt dead leases left beside this one; if their files cannot be removed
    /// yet, give the batch up rather than run it a second time over them.
    fn adopt_or_refuse(&self, acquired: &mut Acquired) -> Result<()> {
        let s = &*self.s;
        match self.adopt_orphans(acquired) {
            Ok(()) => Ok(()),
            Err(e) => {
                s.stop();
                let _ = fsx::remove_if_present(&s.lease_path());
                Err(match e {
                    AdoptError::Refused(e) => e,
                    AdoptError::Recover(RecoverError::Unreadable { path, why }) => unreadable(&s.task, &path, why),
                    AdoptError::Recover(RecoverError::InUse { left, refused, staging, .. }) => {
                        if let Some(r) = refused.first() {
                            return Err(outside_refusal(&s.task, &s.lease_path(), r));
                        }
                        if let Some((folder, why)) = staging.first() {
                            return Err(Refusal::new(
                                RefusalKind::InUse,
                                format!(
                                    "A dead run of {} left a staging folder that cannot be removed yet: {folder}: {why}",
                                    s.task
                                ),
                            )
                            .with("Lease", s.lease_path().display())
                            .hint("Deal with what is inside it (unmount, close), then run again.")
                            .into());
                        }
                        let files: Vec<&str> = left.iter().flat_map(|(_, c)| c.iter().map(String::as_str)).collect();
                        Refusal::new(
                            RefusalKind::InUse,
                            format!(
                                "A dead run of {} left appended files that cannot be removed yet (in use): {}",
                                s.task,
                                files.join(", ")
                            ),
                        )
                        .with("Lease", s.lease_path().display())
                        .hint("Close whatever has those files open and run again.")
                        .into()
                    }
                })
            }
        }
    }

    fn adopt_orphans(&self, acquired: &mut Acquired) -> std::result::Result<(), AdoptError> {
        let s = &*self.s;
        let mut tombs = Vec::new();
        let mut orphans = Vec::new();
        if let Ok(entries) = fs::read_dir(&s.paths.dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                match layout::classify(&name) {
                    Entry::Taken { key, .. } if key == s.key => tombs.push(e.path()),
                    Entry::Dead { key } if key == s.key => orphans.push(e.path()),
                    _ => {}
                }
            }
        }
        // By the disk's clock, as every age: a host whose clock runs days ahead
        // must not expire a fresh mark (it is what stops a frozen run's save).
        let now = if tombs.is_empty() { s.sys.clock.now() } else { s.sys.clock.disk_now(&s.paths.dir).time };
        for t in tombs {
            let old = fs::metadata(&t).and_then(|m| m.modified()).ok().and_then(|m| now.duration_since(m).ok());
            if old.is_some_and(|age| age > s.sys.timing.tombstone_expiry) && fs::remove_file(&t).is_ok() {
                acquired.expired_tombstones.push(t);
            }
        }
        orphans.sort();
        for orphan in orphans {
            let bytes = match fsx::read_patient(&orphan, s.busy()) {
                Err(e) => {
                    return Err(AdoptError::Recover(RecoverError::Unreadable { path: orphan, why: e.to_string() }));
                }
                Ok(None) => continue,
                Ok(Some(b)) => b,
            };
            let mut dead = match doc::parse_doc(&bytes) {
                Ok(p) => LeaseDoc::from_parsed(p),
                Err(d) => {
                    return Err(AdoptError::Recover(RecoverError::Unreadable { path: orphan, why: d.to_string() }));
                }
            };
            s.check_paths(&dead, &orphan).map_err(AdoptError::Refused)?;
            if !layout::run_id_is_safe(&dead.run_id()) {
                return Err(AdoptError::Recover(RecoverError::Unreadable {
                    path: orphan,
                    why: "its run_id cannot name a file".into(),
                }));
            }
            let mut r = self.recover(&mut dead, true).map_err(AdoptError::Recover)?;
            r.from_orphan = true;
            s.sys.hook.at(Step::Recovered);
            let _ = fs::remove_file(&orphan);
            acquired.adopted.push(r);
        }
        Ok(())
    }

    fn start_heartbeat(&self) {
        let s = Arc::clone(&self.s);
        let handle = std::thread::Builder::new().name("ubunye-lease".into()).spawn(move || {
            loop {
                {
                    let stop = lock(&s.stop);
                    let (stop, _) = s
                        .stop_cv
                        .wait_timeout_while(stop, s.sys.timing.heartbeat_every, |stop| !*stop)
                        .unwrap_or_else(|e| e.into_inner());
                    if *stop {
                        return;
                    }
                }
                let mut st = lock(&s.state);
                match s.read_current() {
                    Some(held) if !held.is_empty() && !held.is_run(&s.run_id) => return,
                    Some(held) if !held.is_empty() => {}
                    _ => continue,
                }
                let now = timefmt::epoch_secs(s.sys.clock.now());
                st.doc.set("heartbeat", pyjson::float_value(now));
                let _ = s.save(&mut st);
            }
        });
        if let Ok(h) = handle {
            *lock(&self.beat) = Some(h);
        }
    }

    /// Stop the heartbeat and wait for it: no beat writes after this returns.
    pub(crate) fn stop_heartbeat(&self) {
        self.s.stop();
        if let Some(h) = lock(&self.beat).take() {
            let _ = h.join();
        }
    }

    /// The batch key (16 hex).
    pub fn key(&self) -> &str {
        &self.s.key
    }
    pub fn run_id(&self) -> &str {
        &self.s.run_id
    }
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
    pub fn paths(&self) -> &LeasePaths {
        &self.s.paths
    }
    /// The resolved use-case folder.
    pub fn root(&self) -> &Path {
        self.s.beneath.root()
    }
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
            doc::short(&self.s.run_id),
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

enum AdoptError {
    Refused(Error),
    Recover(RecoverError),
}

fn rename_patient(from: &Path, to: &Path, busy: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + busy;
    loop {
        match fs::rename(from, to) {
            Err(e) if fsx::is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => return other,
        }
    }
}

/// The refusal when a live run holds the batch (the peer's `RunLeaseHeld`).
fn held_refusal(s: &Shared, held: &LeaseDoc) -> Error {
    Refusal::new(
        RefusalKind::Held,
        format!(
            "Run {} of {} with the same variables is still running (process {} on {}, since {}).",
            held.run_short(),
            s.task,
            held.field_text("pid"),
            held.field_text("host"),
            held.field_text("started_at"),
        ),
    )
    .with("Lease", s.lease_path().display())
    .hint(format!(
        "Wait for it to finish, or see `ubunye leases explain {}`. Never delete a lease by hand: it lists that run's claimed files.",
        s.key
    ))
    .into()
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
