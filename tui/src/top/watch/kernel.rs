//! The kernel's file-system events (inotify) on the folders `top` watches,
//! each watched alone, gathered into bursts ([`DEBOUNCE`]) and sent as
//! [`Event::FsChange`].
//!
//! Only what a write does is asked of the kernel: a file made, written,
//! closed after writing, renamed, removed, its metadata changed; a folder
//! removed or moved. Never an open, a read or a close after reading: a
//! dashboard's own read of a million batches opens two million files, and
//! events for each (which notify 8 always asks for, then hands to its
//! debouncer to be thrown away here) cost a fifth of the read's CPU.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

use crate::top::event::Event;

/// Events closer together than this are delivered as one burst.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// What each folder is watched for.
fn mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::CLOSE_WRITE
        | WatchMask::ATTRIB
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
}

/// Watch -> the folders it is (one folder's inode named twice, through a
/// symlink, is one watch: the kernel hands back the same descriptor).
type Folders = Arc<Mutex<HashMap<WatchDescriptor, Vec<PathBuf>>>>;

/// One inotify instance and the thread that reads it.
pub struct Kernel {
    watches: Watches,
    /// Watch -> its folder, shared with the thread that names the events.
    folders: Folders,
    /// Folder -> its watch.
    by_path: HashMap<PathBuf, WatchDescriptor>,
    stop: Arc<AtomicBool>,
}

impl Kernel {
    /// Start reading events; a lost event (the kernel's queue overflowed)
    /// is sent as a change of `rescan_at`.
    pub fn start(tx: Sender<Event>, rescan_at: PathBuf) -> io::Result<Kernel> {
        let inotify = Inotify::init()?;
        let watches = inotify.watches();
        let folders: Folders = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (f, s) = (folders.clone(), stop.clone());
        std::thread::Builder::new().name("top-inotify".into()).spawn(move || read(inotify, &f, &s, &tx, &rescan_at))?;
        Ok(Kernel { watches, folders, by_path: HashMap::new(), stop })
    }

    /// Watch one folder (its files and the folders in it, not below).
    pub fn watch(&mut self, p: &Path) -> io::Result<()> {
        self.unwatch(p);
        let wd = self.watches.add(p, mask())?;
        let mut folders = lock(&self.folders);
        let names = folders.entry(wd.clone()).or_default();
        if !names.iter().any(|n| n == p) {
            names.push(p.to_path_buf());
        }
        self.by_path.insert(p.to_path_buf(), wd);
        Ok(())
    }

    /// Stop watching a folder (a folder removed is no longer watched by the
    /// kernel already: no matter).
    pub fn unwatch(&mut self, p: &Path) {
        let Some(wd) = self.by_path.remove(p) else { return };
        let mut folders = lock(&self.folders);
        let left = folders.get_mut(&wd).map(|names| {
            names.retain(|n| n != p);
            names.len()
        });
        if left == Some(0) || left.is_none() {
            folders.remove(&wd);
            let _ = self.watches.remove(wd);
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn lock(f: &Folders) -> std::sync::MutexGuard<'_, HashMap<WatchDescriptor, Vec<PathBuf>>> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wait up to `timeout` for events to read.
fn readable(inotify: &Inotify, timeout: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let ts = Timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: i64::from(timeout.subsec_nanos()) };
    let mut fds = [PollFd::new(inotify, PollFlags::IN)];
    rustix::event::poll(&mut fds, Some(&ts)).is_ok_and(|n| n > 0)
}

/// The reading thread: each burst (events until [`DEBOUNCE`] passes with
/// none) sent as one change; ends when the watcher is dropped or the loop
/// is gone. A burst never waits longer than ten times [`DEBOUNCE`].
fn read(mut inotify: Inotify, folders: &Folders, stop: &AtomicBool, tx: &Sender<Event>, rescan_at: &Path) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut since: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        let wait = if paths.is_empty() { Duration::from_millis(500) } else { DEBOUNCE };
        let more = readable(&inotify, wait);
        if more {
            match inotify.read_events(&mut buf) {
                Ok(events) => {
                    let folders = lock(folders);
                    for e in events {
                        if e.mask.contains(EventMask::Q_OVERFLOW) {
                            paths.push(rescan_at.to_path_buf());
                            continue;
                        }
                        if e.mask.contains(EventMask::IGNORED) {
                            continue;
                        }
                        for dir in folders.get(&e.wd).into_iter().flatten() {
                            paths.push(named(dir, e.name));
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let limit = e.raw_os_error() == Some(28);
                    let _ = tx.send(Event::WatchError { message: e.to_string(), limit });
                    return;
                }
            }
            if !paths.is_empty() {
                since.get_or_insert_with(Instant::now);
            }
        }
        let due = !more || since.is_some_and(|t| t.elapsed() >= DEBOUNCE * 10);
        if due && !paths.is_empty() {
            paths.sort();
            paths.dedup();
            if tx.send(Event::FsChange(std::mem::take(&mut paths))).is_err() {
                return;
            }
            since = None;
        }
    }
}

fn named(dir: &Path, name: Option<&OsStr>) -> PathBuf {
    match name {
        Some(n) if !n.is_empty() => dir.join(n),
        _ => dir.to_path_buf(),
    }
}
