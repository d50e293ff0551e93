//! Paths beneath the use-case folder: how a claim is written, where it points,
//! and removal that cannot be led outside.
//!
//! The peer resolves a claim as `normpath(join(realpath(root), claim))` and removes
//! whatever that names. This engine is stricter on purpose (docs/differences.md):
//! a claim, staging folder or replaced file that resolves outside the use-case
//! folder (a `..` escaping it, an absolute path elsewhere, a symlinked folder on
//! the way) is never removed. Removal walks from the root one folder at a time
//! with `O_NOFOLLOW`, so a symlink swapped in between a check and the removal
//! cannot redirect it.

mod remove;
mod swap;

pub use remove::Mount;
pub use swap::FolderId;

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a path was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    /// It resolves outside the use-case folder (a `..`, an absolute path elsewhere).
    #[error("{path} is outside the use-case folder {root}")]
    Outside {
        /// The path, as the lease or note writes it.
        path: String,
        /// The use-case folder, resolved.
        root: String,
    },
    /// Its way down passes a symlinked folder.
    #[error("{path} goes through a symlink ({at}); Ubunye never removes through one")]
    Symlink {
        /// The path, as the lease or note writes it.
        path: String,
        /// The symlink met on the way.
        at: String,
    },
    /// A staging folder whose name is not one Ubunye or the peer makes.
    #[error("{path} is not a staging folder name Ubunye makes (_ubunye-<12 hex>)")]
    NotStaging {
        /// The path, as the lease writes it.
        path: String,
    },
    /// Not a path this engine will remove: empty, a NUL, inside `.ubunye/`, ...
    #[error("{path} is not a usable path ({why})")]
    Invalid {
        /// The path, as the lease or note writes it.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl PathRefusal {
    /// The path as written in the lease or note.
    pub fn path(&self) -> &str {
        match self {
            PathRefusal::Outside { path, .. }
            | PathRefusal::Symlink { path, .. }
            | PathRefusal::NotStaging { path }
            | PathRefusal::Invalid { path, .. } => path,
        }
    }
}

/// The identity of a file a run moved into an output, so that the run never
/// removes, by name, a file someone else put there since: its device and inode
/// and, because a freed inode number is soon reused, the time by which it
/// existed (a file born later is not this one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    /// The device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// It was created no later than this (seconds, nanoseconds, by the file
    /// system's clock), when known.
    pub born_by: Option<(i64, u32)>,
}

impl FileId {
    /// Whether a file found by `statx` can be this one.
    pub(super) fn matches(&self, st: &rustix::fs::Statx) -> bool {
        let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
        if dev != self.dev || st.stx_ino != self.ino {
            return false;
        }
        match self.born_by {
            Some(limit) if st.stx_mask & rustix::fs::StatxFlags::BTIME.bits() != 0 => {
                (st.stx_btime.tv_sec, st.stx_btime.tv_nsec) <= limit
            }
            _ => true,
        }
    }
}

/// What removing one claimed file came to.
#[derive(Debug)]
pub enum Removal {
    /// Removed; the absolute path.
    Removed(PathBuf),
    /// Not there (it never landed). `unseen`: its folder is not visible either.
    Missing {
        /// Its folder is not visible either (the claim's `unseen`).
        unseen: bool,
    },
    /// There, and could not be removed (in use, a folder, no permission).
    Failed(PathBuf, io::Error),
    /// Never attempted: the path is not safely beneath the use-case folder.
    Refused(PathRefusal),
}

/// The resolved use-case folder, and every path operation that depends on it.
#[derive(Debug)]
pub struct Beneath {
    root: PathBuf,
    parents: Mutex<HashMap<PathBuf, PathBuf>>,
}

/// A claim that resolves beneath the root: its components below the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inside {
    /// The absolute path, beneath the root.
    pub full: PathBuf,
    /// Its components below the root.
    pub parts: Vec<String>,
}

impl Beneath {
    /// The use-case folder, resolved (symlinks followed), as the peer's `<root>`.
    pub fn new(root: &Path) -> io::Result<Beneath> {
        Ok(Beneath { root: std::fs::canonicalize(root)?, parents: Mutex::new(HashMap::new()) })
    }

