//! How `top` notices changes (`--watch notify`): the kernel's file-system
//! events (notify's inotify watcher, [`notifier`]) on the lease folder, the
//! lineage folder and each folder below them down to the tasks' (each
//! watched alone, found without a `stat` of any file); or a look every
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
use std::time::{Duration, Instant};

mod notifier;
pub use notifier::DEBOUNCE;
use notifier::Notifier;

use crate::top::event::Event;
use crate::top::listing::Listing;

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

/// An error that means the inotify watch limit (ENOSPC from
/// `inotify_add_watch`).
pub fn is_limit(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(28)
}

/// How a folder is watched: alone, or with the folders below it to
/// [`LEVELS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Depth {
    Alone,
    Levels,
}

/// The watcher, whichever way it works.
pub struct Watch {
    tx: Sender<Event>,
    interval: Duration,
    /// (folder, how deep): the lease and lineage folders (to [`LEVELS`]), and
    /// the folders they appear in (alone).
    desired: Vec<(PathBuf, Depth)>,
    /// The lease folder and the lineage folder, as a poll looks at them.
    leases: PathBuf,
    lineage: PathBuf,
    notifier: Option<Notifier>,
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
            (ubunye.clone(), Depth::Alone),
            (ubunye.join("leases"), Depth::Levels),
            (lineage.to_path_buf(), Depth::Levels),
        ];
        if let Some(parent) = lineage.parent().filter(|p| *p != ubunye) {
            desired.push((parent.to_path_buf(), Depth::Alone));
        }
        let mut w = Watch {
            tx,
            interval,
            desired,
            leases: ubunye.join("leases"),
            lineage: lineage.to_path_buf(),
            notifier: None,
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
                    w.notifier = None;
                    w.poll_instead(Some(if limit { "watch limit" } else { "notify failed" }));
                    if !limit {
                        w.hint = Some(format!("cannot watch for changes ({e}); polling instead"));
                    }
                }
            }
        }
        w
    }

    fn notify(&mut self) -> std::io::Result<()> {
        let rescan_at = self.desired.first().map(|d| d.0.clone()).unwrap_or_default();
        self.notifier = Some(Notifier::start(self.tx.clone(), rescan_at)?);
        self.mode = "notify".into();
        self.ensure()
    }

    /// Watch the folders that exist and are not watched yet (or were made
    /// anew); forget those that went. The lease and lineage folders are
    /// watched with every folder below them to [`LEVELS`], found by
    /// [`folders`].
    pub fn ensure(&mut self) -> std::io::Result<()> {
        let Some(d) = self.notifier.as_mut() else { return Ok(()) };
        forget_dropped(d, &mut self.watched);
        let mut found = Vec::new();
        for (p, mode) in &self.desired {
            match (dir_id(p), self.watched.get(p).copied()) {
                // Walked again each time (after every read): a few hundred
                // names at most, and a folder made before its parent was
                // watched is found here.
                (Some(_), _) if *mode == Depth::Levels => found.extend(folders(p, 0)),
                (Some(now), Some(was)) if now == was => {}
                (Some(now), _) => found.push((p.clone(), now)),
                (None, Some(_)) => forget(d, &mut self.watched, p),
                (None, None) => {}
            }
        }
        watch_all(d, &mut self.watched, found)
    }

    /// Changes just reported (before the app has them): a folder made (or
    /// made anew, or gone) at the levels watched below the lease and lineage
    /// folders is watched with the folders below it (or forgotten). Only a
    /// path at those levels is looked at, with one `stat`: a file in a task's
    /// folder never. Events lost (a path naming `.ubunye` itself): every
    /// level is looked at again. A folder the watcher stopped watching by
    /// itself is named in these changes, and so looked at again too.
    pub fn noticed(&mut self, paths: &[PathBuf]) -> std::io::Result<()> {
        let Some(d) = self.notifier.as_mut() else { return Ok(()) };
        forget_dropped(d, &mut self.watched);
        let roots: Vec<&PathBuf> = self.desired.iter().filter(|(_, m)| *m == Depth::Levels).map(|(p, _)| p).collect();
        let mut found = Vec::new();
        for p in paths {
            if self.desired.first().is_some_and(|(top, _)| top == p) {
                for root in &roots {
                    found.extend(folders(root, 0));
                }
                continue;
            }
            let Some(level) = roots.iter().find_map(|r| p.strip_prefix(r).ok().map(|rest| rest.components().count()))
            else {
                continue;
            };
            if level > LEVELS {
                continue;
            }
            match (dir_id(p), self.watched.get(p).copied()) {
                (Some(now), Some(was)) if now == was => {}
                (Some(_), _) => found.extend(folders(p, level)),
                (None, Some(_)) => forget(d, &mut self.watched, p),
                (None, None) => {}
            }
        }
        watch_all(d, &mut self.watched, found)
    }

    /// Stop watching for events; rescan every interval instead.
    pub fn poll_instead(&mut self, why: Option<&str>) {
        self.notifier = None;
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
            let clock = Clock { now: &Instant::now, sleep: &mut std::thread::sleep };
            on_schedule(interval, clock, || {
                if flag.load(Ordering::Relaxed) {
                    return false;
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
                sent.is_ok()
            });
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

/// How far below the lease and lineage folders folders are watched:
/// `<usecase>/<package>/<task>`, the levels a scan reads (what lies below a
/// task's folder is not read, so not watched).
pub const LEVELS: usize = 3;

/// A folder's (device, inode), following a symlink as the scan follows one
/// at the levels it reads; None for anything but a folder.
fn dir_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().filter(|m| m.is_dir()).map(|m| (m.dev(), m.ino()))
}

/// `top`'s folder and every folder below it to [`LEVELS`] (`level`: how far
/// below a watched root it is), with its (device, inode). Each is listed by
/// its entries' types alone: no file is `stat`ed (notify's recursive mode
/// stats every entry below it to find the folders: two million at a
/// million batches, seconds before the first frame), and a task's folder,
/// where the files are, is not listed at all.
pub fn folders(top: &Path, level: usize) -> Vec<(PathBuf, (u64, u64))> {
    let mut out = Vec::new();
    let Some(id) = dir_id(top) else { return out };
    out.push((top.to_path_buf(), id));
    let mut todo = vec![(top.to_path_buf(), level)];
    while let Some((dir, level)) = todo.pop() {
        if level >= LEVELS {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if !(t.is_dir() || t.is_symlink()) {
                continue;
            }
            let path = e.path();
            if let Some(id) = dir_id(&path) {
                out.push((path.clone(), id));
                todo.push((path, level + 1));
            }
        }
    }
    out
}

/// Watch each folder found alone (again if it was made anew), those not
/// watched as they are now, in one request to the watcher's thread: a
/// request for each of the 224 folders of a hundred tasks took 3-15 ms
/// before the first frame, one takes 2-3 ms.
fn watch_all(
    d: &mut Notifier,
    watched: &mut HashMap<PathBuf, (u64, u64)>,
    mut found: Vec<(PathBuf, (u64, u64))>,
) -> std::io::Result<()> {
    found.retain(|(p, id)| watched.get(p) != Some(id));
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Ok(());
    }
    for (p, id) in d.watch_all(found, passed_over)? {
        watched.insert(p, id);
    }
    Ok(())
}

