//! Undoing, or settling, an overwrite that `ubunye exec` published by swapping
//! folders beside the output: `.<name>.ubunye-<12hex>` (the run's new folder, or
//! after an exchange the old output) and, where no exchange exists,
//! `.<name>.ubunye-<12hex>.old` (the old output moved aside). Every rename is
//! made through a handle on the folder that holds them, reached from the root
//! without following a symlink; the output is the staging name's own `<name>`.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, RenameFlags, StatxFlags, renameat_with};
use rustix::io::Errno;

use super::{Beneath, PathRefusal, invalid};

/// The output beside a staging folder named `.<name>.ubunye-<12hex>`.
fn output_name(staging_name: &str) -> Option<&str> {
    let rest = staging_name.strip_prefix('.')?;
    let (out, tail) = rest.rsplit_once(".ubunye-")?;
    (super::is_staging_name(staging_name) && !tail.ends_with(".old") && !out.is_empty()).then_some(out)
}

/// What is at `name` in `parent`: its type, device and inode; None when nothing.
fn id_at(parent: &OwnedFd, name: &str) -> Option<(FileType, u64, u64)> {
    let st = rustix::fs::statx(parent, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE | StatxFlags::INO).ok()?;
    let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
    Some((FileType::from_raw_mode(st.stx_mode.into()), dev, st.stx_ino))
}

/// Rename `from` to `to` in `parent`, never over something there.
fn rename_noreplace(parent: &OwnedFd, from: &str, to: &str) -> rustix::io::Result<()> {
    match renameat_with(parent, from, parent, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL) | Err(Errno::NOSYS) | Err(Errno::NOTSUP) if id_at(parent, to).is_none() => {
            rustix::fs::renameat(parent, from, parent, to)
        }
        other => other,
    }
}

/// A swap as its note records it, checked: the folder holding it, the
/// staging folder's name, the output's name, and the old copy's name if recorded.
struct Names {
    parent: Option<OwnedFd>,
    staging: String,
    output: String,
    old: Option<String>,
}

impl Beneath {
    fn swap_names(&self, staging: &str, old: Option<&str>) -> Result<Names, PathRefusal> {
        let inside = self.resolve(staging)?;
        let name = inside.parts.last().cloned().unwrap_or_default();
        let output = output_name(&name).ok_or_else(|| PathRefusal::NotStaging { path: staging.to_string() })?;
        let old = match old {
            Some(o) if o == format!("{staging}.old") => Some(format!("{name}.old")),
            Some(o) => return Err(invalid(o, "not the old copy of the overwrite staging folder its lease names")),
            None => None,
        };
        let parent = self.open_parent(staging, &inside.parts)?;
        Ok(Names { parent, output: output.to_string(), staging: name, old })
    }

    /// A run that published an overwrite did not finish: put the old output back.
    /// `new` is the identity of the run's new folder. Whatever state a kill left
    /// (not swapped; exchanged; first publish; moved aside; both renames done),
    /// afterwards the output is what it was before the run and the staging name
    /// holds the run's new folder (or nothing), to be removed as any staging
    /// folder. Refused, changing nothing more, when the folders are not what the
    /// record says: then nothing may be removed.
    pub fn undo_swap(&self, staging: &str, new: (u64, u64), old: Option<&str>) -> Result<(), PathRefusal> {
        let n = self.swap_names(staging, old)?;
        let Some(parent) = &n.parent else { return Ok(()) };
        let is_new =
            |name: &str| id_at(parent, name).is_some_and(|(t, d, i)| t == FileType::Directory && (d, i) == new);
        let there = |name: &str| id_at(parent, name).is_some();
        let failed = |why: &'static str| invalid(staging, why);
        let old_there = n.old.as_deref().is_some_and(there);
        if is_new(&n.output) {
            if old_there {
                // Both renames of a swap without exchange were made.
                if there(&n.staging) {
                    return Err(failed("something is at its name while the old output is moved aside"));
                }
                rename_noreplace(parent, &n.output, &n.staging)
                    .map_err(|_| failed("the output cannot be moved back"))?;
                let old = n.old.as_deref().unwrap_or_default();
                rename_noreplace(parent, old, &n.output).map_err(|_| failed("the old output cannot be put back"))?;
            } else if there(&n.staging) {
                // Exchanged: the old output is at the staging name.
                if !matches!(id_at(parent, &n.staging), Some((FileType::Directory, ..))) {
                    return Err(failed("the old output at its name is not a folder"));
                }
                renameat_with(parent, n.staging.as_str(), parent, n.output.as_str(), RenameFlags::EXCHANGE)
                    .map_err(|_| failed("the old output cannot be exchanged back"))?;
            } else {
                // A first publish: there was no output before the run.
                rename_noreplace(parent, &n.output, &n.staging)
                    .map_err(|_| failed("the output cannot be moved back"))?;
            }
        } else if old_there && !there(&n.output) {
            // Killed between the two renames: the old output is aside, nothing in its place.
            let old = n.old.as_deref().unwrap_or_default();
            rename_noreplace(parent, old, &n.output).map_err(|_| failed("the old output cannot be put back"))?;
        }
        if n.old.as_deref().is_some_and(there) {
            return Err(failed("the old output is still aside, beside an output that is not the run's"));
        }
        Ok(())
    }

