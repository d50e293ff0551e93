//! A store run's local staging folder, and the sweep of those that dead runs
//! left.
//!
//! On a disk the staging folder lives in the use case, and a takeover removes
//! what a dead run left there. A run against a store stages its command's
//! files on its own machine, where no other run looks: a run killed before it
//! cleaned up left its folder in the temp directory for ever (a few kill
//! tests leave about 13 GB of them). So each run holds an exclusive
//! `flock` on `<run>.lock` beside its folder while it lives; the kernel drops
//! the lock when the process dies, however it dies. Every store run sweeps
//! first: a folder whose lock it can take belongs to no live run and goes.
//! A folder whose lock is held, or cannot be read, is left alone.
//!
//! A lock file is never seen unlocked while its run lives: it is made under
//! a name the sweep ignores (`.<run>.new`), locked, then renamed to
//! `<run>.lock`: a sweep that opened a fresh lock file before its run locked
//! it would delete the live run's folder. A sweep acts only on names that
//! are a run's uuid, and only if the name still names the file it locked:
//! `...lock` names `..`, and sweeping it would remove all of `$TMPDIR`.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// A run's staging root, locked for as long as this value lives; dropping it
/// removes the folder and then its lock.
#[derive(Debug)]
pub struct Staging {
    root: PathBuf,
    lock_path: PathBuf,
    _lock: File,
}

/// The folder, per user and host, under which store runs stage their files
/// (per host: a `$TMPDIR` shared over NFS has no locks one host sees
/// another's by).
pub fn base() -> PathBuf {
    base_in(&std::env::temp_dir())
}

/// [`base`] under the temp folder `tmp`.
pub fn base_in(tmp: &Path) -> PathBuf {
    let host = rustix::system::uname().nodename().to_string_lossy().replace(['/', '\\'], "_");
    tmp.join(format!("ubunye-staging-{}-{host}", rustix::process::getuid().as_raw()))
}

impl Staging {
    /// Sweep what dead runs left under `base`, then lock and make
    /// `base/<run_id>/`. The run id must be a uuid.
    pub fn make(base: &Path, run_id: &str) -> io::Result<Staging> {
        if !crate::bucket::is_run_uuid(run_id) {
            return Err(io::Error::other(format!("'{run_id}' is not a run id (a uuid)")));
        }
        ensure_base(base)?;
        sweep(base);
        let lock_path = base.join(format!("{run_id}.lock"));
        let lock = locked(base, run_id, &lock_path)?;
        let root = base.join(run_id);
        if let Err(e) = fs::DirBuilder::new().mode(0o700).create(&root) {
            let _ = fs::remove_file(&lock_path);
            return Err(e);
        }
        Ok(Staging { root, lock_path, _lock: lock })
    }

    /// The folder the run stages into.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Staging {
    /// The folder, then its lock; a folder that would not go keeps its lock
    /// file, so that a later sweep tries again.
    fn drop(&mut self) {
        if remove_tree(&self.root) {
            let _ = fs::remove_file(&self.lock_path);
        }
    }
}

