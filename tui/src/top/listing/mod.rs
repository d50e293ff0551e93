//! Poll mode without rereading everything: what a poll compares. Where no
//! file-system events arrive (NFS, SMB, FUSE), each `--interval` the lease and
//! lineage folders are looked at again, but only as much as a change can
//! show in:
//!
//! * every folder down to the tasks' folders is stat'ed; one whose stamp
//!   (inode, size, mtime, ctime) changed is listed again and its names
//!   compared, so a file made, renamed over or removed is seen (each is a
//!   change of its folder);
//! * files that the engines write in place are stat'ed: leases and orphans
//!   (claims are written into a lease in place), and the run records that
//!   appeared since the dashboard started or in the ten minutes before (the
//!   peer writes a record in place when its run ends), for a day. One read
//!   saying its run wrote its end (`RecordInfo::is_final`) is settled: a
//!   share of the settled records is stat'ed at each poll, each about every
//!   [`ROUND`] polls, within two rounds while their number grows (the peer
//!   can use a run id again and start its record anew in place). The first
//!   look stats every record once for this, and reads those of the last ten
//!   minutes: a use case of a million records just written (a backfill, a
//!   copy) is not stat'ed whole at every poll for a day;
//! * everything else (finished notes, old records) changes only by being
//!   replaced or removed, a change of its folder.
//!
//! The changed paths go to the model as file-system events would (each
//! batch read again, each task whose files changed read again whole). A
//! change no engine makes (a finished note or an old record edited in place
//! by hand), or a record rewritten after a day without a lease (a run with
//! leases off), is found by the full rescan that still comes every
//! [`BACKSTOP`] polls. A folder of 10,000 names is listed again only when
//! it changed: a poll of a million batches stats a few hundred folders, the
//! leases, and a [`ROUND`]th of the settled records.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use indexmap::IndexMap;
use ubunye::layout::{self, Entry};

/// Every this many polls, a full rescan all the same.
pub const BACKSTOP: u64 = 600;

/// See [`Listing::new`]: generous, for a file server's clock.
const FRESH: Duration = Duration::from_secs(600);

/// Whether a stamp is of the last `window` (or of the future), to the
/// nanosecond (whole seconds would make a window of one second anything
/// from nothing to a second).
fn fresh(s: &Stamp, now: SystemTime, window: Duration) -> bool {
    let ns = |(secs, nanos): (i64, i64)| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let now = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
    !window.is_zero() && ns(s.mtime).max(ns(s.ctime)) > now - window.as_nanos() as i128
}

/// A stamp this recent may hide a second write within the file system's
/// timestamp tick: what carries it is looked at again by the next poll (as
/// git treats a "racily clean" file).
const RACY: Duration = Duration::from_secs(1);

/// How long a record that appeared is stat'ed at each poll.
const RECENT: Duration = Duration::from_secs(24 * 3600);

/// A settled record is stat'ed about once every this many polls.
pub const ROUND: usize = 30;

/// What is compared of a file or folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp { ino: m.ino(), size: m.size(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) }
    }
}

fn stamp(p: &Path) -> Option<Stamp> {
    std::fs::metadata(p).ok().map(|m| Stamp::of(&m))
}

/// A folder as last looked at: its stamp, its subfolders (looked into at
/// each poll) and, for a task's folder of records, a hash of each name (to
/// tell a record that appeared; 8 bytes a record).
struct Folder {
    stamp: Option<Stamp>,
    /// Written lately: looked at again by the next poll whatever its stamp.
    recheck: bool,
    subfolders: Vec<PathBuf>,
    names: Vec<u64>,
}

/// A file stat'ed at each poll, and until when (None: as long as it exists).
struct Watched {
    stamp: Option<Stamp>,
    /// Written lately: named again by the next poll whatever its stamp.
    recheck: bool,
    until: Option<SystemTime>,
    /// A run record: read when it changes, and settled once it says its
    /// run wrote its end.
    record: bool,
    /// Read so (a record), when its stamp last moved.
    ended: bool,
}

/// A record that said its run wrote its end, as last stat'ed, until when.
struct Settled {
    stamp: Option<Stamp>,
    until: SystemTime,
}

/// Whether the record at `path` says its run wrote its end (one that
/// cannot be read does not).
fn ended(path: &Path) -> bool {
    ubunye::state::read_record(path).is_ok_and(|r| r.is_final())
}

/// The lease and lineage folders as last seen.
pub struct Listing {
    /// (root, whether it holds lease folders)
    roots: Vec<(PathBuf, bool)>,
    folders: HashMap<PathBuf, Folder>,
    files: HashMap<PathBuf, Watched>,
    /// Once each (a folder that went and came back names its records again).
    settled: IndexMap<PathBuf, Settled>,
    /// The next settled record to stat.
    next: usize,
    /// The share of a poll as the round began (a round that lost records is not slowed).
    share: usize,
    polls: u64,
    /// [`FRESH`] (and [`RACY`]), or none in tests.
    window: Duration,
}

