//! Run records of the model's batches: where a light batch's record is, and
//! how a record is filed under a batch read again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ubunye::state::{Batch, RecordInfo};

use ubunye::state;

use super::light::Slot;
use super::packed::encoded;
use super::{Id, Model};

impl Model {
    /// A run record's file appeared, changed or went: filed at once as a
    /// read of its whole task files it, without that read. A record is filed
    /// under the batch whose files name its run, else the one its variables
    /// hash to, else the unknown batch (an unreadable one by its file's name
    /// alone), and moves nothing else: so the batch that had it and the batch
    /// that has it now are read again, each alone, and no other batch of the
    /// task can change. True when something shown changed; None when it
    /// cannot be told here (a task not seen yet, a run two batches name, a
    /// batch that cannot be read again): the task is read whole.
    pub(super) fn record_changed(&mut self, task: &str, path: &Path) -> Option<bool> {
        let t = self.tasks.get(task)?;
        let now = self.now_for(task);
        let stem = |p: &Path| p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        // One pass over the task's batches: which hold this record's file,
        // and which name each run (strings compared as they are packed, no
        // run id made for each of 10,000 batches).
        let usual = path.parent() == Some(self.scan.lineage_dir.join(task).as_path())
            && path.extension().is_some_and(|x| x == "json");
        let stem_field = encoded(&stem(path));
        let mut held: Vec<usize> = Vec::new();
        let mut by_run: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
        for i in (0..self.side.len()).filter(|&i| self.side[i].task == t) {
            match &self.slots[i] {
                Slot::Packed(p) => {
                    if let Some(run) = p.note_run_field() {
                        by_run.entry(run.to_vec()).or_default().push(i);
                    }
                    let here = |(run, file): (&[u8], &str)| {
                        if file.is_empty() { usual && run == stem_field.as_slice() } else { Path::new(file) == path }
                    };
                    if p.record_files().any(here) {
                        held.push(i);
                    }
                }
                Slot::Whole(w) => {
                    let b = &w.batch;
                    for run in b.named_runs() {
                        let at = by_run.entry(encoded(run)).or_default();
                        if at.last() != Some(&i) {
                            at.push(i);
                        }
                    }
                    if b.records.iter().any(|r| self.record_path(task, &r.run_id, &r.path) == path)
                        || b.unreadable.iter().any(|u| u.path == path)
                    {
                        held.push(i);
                    }
                }
            }
        }
        if held.len() > 1 {
            return None;
        }
        let held: Option<Id> = held.first().and_then(|&i| self.row(i)).map(|b| b.id());
        // Where a full scan files it now.
        let named = |run: &str| -> Option<Option<String>> {
            match by_run.get(&encoded(run)).map(Vec::as_slice) {
                None => Some(None),
                Some([i]) => Some(self.row(*i).map(|b| b.key().to_string())),
                Some(_) => None,
            }
        };
        let unknown = || "?".repeat(16);
        // Where a full scan files a record: None when a file holds another
        // run than its name says (a batch's read, `scan_batch`, files it by
        // its name; a task's read by its content).
        let home = |r: &RecordInfo| -> Option<String> {
            if r.run_id != stem(&r.path) {
                return None;
            }
            Some(named(&r.run_id)?.or_else(|| record_key(task, r)).unwrap_or_else(unknown))
        };
        let gone = matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
        let now_at: Option<String> = if gone {
            None
        } else {
            Some(match state::read_record(path) {
                Ok(r) => home(&r)?,
                Err(_) => named(&stem(path))?.unwrap_or_else(unknown),
            })
        };
        let old = held.filter(|(_, k)| Some(k) != now_at.as_ref());
        let mut fresh = Vec::new();
        if let Some(id) = &old {
            fresh.push(self.read_again_as(id, now, None, Some(path)).ok()?);
        }
        if let Some(key) = now_at {
            fresh.push(self.read_again_as(&(task.to_string(), key), now, Some(path), None).ok()?);
        }
        // Each record of the batches read again is where a task's read
        // would file it, in its order, else the task is read whole.
        // Records are in the order of their start, and those that start
        // together (none known: damaged ones) in the order the task's folder
        // lists them, which only the task's read knows.
        let ordered = |b: &Batch| b.records.windows(2).all(|w| w[0].started_at != w[1].started_at);
        // A batch's variables come from the first of its records (in the
        // folder's order) that hash to its key: told here only when those
        // all read alike.
        let alike = |b: &Batch| {
            // As the line shows them: in their order (maps alike in another
            // order are equal as maps).
            let line = |r: &RecordInfo| r.variables.as_ref().map(state::variables_text);
            let mut vars = b.records.iter().filter(|r| record_key(task, r).as_deref() == Some(b.key.as_str()));
            let first = vars.next().map(line);
            vars.all(|r| Some(line(r)) == first)
        };
        // A run it names whose record a batch's read passes over (a
        // dangling link, a run id no engine writes) and a task's read files
        // under it, unreadable.
        let lineage = self.scan.lineage_dir.join(task);
        let whole = |b: &Batch| {
            b.named_runs().all(|run| {
                let p = lineage.join(format!("{run}.json"));
                ubunye::layout::run_id_is_safe(run) && (p.exists() || std::fs::symlink_metadata(&p).is_err())
            })
        };
        let filed = |b: &Batch| {
            ordered(b)
                && alike(b)
                && whole(b)
                && b.records.iter().all(|r| home(r).as_deref() == Some(b.key.as_str()))
                && b.unreadable
                    .iter()
                    .filter(|u| u.kind == state::FileKind::Record)
                    .all(|u| named(&stem(&u.path)).is_some_and(|n| n.unwrap_or_else(unknown) == b.key))
        };
        if !fresh.iter().all(filed) {
            return None;
        }
        for b in fresh {
            self.put(b);
        }
        Some(true)
    }

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