/// A folder gone (or made a file) since it was listed: its own event is on
/// its way. Not to be read: the scan names it. Neither is the watcher's
/// failure (it dropped `top` into polling); the next walk tries again.
fn passed_over(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES))
}

/// The folders the watcher stopped watching by itself (each named in the
/// change that made it stop): not watched, so a folder still there (made
/// anew before the watcher read that it went) is watched again.
fn forget_dropped(d: &mut Notifier, watched: &mut HashMap<PathBuf, (u64, u64)>) {
    for p in d.dropped() {
        watched.remove(&p);
    }
}

/// Stop watching a folder that went, and every folder below it.
fn forget(d: &mut Notifier, watched: &mut HashMap<PathBuf, (u64, u64)>, p: &Path) {
    let gone: Vec<PathBuf> = watched.keys().filter(|k| k.starts_with(p)).cloned().collect();
    for g in gone {
        d.unwatch(&g);
        watched.remove(&g);
    }
}

fn limit_hint() -> String {
    "inotify watch limit reached: raise it with `sysctl fs.inotify.max_user_watches=524288`; polling meanwhile".into()
}

/// The clock a schedule is kept by (the machine's, or a test's).
struct Clock<'a> {
    now: &'a dyn Fn() -> Instant,
    sleep: &'a mut dyn FnMut(Duration),
}