    /// The resolved root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The claim text for a file about to land at `path`: its folder resolved
    /// (symlinks followed, as far as it exists), its name kept, relative to the
    /// root, `/`-separated. Refused when it is not beneath the root.
    ///
    /// The peer resolves the file name too; a claim is made before the file lands,
    /// so the name is not a symlink unless something else put one there, and then
    /// the rename that lands the file replaces the link, not its target.
    pub fn portable(&self, path: &Path) -> Result<String, PathRefusal> {
        let shown = || path.to_string_lossy().into_owned();
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map_err(|_| invalid(&shown(), "no current folder"))?.join(path)
        };
        let name = match path.file_name() {
            Some(n) if n != "." && n != ".." => n.to_owned(),
            _ => return Err(invalid(&shown(), "no file name")),
        };
        let parent = path.parent().unwrap_or(Path::new("/"));
        let real_parent = {
            let mut cache = self.parents.lock().unwrap_or_else(|e| e.into_inner());
            match cache.get(parent) {
                Some(p) => p.clone(),
                None => {
                    let p = realpath_lenient(parent);
                    cache.insert(parent.to_path_buf(), p.clone());
                    p
                }
            }
        };
        let full = real_parent.join(&name);
        let rel = full.strip_prefix(&self.root).map_err(|_| self.outside(&shown()))?;
        let mut parts = Vec::new();
        for c in rel.components() {
            let s = c.as_os_str().to_str().ok_or_else(|| invalid(&shown(), "not valid UTF-8"))?;
            parts.push(s);
        }
        if parts.is_empty() {
            return Err(invalid(&shown(), "the use-case folder itself"));
        }
        if parts[0] == ".ubunye" {
            return Err(invalid(&shown(), "inside .ubunye/, where the leases and run records are"));
        }
        Ok(parts.join("/"))
    }

    /// [`Beneath::portable`] for many files: each folder is resolved once.
    pub fn portable_many(&self, paths: &[PathBuf]) -> Result<Vec<String>, PathRefusal> {
        let mut out = Vec::with_capacity(paths.len());
        let mut last: Option<(&Path, String)> = None;
        for p in paths {
            let (parent, name) = match (p.parent(), p.file_name().and_then(|n| n.to_str())) {
                (Some(parent), Some(name)) if p.is_absolute() && name != "." && name != ".." => (parent, name),
                _ => {
                    out.push(self.portable(p)?);
                    continue;
                }
            };
            match &last {
                Some((lp, prefix)) if *lp == parent => out.push(format!("{prefix}{name}")),
                _ => {
                    let first = self.portable(p)?;
                    let prefix = first[..first.len() - name.len()].to_string();
                    out.push(first);
                    last = Some((parent, prefix));
                }
            }
        }
        Ok(out)
    }

    /// Where a claim points: `normpath(join(root, claim))`, refused unless it stays
    /// strictly beneath the root.
    pub fn resolve(&self, claim: &str) -> Result<Inside, PathRefusal> {
        if claim.is_empty() {
            return Err(invalid(claim, "empty"));
        }
        if claim.contains('\0') {
            return Err(invalid(claim, "a NUL byte"));
        }
        let joined = self.root.join(claim);
        let full = normpath(&joined);
        let rel = full.strip_prefix(&self.root).map_err(|_| self.outside(claim))?;
        let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if parts.is_empty() {
            return Err(self.outside(claim));
        }
        if parts[0] == ".ubunye" {
            return Err(invalid(claim, "inside .ubunye/, where the leases and run records are"));
        }
        Ok(Inside { full, parts })
    }

    fn outside(&self, path: &str) -> PathRefusal {
        PathRefusal::Outside { path: path.to_string(), root: self.root.display().to_string() }
    }

    /// Refuse now, before anything is changed, a path whose folders (as they are
    /// at this moment) lead through a symlink. Removal checks again as it walks;
    /// this only makes a refusal come before a takeover has started.
    pub fn check_walk(&self, claim: &str) -> Result<(), PathRefusal> {
        let inside = self.resolve(claim)?;
        let mut at = self.root.clone();
        for part in &inside.parts[..inside.parts.len().saturating_sub(1)] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(PathRefusal::Symlink { path: claim.to_string(), at: at.display().to_string() });
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Open the folder holding `parts`' last component, walking from the root
    /// without following any symlink. `Ok(None)`: a folder on the way is missing.
    pub(super) fn open_parent(&self, claim: &str, parts: &[String]) -> Result<Option<OwnedFd>, PathRefusal> {
        let mut fd = open_dir_path(&self.root).map_err(|_| invalid(claim, "the use-case folder cannot be opened"))?;
        let mut walked = self.root.clone();
        for part in &parts[..parts.len().saturating_sub(1)] {
            walked.push(part);
            match rustix::fs::openat(
                &fd,
                part.as_str(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(next) => fd = next,
                // A name longer than the disk takes cannot exist.
                Err(Errno::NOENT) | Err(Errno::NAMETOOLONG) => return Ok(None),
                Err(e) => {
                    return match rustix::fs::statat(&fd, part.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                            Err(PathRefusal::Symlink { path: claim.to_string(), at: walked.display().to_string() })
                        }
                        Ok(_) if e == Errno::NOTDIR => Ok(None),
                        _ => Err(invalid(claim, "a folder on its path cannot be opened")),
                    };
                }
            }
        }
        Ok(Some(fd))
    }
}

