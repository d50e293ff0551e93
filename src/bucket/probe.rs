//! The check at the start of every run against a store: the protocol rests
//! on conditional writes, and a store that ignores them would let two runs
//! hold one batch. Seven requests on one object of this run's own, under
//! `.ubunye/probe/`, removed at the end.

use super::objects::{ErrorKind, Objects, StoreError, Written};
use super::url::StoreUrl;

/// Refuse a store that does not honour `If-None-Match: *` on create,
/// `If-Match` on update, or `If-Match` on delete.
pub fn probe(objects: &dyn Objects, uc: &StoreUrl, run_id: &str) -> Result<(), StoreError> {
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
    result
}
