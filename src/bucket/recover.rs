//! Recovering a dead run's lease in a store: finish the commit of a run that
//! had marked it done (write its finished note), or take back what it claimed:
//! abort each claimed upload first (no completion can land after that), then
//! HEAD each claimed key and delete what was completed. Only keys the lease
//! claimed, and whose name carries the dead run's id, are ever deleted; no
//! output is listed to decide what to delete.

use serde_json::Value;

pub use super::claims::claim_key;
use super::claims::store_claims;
use super::objects::{Objects, StoreError, Written};
use super::place::Place;
use super::url::StoreUrl;
use crate::documents::{self, LeaseDoc};
use crate::pyjson;
use crate::sys::Clock;
use crate::timefmt;

/// What was done for a dead run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Recovered {
    /// Its run id ("" for a lease that named none).
    pub run_id: String,
    /// It had marked its lease done: its uploads are the batch.
    pub finished: bool,
    /// Its finished note was written now.
    pub note_written: bool,
    /// Uploads aborted.
    pub aborted: usize,
    /// Claimed objects that had been completed and were deleted (URLs).
    pub removed: Vec<String>,
    /// Claims left alone, and why (not in this bucket, or not named for the run).
    pub left: Vec<(String, String)>,
    /// Its run record said running and now says interrupted.
    pub record_marked: bool,
}

/// The upload ids a lease's output note saved: claim -> id.
pub fn uploads_of(doc: &LeaseDoc, output: &str) -> Vec<(String, String)> {
    let Some(Value::Object(outputs)) = doc.0.get("outputs") else { return Vec::new() };
    let Some(Value::Object(ups)) = outputs.get(output).and_then(|o| o.get("uploads")) else { return Vec::new() };
    ups.iter().filter_map(|(k, v)| v.as_str().map(|id| (k.clone(), id.to_string()))).collect()
}

/// Recover `dead` (its notes already read without damage), taken over by
/// run `by_run`.
pub fn recover(
    objects: &dyn Objects,
    place: &Place,
    dead: &LeaseDoc,
    by_run: &str,
    clock: &dyn Clock,
    settle: std::time::Duration,
) -> Result<Recovered, StoreError> {
    let mut r = Recovered { run_id: dead.run_id(), ..Default::default() };
    let now_z = timefmt::utc_z(clock.now());
    if dead.committed() {
        r.finished = true;
        if let Ok(Some(text)) = documents::finished_note(dead, place.task.as_str(), &now_z) {
            // A note there already is this run's own, written before it died,
            // or, for a --rerun, the note of the run it replaces.
            r.note_written = match objects.create(&place.note_key(), text.clone().into_bytes())? {
                Written::Done(_) => true,
                Written::Refused => replace_note(objects, place, dead, text)?,
            };
        }
        r.removed = removed_all(objects, place, dead)?;
        return Ok(r);
    }
    take_back(objects, dead, &place.uc, settle, &mut r)?;
    r.record_marked = mark_interrupted(objects, place, &r.run_id, by_run, &now_z)?;
    Ok(r)
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
    let names = serde_json::from_slice::<Value>(&got.body).ok().and_then(|v| v.get("run_id").cloned());
    if names.as_ref().and_then(Value::as_str) != Some(replaced) {
        return Ok(false);
    }
    Ok(matches!(objects.update(&place.note_key(), text.into_bytes(), &got.etag)?, Written::Done(_)))
}

/// Abort every claimed upload of `doc` (a lease in `uc`), then delete each
/// claimed object that was completed. Also a run's own rollback. A lease
/// whose claims do not check (`claims.rs`) is left alone, all of it.
pub fn take_back(
    objects: &dyn Objects,
    doc: &LeaseDoc,
    uc: &StoreUrl,
    settle: std::time::Duration,
    r: &mut Recovered,
) -> Result<(), StoreError> {
    let outputs = match store_claims(doc, uc) {
        Ok(o) => o,
        Err(why) => {
            r.left.push((objects.url(&uc.key(".ubunye/leases")), why));
            return Ok(());
        }
    };
    for o in outputs {
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
        // The fence is up: no completion can land from now on. Let one the
        // store accepted just before it show, then look.
        std::thread::sleep(settle);
        for key in &keys {
            if objects.head(key)?.is_some() {
                objects.delete(key)?;
                r.removed.push(objects.url(key));
            }
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
pub(super) fn common_prefix(keys: &[&str]) -> String {
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

/// Rewrite a dead run's `running` record as `interrupted`. A record that
/// cannot be read, or says anything else, is left alone.
fn mark_interrupted(
    objects: &dyn Objects,
    place: &Place,
    run_id: &str,
    by_run: &str,
    now_z: &str,
) -> Result<bool, StoreError> {
    if run_id.is_empty() || !crate::layout::run_id_is_safe(run_id) {
        return Ok(false);
    }
    let key = place.record_key(run_id);
    let Some(got) = objects.get(&key)? else { return Ok(false) };
    let Ok(Value::Object(mut rec)) = serde_json::from_slice::<Value>(&got.body) else { return Ok(false) };
    if rec.get("status").and_then(Value::as_str) != Some("running") {
        return Ok(false);
    }
    let note = format!(
        "The run did not finish; run {} took over its lease at {now_z} and removed the files it had appended.",
        documents::short(by_run)
    );
    rec.insert("status".into(), Value::String("interrupted".into()));
    rec.insert("error".into(), Value::String(note));
    let text = pyjson::dumps(&Value::Object(rec), pyjson::Style::RECORD);
    Ok(matches!(objects.update(&key, text.into_bytes(), &got.etag)?, Written::Done(_)))
}
