//! A store run's local staging folder, and the sweep of those that dead runs
//! left.
//!
//! On a disk the staging folder lives in the use case, and a takeover removes
//! what a dead run left there. A run against a store stages its command's
//! files on its own machine, where no other run looks: a run killed before it
//! cleaned up left its folder in the temp directory for ever (stop 19: about
//! 13 GB of them after a few kill tests). So each run holds an exclusive
//! `flock` on `<run>.lock` beside its folder while it lives; the kernel drops
//! the lock when the process dies, however it dies. Every store run sweeps
//! first: a folder whose lock it can take belongs to no live run and goes.
//! A folder whose lock is held, or cannot be read, is left alone.

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

/// The folder, per user, under which store runs stage their files.
pub fn base() -> PathBuf {
    std::env::temp_dir().join(format!("ubunye-staging-{}", rustix::process::getuid().as_raw()))
}

impl Staging {
    /// Sweep what dead runs left under `base`, then lock and make
    /// `base/<run_id>/`.
    pub fn make(base: &Path, run_id: &str) -> io::Result<Staging> {
        ensure_base(base)?;
        sweep(base);
        let lock_path = base.join(format!("{run_id}.lock"));
        let lock = locked(&lock_path)?;
        let root = base.join(run_id);
        fs::DirBuilder::new().mode(0o700).create(&root)?;
        Ok(Staging { root, lock_path, _lock: lock })
    }

    /// The folder the run stages into.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
        let _ = fs::remove_file(&self.lock_path);
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

/// Open and lock `path`, making sure the lock taken is on the file the path
/// names: a sweep may unlink the file between the open and the lock.
fn locked(path: &Path) -> io::Result<File> {
    for _ in 0..100 {
        let f = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        flock(&f, FlockOperation::LockExclusive)?;
        let held = f.metadata()?;
        match fs::metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(f),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!("{}: could not lock it in 100 tries", path.display())))
}

/// Remove the staging folders under `base` whose run is gone: those whose
/// lock file can be locked without waiting. Returns how many went.
pub fn sweep(base: &Path) -> usize {
    let Ok(entries) = fs::read_dir(base) else { return 0 };
    let mut gone = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(run) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else { continue };
        let lock_path = e.path();
        let Ok(f) = OpenOptions::new().read(true).write(true).open(&lock_path) else { continue };
        if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        // Ours now, and no live run's: its folder, then the lock file, while
        // the lock is held (a run that opens the file meanwhile sees it
        // unlinked and opens a new one).
        // A folder that would not go (a dead run's command still writing
        // into it) keeps its lock file, so that a later sweep tries again.
        match fs::remove_dir_all(base.join(run)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => continue,
        }
        if fs::remove_file(&lock_path).is_ok() {
            gone += 1;
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> PathBuf {
        let b = std::env::temp_dir().join(format!("ubunye-staging-test-{}", uuid::Uuid::new_v4()));
        ensure_base(&b).unwrap();
        b
    }

    #[test]
    fn a_live_runs_folder_is_kept_and_a_dead_ones_swept() {
        let b = fresh();
        let live = Staging::make(&b, "live").unwrap();
        fs::write(live.root().join("f"), "x").unwrap();
        // A dead run: its lock file exists but nobody holds it.
        fs::create_dir(b.join("dead")).unwrap();
        fs::write(b.join("dead/f"), "x").unwrap();
        fs::write(b.join("dead.lock"), "").unwrap();
        // A folder without a lock file is not ours to judge.
        fs::create_dir(b.join("stray")).unwrap();
        assert_eq!(sweep(&b), 1);
        assert!(live.root().join("f").exists());
        assert!(!b.join("dead").exists() && !b.join("dead.lock").exists());
        assert!(b.join("stray").exists());
        let root = live.root().to_path_buf();
        drop(live);
        assert!(!root.exists() && !b.join("live.lock").exists());
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_lock_held_by_another_process_is_not_swept() {
        let b = fresh();
        fs::create_dir(b.join("other")).unwrap();
        let lock = b.join("other.lock");
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
        assert!(b.join("other").exists());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(sweep(&b), 1, "a killed holder's folder goes");
        assert!(!b.join("other").exists());
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_base_of_another_kind_is_refused() {
        let f = std::env::temp_dir().join(format!("ubunye-staging-file-{}", uuid::Uuid::new_v4()));
        fs::write(&f, "").unwrap();
        let e = Staging::make(&f, "r").unwrap_err();
        assert!(e.to_string().contains("not a folder of this user's"), "{e}");
        fs::remove_file(&f).unwrap();
    }
}
