//! Many use cases: the use-case folders below a folder (`--find ROOT`).
//!
//! A use case is a folder holding `.ubunye/leases` or `.ubunye/lineage` (what
//! an engine that ran in it leaves). The walk never goes into a use case it
//! found (its outputs are in there, and may be thousands of files), never
//! into a hidden folder (`.git`, `.venv`, `.ubunye` itself), never deeper
//! than `depth` folders below the root, and follows a symlink only to a
//! folder inside the root (each folder is visited once, however it is
//! reached). It only lists folders and looks at their entries' types: no file
//! is opened, and nothing is written.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::state::{ScanError, UnreadableFile};

/// The folder depth `--find` looks to by default: `ROOT/team/project/usecase`.
pub const DEFAULT_DEPTH: usize = 4;

/// What [`find`] found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// The use-case folders, each as the root was given joined with its
    /// place below it (not resolved: what a listing shows, and what
    /// `-d` takes back), in order of that path.
    pub use_cases: Vec<PathBuf>,
    /// Folders that could not be listed on the way.
    pub problems: Vec<UnreadableFile>,
}

/// Whether `dir` is a use case: it holds `.ubunye/leases` or `.ubunye/lineage`.
pub fn is_use_case(dir: &Path) -> bool {
    let u = dir.join(".ubunye");
    u.join("leases").is_dir() || u.join("lineage").is_dir()
}

/// The use cases at or below `root`, at most `depth` folders down. The root
/// itself, when it is a use case, is the only one (nothing below a use case
/// is looked at). An error only when the root cannot be opened.
pub fn find(root: &Path, depth: usize) -> Result<Found, ScanError> {
    let top = fs::canonicalize(root).map_err(|e| ScanError::NoFolder(root.to_path_buf(), e.to_string()))?;
    if !top.is_dir() {
        return Err(ScanError::NoFolder(root.to_path_buf(), "it is not a folder".into()));
    }
    let mut found = Found::default();
    let mut seen = BTreeSet::from([top.clone()]);
    walk(&top, root.to_path_buf(), &top, depth, &mut seen, &mut found);
    found.use_cases.sort();
    Ok(found)
}

/// Look at `real` (resolved, inside `top`), shown as `shown`, with `left`
/// levels still to go below it.
fn walk(top: &Path, shown: PathBuf, real: &Path, left: usize, seen: &mut BTreeSet<PathBuf>, found: &mut Found) {
    if is_use_case(real) {
        found.use_cases.push(shown);
        return;
    }
    if left == 0 {
        return;
    }
    let entries = match fs::read_dir(real) {
        Ok(e) => e,
        Err(e) => {
            found.problems.push(UnreadableFile::new(&shown, format!("cannot list it: {e}")));
            return;
        }
    };
    // (a symlink?, name, resolved): real folders first, so that a folder
    // reached both ways is shown by its own name.
    let mut next: Vec<(bool, std::ffi::OsString, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                found.problems.push(UnreadableFile::new(&shown, format!("cannot list it: {e}")));
                break;
            }
        };
        let name = entry.file_name();
        if name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            next.push((false, name.clone(), real.join(&name)));
        } else if kind.is_symlink() {
            // Followed only to a folder inside the root.
            match fs::canonicalize(entry.path()) {
                Ok(t) if t.starts_with(top) && t.is_dir() => next.push((true, name, t)),
                _ => {}
            }
        }
    }
    next.sort();
    let mut below: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (_, name, real) in next {
        if seen.insert(real.clone()) {
            below.push((shown.join(&name), real));
        }
    }
    below.sort();
    for (shown, real) in below {
        walk(top, shown, &real, left - 1, seen, found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uc(p: &Path) {
        fs::create_dir_all(p.join(".ubunye/leases")).unwrap();
    }

    #[test]
    fn finds_use_cases_but_not_below_them_nor_past_the_depth() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        uc(&r.join("a"));
        uc(&r.join("team/b"));
        fs::create_dir_all(r.join("team/c/.ubunye/lineage")).unwrap();
        // Inside a use case: never looked at.
        uc(&r.join("a/out/nested"));
        // Only `.ubunye/` with neither folder: not a use case.
        fs::create_dir_all(r.join("d/.ubunye")).unwrap();
        // Hidden, and too deep.
        uc(&r.join(".hidden/e"));
        uc(&r.join("x/y/z/w/deep"));
        let f = find(r, DEFAULT_DEPTH).unwrap();
        let want: Vec<PathBuf> = ["a", "team/b", "team/c"].iter().map(|p| r.join(p)).collect();
        assert_eq!(f.use_cases, want);
        assert_eq!(find(r, 5).unwrap().use_cases.len(), 4, "one level deeper finds the deep one");
        assert_eq!(find(&r.join("a"), 3).unwrap().use_cases, vec![r.join("a")], "a root that is a use case");
    }

    #[test]
    fn symlinks_are_followed_inside_the_root_only_and_once() {
        let t = tempfile::tempdir().unwrap();
        let (r, out) = (t.path().join("root"), t.path().join("outside"));
        uc(&r.join("a"));
        uc(&out.join("b"));
        std::os::unix::fs::symlink(&out, r.join("to-outside")).unwrap();
        std::os::unix::fs::symlink(r.join("a"), r.join("alias")).unwrap();
        fs::create_dir_all(r.join("loop")).unwrap();
        std::os::unix::fs::symlink(&r, r.join("loop/up")).unwrap();
        let f = find(&r, 8).unwrap();
        assert_eq!(f.use_cases, vec![r.join("a")], "{:?}", f.use_cases);
    }

    #[test]
    fn a_root_that_is_not_there_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        assert!(matches!(find(&t.path().join("nope"), 2), Err(ScanError::NoFolder(..))));
    }
}