pub(super) fn invalid(path: &str, why: &'static str) -> PathRefusal {
    PathRefusal::Invalid { path: path.to_string(), why }
}

pub(super) fn open_dir_path(p: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
}

/// Whether `name` is a staging folder Ubunye or the peer makes: `_ubunye-<12hex>`
/// inside an output (Spark claimed appends, `ubunye exec` appends), or
/// `.<output>.ubunye-<12hex>` beside one (overwrites).
pub fn is_staging_name(name: &str) -> bool {
    let hex12 = |s: &str| s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if let Some(rest) = name.strip_prefix("_ubunye-") {
        return hex12(rest);
    }
    if let Some(rest) = name.strip_prefix('.')
        && let Some((out, tail)) = rest.rsplit_once(".ubunye-")
    {
        // `.old`: an overwrite's old copy, moved aside where no exchange exists.
        return !out.is_empty() && (hex12(tail) || tail.strip_suffix(".old").is_some_and(hex12));
    }
    false
}

/// Python's `os.path.normpath` for an absolute path: `.` and `..` removed lexically.
pub fn normpath(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

/// Python's non-strict `os.path.realpath`: the longest existing prefix resolved,
/// the rest appended and normalised lexically.
pub fn realpath_lenient(p: &Path) -> PathBuf {
    let p = normpath(p);
    let mut base = p.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&base) {
            let mut out = real;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match base.file_name() {
            Some(n) => {
                rest.push(n.to_owned());
                base.pop();
            }
            None => return p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, Beneath) {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        fs::create_dir_all(uc.join("out/events")).unwrap();
        let b = Beneath::new(&uc).unwrap();
        (d, b)
    }

    #[test]
    fn portable_claims_are_relative_and_resolved() {
        let (d, b) = setup();
        let f = b.root().join("out/events/part-1.parquet");
        assert_eq!(b.portable(&f).unwrap(), "out/events/part-1.parquet");
        // A symlinked folder inside the root resolves to its target.
        std::os::unix::fs::symlink(b.root().join("out/events"), b.root().join("ev")).unwrap();
        assert_eq!(b.portable(&b.root().join("ev/p.parquet")).unwrap(), "out/events/p.parquet");
        // A folder that does not exist yet (a partition about to be made).
        assert_eq!(b.portable(&b.root().join("out/events/p=1/x")).unwrap(), "out/events/p=1/x");
        // Outside: refused.
        fs::create_dir_all(d.path().join("elsewhere")).unwrap();
        assert!(matches!(b.portable(&d.path().join("elsewhere/x")), Err(PathRefusal::Outside { .. })));
        std::os::unix::fs::symlink(d.path().join("elsewhere"), b.root().join("out/link")).unwrap();
        assert!(matches!(b.portable(&b.root().join("out/link/x")), Err(PathRefusal::Outside { .. })));
    }

    #[test]
    fn resolve_refuses_what_escapes() {
        let (_d, b) = setup();
        assert_eq!(b.resolve("out/events/a").unwrap().parts, vec!["out", "events", "a"]);
        assert_eq!(b.resolve("out/../out/events/a").unwrap().parts, vec!["out", "events", "a"]);
        for bad in [
            ".ubunye/leases/demo/sales/ingest/39bc42311894ddba.finished.json",
            "out/../.ubunye/lineage/x.json",
            "../x",
            "out/../../x",
            "/etc/passwd",
            "",
            ".",
            "out/..",
            "a\0b",
        ] {
            assert!(b.resolve(bad).is_err(), "{bad:?}");
        }
        let abs_inside = format!("{}/out/events/a", b.root().display());
        assert!(b.resolve(&abs_inside).is_ok());
    }

    #[test]
    fn remove_claim_cases() {
        let (d, b) = setup();
        fs::write(b.root().join("out/events/a"), "x").unwrap();
        assert!(matches!(b.remove_claim("out/events/a"), Removal::Removed(_)));
        assert!(matches!(b.remove_claim("out/events/a"), Removal::Missing { unseen: false }));
        assert!(matches!(b.remove_claim("out/nowhere/a"), Removal::Missing { unseen: true }));
        fs::create_dir(b.root().join("out/events/dir")).unwrap();
        assert!(matches!(b.remove_claim("out/events/dir"), Removal::Failed(..)));
        // A symlinked folder on the way is never walked through, even to a file
        // that exists: the canary outside survives.
        fs::create_dir_all(d.path().join("outside")).unwrap();
        fs::write(d.path().join("outside/canary"), "keep").unwrap();
        std::os::unix::fs::symlink(d.path().join("outside"), b.root().join("out/sneaky")).unwrap();
        assert!(matches!(b.remove_claim("out/sneaky/canary"), Removal::Refused(PathRefusal::Symlink { .. })));
        assert!(matches!(b.remove_claim("../outside/canary"), Removal::Refused(PathRefusal::Outside { .. })));
        let abs = d.path().join("outside/canary");
        assert!(matches!(b.remove_claim(abs.to_str().unwrap()), Removal::Refused(PathRefusal::Outside { .. })));
        assert!(d.path().join("outside/canary").exists());
        // A claim that is itself a symlink: the link goes, never its target.
        std::os::unix::fs::symlink(d.path().join("outside/canary"), b.root().join("out/events/l")).unwrap();
        assert!(matches!(b.remove_claim("out/events/l"), Removal::Removed(_)));
        assert!(d.path().join("outside/canary").exists());
    }

    #[test]
    fn staging_removal_is_confined() {
        let (d, b) = setup();
        let st = b.root().join("out/events/_ubunye-0123456789ab");
        fs::create_dir_all(st.join("p=1/q=2")).unwrap();
        fs::write(st.join("p=1/q=2/f"), "x").unwrap();
        fs::write(st.join("_SUCCESS"), "").unwrap();
        fs::create_dir_all(d.path().join("outside")).unwrap();
        fs::write(d.path().join("outside/canary"), "keep").unwrap();
        std::os::unix::fs::symlink(d.path().join("outside"), st.join("link")).unwrap();
        assert_eq!(b.remove_staging("out/events/_ubunye-0123456789ab"), Ok(true));
        assert!(!st.exists());
        assert!(d.path().join("outside/canary").exists());
        assert_eq!(b.remove_staging("out/events/_ubunye-0123456789ab"), Ok(true));
        assert!(matches!(b.remove_staging("out/events"), Err(PathRefusal::NotStaging { .. })));
        assert!(matches!(b.remove_staging("../outside"), Err(PathRefusal::Outside { .. })));
        assert!(b.root().join("out/events").exists());
    }

    #[test]
    fn staging_names() {
        assert!(is_staging_name("_ubunye-0123456789ab"));
        assert!(is_staging_name(".events.ubunye-0123456789ab"));
        assert!(!is_staging_name("_ubunye-0123456789AB"));
        assert!(!is_staging_name("_ubunye-0123"));
        assert!(!is_staging_name("events"));
        assert!(!is_staging_name("..ubunye-0123456789ab"));
    }

    #[test]
    fn success_marker_goes_with_the_last_data_file() {
        let (_d, b) = setup();
        let out = b.root().join("out/events");
        fs::create_dir_all(out.join("p=1")).unwrap();
        fs::write(out.join("_SUCCESS"), "").unwrap();
        fs::write(out.join("p=1/a.parquet"), "x").unwrap();
        b.drop_success_marker(&out.join("p=1"));
        assert!(out.join("_SUCCESS").exists(), "data left: marker stays");
        fs::remove_file(out.join("p=1/a.parquet")).unwrap();
        b.drop_success_marker(&out.join("p=1"));
        assert!(!out.join("_SUCCESS").exists());
        assert!(out.join("p=1").exists(), "folders stay");
    }
}
