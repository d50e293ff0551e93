//! The data `top` shows: the library's [`Scan`] of a use case, kept up to date.
//! File-system events are hints: each path is mapped to the batch it belongs to
//! and that batch alone is read again (`scan_batch`), a run record is read again
//! by itself (`read_record`), and anything unclear asks for a full rescan. Time
//! alone changes dead and stalled: [`Model::tick`] re-judges every lease.
//! No lease logic here: every judgement is the library's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ubunye::layout::{self, Entry};
use ubunye::state::{self, Batch, Scan, State};
use ubunye::sys::Now;

use crate::top::index::Index;

mod clock;
mod light;
mod packed;
mod records;
mod row;
mod source;
mod tasks;
mod text;
use clock::Clocks;
pub use light::{Kept, keep, keep_all};
use light::{Side, Slot, give_back_memory};
use records::file_record;
pub use row::{BatchRef, RecordRef};
pub use source::Source;
use tasks::Tasks;

/// A batch, by task and key.
pub type Id = (String, String);

/// More distinct batches than this in one burst of events: one full rescan
/// instead of reading each.
pub const BURST: usize = 2_000;

/// What changed in the model since the table last took its changes
/// ([`Model::take_changes`]): whether a batch was added, removed or moved,
/// and each batch put in place, with its state before.
#[derive(Debug, Default)]
pub struct Changes {
    pub reshaped: bool,
    pub touched: Vec<(usize, State)>,
}

/// Past this many batches put in place before the table looks: counted as
/// reshaped (a whole sort), not kept one by one.
const TOUCHED_AT_MOST: usize = 100_000;

/// After this many batches packed alone (read again after a change), the
/// model packs again what its chunks hold ([`Model::compact`]).
const COMPACT_AFTER: usize = 4096;

/// At most this many batches of a burst are read again at once, on the UI
/// thread; a bigger burst waits for the read of their tasks.
const AT_ONCE: usize = 16;

/// What one changed path means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file of one batch in its task's lease folder.
    Batch(Id),
    /// A run record: `<lineage>/<task>/<run>.json`.
    Record { task: String, path: PathBuf },
    /// Another file in a task's lease folder (one no engine writes there: a
    /// problem a read of the task reports).
    Task(String),
    /// Nothing the dashboard shows (a clock probe, a temp file of a record).
    Ignore,
    /// A folder appeared or went, or something unclear: read everything again.
    Full,
}

/// What applying a burst of changes did.
#[derive(Debug, Default)]
pub struct Applied {
    /// Something shown changed.
    pub changed: bool,
    /// A full rescan is needed.
    pub full: bool,
    /// Tasks whose files changed: each is read again whole, off the UI
    /// thread ([`Model::begin_read`] with them), so that every record is
    /// filed as a full scan files it.
    pub tasks: BTreeSet<String>,
    /// What could not be read.
    pub errors: Vec<String>,
}

/// What a path three levels under the lease or lineage folder means: its
/// task, read again whole, when it is a folder (symlinks followed) with a
/// UTF-8 name, or is gone; anything else only a full scan reports.
fn task_folder(path: &Path, parts: &[String]) -> Target {
    let utf8 = path.iter().all(|c| c.to_str().is_some());
    let usable = match std::fs::symlink_metadata(path) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(_) => std::fs::metadata(path).is_ok_and(|m| m.is_dir()),
    };
    if utf8 && usable { Target::Task(parts.join("/")) } else { Target::Full }
}

/// The use case as last read.
pub struct Model {
    pub src: Source,
    /// The use case's folders, clock and problems; its batches are the
    /// model's own ([`Model::row`]), not kept here.
    pub scan: Scan,
    index: Index,
    leases_root: PathBuf,
    /// The disks' clocks.
    clocks: Clocks,
    /// Bumped on every change of what is shown.
    pub generation: u64,
    ticks: u64,
    /// When something last changed (this machine's clock).
    pub last_change: Option<SystemTime>,
    /// Every batch: whole, or packed when light ([`light`]).
    slots: Vec<Slot>,
    /// The read under way (the first read or a rescan), and for each batch
    /// the read that last put it (what a read did not put again is gone) and
    /// its task's number.
    pass: u32,
    side: Vec<Side>,
    /// The tasks the read under way reads (None: all of them).
    scope: Option<BTreeSet<String>>,
    /// Where the batches with a lease are, for the tick (a million batches
    /// walked every second cost 1 % of a core); None when a batch was put,
    /// moved or removed since.
    leased: Option<Vec<usize>>,
    tasks: Tasks,
    /// Batches packed alone since the last [`Model::compact`].
    alone: usize,
    changes: Changes,
}

