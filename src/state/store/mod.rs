//! Inspection of a use case in a store: every batch's lease, note and run
//! records, judged by the store's clock and the disk's state model
//! (`judge.rs`). It only reads (lists, a GET per lease, note and record, a
//! HEAD per claim of a dead lease, a HEAD of the bucket for the clock):
//! looking never writes. An object listed that no engine reads (a name no
//! engine gives, a place where none belongs) is a problem of the reading,
//! as a folder's scan gives its problems: said, never read, never judged.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

mod judge;
mod records;

pub(crate) use judge::Judged;
pub use judge::{HEADS_LAST, StoreBatch};
pub use records::{records, runs_named};

use crate::bucket::{Got, Listed, Objects, StoreError, StoreUrl};
use crate::state::UnreadableFile;
use crate::sys::Timing;
use judge::{Found, Heads, judge_all};

/// Every batch under `uc`, in task and key order, and the store's time they
/// were judged at.
pub fn look(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
) -> Result<(SystemTime, Vec<StoreBatch>), StoreError> {
    let r = read_all(objects, uc, timing)?;
    Ok((r.now, r.judged.iter().map(Judged::row).collect()))
}

/// Every batch under `uc` as the state model holds a folder's (its lease's
/// path is the object's URL), in task and key order, the store's time they
/// were judged at, and the objects listed that no engine reads (as a
/// folder's scan gives its problems): for the listings, which show folders
/// and stores alike.
pub fn batches(objects: &dyn Objects, uc: &StoreUrl, timing: &Timing) -> Result<Batches, StoreError> {
    batches_of(objects, uc, timing, None)
}

/// [`batches`] of the tasks `task` matches (`--task`: the start of a task's
/// name, or a pattern with `*`; all of them for None): only their objects
/// are read, as a folder's scan reads only their folders.
pub fn batches_of(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
    task: Option<&str>,
) -> Result<Batches, StoreError> {
    let which = task.map_or(Tasks::All, Tasks::Matching);
    let r = read_tasks(objects, uc, timing, which)?;
    Ok((r.now, r.judged.into_iter().map(Judged::into_batch).collect(), r.problems))
}

/// Which tasks a reading reads.
#[derive(Clone, Copy)]
pub(crate) enum Tasks<'a> {
    /// Every one.
    All,
    /// This one (its objects alone are listed).
    One(&'a str),
    /// Those `--task` matches (`state::task_matches`).
    Matching(&'a str),
}

impl Tasks<'_> {
    fn has(&self, task: &str) -> bool {
        match self {
            Tasks::All => true,
            Tasks::One(t) => *t == task,
            Tasks::Matching(glob) => crate::state::task_matches(glob, task),
        }
    }
}

/// What [`batches`] gives: the store's time, the batches, the objects no
/// engine reads.
pub type Batches = (SystemTime, Vec<crate::state::Batch>, Vec<UnreadableFile>);

/// A reading of a use case in a store.
pub(crate) struct Read {
    /// The store's time its batches were judged at.
    pub now: SystemTime,
    /// Its batches, judged.
    pub judged: Vec<Judged>,
    /// The objects listed that no engine reads.
    pub problems: Vec<UnreadableFile>,
    /// How many objects this reading read (GETs).
    pub read: usize,
}

/// Every batch under `uc` judged, and the store's time it was judged at.
pub(crate) fn read_all(objects: &dyn Objects, uc: &StoreUrl, timing: &Timing) -> Result<Read, StoreError> {
    read_tasks(objects, uc, timing, Tasks::All)
}

/// [`read_all`] of some tasks' batches only: a run record is filed among
/// its own task's batches, so they are judged as the whole use case's
/// reading judges them.
pub(crate) fn read_tasks(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
    which: Tasks,
) -> Result<Read, StoreError> {
    let one = match which {
        Tasks::One(t) => Some(t),
        _ => None,
    };
    let Listing { batches, records, problems } = listing(objects, uc, one)?;
    // Deeper folders share a task's prefix; they are other tasks.
    let batches: BTreeMap<(String, String), Found> = batches.into_iter().filter(|((bt, _), _)| which.has(bt)).collect();
    let records: Vec<(String, Listed)> = records.into_iter().filter(|(rt, _)| which.has(rt)).collect();
    // Every object read, many in flight.
    let keys: Vec<String> = batches
        .values()
        .flat_map(|f| f.lease.iter().chain(&f.note))
        .chain(records.iter().map(|(_, l)| l))
        .map(|l| l.key.clone())
        .collect();
    let mut read: HashMap<String, Option<Got>> = keys.iter().cloned().zip(objects.get_many(&keys)?).collect();
    // The store's time after every read: a lease saved while the listing ran
    // is never "ahead" of it (its age is at most the listing's time too long).
    let now = objects.now()?;
    let judged = judge_all(objects, uc, timing, batches, records, &mut read, now, &mut Heads::default())?;
    Ok(Read { now, judged, problems, read: keys.len() })
}

