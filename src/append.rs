//! A claimed append through a staging folder (ADR 008, F-070): the folder is
//! named by the run and recorded in the lease before it exists; what the writer
//! put in it is claimed in one save, then moved into the output one rename per
//! file, each checked against the takeover mark, and the whole lease checked once
//! after the last. The output folder is never listed.
//!
//! The staging folder is opened from the output folder's handle without
//! following a symlink, and listed through handles: a writer that replaced it
//! (or a folder in it) with a symlink, or mounted something in it, never leads a
//! landing or a removal outside it.

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::beneath::{FileId, Mount};
use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::fsx;
use crate::lease::RunLease;
use crate::sys::Step;

/// An append output being written through its staging folder.
#[derive(Clone, Debug)]
pub struct StagedAppend {
    /// The output's name.
    pub output: String,
    /// The output folder the files land in.
    pub out_dir: PathBuf,
    /// The staging folder the writer writes into: `<out_dir>/_ubunye-<12hex>`.
    pub staging: PathBuf,
    /// The staging folder as the lease records it (relative to the use-case folder).
    pub staging_claim: String,
}

/// What landing moved.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Landed {
    /// How many files were moved in.
    pub files: usize,
    /// Where each landed in the output.
    pub targets: Vec<PathBuf>,
}

/// One file the writer left in a staging folder.
#[derive(Clone, Debug)]
pub struct StagedFile {
    /// Relative to the staging folder (and so to the output).
    pub rel: PathBuf,
    /// Its device and inode (and birth time) as listed, so that only this file
    /// is taken back.
    pub id: FileId,
}

/// A staging folder opened and listed through handles, ready to be claimed and
/// moved in.
#[derive(Debug)]
pub struct Listing {
    out_fd: OwnedFd,
    st_fd: OwnedFd,
    /// The files, in the order they are claimed and moved.
    pub files: Vec<StagedFile>,
}

/// `_SUCCESS` (and Hadoop's checksum of it) at the top of a staging folder: the
/// writer's "done" marker, not data. `ubunye exec` writes the output's own after
/// landing, so these are not moved (two batches would clash on the name).
pub fn is_top_marker(name: &OsStr) -> bool {
    name == "_SUCCESS" || name == "._SUCCESS.crc"
}

fn refusal(what: String) -> Error {
    Refusal::new(RefusalKind::Outside, what)
        .hint(
            "Write the files into the folder in $UBUNYE_OUT_<NAME> itself: no symlinks, no mounts, regular files only.",
        )
        .into()
}

/// Open `name` in `parent` as a folder, never through a symlink.
fn open_subdir(parent: &OwnedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Every file in a staging folder, through handles: regular files at any depth
/// (names starting with `_` or `.` included: they are the writer's too), except
/// the top `_SUCCESS` marker. A symlink, a special file or a folder on another
/// mount is refused, naming it. `shown`: the staging folder's path, for messages.
fn walk(dir: &OwnedFd, rel: &Path, shown: &Path, mount: &Mount, out: &mut Vec<StagedFile>) -> Result<()> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut entries = rustix::fs::Dir::read_from(dir).map_err(|e| Error::io("list", shown.join(rel), e.into()))?;
    while let Some(entry) = entries.read() {
        let entry = entry.map_err(|e| Error::io("list", shown.join(rel), e.into()))?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(n.to_vec());
        }
    }
    for n in names {
        let name = OsStr::from_bytes(&n);
        let child = rel.join(name);
        if rel.as_os_str().is_empty() && is_top_marker(name) {
            continue;
        }
        let mask = StatxFlags::TYPE | StatxFlags::INO | StatxFlags::BTIME | StatxFlags::MNT_ID;
        let st = rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, mask)
            .map_err(|e| Error::io("look at", shown.join(&child), e.into()))?;
        match FileType::from_raw_mode(st.stx_mode.into()) {
            FileType::Directory => {
                if !Mount::of(&st).same(mount) {
                    return Err(refusal(format!(
                        "{} is a mount point (another disk, or a folder mounted there); Ubunye does not move files across it. Nothing was claimed or moved.",
                        shown.join(&child).display()
                    )));
                }
                let fd = open_subdir(dir, name).map_err(|e| Error::io("open", shown.join(&child), e.into()))?;
                walk(&fd, &child, shown, mount, out)?;
            }
            FileType::RegularFile => {
                let born_by = (st.stx_mask & StatxFlags::BTIME.bits() != 0)
                    .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec));
                let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
                out.push(StagedFile { rel: child, id: FileId { dev, ino: st.stx_ino, born_by } });
            }
            _ => {
                return Err(refusal(format!(
                    "{} is not a regular file (a symlink or special file cannot be appended). Nothing was claimed or moved.",
                    shown.join(&child).display()
                )));
            }
        }
    }
    Ok(())
}

