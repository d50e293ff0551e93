//! The use cases a listing reads (`-d` repeated, `--find ROOT`), each with
//! what stops it being read. One use case that cannot be read is a row of
//! the listing (and `ubunye_scan_errors` in the metrics), never the end of
//! it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use ubunye::census::{self, Census};
use ubunye::state::ScanOptions;
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
    /// The name tables print: the path as given, lossily.
    pub fn name(&self) -> String {
        self.shown.display().to_string()
    }

    /// The name JSON and the metrics give it: the folder as named, made
    /// absolute (symlinks not resolved), the same whether it can be read or
    /// not.
    /// Spelled one way however it was typed: no `.`, no `..` (taken back
    /// by name), no trailing `/`.
    pub fn path(&self) -> PathBuf {
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
/// list as use cases with an error.
pub fn resolve(dirs: &[PathBuf], find: &[PathBuf], depth: usize) -> Vec<UseCase> {
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
        let error = if d.to_str().is_some_and(ubunye::bucket::is_store_url) {
            Some("a use case in an object store is read alone: give it as the only -d".to_string())
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

/// The census of one use case of many ([`census::count`]); one that cannot
/// be read (or is in an object store, which is not counted) is a census
/// with its error, never a failure.
pub fn count(uc: &UseCase, opts: &ScanOptions, sys: &Sys, per_batch: bool) -> Census {
    // The label is the folder as named, made absolute: the same series
    // whether it can be read or not, so an alert sees it go to 0.
    let label = census::label(&uc.path());
    let failed =
        |error: String| Census { use_case: label.clone(), error: Some(error), scan_errors: 1, ..Census::default() };
    if uc.shown.to_str().is_some_and(ubunye::bucket::is_store_url) {
        return failed("a use case in an object store is not counted among many (yet): read it alone".into());
    }
    match &uc.error {
        Some(e) => failed(e.clone()),
        None => census::count(&uc.shown, &label, opts, sys, per_batch),
    }
}

/// A census of one use case of many kept up to date ([`Tally`]), read whole
/// again every `full_every`; one that cannot be read at all (or is in an
/// object store) is its census with the error, never a failure.
pub fn tally(
    uc: &UseCase,
    opts: &ScanOptions,
    sys: &Sys,
    full_every: std::time::Duration,
) -> Result<Tally, Box<Census>> {
    match (&uc.error, uc.shown.to_str().is_some_and(ubunye::bucket::is_store_url)) {
        (None, false) => Ok(Tally::new(&uc.shown, &census::label(&uc.path()), opts.clone(), false, full_every)),
        _ => Err(Box::new(count(uc, opts, sys, false))),
    }
}