impl Model {
    pub fn new(src: Source, scan: Scan) -> Model {
        let leases_root = layout::leases_root(&scan.root);
        let mut m = Model {
            src,
            index: Index::default(),
            leases_root,
            clocks: Clocks::default(),
            generation: 0,
            ticks: 0,
            last_change: None,
            pass: 0,
            slots: Vec::new(),
            side: Vec::new(),
            scope: None,
            leased: None,
            tasks: Tasks::default(),
            alone: 0,
            changes: Changes { reshaped: true, touched: Vec::new() },
            scan,
        };
        for k in keep_all(std::mem::take(&mut m.scan.batches)) {
            let task = m.tasks.id(&k.task);
            m.slots.push(k.slot);
            m.side.push(Side { stamp: 0, task });
        }
        m.reindex();
        m
    }

    fn reindex(&mut self) {
        self.leased = None;
        self.changes.reshaped = true;
        let (slots, side, tasks) = (&self.slots, &self.side, &self.tasks);
        self.index = Index::build(slots.len(), |i| names(slots, side, tasks, i));
    }

    /// The tasks of the read under way (None: all of them, or no read).
    pub fn reading(&self) -> Option<&BTreeSet<String>> {
        self.scope.as_ref()
    }

    /// A read starts: of the whole use case (`tasks` None: the first read, or
    /// a rescan in poll mode or after a burst) or of the tasks whose files
    /// changed. Its batches come a task at a time ([`Model::extend`]), and
    /// [`Model::loaded`] ends it. One task's batches are held beside the
    /// model at a time, never a second copy of it all.
    pub fn begin_read(&mut self, tasks: Option<BTreeSet<String>>) {
        self.pass = self.pass.wrapping_add(1);
        self.scope = tasks;
    }

    /// Put one task's batches, as the read under way found them. A batch read
    /// meanwhile because of a file event is replaced: the event is applied
    /// again when the read is over.
    pub fn extend(&mut self, batches: Vec<Kept>) {
        for b in batches {
            self.place(b);
        }
        self.generation += 1;
        self.trim();
    }

    /// The read is over: what it could not list, and (`complete`: every task
    /// it found was put) the batches of the tasks it read that it did not
    /// find again go.
    pub fn loaded(&mut self, head: ubunye::state::ScanHead, complete: bool) {
        let scope = self.scope.take();
        let pass = self.pass;
        // The tasks read, by number: no batch's task name is looked at.
        let read: Option<Vec<bool>> = scope.as_ref().map(|t| {
            let mut read = vec![false; self.tasks.len()];
            for id in t.iter().filter_map(|t| self.tasks.get(t)) {
                read[id as usize] = true;
            }
            read
        });
        let read = |s: &Side| read.as_ref().is_none_or(|r| r.get(s.task as usize).copied().unwrap_or(false));
        let gone: Vec<bool> = self.side.iter().map(|s| s.stamp != pass && read(s)).collect();
        if complete && gone.iter().any(|&g| g) {
            let mut keep = gone.iter().map(|&g| !g);
            self.slots.retain(|_| keep.next().unwrap_or(true));
            let mut keep = gone.iter().map(|&g| !g);
            self.side.retain(|_| keep.next().unwrap_or(true));
            self.reindex();
        }
        // The batches came a task at a time: room left over is let go.
        self.slots.shrink_to_fit();
        self.side.shrink_to_fit();
        match &scope {
            None => self.scan.problems = head.problems,
            // What a read of some tasks finds wrong replaces what was found
            // in their folders before.
            Some(tasks) => {
                let leases = layout::leases_root(&self.scan.root);
                let dirs: Vec<PathBuf> =
                    tasks.iter().flat_map(|t| [leases.join(t), self.scan.lineage_dir.join(t)]).collect();
                self.scan.problems.retain(|p| !dirs.iter().any(|d| p.path.starts_with(d)));
                self.scan.problems.extend(head.problems);
            }
        }
        self.scan.now = head.now;
        self.changed();
        // (The read's scope, taken above.)
        if scope.is_none() {
            self.compact();
            give_back_memory();
        }
    }