/// `look` again and again (the dashboard over a store, which polls: object
/// stores send no events), reading only the leases, notes and records whose
/// ETag or modification time in the listing changed since the last look. A
/// look costs the listings, one HEAD of the bucket, a GET per changed object
/// and a HEAD per claim of a lease that died or changed since (or was last
/// looked at 30 s ago by the store's clock); its states are those [`look`] gives on
/// the same objects, and so are its notes but for a claim whose object
/// came or went within that time.
#[derive(Debug, Default)]
pub struct Poller {
    seen: HashMap<String, (Listed, Option<Got>)>,
    heads: Heads,
}

/// One look of a [`Poller`].
#[derive(Debug)]
pub struct Polled {
    /// The store's time the batches were judged at.
    pub now: SystemTime,
    /// Every batch, as [`look`] gives them.
    pub batches: Vec<StoreBatch>,
    /// How many objects this look read (GETs).
    pub read: usize,
}

impl Poller {
    /// A poller that has seen nothing yet: its first look reads everything.
    pub fn new() -> Poller {
        Poller::default()
    }

    /// Every batch under `uc`, as [`look`] gives them.
    pub fn look(&mut self, objects: &dyn Objects, uc: &StoreUrl, timing: &Timing) -> Result<Polled, StoreError> {
        let r = self.poll(objects, uc, timing)?;
        Ok(Polled { now: r.now, batches: r.judged.iter().map(Judged::row).collect(), read: r.read })
    }

    /// Every batch under `uc` as [`batches`] gives them, and the store's
    /// time they were judged at: what the dashboard keeps, as a folder's.
    pub fn batches(
        &mut self,
        objects: &dyn Objects,
        uc: &StoreUrl,
        timing: &Timing,
    ) -> Result<(SystemTime, Vec<crate::state::Batch>), StoreError> {
        let r = self.poll(objects, uc, timing)?;
        Ok((r.now, r.judged.into_iter().map(Judged::into_batch).collect()))
    }

    pub(crate) fn poll(&mut self, objects: &dyn Objects, uc: &StoreUrl, timing: &Timing) -> Result<Read, StoreError> {
        let Listing { batches, records, problems } = listing(objects, uc, None)?;
        let listed: HashMap<&str, &Listed> = batches
            .values()
            .flat_map(|f| f.lease.iter().chain(&f.note))
            .chain(records.iter().map(|(_, l)| l))
            .map(|l| (l.key.as_str(), l))
            .collect();
        let changed: Vec<String> = listed
            .values()
            .filter(|l| self.seen.get(&l.key).is_none_or(|(was, _)| was.etag != l.etag || was.modified != l.modified))
            .map(|l| l.key.clone())
            .collect();
        let fresh = objects.get_many(&changed)?;
        let read_now = changed.len();
        // What is still listed and unchanged is kept; what went is forgotten.
        let mut seen = HashMap::with_capacity(listed.len());
        for key in listed.keys() {
            if let Some(old) = self.seen.remove(*key) {
                seen.insert(key.to_string(), old);
            }
        }
        // What a GET read is judged now; it is kept as seen only if it is
        // the version the listing named (the same ETag): an object that
        // changed between the list and the GET, or that a GET did not find,
        // is read again at the next look (kept, it would pass for the listed
        // version and never be read again).
        let mut now_read: HashMap<String, Option<Got>> = HashMap::new();
        for (key, got) in changed.into_iter().zip(fresh) {
            let l = (*listed[key.as_str()]).clone();
            if got.as_ref().is_some_and(|g| g.etag == l.etag) {
                seen.insert(key.clone(), (l, got.clone()));
            }
            now_read.insert(key, got);
        }
        self.heads.keep_only(&|k| listed.contains_key(k));
        self.seen = seen;
        let mut read: HashMap<String, Option<Got>> =
            self.seen.iter().map(|(k, (_, g))| (k.clone(), g.clone())).collect();
        read.extend(now_read);
        let now = objects.now()?;
        let judged = judge_all(objects, uc, timing, batches, records, &mut read, now, &mut self.heads)?;
        Ok(Read { now, judged, problems, read: read_now })
    }
}

/// What the listings of a use case name.
struct Listing {
    /// Leases and notes under its lease folder, by task and key.
    batches: BTreeMap<(String, String), Found>,
    /// Its run records (`.ubunye/lineage/<task>/<run>.json`, `records::listed`), with their task.
    records: Vec<(String, Listed)>,
    /// The objects listed that no engine reads (a name a store's engine
    /// never gives, or a place where none belongs): said, as a folder's
    /// scan says such files.
    problems: Vec<UnreadableFile>,
}

