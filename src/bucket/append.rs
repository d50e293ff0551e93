//! Claimed appends into a store. The command's files are in a local staging
//! folder; each becomes one multipart upload under a key that carries the
//! run's id. The order is the fence:
//!
//! 1. save every key in the lease (a conditional save: a taker now knows
//!    what to look for, and lists the open uploads of each key to abort);
//! 2. start every upload (invisible: no HEAD, no object list shows it), and
//!    save their ids in the lease (a taker aborts them by id);
//! 3. send the parts;
//! 4. complete each upload with `If-None-Match: *`: the object appears in one
//!    step, never over another, and not at all once a taker aborted it;
//! 5. mark the lease done (a conditional save: a run that lost its lease
//!    stops here, and its taker deletes what step 4 made visible);
//! 6. write the finished note (a conditional create).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lease::{BucketError, Lease};
use super::objects::{Objects, StoreError, Upload, Written};
use super::recover::{remove_replaced, take_back};
use super::unwind::LandError;
use super::url::StoreUrl;
use crate::documents::{self, Map, writing_note};
use crate::protocol::Recovery;
use crate::sys::{Hook, Step};
use crate::timefmt;

/// A file to land, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// The output's name.
    pub output: String,
    /// The local file.
    pub file: PathBuf,
    /// Its key in the store.
    pub key: String,
}

/// The name a file lands under: the run id after any leading `_` or `.`
/// (so a hidden file stays hidden to readers), then the file's own name.
pub fn landed_name(name: &str, run_id: &str) -> String {
    let lead = name.len() - name.trim_start_matches(['_', '.']).len();
    format!("{}{run_id}-{}", &name[..lead], &name[lead..])
}

/// Every file under `staging`, each with the key it lands under in `out`;
/// the top `_SUCCESS` marker is left out. A symlink, a special file or a name
/// that is not UTF-8 is refused, naming it.
pub fn plan(output: &str, staging: &Path, out: &StoreUrl, run_id: &str) -> Result<Vec<Planned>, String> {
    let mut found = Vec::new();
    walk(staging, staging, &mut found)?;
    found.sort();
    let mut planned = Vec::new();
    for rel in found {
        let parts: Vec<&str> = rel.split('/').collect();
        if parts == ["_SUCCESS"] {
            continue;
        }
        if let Err(why) = super::url::plain_key(&rel) {
            return Err(format!("{}: its name {why}; rename it", staging.join(&rel).display()));
        }
        let (dirs, name) = parts.split_at(parts.len() - 1);
        let mut path = dirs.join("/");
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(&landed_name(name[0], run_id));
        planned.push(Planned { output: output.into(), file: staging.join(&rel), key: out.key(&path) });
    }
    Ok(planned)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read the staging folder: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = entry.path();
        let ty = entry.file_type().map_err(|e| format!("{}: {e}", path.display()))?;
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let Some(rel_text) = rel.to_str().map(str::to_string) else {
            return Err(format!("{}: its name is not UTF-8, which a key cannot hold: rename it", path.display()));
        };
        if ty.is_dir() {
            walk(root, &path, out)?;
        } else if ty.is_file() {
            out.push(rel_text);
        } else {
            let what = if ty.is_symlink() { "a symlink" } else { "not a regular file" };
            return Err(format!(
                "{}: is {what}: only regular files are uploaded; write the file itself",
                path.display()
            ));
        }
    }
    Ok(())
}

/// A landing that committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landed {
    /// Files landed per output.
    pub files: Vec<(String, usize)>,
    /// Files a `--rerun` replaces that could not be removed yet: the lease
    /// must be kept, so that the next run of the batch removes them.
    pub replaced_left: usize,
}