/// Call `poll` on a schedule, one every interval from now, until it says to
/// stop: a poll's own time is not added to the wait for the next, so a
/// change waits for the next poll at most an interval. The next time is
/// taken after each poll: one that took longer than the interval is followed
/// by the next time of the schedule, not at once. An interval
/// too long to be a time of this clock is slept as it is.
fn on_schedule(interval: Duration, clock: Clock, mut poll: impl FnMut() -> bool) {
    let mut due = (clock.now)().checked_add(interval);
    loop {
        (clock.sleep)(due.map_or(interval, |d| d.saturating_duration_since((clock.now)())));
        if !poll() {
            return;
        }
        due = due.and_then(|d| next_poll(d, (clock.now)(), interval));
    }
}

/// When the poll after the one `due` now is: an interval later, or, when a
/// poll took longer than that (`now` past it), the next time of the schedule
/// still to come (never two polls one after the other to catch up). None
/// when that is past what this clock can say.
fn next_poll(due: Instant, now: Instant, interval: Duration) -> Option<Instant> {
    if interval.is_zero() {
        return Some(now);
    }
    let next = due.checked_add(interval)?;
    if next > now {
        return Some(next);
    }
    let behind = now.duration_since(next).as_nanos() / interval.as_nanos() + 1;
    next.checked_add(interval.checked_mul(u32::try_from(behind).ok()?)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn polls_keep_to_their_schedule() {
        use std::time::{Duration, Instant};
        let (t0, s) = (Instant::now(), Duration::from_secs(1));
        let ms = |n: u64| Duration::from_millis(n);
        // A poll that took 300 ms: the next is still one second after the last was due.
        assert_eq!(super::next_poll(t0, t0 + ms(300), s), Some(t0 + s));
        // One that took 2.5 s: the next time of the schedule, at 3 s.
        assert_eq!(super::next_poll(t0, t0 + ms(2500), s), Some(t0 + ms(3000)));
        // Exactly on the next time: the one after it.
        assert_eq!(super::next_poll(t0, t0 + s, s), Some(t0 + ms(2000)));
        // No interval: at once, never in the past.
        assert_eq!(super::next_poll(t0, t0 + ms(5), Duration::ZERO), Some(t0 + ms(5)));
        // An interval past the clock's end: no time, no panic.
        assert_eq!(super::next_poll(t0, t0, Duration::MAX), None);
    }

    /// The next time is taken after the poll: taken before it, a poll slower
    /// than the interval would be followed by the next one at once, for ever.
    #[test]
    fn a_slow_poll_is_followed_by_the_next_time_of_the_schedule() {
        use std::cell::Cell;
        use std::time::{Duration, Instant};
        let ms = Duration::from_millis;
        for (takes, want) in
            [(10, vec![40, 80, 120, 160]), (60, vec![40, 120, 200, 280]), (100, vec![40, 160, 280, 400])]
        {
            let t0 = Instant::now();
            let at = Cell::new(t0);
            let now = || at.get();
            let mut sleep = |d: Duration| at.set(at.get() + d);
            let mut starts = Vec::new();
            let clock = super::Clock { now: &now, sleep: &mut sleep };
            super::on_schedule(ms(40), clock, || {
                starts.push(at.get().duration_since(t0).as_millis() as u64);
                at.set(at.get() + ms(takes));
                starts.len() < 4
            });
            assert_eq!(starts, want, "a poll of {takes} ms");
        }
    }

    use super::*;

    /// A folder that went between its listing and its watch is not the
    /// watcher's failure (that would drop `top` into polling).
    #[test]
    fn a_folder_gone_before_its_watch_is_passed_over() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let d = tempfile::tempdir().unwrap();
        let mut k = Notifier::start(tx, d.path().to_path_buf()).unwrap();
        let mut watched = HashMap::new();
        let gone = d.path().join("gone");
        watch_all(&mut k, &mut watched, vec![(gone.clone(), (1, 2))]).unwrap();
        assert!(watched.is_empty(), "a folder not watched is not noted as watched");
        std::fs::create_dir(&gone).unwrap();
        let id = dir_id(&gone).unwrap();
        watch_all(&mut k, &mut watched, vec![(gone.clone(), id)]).unwrap();
        assert_eq!(watched.get(&gone), Some(&id));
    }
}