/// What one poll found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// Paths that appeared, went or changed: files, and the folders of tasks
    /// whose names changed (the model reads such a task again whole).
    pub changed: Vec<PathBuf>,
    /// Time for the backstop's full rescan.
    pub full: bool,
}

fn name_hash(n: &std::ffi::OsStr) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    n.hash(&mut h);
    h.finish()
}

impl Listing {
    /// Look at the folders once (listing each, reading no file). `leases` is
    /// `<uc>/.ubunye/leases`, `lineage` the records' folder. What was written
    /// in the last [`FRESH`] (by this machine's clock) counts as changed at the
    /// first poll: the dashboard's first read runs beside this look, and a
    /// change made between the two would otherwise be in neither.
    pub fn new(leases: &Path, lineage: &Path) -> Listing {
        Listing::with_window(leases, lineage, FRESH)
    }

    /// [`Listing::new`], with what counts as written lately.
    pub fn with_window(leases: &Path, lineage: &Path, window: Duration) -> Listing {
        let mut l = Listing {
            roots: vec![(leases.to_path_buf(), true), (lineage.to_path_buf(), false)],
            folders: HashMap::new(),
            files: HashMap::new(),
            settled: IndexMap::new(),
            next: 0,
            share: 0,
            polls: 0,
            window,
        };
        let now = SystemTime::now();
        for (root, is_leases) in l.roots.clone() {
            l.look(&root, 0, is_leases, now, &mut None);
        }
        l
    }

    /// Look again: what changed since the last look.
    pub fn poll(&mut self) -> Polled {
        self.polls += 1;
        let now = SystemTime::now();
        let mut changed = Vec::new();
        for (root, is_leases) in self.roots.clone() {
            self.look(&root, 0, is_leases, now, &mut Some(&mut changed));
        }
        let racy = self.window.min(RACY);
        let mut settle = Vec::new();
        for (path, w) in &mut self.files {
            let s = stamp(path);
            let moved = s != w.stamp;
            let again = w.recheck;
            if moved || w.recheck {
                changed.push(path.clone());
            }
            w.stamp = s;
            // Looked at once more after a change of the last RACY; a stamp of
            // the future (a server's clock ahead) is not named at every poll.
            w.recheck = moved && s.is_some_and(|s| fresh(&s, now, racy));
            if (moved || again) && w.record {
                // Read after its stat: a write after that moves the stamp.
                w.ended = ended(path);
            }
            if w.ended && !w.recheck && s.is_some() {
                settle.push(path.clone());
            }
        }
        self.files.retain(|_, w| w.stamp.is_some() && (w.recheck || w.until.is_none_or(|u| u > now)));
        for path in settle {
            if let Some(w) = self.files.remove(&path) {
                let until = w.until.or_else(|| now.checked_add(RECENT)).unwrap_or(now);
                self.settled.insert(path, Settled { stamp: w.stamp, until });
            }
        }
        self.look_at_settled(now, racy, &mut changed);
        changed.sort();
        changed.dedup();
        Polled { changed, full: self.polls.is_multiple_of(BACKSTOP) }
    }

    /// Stat the next share of the settled records (all of them about every
    /// [`ROUND`] polls): one whose stamp moved is named, and watched at each
    /// poll again unless it still says its run wrote its end.
    fn look_at_settled(&mut self, now: SystemTime, racy: Duration, changed: &mut Vec<PathBuf>) {
        let share = self.settled.len().div_ceil(ROUND).max(self.share);
        for _ in 0..share {
            if self.next >= self.settled.len() {
                self.next = 0;
                self.share = self.settled.len().div_ceil(ROUND);
                if self.settled.is_empty() {
                    return;
                }
            }
            let at = self.next;
            let Some((path, item)) = self.settled.get_index_mut(at) else { return };
            let s = stamp(path);
            let moved = s != item.stamp;
            if moved {
                changed.push(path.clone());
            }
            if item.until <= now {
                // Its day is over, looked at once more (what takes its place is looked at next).
                self.settled.swap_remove_index(at);
                continue;
            }
            if !moved {
                self.next += 1;
                continue;
            }
            item.stamp = s;
            let recheck = s.is_some_and(|s| fresh(&s, now, racy));
            let fin = s.is_some() && ended(path);
            if fin && !recheck {
                self.next += 1;
                continue;
            }
            // Gone, or watched at each poll again (settled again once it
            // says so outside RACY).
            let Some((path, item)) = self.settled.swap_remove_index(at) else { return };
            if s.is_some() {
                let w = Watched { stamp: s, recheck, until: Some(item.until), record: true, ended: fin };
                self.files.insert(path, w);
            }
        }
    }