/// Land `files` under `lease`, in the order of this module's doc; then write
/// the finished note. Returns the number of files landed per output. A
/// request that fails is followed by reads of the lease, for
/// `timing.store_outage` ([`super::unwind`]).
pub fn land(
    objects: &dyn Objects,
    lease: &Lease,
    outputs: &[(String, StoreUrl)],
    files: &[Planned],
    hook: &Hook,
    timing: &crate::sys::Timing,
) -> Result<Landed, LandError> {
    use super::unwind::{Stage, after_failure};
    // A failed request, or a save without an answer: the lease read again.
    let fail = |e: BucketError, stage: Stage| -> LandError {
        match e {
            BucketError::Store(s) => after_failure(objects, lease, s, stage, timing),
            other => LandError::Lease(other),
        }
    };
    // 1. The keys first: a run killed while its uploads start leaves no
    // upload a taker cannot find (it lists the open uploads of each claimed key).
    let replacing = lease.replacing();
    let claimed = lease.save(|d| {
        if let Some(rep) = &replacing {
            // A --rerun: what the finished run claimed, removed once this
            // run has committed (its note replaced first).
            rep.write_into(d);
        }
        let outs = d.outputs_mut();
        for (name, url) in outputs {
            let mut note = match writing_note(true, true) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            note.insert("url".into(), Value::String(url.to_string()));
            let mine = files.iter().filter(|f| &f.output == name).map(|f| Value::String(objects.url(&f.key)));
            note.insert("claimed".into(), Value::Array(mine.collect()));
            outs.insert(name.clone(), Value::Object(note));
        }
    });
    claimed.map_err(|e| fail(e, Stage::Unseen))?;
    hook.at(Step::KeysClaimed);
    let keys: Vec<String> = files.iter().map(|f| f.key.clone()).collect();
    // A store failure once the keys are claimed: what this run made visible
    // is taken back (a lost lease is left to its taker).
    let undo = |stage: Stage| {
        move |e: StoreError| -> LandError {
            match lease.lost() {
                Some(why) => LandError::Lease(BucketError::Lost { url: objects.url(&lease.place().lease_key()), why }),
                None => after_failure(objects, lease, e, stage, timing),
            }
        }
    };
    let ids = objects.start_uploads(&keys).map_err(undo(Stage::Unseen))?;
    let uploads: Vec<Upload> = files
        .iter()
        .zip(&ids)
        .map(|(f, id)| Upload { key: f.key.clone(), id: id.clone(), file: f.file.clone() })
        .collect();
    // 2. Their upload ids: a taker aborts them by id.
    let saved = lease.save(|d| {
        for (name, note) in d.outputs_mut().iter_mut() {
            if let Value::Object(m) = note {
                let ups: Map = uploads
                    .iter()
                    .zip(files)
                    .filter(|(_, f)| &f.output == name)
                    .map(|(u, _)| (objects.url(&u.key), Value::String(u.id.clone())))
                    .collect();
                m.insert("uploads".into(), Value::Object(ups));
            }
        }
    });
    if let Err(e) = saved {
        // Lost between the two saves: abort them here too (the taker finds
        // them by listing, and aborting twice is harmless).
        for u in &uploads {
            let _ = objects.abort(&u.key, &u.id);
        }
        return Err(fail(e, Stage::Unseen));
    }
    hook.at(Step::UploadsClaimed);
    // An upload started by a retried request whose first answer was lost has
    // an id nobody saved, so no taker would find it: abort it now.
    let saved_ids: Vec<&str> = uploads.iter().map(|u| u.id.as_str()).collect();
    if let Ok(open) =
        objects.open_uploads(&super::recover::common_prefix(&keys.iter().map(String::as_str).collect::<Vec<_>>()))
    {
        for (key, id) in open {
            if keys.contains(&key) && !saved_ids.contains(&id.as_str()) {
                let _ = objects.abort(&key, &id);
            }
        }
    }
    let parts = objects.send_parts(&uploads).map_err(undo(Stage::Unseen))?;
    hook.at(Step::PartsSent);
    // The last look before anything becomes visible: the lease as it is now.
    lease.still_held().map_err(|e| fail(e, Stage::Unseen))?;
    let done =
        objects.complete_new(&uploads.iter().cloned().zip(parts).collect::<Vec<_>>()).map_err(undo(Stage::Seen))?;
    if let Some(i) = done.iter().position(|w| matches!(w, Written::Refused)) {
        let r = own_take_back(objects, lease);
        // Refused while the run thought it held the lease: most often a
        // taker's abort. The lease says which.
        if let Err(lost @ BucketError::Lost { .. }) = lease.reread() {
            return Err(LandError::Lease(lost));
        }
        return Err(LandError::Refused { url: objects.url(&uploads[i].key), rolled_back: Box::new(r) });
    }
    hook.at(Step::Completed);
    let marked = lease.save(|d| {
        for (_, note) in d.outputs_mut().iter_mut() {
            if let Value::Object(m) = note {
                m.insert("state".into(), Value::String("done".into()));
            }
        }
        d.set("committed", Value::Bool(true));
    });
    // A done mark whose answer was lost may have landed: read the lease to
    // know. Committed: go on. Not committed and still this run's: one more
    // try, else take back. Another run's: lost.
    let marked = match marked {
        Err(BucketError::Store(e)) => match lease.reread() {
            Ok(true) => Ok(()),
            Ok(false) => lease
                .save(|d| {
                    for (_, note) in d.outputs_mut().iter_mut() {
                        if let Value::Object(m) = note {
                            m.insert("state".into(), Value::String("done".into()));
                        }
                    }
                    d.set("committed", Value::Bool(true));
                })
                .map_err(|_| BucketError::Store(e)),
            Err(lost) => Err(lost),
        },
        other => other,
    };
    if let Err(e) = marked {
        if let BucketError::Store(store) = e {
            return Err(after_failure(objects, lease, store, Stage::DoneMark, timing));
        }
        if lease.lost().is_some() {
            // Taken over after the completions: take back what this run made
            // visible now, not only when its taker looks (the names are its
            // own; the taker deletes the same ones, which is harmless).
            own_take_back(objects, lease);
        }
        return Err(e.into());
    }
    // Committed: a note that cannot be written now is the next run's to
    // write (it finds the lease marked done); nothing is taken back.
    match write_note(objects, lease) {
        Err(BucketError::Store(e)) => return Err(LandError::Committed(e)),
        other => other?,
    }
    let (_, replaced_left) = remove_replaced(objects, &lease.doc(), &lease.place().uc);
    Ok(Landed {
        files: outputs.iter().map(|(o, _)| (o.clone(), files.iter().filter(|f| &f.output == o).count())).collect(),
        replaced_left,
    })
}

