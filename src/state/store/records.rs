//! The run records of a use case in a store (`ubunye runs`), read as the
//! state model reads them on disk (`state::record_of`). It only reads.

use std::path::Path;

use crate::bucket::{Listed, Objects, StoreError, StoreUrl};
use crate::state::{RecordInfo, UnreadableFile, record_of};

/// Records read: (task, record) each, and those that cannot be read.
pub type Records = (Vec<(String, RecordInfo)>, Vec<UnreadableFile>);

/// The run records listed under `<uc>/.ubunye/lineage/` (under `<task>/`
/// alone, when `under` names one), each with its task: a record lies at
/// `<task>/<run>.json`, its task three folders deep.
pub(super) fn listed(objects: &dyn Objects, uc: &StoreUrl, under: &str) -> Result<Vec<(String, Listed)>, StoreError> {
    let root = uc.key(".ubunye/lineage/");
    let mut out = Vec::new();
    for l in objects.list(&format!("{root}{under}"))? {
        let Some(rest) = l.key.strip_prefix(&root) else { continue };
        let Some((task, name)) = rest.rsplit_once('/') else { continue };
        if name.ends_with(".json") && task.split('/').count() == 3 {
            out.push((task.to_string(), l));
        }
    }
    Ok(out)
}

/// Every run record under `<uc>/.ubunye/lineage/`: (task, record), and the
/// records that cannot be read (each named by its URL).
pub fn records(objects: &dyn Objects, uc: &StoreUrl) -> Result<Records, StoreError> {
    let named: Vec<(String, String)> = listed(objects, uc, "")?.into_iter().map(|(t, l)| (t, l.key)).collect();
    let keys: Vec<String> = named.iter().map(|(_, k)| k.clone()).collect();
    let (mut out, mut problems) = (Vec::new(), Vec::new());
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
