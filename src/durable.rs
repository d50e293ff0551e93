//! What must be on the disk before the next step, so that a machine that
//! loses its power (not only a killed process) leaves every batch as the
//! protocol promises (the order is the table in docs/design.md,
//! "Durability"). The writes of the protocol call these:
//!
//! - [`file`]: `fdatasync` of a file written, before its temp name is renamed
//!   or linked to the real one (so no name ever points at bytes that never
//!   reached the disk);
//! - [`dir`]: `fsync` of a folder after a rename, link or removal in it that
//!   a later step depends on;
//! - [`landed`]: everything a landing moved into an output, before the done
//!   mark says it landed: one `syncfs` where the file system is known to
//!   write back all it holds on it (ext4, XFS, btrfs), else an `fdatasync` of
//!   each file and an `fsync` of each folder (FUSE, where `syncfs` never
//!   reaches the file system, NFS, others).
//!
//! `UBUNYE_DURABILITY=process` turns them all off: runs stay safe when a
//! process is killed, not when the machine loses power. A file system that
//! refuses `fsync` (EINVAL, ENOTSUP: some FUSE and network mounts) does not
//! fail a run; the first refusal is kept ([`weakened`]) and `ubunye exec`
//! says so: it never claims a durability it did not get.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// How much a run's writes survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// The machine losing power (the default): writes are synced in order.
    Power,
    /// Only a killed process (`UBUNYE_DURABILITY=process`): no syncs.
    Process,
}

impl Durability {
    /// `UBUNYE_DURABILITY`'s value: `power` (also empty) or `process`.
    pub fn parse(v: &str) -> Result<Durability, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "power" => Ok(Durability::Power),
            "process" => Ok(Durability::Process),
            other => Err(format!(
                "UBUNYE_DURABILITY={other} is not a durability: `power` (the default: safe when the machine loses power) or `process` (safe only when a process is killed)"
            )),
        }
    }
}

static MODE: OnceLock<Durability> = OnceLock::new();
static WEAK: Mutex<Option<String>> = Mutex::new(None);

/// The durability of this process: `UBUNYE_DURABILITY`, read once (a value
/// that does not parse keeps the safe default; the CLI refuses it first).
pub fn mode() -> Durability {
    *MODE.get_or_init(|| {
        std::env::var("UBUNYE_DURABILITY").ok().and_then(|v| Durability::parse(&v).ok()).unwrap_or(Durability::Power)
    })
}

fn on() -> bool {
    mode() == Durability::Power
}

/// The first file system that refused a sync: its path and what it said.
pub fn weakened() -> Option<String> {
    WEAK.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A refusal that means "this file system does not sync", not a failure to.
fn refuses(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOTSUP | libc::ENOSYS | libc::EROFS))
}

fn checked(r: io::Result<()>, path: &Path) -> io::Result<()> {
    match r {
        Err(e) if refuses(&e) => {
            let mut w = WEAK.lock().unwrap_or_else(|e| e.into_inner());
            if w.is_none() {
                *w = Some(format!("{}: the file system refuses fsync ({e})", path.display()));
            }
            Ok(())
        }
        other => other,
    }
}

/// `fdatasync` of `f` (the file at `path`).
pub fn file(f: &File, path: &Path) -> io::Result<()> {
    if !on() {
        return Ok(());
    }
    checked(f.sync_data(), path)
}

/// `fsync` of the folder `path`.
pub fn dir(path: &Path) -> io::Result<()> {
    if !on() {
        return Ok(());
    }
    let f = File::open(path)?;
    checked(f.sync_all(), path)
}

/// `fsync` of the folder holding `path`.
pub fn parent(path: &Path) -> io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => dir(p),
        None => dir(Path::new(".")),
    }
}

/// `fs::create_dir_all`, each folder it makes on the disk: the folder above
/// every new one is synced, from the first that was there down (a new lease
/// folder or output folder whose name was never synced can vanish in a power
/// cut with the lease or files in it).
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut p = path;
    while !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err() {
        missing.push(p.to_path_buf());
        match p.parent() {
            Some(q) => p = q,
            None => break,
        }
    }
    std::fs::create_dir_all(path)?;
    for made in missing.iter().rev() {
        parent(made)?;
    }
    Ok(())
}

