//! Removal beneath the use-case folder: a claimed file (only if it is still the
//! file the run moved in, when that is known), a run's staging folder with all
//! it holds, and a `_SUCCESS` left over an output with no data. Nothing is
//! followed through a symlink, and no mount point (another disk, or a bind
//! mount of a folder from elsewhere) is descended into.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;

use super::{Beneath, FileId, PathRefusal, Removal, invalid, is_staging_name};

/// Where a folder is mounted: its device and, where the kernel tells it
/// (`STATX_MNT_ID`, Linux 5.8), its mount's id. A bind mount of a folder of the
/// same disk has the same device and another mount id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The device it is on.
    pub dev: u64,
    /// Its mount's id (`STATX_MNT_ID`); None on kernels before 5.8.
    pub mnt_id: Option<u64>,
}

impl Mount {
    /// The mount a `statx` result names.
    pub fn of(st: &rustix::fs::Statx) -> Mount {
        let mnt_id = (st.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id);
        Mount { dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor), mnt_id }
    }

    /// The mount of the folder `fd` is open on.
    pub fn of_fd(fd: &OwnedFd) -> Option<Mount> {
        rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::TYPE | StatxFlags::MNT_ID)
            .ok()
            .map(|st| Mount::of(&st))
    }

    /// Whether `other` is on the same mount (a missing mount id is not a difference).
    pub fn same(&self, other: &Mount) -> bool {
        self.dev == other.dev && (self.mnt_id.is_none() || other.mnt_id.is_none() || self.mnt_id == other.mnt_id)
    }
}

impl Beneath {
    /// Remove one claimed file (or a replaced run's file), as the peer's take-back
    /// does, but only beneath the root and never through a symlink.
    pub fn remove_claim(&self, claim: &str) -> Removal {
        self.remove_claim_if(claim, None)
    }

    /// [`Beneath::remove_claim`], only if the file there is `expected` (when
    /// given): a file with another identity is not this run's, and is left.
    pub fn remove_claim_if(&self, claim: &str, expected: Option<FileId>) -> Removal {
        let inside = match self.resolve(claim) {
            Ok(i) => i,
            Err(r) => return Removal::Refused(r),
        };
        let parent = match self.open_parent(claim, &inside.parts) {
            Ok(Some(fd)) => fd,
            Ok(None) => return Removal::Missing { unseen: true },
            Err(r) => return Removal::Refused(r),
        };
        let name = inside.parts.last().map(String::as_str).unwrap_or_default();
        let mask = StatxFlags::TYPE | StatxFlags::INO | StatxFlags::BTIME;
        match rustix::fs::statx(&parent, name, AtFlags::SYMLINK_NOFOLLOW, mask) {
            Err(Errno::NOENT) | Err(Errno::NAMETOOLONG) => return Removal::Missing { unseen: false },
            Err(e) => return Removal::Failed(inside.full, e.into()),
            Ok(st) if FileType::from_raw_mode(st.stx_mode.into()) == FileType::Directory => {
                return Removal::Failed(inside.full, Errno::ISDIR.into());
            }
            Ok(st) if expected.is_some_and(|id| !id.matches(&st)) => {
                return Removal::Missing { unseen: false };
            }
            Ok(_) => {}
        }
        match rustix::fs::unlinkat(&parent, name, AtFlags::empty()) {
            Ok(()) => Removal::Removed(inside.full),
            Err(Errno::NOENT) => Removal::Missing { unseen: false },
            Err(e) => Removal::Failed(inside.full, e.into()),
        }
    }

    /// Remove a run's staging folder and everything in it, as the peer's
    /// `rmtree(..., ignore_errors=True)`: what cannot be removed stays, and so
    /// does a mount point inside it (never descended into). Refused when the path
    /// is not beneath the root, goes through a symlinked folder, or is not named
    /// like a staging folder. Something else at the staging folder's own name (a
    /// symlink or a file the run's command put there) is unlinked: the name is
    /// the run's, and a link's target is never touched. Returns whether nothing
    /// is left at that name.
    pub fn remove_staging(&self, staging: &str) -> Result<bool, PathRefusal> {
        let inside = self.resolve(staging)?;
        let name = inside.parts.last().map(String::as_str).unwrap_or_default();
        if !is_staging_name(name) {
            return Err(PathRefusal::NotStaging { path: staging.to_string() });
        }
        let Some(parent) = self.open_parent(staging, &inside.parts)? else {
            return Ok(true);
        };
        match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) | Err(Errno::NAMETOOLONG) => return Ok(true),
            Err(_) => return Err(invalid(staging, "it cannot be looked at")),
            Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::Directory => {
                let _ = rustix::fs::unlinkat(&parent, name, AtFlags::empty());
            }
            Ok(_) => {
                if let Some(mount) = Mount::of_fd(&parent) {
                    remove_tree_at(&parent, OsStr::new(name), &mount);
                }
            }
        }
        let gone = matches!(rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW), Err(Errno::NOENT));
        // The removal on the disk before the lease that names the folder may
        // forget it (a power cut could bring back a folder no lease names);
        // unsynced, it is reported as left.
        // (Through its path: the parent handle is an O_PATH one, which fsync
        // refuses.)
        Ok(gone && crate::durable::parent(&self.root.join(staging)).is_ok())
    }

    /// After a claimed file was removed from `folder`: if the output is left with
    /// no data file, remove its `_SUCCESS` (a partitioned output keeps it above its
    /// `name=value` folders, so the check climbs to that root), as the peer does.
    pub fn drop_success_marker(&self, folder: &Path) {
        let mut root = folder.to_path_buf();
        while root.file_name().is_some_and(|n| n.as_bytes().contains(&b'=')) && root.starts_with(&self.root) {
            root.pop();
        }
        if !root.starts_with(&self.root) || root == self.root {
            return;
        }
        let marker = root.join("_SUCCESS");
        if marker.exists()
            && !holds_data(&root)
            && let Ok(rel) = marker.strip_prefix(&self.root)
        {
            let _ = self.remove_claim(&rel.to_string_lossy());
        }
    }
}

