//! The file-system events (notify: inotify on Linux) on the folders `top`
//! watches, each watched alone, gathered into bursts ([`DEBOUNCE`]) and sent
//! as [`Event::FsChange`].
//!
//! Only what a write does is asked of the kernel ([`kinds`]): a file made,
//! written, closed after writing, renamed, removed, its metadata changed; a
//! watched folder removed or moved. Never an open, a read or a close after
//! reading: a dashboard's own read of a million batches opens two million
//! files, and an event for each (which notify 8 always asked the kernel for)
//! cost a fifth of the read's CPU.
//!
//! Two things notify does its own way are put back as `top` needs them:
//!
//! * a folder named twice (a task's folder and a symlink to it) is one
//!   inotify watch, and notify names its events under one of the two; they
//!   are named here under every name (the scan reads both);
//! * notify stops watching a folder by itself when an event says it went (a
//!   removal, or a move out of a watched folder), whichever folder is at that
//!   path by the time it reads the event: a folder removed and made again
//!   before then loses its new watch. Those folders are handed back
//!   ([`Notifier::dropped`]) to be watched again if they are there.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use notify::event::{EventKind, ModifyKind, RenameMode};
use notify::{Config, ErrorKind, EventHandler, EventKindMask, INotifyWatcher, PathOp, Watcher};

use crate::top::event::Event;

/// Events closer together than this are delivered as one burst.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// A folder's (device, inode).
type Id = (u64, u64);

/// What each folder is watched for: notify's core kinds (create, remove,
/// modify data, metadata or name: inotify's CREATE, DELETE, MODIFY, ATTRIB,
/// MOVED_FROM, MOVED_TO, DELETE_SELF and MOVE_SELF) and a close after
/// writing (CLOSE_WRITE). Not ACCESS_OPEN nor ACCESS_CLOSE_NOWRITE: a read's.
fn kinds() -> EventKindMask {
    EventKindMask::CORE | EventKindMask::ACCESS_CLOSE
}

/// The folders watched, shared by the watcher and the thread that names the
/// events.
#[derive(Default)]
struct Folders {
    /// Folder -> the (device, inode) it was watched as.
    id: HashMap<PathBuf, Id>,
    /// (device, inode) -> the folders that name it (more than one through a
    /// symlink).
    names: HashMap<Id, Vec<PathBuf>>,
    /// Folders notify stopped watching by itself, not yet handed back.
    dropped: Vec<PathBuf>,
}

impl Folders {
    fn insert(&mut self, p: &Path, id: Id) {
        self.remove(p);
        self.id.insert(p.to_path_buf(), id);
        self.names.entry(id).or_default().push(p.to_path_buf());
    }

    fn remove(&mut self, p: &Path) -> Option<Id> {
        let id = self.id.remove(p)?;
        if let Some(names) = self.names.get_mut(&id) {
            names.retain(|n| n != p);
            if names.is_empty() {
                self.names.remove(&id);
            }
        }
        Some(id)
    }

    /// The other names of the watched folder `p`.
    fn others<'a>(&'a self, p: &'a Path) -> impl Iterator<Item = &'a PathBuf> {
        self.id.get(p).and_then(|id| self.names.get(id)).into_iter().flatten().filter(move |n| n.as_path() != p)
    }

    /// `p` under every name: itself, through each other name of its folder,
    /// and (a watched folder itself) each of its other names.
    fn name(&self, p: &Path, out: &mut Vec<PathBuf>) {
        out.push(p.to_path_buf());
        if let (Some(dir), Some(leaf)) = (p.parent(), p.file_name()) {
            out.extend(self.others(dir).map(|d| d.join(leaf)));
        }
        out.extend(self.others(p).cloned());
    }

    /// notify stopped watching `p` and every folder below it. Only a watched
    /// folder has watched folders below it (each is found by listing the one
    /// above), so any other path (a file's) costs one look-up.
    fn drop_below(&mut self, p: &Path) {
        if !self.id.contains_key(p) {
            return;
        }
        let gone: Vec<PathBuf> = self.id.keys().filter(|k| k.starts_with(p)).cloned().collect();
        for g in gone {
            self.remove(&g);
            self.dropped.push(g);
        }
    }
}

/// Whether notify stops watching the event's path (and every folder below
/// it) on this event: a removal (of an entry of a watched folder, or of a
/// watched folder itself), or a move out of a watched folder (inotify's
/// MOVED_FROM, which carries a cookie). A watched folder moved itself
/// (MOVE_SELF: no cookie) stays watched.
fn stops_watching(e: &notify::Event) -> bool {
    match e.kind {
        EventKind::Remove(_) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => e.tracker().is_some(),
        _ => false,
    }
}

/// notify's watcher and the thread that closes its bursts.
pub struct Notifier {
    watcher: INotifyWatcher,
    folders: Arc<Mutex<Folders>>,
}