/// Whether `syncfs` on this file system writes back everything it holds
/// (file data and folders alike): local journaling file systems. Not FUSE
/// (the kernel sends FUSE_SYNCFS to virtiofs only), not NFS, not unknown.
fn syncfs_suffices(fd: impl AsFd) -> bool {
    // f_type is i64 here, another integer type on other targets.
    #[allow(clippy::useless_conversion)]
    match rustix::fs::fstatfs(fd) {
        // ext2-4, XFS, btrfs; and tmpfs, which keeps nothing across a power
        // cut (syncfs costs nothing there, as it buys nothing).
        Ok(st) => matches!(i64::from(st.f_type), 0xEF53 | 0x5846_5342 | 0x9123_683E | 0x0102_1994),
        Err(_) => false,
    }
}

/// Everything a landing moved into an output on the disk: the `files` and
/// the `dirs` their entries are in (and any folder made for them, with the
/// folder above it). `out` is the output folder, on the same file system.
pub fn landed(out: impl AsFd, out_path: &Path, files: &[PathBuf], dirs: &[PathBuf]) -> io::Result<()> {
    if !on() {
        return Ok(());
    }
    if syncfs_suffices(&out) {
        return checked(rustix::fs::syncfs(&out).map_err(io::Error::from), out_path);
    }
    for f in files {
        let file = File::open(f)?;
        checked(file.sync_data(), f)?;
    }
    for d in dirs {
        dir(d)?;
    }
    Ok(())
}

/// Start writing back, in a thread of its own, what the file systems of
/// `dirs` hold (a command's outputs, just written), where one `syncfs`
/// reaches it: the write-back then runs beside the claims and the renames,
/// and [`landed`]'s `syncfs` before the done mark is left little to do. It
/// promises nothing itself; join it before the run ends.
pub fn start_early(dirs: Vec<PathBuf>) -> Option<std::thread::JoinHandle<io::Result<()>>> {
    if !on() || dirs.is_empty() {
        return None;
    }
    std::thread::Builder::new()
        .name("ubunye-write-back".into())
        .spawn(move || {
            let mut seen = Vec::new();
            for d in dirs {
                let Ok(f) = File::open(&d) else { continue };
                let Ok(m) = f.metadata() else { continue };
                use std::os::unix::fs::MetadataExt;
                if seen.contains(&m.dev()) || !syncfs_suffices(&f) {
                    continue;
                }
                seen.push(m.dev());
                // Its error is the landing's: an error this sync reports is
                // not reported again to a later one.
                checked(rustix::fs::syncfs(&f).map_err(io::Error::from), &d)?;
            }
            Ok(())
        })
        .ok()
}

/// Everything under the folder `root` on the disk (an overwrite's staged
/// tree, before it is published): `syncfs` where it suffices, else each
/// file and folder in it (symlinks are not followed).
pub fn tree(root: &Path) -> io::Result<()> {
    if !on() {
        return Ok(());
    }
    let top = File::open(root)?;
    if syncfs_suffices(&top) {
        return checked(rustix::fs::syncfs(&top).map_err(io::Error::from), root);
    }
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                checked(File::open(e.path())?.sync_data(), &e.path())?;
            }
        }
        dir(&d)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_power_or_process_and_nothing_else() {
        assert_eq!(Durability::parse(""), Ok(Durability::Power));
        assert_eq!(Durability::parse(" Power "), Ok(Durability::Power));
        assert_eq!(Durability::parse("process"), Ok(Durability::Process));
        let e = Durability::parse("off").unwrap_err();
        assert!(e.contains("UBUNYE_DURABILITY=off") && e.contains("`process`"), "{e}");
    }

    #[test]
    fn a_refusal_to_sync_is_remembered_not_failed() {
        let e = io::Error::from_raw_os_error(libc::EINVAL);
        assert!(checked(Err(e), Path::new("/mnt/x")).is_ok());
        assert!(weakened().is_some_and(|w| w.starts_with("/mnt/x: the file system refuses fsync")));
        let eio = io::Error::from_raw_os_error(libc::EIO);
        assert!(checked(Err(eio), Path::new("/mnt/y")).is_err(), "an I/O error is a failure");
    }
}
