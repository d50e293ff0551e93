//! One batch read as a whole read of its task reads it, without reading the
//! task: what `leases explain` needs to answer in milliseconds in a task of
//! 10,000 batches. The index it keeps lives outside the use case.
//!
//! A whole read files a run record to the batch whose lease-folder files name
//! its run (the last such batch in key order), else to the batch its variables
//! hash to, so one batch's records depend on every file of its task. The index
//! keeps what each file said that filing needs: for a lease, orphan or note,
//! the run it names; for a run record, its run id and the key its variables
//! hash to. Each line is kept with the stamp the file had before it was read
//! ([`store`]: device, inode, birth time, size, mtime, ctime), and is used
//! only while the file still has that stamp: any write, rename or file made
//! in its place changes it. A file is kept only once it has settled (its
//! ctime older than the look's start by more than a tick of the clock that
//! stamps it), and only on a local file system. The batch's own files, every
//! record filed to it and every file that is not a regular file (a symlink)
//! are always read again; a file that could not be read is never kept. So the
//! batch is the one a whole read gives (a test compares them, through a
//! random walk of changes and files replaced on the inode they had).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::read::*;
use super::scan::{Opened, open, task_clock};
use super::*;
use crate::layout::{self, Kind};
use crate::sys::Sys;

mod lines;
mod store;

use lines::{Fast, Index, Line, Next};
use store::{Store, Ts, plain, stamp};

/// Each name of the folder `dir`, with its inode and type, as the kernel
/// lists them (no copy per name; `.` and `..` left out).
fn each_entry(dir: &Path, mut f: impl FnMut(&str, &OsStr, u64, rustix::fs::FileType)) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut rd = rustix::fs::RawDir::new(&fd, &mut buf);
    while let Some(Ok(e)) = rd.next() {
        let name = e.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        f(&String::from_utf8_lossy(name), OsStr::from_bytes(name), e.ino(), e.file_type());
    }
    Ok(())
}

/// Whether a listed entry is a folder, as `DirEntry::file_type` says it
/// (the listing's type, else a stat).
fn is_dir(dir: &Path, name: &OsStr, t: rustix::fs::FileType) -> bool {
    match t {
        rustix::fs::FileType::Unknown => fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_dir()),
        t => t == rustix::fs::FileType::Directory,
    }
}

/// The stem of a listed `<stem>.json` (a name whose extension is `json`, as
/// `Path::extension` says: not `.json` alone).
fn stem_of(raw: &OsStr) -> Option<&[u8]> {
    raw.as_bytes().strip_suffix(b".json").filter(|s| !s.is_empty())
}