/// Open the staging folder `staging` (named `name` inside the output `out_dir`)
/// from the output's handle, never through a symlink, on the output's own mount,
/// and list what the writer left in it.
pub fn list(out_dir: &Path, staging: &Path) -> Result<Listing> {
    let name = staging.file_name().unwrap_or_default();
    let out_fd = rustix::fs::open(out_dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::io("open the output folder", out_dir, e.into()))?;
    let st_fd = match open_subdir(&out_fd, name) {
        Ok(fd) => fd,
        Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
            return Err(refusal(format!(
                "{} is no longer the folder Ubunye made (the command replaced it with a symlink or a file); nothing is landed from it. Nothing was claimed or moved.",
                staging.display()
            )));
        }
        Err(e) => return Err(Error::io("open the staging folder", staging, e.into())),
    };
    let (Some(out_mount), Some(st_mount)) = (Mount::of_fd(&out_fd), Mount::of_fd(&st_fd)) else {
        return Err(Error::io("look at the staging folder", staging, Errno::IO.into()));
    };
    if !st_mount.same(&out_mount) {
        return Err(refusal(format!(
            "{} is a mount point (another disk, or a folder mounted there), not the folder Ubunye made. Nothing was claimed or moved.",
            staging.display()
        )));
    }
    let mut files = Vec::new();
    walk(&st_fd, Path::new(""), staging, &st_mount, &mut files)?;
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(Listing { out_fd, st_fd, files })
}

/// Move `rel` from the folder `from` to the same name in `to`, never replacing
/// a file already there.
fn rename_noreplace(from: &OwnedFd, rel: &Path, to: &OwnedFd) -> io::Result<()> {
    match rustix::fs::renameat_with(from, rel, to, rel, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == Errno::EXIST => Err(e.into()),
        Err(e) if e == Errno::INVAL || e == Errno::NOSYS || e == Errno::NOTSUP => {
            // The file system has no RENAME_NOREPLACE (NFS): a hard link is exclusive too.
            rustix::fs::linkat(from, rel, to, rel, AtFlags::empty())?;
            rustix::fs::unlinkat(from, rel, AtFlags::empty()).map_err(Into::into)
        }
        Err(e) => Err(e.into()),
    }
}

impl Listing {
    /// The staged files' paths in the output.
    pub fn targets(&self, out_dir: &Path) -> Vec<PathBuf> {
        self.files.iter().map(|f| out_dir.join(&f.rel)).collect()
    }

    /// The first staged file whose name is already taken in the output.
    pub fn clash(&self) -> Option<&Path> {
        self.files.iter().map(|f| f.rel.as_path()).find(|rel| {
            rustix::fs::statat(&self.out_fd, *rel, AtFlags::SYMLINK_NOFOLLOW)
                .map_or_else(|e| e != Errno::NOENT, |_| true)
        })
    }

    /// Move every file in (subfolders kept, for `k=v/` layouts), never over an
    /// existing file. `each(i)` after each move; stops at its first error.
    pub fn move_all(&self, out_dir: &Path, mut each: impl FnMut(usize) -> Result<()>) -> Result<()> {
        let mut made: HashSet<PathBuf> = HashSet::new();
        for (i, f) in self.files.iter().enumerate() {
            if let Some(parent) = f.rel.parent().filter(|p| !p.as_os_str().is_empty())
                && made.insert(parent.to_path_buf())
            {
                let full = out_dir.join(parent);
                fs::create_dir_all(&full).map_err(|e| Error::io("create the output folder", &full, e))?;
            }
            rename_noreplace(&self.st_fd, &f.rel, &self.out_fd)
                .map_err(|e| Error::io("move a file into the output", out_dir.join(&f.rel), e))?;
            each(i)?;
        }
        Ok(())
    }

    /// Touch the output's `_SUCCESS`.
    pub fn mark_success(&self, out_dir: &Path) -> Result<()> {
        rustix::fs::openat(
            &self.out_fd,
            "_SUCCESS",
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map(drop)
        .map_err(|e| Error::io("touch", out_dir.join("_SUCCESS"), e.into()))
    }
}

/// A landing under way: listed and checked, then claimed, then moved.
#[derive(Debug)]
pub struct Landing<'a> {
    st: &'a StagedAppend,
    listing: Listing,
    targets: Vec<PathBuf>,
    claims: Vec<String>,
}

