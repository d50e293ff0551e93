//! Recovering a dead run's lease in a store: the protocol's recovery
//! (`crate::protocol::recover`: finish the commit of a run that had marked
//! it done, or take back what it claimed and mark its record interrupted)
//! over the batch's objects. What a store takes back: each claimed upload
//! aborted first (no completion can land after that), then each claimed key
//! HEADed and what was completed deleted. Only keys the lease claimed, and
//! whose name carries the dead run's id, are ever deleted; no output is
//! listed to decide what to delete.

use serde_json::Value;

use super::claims::store_claims;
use super::objects::{Objects, StoreError, Written};
use super::place::Place;
use super::url::StoreUrl;
use crate::documents::LeaseDoc;
use crate::layout::TaskPath;
use crate::protocol::{LeaseStore, Recovery, Taker, Versioned};

/// Recover `dead` (its notes already read without damage) for `taker`: the
/// protocol's recovery over the batch's objects. It had finished if it
/// marked its lease done, or if its own finished note is there (`noted`: a
/// lease of it left beside its note, or put back by a restore), whose
/// commit is then not completed again.
pub fn recover(
    objects: &dyn Objects,
    place: &Place,
    dead: &LeaseDoc,
    noted: bool,
    taker: &Taker<'_>,
    (now, settle): (std::time::SystemTime, std::time::Duration),
) -> Result<Recovery, StoreError> {
    let finished = noted || dead.committed();
    let batch = BucketBatch { objects, place, settle, noted, now };
    crate::protocol::recover(&batch, &mut dead.clone(), finished, taker)
}

/// A batch's objects, as the protocol's recovery sees them.
struct BucketBatch<'a> {
    objects: &'a dyn Objects,
    place: &'a Place,
    /// How long a completion the store accepted just before the fence takes
    /// to show.
    settle: std::time::Duration,
    /// The dead run's own finished note is there.
    noted: bool,
    /// Now, by the taker's clock (a record's times are its runs' clocks').
    now: std::time::SystemTime,
}

impl LeaseStore for BucketBatch<'_> {
    type Error = StoreError;
    /// The ETag.
    type Version = String;

    fn task(&self) -> &TaskPath {
        &self.place.task
    }

    /// A store's batches are named by their key alone: each gets its note.
    fn named(&self) -> bool {
        true
    }

    /// A conditional create: a note there already is this run's own, written
    /// before it died, or, for a --rerun, the note of the run it replaces.
    fn write_note(&self, dead: &LeaseDoc, note: &str) -> Result<bool, StoreError> {
        if self.noted {
            // Its own note is there: a create could only be refused.
            return Ok(false);
        }
        match self.objects.create(&self.place.note_key(), note.as_bytes().to_vec())? {
            Written::Done(_) => Ok(true),
            Written::Refused => replace_note(self.objects, self.place, dead, note.to_string()),
        }
    }

    fn remove_replaced(&self, dead: &LeaseDoc, r: &mut Recovery) -> Result<(), StoreError> {
        r.removed.extend(removed_all(self.objects, self.place, dead)?);
        Ok(())
    }

    /// A run that committed and died before it wrote its record's end (a
    /// store's run writes it after its commit) has it written: it ended in
    /// success, its finished note names it.
    fn settle_finished(&self, dead: &LeaseDoc, r: &mut Recovery) -> Result<(), StoreError> {
        let now = self.now;
        r.record_marked = crate::protocol::rewrite_record(self, &dead.run_id(), |body| {
            crate::protocol::record::completed(body, now)
        })?;
        Ok(())
    }

    /// Every claim in a store is exact (its keys are saved before any upload
    /// starts): an output with no claim got no file, and none is unrepaired.
    fn take_back(&self, dead: &mut LeaseDoc, r: &mut Recovery) -> Result<(), StoreError> {
        take_back(self.objects, dead, &self.place.uc, self.settle, r)
    }

    fn record(&self, run_id: &str) -> Result<Option<Versioned<String>>, StoreError> {
        Ok(self.objects.get(&self.place.record_key(run_id))?.map(|got| Versioned { body: got.body, version: got.etag }))
    }

    fn rewrite_record(&self, run_id: &str, text: &str, etag: &String) -> Result<bool, StoreError> {
        let key = self.place.record_key(run_id);
        Ok(matches!(self.objects.update(&key, text.as_bytes().to_vec(), etag)?, Written::Done(_)))
    }
}