fn name_of(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The file `name` of `dir` as the index knew it, if it still has the stamp
/// it was read with.
fn still(dir: Option<&crate::fsx::Dir>, name: &OsStr, kept: &str, began: Ts) -> bool {
    dir.and_then(|d| stamp(d, name, began, 0)).is_some_and(|s| s.text() == kept)
}

/// The records' folder's `<stem>.json` files, in the order it lists them,
/// each with its line in the index where the file still has the stamp the
/// index knew; and whether it could be listed.
#[allow(clippy::type_complexity)]
fn known_records<'a>(
    d: &Path,
    old: &'a Index,
    dir: Option<&crate::fsx::Dir>,
    began: Ts,
) -> (Vec<(OsString, u64, Option<&'a Line>)>, std::io::Result<()>) {
    let mut out = Vec::new();
    let listed = each_entry(d, |name, raw, ino, _| {
        if stem_of(raw).is_some() {
            let l = old.get(&old.records, ino, name).filter(|l| still(dir, raw, old.stamp_of(l), began));
            out.push((raw.to_os_string(), ino, l));
        }
    });
    (out, listed)
}

/// A lease-folder file another batch's: its key, name, inode, kind, and its
/// place in the next index.
type Other = (String, OsString, u64, Kind, usize);

/// Batch `key` of `task` as [`super::scan_one`] reads it (with the same
/// problems), keeping an index of the task in `index_dir`.
pub(super) fn scan_one_indexed(
    uc: &Path,
    task: &str,
    key: &str,
    opts: &ScanOptions,
    sys: &Sys,
    index_dir: &Path,
) -> Result<(Scan, Option<Batch>), ScanError> {
    // Read before any file is: a file changed after it has a ctime no older.
    let began = store::coarse_now();
    let Opened { root, beneath, leases_root, lineage_dir, now: opened_at } = open(uc, opts, sys)?;
    let (ldir, rdir) = (leases_root.join(task), lineage_dir.join(task));
    let leases = ldir.is_dir().then_some(ldir.as_path());
    let records = rdir.is_dir().then_some(rdir.as_path());
    let now = task_clock(opts, sys, leases, opened_at);
    let store = Store::at(index_dir, &root, &lineage_dir, &ldir, &rdir, &sys.host);
    let settle = i64::try_from(opts.index_settle.unwrap_or(store::SETTLE).as_nanos()).unwrap_or(i64::MAX);
    let old = store.as_ref().and_then(|s| Some(Index::parse(s.load()?, &s.header))).unwrap_or_default();
    let header = store.as_ref().map_or("", |s| s.header.as_str());
    let mut next = Next::default();
    let mut problems = Vec::new();
    // Each folder opened once, its files read and stamped through it;
    // without a store nothing is stamped: every file is read.
    let (lopen, ropen) =
        (leases.and_then(|d| crate::fsx::Dir::open(d).ok()), records.and_then(|d| crate::fsx::Dir::open(d).ok()));
    let (ldirfd, rdirfd) = (lopen.as_ref().filter(|_| store.is_some()), ropen.as_ref().filter(|_| store.is_some()));

    // The records' folder is listed, and each file the index knew stamped,
    // on a thread of its own while the lease folder is (what is done with
    // them waits for the lease folder's runs).
    let rdirref = rdirfd;
    let old = &old;
    std::thread::scope(|scope| {
        let listing = records.map(|d| scope.spawn(move || known_records(d, old, rdirref, began)));

        // The lease folder, in the order it is listed. The batch's own files and
        // the names no engine writes are sorted as a whole read sorts them (with
        // its problems); the other batches' notes say the run they name from
        // the index, where the file still has the stamp the index knew.
        let mut own: BTreeMap<String, Folder> = BTreeMap::new();
        let mut odd: BTreeMap<String, Folder> = BTreeMap::new();
        let mut named: Vec<(String, String)> = Vec::new();
        let mut unread: Vec<Other> = Vec::new();
        let mut cached: Vec<(&str, &str)> = Vec::new();
        let ldirref = ldirfd;
        if let Some(d) = leases {
            let listed = each_entry(d, |name, raw, ino, t| {
                let (kind, k, run) = layout::kind_of(name);
                let content = matches!(kind, Kind::Lease | Kind::Dead | Kind::Finished);
                if k == key {
                    sort_entry(&mut own, &mut problems, name, d.join(raw), || is_dir(d, raw, t));
                    if content {
                        unread.push((k.to_string(), raw.to_os_string(), ino, kind, next.wait()));
                    }
                    return;
                }
                match kind {
                    // Only notes are kept: whether a lease or an orphan can be
                    // read depends on the time, this host and its processes.
                    _ if content => {
                        let at = next.wait();
                        let l = old.get(&old.leases, ino, name).filter(|_| kind == Kind::Finished);
                        match l.filter(|l| still(ldirref, raw, old.stamp_of(l), began)) {
                            Some(l) => {
                                cached.push(old.lease_of(l));
                                next.keep(at, l);
                            }
                            None => unread.push((k.to_string(), raw.to_os_string(), ino, kind, at)),
                        }
                    }
                    Kind::Done | Kind::Taken => named.push((run.to_string(), k.to_string())),
                    Kind::Tmp | Kind::Clock => {}
                    _ => sort_entry(&mut odd, &mut problems, name, d.join(raw), || is_dir(d, raw, t)),
                }
            });
            if let Err(e) = listed {
                problems.push(UnreadableFile::new(d, format!("cannot be listed: {e}")));
            }
        }
        // What the index did not know, or knew of another file, read on every core.
        let read = par_map(unread, lopen.as_ref(), |(k, raw, ino, kind, at), reader| {
            let st = ldirref.filter(|_| kind == Kind::Finished).and_then(|d| stamp(d, &raw, began, settle));
            let p = leases.map_or_else(PathBuf::new, |d| d.join(&raw));
            let mut one = Folder::default();
            match kind {
                Kind::Lease => one.leases.push(p.clone()),
                Kind::Dead => one.dead.push(p.clone()),
                _ => one.finished.push(p.clone()),
            }
            let mut b = Batch::new(task, &k);
            fill(&mut b, one, reader, &beneath, sys, now);
            let run = b.named_runs().next().map(str::to_string).unwrap_or_default();
            (k, name_of(&p), ino, st, b.unreadable.is_empty().then_some(run), at)
        });
        for (k, name, ino, st, run, at) in read {
            let Some(run) = run else { continue };
            if ino != 0
                && plain(&name)
                && (run.is_empty() || plain(&run))
                && let Some(st) = st.as_ref().filter(|s| s.settled)
            {
                let text = st.text();
                let shown = if run.is_empty() { "-" } else { &run };
                let was = old.get(&old.leases, ino, &name).map(|l| (old, l));
                next.fill(at, was, format!("L\t{ino}\t{text}\t{shown}\t{name}\n"));
            }
            named.push((run, k));
        }
        let mut mine: Option<Batch> = None;
        if let Some(f) = own.remove(key) {
            let mut b = Batch::new(task, key);
            fill(&mut b, f, &mut Reader::new(lopen.as_ref()), &beneath, sys, now);
            named.extend(b.named_runs().map(|r| (r.to_string(), key.to_string())));
            mine = Some(b);
        }
        // Which batch each run is filed to by name: the last in key order.
        let mut namer: HashMap<&str, &str, Fast> =
            HashMap::with_capacity_and_hasher(cached.len() + named.len(), Fast::default());
        for (run, k) in cached.iter().copied().chain(named.iter().map(|(r, k)| (r.as_str(), k.as_str()))) {
            if !run.is_empty() {
                namer.entry(run).and_modify(|was| *was = (*was).max(k)).or_insert(k);
            }
        }
        let is_mine = |run: &str, hashed: Option<&str>| match namer.get(run) {
            Some(k) => *k == key,
            None => hashed == Some(key),
        };
        // The runs filed here by name: an unreadable record named after one of
        // them is this batch's.
        let mine_by_name: Vec<&str> = namer.iter().filter(|(_, k)| **k == key).map(|(r, _)| *r).collect();
        let named_mine = |p: &Path| {
            let stem = p.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
            mine_by_name.contains(&stem.as_ref())
        };

        // The records: those the index files to another batch, still stamped
        // as it knew them, are not read.
        let mut wanted: Vec<(OsString, u64, usize)> = Vec::new();
        if let Some((d, listing)) = records.zip(listing) {
            let (entries, listed) =
                listing.join().unwrap_or_else(|_| (Vec::new(), Err(std::io::Error::other("its listing failed"))));
            for (raw, ino, l) in entries {
                let at = next.wait();
                let by_name = || stem_of(&raw).is_some_and(|stem| mine_by_name.iter().any(|r| r.as_bytes() == stem));
                match l {
                    Some(l) if !is_mine(old.run_of(l), old.key_of(l)) && !by_name() => next.keep(at, l),
                    _ => wanted.push((raw, ino, at)),
                }
            }
            if let Err(e) = listed {
                problems.push(UnreadableFile::new(d, format!("cannot be listed: {e}")));
            }
        }
        // Filed in the listing's order, as a whole read files them.
        let read = par_map(wanted, ropen.as_ref(), |(raw, ino, at), reader| {
            let st = rdirref.and_then(|d| stamp(d, &raw, began, settle));
            let p = records.map_or_else(PathBuf::new, |d| d.join(&raw));
            let rec = reader.record(&p).map(|r| {
                let hashed = r.variables.as_ref().and_then(|v| record_key(task, v));
                (r, hashed)
            });
            (p, ino, st, rec, at)
        });
        for (p, ino, st, rec, at) in read {
            match rec {
                Ok((mut r, hashed)) => {
                    let name = name_of(&p);
                    let fits = ino != 0 && plain(&name) && plain(&r.run_id) && hashed.as_deref().is_none_or(plain);
                    if let (true, Some(st)) = (fits, st.as_ref().filter(|s| s.settled)) {
                        let text = st.text();
                        let was = old.get(&old.records, ino, &name).map(|l| (old, l));
                        let run = if name.strip_suffix(".json") == Some(r.run_id.as_str()) { "=" } else { &r.run_id };
                        let hashed = hashed.as_deref().unwrap_or("-");
                        next.fill(at, was, format!("R\t{ino}\t{text}\t{run}\t{hashed}\t{name}\n"));
                    }
                    if !is_mine(&r.run_id, hashed.as_deref()) {
                        continue;
                    }
                    let b = mine.get_or_insert_with(|| Batch::new(task, key));
                    if hashed.as_deref() == Some(key) {
                        let vars = r.variables.take();
                        if b.variables.is_none() {
                            b.variables = vars;
                        }
                    }
                    b.records.push(r);
                }
                Err(u) if named_mine(&u.path) => mine.get_or_insert_with(|| Batch::new(task, key)).unreadable.push(u),
                Err(_) => {}
            }
        }
        if let Some(b) = mine.as_mut() {
            b.records.sort_by(|a, c| c.started_at.cmp(&a.started_at));
            classify(b, now);
        }
        if let Some(s) = store.as_ref().filter(|_| next.differs(old)) {
            s.save(&next.text(header, old));
        }
        Ok((Scan { root, lineage_dir, now: opened_at, batches: Vec::new(), problems }, mine))
    })
}