/// Remove `name` in `parent` and all beneath it, never following a symlink and
/// never descending into a folder on another mount than `mount` (it is left,
/// with the folders above it); errors leave what could not be removed. Names
/// are taken as bytes: a name that is not UTF-8 is removed like any other.
/// Returns whether `name` is gone.
fn remove_tree_at(parent: &OwnedFd, name: &OsStr, mount: &Mount) -> bool {
    let Ok(dir) = rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    if !Mount::of_fd(&dir).is_some_and(|m| m.same(mount)) {
        return false;
    }
    let mut children: Vec<(Vec<u8>, bool)> = Vec::new();
    if let Ok(mut entries) = rustix::fs::Dir::read_from(&dir) {
        while let Some(Ok(entry)) = entries.read() {
            let n = entry.file_name().to_bytes();
            if n == b"." || n == b".." {
                continue;
            }
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => rustix::fs::statat(&dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory),
                _ => false,
            };
            children.push((n.to_vec(), is_dir));
        }
    }
    for (child, is_dir) in children {
        let child_name = OsStr::from_bytes(&child);
        if is_dir {
            remove_tree_at(&dir, child_name, mount);
        } else {
            let _ = rustix::fs::unlinkat(&dir, child_name, AtFlags::empty());
        }
    }
    rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR).is_ok()
}

/// Whether a data file (a name not starting with `_` or `.`) is in `folder` or in
/// its `name=value` folders. A folder that cannot be listed counts as holding data.
fn holds_data(folder: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return true;
    };
    for entry in entries {
        let Ok(entry) = entry else { return true };
        let name = entry.file_name();
        let name = name.as_bytes();
        if name.starts_with(b".") {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            if name.contains(&b'=') && holds_data(&path) {
                return true;
            }
        } else if !name.starts_with(b"_") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn names_that_are_not_utf8_are_removed_too() {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        let st = uc.join("out/events/_ubunye-0123456789ab");
        let bad = st.join(OsStr::from_bytes(b"p=\xff"));
        fs::create_dir_all(bad.join(OsStr::from_bytes(b"q\xfe"))).unwrap();
        fs::write(bad.join(OsStr::from_bytes(b"q\xfe/x")), "x").unwrap();
        fs::write(bad.join("f"), "x").unwrap();
        let b = Beneath::new(&uc).unwrap();
        assert_eq!(b.remove_staging("out/events/_ubunye-0123456789ab"), Ok(true));
        assert!(!st.exists());
    }

    #[test]
    fn a_symlink_or_a_file_at_the_staging_name_is_unlinked_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        fs::create_dir_all(uc.join("out/events")).unwrap();
        fs::create_dir_all(d.path().join("elsewhere")).unwrap();
        fs::write(d.path().join("elsewhere/keep"), "precious").unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), uc.join("out/events/_ubunye-0123456789ab")).unwrap();
        fs::write(uc.join("out/events/_ubunye-0123456789ac"), "a file").unwrap();
        let b = Beneath::new(&uc).unwrap();
        assert_eq!(b.remove_staging("out/events/_ubunye-0123456789ab"), Ok(true));
        assert_eq!(b.remove_staging("out/events/_ubunye-0123456789ac"), Ok(true));
        assert_eq!(fs::read_to_string(d.path().join("elsewhere/keep")).unwrap(), "precious");
        assert_eq!(fs::read_dir(uc.join("out/events")).unwrap().count(), 0);
    }

    #[test]
    fn a_name_too_long_for_the_disk_cannot_exist() {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        fs::create_dir_all(&uc).unwrap();
        let b = Beneath::new(&uc).unwrap();
        let long = "x".repeat(300);
        assert_eq!(b.remove_staging(&format!("out/{long}/_ubunye-0123456789ab")), Ok(true));
        assert_eq!(b.remove_staging(&format!(".{long}.ubunye-0123456789ab")), Ok(true));
        assert!(matches!(b.remove_claim(&format!("out/{long}")), Removal::Missing { .. }));
        assert!(matches!(b.remove_claim(&format!("{long}/a")), Removal::Missing { .. }));
    }

    #[test]
    fn a_mount_point_inside_a_staging_folder_is_never_descended_into() {
        // Needs root (mount --bind); skipped, saying so, elsewhere.
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        let st = uc.join("out/events/_ubunye-0123456789ab");
        fs::create_dir_all(st.join("_m")).unwrap();
        fs::write(st.join("part"), "x").unwrap();
        fs::create_dir_all(d.path().join("outside")).unwrap();
        fs::write(d.path().join("outside/keep"), "precious").unwrap();
        let mounted = std::process::Command::new("mount")
            .arg("--bind")
            .arg(d.path().join("outside"))
            .arg(st.join("_m"))
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED: mount --bind needs root");
            return;
        }
        let b = Beneath::new(&uc).unwrap();
        let gone = b.remove_staging("out/events/_ubunye-0123456789ab");
        let _ = std::process::Command::new("umount").arg(st.join("_m")).status();
        assert_eq!(gone, Ok(false), "the folder holding the mount point stays, and is not reported removed");
        assert_eq!(fs::read_to_string(d.path().join("outside/keep")).unwrap(), "precious");
        assert!(!st.join("part").exists(), "the rest is removed");
    }
}
