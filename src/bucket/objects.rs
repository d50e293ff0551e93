//! What the protocol needs of an object store, and nothing more: reads with
//! their ETag and the store's modification time, writes that succeed only if
//! the object is absent or unchanged, a delete that does the same, the
//! store's clock, and multipart uploads (invisible until completed, dead once
//! aborted). [`super::S3`] does it over HTTP; [`super::Memory`] in memory,
//! for unit tests.

use std::path::PathBuf;
use std::time::SystemTime;

/// An object read whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    /// Its bytes.
    pub body: Vec<u8>,
    /// Its ETag, as the store gives it (quotes and all).
    pub etag: String,
    /// When the store last wrote it, by the store's clock.
    pub modified: SystemTime,
}

/// An object's name and metadata, from a list or a HEAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its key.
    pub key: String,
    /// Its ETag.
    pub etag: String,
    /// When the store last wrote it, by the store's clock.
    pub modified: SystemTime,
    /// Its size in bytes.
    pub size: u64,
}

/// What a conditional write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// It was written; the object's new ETag.
    Done(String),
    /// Its condition did not hold: the object exists (a create), or is not
    /// the one named (an update), or the upload is gone (a completion).
    Refused,
}

/// A file to upload as one multipart upload, already started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    /// The key it will have once completed.
    pub key: String,
    /// The upload's id, as the store gave it.
    pub id: String,
    /// The local file whose bytes it carries.
    pub file: PathBuf,
}

/// Why a request to the store did not get an answer the protocol can use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {what}")]
pub struct StoreError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The object (or bucket) the request was for: `s3://bucket/key`.
    pub url: String,
    /// What went wrong and, where it helps, what to do; never a credential.
    pub what: String,
}

/// The kinds of [`StoreError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bucket does not exist.
    NoBucket,
    /// The store refused the credentials, or has none to use.
    Denied,
    /// No answer, or not in time (after the bounded retries).
    Network,
    /// The store does not do what the protocol rests on.
    Unsupported,
    /// A local file could not be read.
    Local,
    /// Nothing is under the use case's `.ubunye/`: no run has used it (a
    /// prefix mistyped, or the bucket's root).
    NotAUseCase,
    /// Anything else the store answered.
    Other,
}

/// The operations of an object store the protocol uses. Keys are full keys in
/// the store's one bucket. Every method is bounded in time (the store's own
/// retries are bounded); none is retried here.
pub trait Objects: Send + Sync {
    /// The bucket's name, for messages.
    fn bucket(&self) -> &str;
    /// `s3://bucket/key`, for messages.
    fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket())
    }
    /// The object, or None when there is none.
    fn get(&self, key: &str) -> Result<Option<Got>, StoreError>;
    /// Each object, or None where there is none: many in flight where the
    /// store allows (a listing reads thousands).
    fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Got>>, StoreError> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// The object's metadata, or None when there is none.
    fn head(&self, key: &str) -> Result<Option<Listed>, StoreError>;
    /// Write `body` only if no object has the key (`If-None-Match: *`).
    fn create(&self, key: &str, body: Vec<u8>) -> Result<Written, StoreError>;
    /// Write `body` only if the object's ETag is `etag` (`If-Match`).
    fn update(&self, key: &str, body: Vec<u8>, etag: &str) -> Result<Written, StoreError>;
    /// Write `body` whatever is there (for what only one run ever writes).
    fn put(&self, key: &str, body: Vec<u8>) -> Result<String, StoreError>;
    /// Delete the object only if its ETag is `etag`; false when it was not
    /// (or there was none).
    fn delete_if(&self, key: &str, etag: &str) -> Result<bool, StoreError>;
    /// Delete the object; no error when there is none.
    fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// Every object whose key starts with `prefix`, in key order.
    fn list(&self, prefix: &str) -> Result<Vec<Listed>, StoreError>;
    /// Whether any object's key starts with `prefix` (one object listed at
    /// most, where the store allows).
    fn any(&self, prefix: &str) -> Result<bool, StoreError> {
        Ok(!self.list(prefix)?.is_empty())
    }
    /// The time by the store's clock, read without writing anything.
    fn now(&self) -> Result<SystemTime, StoreError>;
    /// Start one multipart upload per key; their ids, in the same order.
    fn start_uploads(&self, keys: &[String]) -> Result<Vec<String>, StoreError>;
    /// Send each upload's file as its parts; the parts' ETags per upload.
    fn send_parts(&self, uploads: &[Upload]) -> Result<Vec<Vec<String>>, StoreError>;
    /// Complete each upload only if no object has its key and the upload is
    /// still there: [`Written::Refused`] when either fails.
    fn complete_new(&self, uploads: &[(Upload, Vec<String>)]) -> Result<Vec<Written>, StoreError>;
    /// Abort an upload. No error when it is gone already (aborted, or
    /// completed: HEAD the key to know which).
    fn abort(&self, key: &str, id: &str) -> Result<(), StoreError>;
    /// The uploads started under `prefix` and neither completed nor
    /// aborted: (key, id), in key order.
    fn open_uploads(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self.open_uploads_aged(prefix)?.into_iter().map(|(k, id, _)| (k, id)).collect())
    }
    /// The same, each with when the store started it (None where it does
    /// not say).
    fn open_uploads_aged(&self, prefix: &str) -> Result<Vec<(String, String, Option<SystemTime>)>, StoreError>;
}