fn listing(objects: &dyn Objects, uc: &StoreUrl, task: Option<&str>) -> Result<Listing, StoreError> {
    let under = task.map(|t| format!("{t}/")).unwrap_or_default();
    // The records first: a run writes its record only once it holds its
    // lease, so a record listed has its lease (or, later, its note or
    // nothing but its end) listed after it. Leases first, a run that
    // started between the two listings would be a record with no lease.
    let (records, mut problems) = records::listed(objects, uc, &under)?;
    let root = uc.key(".ubunye/leases/");
    let mut batches: BTreeMap<(String, String), Found> = BTreeMap::new();
    for l in objects.list(&format!("{root}{under}"))? {
        // A folder marker (an empty object a console's "create folder"
        // makes): a folder, as a disk's folders are, not a file.
        if l.key.ends_with('/') && l.size == 0 {
            continue;
        }
        let Some((task, key, note)) = named(&root, &l.key) else {
            problems.push(unnamed(objects, &root, &l.key));
            continue;
        };
        let found = batches.entry((task.to_string(), key.to_string())).or_default();
        if note {
            found.note = Some(l);
        } else {
            found.lease = Some(l);
        }
    }
    if batches.is_empty() && records.is_empty() && problems.is_empty() {
        used(objects, uc)?;
    }
    Ok(Listing { batches, records, problems })
}

/// That a run has used `uc`: something is under its `.ubunye/`, as a
/// folder a run has used holds `.ubunye/`. A prefix mistyped, or a bucket's
/// root, is said so, never read as a use case with nothing wrong in it.
pub fn used(objects: &dyn Objects, uc: &StoreUrl) -> Result<(), StoreError> {
    if objects.any(&uc.key(".ubunye/"))? {
        return Ok(());
    }
    Err(StoreError {
        kind: crate::bucket::ErrorKind::NotAUseCase,
        url: uc.to_string(),
        what: "nothing is under .ubunye/ there, so it is not a use case a run has used. Point -d at the s3://bucket/prefix your runs are given (`ubunye exec -d`)".into(),
    })
}

/// An object under the lease folder `root` that is no batch's lease or
/// note, said in the words a folder's scan says such a file in.
fn unnamed(objects: &dyn Objects, root: &str, object: &str) -> UnreadableFile {
    let path = std::path::PathBuf::from(objects.url(object));
    let rest = object.strip_prefix(root).unwrap_or(object);
    if crate::bucket::plain_key(object).is_err() {
        return UnreadableFile::misplaced(&path, odd_name(object));
    }
    let why = if !rest.contains('/') {
        "an object directly in .ubunye/leases/, where only task folders belong: a lease is <usecase>/<package>/<task>/<key>.json there, so no engine reads this one"
    } else if rest.ends_with(".json") {
        "a .json object in a lease folder not named as a store's engine names its objects (<16 hex key>.json, <key>.finished.json): no engine reads it"
    } else {
        "an object in a lease folder that a store's engine never writes: nothing reads it; look at it, and remove it if nothing of yours needs it"
    };
    UnreadableFile::misplaced(&path, why)
}

/// The batch an object under the lease folder `root` is of: its task, its
/// key, and whether it is the batch's finished note (else its lease); None
/// for anything else.
fn named<'a>(root: &str, object: &'a str) -> Option<(&'a str, &'a str, bool)> {
    // A name the engine never writes is never read: a GET of it would be
    // sent for another name.
    crate::bucket::plain_key(object).ok()?;
    let (task, name) = object.strip_prefix(root)?.rsplit_once('/')?;
    let (key, note) = match name.strip_suffix(".finished.json") {
        Some(key) => (key, true),
        None => (name.strip_suffix(".json")?, false),
    };
    crate::layout::is_key(key).then_some((task, key, note))
}

/// Why a name no engine gives is never read, naming what is odd in it.
fn odd_name(object: &str) -> String {
    let odd = if object.contains("//") {
        "an empty folder (`//`)".to_string()
    } else if object.split('/').any(|s| s == ".." || s == ".") {
        "a `.` or `..` folder".to_string()
    } else {
        let chars: String =
            object.chars().filter(|c| *c != '.' && crate::bucket::plain_key(&c.to_string()).is_err()).collect();
        format!("{chars:?}")
    };
    format!(
        "its name holds {odd}, which no engine gives (a GET of it would ask for another name): no engine reads it; look at it, and remove it if nothing of yours needs it"
    )
}

/// The tasks whose leases or notes have a key that starts with `prefix`, by
/// one listing of `.ubunye/leases/` (no object read): where a batch named
/// by its key alone is.
pub(crate) fn tasks_of_key(objects: &dyn Objects, uc: &StoreUrl, prefix: &str) -> Result<Vec<String>, StoreError> {
    let root = uc.key(".ubunye/leases/");
    let mut tasks: Vec<String> = Vec::new();
    for l in objects.list(&root)? {
        if let Some((task, key, _)) = named(&root, &l.key)
            && key.starts_with(prefix)
            && !tasks.iter().any(|t| t == task)
        {
            tasks.push(task.to_string());
        }
    }
    Ok(tasks)
}
