//! An object store in memory that keeps S3's rules (ETags by content, times
//! to the second, uploads invisible until completed and dead once aborted),
//! on a clock the test holds. Faults can be injected per operation.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::objects::{ErrorKind, Got, Listed, Objects, StoreError, Upload, Written};
use crate::sys::Clock;

#[derive(Default)]
struct State {
    objects: BTreeMap<String, (Vec<u8>, String, SystemTime)>,
    /// id -> key, for uploads started and neither completed nor aborted.
    uploads: HashMap<String, String>,
    /// id -> when it was started.
    started: HashMap<String, SystemTime>,
    /// id -> the bytes its parts carry.
    parts: HashMap<String, Vec<u8>>,
    next_upload: u64,
    /// Operations to fail once each, by name (`get`, `update`, `complete_new`...).
    faults: Vec<&'static str>,
    /// Writes to carry out once each and then answer "refused", as a retry
    /// of a write that had landed is answered (`create`, `update`).
    lies: Vec<&'static str>,
    /// Every call fails, as a store that stopped answering.
    down: bool,
}

/// Something to do just before an operation, once.
type Before = (&'static str, Box<dyn FnOnce() + Send>);

/// The store.
pub struct Memory {
    bucket: String,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    before: Mutex<Vec<Before>>,
    calls: Mutex<std::collections::BTreeMap<&'static str, usize>>,
}

fn etag_of(body: &[u8]) -> String {
    let d = Sha256::digest(body);
    let hex: String = d.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

impl Memory {
    /// An empty bucket named `bucket`, whose clock is `clock`.
    pub fn new(bucket: &str, clock: Arc<dyn Clock>) -> Memory {
        Memory {
            bucket: bucket.into(),
            clock,
            state: Mutex::new(State::default()),
            before: Mutex::new(Vec::new()),
            calls: Mutex::new(Default::default()),
        }
    }

    /// Carry out the next `op` and then answer as a retry of it would:
    /// refused (`create` and `update`).
    pub fn lie_next(&self, op: &'static str) {
        self.lock().lies.push(op);
    }

    /// Run `f` just before the next call of `op` (another run's step, at the
    /// moment a test wants it).
    pub fn before(&self, op: &'static str, f: impl FnOnce() + Send + 'static) {
        self.before.lock().unwrap_or_else(|e| e.into_inner()).push((op, Box::new(f)));
    }

    /// Every object: key and body, in key order (to show what changed).
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        self.lock().objects.iter().map(|(k, (b, _, _))| (k.clone(), b.clone())).collect()
    }

    /// How many calls of `op` (`get`, `list`, ...) it has answered: what a
    /// test counts to show a read was not made.
    pub fn calls(&self, op: &str) -> usize {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).get(op).copied().unwrap_or(0)
    }

    fn hook(&self, op: &'static str) {
        *self.calls.lock().unwrap_or_else(|e| e.into_inner()).entry(op).or_default() += 1;
        let f = {
            let mut b = self.before.lock().unwrap_or_else(|e| e.into_inner());
            b.iter().position(|(o, _)| *o == op).map(|i| b.remove(i).1)
        };
        if let Some(f) = f {
            f();
        }
    }

    fn lies(&self, st: &mut State, op: &'static str) -> bool {
        match st.lies.iter().position(|f| *f == op) {
            Some(i) => {
                st.lies.remove(i);
                true
            }
            None => false,
        }
    }

    /// Fail the next call of `op` with a network error.
    pub fn fail_next(&self, op: &'static str) {
        self.lock().faults.push(op);
    }

    /// Stop answering every call (`true`), or answer again.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stamp(&self) -> SystemTime {
        let t = self.clock.now().duration_since(UNIX_EPOCH).unwrap_or_default();
        UNIX_EPOCH + Duration::from_secs(t.as_secs())
    }

    fn fault(&self, st: &mut State, op: &'static str, key: &str) -> Result<(), StoreError> {
        if st.down {
            return Err(StoreError {
                kind: ErrorKind::Network,
                url: self.url(key),
                what: format!("{op}: the store is down"),
            });
        }
        if let Some(i) = st.faults.iter().position(|f| *f == op) {
            st.faults.remove(i);
            return Err(StoreError {
                kind: ErrorKind::Network,
                url: self.url(key),
                what: format!("{op}: injected fault"),
            });
        }
        Ok(())
    }

    fn write(&self, st: &mut State, key: &str, body: Vec<u8>) -> String {
        let etag = etag_of(&body);
        st.objects.insert(key.to_string(), (body, etag.clone(), self.stamp()));
        etag
    }
}

impl Objects for Memory {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    fn get(&self, key: &str) -> Result<Option<Got>, StoreError> {
        self.hook("get");
        let mut st = self.lock();
        self.fault(&mut st, "get", key)?;
        Ok(st.objects.get(key).map(|(b, e, m)| Got { body: b.clone(), etag: e.clone(), modified: *m }))
    }

    fn head(&self, key: &str) -> Result<Option<Listed>, StoreError> {
        self.hook("head");
        let mut st = self.lock();
        self.fault(&mut st, "head", key)?;
        Ok(st.objects.get(key).map(|(b, e, m)| Listed {
            key: key.into(),
            etag: e.clone(),
            modified: *m,
            size: b.len() as u64,
        }))
    }

