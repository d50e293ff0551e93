//! Acquiring a lease: create it, or judge its holder and take a dead run over
//! (FORMAT.md §6–7), adopting orphans; the heartbeat that keeps it fresh.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::recover::{RecoverError, left_text};
use super::write::in_place_ok;
use super::{Acquired, LeaseSpec, RunLease, Shared, State, lock, outside_refusal, unreadable};
use crate::beneath::Beneath;
use crate::documents::{self, LeaseDoc};
use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::fsx;
use crate::key;
use crate::layout::{self, Entry, LeasePaths};
use crate::liveness::{self, FileTimes};
use crate::pyjson;
use crate::sys::{Step, Sys};
use crate::timefmt;

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
            state: Mutex::new(State {
                doc,
                tail: None,
                left: Vec::new(),
                own: Default::default(),
                held: Vec::new(),
                keep: false,
            }),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
        };
        let mut shared = shared;
        crate::durable::create_dir_all(&shared.paths.dir)
            .map_err(|e| Error::io("create the lease folder", &shared.paths.dir, e))?;
        shared.in_place = in_place_ok(&shared.paths.dir, shared.sys.knobs.in_place);
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
        let mut acquired = lease.take()?;
        if acquired.took_over.is_some() || !acquired.adopted.is_empty() {
            acquired.temps_removed = lease.remove_dead_temps();
        }
        lease.start_heartbeat();
        Ok((lease, acquired))
    }

    /// The temp files of the batch's lease folder (`<key>.<8hex>.tmp`,
    /// `<key>.finished.<8hex>.tmp`, ...): a save of a dead run killed between
    /// its write and its rename. Called once this run holds the lease after
    /// taking a dead run over: no other run of the batch can be writing them
    /// then (a paused holder that wakes finds its temp gone and fails its
    /// save, as it must). Stricter than the peer, which leaves them
    /// (docs/differences.md). Listing the folder is paid only on a takeover.
    fn remove_dead_temps(&self) -> Vec<std::path::PathBuf> {
        let s = &*self.s;
        let mut removed = Vec::new();
        let Ok(rd) = fs::read_dir(&s.paths.dir) else { return removed };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if matches!(layout::classify(name), Entry::Tmp { key } if key == s.paths.key) {
                let p = e.path();
                if fs::remove_file(&p).is_ok() {
                    removed.push(p);
                }
            }
        }
        removed
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
                Ok(Some(b)) => match documents::parse_doc(&b) {
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
            let mut taken = match documents::parse_doc(&text) {
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
            if let Some(now) = s.read_current()
                && !now.is_empty()
                && now.same_run(&taken)
            {
                let _ = fs::remove_file(&stale);
                return Err(Refusal::new(
                    RefusalKind::LookedDead,
                    format!(
                        "Run {} of {} looked dead but wrote its lease again: it is running. Nothing was taken back.",
                        taken.run_short(),
                        s.task
                    ),
                )
                .with("Lease", path.display())
                .hint("Wait for it to finish.")
                .into());
            }
            if s.owner() != Some(true) {
                return Err(Refusal::new(
                    RefusalKind::Contended,
                    format!(
                        "The lease on {} changed hands while run {} was taking it over. Nothing was taken back.",
                        s.task,
                        documents::short(&s.run_id)
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
            fsx::write_mark(&tomb, s.now_z().as_bytes()).map_err(|e| Error::io("write the takeover mark", &tomb, e))?;
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
            RecoverError::InUse { left, replaces, note, refused, staging, failures } => {
                // Hand the lease back to the dead run with what is left, and refuse:
                // a forgotten claim would let its batch land twice.
                if replaces {
                    let mut m = documents::Map::new();
                    for (n, files) in &left {
                        m.insert(n.clone(), files.iter().cloned().map(serde_json::Value::String).collect());
                    }
                    taken.set("replaces", serde_json::Value::Object(m));
                } else {
                    let old = taken.0.get("outputs").and_then(|v| v.as_object()).cloned().unwrap_or_default();
                    let mut m = documents::Map::new();
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
                    format!("its appended files cannot be removed yet: {}", left_text(&left, &failures))
                };
                Refusal::new(RefusalKind::InUse, format!("Run {} of {} died, and {what}", taken.run_short(), s.task))
                    .with("Lease", s.lease_path().display())
                    .hint("Deal with what is said of each (close what has it open, fix a permission, move a folder away), then run again.")
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
                    AdoptError::Recover(RecoverError::InUse { left, refused, staging, failures, .. }) => {
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
                        Refusal::new(
                            RefusalKind::InUse,
                            format!(
                                "A dead run of {} left appended files that cannot be removed yet: {}",
                                s.task,
                                left_text(&left, &failures)
                            ),
                        )
                        .with("Lease", s.lease_path().display())
                        .hint("Deal with what is said of each (close what has it open, fix a permission, move a folder away), then run again.")
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
            let mut dead = match documents::parse_doc(&bytes) {
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
    pub(super) fn stop_heartbeat(&self) {
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
        crate::suggest::batch(s.beneath.root(), &s.key)
    ))
    .into()
}
