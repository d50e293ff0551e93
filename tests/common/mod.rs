//! The library's test helpers: what both crates' tests share comes from the
//! testkit (`tests/testkit`: fixtures with their mtimes restored, a `Sys` with
//! a pinned host, a fake clock and a fake process table, folder pictures);
//! here, what only these tests use: a run of the fixtures' ingest task through
//! the engine, and the kill tests' driver.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

use ubunye::append::StagedAppend;
use ubunye::lease::Ended;
use ubunye::sys::Sys;
use ubunye::{Acquired, LeaseSpec, RunLease};
pub use ubunye_testkit::*;

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

pub mod bucket;
pub mod driver;

/// A test's name as the harness knows it, for a test binary that re-executes
/// itself to run one test (`--exact`): `module_path!()` less the crate's name,
/// then the function (`kill::driver_entry` in tests/slow).
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}
