//! A batch's place in a store: its use case, task and key, and the keys of
//! its lease, finished note and run records.

use super::url::StoreUrl;
use crate::layout::TaskPath;

/// A batch's place in a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The use case (`-d s3://bucket/prefix`).
    pub uc: StoreUrl,
    /// The task.
    pub task: TaskPath,
    /// The batch key (16 hex digits).
    pub key: String,
}

impl Place {
    /// `<prefix>/.ubunye/leases/<task>/<key>.json`
    pub fn lease_key(&self) -> String {
        self.uc.key(&format!(".ubunye/leases/{}/{}.json", self.task.as_str(), self.key))
    }
    /// `<prefix>/.ubunye/leases/<task>/<key>.finished.json`
    pub fn note_key(&self) -> String {
        self.uc.key(&format!(".ubunye/leases/{}/{}.finished.json", self.task.as_str(), self.key))
    }
    /// `<prefix>/.ubunye/lineage/<task>/<run_id>.json`
    pub fn record_key(&self, run_id: &str) -> String {
        self.uc.key(&format!(".ubunye/lineage/{}/{run_id}.json", self.task.as_str()))
    }
}