    /// Put a batch, read whole, in place (a new one at the end), stamped with
    /// the read under way, light when it is finished.
    fn place(&mut self, k: Kept) {
        let task = self.tasks.id(&k.task);
        let side = Side { stamp: self.pass, task };
        let at = self.position(&k.task, k.slot.key());
        self.leased = None;
        match at {
            Some(i) => {
                let before = self.state_of(i);
                self.touch(i, before);
                self.slots[i] = k.slot;
                self.side[i] = side;
            }
            None => {
                self.changes.reshaped = true;
                self.slots.push(k.slot);
                self.side.push(side);
                let (slots, side, tasks) = (&self.slots, &self.side, &self.tasks);
                self.index.insert(slots.len() - 1, |i| names(slots, side, tasks, i));
            }
        }
    }

    /// A batch with everything known of it, for its explanation: as kept, or,
    /// when it is kept light, read again as [`Model::reread`] reads it.
    pub fn whole(&mut self, id: &Id) -> Result<Option<Batch>, String> {
        let Some(i) = self.position(&id.0, &id.1) else { return Ok(None) };
        if !self.slots[i].light() {
            return Ok(self.batch_at(i));
        }
        let now = self.now();
        self.read_again(id, now).map(Some)
    }

    /// A batch read again from disk as [`Model::reread`] reads it (its
    /// lease-folder files, the records they name and the records the model
    /// files under it), without putting it in place: what a repair's plan is
    /// made from, as fresh as the disk and filed as a full scan files it.
    pub fn fresh(&mut self, id: &Id) -> Result<Batch, String> {
        let now = self.now_for(&id.0);
        self.read_again(id, now)
    }

    /// Hand back what a read of the whole use case freed ([`give_back_memory`]).
    /// A read of a few tasks frees a few megabytes, which the next read
    /// reuses; handing back purges every arena (glibc's `malloc_trim`, used
    /// before, was 13 % of a run record's time to the screen at a million
    /// batches).
    fn trim(&self) {
        if self.scope.is_none() {
            give_back_memory();
        }
    }

    fn changed(&mut self) {
        self.generation += 1;
        self.last_change = Some(self.src.sys.clock.now());
    }

