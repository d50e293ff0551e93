//! What a run wrote, seen from outside: a listing of a folder (names, sizes,
//! times, inodes: nothing is read) before and after, and the files that
//! changed between the two.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// One file's identity and times, as `lstat` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

/// The files (not folders) below a folder, by path relative to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    files: BTreeMap<String, Seen>,
}

/// A listing stopped at its limit: the folder holds too much to watch.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// More entries than the limit.
    #[error("{0} holds more than {1} entries")]
    TooBig(String, usize),
    /// A folder could not be read.
    #[error("{0}: {1}")]
    Io(String, io::Error),
}

impl Listing {
    /// List `root` (symlinks not followed), leaving out every path for which
    /// `skip` (relative path, is a folder) says so, and below it; at most
    /// `limit` entries. A missing `root` lists nothing.
    pub fn take(root: &Path, skip: &dyn Fn(&str, bool) -> bool, limit: usize) -> Result<Listing, ListingError> {
        let mut l = Listing::default();
        if fs::symlink_metadata(root).is_err() {
            return Ok(l);
        }
        let mut seen = 0usize;
        let mut stack = vec![root.to_path_buf()];
        let io = |p: &Path, e: io::Error| ListingError::Io(p.display().to_string(), e);
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
                let e = e.map_err(|e| io(&dir, e))?;
                seen += 1;
                if seen > limit {
                    return Err(ListingError::TooBig(root.display().to_string(), limit));
                }
                let p = e.path();
                let m = fs::symlink_metadata(&p).map_err(|e| io(&p, e))?;
                let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned();
                if skip(&rel, m.is_dir()) {
                    continue;
                }
                if m.is_dir() {
                    stack.push(p);
                    continue;
                }
                let mtime_ns = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
                l.files.insert(rel, Seen { ino: m.ino(), len: m.len(), mtime_ns });
            }
        }
        Ok(l)
    }

    /// Files in `after` that are new or changed since `self`, and files of
    /// `self` gone from `after` (each with `(removed)` after it).
    pub fn changed(&self, after: &Listing) -> Vec<String> {
        let mut out: Vec<String> =
            after.files.iter().filter(|(p, s)| self.files.get(*p) != Some(s)).map(|(p, _)| p.clone()).collect();
        out.extend(self.files.keys().filter(|p| !after.files.contains_key(*p)).map(|p| format!("{p} (removed)")));
        out
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether it holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_changed_and_removed_files_are_named_and_skipped_folders_are_not() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("keep/sub")).unwrap();
        fs::create_dir_all(r.join(".ubunye")).unwrap();
        fs::write(r.join("keep/a"), "1").unwrap();
        fs::write(r.join("keep/gone"), "1").unwrap();
        let skip = |rel: &str, _dir: bool| rel == ".ubunye";
        let before = Listing::take(r, &skip, 100).unwrap();
        assert_eq!(before.len(), 2);
        fs::write(r.join("keep/a"), "22").unwrap();
        fs::write(r.join("keep/sub/new"), "x").unwrap();
        fs::write(r.join(".ubunye/lease"), "x").unwrap();
        fs::remove_file(r.join("keep/gone")).unwrap();
        let after = Listing::take(r, &skip, 100).unwrap();
        assert_eq!(before.changed(&after), ["keep/a", "keep/sub/new", "keep/gone (removed)"]);
        assert!(matches!(Listing::take(r, &skip, 2), Err(ListingError::TooBig(..))));
        assert!(Listing::take(&r.join("none"), &skip, 1).unwrap().is_empty());
    }
}