impl StagedAppend {
    /// Name the staging folder `<out_dir>/_ubunye-<12hex>`, record it in the
    /// lease (before it exists), then make the output folder and the staging folder.
    pub fn begin(lease: &RunLease, output: &str, out_dir: &Path) -> Result<StagedAppend> {
        let staging = out_dir.join(format!("_ubunye-{}", fsx::hex12()));
        let staging_claim = lease.staging(output, &staging)?;
        crate::durable::create_dir_all(out_dir).map_err(|e| Error::io("create the output folder", out_dir, e))?;
        fs::create_dir(&staging).map_err(|e| Error::io("create the staging folder", &staging, e))?;
        Ok(StagedAppend { output: output.to_string(), out_dir: out_dir.to_path_buf(), staging, staging_claim })
    }

    /// The first step of landing, which changes nothing: list the staging folder
    /// through handles, and refuse a name already taken in the output.
    pub fn prepare(&self, lease: &RunLease) -> Result<Landing<'_>> {
        let listing = list(&self.out_dir, &self.staging)?;
        if let Some(rel) = listing.clash() {
            return Err(Refusal::new(
                RefusalKind::Outside,
                format!(
                    "{} already exists in the output; run {} will not claim a name that is not its own. Nothing was claimed or moved.",
                    self.out_dir.join(rel).display(),
                    crate::documents::short(lease.run_id())
                ),
            )
            .hint("Write uniquely named files (for example with the run id, $UBUNYE_RUN_ID, in the name).")
            .into());
        }
        let targets = listing.targets(&self.out_dir);
        Ok(Landing { st: self, listing, targets, claims: Vec::new() })
    }

    /// Land what the writer put in the staging folder: refuse a name clash before
    /// claiming anything, claim every file in one save, move each in, check each,
    /// check the lease once, touch `_SUCCESS`, remove the staging folder.
    pub fn land(&self, lease: &RunLease) -> Result<Landed> {
        let mut landing = self.prepare(lease)?;
        landing.claim(lease)?;
        landing.move_in(lease)
    }
}

impl Landing<'_> {
    /// Every landed file and the folders their names are in on the disk
    /// before anything says they landed (the done mark): a power cut never
    /// leaves a done mark over files that are not there.
    fn sync_landed(&self, out_dir: &Path) -> Result<()> {
        let mut files = self.targets.clone();
        files.push(out_dir.join("_SUCCESS"));
        let mut dirs: BTreeSet<PathBuf> = BTreeSet::from([out_dir.to_path_buf()]);
        for f in &self.listing.files {
            let mut rel = f.rel.parent();
            while let Some(p) = rel.filter(|p| !p.as_os_str().is_empty()) {
                dirs.insert(out_dir.join(p));
                rel = p.parent();
            }
        }
        let dirs: Vec<PathBuf> = dirs.into_iter().collect();
        crate::durable::landed(&self.listing.out_fd, out_dir, &files, &dirs)
            .map_err(|e| Error::io("sync the landed files", out_dir, e))
    }

    /// Claim every file in one save of the lease.
    pub fn claim(&mut self, lease: &RunLease) -> Result<()> {
        self.claims = lease.claim_all(&self.st.output, &self.targets)?;
        lease.staged_claims(&self.claims);
        Ok(())
    }

    /// Move each claimed file in, checking the takeover mark after each and the
    /// lease once after the last; touch `_SUCCESS`; remove the staging folder.
    pub fn move_in(self, lease: &RunLease) -> Result<Landed> {
        let st = self.st;
        let result = self.listing.move_all(&st.out_dir, |i| {
            lease.step(Step::Moved);
            lease.landed_file(&self.claims[i], self.listing.files[i].id)
        });
        if let Err(e) = result {
            if let Error::Io { source, path, .. } = &e
                && source.kind() == io::ErrorKind::AlreadyExists
            {
                // Something else put a file there after the check: that file is
                // not this run's, so its claim must go before anything is taken back.
                lease.unclaim(&st.output, path)?;
            }
            return Err(e);
        }
        lease.all_landed_files(&self.claims)?;
        self.listing.mark_success(&st.out_dir)?;
        self.sync_landed(&st.out_dir)?;
        let _ = lease.remove_staging(&st.staging_claim);
        Ok(Landed { files: self.targets.len(), targets: self.targets })
    }
}
