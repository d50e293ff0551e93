//! Run records, filed where a full scan files them: under the batch that
//! names the record's run, else by its variables, an unreadable one under the
//! unknown batch; every batch that held a changed record read again without
//! it (review 8).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use ubunye::state::{self, Batch, RecordInfo};
use ubunye::sys::Now;

use super::{Id, Model, empty_batch};

impl Model {
    /// Where a record of the model is: a light batch's records keep no path
    /// when it is the usual one, `<lineage>/<task>/<run id>.json`.
    pub(super) fn record_path(&self, task: &str, r: &RecordInfo) -> PathBuf {
        if r.path.as_os_str().is_empty() {
            self.scan.lineage_dir.join(task).join(format!("{}.json", r.run_id))
        } else {
            r.path.clone()
        }
    }

    /// (task, run id) -> the batch that names the run (its lease, orphans,
    /// finished note or marks), for these tasks: where a full scan files the
    /// run's record.
    pub(super) fn run_index(&self, tasks: &BTreeSet<&str>) -> HashMap<(String, String), Id> {
        let mut m = HashMap::new();
        for (i, b) in self.scan.batches.iter().enumerate().filter(|(_, b)| tasks.contains(b.task.as_str())) {
            // A light batch's note is gone: its run is the batch's run_id.
            let light = self.side[i].light.then_some(b.run_id.as_deref()).flatten();
            for r in b.named_runs().chain(light).filter(|r| !r.is_empty()) {
                m.insert((b.task.clone(), r.to_string()), (b.task.clone(), b.key.clone()));
            }
        }
        m
    }

    /// Record file -> the batches that hold it now (as a record, or as an
    /// unreadable file), for these tasks.
    pub(super) fn record_holders(&self, tasks: &BTreeSet<&str>) -> HashMap<PathBuf, Vec<Id>> {
        let mut m: HashMap<PathBuf, Vec<Id>> = HashMap::new();
        for b in self.scan.batches.iter().filter(|b| tasks.contains(b.task.as_str())) {
            let paths = b
                .records
                .iter()
                .map(|r| self.record_path(&b.task, r))
                .chain(b.unreadable.iter().map(|u| u.path.clone()));
            for p in paths {
                m.entry(p).or_default().push((b.task.clone(), b.key.clone()));
            }
        }
        m
    }

    /// Read one run record again and file it where a full scan would: under
    /// the batch that names its run, else by its variables, an unreadable one
    /// under the unknown batch. Every batch that held it before is read again
    /// without it (whole: a light copy is never judged).
    pub(super) fn reread_record(
        &mut self,
        task: &str,
        path: &Path,
        runs: &HashMap<(String, String), Id>,
        holders: &[Id],
        now: Now,
    ) {
        let read = if path.exists() { Some(state::read_record(path)) } else { None };
        let unknown = || (task.to_string(), "?".repeat(16));
        let target: Option<Id> = match &read {
            Some(Ok(r)) => Some(
                runs.get(&(task.to_string(), r.run_id.clone()))
                    .cloned()
                    .unwrap_or_else(|| record_key(task, r).map(|k| (task.to_string(), k)).unwrap_or_else(unknown)),
            ),
            Some(Err(_)) => Some(unknown()),
            None => None,
        };
        for id in holders.iter().filter(|h| Some(*h) != target.as_ref()) {
            if let Some(b) = self.without(id, path, now) {
                self.put(b);
            }
        }
        let Some(id) = target else { return };
        let Some(mut b) = self.without(&id, path, now) else { return };
        match read {
            Some(Ok(r)) => file_record(&mut b, r),
            Some(Err(u)) => b.unreadable.push(u),
            None => {}
        }
        b.records.sort_by(|a, c| c.started_at.cmp(&a.started_at));
        state::classify(&mut b, now);
        self.put(b);
    }

    /// A batch read whole again without one record file; a batch the model
    /// does not have, empty. None when it cannot be read now (it is kept as
    /// it was).
    fn without(&self, id: &Id, path: &Path, now: Now) -> Option<Batch> {
        if self.get(id).is_none() {
            return Some(empty_batch(id));
        }
        let mut b = self.read_again(id, now, Some(path)).ok()?;
        b.unreadable.retain(|u| u.path != path);
        Some(b)
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
    let v = ubunye::key::variables_from_json(&serde_json::Value::Object(vars.clone())).ok()?;
    ubunye::key::batch_key(task, &v).ok()
}
