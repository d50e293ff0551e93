//! The disk's clock, read without writing in the use case: what inspection
//! (`leases list`, `explain`, `doctor`, dry runs, `top`) uses, since looking
//! must never change what it looks at (docs/clock.md).
//!
//! A run (and a repair, which is a run that runs nothing) reads the disk's
//! clock as the peer does: it creates a `.clock-<8hex>` probe in the lease
//! folder, reads its mtime and removes it ([`super::Clock::disk_now`]).
//! Inspection cannot: the probe changes the folder's mtime, fails on a
//! read-only mount, and wakes every dashboard watching the folder. So:
//!
//! 1. On a local file system (ext4, XFS, btrfs, tmpfs, ...) this machine's
//!    kernel stamps every file's times from its own clock: that clock *is*
//!    the disk's clock, and it is read directly.
//! 2. Elsewhere (NFS, SMB, FUSE, or a type this list does not know), an
//!    unnamed file is made in the folder with `O_TMPFILE`: it gets the disk's
//!    time, is never linked into the folder (no entry, no mtime change) and
//!    vanishes when closed. Few network file systems offer it.
//! 3. Failing both, this machine's clock is used, and said so
//!    ([`ClockSource::Local`], the `local-clock` flag). A takeover reads the
//!    disk's clock again, with a probe, before it acts.

use std::path::Path;
use std::time::SystemTime;

use super::{ClockSource, Now};

/// File systems whose times the local kernel stamps (statfs `f_type`).
const LOCAL: &[(u64, &str)] = &[
    (0xEF53, "ext2/3/4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58F6, "ramfs"),
    (0xF2F5_2010, "f2fs"),
    (0x794C_7630, "overlayfs"),
    (0x2FC1_2FC1, "zfs"),
    (0xCA45_1A4E, "bcachefs"),
    (0x3153_464A, "jfs"),
    (0x5265_4973, "reiserfs"),
    (0x4D44, "vfat"),
    (0x2011_BAB0, "exfat"),
    (0x7366_746E, "ntfs3"),
];

/// The name of the local file system `dir` is on, or None when it is not one
/// this machine's clock stamps (or cannot be told).
pub fn local_file_system(dir: &Path) -> Option<&'static str> {
    let fs = rustix::fs::statfs(dir).ok()?;
    let kind = fs.f_type as u64;
    LOCAL.iter().find(|(magic, _)| *magic == kind).map(|(_, name)| *name)
}

/// The time by the disk that holds `dir`, read without writing in `dir`.
pub fn looking_now(dir: &Path) -> Now {
    if local_file_system(dir).is_some() {
        return Now { time: SystemTime::now(), source: ClockSource::LocalFileSystem };
    }
    match unnamed_file_time(dir) {
        Some(time) => Now { time, source: ClockSource::Disk },
        None => Now { time: SystemTime::now(), source: ClockSource::Local },
    }
}

/// The mtime an unnamed `O_TMPFILE` file gets in `dir`: the disk's time now.
fn unnamed_file_time(dir: &Path) -> Option<SystemTime> {
    use rustix::fs::{Mode, OFlags};
    let fd =
        rustix::fs::open(dir, OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC, Mode::from_raw_mode(0o600)).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    let secs = u64::try_from(st.st_mtime).ok()?;
    let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(dir: &Path) -> Vec<(String, i128)> {
        let m = std::fs::metadata(dir).unwrap();
        let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
        let mut v: Vec<(String, i128)> = names.map(|n| (n, 0)).collect();
        use std::os::unix::fs::MetadataExt;
        v.push((".".into(), i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())));
        v.sort();
        v
    }

    #[test]
    fn looking_leaves_the_folder_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"{}").unwrap();
        let before = tree(dir.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = looking_now(dir.path());
        assert_ne!(now.source, ClockSource::Local, "a temp folder is local or takes O_TMPFILE");
        let t = unnamed_file_time(dir.path());
        assert_eq!(tree(dir.path()), before, "no entry and no mtime change");
        // The unnamed file is stamped by the same clock (coarse: a tick behind at most).
        if let Some(t) = t {
            let drift = SystemTime::now().duration_since(t).unwrap_or_default();
            assert!(drift.as_secs() < 5, "{drift:?}");
        }
    }

    #[test]
    fn a_folder_that_is_gone_falls_back_to_this_machines_clock() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("nope");
        assert_eq!(looking_now(&gone).source, ClockSource::Local);
    }
}
