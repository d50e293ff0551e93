//! What `doctor` finds in a use case in a store: unreadable and dead
//! leases, records that say running with no lease, and open uploads no
//! lease names, as the disk's [`Finding`]s (the same kinds where the same
//! thing is found, the object's URL as the path). It only reads.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::{Finding, Look};
use crate::bucket::{Objects, StoreError, StoreUrl, claim_key};
use crate::documents::{self, LeaseDoc, Parsed};
use crate::state::State;
use crate::state::store::{Judged, read_all};
use crate::sys::Timing;

/// A finding about the batch `b`, in the disk's shape.
fn about(kind: &'static str, b: &crate::state::store::StoreBatch, detail: String) -> Finding {
    Finding { kind, path: b.url.clone().into(), detail, task: Some(b.task.clone()), key: Some(b.key.clone()) }
}

/// The outputs the use case's run records name (their `location`), in this
/// bucket: where its runs upload.
fn recorded_outputs(objects: &dyn Objects, judged: &[Judged]) -> Vec<StoreUrl> {
    let mut out: Vec<StoreUrl> = Vec::new();
    let records = judged.iter().flat_map(|j| &j.batch.records);
    for (_, location) in records.flat_map(|r| &r.locations) {
        if let Ok(u) = StoreUrl::parse(location)
            && u.bucket == objects.bucket()
            && !out.contains(&u)
        {
            out.push(u);
        }
    }
    out.sort_by(|a, b| a.prefix.cmp(&b.prefix));
    // An output inside another's prefix is listed with it: listed again, its
    // uploads would be found twice.
    let mut outer: Vec<StoreUrl> = Vec::new();
    for u in out {
        let inside = outer.iter().any(|o| o.prefix.is_empty() || u.prefix.starts_with(&format!("{}/", o.prefix)));
        if !inside {
            outer.push(u);
        }
    }
    outer
}

/// The keys a lease claims, its own and those of the run it was taking over.
fn claimed_keys(objects: &dyn Objects, d: &LeaseDoc) -> Vec<String> {
    let taking_over = d.0.get("taking_over").and_then(Value::as_object).map(|m| LeaseDoc(m.clone()));
    let docs = [Some(d.clone()), taking_over];
    let notes = docs.into_iter().flatten().flat_map(|doc| doc.notes().unwrap_or_default());
    notes.flat_map(|n| n.claimed).filter_map(|c| claim_key(objects.bucket(), &c).map(str::to_string)).collect()
}

/// Findings in a use case in a store: unreadable and dead leases, and open
/// uploads that no lease names under the outputs its run records name.
pub fn look(objects: &dyn Objects, uc: &StoreUrl, timing: &Timing) -> Result<Look, StoreError> {
    let r = read_all(objects, uc, timing)?;
    // What no engine reads first, as a folder's problems come first.
    let mut found: Vec<Finding> = r.problems.iter().map(super::problem).collect();
    found.extend(findings(objects, uc, &r.judged)?);
    Ok(Look { root: uc.to_string().into(), findings: found, looked_at: r.judged.len() })
}

/// What doctor finds among batches judged in the use case `uc`.
pub(crate) fn findings(objects: &dyn Objects, uc: &StoreUrl, judged: &[Judged]) -> Result<Vec<Finding>, StoreError> {
    // A repair named as it runs from any folder: the store's use case and
    // the key's start, as explain names it.
    let use_case = std::path::PathBuf::from(uc.to_string());
    let takeover = |key: &str| format!("`ubunye leases takeover {}`", crate::suggest::batch(&use_case, key));
    let outputs = recorded_outputs(objects, judged);
    let mut named: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let mut urls = Vec::with_capacity(judged.len());
    for j in judged {
        let b = j.row();
        urls.push(b.url.clone());
        let run = b.run_id.as_deref().map(documents::short).unwrap_or_else(|| "?".into());
        match b.state {
            State::Unreadable => {
                out.push(about("unreadable", &b, format!("{}; never judged free or dead: look at it", b.note)))
            }
            State::Damaged => {
                // As on disk: an empty lease is named whatever its age.
                out.push(about(
                    "not-json",
                    &b,
                    "the lease is an empty JSON object: it names no run and no claims".into(),
                ));
                if b.lease_dead == Some(true) {
                    let how = format!("{}, or {}", b.note, takeover(&b.key));
                    out.push(about("needs-repair", &b, how));
                }
            }
            State::Dead | State::Pending => out.push(about(
                "needs-repair",
                &b,
                format!(
                    "run {run} is dead with {} claim(s): the next run of the batch takes it over, or {}",
                    b.claims,
                    takeover(&b.key)
                ),
            )),
            // As on disk: a live run whose lease is not written.
            State::Live if j.batch.flags.contains(&crate::state::Flag::Stalled) => {
                out.push(about("stalled", &b, b.note.clone()))
            }
            State::Interrupted if b.record_status.as_deref() == Some("running") => out.push(about(
                "running-record",
                &b,
                format!(
                    "run {run}'s record says running, but no lease holds the batch: its run ended without writing its end (the store did not answer as it wrote it). The next run of the batch goes ahead; the record stays as it is"
                ),
            )),
            _ => {}
        }
        if let Some(d) = j.lease_doc() {
            named.extend(claimed_keys(objects, d));
        }
    }
    // Every open upload under the outputs, each once.
    let mut open: BTreeSet<(String, String)> = BTreeSet::new();
    for o in outputs.iter().filter(|o| o.bucket == objects.bucket()) {
        let prefix = if o.prefix.is_empty() { String::new() } else { format!("{}/", o.prefix) };
        open.extend(objects.open_uploads(&prefix)?);
    }
    // A live run may have claimed a key since its lease was read (it saves
    // the key before it starts the upload): the leases are read again, once,
    // before an upload is called stray.
    if open.iter().any(|(key, _)| !named.contains(key)) {
        for (_, url) in judged.iter().zip(&urls).filter(|(j, _)| j.lease_doc().is_some()) {
            let Some(lease_key) = claim_key(objects.bucket(), url).map(str::to_string) else { continue };
            if let Some(got) = objects.get(&lease_key)?
                && let Ok(Parsed::Doc(m)) = documents::parse_doc(&got.body)
            {
                named.extend(claimed_keys(objects, &LeaseDoc(m)));
            }
        }
    }
    for (key, id) in open {
        if !named.contains(&key) {
            out.push(Finding {
                kind: "stray-upload",
                path: objects.url(&key).into(),
                detail: format!(
                    "an open upload (id {id}) that no lease names: a run killed before it saved its keys, or not one of ours. It is invisible to readers; a lifecycle rule (AbortIncompleteMultipartUpload) removes it"
                ),
                task: None,
                key: None,
            });
        }
    }
    Ok(out)
}
