//! A test-only file system for the power-cut test: it serves a
//! tree kept in memory over FUSE, remembers what each sync made durable,
//! and on a power cut comes back with only that ([`model`]). A mount is
//! made with `fusermount3` (Debian's `fuse3`) on `/dev/fuse`.
//!
//! [`Disk`] is the disk across power cuts: [`Disk::mount`] serves it at a
//! folder, [`Mounted::cut`] cuts the power (every request then fails with
//! EIO), and dropping the mount unmounts it; [`Disk::power_back`] keeps only
//! what was durable, for the next mount.

pub mod fuse;
pub mod model;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use fuse::{Control, CutFs};
pub use model::Tree;

/// The disk: a tree that outlives its mounts.
#[derive(Debug, Default)]
pub struct Disk {
    tree: Arc<Mutex<Tree>>,
}

/// A mount of a [`Disk`].
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    pub ctl: Arc<Control>,
    pub at: PathBuf,
}

/// Whether a FUSE mount can be made here: `/dev/fuse` and `fusermount3`.
pub fn available() -> Result<(), String> {
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse is missing".into());
    }
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").is_file()))
        .unwrap_or(false);
    if !found {
        return Err("fusermount3 is not installed (Debian: apt-get install fuse3)".into());
    }
    Ok(())
}

/// Whether a test that needs FUSE can run: false, with a loud SKIPPED line,
/// where FUSE is missing; a failure instead when UBUNYE_REQUIRE_FUSE=1 (CI).
pub fn fuse_or_skip(test: &str) -> bool {
    match available() {
        Ok(()) => true,
        Err(why) if std::env::var("UBUNYE_REQUIRE_FUSE").as_deref() == Ok("1") => {
            panic!("{test}: FUSE is required here (UBUNYE_REQUIRE_FUSE=1): {why}")
        }
        Err(why) => {
            eprintln!("\n*** {test}: SKIPPED: {why}. CI runs it (UBUNYE_REQUIRE_FUSE=1). ***\n");
            false
        }
    }
}

impl Disk {
    pub fn new() -> Disk {
        Disk::default()
    }

    /// Serve the disk at `at` (an empty folder).
    pub fn mount(&self, at: &Path) -> std::io::Result<Mounted> {
        let ctl = Arc::new(Control::default());
        let fs = CutFs { tree: self.tree.clone(), ctl: ctl.clone() };
        let mut cfg = fuser::Config::default();
        cfg.mount_options = vec![fuser::MountOption::FSName("ubunye-cutfs".into()), fuser::MountOption::NoAtime];
        let session = fuser::Session::new(fs, at, &cfg)?.spawn()?;
        Ok(Mounted { session: Some(session), ctl, at: at.to_path_buf() })
    }

    /// Everything durable as it is now (the setup before the runs).
    pub fn sync_all(&self) {
        self.tree.lock().unwrap_or_else(|p| p.into_inner()).sync_all();
    }

    /// The power comes back: only what was durable is on the disk. Call it
    /// with no mount up.
    pub fn power_back(&self) {
        self.power_back_after(&mut || false);
    }

    /// The power comes back after the page cache wrote back some of what
    /// was not synced (each inode `pick` chooses), in no order: how many.
    pub fn power_back_after(&self, pick: &mut dyn FnMut() -> bool) -> usize {
        let mut t = self.tree.lock().unwrap_or_else(|p| p.into_inner());
        let n = t.write_back(pick);
        *t = t.cut();
        n
    }
}

impl Disk {
    /// Every path on the disk now, or (`durable`) as a cut would leave it.
    pub fn paths(&self, durable: bool) -> Vec<String> {
        self.tree.lock().unwrap_or_else(|p| p.into_inner()).paths(durable)
    }
}

impl Mounted {
    /// Cut the power now: every request fails from here on.
    pub fn cut(&self) {
        self.ctl.cut_now();
    }

    /// Unmount (waiting for the session to end).
    pub fn unmount(mut self) -> std::io::Result<()> {
        match self.session.take() {
            Some(s) => s.umount_and_join(),
            None => Ok(()),
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
    }
}
