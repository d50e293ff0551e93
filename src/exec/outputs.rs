//! The outputs of `ubunye exec`: an overwrite published in one step (staging
//! plus swap), and appends landed without a lease when leases are off.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, RenameFlags, renameat_with};
use rustix::io::Errno;

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

/// Publish `staging` as `output` in one step.
pub fn swap_in(staging: &Path, output: &Path) -> io::Result<Swap> {
    match renameat_with(CWD, staging, CWD, output, RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(Swap::First),
        Err(Errno::EXIST) | Err(Errno::NOTEMPTY) => {}
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) if !output.exists() => {
            fs::rename(staging, output)?;
            return Ok(Swap::First);
        }
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) => {}
        Err(e) => return Err(e.into()),
    }
    match renameat_with(CWD, staging, CWD, output, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(Swap::Exchanged),
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) => {
            let old = old_copy(staging);
            fs::rename(output, &old)?;
            fs::rename(staging, output)?;
            Ok(Swap::TwoRenames)
        }
        Err(e) => Err(e.into()),
    }
}

/// Where [`Swap::TwoRenames`] put the old output.
pub fn old_copy(staging: &Path) -> PathBuf {
    let mut s = staging.as_os_str().to_owned();
    s.push(".old");
    PathBuf::from(s)
}

/// Appends without a lease (`UBUNYE_RUN_LEASE=off`): move the staged files in,
/// never over an existing file, touch `_SUCCESS`, remove the staging folder.
pub fn land_unleased(staging: &Path, out_dir: &Path) -> io::Result<usize> {
    let files = crate::append::staged_files(staging)?;
    for (f, _) in &files {
        if crate::fsx::exists(&out_dir.join(f)) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists in the output", out_dir.join(f).display()),
            ));
        }
    }
    for (f, _) in &files {
        let target = out_dir.join(f);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        match renameat_with(CWD, staging.join(f), CWD, &target, RenameFlags::NOREPLACE) {
            Ok(()) => {}
            Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) => {
                fs::hard_link(staging.join(f), &target)?;
                fs::remove_file(staging.join(f))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    fs::OpenOptions::new().create(true).append(true).open(out_dir.join("_SUCCESS"))?;
    fs::remove_dir_all(staging)?;
    Ok(files.len())
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
        assert_eq!(swap_in(&st, &out).unwrap(), Swap::First);
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "1");
        let st = overwrite_staging(&out);
        fs::create_dir(&st).unwrap();
        fs::write(st.join("a.csv"), "2").unwrap();
        assert_eq!(swap_in(&st, &out).unwrap(), Swap::Exchanged);
        assert_eq!(fs::read_to_string(out.join("a.csv")).unwrap(), "2");
        assert_eq!(fs::read_to_string(st.join("a.csv")).unwrap(), "1", "the old copy is at the staging path");
    }
}
