//! The use cases a listing reads (`-d` repeated, `--find ROOT`), each with
//! what stops it being read. One use case that cannot be read is a row of
//! the listing (and `ubunye_scan_errors` in the metrics), never the end of
//! it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use std::sync::Arc;

use ubunye::bucket::{Objects, S3, StoreUrl};
use ubunye::census::{self, Census};
use ubunye::state::ScanOptions;
use ubunye::state::store::Poller;
use ubunye::sys::Sys;
use ubunye::tally::Tally;

/// One use case of many.
#[derive(Clone, Debug)]
pub struct UseCase {
    /// As given (`-d`) or found (`--find` root joined with its place): what
    /// tables show and `-d` or `<usecase>:<key>` take back.
    pub shown: PathBuf,
    /// Why it cannot be read at all; None when it can (its scan may still
    /// fail, and says why then).
    pub error: Option<String>,
}

impl UseCase {
    /// The use case's place in an object store, when it names one
    /// (`s3://bucket/prefix`).
    pub fn store(&self) -> Option<&str> {
        self.shown.to_str().filter(|s| ubunye::bucket::is_store_url(s))
    }

    /// The label the metrics give it: a store's URL as given; a folder's
    /// path, [`UseCase::path`], as [`census::label`] spells it.
    pub fn label(&self) -> String {
        match self.store() {
            Some(url) => url.to_string(),
            None => census::label(&self.path()),
        }
    }

    /// The name tables print: the path as given, lossily.
    pub fn name(&self) -> String {
        self.shown.display().to_string()
    }

    /// The name JSON and the metrics give it: the folder as named, made
    /// absolute (symlinks not resolved), the same whether it can be read or
    /// not.
    /// Spelled one way however it was typed: no `.`, no `..` (taken back
    /// by name), no trailing `/`. A store's URL is its name as given.
    pub fn path(&self) -> PathBuf {
        if self.store().is_some() {
            return self.shown.clone();
        }
        let abs = std::path::absolute(&self.shown).unwrap_or_else(|_| self.shown.clone());
        let mut out = PathBuf::new();
        for c in abs.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    out.pop();
                }
                c => out.push(c),
            }
        }
        out
    }
}

/// The use cases named, in the order given (each `-d`, then each root's, in
/// path order), the same folder once; with the folders `--find` could not
/// list as use cases with an error. A use case in an object store is one of
/// many when `stores` (what counts use cases: the metrics and the fleet
/// view), else a use case with an error that says to read it alone.
pub fn resolve(dirs: &[PathBuf], find: &[PathBuf], depth: usize, stores: bool) -> Vec<UseCase> {
    let mut out = Vec::new();
    let (mut seen, mut inodes): (BTreeSet<PathBuf>, BTreeSet<(u64, u64)>) = Default::default();
    let mut add = |shown: PathBuf, error: Option<String>, out: &mut Vec<UseCase>| {
        // The same folder named twice (or reached by two roots, or mounted
        // twice: its device and inode) is read once.
        use std::os::unix::fs::MetadataExt;
        let key = std::fs::canonicalize(&shown).unwrap_or_else(|_| shown.clone());
        let inode = std::fs::metadata(&shown).ok().map(|m| (m.dev(), m.ino()));
        if seen.insert(key) && inode.is_none_or(|i| inodes.insert(i)) {
            out.push(UseCase { shown, error });
        }
    };
    let dirs: Vec<PathBuf> = if dirs.is_empty() && find.is_empty() { vec![PathBuf::from(".")] } else { dirs.to_vec() };
    for d in dirs {
        let error = if let Some(url) = d.to_str().filter(|s| ubunye::bucket::is_store_url(s)) {
            match ubunye::bucket::StoreUrl::parse(url) {
                Err(e) => Some(e.to_string()),
                Ok(_) if stores => None,
                Ok(_) => Some("a use case in an object store is read alone: give it as the only -d".to_string()),
            }
        } else {
            crate::console::usecase::check(&d).err()
        };
        add(d, error, &mut out);
    }
    for root in find {
        match ubunye::fleet::find(root, depth) {
            // A root with no use case below it (a mount that is not there,
            // a typo) is not all clear: it is a row that says so.
            Ok(found) if found.use_cases.is_empty() && found.problems.is_empty() => add(
                root.clone(),
                Some(format!(
                    "--find: no use case within {depth} folders below it (none holds .ubunye/leases or .ubunye/lineage)"
                )),
                &mut out,
            ),
            Ok(found) => {
                for p in found.problems {
                    add(p.path, Some(p.why), &mut out);
                }
                for uc in found.use_cases {
                    add(uc, None, &mut out);
                }
            }
            Err(e) => add(root.clone(), Some(format!("--find: {e}")), &mut out),
        }
    }
    out
}

