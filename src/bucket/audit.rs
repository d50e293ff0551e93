//! A store's audit of repairs: an object per repair under
//! `<prefix>/.ubunye/repairs/`, since an object cannot be appended to. Its
//! name starts with the store's time, so a listing gives them in order; it
//! is created only if absent, so no entry replaces another. `leases
//! explain` reads a batch's entries back.

use serde_json::Value;

use super::objects::{Objects, StoreError};
use super::url::StoreUrl;

/// Write one audit entry (`repair::AuditEntry::json`); its URL.
pub fn audit(objects: &dyn Objects, uc: &StoreUrl, entry: &Value) -> Result<String, StoreError> {
    let stamp = crate::timefmt::utc_z(objects.now()?).replace([':', '-'], "");
    let key = uc.key(&format!(".ubunye/repairs/{stamp}-{}.json", uuid::Uuid::new_v4()));
    let mut text = serde_json::to_string(entry).unwrap_or_default();
    text.push('\n');
    objects.create(&key, text.into_bytes())?;
    Ok(objects.url(&key))
}

/// The audit entries of the batch `task`/`key`, oldest first; one that
/// cannot be read is passed over (it names no batch that can be told).
pub fn repairs_of(objects: &dyn Objects, uc: &StoreUrl, task: &str, key: &str) -> Result<Vec<Value>, StoreError> {
    let keys: Vec<String> = objects.list(&uc.key(".ubunye/repairs/"))?.into_iter().map(|l| l.key).collect();
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
