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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
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

/// Whether `dir` is a use case: it holds `.ubunye/leases` or
/// `.ubunye/lineage` (`.ubunye` may be a symlink, as `-d` reads it). A
/// `.ubunye` that cannot be looked at or into counts as one: it is listed,
/// and its listing says it cannot be read (never left out as if it were not
/// there, nor walked into as a plain folder).
pub fn is_use_case(dir: &Path) -> bool {
    let there = |p: &Path| match fs::metadata(p) {
        Ok(m) => Some(m.is_dir()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    };
    let u = dir.join(".ubunye");
    match there(&u) {
        Some(false) => false,
        None => true,
        Some(true) => there(&u.join("leases")) != Some(false) || there(&u.join("lineage")) != Some(false),
    }
}

/// A folder to look at: how many symlinks led to it, how deep it is, its
/// name as shown and the folder it resolves to.
type Visit = (usize, usize, PathBuf, PathBuf);

/// The use cases at or below `root`, at most `depth` folders down. The root
/// itself, when it is a use case, is the only one (nothing below a use case
/// is looked at). An error only when the root cannot be opened.
///
/// Folders are looked at real paths first, shallowest first, and only then
/// through symlinks: a folder reached both ways is shown by its own name, a
/// folder a symlink reaches higher up is looked into as deep as that allows,
/// and a symlink into a use case found (its outputs) leads nowhere.
pub fn find(root: &Path, depth: usize) -> Result<Found, ScanError> {
    let top = fs::canonicalize(root).map_err(|e| ScanError::NoFolder(root.to_path_buf(), e.to_string()))?;
    if !top.is_dir() {
        return Err(ScanError::NoFolder(root.to_path_buf(), "it is not a folder".into()));
    }
    let mut found = Found::default();
    // The shallowest depth each folder was looked at; the use cases found.
    let mut looked: BTreeMap<PathBuf, usize> = BTreeMap::new();
    // Each use case found (resolved), and its name as shown.
    let mut ucs: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    let mut queue: BinaryHeap<Reverse<Visit>> = BinaryHeap::from([Reverse((0, 0, root.to_path_buf(), top.clone()))]);
    while let Some(Reverse((hops, at, shown, real))) = queue.pop() {
        // In or below a use case found: its outputs, never looked at.
        if looked.get(&real).is_some_and(|&d| d <= at) || real.ancestors().any(|a| ucs.contains_key(a)) {
            continue;
        }
        looked.insert(real.clone(), at);
        if is_use_case(&real) {
            ucs.insert(real, shown);
            continue;
        }
        if at == depth {
            continue;
        }
        let entries = match fs::read_dir(&real) {
            Ok(e) => e,
            Err(e) => {
                found.problems.push(UnreadableFile::new(&shown, format!("cannot list it: {e}")));
                continue;
            }
        };
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
                queue.push(Reverse((hops, at + 1, shown.join(&name), real.join(&name))));
            } else if kind.is_symlink() {
                // Followed only to a folder inside the root, and not a hidden one.
                match fs::canonicalize(entry.path()) {
                    Ok(t) if t.is_dir() && inside(&top, &t) => {
                        queue.push(Reverse((hops + 1, at + 1, shown.join(&name), t)))
                    }
                    _ => {}
                }
            }
        }
    }
    // One found through a symlink before the use case it is in was known
    // (both reached by symlinks) is that one's output: left out.
    let inside_another = |real: &Path| real.ancestors().skip(1).any(|a| ucs.contains_key(a));
    found.use_cases = ucs.iter().filter(|(real, _)| !inside_another(real)).map(|(_, shown)| shown.clone()).collect();
    found.use_cases.sort();
    found.problems.sort_by(|a, b| a.path.cmp(&b.path));
    found.problems.dedup_by(|a, b| a.path == b.path);
    Ok(found)
}