impl Notifier {
    /// Start watching (no folder yet); a lost event (the kernel's queue
    /// overflowed: notify's rescan flag) is sent as a change of `rescan_at`.
    pub fn start(tx: Sender<Event>, rescan_at: PathBuf) -> io::Result<Notifier> {
        let folders: Arc<Mutex<Folders>> = Arc::default();
        let burst: Arc<Burst> = Arc::default();
        let b = burst.clone();
        std::thread::Builder::new().name("top-notify".into()).spawn(move || gather(&b, &tx))?;
        // The thread ends when notify's own loop ends (this watcher dropped)
        // and drops the handler, or when `tx`'s loop is gone.
        let handler = Handler { burst, folders: folders.clone(), rescan_at };
        let watcher = INotifyWatcher::new(handler, Config::default().with_event_kinds(kinds())).map_err(io_error)?;
        Ok(Notifier { watcher, folders })
    }

    /// Watch each folder (its files and the folders in it, not below), as
    /// the folder `id` is; through a symlink, the folder it leads to. A
    /// folder watched as another one before (made anew) is watched anew.
    /// All in one request to notify's thread: a folder whose watch fails as
    /// `skip` says is left out and the others go on; any other failure ends
    /// it. Returns the folders watched.
    pub fn watch_all(
        &mut self,
        folders: Vec<(PathBuf, Id)>,
        skip: impl Fn(&io::Error) -> bool,
    ) -> io::Result<Vec<(PathBuf, Id)>> {
        let mut todo = Vec::with_capacity(folders.len());
        for (p, id) in folders {
            let was = lock(&self.folders).id.get(&p).copied();
            match was {
                Some(was) if was == id => continue,
                Some(_) => self.unwatch(&p),
                None => {}
            }
            todo.push((p, id));
        }
        // Noted before notify has them: an event that stops a watch while
        // this call waits is then handed back too (at worst a folder is
        // watched again that was: notify keeps the watch it has).
        {
            let mut f = lock(&self.folders);
            for (p, id) in &todo {
                f.insert(p, *id);
            }
        }
        let mut ops: Vec<PathOp> = todo.iter().map(|(p, _)| PathOp::watch_non_recursive(p.clone())).collect();
        let mut left_out = Vec::new();
        while let Err(e) = self.watcher.update_paths(ops) {
            let failed = e.origin.map(PathOp::into_path);
            let error = io_error(e.source);
            match failed {
                Some(p) if skip(&error) => {
                    left_out.push(p);
                    ops = e.remaining;
                }
                _ => {
                    let mut f = lock(&self.folders);
                    for (p, _) in &todo {
                        f.remove(p);
                    }
                    return Err(error);
                }
            }
        }
        let mut f = lock(&self.folders);
        for p in &left_out {
            f.remove(p);
        }
        todo.retain(|(p, _)| !left_out.contains(p));
        Ok(todo)
    }

    /// Stop watching a folder (one that notify no longer watches, removed
    /// say: no matter).
    pub fn unwatch(&mut self, p: &Path) {
        lock(&self.folders).remove(p);
        let _ = self.watcher.unwatch(p);
    }

    /// The folders notify stopped watching by itself since the last call:
    /// no longer watched, to be watched again if they are there.
    pub fn dropped(&mut self) -> Vec<PathBuf> {
        std::mem::take(&mut lock(&self.folders).dropped)
    }
}

fn lock(f: &Mutex<Folders>) -> MutexGuard<'_, Folders> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

/// notify's error as the `io::Error` the watcher's callers look at: a path
/// not found is ENOENT, the watch limit ENOSPC (as `inotify_add_watch`
/// says them).
fn io_error(e: notify::Error) -> io::Error {
    let message = e.to_string();
    match e.kind {
        ErrorKind::Io(e) => e,
        ErrorKind::PathNotFound => io::Error::from_raw_os_error(libc::ENOENT),
        ErrorKind::MaxFilesWatch => io::Error::from_raw_os_error(libc::ENOSPC),
        _ => io::Error::other(message),
    }
}

/// The burst being gathered, shared by notify's thread (which adds to it)
/// and the thread that sends it.
#[derive(Default)]
struct Burst {
    state: Mutex<Gathered>,
    /// Rung at a burst's first event, an error, and the end.
    bell: Condvar,
}

#[derive(Default)]
struct Gathered {
    paths: Vec<PathBuf>,
    /// When the burst's first event came, and its latest.
    first: Option<Instant>,
    last: Option<Instant>,
    error: Option<notify::Error>,
    /// notify's loop is over, or the dashboard's.
    over: bool,
}

fn gathered(b: &Burst) -> MutexGuard<'_, Gathered> {
    b.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// What notify calls on its own thread with each event: named (as
/// [`Folders::name`] names it) into the burst at once, so an event waits
/// for no other thread to be scheduled; the sending thread is woken only
/// by a burst's first event.
struct Handler {
    burst: Arc<Burst>,
    folders: Arc<Mutex<Folders>>,
    rescan_at: PathBuf,
}