    fn create(&self, key: &str, body: Vec<u8>) -> Result<Written, StoreError> {
        self.hook("create");
        let mut st = self.lock();
        self.fault(&mut st, "create", key)?;
        if st.objects.contains_key(key) {
            return Ok(Written::Refused);
        }
        let etag = self.write(&mut st, key, body);
        if self.lies(&mut st, "create") {
            return Ok(Written::Refused);
        }
        Ok(Written::Done(etag))
    }

    fn update(&self, key: &str, body: Vec<u8>, etag: &str) -> Result<Written, StoreError> {
        self.hook("update");
        let mut st = self.lock();
        self.fault(&mut st, "update", key)?;
        match st.objects.get(key) {
            Some((_, e, _)) if e == etag => {
                let etag = self.write(&mut st, key, body);
                if self.lies(&mut st, "update") {
                    return Ok(Written::Refused);
                }
                Ok(Written::Done(etag))
            }
            _ => Ok(Written::Refused),
        }
    }

    fn put(&self, key: &str, body: Vec<u8>) -> Result<String, StoreError> {
        self.hook("put");
        let mut st = self.lock();
        self.fault(&mut st, "put", key)?;
        Ok(self.write(&mut st, key, body))
    }

    fn delete_if(&self, key: &str, etag: &str) -> Result<bool, StoreError> {
        self.hook("delete_if");
        let mut st = self.lock();
        self.fault(&mut st, "delete_if", key)?;
        match st.objects.get(key) {
            Some((_, e, _)) if e == etag => {
                st.objects.remove(key);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.hook("delete");
        let mut st = self.lock();
        self.fault(&mut st, "delete", key)?;
        st.objects.remove(key);
        Ok(())
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>, StoreError> {
        self.hook("list");
        let mut st = self.lock();
        self.fault(&mut st, "list", prefix)?;
        Ok(st
            .objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, (b, e, m))| Listed { key: k.clone(), etag: e.clone(), modified: *m, size: b.len() as u64 })
            .collect())
    }

    fn now(&self) -> Result<SystemTime, StoreError> {
        self.hook("now");
        let mut st = self.lock();
        self.fault(&mut st, "now", "")?;
        Ok(self.stamp())
    }

    fn start_uploads(&self, keys: &[String]) -> Result<Vec<String>, StoreError> {
        self.hook("start_uploads");
        let mut st = self.lock();
        self.fault(&mut st, "start_uploads", keys.first().map_or("", |k| k))?;
        Ok(keys
            .iter()
            .map(|k| {
                st.next_upload += 1;
                let id = format!("upload-{}", st.next_upload);
                st.uploads.insert(id.clone(), k.clone());
                st.started.insert(id.clone(), self.stamp());
                id
            })
            .collect())
    }

    fn send_parts(&self, uploads: &[Upload]) -> Result<Vec<Vec<String>>, StoreError> {
        self.hook("send_parts");
        let mut st = self.lock();
        self.fault(&mut st, "send_parts", uploads.first().map_or("", |u| &u.key))?;
        let mut out = Vec::new();
        for u in uploads {
            if st.uploads.get(&u.id) != Some(&u.key) {
                return Err(StoreError { kind: ErrorKind::Other, url: self.url(&u.key), what: "NoSuchUpload".into() });
            }
            let body = std::fs::read(&u.file).map_err(|e| StoreError {
                kind: ErrorKind::Local,
                url: u.file.display().to_string(),
                what: e.to_string(),
            })?;
            out.push(vec![etag_of(&body)]);
            st.parts.insert(u.id.clone(), body);
        }
        Ok(out)
    }

    fn complete_new(&self, uploads: &[(Upload, Vec<String>)]) -> Result<Vec<Written>, StoreError> {
        self.hook("complete_new");
        let mut st = self.lock();
        self.fault(&mut st, "complete_new", uploads.first().map_or("", |u| &u.0.key))?;
        let mut out = Vec::new();
        for (u, _) in uploads {
            if st.uploads.get(&u.id) != Some(&u.key) || st.objects.contains_key(&u.key) {
                out.push(Written::Refused);
                continue;
            }
            st.uploads.remove(&u.id);
            let body = st.parts.remove(&u.id).unwrap_or_default();
            out.push(Written::Done(self.write(&mut st, &u.key, body)));
        }
        Ok(out)
    }

    fn abort(&self, key: &str, id: &str) -> Result<(), StoreError> {
        self.hook("abort");
        let mut st = self.lock();
        self.fault(&mut st, "abort", key)?;
        if st.uploads.get(id).is_some_and(|k| k == key) {
            st.uploads.remove(id);
            st.parts.remove(id);
        }
        Ok(())
    }

    fn open_uploads_aged(&self, prefix: &str) -> Result<Vec<(String, String, Option<SystemTime>)>, StoreError> {
        let st = self.lock();
        let mut v: Vec<_> = st
            .uploads
            .iter()
            .filter(|(_, k)| k.starts_with(prefix))
            .map(|(id, k)| (k.clone(), id.clone(), st.started.get(id).copied()))
            .collect();
        v.sort();
        Ok(v)
    }
}