/// `t` is `top` or below it, through no hidden folder.
fn inside(top: &Path, t: &Path) -> bool {
    t.strip_prefix(top).is_ok_and(|rest| rest.iter().all(|c| c.as_encoded_bytes().first() != Some(&b'.')))
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
    fn a_symlink_met_first_hides_no_use_case_and_leads_into_none() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        // At the default depth through its own folders; a symlink higher up
        // reaches the same folder with fewer levels left.
        uc(&r.join("m/n/o/uc"));
        fs::create_dir_all(r.join("a/b/c")).unwrap();
        std::os::unix::fs::symlink(r.join("m/n/o"), r.join("a/b/c/link")).unwrap();
        // A symlink into a use case's outputs: what is below is its data.
        uc(&r.join("z/uc"));
        uc(&r.join("z/uc/out/nested"));
        std::os::unix::fs::symlink(r.join("z/uc/out"), r.join("0into")).unwrap();
        // A symlink to a hidden folder leads nowhere either.
        uc(&r.join(".stash/h"));
        std::os::unix::fs::symlink(r.join(".stash"), r.join("1stash")).unwrap();
        // Only through a symlink: found, shown by the symlink.
        uc(&r.join("deep/er/than/four/levels"));
        std::os::unix::fs::symlink(r.join("deep/er/than/four"), r.join("short")).unwrap();
        let f = find(r, DEFAULT_DEPTH).unwrap();
        let want: Vec<PathBuf> = ["m/n/o/uc", "short/levels", "z/uc"].iter().map(|p| r.join(p)).collect();
        assert_eq!(f.use_cases, want);
    }

    #[test]
    fn a_ubunye_folder_that_cannot_be_looked_into_is_a_use_case() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        // A `leases` that cannot be looked at (a symlink to itself: ELOOP,
        // as an unreadable folder is to a user who may not look in it).
        fs::create_dir_all(r.join("locked/.ubunye")).unwrap();
        std::os::unix::fs::symlink("leases", r.join("locked/.ubunye/leases")).unwrap();
        assert!(is_use_case(&r.join("locked")));
        // `.ubunye` itself that cannot be looked at (like a folder that can be
        // listed but not entered): one too, never walked into.
        fs::create_dir_all(r.join("shut/out")).unwrap();
        std::os::unix::fs::symlink(".ubunye", r.join("shut/.ubunye")).unwrap();
        assert!(is_use_case(&r.join("shut")));
        // `.ubunye` as a file, or empty: not one.
        fs::create_dir_all(r.join("file")).unwrap();
        fs::write(r.join("file/.ubunye"), "").unwrap();
        fs::create_dir_all(r.join("empty/.ubunye")).unwrap();
        assert_eq!(find(r, 2).unwrap().use_cases, vec![r.join("locked"), r.join("shut")]);
    }

    #[test]
    fn a_use_case_met_through_symlinks_is_never_one_below_another() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        // The outer use case is deeper than the walk goes by its own path;
        // two symlinks reach it and one of its outputs, the inner first.
        uc(&r.join("d/e/f/g/h/outer"));
        uc(&r.join("d/e/f/g/h/outer/out/inner"));
        std::os::unix::fs::symlink(r.join("d/e/f/g/h/outer/out/inner"), r.join("x")).unwrap();
        std::os::unix::fs::symlink(r.join("d/e/f/g/h/outer"), r.join("y")).unwrap();
        assert_eq!(find(r, 2).unwrap().use_cases, vec![r.join("y")]);
    }

    #[test]
    fn a_ubunye_folder_that_is_a_symlink_is_a_use_case_as_d_reads_it() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("root");
        fs::create_dir_all(t.path().join("state/leases")).unwrap();
        fs::create_dir_all(r.join("uc/out/x")).unwrap();
        std::os::unix::fs::symlink(t.path().join("state"), r.join("uc/.ubunye")).unwrap();
        assert_eq!(find(&r, 4).unwrap().use_cases, vec![r.join("uc")]);
    }

    #[test]
    fn a_root_that_is_not_there_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        assert!(matches!(find(&t.path().join("nope"), 2), Err(ScanError::NoFolder(..))));
    }
}
