//! Inspection of a use case in a store: every batch's lease and note, judged
//! by the store's clock. It only reads (a list, a GET per lease and note, a
//! HEAD of the bucket for the clock): looking never writes.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use super::lease::age_of;
use super::objects::{Got, Listed, Objects, StoreError};
use super::url::StoreUrl;
use crate::documents::{self, LeaseDoc, Parsed};
use crate::sys::Timing;

/// A batch's state in a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreVerdict {
    /// A run holds it: its lease was written within the timeout.
    Live,
    /// Its lease was last written longer ago than the timeout: the next run
    /// takes it over.
    Dead,
    /// A run finished it (a finished note, no lease).
    Finished,
    /// Its lease or note cannot be read: never judged free or dead.
    Unreadable,
}

impl StoreVerdict {
    /// The word in tables and JSON.
    pub fn word(self) -> &'static str {
        match self {
            StoreVerdict::Live => "live",
            StoreVerdict::Dead => "dead",
            StoreVerdict::Finished => "finished",
            StoreVerdict::Unreadable => "unreadable",
        }
    }
}

/// One batch of a use case in a store.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StoreBatch {
    /// Its task.
    pub task: String,
    /// Its key.
    pub key: String,
    /// Its state.
    pub state: StoreVerdict,
    /// The run that holds it, held it, or finished it.
    pub run_id: Option<String>,
    /// The lease's age by the store's clock, in seconds.
    pub age_secs: Option<u64>,
    /// The lifetime its lease is judged by, in seconds: the `ttl_s` its
    /// holder wrote, else the disk's timeout; None without a readable lease.
    pub ttl_secs: Option<f64>,
    /// Files its lease claims.
    pub claims: usize,
    /// Its lease (or note) object.
    pub url: String,
    /// Why it is unreadable.
    pub why: Option<String>,
}

#[derive(Default)]
struct Found {
    lease: Option<Listed>,
    note: Option<Listed>,
}

/// Every batch under `uc`, in task and key order, and the store's time they
/// were judged at.
pub fn look(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
) -> Result<(SystemTime, Vec<StoreBatch>), StoreError> {
    look_where(objects, uc, timing, &|_, _| true).map(|(now, batches, _)| (now, batches))
}

/// [`look`] at the batches `wanted(task, key)` picks out of the listing
/// (only theirs are read), and how many batches the listing held.
pub fn look_where(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
    wanted: &dyn Fn(&str, &str) -> bool,
) -> Result<(SystemTime, Vec<StoreBatch>, usize), StoreError> {
    let mut batches = listing(objects, uc)?;
    let listed = batches.len();
    batches.retain(|(task, key), _| wanted(task, key));
    // Every lease and note read, many in flight.
    let keys: Vec<String> =
        batches.values().flat_map(|f| f.lease.iter().chain(&f.note)).map(|l| l.key.clone()).collect();
    let read: HashMap<String, Option<Got>> = keys.iter().cloned().zip(objects.get_many(&keys)?).collect();
    // The store's time after every read: a lease saved while the listing ran
    // is never "ahead" of it (its age is at most the listing's time too long).
    let now = objects.now()?;
    Ok((now, judge_all(objects, uc, timing, batches, read, now), listed))
}

/// `look` again and again (the dashboard over a store, which polls: object
/// stores send no events), reading only the leases and notes whose ETag or
/// modification time in the listing changed since the last look. A look
/// costs one listing, one HEAD of the bucket and a GET per changed object;
/// its verdicts are those [`look`] gives on the same objects.
#[derive(Debug, Default)]
pub struct Poller {
    seen: HashMap<String, (Listed, Option<Got>)>,
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
        let batches = listing(objects, uc)?;
        let listed: HashMap<&str, &Listed> =
            batches.values().flat_map(|f| f.lease.iter().chain(&f.note)).map(|l| (l.key.as_str(), l)).collect();
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
        self.seen = seen;
        let mut read: HashMap<String, Option<Got>> =
            self.seen.iter().map(|(k, (_, g))| (k.clone(), g.clone())).collect();
        read.extend(now_read);
        let now = objects.now()?;
        Ok(Polled { now, batches: judge_all(objects, uc, timing, batches, read, now), read: read_now })
    }
}

/// The leases and notes under `uc`'s lease folder, by task and key.
fn listing(objects: &dyn Objects, uc: &StoreUrl) -> Result<BTreeMap<(String, String), Found>, StoreError> {
    let root = uc.key(".ubunye/leases/");
    let mut batches: BTreeMap<(String, String), Found> = BTreeMap::new();
    for l in objects.list(&root)? {
        let Some(rest) = l.key.strip_prefix(&root) else { continue };
        let Some((task, name)) = rest.rsplit_once('/') else { continue };
        if let Some(key) = name.strip_suffix(".finished.json") {
            if crate::layout::is_key(key) {
                let id = (task.to_string(), key.to_string());
                batches.entry(id).or_default().note = Some(l);
            }
        } else if let Some(key) = name.strip_suffix(".json")
            && crate::layout::is_key(key)
        {
            let id = (task.to_string(), key.to_string());
            batches.entry(id).or_default().lease = Some(l);
        }
    }
    Ok(batches)
}

/// Each batch judged by what was read of its lease and note (`read`: by
/// key, None for an object gone since the listing).
fn judge_all(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
    batches: BTreeMap<(String, String), Found>,
    mut read: HashMap<String, Option<Got>>,
    now: SystemTime,
) -> Vec<StoreBatch> {
    let mut out = Vec::new();
    for ((task, key), found) in batches {
        let mut b = StoreBatch {
            task,
            key,
            state: StoreVerdict::Finished,
            run_id: None,
            age_secs: None,
            ttl_secs: None,
            claims: 0,
            url: String::new(),
            why: None,
        };
        if let Some(l) = &found.lease {
            b.url = objects.url(&l.key);
            match read.remove(&l.key).flatten() {
                // Released between the list and the read: judged by its note.
                None if found.note.is_some() => {}
                None => continue,
                Some(got) => {
                    judge_lease(&mut b, &got.body, age_of(got.modified, now, timing), timing, uc);
                    out.push(b);
                    continue;
                }
            }
        }
        if let Some(l) = &found.note {
            b.url = objects.url(&l.key);
            match read.remove(&l.key).flatten() {
                None => continue,
                Some(got) => match documents::parse_doc(&got.body) {
                    Ok(Parsed::Doc(m)) => b.run_id = Some(LeaseDoc(m).run_id()),
                    Ok(Parsed::NotADoc) => unreadable(&mut b, "the finished note is not a JSON object".into()),
                    Err(e) => unreadable(&mut b, e.to_string()),
                },
            }
        }
        out.push(b);
    }
    out
}

fn unreadable(b: &mut StoreBatch, why: String) {
    b.state = StoreVerdict::Unreadable;
    b.why = Some(why);
}

fn judge_lease(b: &mut StoreBatch, body: &[u8], age: Option<Duration>, timing: &Timing, uc: &StoreUrl) {
    let doc = match super::lease::read_doc(body, uc) {
        Ok(d) => d,
        Err(why) => return unreadable(b, why),
    };
    b.run_id = Some(doc.run_id());
    b.claims = doc.claim_count();
    let lifetime = super::lease::lifetime_of(&doc, timing);
    b.ttl_secs = Some(lifetime.as_secs_f64());
    match age {
        None => unreadable(b, "it was written after the store's clock says now: its age cannot be told".into()),
        Some(a) => {
            b.age_secs = Some(a.as_secs());
            b.state = if a > lifetime { StoreVerdict::Dead } else { StoreVerdict::Live };
        }
    }
}
