//! Undoing, or settling, an overwrite that `ubunye exec` published by swapping
//! folders beside the output: `.<name>.ubunye-<12hex>` (the run's new folder, or
//! after an exchange the old output) and, where no exchange exists,
//! `.<name>.ubunye-<12hex>.old` (the old output moved aside). Every rename is
//! made through a handle on the folder that holds them, reached from the root
//! without following a symlink; the output is the staging name's own `<name>`.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Statx, StatxFlags, renameat_with};
use rustix::io::Errno;

use super::{Beneath, PathRefusal, invalid};

/// The identity of an overwrite's new folder, as its swap note records it: its
/// device, its inode and, where the file system gives one, its birth time. A
/// folder made later that got the same inode number (ext4 hands a freed number
/// to the next folder made beside it) was born at another time: it is never
/// taken for the run's. Without a birth time only device and inode are compared
/// (docs/differences.md, known limits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FolderId {
    /// The device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// (seconds, nanoseconds) by the file system's clock, when it keeps one.
    pub born: Option<(i64, u32)>,
}

impl FolderId {
    fn of(st: &Statx) -> FolderId {
        let born = (st.stx_mask & StatxFlags::BTIME.bits() != 0).then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec));
        FolderId { dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor), ino: st.stx_ino, born }
    }

    /// Whether a folder found by `statx` is this one: same inode, born at the
    /// very time recorded (a recorded birth time the file system does not give
    /// now cannot be checked: not this one), and on the same device. The device
    /// number is the one thing allowed to differ, and only when both birth
    /// times are there and equal: a network file system's device number is
    /// each client's own, so a takeover on another host sees another number
    /// for the very same folder.
    fn matches(&self, st: &Statx) -> bool {
        is_dir(st) && self.same_as(FolderId::of(st))
    }

    fn same_as(&self, found: FolderId) -> bool {
        let born_ok = self.born.is_none_or(|b| found.born == Some(b));
        let dev_ok = found.dev == self.dev || (self.born.is_some() && found.born == self.born);
        found.ino == self.ino && born_ok && dev_ok
    }
}

const ID_MASK: StatxFlags = StatxFlags::TYPE.union(StatxFlags::INO).union(StatxFlags::BTIME);

/// The output beside a staging folder named `.<name>.ubunye-<12hex>`.
fn output_name(staging_name: &str) -> Option<&str> {
    let rest = staging_name.strip_prefix('.')?;
    let (out, tail) = rest.rsplit_once(".ubunye-")?;
    (super::is_staging_name(staging_name) && !tail.ends_with(".old") && !out.is_empty()).then_some(out)
}

/// What is at `name` in `parent`; None when nothing.
fn id_at(parent: &OwnedFd, name: &str) -> Option<Statx> {
    rustix::fs::statx(parent, name, AtFlags::SYMLINK_NOFOLLOW, ID_MASK).ok()
}