/// This run's own rollback: its uploads aborted, what it completed deleted.
fn own_take_back(objects: &dyn Objects, lease: &Lease) -> Recovery {
    let mut r = Recovery { run_id: lease.run_id().into(), ..Default::default() };
    let _ = take_back(objects, &lease.doc(), &lease.place().uc, std::time::Duration::ZERO, &mut r);
    r
}

/// The finished note of the lease's run: a conditional create; a note there
/// already must be this run's own (a taker finished the commit for it).
fn write_note(objects: &dyn Objects, lease: &Lease) -> Result<(), BucketError> {
    let place = lease.place();
    let doc = lease.doc();
    let now = timefmt::utc_z(std::time::SystemTime::now());
    let Ok(Some(text)) = documents::finished_note(&doc, place.task.as_str(), &now) else { return Ok(()) };
    let key = place.note_key();
    let written = match lease.replacing() {
        // A --rerun replaces exactly the note it read.
        Some(rep) => objects.update(&key, text.into_bytes(), &rep.etag)?,
        None => objects.create(&key, text.into_bytes())?,
    };
    if let Written::Done(_) = written {
        return Ok(());
    }
    match objects.get(&key)? {
        Some(got)
            if documents::parse_doc(&got.body).is_ok_and(|p| match p {
                documents::Parsed::Doc(m) => documents::LeaseDoc(m).is_run(lease.run_id()),
                documents::Parsed::NotADoc => false,
            }) =>
        {
            Ok(())
        }
        _ => Err(BucketError::Lost { url: objects.url(&key), why: "another run's finished note is there".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn landed_names_carry_the_run_and_stay_hidden_if_hidden() {
        assert_eq!(landed_name("part-0.csv", "R"), "R-part-0.csv");
        assert_eq!(landed_name("_meta", "R"), "_R-meta");
        assert_eq!(landed_name("._x", "R"), "._R-x");
        assert_eq!(landed_name("__", "R"), "__R-");
    }

    #[test]
    fn a_plan_names_every_file_and_refuses_a_symlink() {
        let d = std::env::temp_dir().join(format!("ubunye-plan-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(d.join("dt=1")).unwrap();
        std::fs::write(d.join("dt=1/a.csv"), "a").unwrap();
        std::fs::write(d.join("_SUCCESS"), "").unwrap();
        std::fs::write(d.join("b.csv"), "b").unwrap();
        let out = StoreUrl::parse("s3://bkt/lake/ev").unwrap();
        let p = plan("ev", &d, &out, "R").unwrap();
        let keys: Vec<&str> = p.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["lake/ev/R-b.csv", "lake/ev/dt=1/R-a.csv"]);
        std::os::unix::fs::symlink("/etc/passwd", d.join("link")).unwrap();
        let e = plan("ev", &d, &out, "R").unwrap_err();
        assert!(e.contains("link: is a symlink"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