    /// A run that published an overwrite finished: its new folder is the output;
    /// its old copies (at the staging name after an exchange, or `.old`) go. An
    /// output found missing with its old copy aside gets the old copy back rather
    /// than be left with none. Returns whether nothing is left at either name.
    pub fn settle_swap(&self, staging: &str, old: Option<&str>) -> Result<bool, PathRefusal> {
        let n = self.swap_names(staging, old)?;
        if let (Some(parent), Some(o)) = (&n.parent, &n.old) {
            if id_at(parent, &n.output).is_none() && id_at(parent, o).is_some() {
                let _ = rename_noreplace(parent, o, &n.output);
            }
        }
        let mut gone = self.remove_staging(staging)?;
        if let Some(o) = old {
            gone &= self.remove_staging(o)?;
        }
        Ok(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::MetadataExt;

    fn id(p: &std::path::Path) -> (u64, u64) {
        let m = fs::metadata(p).unwrap();
        (m.dev(), m.ino())
    }

    /// Every state a kill can leave an overwrite in, undone: the output holds
    /// the old data again, and the staging name the new.
    #[test]
    fn every_state_of_a_swap_is_undone() {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        fs::create_dir_all(uc.join("out")).unwrap();
        let b = Beneath::new(&uc).unwrap();
        let (st, old) = ("out/.s.ubunye-0123456789ab", "out/.s.ubunye-0123456789ab.old");
        let read = |p: &str| fs::read_to_string(uc.join(p).join("t")).unwrap_or_else(|_| "-".into());
        type Setup = fn(&std::path::Path);
        let cases: &[(&str, Setup, bool)] = &[
            ("not swapped", |_| {}, false),
            ("exchanged", |uc| exchange(uc), false),
            (
                "moved aside",
                |uc| fs::rename(uc.join("out/s"), uc.join("out/.s.ubunye-0123456789ab.old")).unwrap(),
                true,
            ),
            (
                "both renames",
                |uc| {
                    fs::rename(uc.join("out/s"), uc.join("out/.s.ubunye-0123456789ab.old")).unwrap();
                    fs::rename(uc.join("out/.s.ubunye-0123456789ab"), uc.join("out/s")).unwrap();
                },
                true,
            ),
        ];
        fn exchange(uc: &std::path::Path) {
            renameat_with(
                rustix::fs::CWD,
                uc.join("out/.s.ubunye-0123456789ab"),
                rustix::fs::CWD,
                uc.join("out/s"),
                RenameFlags::EXCHANGE,
            )
            .unwrap();
        }
        for (what, setup, with_old) in cases {
            let _ = fs::remove_dir_all(uc.join("out"));
            fs::create_dir_all(uc.join("out/s")).unwrap();
            fs::write(uc.join("out/s/t"), "OLD").unwrap();
            fs::create_dir_all(uc.join(st)).unwrap();
            fs::write(uc.join(st).join("t"), "NEW").unwrap();
            let new = id(&uc.join(st));
            setup(&uc);
            b.undo_swap(st, new, with_old.then_some(old)).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!((read("out/s"), read(st)), ("OLD".into(), "NEW".into()), "{what}");
            assert!(!uc.join(old).exists(), "{what}");
        }
        // A first publish: no output before the run, none after.
        let _ = fs::remove_dir_all(uc.join("out"));
        fs::create_dir_all(uc.join(st)).unwrap();
        let new = id(&uc.join(st));
        fs::rename(uc.join(st), uc.join("out/s")).unwrap();
        b.undo_swap(st, new, None).unwrap();
        assert!(!uc.join("out/s").exists() && uc.join(st).is_dir());
        // An output that is not the run's new folder is never moved.
        fs::create_dir_all(uc.join("out/s")).unwrap();
        b.undo_swap(st, (1, 1), None).unwrap();
        assert!(uc.join("out/s").is_dir() && uc.join(st).is_dir());
        // An old copy named elsewhere is refused.
        assert!(b.undo_swap(st, new, Some("out/other.old")).is_err());
    }

    #[test]
    fn a_finished_swap_leaves_the_new_output_and_no_old_copy() {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        fs::create_dir_all(uc.join("out/s")).unwrap();
        fs::create_dir_all(uc.join("out/.s.ubunye-0123456789ab/sub")).unwrap();
        let b = Beneath::new(&uc).unwrap();
        assert_eq!(b.settle_swap("out/.s.ubunye-0123456789ab", None), Ok(true));
        assert!(uc.join("out/s").is_dir() && !uc.join("out/.s.ubunye-0123456789ab").exists());
        // Killed between two renames yet finished (it cannot be, but a lease may say so):
        // the output is not left missing.
        fs::rename(uc.join("out/s"), uc.join("out/.s.ubunye-0123456789ab.old")).unwrap();
        let gone = b.settle_swap("out/.s.ubunye-0123456789ab", Some("out/.s.ubunye-0123456789ab.old")).unwrap();
        assert!(gone && uc.join("out/s").is_dir());
    }
}
