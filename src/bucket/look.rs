//! Inspection of a use case in a store: every batch's lease and note, judged
//! by the store's clock. It only reads (a list, a GET per lease and note, a
//! HEAD of the bucket for the clock): looking never writes.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::lease::age_of;
use super::objects::{Objects, StoreError};
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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
    /// Files its lease claims.
    pub claims: usize,
    /// Its lease (or note) object.
    pub url: String,
    /// Why it is unreadable.
    pub why: Option<String>,
}

#[derive(Default)]
struct Found {
    lease: Option<String>,
    note: Option<String>,
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
    let root = uc.key(".ubunye/leases/");
    let mut batches: BTreeMap<(String, String), Found> = BTreeMap::new();
    for l in objects.list(&root)? {
        let Some(rest) = l.key.strip_prefix(&root) else { continue };
        let Some((task, name)) = rest.rsplit_once('/') else { continue };
        if let Some(key) = name.strip_suffix(".finished.json") {
            if crate::layout::is_key(key) {
                batches.entry((task.into(), key.into())).or_default().note = Some(l.key.clone());
            }
        } else if let Some(key) = name.strip_suffix(".json") {
            if crate::layout::is_key(key) {
                batches.entry((task.into(), key.into())).or_default().lease = Some(l.key.clone());
            }
        }
    }
    let listed = batches.len();
    batches.retain(|(task, key), _| wanted(task, key));
    // Every lease and note read, many in flight.
    let wanted: Vec<String> = batches.values().flat_map(|f| f.lease.iter().chain(&f.note).cloned()).collect();
    let mut read: std::collections::HashMap<String, Option<super::objects::Got>> =
        wanted.iter().cloned().zip(objects.get_many(&wanted)?).collect();
    // The store's time after every read: a lease saved while the listing ran
    // is never "ahead" of it (its age is at most the listing's time too long).
    let now = objects.now()?;
    let mut out = Vec::new();
    for ((task, key), found) in batches {
        let mut b = StoreBatch {
            task,
            key,
            state: StoreVerdict::Finished,
            run_id: None,
            age_secs: None,
            claims: 0,
            url: String::new(),
            why: None,
        };
        if let Some(k) = &found.lease {
            b.url = objects.url(k);
            match read.remove(k).flatten() {
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
        if let Some(k) = &found.note {
            b.url = objects.url(k);
            match read.remove(k).flatten() {
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
    Ok((now, out, listed))
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
    match age {
        None => unreadable(b, "it was written after the store's clock says now: its age cannot be told".into()),
        Some(a) => {
            b.age_secs = Some(a.as_secs());
            b.state = if a > timing.heartbeat_timeout { StoreVerdict::Dead } else { StoreVerdict::Live };
        }
    }
}
