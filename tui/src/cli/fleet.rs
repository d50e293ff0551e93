//! The use cases a listing reads (`-d` repeated, `--find ROOT`), each with
//! what stops it being read. One use case that cannot be read is a row of
//! the listing (and `ubunye_scan_errors` in the metrics), never the end of
//! it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::args::UseCasesArg;

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
}

/// The use cases named, in the order given (each `-d`, then each root's, in
/// path order), the same folder once; with the folders `--find` could not
/// list as use cases with an error.
pub fn resolve(a: &UseCasesArg) -> Vec<UseCase> {
    let mut out = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut add = |shown: PathBuf, error: Option<String>, out: &mut Vec<UseCase>| {
        // The same folder named twice (or reached by two roots) is read once.
        let key = std::fs::canonicalize(&shown).unwrap_or_else(|_| shown.clone());
        if seen.insert(key) {
            out.push(UseCase { shown, error });
        }
    };
    let dirs: Vec<PathBuf> =
        if a.dirs.is_empty() && a.find.is_empty() { vec![PathBuf::from(".")] } else { a.dirs.clone() };
    for d in dirs {
        let error = if d.to_str().is_some_and(ubunye::bucket::is_store_url) {
            Some("a use case in an object store is read alone: give it as the only -d".to_string())
        } else {
            crate::console::usecase::check(&d).err()
        };
        add(d, error, &mut out);
    }
    for root in &a.find {
        match ubunye::fleet::find(root, a.depth) {
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
