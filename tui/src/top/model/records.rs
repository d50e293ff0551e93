//! Run records of the model's batches: where a light batch's record is, and
//! how a record is filed under a batch read again.

use std::path::{Path, PathBuf};

use ubunye::state::{Batch, RecordInfo};

use super::Model;

impl Model {
    /// Where a record of the model is: a light batch's records keep no path
    /// when it is the usual one, `<lineage>/<task>/<run id>.json`.
    pub(super) fn record_path(&self, task: &str, run_id: &str, path: &Path) -> PathBuf {
        if path.as_os_str().is_empty() {
            self.scan.lineage_dir.join(task).join(format!("{run_id}.json"))
        } else {
            path.to_path_buf()
        }
    }
}

/// File a run record under a batch as a scan does: variables that hash to
/// the batch's key are the batch's.
pub(super) fn file_record(b: &mut Batch, r: RecordInfo) {
    if b.variables.is_none() && record_key(&b.task, &r).as_deref() == Some(b.key.as_str()) {
        b.variables = r.variables.clone();
    }
    b.records.push(r);
}

/// The key a record's variables hash to (none when masked or not hashable), as
/// the library files records in a full scan.
pub(super) fn record_key(task: &str, r: &RecordInfo) -> Option<String> {
    let vars = r.variables.as_ref()?;
    if vars.values().any(|v| v == ubunye::secrets::REDACTED) {
        return None;
    }
    let v = ubunye::vars::variables_from_json(&serde_json::Value::Object(vars.clone())).ok()?;
    ubunye::key::batch_key(task, &v).ok()
}
