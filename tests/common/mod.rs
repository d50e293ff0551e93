//! Shared test helpers: peer fixtures with their mtimes restored, and a `Sys`
//! with a pinned host, a fake clock and a fake process table.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ubunye::layout::TaskPath;
use ubunye::sys::{Hook, Sys, Timing};
use ubunye::vars::{Variables, cli_variables};
use ubunye_testkit::{FakeClock, FakeProcs};

pub const FIXTURE_HOST: &str = "vm|pid:[4026531836]";

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture_dir(name: &str) -> PathBuf {
    root().join("fixtures/peer").join(name)
}

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

pub fn set_mtime(path: &Path, t: SystemTime) {
    let d = t.duration_since(UNIX_EPOCH).unwrap();
    let ts = rustix::fs::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: d.subsec_nanos() as _ };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &rustix::fs::Timestamps { last_access: ts, last_modification: ts },
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// A fixture's MANIFEST.json.
pub struct Manifest {
    pub json: serde_json::Value,
}

impl Manifest {
    pub fn captured_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs_f64(self.json["captured_at_epoch"].as_f64().unwrap())
    }
    pub fn mtime(&self, rel: &str) -> SystemTime {
        let f = self.json["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == rel)
            .unwrap_or_else(|| panic!("{rel} not in manifest"));
        UNIX_EPOCH + Duration::from_nanos(f["mtime_ns"].as_u64().unwrap())
    }
    pub fn paths(&self) -> Vec<String> {
        self.json["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
    }
}

/// Copy `fixtures/peer/<name>/uc` to a temp folder and restore every file's
/// mtime from the manifest. Returns (tempdir, uc path, manifest).
pub fn fixture(name: &str) -> (tempfile::TempDir, PathBuf, Manifest) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    copy_tree(&fixture_dir(name).join("uc"), &uc);
    let manifest = Manifest {
        json: serde_json::from_str(&fs::read_to_string(fixture_dir(name).join("MANIFEST.json")).unwrap()).unwrap(),
    };
    for p in manifest.paths() {
        set_mtime(&uc.join(&p), manifest.mtime(&p));
    }
    (d, uc, manifest)
}

pub fn task() -> TaskPath {
    TaskPath::parse("demo/sales/ingest").unwrap()
}

pub fn vars(dt: &str) -> Variables {
    cli_variables(Some(dt), None, "DEV", &[]).unwrap()
}

pub fn fast_timing() -> Timing {
    Timing {
        settle: Duration::from_millis(20),
        busy_for: Duration::from_millis(20),
        heartbeat_every: Duration::from_secs(3600),
        ..Timing::peer()
    }
}

/// A Sys on `host` at time `now`, with an empty process table (every recorded
/// pid is gone) and short waits. This process's real pid is kept.
pub fn fake_sys(host: &str, now: SystemTime) -> (Sys, Arc<FakeClock>, Arc<FakeProcs>) {
    let clock = FakeClock::at(now);
    let procs = FakeProcs::new();
    let sys = Sys {
        clock: clock.clone(),
        procs: procs.clone(),
        host: host.into(),
        pid: std::process::id() as i32,
        timing: fast_timing(),
        knobs: Default::default(),
        hook: Hook::default(),
    };
    (sys, clock, procs)
}

/// Every file under `dir`, relative, sorted.
pub fn files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(rd) = fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A hash of every file's path and bytes under `dir` (for "nothing changed").
pub fn tree_hash(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir)
        .into_iter()
        .map(|f| {
            let b = fs::read(dir.join(&f)).unwrap_or_default();
            (f, b)
        })
        .collect()
}

use ubunye::append::StagedAppend;
use ubunye::lease::Ended;
use ubunye::{Acquired, LeaseSpec, RunLease};

/// What `ubunye run` of the fixture's ingest task does, through this engine:
/// acquire, the finished check, then an append of `files` (name, content) to
/// out/events through a staging folder, and the end of the run.
pub fn append_run(
    uc: &Path,
    sys: Sys,
    dt: &str,
    rerun: bool,
    files: &[(&str, &str)],
) -> ubunye::Result<(Acquired, Ended)> {
    run_with(uc, sys, dt, rerun, files, false)
}

/// [`append_run`] as the peer's pandas writer appends: one claim and one rename
/// per file, from a hidden sibling folder, with no `staging` in the lease.
pub fn append_run_per_file(
    uc: &Path,
    sys: Sys,
    dt: &str,
    rerun: bool,
    files: &[(&str, &str)],
) -> ubunye::Result<(Acquired, Ended)> {
    run_with(uc, sys, dt, rerun, files, true)
}

fn run_with(
    uc: &Path,
    sys: Sys,
    dt: &str,
    rerun: bool,
    files: &[(&str, &str)],
    per_file: bool,
) -> ubunye::Result<(Acquired, Ended)> {
    let spec = LeaseSpec::new(uc, task(), vars(dt), uuid::Uuid::new_v4().to_string());
    let (lease, acquired) = RunLease::acquire(spec, sys)?;
    if let Err(e) = lease.check_finished(&["events".to_string()], rerun) {
        lease.release();
        return Err(e);
    }
    lease.writing("events", true, true)?;
    if per_file {
        let out = uc.join("out/events");
        let side = uc.join("out").join(format!(".events.ubunye-{}", ubunye::fsx::hex12()));
        fs::create_dir_all(&side).unwrap();
        for (name, content) in files {
            fs::write(side.join(name), content).unwrap();
            let target = out.join(name);
            lease.claim("events", &target)?;
            fs::create_dir_all(&out).unwrap();
            fs::rename(side.join(name), &target).unwrap();
            lease.landed(&target)?;
        }
        lease.all_landed(&files.iter().map(|(n, _)| out.join(n)).collect::<Vec<_>>())?;
        fs::write(out.join("_SUCCESS"), "").unwrap();
        fs::remove_dir(&side).unwrap();
        lease.written("events")?;
        let ended = lease.end(true)?;
        return Ok((acquired, ended));
    }
    let st = StagedAppend::begin(&lease, "events", &uc.join("out/events"))?;
    for (name, content) in files {
        let p = st.staging.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }
    st.land(&lease)?;
    lease.written("events")?;
    let ended = lease.end(true)?;
    Ok((acquired, ended))
}

pub mod driver;