fn is_dir(st: &Statx) -> bool {
    FileType::from_raw_mode(st.stx_mode.into()) == FileType::Directory
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

    /// Open an overwrite's staging folder (the run's new folder, before its swap)
    /// without following a symlink, and read its identity. The handle is kept by
    /// the run until it ends: while it is open the folder's inode number cannot
    /// be handed to another folder, even if the folder is removed.
    pub fn hold_folder(&self, staging: &str) -> Result<(OwnedFd, FolderId), PathRefusal> {
        let n = self.swap_names(staging, None)?;
        let parent = n.parent.ok_or_else(|| invalid(staging, "it is not there"))?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&parent, n.staging.as_str(), flags, Mode::empty())
            .map_err(|_| invalid(staging, "it is not a folder that can be opened"))?;
        let st = rustix::fs::statx(&fd, "", AtFlags::EMPTY_PATH, ID_MASK)
            .map_err(|_| invalid(staging, "it cannot be looked at"))?;
        Ok((fd, FolderId::of(&st)))
    }

    /// A run that published an overwrite did not finish: put the old output back.
    /// `new` is the identity of the run's new folder ([`FolderId`]). Whatever state a kill left
    /// (not swapped; exchanged; first publish; moved aside; both renames done),
    /// afterwards the output is what it was before the run and the staging name
    /// holds the run's new folder (or nothing), to be removed as any staging
    /// folder. Refused, changing nothing more, when the folders are not what the
    /// record says: then nothing may be removed.
    pub fn undo_swap(&self, staging: &str, new: FolderId, old: Option<&str>) -> Result<(), PathRefusal> {
        let n = self.swap_names(staging, old)?;
        let Some(parent) = &n.parent else { return Ok(()) };
        let is_new = |name: &str| id_at(parent, name).is_some_and(|st| new.matches(&st));
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
                if !id_at(parent, &n.staging).is_some_and(|st| is_dir(&st)) {
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
        // What is left at the staging name is removed next: it must be the
        // run's new folder. Anything else there may be the old output,
        // exchanged there by a swap whose output was not recognised as the
        // run's (a network file system without birth times, seen from
        // another host): it is never removed.
        if there(&n.staging) && !is_new(&n.staging) {
            return Err(failed(
                "the folder at its name is not the run's new folder (it may be the old output, exchanged there), so it is left",
            ));
        }
        Ok(())
    }

    /// A run that published an overwrite finished: its new folder is the output;
    /// its old copies (at the staging name after an exchange, or `.old`) go. An
    /// output found missing with its old copy aside gets the old copy back rather
    /// than be left with none. Returns whether nothing is left at either name.
    pub fn settle_swap(&self, staging: &str, old: Option<&str>) -> Result<bool, PathRefusal> {
        let n = self.swap_names(staging, old)?;
        if let (Some(parent), Some(o)) = (&n.parent, &n.old)
            && id_at(parent, &n.output).is_none()
            && id_at(parent, o).is_some()
        {
            let _ = rename_noreplace(parent, o, &n.output);
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

    fn id(p: &std::path::Path) -> FolderId {
        let st = rustix::fs::statx(rustix::fs::CWD, p, AtFlags::empty(), ID_MASK).unwrap();
        FolderId::of(&st)
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
        // An output that is not the run's new folder is never moved, and a
        // folder at the staging name that is not the run's either is refused
        // (it may be the old output, exchanged there): nothing moves.
        fs::create_dir_all(uc.join("out/s")).unwrap();
        let e = b.undo_swap(st, FolderId { dev: 1, ino: 1, born: None }, None).unwrap_err();
        assert!(e.to_string().contains("not the run's new folder"), "{e}");
        assert!(uc.join("out/s").is_dir() && uc.join(st).is_dir());
        // The run's new folder at its name, never swapped: nothing to undo.
        b.undo_swap(st, new, None).unwrap();
        // An old copy named elsewhere is refused.
        assert!(b.undo_swap(st, new, Some("out/other.old")).is_err());
    }

    /// A folder with the recorded device and inode number but born at another
    /// time is another folder (its inode number was reused): it is never
    /// moved. A recorded birth time that cannot be read now is not taken as a
    /// match either; a note without one (an older lease) compares device and
    /// inode only.
    #[test]
    fn a_folder_born_at_another_time_is_not_the_runs() {
        let d = tempfile::tempdir().unwrap();
        let uc = d.path().join("uc");
        fs::create_dir_all(uc.join("out/s")).unwrap();
        fs::write(uc.join("out/s/t"), "TAKER").unwrap();
        let b = Beneath::new(&uc).unwrap();
        let st = "out/.s.ubunye-0123456789ab";
        let found = id(&uc.join("out/s"));
        let Some((sec, ns)) = found.born else {
            eprintln!("SKIPPED: this file system keeps no birth times");
            return;
        };
        for born in [Some((sec - 1, ns)), Some((sec, (ns + 1) % 1_000_000_000))] {
            b.undo_swap(st, FolderId { born, ..found }, None).unwrap();
            assert_eq!(fs::read_to_string(uc.join("out/s/t")).unwrap(), "TAKER", "{born:?}");
            assert!(!uc.join(st).exists());
        }
        // The run's own folder, born when recorded, is put back.
        b.undo_swap(st, found, None).unwrap();
        assert!(!uc.join("out/s").exists() && uc.join(st).join("t").exists());
        fs::rename(uc.join(st), uc.join("out/s")).unwrap();
        b.undo_swap(st, FolderId { born: None, ..found }, None).unwrap();
        assert!(!uc.join("out/s").exists(), "without a birth time, device and inode decide");
    }

    /// Identity across hosts: the inode and the birth time decide; the device
    /// number may differ (a network file system numbers it per client) only
    /// when both birth times are known and equal.
    #[test]
    fn a_folder_seen_from_another_host_is_known_by_inode_and_birth_time() {
        let rec = FolderId { dev: 10, ino: 7, born: Some((100, 5)) };
        assert!(rec.same_as(FolderId { dev: 10, ino: 7, born: Some((100, 5)) }));
        assert!(rec.same_as(FolderId { dev: 99, ino: 7, born: Some((100, 5)) }), "another client's device number");
        assert!(!rec.same_as(FolderId { dev: 99, ino: 7, born: Some((100, 6)) }));
        assert!(!rec.same_as(FolderId { dev: 10, ino: 7, born: Some((101, 5)) }), "the number reused");
        assert!(!rec.same_as(FolderId { dev: 99, ino: 7, born: None }));
        assert!(!rec.same_as(FolderId { dev: 10, ino: 7, born: None }), "a birth time that cannot be read now");
        assert!(!rec.same_as(FolderId { dev: 10, ino: 8, born: Some((100, 5)) }));
        let old = FolderId { dev: 10, ino: 7, born: None };
        assert!(old.same_as(FolderId { dev: 10, ino: 7, born: Some((100, 5)) }), "a note without a birth time");
        assert!(!old.same_as(FolderId { dev: 99, ino: 7, born: Some((100, 5)) }), "without one the device must match");
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
