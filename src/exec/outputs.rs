//! The outputs of `ubunye exec`: an overwrite published in one step (staging
//! plus swap, the old copy kept until the run commits), and appends landed
//! without a lease when leases are off.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, RenameFlags, renameat_with};
use rustix::io::Errno;

use crate::beneath::Beneath;
use crate::error::{Error, Refusal, RefusalKind, Result};

/// How an overwrite was published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Swap {
    /// There was no output yet: the new folder was renamed into place.
    First,
    /// The new folder and the old output were exchanged in one step
    /// (`renameat2(RENAME_EXCHANGE)`); the old copy is now at the staging path.
    Exchanged,
    /// The file system has no exchange: the old output was renamed aside to
    /// `<staging>.old`, then the new one renamed in (a reader may find the
    /// output missing for that moment).
    TwoRenames,
}

/// The staging folder of an overwrite output: `.<name>.ubunye-<12hex>` beside it.
pub fn overwrite_staging(output: &Path) -> PathBuf {
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    output.with_file_name(format!(".{name}.ubunye-{}", crate::fsx::hex12()))
}

/// Where [`Swap::TwoRenames`] puts the old output.
pub fn old_copy(staging: &Path) -> PathBuf {
    let mut s = staging.as_os_str().to_owned();
    s.push(".old");
    PathBuf::from(s)
}

/// Before anything is published: the staging folder must still be the folder
/// the run made (not a symlink or a file the command put there), and the output
/// a folder or nothing (not a symlink, not a file). Returns the new folder's
/// identity (device, inode), recorded in the lease before the swap so that a
/// takeover can tell whether it happened.
pub fn check_publishable(staging: &Path, output: &Path) -> Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |what: String| -> Error {
        Refusal::new(RefusalKind::Outside, what)
            .hint("Write the output's files into the folder in $UBUNYE_OUT_<NAME>; leave the output itself alone.")
            .into()
    };
    let st = fs::symlink_metadata(staging).map_err(|e| Error::io("look at the staging folder", staging, e))?;
    if !st.is_dir() {
        return Err(refuse(format!(
            "{} is no longer the folder Ubunye made (the command replaced it); the overwrite is not published. Nothing was replaced.",
            staging.display()
        )));
    }
    match fs::symlink_metadata(output) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => Err(refuse(format!(
            "{} is not a folder any more (the command made it a symlink or a file); the overwrite is not published. Nothing was replaced.",
            output.display()
        ))),
        Ok(m) if m.dev() != st.dev() => Err(refuse(format!(
            "{} and its staging folder are on different disks (a mount point); the overwrite is not published.",
            output.display()
        ))),
        Ok(_) => Ok((st.dev(), st.ino())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((st.dev(), st.ino())),
        Err(e) => Err(Error::io("look at the output", output, e)),
    }
}

/// Publish `staging` as `output` in one step. Where no exchange exists, `aside`
/// is called with `<staging>.old` before the old output is renamed there (the
/// lease records it, so that a run killed between the two renames is undone),
/// and `moved_aside` just after. `exchange` false acts as if the file system
/// had none (`Knobs::exchange`: tests of the two-rename path).
pub fn swap_in(
    staging: &Path,
    output: &Path,
    exchange: bool,
    aside: impl FnOnce(&Path) -> Result<()>,
    moved_aside: impl FnOnce(),
) -> Result<Swap> {
    let io_err = |e: io::Error| Error::io("publish the overwrite of", output, e);
    // What the command wrote on the disk before it is published, and the
    // swap on the disk before the run goes on to commit: a power cut never
    // leaves a committed run whose overwrite is not there.
    crate::durable::tree(staging).map_err(|e| Error::io("sync the staged overwrite", staging, e))?;
    let swapped = swap(staging, output, exchange, aside, moved_aside, io_err)?;
    crate::durable::parent(output).map_err(io_err)?;
    Ok(swapped)
}

fn swap(
    staging: &Path,
    output: &Path,
    exchange: bool,
    aside: impl FnOnce(&Path) -> Result<()>,
    moved_aside: impl FnOnce(),
    io_err: impl Fn(io::Error) -> Error,
) -> Result<Swap> {
    match renameat_with(CWD, staging, CWD, output, RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(Swap::First),
        Err(Errno::EXIST) | Err(Errno::NOTEMPTY) => {}
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) if !output.exists() => {
            fs::rename(staging, output).map_err(&io_err)?;
            return Ok(Swap::First);
        }
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) => {}
        Err(e) => return Err(io_err(e.into())),
    }
    let exchanged =
        if !exchange { Err(Errno::INVAL) } else { renameat_with(CWD, staging, CWD, output, RenameFlags::EXCHANGE) };
    match exchanged {
        Ok(()) => Ok(Swap::Exchanged),
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) => {
            let old = old_copy(staging);
            aside(&old)?;
            match renameat_with(CWD, output, CWD, &old, RenameFlags::NOREPLACE) {
                Ok(()) => {}
                Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) if !old.exists() => {
                    fs::rename(output, &old).map_err(&io_err)?
                }
                Err(e) => return Err(io_err(e.into())),
            }
            moved_aside();
            fs::rename(staging, output).map_err(&io_err)?;
            Ok(Swap::TwoRenames)
        }
        Err(e) => Err(io_err(e.into())),
    }
}

/// Appends without a lease (`UBUNYE_RUN_LEASE=off`): the staging folder listed
/// through handles as a leased run lists it; its files moved in, never over an
/// existing file; `_SUCCESS` touched; the staging folder removed.
pub fn land_unleased(beneath: &Beneath, staging: &Path, out_dir: &Path) -> Result<usize> {
    let listing = crate::append::list(out_dir, staging)?;
    if let Some(rel) = listing.clash() {
        return Err(Error::io(
            "land",
            out_dir.join(rel),
            io::Error::new(io::ErrorKind::AlreadyExists, "already exists in the output"),
        ));
    }
    listing.move_all(out_dir, |_| Ok(()))?;
    listing.mark_success(out_dir)?;
    remove_unleased(beneath, staging);
    Ok(listing.files.len())
}

/// Remove a staging folder (or an old copy) of an unleased run, confined to
/// the use-case folder like any removal.
pub fn remove_unleased(beneath: &Beneath, folder: &Path) {
    if let Ok(claim) = beneath.portable(folder) {
        let _ = beneath.remove_staging(&claim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_write_then_exchange() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("summary");
        let st = overwrite_staging(&out);
        assert!(crate::beneath::is_staging_name(st.file_name().unwrap().to_str().unwrap()));
        fs::create_dir(&st).unwrap();
        fs::write(st.join("a.csv"), "1").unwrap();
        assert_eq!(swap_in(&st, &out, true, |_| Ok(()), || {}).unwrap(), Swap::First);
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "1");
        let st = overwrite_staging(&out);
        fs::create_dir(&st).unwrap();
        fs::write(st.join("a.csv"), "2").unwrap();
        assert_eq!(swap_in(&st, &out, true, |_| Ok(()), || {}).unwrap(), Swap::Exchanged);
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "2");
        assert_eq!(fs::read_to_string(st.join("a.csv")).unwrap(), "1", "the old copy is at the staging path");
    }
}
