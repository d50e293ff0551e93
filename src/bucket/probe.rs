//! The check at the start of every run against a store. The protocol rests
//! on conditional writes (a store that ignores them lets two runs hold one
//! batch), on the multipart fence (an aborted upload cannot be completed, and
//! a completion with `If-None-Match` does not land over an object: without
//! them a paused holder's file appears after its lease was taken), and on
//! one clock (`Date` and `Last-Modified` agree). About twenty requests on
//! objects and uploads of this run's own, under `.ubunye/probe/`, removed at
//! the end.

use super::objects::{ErrorKind, Objects, StoreError, Upload, Written};
use super::url::StoreUrl;

/// Refuse a store that does not honour `If-None-Match: *` on create,
/// `If-Match` on update, or `If-Match` on delete.
///
/// `scratch` is a local folder of this run's (its staging root) where the
/// fence's test part is written and removed.
pub fn probe(objects: &dyn Objects, uc: &StoreUrl, run_id: &str, scratch: &std::path::Path) -> Result<(), StoreError> {
    sweep(objects, uc)?;
    let key = uc.key(&format!(".ubunye/probe/{run_id}"));
    let unsupported = |what: &str| StoreError {
        kind: ErrorKind::Unsupported,
        url: objects.url(&key),
        what: format!(
            "the store does not honour {what}, which the lease rests on (two runs could hold one batch): refused; use a store with conditional writes (S3, SeaweedFS, MinIO, R2)"
        ),
    };
    let first = match objects.create(&key, b"probe 1".to_vec())? {
        Written::Done(e) => e,
        Written::Refused => {
            // A probe of this run's own left by a retried create: start again.
            objects.delete(&key)?;
            match objects.create(&key, b"probe 1".to_vec())? {
                Written::Done(e) => e,
                Written::Refused => return Err(unsupported("a create of a new key")),
            }
        }
    };
    let result = (|| {
        if objects.create(&key, b"probe 2".to_vec())? != Written::Refused {
            return Err(unsupported("If-None-Match: * on a write"));
        }
        if objects.update(&key, b"probe 3".to_vec(), "\"0000\"")? != Written::Refused {
            return Err(unsupported("If-Match on a write"));
        }
        let Written::Done(second) = objects.update(&key, b"probe 4".to_vec(), &first)? else {
            return Err(unsupported("If-Match on a write (the current ETag was refused)"));
        };
        if objects.delete_if(&key, &first)? {
            return Err(unsupported("If-Match on a delete"));
        }
        if !objects.delete_if(&key, &second)? || objects.head(&key)?.is_some() {
            return Err(unsupported("If-Match on a delete (the current ETag was refused)"));
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = objects.delete(&key);
    }
    result?;
    fence(objects, uc, run_id, scratch)
}

/// What probes of runs killed in them left, once it is older than any probe
/// in progress can be (ten minutes by the store's clock; a probe takes under
/// a second): their uploads, and their objects.
fn sweep(objects: &dyn Objects, uc: &StoreUrl) -> Result<(), StoreError> {
    let prefix = uc.key(".ubunye/probe/");
    let now = objects.now()?;
    let old =
        |t: std::time::SystemTime| now.duration_since(t).is_ok_and(|age| age > std::time::Duration::from_secs(600));
    for (key, id, started) in objects.open_uploads_aged(&prefix)? {
        if started.is_some_and(old) {
            objects.abort(&key, &id)?;
        }
    }
    for o in objects.list(&prefix)? {
        if old(o.modified) {
            objects.delete(&o.key)?;
        }
    }
    Ok(())
}

fn unsupported_at(objects: &dyn Objects, key: &str, what: &str) -> StoreError {
    StoreError {
        kind: ErrorKind::Unsupported,
        url: objects.url(key),
        what: format!(
            "the store {what}, which the fence rests on (a paused holder's file could appear after its lease was taken): refused; use a store that keeps S3's multipart rules (S3, SeaweedFS, MinIO)"
        ),
    }
}

/// The multipart fence and the clock.
fn fence(objects: &dyn Objects, uc: &StoreUrl, run_id: &str, scratch: &std::path::Path) -> Result<(), StoreError> {
    let unsupported = unsupported_at;
    let local = scratch.join(".probe-part");
    std::fs::write(&local, b"probe part").map_err(|e| StoreError {
        kind: ErrorKind::Local,
        url: local.display().to_string(),
        what: format!("cannot write the probe's part: {e}"),
    })?;
    let aborted = uc.key(&format!(".ubunye/probe/{run_id}.aborted"));
    let taken = uc.key(&format!(".ubunye/probe/{run_id}.taken"));
    let result = (|| {
        // An aborted upload cannot be completed.
        let id = objects.start_uploads(std::slice::from_ref(&aborted))?.remove(0);
        let up = Upload { key: aborted.clone(), id: id.clone(), file: local.clone() };
        let parts = objects.send_parts(std::slice::from_ref(&up))?.remove(0);
        objects.abort(&aborted, &id)?;
        let late = objects.complete_new(&[(up, parts)]);
        if matches!(late.as_deref(), Ok([Written::Done(_)])) || objects.head(&aborted)?.is_some() {
            return Err(unsupported(objects, &aborted, "completes an upload after it was aborted"));
        }
        // A completion with If-None-Match does not land over an object; and
        // the object's Last-Modified is the store's Date.
        let Written::Done(_) = objects.create(&taken, b"probe".to_vec())? else {
            return Err(unsupported(objects, &taken, "refuses a create of a new key"));
        };
        let written = objects.head(&taken)?.map(|h| h.modified);
        let now = objects.now()?;
        let apart = match written {
            Some(w) => now.duration_since(w).unwrap_or_else(|e| e.duration()),
            None => return Err(unsupported(objects, &taken, "does not show an object it has just written")),
        };
        if apart > std::time::Duration::from_secs(60) {
            return Err(unsupported(
                objects,
                &taken,
                &format!(
                    "has a Date {}s apart from the Last-Modified of an object it has just written",
                    apart.as_secs()
                ),
            ));
        }
        let id = objects.start_uploads(std::slice::from_ref(&taken))?.remove(0);
        let up = Upload { key: taken.clone(), id: id.clone(), file: local.clone() };
        let parts = objects.send_parts(std::slice::from_ref(&up))?.remove(0);
        let over = objects.complete_new(&[(up, parts)]);
        let _ = objects.abort(&taken, &id);
        let kept = objects.get(&taken)?.is_some_and(|g| g.body == b"probe");
        if matches!(over.as_deref(), Ok([Written::Done(_)])) || !kept {
            return Err(unsupported(objects, &taken, "lets a completion with If-None-Match: * land over an object"));
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&local);
    let _ = objects.delete(&aborted);
    let _ = objects.delete(&taken);
    result
}
