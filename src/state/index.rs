//! One batch read as a whole read of its task reads it, without reading the
//! task: what `leases explain` needs to answer in milliseconds in a task of
//! 10,000 batches (issue 16). The index it keeps lives outside the use case.
//!
//! A whole read files a run record to the batch whose lease-folder files name
//! its run (the last such batch in key order), else to the batch its variables
//! hash to, so one batch's records depend on every file of its task. The index
//! keeps what each file said that filing needs: for a lease, orphan or note,
//! the run it names; for a run record, its run id and the key its variables
//! hash to. Each entry is kept with the file's inode number, which the
//! folder's listing gives without a stat: a file replaced by a rename (every
//! save of both engines, but for the peer's rewrites of its own record and
//! this engine's in-place claims, neither of which changes the run named or
//! the variables) has a new inode and is read again. The batch's own files,
//! and every record filed to it, are always read again; a file that could not
//! be read is never kept. So the batch is the one a whole read gives (a test
//! compares them), but for one case the index cannot see: a file edited in
//! place, by hand, so that it names another run or hashes to another key.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use sha2::Digest;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::read::*;
use super::scan::{Opened, open, task_clock};
use super::*;
use crate::layout::{self, Kind};
use crate::sys::Sys;

/// The first line of an index file: its format.
const HEADER: &str = "ubunye-index 1";
/// At most this many index files are kept (one per task looked at); the
/// oldest go first.
const KEEP: usize = 256;

/// A hash for inodes and run ids that costs a multiply a word, not
/// SipHash's rounds: the index is looked up once per file of a folder of
/// 10,000, and no one chooses these keys to collide (a collision costs time,
/// never a wrong answer).
#[derive(Default, Clone, Copy)]
struct Mix(u64);

impl std::hash::Hasher for Mix {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

type Fast = std::hash::BuildHasherDefault<Mix>;

/// One line of an index file: a file's inode and where, in the file's text,
/// the line, its name, its run and its key are.
#[derive(Clone, Debug)]
struct Line {
    line: Range<usize>,
    name: Range<usize>,
    run: Range<usize>,
    key: Option<Range<usize>>,
}

/// The lines of one folder, in the order they were written: the order the
/// folder was listed in, which the next listing of an unchanged folder gives
/// again. So each file's line is looked for first where the last one
/// matched; only a listing that strays from it builds a map by inode.
#[derive(Default)]
struct Lines {
    all: Vec<(u64, Line)>,
    next: std::cell::Cell<usize>,
    by_ino: std::cell::OnceCell<HashMap<u64, usize, Fast>>,
}

impl Lines {
    fn find(&self, ino: u64) -> Option<usize> {
        let at = self.next.get();
        let i = match self.all.get(at) {
            Some((i, _)) if *i == ino => at,
            _ => *self
                .by_ino
                .get_or_init(|| self.all.iter().enumerate().map(|(n, (i, _))| (*i, n)).collect())
                .get(&ino)?,
        };
        self.next.set(i + 1);
        Some(i)
    }
}

/// What the index knew of a task's files: its text kept whole, its lines
/// pointing into it (no copy per file).
#[derive(Default)]
struct Index {
    text: String,
    /// A lease, orphan or note: the run it names ("-" for none).
    leases: Lines,
    /// A run record: its run id ("=" when it is its file's name without
    /// `.json`, as both engines name records), and the key its variables hash to.
    records: Lines,
}

/// A text field that can be kept: no tab or line break, and not "-" or "=".
fn plain(s: &str) -> bool {
    s != "-" && s != "=" && !s.contains(['\t', '\n', '\r'])
}

impl Index {
    fn parse(text: String, header: &str) -> Index {
        let mut ix = Index::default();
        let Some(body) = text.strip_prefix(header).and_then(|b| b.strip_prefix('\n')) else { return ix };
        let n = body.bytes().filter(|b| *b == b'\n').count();
        ix.leases.all.reserve(n / 2);
        ix.records.all.reserve(n / 2);
        let mut at = text.len() - body.len();
        for line in body.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let Some(line) = line.strip_suffix('\n') else { continue };
            let mut fields: [Range<usize>; 5] = Default::default();
            let mut count = 0;
            let mut from = start;
            for f in line.split('\t') {
                if count == 5 {
                    count = 6;
                    break;
                }
                fields[count] = from..from + f.len();
                from += f.len() + 1;
                count += 1;
            }
            let field = |i: usize| &text[fields[i].clone()];
            let Ok(ino) = field(1).parse::<u64>() else { continue };
            let whole = start..start + line.len() + 1;
            match (field(0), count) {
                ("L", 4) => {
                    let [_, _, run, name, _] = fields;
                    ix.leases.all.push((ino, Line { line: whole, run, key: None, name }));
                }
                ("R", 5) => {
                    let key = (field(3) != "-").then(|| fields[3].clone());
                    let [_, _, run, _, name] = fields;
                    ix.records.all.push((ino, Line { line: whole, run, key, name }));
                }
                _ => {}
            }
        }
        ix.text = text;
        ix
    }