impl EventHandler for Handler {
    fn handle_event(&mut self, event: notify::Result<notify::Event>) {
        let mut g = gathered(&self.burst);
        if g.over {
            return;
        }
        match event {
            Ok(e) => {
                if e.need_rescan() {
                    g.paths.push(self.rescan_at.clone());
                }
                let mut f = lock(&self.folders);
                for p in &e.paths {
                    f.name(p, &mut g.paths);
                }
                if stops_watching(&e) {
                    for p in &e.paths {
                        f.drop_below(p);
                    }
                }
                let now = Instant::now();
                g.last = Some(now);
                if g.first.is_none() {
                    g.first = Some(now);
                    self.burst.bell.notify_one();
                }
            }
            Err(e) => {
                g.error.get_or_insert(e);
                self.burst.bell.notify_one();
            }
        }
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        gathered(&self.burst).over = true;
        self.burst.bell.notify_one();
    }
}

/// The sending thread: each burst (events until [`DEBOUNCE`] passes with
/// none) sent as one change; a burst never waits longer than ten times
/// [`DEBOUNCE`]. An error from notify (reading the kernel's events failed)
/// is sent as a [`Event::WatchError`] and ends it, as does the end of
/// notify's loop or of the dashboard's.
fn gather(burst: &Burst, tx: &Sender<Event>) {
    let mut g = gathered(burst);
    loop {
        if let Some(e) = g.error.take() {
            g.over = true;
            let limit = matches!(&e.kind, ErrorKind::MaxFilesWatch)
                || matches!(&e.kind, ErrorKind::Io(io) if io.raw_os_error() == Some(libc::ENOSPC));
            let _ = tx.send(Event::WatchError { message: e.to_string(), limit });
            return;
        }
        if g.over {
            return;
        }
        let (Some(first), Some(last)) = (g.first, g.last) else {
            g = burst.bell.wait(g).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let due = (last + DEBOUNCE).min(first + DEBOUNCE * 10);
        let now = Instant::now();
        if now < due {
            g = burst.bell.wait_timeout(g, due - now).unwrap_or_else(|e| e.into_inner()).0;
            continue;
        }
        let mut paths = std::mem::take(&mut g.paths);
        (g.first, g.last) = (None, None);
        drop(g);
        paths.sort();
        paths.dedup();
        if !paths.is_empty() && tx.send(Event::FsChange(paths)).is_err() {
            gathered(burst).over = true;
            return;
        }
        g = gathered(burst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, RemoveKind};

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn an_event_is_named_under_every_name_of_its_folder() {
        let mut f = Folders::default();
        f.insert(Path::new("/l/t"), (1, 7));
        f.insert(Path::new("/l/alias"), (1, 7));
        f.insert(Path::new("/l/other"), (1, 8));
        let mut out = Vec::new();
        f.name(Path::new("/l/alias/a.json"), &mut out);
        assert_eq!(out, paths(&["/l/alias/a.json", "/l/t/a.json"]));
        // The folder itself (removed, say): each of its names.
        out.clear();
        f.name(Path::new("/l/t"), &mut out);
        assert_eq!(out, paths(&["/l/t", "/l/alias"]));
        out.clear();
        f.name(Path::new("/l/other/b.json"), &mut out);
        assert_eq!(out, paths(&["/l/other/b.json"]));
        // One name forgotten: the other stands alone.
        f.remove(Path::new("/l/alias"));
        out.clear();
        f.name(Path::new("/l/t/a.json"), &mut out);
        assert_eq!(out, paths(&["/l/t/a.json"]));
    }

    #[test]
    fn what_notify_stops_watching_on_its_own_is_handed_back() {
        let event = |kind, p: &str| notify::Event::new(kind).add_path(p.into());
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        assert!(stops_watching(&event(EventKind::Remove(RemoveKind::Folder), "/l/p")));
        // Moved out of a watched folder (inotify's cookie): as removed.
        assert!(stops_watching(&event(from, "/l/p").set_tracker(9)));
        // A watched folder moved itself: still watched.
        assert!(!stops_watching(&event(from, "/l/p")));
        assert!(!stops_watching(&event(EventKind::Create(CreateKind::Folder), "/l/p")));
        let mut f = Folders::default();
        for (n, p) in ["/l", "/l/p", "/l/p/t", "/l/pq"].into_iter().enumerate() {
            f.insert(Path::new(p), (0, n as u64));
        }
        // A file's path: nothing.
        f.drop_below(Path::new("/l/p/t/a.json"));
        assert!(f.dropped.is_empty());
        f.drop_below(Path::new("/l/p"));
        f.dropped.sort();
        assert_eq!(f.dropped, paths(&["/l/p", "/l/p/t"]));
        let mut left: Vec<&PathBuf> = f.id.keys().collect();
        left.sort();
        assert_eq!(left, [Path::new("/l"), Path::new("/l/pq")]);
    }
}
