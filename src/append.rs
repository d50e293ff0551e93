//! A claimed append through a staging folder (ADR 008, F-070): the folder is
//! named by the run and recorded in the lease before it exists; what the writer
//! put in it is claimed in one save, then moved into the output one rename per
//! file, each checked against the takeover mark, and the whole lease checked once
//! after the last. The output folder is never listed.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::fsx;
use crate::lease::RunLease;
use crate::sys::Step;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::OwnedFd;

/// An append output being written through its staging folder.
#[derive(Clone, Debug)]
pub struct StagedAppend {
    pub output: String,
    pub out_dir: PathBuf,
    pub staging: PathBuf,
    /// The staging folder as the lease records it (relative to the use-case folder).
    pub staging_claim: String,
}

/// What landing moved.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Landed {
    pub files: usize,
    pub targets: Vec<PathBuf>,
}

/// Which files in a staging folder are data to land: regular files whose names
/// do not start with `_` or `.` (readers skip those: `_SUCCESS`, `.crc`,
/// `_metadata`), in folders whose names do not either. Relative paths, sorted,
/// with each file's inode.
pub fn staged_files(staging: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    fn walk(root: &Path, rel: &Path, out: &mut Vec<(PathBuf, u64)>) -> io::Result<()> {
        use std::os::unix::fs::DirEntryExt;
        for entry in fs::read_dir(root.join(rel))? {
            let entry = entry?;
            let name = entry.file_name();
            let n = name.to_string_lossy();
            if n.starts_with('_') || n.starts_with('.') {
                continue;
            }
            let ft = entry.file_type()?;
            let child = rel.join(&name);
            if ft.is_dir() {
                walk(root, &child, out)?;
            } else if ft.is_file() {
                out.push((child, entry.ino()));
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a regular file (a symlink or special file cannot be appended)",
                        root.join(child).display()
                    ),
                ));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(staging, Path::new(""), &mut out)?;
    out.sort();
    Ok(out)
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

impl StagedAppend {
    /// Name the staging folder `<out_dir>/_ubunye-<12hex>`, record it in the
    /// lease (before it exists), then make the output folder and the staging folder.
    pub fn begin(lease: &RunLease, output: &str, out_dir: &Path) -> Result<StagedAppend> {
        let staging = out_dir.join(format!("_ubunye-{}", fsx::hex12()));
        let staging_claim = lease.staging(output, &staging)?;
        fs::create_dir_all(out_dir).map_err(|e| Error::io("create the output folder", out_dir, e))?;
        fs::create_dir(&staging).map_err(|e| Error::io("create the staging folder", &staging, e))?;
        Ok(StagedAppend { output: output.to_string(), out_dir: out_dir.to_path_buf(), staging, staging_claim })
    }

    /// Land what the writer put in the staging folder: refuse a name clash before
    /// claiming anything, claim every file in one save, move each in (subfolders
    /// kept, for `k=v/` layouts), check each, check the lease once, touch
    /// `_SUCCESS`, remove the staging folder.
    pub fn land(&self, lease: &RunLease) -> Result<Landed> {
        let files = staged_files(&self.staging).map_err(|e| Error::io("list the staging folder", &self.staging, e))?;
        // Every staged file existed by the time of the staging folder's last
        // change: a file under one of their names born later is not this run's.
        let (dev, born_by) = {
            use std::os::unix::fs::MetadataExt;
            let m = fs::metadata(&self.staging).map_err(|e| Error::io("read the staging folder", &self.staging, e))?;
            (m.dev(), Some((m.mtime(), m.mtime_nsec() as u32)))
        };
        let targets: Vec<PathBuf> = files.iter().map(|(f, _)| self.out_dir.join(f)).collect();
        // Every operation below is relative to handles on the output and the
        // staging folder: no path is walked from the root once per file.
        let open_dir = |p: &Path| {
            rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| Error::io("open", p, e.into()))
        };
        let out_fd = open_dir(&self.out_dir)?;
        let st_fd = open_dir(&self.staging)?;
        for ((f, _), t) in files.iter().zip(&targets) {
            if rustix::fs::statat(&out_fd, f, AtFlags::SYMLINK_NOFOLLOW).map_or_else(|e| e != Errno::NOENT, |_| true) {
                return Err(Refusal::new(
                    RefusalKind::Outside,
                    format!(
                        "{} already exists in the output; run {} will not claim a name that is not its own. Nothing was claimed or moved.",
                        t.display(),
                        crate::doc::short(lease.run_id())
                    ),
                )
                .hint("Write uniquely named files (for example with the run id, $UBUNYE_RUN_ID, in the name).")
                .into());
            }
        }
        let claims = lease.claim_all(&self.output, &targets)?;
        let mut made: HashSet<PathBuf> = HashSet::new();
        for (((f, ino), target), claim) in files.iter().zip(&targets).zip(&claims) {
            if let Some(parent) = f.parent().filter(|p| !p.as_os_str().is_empty()) {
                if !made.contains(parent) {
                    let full = self.out_dir.join(parent);
                    fs::create_dir_all(&full).map_err(|e| Error::io("create the output folder", &full, e))?;
                    made.insert(parent.to_path_buf());
                }
            }
            if let Err(e) = rename_noreplace(&st_fd, f, &out_fd) {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    // Something else put a file there after the check: that file is
                    // not this run's, so its claim must go before anything is taken back.
                    lease.unclaim(&self.output, target)?;
                }
                return Err(Error::io("move a file into the output", target, e));
            }
            lease.step(Step::Moved);
            lease.landed_file(claim, crate::beneath::FileId { dev, ino: *ino, born_by })?;
        }
        lease.all_landed_files(&claims)?;
        let marker = self.out_dir.join("_SUCCESS");
        fs::OpenOptions::new().create(true).append(true).open(&marker).map_err(|e| Error::io("touch", &marker, e))?;
        let _ = lease.remove_staging(&self.staging_claim);
        Ok(Landed { files: targets.len(), targets })
    }
}