    /// Stat `dir`; list it again when it changed (or is new or gone), noting
    /// the files to stat from now on; then look into its subfolders. `out`
    /// (None on the first look) gets what changed.
    fn look(&mut self, dir: &Path, depth: usize, leases: bool, now: SystemTime, out: &mut Option<&mut Vec<PathBuf>>) {
        let s = stamp(dir);
        if let Some(f) = self.folders.get(dir).filter(|f| f.stamp == s && !f.recheck) {
            for sub in f.subfolders.clone() {
                self.look(&sub, depth + 1, leases, now, out);
            }
            return;
        }
        let old = self.folders.remove(dir);
        let mut subfolders = Vec::new();
        let mut names = Vec::new();
        let mut named_by_first_poll = false;
        let listed = if s.is_some() { std::fs::read_dir(dir).ok() } else { None };
        if let Some(rd) = listed {
            for e in rd.flatten() {
                let name = e.file_name();
                if depth < 3 {
                    // Symlinked task folders are followed, as the scan follows them.
                    let path = e.path();
                    if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                        subfolders.push(path);
                    }
                    continue;
                }
                // Only records, as a task's read lists them (`.json`): not an
                // `ubunye exec` run's log beside its record, which grows
                // while the run goes and is no record to read.
                if !leases && Path::new(&name).extension().is_none_or(|x| x != "json") {
                    continue;
                }
                let hot = if leases {
                    matches!(layout::classify(&name.to_string_lossy()), Entry::Lease { .. } | Entry::Dead { .. })
                } else {
                    let h = name_hash(&name);
                    names.push(h);
                    match (&out, &old) {
                        // A record that appeared since the last look.
                        (Some(_), Some(f)) => f.names.binary_search(&h).is_err(),
                        (Some(_), None) => true,
                        // At the first look, a record written in the last
                        // FRESH: its run may still be going (one of a run
                        // older than that, with a lease, is read again when
                        // the lease changes).
                        // (By its mtime, what a write sets.)
                        (None, _) => e.metadata().ok().is_some_and(|m| {
                            let st = Stamp { ctime: (0, 0), ..Stamp::of(&m) };
                            fresh(&st, now, self.window)
                        }),
                    }
                };
                let path = if hot { dir.join(&name) } else { continue };
                // At the first look, a record written lately is read (after
                // its stat: a write after that moves its stamp). One whose run
                // wrote its end is settled, its folder named by the first poll
                // (the first read ran beside this look).
                let st = if out.is_none() { stamp(&path) } else { None };
                let fin = out.is_none() && !leases && ended(&path);
                if fin && st.is_some_and(|st| !fresh(&st, now, self.window.min(RACY))) {
                    named_by_first_poll = true;
                    let until = now.checked_add(RECENT).unwrap_or(now);
                    self.settled.insert(path, Settled { stamp: st, until });
                    continue;
                }
                if !self.files.contains_key(&path) {
                    let until = (!leases).then(|| now.checked_add(RECENT)).flatten();
                    let w = if out.is_some() {
                        // Found by a poll: no stamp yet, so that the poll's
                        // look at the files names it (and, when it was
                        // written within RACY, the next poll again).
                        Watched { stamp: None, recheck: false, until, record: !leases, ended: false }
                    } else {
                        // At the first look, written lately: the first poll names it.
                        let recheck = st.is_some_and(|st| fresh(&st, now, self.window));
                        Watched { stamp: st, recheck, until, record: !leases, ended: fin }
                    };
                    self.files.insert(path, w);
                }
            }
        }
        subfolders.sort();
        names.sort_unstable();
        if let Some(o) = out.as_mut() {
            // A task's folder whose names changed, or a folder that appeared
            // or went: the model reads what is under it again.
            o.push(dir.to_path_buf());
        }
        if let Some(o) = &old {
            for gone in o.subfolders.iter().filter(|p| !subfolders.contains(p)) {
                if let Some(out) = out.as_mut() {
                    out.push(gone.clone());
                }
                self.forget(gone);
            }
        }
        // Written lately (in the last FRESH at the first look, the last RACY
        // after a change): looked at again by the next poll. Only after a
        // change: a folder relisted for its recheck alone, or dated in the
        // future, is not listed at every poll.
        let window = if out.is_none() { self.window } else { self.window.min(RACY) };
        let moved = out.is_none() || old.as_ref().is_none_or(|f| f.stamp != s);
        let recheck = named_by_first_poll || (moved && s.is_some_and(|s| fresh(&s, now, window)));
        self.folders.insert(dir.to_path_buf(), Folder { stamp: s, recheck, subfolders: subfolders.clone(), names });
        for sub in subfolders {
            self.look(&sub, depth + 1, leases, now, out);
        }
    }

    fn forget(&mut self, dir: &Path) {
        if let Some(f) = self.folders.remove(dir) {
            for sub in f.subfolders {
                self.forget(&sub);
            }
        }
    }

    /// How many folders and files a poll stats (besides the settled records).
    pub fn watched(&self) -> (usize, usize) {
        (self.folders.len(), self.files.len())
    }

    /// How many records are settled.
    pub fn settled(&self) -> usize {
        self.settled.len()
    }
}

#[cfg(test)]
mod tests;
