//! The peer's captured fixtures (`fixtures/peer/<name>`), copied to a temp
//! folder with every file's mtime restored from its MANIFEST.json, and their
//! task and batches.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ubunye::layout::TaskPath;
use ubunye::vars::{Variables, cli_variables};

/// Every captured fixture, by name.
pub const FIXTURES: &[&str] = &[
    "dead-before-commit",
    "dead-before-commit-recovered",
    "dead-killed",
    "dead-spark-staged",
    "dead-spark-staged-taken-over",
    "finished",
    "finished-rerun",
    "kept",
    "kept-recovered",
    "live",
    "orphan",
    "orphan-adopted",
    "rerun-pending",
    "rerun-pending-kept",
    "rerun-pending-recovered",
    "resumed",
    "taken-over",
    "taken-over-done",
    "takeover-refused-in-use",
];

/// The fixtures' task.
pub const TASK: &str = "demo/sales/ingest";

/// [`TASK`], parsed.
pub fn task() -> TaskPath {
    TaskPath::parse(TASK).unwrap()
}

/// The fixtures' variables for the batch of `dt` (mode DEV), as `--dt` gives them.
pub fn vars(dt: &str) -> Variables {
    cli_variables(Some(dt), None, "DEV", &[]).unwrap()
}

/// The batch key of the fixtures' task for `dt`, as both engines make it.
pub fn key_of(dt: &str) -> String {
    ubunye::key::batch_key(TASK, &vars(dt)).unwrap()
}

/// The repository's root, found from this crate's own place
/// (`tests/testkit`), whichever crate's test calls.
pub fn root() -> PathBuf {
    let me = Path::new(env!("CARGO_MANIFEST_DIR"));
    me.parent().and_then(Path::parent).expect("tests/testkit lies two folders below the root").to_path_buf()
}

/// `fixtures/peer/<name>`.
pub fn fixture_dir(name: &str) -> PathBuf {
    root().join("fixtures/peer").join(name)
}

/// Copy the folder `from` to `to`, symbolic links as links.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            copy_tree(&e.path(), &t);
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(e.path()).unwrap(), &t).unwrap();
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// Set `path`'s mtime (and atime) to `t`, to the nanosecond; a link's own.
pub fn try_set_mtime(path: &Path, t: SystemTime) -> std::io::Result<()> {
    let d = t.duration_since(UNIX_EPOCH).map_err(std::io::Error::other)?;
    let ts = rustix::fs::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: d.subsec_nanos() as _ };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &rustix::fs::Timestamps { last_access: ts, last_modification: ts },
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )?;
    Ok(())
}

/// [`try_set_mtime`], failing the test when it cannot.
pub fn set_mtime(path: &Path, t: SystemTime) {
    try_set_mtime(path, t).unwrap_or_else(|e| panic!("set the mtime of {}: {e}", path.display()));
}

/// A fixture's MANIFEST.json.
pub struct Manifest {
    pub json: serde_json::Value,
}

impl Manifest {
    /// When the peer's state was captured.
    pub fn captured_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs_f64(self.json["captured_at_epoch"].as_f64().unwrap())
    }
    /// The recorded mtime of the file at `rel` (below `uc`).
    pub fn mtime(&self, rel: &str) -> SystemTime {
        let f = self.json["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == rel)
            .unwrap_or_else(|| panic!("{rel} not in manifest"));
        UNIX_EPOCH + Duration::from_nanos(f["mtime_ns"].as_u64().unwrap())
    }
    /// Every file the manifest records, below `uc`.
    pub fn paths(&self) -> Vec<String> {
        self.json["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
    }
}

/// Copy `fixtures/peer/<name>/uc` to a temp folder and restore every file's
/// mtime from the manifest. Returns (tempdir, uc path, manifest).
pub fn fixture(name: &str) -> (tempfile::TempDir, PathBuf, Manifest) {
    fixture_in(tempfile::tempdir().unwrap(), name)
}

/// [`fixture`], copied to `<dir>/uc` (for a test that needs the temp folder
/// made its own way).
pub fn fixture_in(dir: tempfile::TempDir, name: &str) -> (tempfile::TempDir, PathBuf, Manifest) {
    let uc = dir.path().join("uc");
    copy_tree(&fixture_dir(name).join("uc"), &uc);
    let manifest = Manifest {
        json: serde_json::from_str(&fs::read_to_string(fixture_dir(name).join("MANIFEST.json")).unwrap()).unwrap(),
    };
    for p in manifest.paths() {
        set_mtime(&uc.join(&p), manifest.mtime(&p));
    }
    (dir, uc, manifest)
}
