//! How `top` notices changes: debounced file-system events (notify) on the
//! lease folder and the lineage folder, recursively; or a look every
//! `--interval` at what changed in their listing (poll: [`Listing`]), which
//! `auto` chooses where events do not arrive (NFS, SMB/CIFS, FUSE) or cannot
//! be had (the inotify watch limit, an error).
//! Either way it only sends [`Event`]s: what they mean is the model's business.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, MetadataKind, ModifyKind};
use notify::{ErrorKind, EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use crate::top::event::Event;
use crate::top::listing::Listing;

/// Events closer together than this are delivered as one burst.
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// What the user asked for (`--watch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requested {
    Auto,
    Notify,
    Poll,
}

impl Requested {
    pub fn parse(s: &str) -> Requested {
        match s {
            "notify" => Requested::Notify,
            "poll" => Requested::Poll,
            _ => Requested::Auto,
        }
    }
}

/// The file system a folder is on, when events do not reach it from other
/// machines (statfs `f_type`).
#[allow(clippy::unnecessary_cast)]
pub fn network_fs(dir: &Path) -> Option<&'static str> {
    let st = rustix::fs::statfs(dir).ok()?;
    match (st.f_type as i64 as u64) & 0xFFFF_FFFF {
        0x6969 => Some("NFS"),
        0xFF53_4D42 => Some("CIFS"),
        0xFE53_4D42 => Some("SMB2"),
        0x6573_5546 => Some("FUSE"),
        _ => None,
    }
}

/// A notify error that means the inotify watch limit.
fn is_limit(e: &notify::Error) -> bool {
    match &e.kind {
        ErrorKind::MaxFilesWatch => true,
        ErrorKind::Io(io) => io.raw_os_error() == Some(28),
        _ => false,
    }
}

/// An event that only says something was read (opened, listed, closed after
/// reading, its access time set): ignored, or every scan would cause another.
fn is_read(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(
            AccessKind::Open(_)
                | AccessKind::Read
                | AccessKind::Close(AccessMode::Read | AccessMode::Execute)
                | AccessKind::Any
                | AccessKind::Other
        ) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))
    )
}

/// The watcher, whichever way it works.
pub struct Watch {
    tx: Sender<Event>,
    interval: Duration,
    /// (folder, recursive): the lease and lineage folders, and the folders they
    /// appear in.
    desired: Vec<(PathBuf, RecursiveMode)>,
    /// The lease folder and the lineage folder, as a poll looks at them.
    leases: PathBuf,
    lineage: PathBuf,
    debouncer: Option<Debouncer<RecommendedWatcher, RecommendedCache>>,
    /// Folder -> (device, inode) when it was watched: a folder made anew is
    /// watched again.
    watched: HashMap<PathBuf, (u64, u64)>,
    poll_stop: Option<Arc<AtomicBool>>,
    /// The mode for the status bar.
    pub mode: String,
    /// A hint for the status bar (the watch limit).
    pub hint: Option<String>,
}

impl Watch {
    /// Start watching `root`'s lease folder and `lineage` as asked.
    pub fn start(requested: Requested, interval: Duration, root: &Path, lineage: &Path, tx: Sender<Event>) -> Watch {
        let ubunye = root.join(".ubunye");
        let mut desired = vec![
            (ubunye.clone(), RecursiveMode::NonRecursive),
            (ubunye.join("leases"), RecursiveMode::Recursive),
            (lineage.to_path_buf(), RecursiveMode::Recursive),
        ];
        if let Some(parent) = lineage.parent().filter(|p| *p != ubunye) {
            desired.push((parent.to_path_buf(), RecursiveMode::NonRecursive));
        }
        let mut w = Watch {
            tx,
            interval,
            desired,
            leases: ubunye.join("leases"),
            lineage: lineage.to_path_buf(),
            debouncer: None,
            watched: HashMap::new(),
            poll_stop: None,
            mode: String::new(),
            hint: None,
        };
        match requested {
            Requested::Poll => w.poll_instead(None),
            Requested::Auto if network_fs(root).is_some() => w.poll_instead(network_fs(root)),
            Requested::Auto | Requested::Notify => {
                if let Err(e) = w.notify() {
                    let limit = is_limit(&e);
                    if limit {
                        w.hint = Some(limit_hint());
                    }
                    w.debouncer = None;
                    w.poll_instead(Some(if limit { "watch limit" } else { "notify failed" }));
                    if !limit {
                        w.hint = Some(format!("cannot watch for changes ({e}); polling instead"));
                    }
                }
            }
        }
        w
    }