/// The census of one use case of many ([`census::count`], or a store's,
/// [`ubunye::census::store::count`]); one that cannot be read is a census with
/// its error, never a failure.
pub fn count(uc: &UseCase, opts: &ScanOptions, sys: &Sys, per_batch: bool) -> Census {
    // The label is the folder as named, made absolute: the same series
    // whether it can be read or not, so an alert sees it go to 0.
    let label = uc.label();
    let failed =
        |error: String| Census { use_case: label.clone(), error: Some(error), scan_errors: 1, ..Census::default() };
    match (&uc.error, uc.store()) {
        (Some(e), _) => failed(e.clone()),
        (None, Some(url)) => match open_store(url) {
            Ok((url, objects)) => ubunye::census::store::count(&*objects, &url, &sys.timing, &label, per_batch),
            Err(e) => failed(e),
        },
        (None, None) => census::count(&uc.shown, &label, opts, sys, per_batch),
    }
}

/// A store's place and its client, from the environment (as `-d s3://...`
/// alone opens it).
fn open_store(url: &str) -> Result<(StoreUrl, Arc<dyn Objects>), String> {
    let url = StoreUrl::parse(url).map_err(|e| e.to_string())?;
    let objects = S3::from_env(&url.bucket).map_err(|e| e.to_string())?;
    Ok((url, Arc::new(objects)))
}

/// A store among the use cases counted, and its poller: each census reads
/// only what changed since the last.
pub struct StorePoll {
    url: StoreUrl,
    objects: Arc<dyn Objects>,
    poller: Poller,
    label: String,
}

impl StorePoll {
    /// The store `uc` names, opened; None for a folder, or a store that
    /// cannot be opened (its census says why: [`count`]).
    pub fn of(uc: &UseCase) -> Option<StorePoll> {
        let url = uc.store().filter(|_| uc.error.is_none())?;
        StorePoll::open(url, uc.label()).ok()
    }

    fn open(url: &str, label: String) -> Result<StorePoll, String> {
        let (url, objects) = open_store(url)?;
        Ok(StorePoll { url, objects, poller: Poller::new(), label })
    }

    /// Its census now.
    pub fn census(&mut self, sys: &Sys, per_batch: bool) -> Census {
        self.poller.census(&*self.objects, &self.url, &sys.timing, &self.label, per_batch)
    }
}

/// One use case of many, counted again and again: a folder by its [`Tally`]
/// (read whole again every `full_every`), a store by its [`Poller`] (only
/// what changed is read), one that cannot be read by its census with the
/// error, said once.
pub enum Counter {
    Folder(Box<Tally>),
    Store(Box<StorePoll>),
    Failed(Option<Box<Census>>),
}

impl Counter {
    pub fn new(uc: &UseCase, opts: &ScanOptions, sys: &Sys, full_every: std::time::Duration) -> Counter {
        match (&uc.error, uc.store()) {
            (None, None) => {
                Counter::Folder(Box::new(Tally::new(&uc.shown, &uc.label(), opts.clone(), false, full_every)))
            }
            (None, Some(url)) => match StorePoll::open(url, uc.label()) {
                Ok(p) => Counter::Store(Box::new(p)),
                Err(e) => Counter::Failed(Some(Box::new(Census {
                    use_case: uc.label(),
                    error: Some(e),
                    scan_errors: 1,
                    ..Census::default()
                }))),
            },
            _ => Counter::Failed(Some(Box::new(count(uc, opts, sys, false)))),
        }
    }

    /// Count again: the census when it may have changed (a store's always:
    /// its leases age as its clock runs), None when nothing did.
    pub fn refresh(&mut self, sys: &Sys) -> Option<Box<Census>> {
        match self {
            Counter::Folder(t) => t.refresh(sys).then(|| Box::new(t.census.clone())),
            Counter::Store(p) => Some(Box::new(p.census(sys, false))),
            Counter::Failed(c) => c.take(),
        }
    }

    /// Read the use case whole at the next refresh (a store is read so at
    /// every one).
    pub fn read_whole_next(&mut self) {
        if let Counter::Folder(t) = self {
            t.read_whole_next();
        }
    }
}