/// Remove the folder `root` (gone already is fine), making the folders in
/// it writable first if a plain removal fails (a command may leave one
/// read-only; its owner may always change that). Whether it is gone.
fn remove_tree(root: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    match fs::remove_dir_all(root) {
        Ok(()) => return true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
        Err(_) => {}
    }
    let mut todo = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = todo.pop() {
        seen += 1;
        if seen > 1_000_000 {
            break;
        }
        let Ok(m) = fs::symlink_metadata(&d) else { continue };
        if !m.is_dir() {
            continue;
        }
        let _ = fs::set_permissions(&d, fs::Permissions::from_mode(m.permissions().mode() | 0o700));
        if let Ok(rd) = fs::read_dir(&d) {
            todo.extend(rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()));
        }
    }
    match fs::remove_dir_all(root) {
        Ok(()) => true,
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

/// The base folder, private to this user: one another user made is refused
/// rather than written into.
fn ensure_base(base: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(base) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let m = fs::symlink_metadata(base)?;
    if !m.is_dir() || m.uid() != rustix::process::getuid().as_raw() {
        return Err(io::Error::other(format!(
            "{} is not a folder of this user's; remove it or set TMPDIR elsewhere",
            base.display()
        )));
    }
    Ok(())
}

/// The lock file `path` (`<run>.lock`), locked: made under `.<run>.new`,
/// locked without waiting (nobody else knows that name; a sweep ignores
/// it), then renamed into place, so that `<run>.lock` is locked from the
/// moment it exists.
fn locked(base: &Path, run_id: &str, path: &Path) -> io::Result<File> {
    let fresh = base.join(format!(".{run_id}.new"));
    let mut last = None;
    // A sweep may take a `.new` file between its creation and its lock (it
    // removes those a killed run left): then again, a few times.
    for _ in 0..5 {
        let f = OpenOptions::new().read(true).write(true).create_new(true).open(&fresh)?;
        let held = flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok() && is_at(&f, &fresh);
        if held {
            match fs::rename(&fresh, path) {
                Ok(()) => return Ok(f),
                Err(e) if e.kind() == io::ErrorKind::NotFound => last = Some(e),
                Err(e) => {
                    let _ = fs::remove_file(&fresh);
                    return Err(e);
                }
            }
        } else {
            last = Some(io::Error::other(format!("{}: taken by another process", fresh.display())));
            if is_at(&f, &fresh) {
                let _ = fs::remove_file(&fresh);
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("the lock file could not be made")))
}

/// Whether the open file `f` is the one `path` names now.
fn is_at(f: &File, path: &Path) -> bool {
    match (f.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

/// Remove the staging folders under `base` whose run is gone: those whose
/// lock file can be locked without waiting. Returns how many went.
pub fn sweep(base: &Path) -> usize {
    let Ok(entries) = fs::read_dir(base) else { return 0 };
    let mut gone = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        // A `.new` lock file a run killed before its rename left: gone if
        // nobody holds it (its maker holds it from before its name is used).
        if let Some(run) = name.to_str().and_then(|n| n.strip_prefix('.')?.strip_suffix(".new")) {
            if crate::bucket::is_run_uuid(run) {
                let p = e.path();
                if let Ok(f) = File::open(&p)
                    && flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok()
                    && is_at(&f, &p)
                {
                    let _ = fs::remove_file(&p);
                }
            }
            continue;
        }
        let Some(run) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else { continue };
        // Only a run's own names (never `..`, never `.`): the folder a lock
        // names is removed.
        if !crate::bucket::is_run_uuid(run) {
            continue;
        }
        let lock_path = e.path();
        let Ok(f) = OpenOptions::new().read(true).write(true).open(&lock_path) else { continue };
        if sweep_one(base, run, &lock_path, &f) {
            gone += 1;
        }
    }
    gone
}

/// The folder of run `run` and its lock file `lock_path`, if `f` (opened
/// from that name, perhaps a while ago) can be locked without waiting and
/// is still the file the name names.
fn sweep_one(base: &Path, run: &str, lock_path: &Path, f: &File) -> bool {
    if flock(f, FlockOperation::NonBlockingLockExclusive).is_err() {
        return false;
    }
    // The name must still be the file locked: another sweep may have removed
    // it meanwhile, and a live run's new lock taken its place.
    if !is_at(f, lock_path) {
        return false;
    }
    // Ours now, and no live run's: its folder, then the lock file. A folder
    // that would not go keeps its lock file, so that a later sweep tries again.
    remove_tree(&base.join(run)) && fs::remove_file(lock_path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> PathBuf {
        let b = std::env::temp_dir().join(format!("ubunye-staging-test-{}", uuid::Uuid::new_v4()));
        ensure_base(&b).unwrap();
        b
    }

    const LIVE: &str = "11111111-1111-4111-8111-111111111111";
    const DEAD: &str = "22222222-2222-4222-8222-222222222222";
    const OTHER: &str = "33333333-3333-4333-8333-333333333333";

    #[test]
    fn a_live_runs_folder_is_kept_and_a_dead_ones_swept() {
        let b = fresh();
        let live = Staging::make(&b, LIVE).unwrap();
        fs::write(live.root().join("f"), "x").unwrap();
        // A dead run: its lock file exists but nobody holds it.
        fs::create_dir(b.join(DEAD)).unwrap();
        fs::write(b.join(DEAD).join("f"), "x").unwrap();
        fs::write(b.join(format!("{DEAD}.lock")), "").unwrap();
        // A folder without a lock file is not ours to judge.
        fs::create_dir(b.join("stray")).unwrap();
        assert_eq!(sweep(&b), 1);
        assert!(live.root().join("f").exists());
        assert!(!b.join(DEAD).exists() && !b.join(format!("{DEAD}.lock")).exists());
        assert!(b.join("stray").exists());
        let root = live.root().to_path_buf();
        drop(live);
        assert!(!root.exists() && !b.join(format!("{LIVE}.lock")).exists());
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn names_that_are_not_a_run_are_never_swept_and_never_made() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path().join("base");
        ensure_base(&b).unwrap();
        fs::write(d.path().join("precious"), "keep").unwrap();
        // `...lock` names `..`, `.lock` names `.`: neither is a run's lock.
        fs::write(b.join("...lock"), "").unwrap();
        fs::write(b.join(".lock"), "").unwrap();
        fs::write(b.join("x.lock"), "").unwrap();
        assert_eq!(sweep(&b), 0);
        assert!(d.path().join("precious").exists() && b.join("...lock").exists());
        let e = Staging::make(&b, "..").unwrap_err();
        assert!(e.to_string().contains("is not a run id"), "{e}");
    }

    #[test]
    fn a_lock_file_replaced_since_it_was_opened_is_not_swept() {
        let b = fresh();
        // A sweep opened the dead run's lock file, then stalled; meanwhile
        // another sweep removed it and a live run (same name) locked a new one.
        fs::write(b.join(format!("{OTHER}.lock")), "").unwrap();
        let stale = File::open(b.join(format!("{OTHER}.lock"))).unwrap();
        fs::remove_file(b.join(format!("{OTHER}.lock"))).unwrap();
        let live = Staging::make(&b, OTHER).unwrap();
        fs::write(live.root().join("part"), "x").unwrap();
        assert!(!sweep_one(&b, OTHER, &b.join(format!("{OTHER}.lock")), &stale));
        assert!(live.root().join("part").exists() && b.join(format!("{OTHER}.lock")).exists());
        drop(live);
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_read_only_folder_in_the_staging_is_made_writable_and_removed() {
        let b = fresh();
        let s = Staging::make(&b, LIVE).unwrap();
        // A file in use by another process cannot stop a removal on Linux;
        // a mount point could. A read-only folder is made writable first.
        fs::create_dir_all(s.root().join("ro/deep")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(s.root().join("ro"), fs::Permissions::from_mode(0o500)).unwrap();
        drop(s);
        assert!(!b.join(LIVE).exists(), "the read-only folder was made writable and removed");
        assert!(!b.join(format!("{LIVE}.lock")).exists());
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_lock_held_by_another_process_is_not_swept() {
        let b = fresh();
        fs::create_dir(b.join(OTHER)).unwrap();
        let lock = b.join(format!("{OTHER}.lock"));
        fs::write(&lock, "").unwrap();
        // A shell takes the lock on fd 9 and becomes `sleep`, which keeps it.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec 9>>'{}'; flock 9 && echo ready && exec sleep 30", lock.display()))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh and flock(1) from util-linux");
        let mut line = String::new();
        io::BufRead::read_line(&mut io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let f = File::open(&lock).unwrap();
        let held = flock(&f, FlockOperation::NonBlockingLockShared).is_err();
        drop(f);
        assert!(held, "the child never took the lock");
        assert_eq!(sweep(&b), 0);
        assert!(b.join(OTHER).exists());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(sweep(&b), 1, "a killed holder's folder goes");
        assert!(!b.join(OTHER).exists());
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_base_of_another_kind_is_refused() {
        let f = std::env::temp_dir().join(format!("ubunye-staging-file-{}", uuid::Uuid::new_v4()));
        fs::write(&f, "").unwrap();
        let e = Staging::make(&f, LIVE).unwrap_err();
        assert!(e.to_string().contains("not a folder of this user's"), "{e}");
        fs::remove_file(&f).unwrap();
    }
}