/// Remove what a committed --rerun lease replaces; an error (so that the
/// lease is kept for the next takeover) when any cannot be removed.
pub(super) fn removed_all(objects: &dyn Objects, place: &Place, doc: &LeaseDoc) -> Result<Vec<String>, StoreError> {
    match remove_replaced(objects, doc, &place.uc) {
        (removed, 0) => Ok(removed),
        (_, left) => Err(StoreError {
            kind: super::objects::ErrorKind::Other,
            url: objects.url(&place.lease_key()),
            what: format!(
                "{left} file(s) a --rerun replaces could not be removed: the lease is kept, and the next takeover removes them"
            ),
        }),
    }
}

/// The note of the run a --rerun `dead` replaces, replaced by `text` (the
/// dead run's): true when it was.
fn replace_note(objects: &dyn Objects, place: &Place, dead: &LeaseDoc, text: String) -> Result<bool, StoreError> {
    let Some(replaced) = dead.0.get("replaces_run").and_then(Value::as_str) else { return Ok(false) };
    let Some(got) = objects.get(&place.note_key())? else { return Ok(false) };
    // The run the note there names ("" for a note that names none, which a
    // run replaces as it is: its `replaces_run` is "" then).
    let names = serde_json::from_slice::<Value>(&got.body).ok().map(|v| match v.get("run_id") {
        Some(Value::String(r)) => r.clone(),
        _ => String::new(),
    });
    if names.as_deref() != Some(replaced) {
        return Ok(false);
    }
    Ok(matches!(objects.update(&place.note_key(), text.into_bytes(), &got.etag)?, Written::Done(_)))
}

/// Abort every claimed upload of `doc` (a lease in `uc`), of every output,
/// then, after one settle, delete each claimed object that was completed. Also a run's own rollback. A lease
/// whose claims do not check (`claims.rs`) is left alone, all of it.
pub fn take_back(
    objects: &dyn Objects,
    doc: &LeaseDoc,
    uc: &StoreUrl,
    settle: std::time::Duration,
    r: &mut Recovery,
) -> Result<(), StoreError> {
    let outputs = match store_claims(doc, uc) {
        Ok(o) => o,
        Err(why) => {
            r.left.push((objects.url(&uc.key(".ubunye/leases")), why));
            return Ok(());
        }
    };
    for o in &outputs {
        let mut uploads = o.uploads.clone();
        let keys: Vec<&str> = o.keys.iter().map(String::as_str).collect();
        if uploads.len() < keys.len() {
            // Killed while its uploads started: their ids were never saved.
            // The open uploads of exactly its claimed keys are its own.
            for (key, id) in objects.open_uploads(&common_prefix(&keys))? {
                if keys.contains(&key.as_str()) && !uploads.iter().any(|(_, i)| *i == id) {
                    uploads.push((key, id));
                }
            }
        }
        for key in &keys {
            for (_, id) in uploads.iter().filter(|(k, _)| k == key) {
                objects.abort(key, id)?;
                r.aborted += 1;
            }
        }
    }
    // The fence is up for every output: no completion can land from now on.
    // Let one the store accepted just before it show, then look. A run that
    // claimed no key started no upload (its keys are saved before its
    // uploads start), so there is nothing to wait for.
    let keys: Vec<&String> = outputs.iter().flat_map(|o| &o.keys).collect();
    if !keys.is_empty() {
        std::thread::sleep(settle);
    }
    for key in keys {
        if objects.head(key)?.is_some() {
            objects.delete(key)?;
            r.removed.push(objects.url(key));
        }
    }
    Ok(())
}

/// Remove the files a `--rerun` lease replaces (its note already names the
/// new run): the URLs removed, and how many could not be. A lease with any
/// left is kept, so that the next takeover removes them (never forgotten).
pub fn remove_replaced(objects: &dyn Objects, doc: &crate::documents::LeaseDoc, uc: &StoreUrl) -> (Vec<String>, usize) {
    let (mut removed, mut left) = (Vec::new(), 0);
    for key in super::claims::store_replaces(doc, uc).unwrap_or_default() {
        match objects.head(&key).and_then(|h| match h {
            Some(_) => objects.delete(&key).map(|_| true),
            None => Ok(false),
        }) {
            Ok(true) => removed.push(objects.url(&key)),
            Ok(false) => {}
            Err(_) => left += 1,
        }
    }
    (removed, left)
}

/// The longest prefix of every key (to list the open uploads under).
pub(crate) fn common_prefix(keys: &[&str]) -> String {
    let Some(first) = keys.first() else { return String::new() };
    let mut n = first.len();
    for k in &keys[1..] {
        n = n.min(first.bytes().zip(k.bytes()).take_while(|(a, b)| a == b).count());
    }
    let mut n = n.min(first.len());
    while !first.is_char_boundary(n) {
        n -= 1;
    }
    first[..n].to_string()
}
