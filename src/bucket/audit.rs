//! A store's audit of repairs: an object per repair, since an object cannot
//! be appended to, under the batch it is about
//! (`<prefix>/.ubunye/repairs/<task>/<key>/<store time>-<uuid>.json`), so
//! that `leases explain` lists that batch's entries alone. The name starts
//! with the store's time to the millisecond, so a listing gives them in
//! order; it is created only if absent, so no entry replaces another.

use std::time::UNIX_EPOCH;

use serde_json::Value;

use super::objects::{Objects, StoreError};
use super::url::StoreUrl;

/// An entry larger than this is not one a repair wrote: it is passed over
/// unread.
pub const ENTRY_MAX: u64 = 64 * 1024;

/// The folder of the batch `task`/`key`'s entries.
fn folder(uc: &StoreUrl, task: &str, key: &str) -> String {
    uc.key(&format!(".ubunye/repairs/{task}/{key}/"))
}

/// Write one audit entry (`repair::AuditEntry::json`) of the batch
/// `task`/`key`; its URL.
pub fn audit(objects: &dyn Objects, uc: &StoreUrl, task: &str, key: &str, entry: &Value) -> Result<String, StoreError> {
    // The store's clock tells the second (its `Date`); within one second,
    // this machine's clock orders the entries it writes.
    let stamp = crate::timefmt::utc_z(objects.now()?).replace([':', '-'], "");
    let here = std::time::SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let name = format!("{}{stamp}-{here:020}-{}.json", folder(uc, task, key), uuid::Uuid::new_v4());
    let mut text = serde_json::to_string(entry).unwrap_or_default();
    text.push('\n');
    objects.create(&name, text.into_bytes())?;
    Ok(objects.url(&name))
}

/// The audit entries of the batch `task`/`key`, oldest first; one that
/// cannot be read, or is larger than [`ENTRY_MAX`], is passed over.
pub fn repairs_of(objects: &dyn Objects, uc: &StoreUrl, task: &str, key: &str) -> Result<Vec<Value>, StoreError> {
    let mut listed = objects.list(&folder(uc, task, key))?;
    listed.retain(|l| l.size <= ENTRY_MAX);
    listed.sort_by(|a, b| a.key.cmp(&b.key));
    let keys: Vec<String> = listed.into_iter().map(|l| l.key).collect();
    let mut out = Vec::new();
    for got in objects.get_many(&keys)?.into_iter().flatten() {
        if let Ok(v) = serde_json::from_slice::<Value>(&got.body)
            && v["task"] == task
            && v["key"] == key
        {
            out.push(v);
        }
    }
    Ok(out)
}