    /// Batch `id`, borrowed.
    pub fn get(&self, id: &Id) -> Option<BatchRef<'_>> {
        self.position(&id.0, &id.1).and_then(|i| self.row(i))
    }

    /// Batch `id` as kept (light or not), owned: for tests and comparisons.
    pub fn batch(&self, id: &Id) -> Option<Batch> {
        self.position(&id.0, &id.1).and_then(|i| self.batch_at(i))
    }

    /// The batch at `i` as kept, owned.
    pub fn batch_at(&self, i: usize) -> Option<Batch> {
        let (slot, side) = (self.slots.get(i)?, self.side.get(i)?);
        Some(slot.to_batch(self.tasks.name(side.task)))
    }

    /// Every batch as kept, owned, in the model's order: for tests.
    pub fn to_batches(&self) -> Vec<Batch> {
        (0..self.len()).filter_map(|i| self.batch_at(i)).collect()
    }

    /// Batch `i`, borrowed.
    pub fn row(&self, i: usize) -> Option<BatchRef<'_>> {
        let (slot, side) = (self.slots.get(i)?, self.side.get(i)?);
        Some(slot.row(self.tasks.name(side.task)))
    }

    /// What changed since the last call: for the table to sort only when
    /// an order may have moved.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::replace(&mut self.changes, Changes { reshaped: false, touched: Vec::new() })
    }

    fn touch(&mut self, i: usize, before: State) {
        if self.changes.reshaped {
            return;
        }
        if self.changes.touched.len() >= TOUCHED_AT_MOST {
            self.changes.reshaped = true;
            self.changes.touched = Vec::new();
            return;
        }
        self.changes.touched.push((i, before));
    }

    /// The state of batch `i` (a packed one is finished: nothing is read).
    pub fn state_of(&self, i: usize) -> State {
        match self.slots.get(i) {
            Some(Slot::Whole(w)) => w.batch.state,
            _ => State::Finished,
        }
    }

    /// How many batches it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// How many batches are kept packed, and the bytes of the chunks that
    /// hold them (each counted once).
    pub fn packed(&self) -> (usize, usize) {
        let mut chunks = std::collections::HashSet::new();
        self.slots.iter().fold((0, 0), |(n, bytes), s| match s {
            Slot::Packed(p) => {
                let (at, len) = p.chunk();
                (n + 1, bytes + if chunks.insert(at) { len } else { 0 })
            }
            Slot::Whole(_) => (n, bytes),
        })
    }

    /// Pack again the batches of chunks that are mostly let go (a task's
    /// chunk, after batches of it were read again alone, each into a chunk of
    /// its own) or small (those chunks of one): one chunk for all of them, so
    /// that what the model holds stays about what its batches need. Done
    /// after every [`COMPACT_AFTER`] batches packed alone, and after a read
    /// of the whole use case.
    fn compact(&mut self) {
        use std::collections::HashMap;
        self.alone = 0;
        let mut live: HashMap<*const Box<[u8]>, (usize, usize, usize)> = HashMap::new();
        for s in &self.slots {
            if let Slot::Packed(p) = s {
                let (at, len) = p.chunk();
                let e = live.entry(at).or_insert((0, 0, len));
                e.0 += p.size();
                e.1 += 1;
            }
        }
        let sparse =
            |at: &*const Box<[u8]>| live.get(at).is_some_and(|&(bytes, rows, len)| bytes * 2 < len || rows < 64);
        if live.iter().filter(|(at, _)| sparse(at)).map(|(_, &(_, rows, _))| rows).sum::<usize>() < 2 {
            return;
        }
        let mut packer = packed::Packer::default();
        let mut moved = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            if let Slot::Packed(p) = s
                && sparse(&p.chunk().0)
            {
                match packer.copy(p) {
                    Some(span) => moved.push((i, span)),
                    None => break,
                }
            }
        }
        let chunk = packer.finish();
        for (i, span) in moved {
            self.slots[i] = Slot::Packed(chunk.get(span));
        }
    }

    fn position(&self, task: &str, key: &str) -> Option<usize> {
        let (slots, side, tasks) = (&self.slots, &self.side, &self.tasks);
        let names = |i: usize| (i < slots.len()).then(|| names(slots, side, tasks, i));
        self.index.get(names, task, key)
    }

    /// Where batch `id` is ([`Model::row`]).
    pub fn position_of(&self, id: &Id) -> Option<usize> {
        self.position(&id.0, &id.1)
    }

    /// The number of batch `i`'s task ([`Tasks`]).
    pub fn task_of(&self, i: usize) -> u32 {
        self.side.get(i).map_or(0, |s| s.task)
    }

    /// Each task number's rank among the task names: what the table's sort
    /// compares.
    pub fn task_ranks(&self) -> Vec<u32> {
        self.tasks.ranks()
    }

    /// The variables of batch `i`, as one line.
    pub fn vars(&self, i: usize) -> Option<&str> {
        self.row(i).and_then(|r| r.vars())
    }

    /// The disk's "now" by the use case's lease folder (read without writing,
    /// at most every 15 s).
    pub fn now(&mut self) -> Now {
        if self.src.store.is_some() {
            return self.scan.now;
        }
        let dir = if self.leases_root.is_dir() { self.leases_root.clone() } else { self.scan.root.clone() };
        self.clocks.now(&self.src.sys, &dir)
    }

    /// The disk's "now" by a task's lease folder, which may be on another
    /// disk (a symlink onto a file server).
    pub fn now_for(&mut self, task: &str) -> Now {
        let dir = self.leases_root.join(task);
        if dir.is_dir() { self.clocks.now(&self.src.sys, &dir) } else { self.now() }
    }

    /// What a changed path means.
    pub fn target(&self, path: &Path) -> Target {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // `#<inode>`: an unnamed O_TMPFILE file, how a dashboard elsewhere
        // reads the disk's clock on a network file system.
        if name.starts_with(".clock-") || name.starts_with('#') {
            return Target::Ignore;
        }
        if let Ok(rel) = path.strip_prefix(&self.leases_root) {
            let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            return match parts.len() {
                4 => match layout::classify(&name) {
                    Entry::Lease { key }
                    | Entry::Finished { key }
                    | Entry::Dead { key }
                    | Entry::Done { key, .. }
                    | Entry::Taken { key, .. }
                    | Entry::Tmp { key }
                    | Entry::Unknown { key } => Target::Batch((parts[..3].join("/"), key)),
                    Entry::Clock => Target::Ignore,
                    Entry::Other => Target::Task(parts[..3].join("/")),
                },
                // A task's folder itself (made, removed, or its names changed,
                // as a poll sees it): that task is read again whole; unless
                // it is what a task's read cannot report (a file, a symlink
                // that leads nowhere, a name not UTF-8: a full scan's problem).
                3 => task_folder(path, &parts),
                0..=2 => Target::Full,
                _ => Target::Ignore,
            };
        }
        if let Ok(rel) = path.strip_prefix(&self.scan.lineage_dir) {
            let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            return match parts.len() {
                // As a task's read lists them: a `.json` extension (a file
                // named `.json` has none).
                4 if path.extension().is_some_and(|x| x == "json") => {
                    Target::Record { task: parts[..3].join("/"), path: path.to_path_buf() }
                }
                4 => Target::Ignore,
                3 => task_folder(path, &parts),
                0..=2 => Target::Full,
                _ => Target::Ignore,
            };
        }
        // A folder on the way to either (watched so that they can appear).
        if self.leases_root.starts_with(path) || self.scan.lineage_dir.starts_with(path) {
            return Target::Full;
        }
        Target::Ignore
    }

    /// Apply a burst of changed paths. A batch whose lease-folder files
    /// changed is read again at once, for the screen to follow within a
    /// frame, and its task is returned in [`Applied::tasks`], to be read again
    /// whole (a lease-folder file may name a run, which moves its record
    /// between batches). A run record is filed at once by itself, exactly
    /// (its task is read whole only when that cannot be told here).
    pub fn apply(&mut self, paths: &[PathBuf]) -> Applied {
        let mut out = Applied::default();
        let mut batches: BTreeSet<Id> = BTreeSet::new();
        let mut records: BTreeSet<(String, PathBuf)> = BTreeSet::new();
        for p in paths {
            match self.target(p) {
                Target::Batch(id) => {
                    out.tasks.insert(id.0.clone());
                    batches.insert(id);
                }
                Target::Record { task, path } => {
                    records.insert((task, path));
                }
                Target::Task(task) => {
                    out.tasks.insert(task);
                }
                Target::Ignore => {}
                Target::Full => out.full = true,
            }
            if out.full {
                return out;
            }
        }
        if batches.len() + records.len() > BURST {
            out.full = true;
            return out;
        }
        // A run record, in a task not read whole for another change, is
        // filed at once by itself ([`Model::record_changed`]); past a few,
        // the read of their tasks is the cheaper way.
        records.retain(|(task, _)| !out.tasks.contains(task));
        if records.len() > AT_ONCE {
            out.tasks.extend(records.into_iter().map(|(task, _)| task));
        } else {
            for (task, path) in records {
                match self.record_changed(&task, &path) {
                    Some(c) => out.changed |= c,
                    None => {
                        out.tasks.insert(task);
                    }
                }
            }
        }
        // Each batch read costs a listing of its task's lease folder: past a
        // few, the read of the whole task that follows is the cheaper way.
        if !batches.is_empty() && batches.len() <= AT_ONCE {
            for id in &batches {
                let now = self.now_for(&id.0);
                match self.reread(id, now) {
                    Ok(()) => out.changed = true,
                    Err(e) => out.errors.push(e),
                }
            }
        }
        if out.changed {
            self.changed();
        }
        out
    }

    /// Read one batch again (its lease-folder files and the records they name)
    /// and put it in place, keeping run records a full scan had found for it by
    /// their variables.
    pub fn reread(&mut self, id: &Id, now: Now) -> Result<(), String> {
        let fresh = self.read_again(id, now)?;
        self.put(fresh);
        Ok(())
    }

    /// One batch read again: its lease-folder files, the records they name,
    /// and the records the model had for it (found by their variables), all
    /// read again from disk; its variables from those records. (Records that
    /// move between batches are filed right by the read of the whole task
    /// that follows every change.)
    fn read_again(&self, id: &Id, now: Now) -> Result<Batch, String> {
        self.read_again_as(id, now, None, None)
    }

    /// [`Model::read_again`], with the record at `add` filed under it (read
    /// now: a record, or an unreadable file), and the one at `drop` not.
    fn read_again_as(&self, id: &Id, now: Now, add: Option<&Path>, drop: Option<&Path>) -> Result<Batch, String> {
        if let Some(store) = &self.src.store {
            return store.fresh(&id.0, &id.1, &self.src.sys);
        }
        let (_, mut fresh) =
            state::scan_batch(&self.src.uc, &id.0, &id.1, &self.src.opts, &self.src.sys).map_err(|e| e.to_string())?;
        // A full scan files an unreadable record under the batch that names
        // its run (as `scan_batch` reads it), else under the unknown batch.
        let records_dir = self.scan.lineage_dir.join(&id.0);
        let other = |p: &Path| Some(p) != drop && Some(p) != add;
        if let Some(old) = self.get(id) {
            let more: Vec<PathBuf> = old
                .records()
                .map(|r| self.record_path(&id.0, &r.run_id(), r.path()))
                .filter(|p| !fresh.records.iter().any(|f| &f.path == p) && other(p))
                .collect();
            for p in more {
                if let Ok(r) = state::read_record(&p) {
                    fresh.records.push(r);
                }
            }
            // The unknown batch's unreadable records (no file of it names
            // their runs): each is filed again by its own event.
            if let Some(old) = old.batch().filter(|_| id.1.starts_with('?')) {
                let unnamed =
                    old.unreadable.iter().filter(|u| u.path.parent() == Some(records_dir.as_path()) && other(&u.path));
                fresh.unreadable.extend(unnamed.cloned());
            }
        }
        if let Some(p) = drop {
            fresh.records.retain(|r| r.path != p);
            fresh.unreadable.retain(|u| u.path != p);
        }
        let named =
            |p: &Path| fresh.records.iter().any(|f| f.path == p) || fresh.unreadable.iter().any(|u| u.path == p);
        if let Some(p) = add.filter(|p| !named(p)) {
            match state::read_record(p) {
                Ok(r) => fresh.records.push(r),
                Err(u) => fresh.unreadable.push(u),
            }
        }
        fresh.variables = None;
        for r in std::mem::take(&mut fresh.records) {
            file_record(&mut fresh, r);
        }
        fresh.records.sort_by(|a, c| c.started_at.cmp(&a.started_at));
        state::classify(&mut fresh, now);
        Ok(fresh)
    }

    /// Put a batch in place; a batch with nothing left of it goes.
    fn put(&mut self, b: Batch) {
        let id = (b.task.clone(), b.key.clone());
        let empty = b.is_empty();
        match (self.position(&id.0, &id.1), empty) {
            (_, false) => {
                let k = keep(b);
                if matches!(k.slot, Slot::Packed(_)) {
                    self.alone += 1;
                }
                self.place(k);
                if self.alone >= COMPACT_AFTER {
                    self.compact();
                }
            }
            (Some(i), true) => {
                let last = self.slots.len() - 1;
                self.index.moved(&id.0, &id.1, i, None);
                self.changes.reshaped = true;
                self.slots.swap_remove(i);
                self.side.swap_remove(i);
                self.leased = None;
                if i < self.slots.len() {
                    let (task, key) = names(&self.slots, &self.side, &self.tasks, i);
                    self.index.moved(task, key, last, Some(i));
                }
            }
            (None, true) => {}
        }
    }

    /// Judge every lease again as time passes. True when a state or a flag
    /// changed (a note's "written 5s ago" moves every second and is no change).
    /// A lease judged dead stays dead until its file changes (an event), so
    /// those are judged again every tenth tick only, for their ages.
    pub fn tick(&mut self) -> bool {
        // A store's leases are judged by its clock at each look, not by this
        // machine's between looks.
        if self.src.store.is_some() {
            return false;
        }
        let slots = &self.slots;
        let has_lease = |s: &Slot| matches!(s, Slot::Whole(w) if w.batch.lease.is_some());
        let leased =
            self.leased.get_or_insert_with(|| (0..slots.len()).filter(|&i| has_lease(&slots[i])).collect()).clone();
        if leased.is_empty() {
            return false;
        }
        self.ticks = self.ticks.wrapping_add(1);
        let all = self.ticks.is_multiple_of(10);
        let sys = self.src.sys.clone();
        let mut changed = false;
        let due =
            |b: &Batch| b.lease.as_ref().is_some_and(|l| all || !l.holder.judgement.as_ref().is_some_and(|j| j.dead));
        for i in leased {
            let Some(task) = self.slots.get_mut(i).and_then(Slot::whole_mut).filter(|b| due(b)).map(|b| b.task.clone())
            else {
                continue;
            };
            let now = self.now_for(&task);
            let Some(b) = self.slots[i].whole_mut() else { continue };
            let before = (b.state, b.flags.clone());
            state::rejudge(b, &sys, now);
            if before != (b.state, b.flags.clone()) {
                changed = true;
                self.touch(i, before.0);
            }
        }
        if changed {
            self.changed();
        }
        changed
    }
}