    /// A record's run id, as kept.
    fn run_of(&self, l: &Line) -> &str {
        match self.str(&l.run) {
            "=" => {
                let name = self.str(&l.name);
                &name[..name.len() - ".json".len()]
            }
            run => run,
        }
    }

    /// The line of the file `name` with inode `ino`, if the index knew it.
    fn get<'a>(&'a self, of: &'a Lines, ino: u64, name: &str) -> Option<&'a Line> {
        let (_, l) = &of.all[of.find(ino).filter(|_| ino != 0)?];
        (&self.text[l.name.clone()] == name).then_some(l)
    }

    /// How many lines it holds.
    fn len(&self) -> usize {
        self.leases.all.len() + self.records.all.len()
    }

    fn str(&self, r: &Range<usize>) -> &str {
        &self.text[r.clone()]
    }
}

/// The index file being written again, in the listings' order: the line of
/// every file still there and readable, and whether anything differs from
/// the old one.
#[derive(Default)]
struct Next {
    parts: Vec<Part>,
    changed: bool,
    kept: usize,
}

enum Part {
    Old(Range<usize>),
    New(String),
    Gone,
}

impl Next {
    fn keep(&mut self, l: &Line) {
        self.parts.push(Part::Old(l.line.clone()));
        self.kept += 1;
    }

    /// A place for the line of a file read below ([`Next::fill`]).
    fn wait(&mut self) -> usize {
        self.parts.push(Part::Gone);
        self.parts.len() - 1
    }

    /// A file read again: its line, and whether the old index said the same.
    fn fill(&mut self, at: usize, old: Option<(&Index, &Line)>, line: String) {
        match old {
            Some((ix, l)) if ix.text[l.line.clone()] == line => self.kept += 1,
            _ => self.changed = true,
        }
        self.parts[at] = Part::New(line);
    }

    fn text(&self, header: &str, old: &Index) -> String {
        let mut out = format!("{header}\n");
        for p in &self.parts {
            match p {
                Part::Old(r) => out.push_str(&old.text[r.clone()]),
                Part::New(l) => out.push_str(l),
                Part::Gone => {}
            }
        }
        out
    }
}

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

/// Where a task's index is kept, and the line that opens it (it names the
/// task's folders, so that two tasks whose names hash alike never share one).
struct Store {
    file: PathBuf,
    header: String,
}

impl Store {
    /// None when the folder is inside the use case or its records' folder
    /// (looking never writes there; this is checked before anything is
    /// made), or cannot be made.
    fn at(index_dir: &Path, root: &Path, lineage: &Path, leases: &Path, records: &Path) -> Option<Store> {
        let lineage = fs::canonicalize(lineage).unwrap_or_else(|_| lineage.to_path_buf());
        let inside = |d: &Path| d.starts_with(root) || d.starts_with(&lineage);
        if inside(&resolved(index_dir)?) {
            return None;
        }
        fs::create_dir_all(index_dir).ok()?;
        let dir = fs::canonicalize(index_dir).ok()?;
        if inside(&dir) {
            return None;
        }
        let (l, r) = (leases.to_string_lossy(), records.to_string_lossy());
        if !plain(&l) || !plain(&r) {
            return None;
        }
        let header = format!("{HEADER}\t{l}\t{r}");
        let id = sha2::Sha256::digest(header.as_bytes());
        let id: String = id.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Some(Store { file: dir.join(format!("{id}.tsv")), header })
    }