    fn notify(&mut self) -> notify::Result<()> {
        let tx = self.tx.clone();
        let rescan_at = self.desired.first().map(|d| d.0.clone()).unwrap_or_default();
        let handler = move |res: DebounceEventResult| match res {
            Ok(events) => {
                let mut paths: Vec<PathBuf> = Vec::new();
                for e in events {
                    // Reads (the scans' own included) change nothing.
                    if is_read(&e.event.kind) {
                        continue;
                    }
                    if e.event.need_rescan() {
                        // Events were lost (the kernel's queue overflowed).
                        paths.push(rescan_at.clone());
                    }
                    paths.extend(e.event.paths.iter().cloned());
                }
                if !paths.is_empty() {
                    let _ = tx.send(Event::FsChange(paths));
                }
            }
            Err(errors) => {
                for e in errors {
                    let _ = tx.send(Event::WatchError { message: e.to_string(), limit: is_limit(&e) });
                }
            }
        };
        self.debouncer = Some(new_debouncer(DEBOUNCE, Some(DEBOUNCE / 2), handler)?);
        self.mode = "notify".into();
        self.ensure()
    }

    /// Watch the folders that exist and are not watched yet (or were made
    /// anew); forget those that went.
    pub fn ensure(&mut self) -> notify::Result<()> {
        let Some(d) = self.debouncer.as_mut() else { return Ok(()) };
        for (p, mode) in &self.desired {
            let id = std::fs::metadata(p).ok().filter(|m| m.is_dir()).map(|m| (m.dev(), m.ino()));
            match (id, self.watched.get(p).copied()) {
                (Some(now), Some(was)) if now == was => {}
                (Some(now), was) => {
                    if was.is_some() {
                        let _ = d.unwatch(p);
                    }
                    d.watch(p, *mode)?;
                    self.watched.insert(p.clone(), now);
                }
                (None, Some(_)) => {
                    let _ = d.unwatch(p);
                    self.watched.remove(p);
                }
                (None, None) => {}
            }
        }
        Ok(())
    }

    /// Stop watching for events; rescan every interval instead.
    pub fn poll_instead(&mut self, why: Option<&str>) {
        self.debouncer = None;
        self.watched.clear();
        if let Some(stop) = self.poll_stop.take() {
            stop.store(true, Ordering::Relaxed);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, interval, flag) = (self.tx.clone(), self.interval, stop.clone());
        let (leases, lineage) = (self.leases.clone(), self.lineage.clone());
        // Each poll compares the folders' listing with the last one and names
        // what changed (crate::top::listing); a whole rescan only now and then.
        let spawned = std::thread::Builder::new().name("top-poll".into()).spawn(move || {
            use std::panic::{AssertUnwindSafe, catch_unwind};
            // Should the listing ever fail (a panic), each poll is a whole
            // rescan, as before it: never a poll that names nothing for ever.
            let mut listing = catch_unwind(|| Listing::new(&leases, &lineage)).ok();
            loop {
                std::thread::sleep(interval);
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                let polled = listing.as_mut().and_then(|l| catch_unwind(AssertUnwindSafe(|| l.poll())).ok());
                if polled.is_none() {
                    listing = None;
                }
                let sent = match polled {
                    None => tx.send(Event::Poll),
                    Some(p) if p.full => tx.send(Event::Poll),
                    Some(p) if !p.changed.is_empty() => tx.send(Event::FsChange(p.changed)),
                    Some(_) => Ok(()),
                };
                if sent.is_err() {
                    break;
                }
            }
        });
        if spawned.is_ok() {
            self.poll_stop = Some(stop);
        }
        let every = humantime::format_duration(self.interval);
        self.mode = match why {
            Some(w) => format!("poll {every} ({w})"),
            None => format!("poll {every}"),
        };
    }

    /// A watch error reported while running: poll instead, with the hint.
    pub fn failed(&mut self, why: &str) {
        if why == "watch limit" {
            self.hint = Some(limit_hint());
        }
        self.poll_instead(Some(why));
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(stop) = self.poll_stop.take() {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

fn limit_hint() -> String {
    "inotify watch limit reached: raise it with `sysctl fs.inotify.max_user_watches=524288`; polling meanwhile".into()
}