/// Batch `i`'s task and key ([`Index`] keeps positions only).
fn names<'a>(slots: &'a [Slot], side: &'a [Side], tasks: &'a Tasks, i: usize) -> (&'a str, &'a str) {
    (tasks.name(side[i].task), slots[i].key())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ubunye::state::ScanOptions;
    use ubunye::sys::Sys;

    fn finished(task: &str, i: usize) -> Batch {
        let mut b = Batch::new(task, &format!("{i:016x}"));
        b.run_id = Some(format!("0000{i:04x}-0000-4000-8000-00000000{i:04x}"));
        b.note = "finished at 2026-12-02T13:25:24Z".into();
        // A note on disk: a batch read again with nothing goes.
        b.finished = Some(Box::new(ubunye::state::FinishedInfo {
            path: PathBuf::new(),
            run_id: b.run_id.clone(),
            finished_at: Some("2026-12-02T13:25:24Z".into()),
            outputs: Vec::new(),
        }));
        b
    }

    /// A task's chunk is held by any one of its batches, so batches read
    /// again alone, each into a chunk of its own, would leave the rest of it
    /// held. The model packs such chunks again: what it holds stays what its
    /// batches need, and no batch changes.
    #[test]
    fn chunks_mostly_let_go_are_packed_again() {
        let sys = Sys::from_env();
        let dir = std::env::temp_dir();
        let mut scan = crate::top::empty(&dir, &dir, &sys);
        scan.batches = (0..1000).map(|i| finished("demo/t", i)).collect();
        let src = Source::disk(dir.clone(), ScanOptions::default(), sys);
        let mut m = Model::new(src, scan);
        let want = m.to_batches();
        let (n, one_chunk) = m.packed();
        assert_eq!(n, 1000);
        // All but one read again alone: the first chunk is held by one.
        for i in 1..1000 {
            m.put(finished("demo/t", i));
        }
        let (_, held) = m.packed();
        assert!(held > one_chunk * 19 / 10, "{held} bytes held, {one_chunk} in one chunk");
        m.compact();
        let (n, after) = m.packed();
        assert_eq!((n, after), (1000, one_chunk), "one chunk again, as big as the batches");
        let dbg = |bs: Vec<Batch>| bs.iter().map(|b| format!("{b:?}")).collect::<Vec<_>>();
        assert_eq!(dbg(m.to_batches()), dbg(want));
        for (i, b) in m.to_batches().iter().enumerate() {
            assert_eq!(m.position_of(&(b.task.clone(), b.key.clone())), Some(i));
        }
    }
}
