//! The run records of a use case in a store (`ubunye runs`), read as the
//! state model reads them on disk (`state::record_of`). It only reads.

use std::path::Path;

use crate::bucket::{Listed, Objects, StoreError, StoreUrl};
use crate::state::{RecordInfo, UnreadableFile, record_of};

/// The run records of a listing, each with its task, and the `.json`
/// objects among them that are where no record belongs.
pub(super) type Listing = (Vec<(String, Listed)>, Vec<UnreadableFile>);

/// Records read: (task, record) each, and those that cannot be read.
pub type Records = (Vec<(String, RecordInfo)>, Vec<UnreadableFile>);

/// The run records listed under `<uc>/.ubunye/lineage/` (under `<task>/`
/// alone, when `under` names one), each with its task: a record lies at
/// `<task>/<run>.json`, its task three folders deep. A `.json` object at
/// another depth is said, as a folder's scan says such a file, never passed
/// over in silence; other objects are left alone, as a folder's are.
pub(super) fn listed(objects: &dyn Objects, uc: &StoreUrl, under: &str) -> Result<Listing, StoreError> {
    let root = uc.key(".ubunye/lineage/");
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for l in objects.list(&format!("{root}{under}"))? {
        let Some(rest) = l.key.strip_prefix(&root) else { continue };
        if !rest.ends_with(".json") {
            continue;
        }
        match rest.rsplit_once('/') {
            Some((task, _)) if task.split('/').count() == 3 && crate::bucket::plain_key(&l.key).is_ok() => {
                out.push((task.to_string(), l))
            }
            _ => problems.push(UnreadableFile::misplaced(
                Path::new(&objects.url(&l.key)),
                match crate::bucket::plain_key(&l.key) {
                    Err(_) => super::odd_name(&l.key),
                    Ok(()) => format!(
                        "a .json object {} folder(s) below .ubunye/lineage/: a run record is <usecase>/<package>/<task>/<run>.json there, so no engine reads this one",
                        rest.matches('/').count()
                    ),
                },
            )),
        }
    }
    Ok((out, problems))
}

/// Every task's records [`listed`]; a use case with none, and nothing
/// misplaced, is looked for under its `.ubunye/` ([`super::used`]).
fn listed_all(objects: &dyn Objects, uc: &StoreUrl) -> Result<Listing, StoreError> {
    let (listed, problems) = listed(objects, uc, "")?;
    if listed.is_empty() && problems.is_empty() {
        super::used(objects, uc)?;
    }
    Ok((listed, problems))
}

/// Every run record under `<uc>/.ubunye/lineage/`: (task, record), and the
/// records that cannot be read or are where no record belongs (each named
/// by its URL).
pub fn records(objects: &dyn Objects, uc: &StoreUrl) -> Result<Records, StoreError> {
    let (listed, mut problems) = listed_all(objects, uc)?;
    let named: Vec<(String, String)> = listed.into_iter().map(|(t, l)| (t, l.key)).collect();
    let keys: Vec<String> = named.iter().map(|(_, k)| k.clone()).collect();
    let mut out = Vec::new();
    for ((task, key), got) in named.into_iter().zip(objects.get_many(&keys)?) {
        // Removed between the list and the read: gone, not unreadable.
        let Some(got) = got else { continue };
        match record_of(&got.body, Path::new(&objects.url(&key))) {
            Ok(r) => out.push((task, r)),
            Err(u) => problems.push(u),
        }
    }
    Ok((out, problems))
}

/// The run records whose run id starts with `prefix` (any case), by one
/// listing and no read: (task, the record's key) each, in key order. What
/// `runs show` names a run by.
pub fn runs_named(objects: &dyn Objects, uc: &StoreUrl, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
    let (listed, _) = listed_all(objects, uc)?;
    let want = prefix.to_ascii_lowercase();
    Ok(listed
        .into_iter()
        .filter(|(_, l)| {
            let run = l.key.rsplit('/').next().and_then(|n| n.strip_suffix(".json")).unwrap_or_default();
            run.to_ascii_lowercase().starts_with(&want)
        })
        .map(|(task, l)| (task, l.key))
        .collect())
}