    fn load(&self) -> Index {
        fs::read_to_string(&self.file).map(|t| Index::parse(t, &self.header)).unwrap_or_default()
    }

    /// Write it whole (a temp file renamed), then let at most [`KEEP`] stay.
    /// A failure costs the next look its speed, nothing else.
    fn save(&self, text: &str) {
        let tmp = crate::fsx::tmp_path(&self.file);
        let written = fs::File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes()));
        if written.and_then(|()| fs::rename(&tmp, &self.file)).is_err() {
            let _ = fs::remove_file(&tmp);
            return;
        }
        let Some(dir) = self.file.parent() else { return };
        let Ok(rd) = fs::read_dir(dir) else { return };
        let mut all: Vec<(std::time::SystemTime, PathBuf)> = rd
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "tsv"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if all.len() > KEEP {
            all.sort();
            for (_, p) in &all[..all.len() - KEEP] {
                let _ = fs::remove_file(p);
            }
        }
    }
}

/// `path` with its longest existing head resolved (symlinks followed) and
/// the rest as written: where it would be made.
fn resolved(path: &Path) -> Option<PathBuf> {
    let path = std::path::absolute(path).ok()?;
    let mut head = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = fs::canonicalize(head) {
            return Some(rest.iter().rev().fold(real, |p: PathBuf, n| p.join(n)));
        }
        rest.push(head.file_name()?.to_os_string());
        head = head.parent()?;
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
    let Opened { root, beneath, leases_root, lineage_dir, now: opened_at } = open(uc, opts, sys)?;
    let (ldir, rdir) = (leases_root.join(task), lineage_dir.join(task));
    let leases = ldir.is_dir().then_some(ldir.as_path());
    let records = rdir.is_dir().then_some(rdir.as_path());
    let now = task_clock(opts, sys, leases, opened_at);
    let store = Store::at(index_dir, &root, &lineage_dir, &ldir, &rdir);
    let old = store.as_ref().map(Store::load).unwrap_or_default();
    let header = store.as_ref().map_or("", |s| s.header.as_str());
    let mut next = Next::default();
    let mut problems = Vec::new();

    // The lease folder, in the order it is listed. The batch's own files and
    // the names no engine writes are sorted as a whole read sorts them (with
    // its problems); the other batches' leases, orphans and notes say the
    // run they name from the index, where their inode is the one it knew.
    let mut own: BTreeMap<String, Folder> = BTreeMap::new();
    let mut odd: BTreeMap<String, Folder> = BTreeMap::new();
    let mut cached: Vec<(&str, &str)> = Vec::new();
    let mut named: Vec<(String, String)> = Vec::new();
    let mut unread: Vec<(String, PathBuf, u64, Kind, usize)> = Vec::new();
    if let Some(d) = leases {
        let listed = each_entry(d, |name, raw, ino, t| {
            let (kind, k, run) = layout::kind_of(name);
            let content = matches!(kind, Kind::Lease | Kind::Dead | Kind::Finished);
            if k == key {
                sort_entry(&mut own, &mut problems, name, d.join(raw), || is_dir(d, raw, t));
                if content {
                    unread.push((k.to_string(), d.join(raw), ino, kind, next.wait()));
                }
                return;
            }
            match kind {
                _ if content => match old.get(&old.leases, ino, name) {
                    Some(l) => {
                        let run = old.str(&l.run);
                        cached.push((if run == "-" { "" } else { run }, &old.str(&l.name)[..16]));
                        next.keep(l);
                    }
                    None => unread.push((k.to_string(), d.join(raw), ino, kind, next.wait())),
                },
                Kind::Done | Kind::Taken => named.push((run.to_string(), k.to_string())),
                Kind::Tmp | Kind::Clock => {}
                _ => sort_entry(&mut odd, &mut problems, name, d.join(raw), || is_dir(d, raw, t)),
            }
        });
        if let Err(e) = listed {
            problems.push(UnreadableFile::new(d, format!("cannot be listed: {e}")));
        }
    }
    // What the index did not know, read on every core.
    let opened = leases.and_then(|d| crate::fsx::Dir::open(d).ok());
    let read = par_map(unread, opened.as_ref(), |(k, p, ino, kind, at), reader| {
        let mut one = Folder::default();
        match kind {
            Kind::Lease => one.leases.push(p.clone()),
            Kind::Dead => one.dead.push(p.clone()),
            _ => one.finished.push(p.clone()),
        }
        let mut b = Batch::new(task, &k);
        fill(&mut b, one, reader, &beneath, sys, now);
        let run = b.named_runs().next().map(str::to_string).unwrap_or_default();
        (k, name_of(&p), ino, b.unreadable.is_empty().then_some(run), at)
    });
    for (k, name, ino, run, at) in read {
        let Some(run) = run else { continue };
        if ino != 0 && plain(&name) && (run.is_empty() || plain(&run)) {
            let shown = if run.is_empty() { "-" } else { &run };
            let was = old.get(&old.leases, ino, &name).map(|l| (&old, l));
            next.fill(at, was, format!("L\t{ino}\t{shown}\t{name}\n"));
        }
        named.push((run, k));
    }
    let mut mine: Option<Batch> = None;
    if let Some(f) = own.remove(key) {
        let mut b = Batch::new(task, key);
        fill(&mut b, f, &mut Reader::new(opened.as_ref()), &beneath, sys, now);
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

    // The records: those the index files to another batch are not read.
    let mut wanted: Vec<(PathBuf, u64, usize)> = Vec::new();
    if let Some(d) = records {
        let listed = each_entry(d, |name, raw, ino, _| {
            let Some(stem) = stem_of(raw) else { return };
            let by_name = || mine_by_name.iter().any(|r| r.as_bytes() == stem);
            match old.get(&old.records, ino, name) {
                Some(l) if !is_mine(old.run_of(l), l.key.as_ref().map(|r| old.str(r))) && !by_name() => next.keep(l),
                _ => wanted.push((d.join(raw), ino, next.wait())),
            }
        });
        if let Err(e) = listed {
            problems.push(UnreadableFile::new(d, format!("cannot be listed: {e}")));
        }
    }
    let opened = records.and_then(|d| crate::fsx::Dir::open(d).ok());
    let read = par_map(wanted, opened.as_ref(), |(p, ino, at), reader| {
        let rec = reader.record(&p).map(|r| {
            let hashed = r.variables.as_ref().and_then(|v| record_key(task, v));
            (r, hashed)
        });
        (p, ino, rec, at)
    });
    // Filed in the listing's order, as a whole read files them.
    for (p, ino, rec, at) in read {
        match rec {
            Ok((mut r, hashed)) => {
                let name = name_of(&p);
                if ino != 0 && plain(&name) && plain(&r.run_id) && hashed.as_deref().is_none_or(plain) {
                    let was = old.get(&old.records, ino, &name).map(|l| (&old, l));
                    let run = if name.strip_suffix(".json") == Some(r.run_id.as_str()) { "=" } else { &r.run_id };
                    next.fill(at, was, format!("R\t{ino}\t{run}\t{}\t{name}\n", hashed.as_deref().unwrap_or("-")));
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
    if let Some(s) = store.as_ref().filter(|_| next.changed || next.kept != old.len()) {
        s.save(&next.text(header, &old));
    }
    Ok((Scan { root, lineage_dir, now: opened_at, batches: Vec::new(), problems }, mine))
}
