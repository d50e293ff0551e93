//! Helpers only the binary's tests use: the binary, run from beside a use
//! case and judging from another host, or on a terminal. What both crates'
//! tests share (the peer's fixtures with their mtimes restored, folder
//! pictures, the normalised picture of a use case to compare with the peer's,
//! the fakes) comes from the testkit (`tests/testkit`).
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
pub use ubunye_testkit::*;

pub mod dash;
pub mod killing;
pub mod prom;
pub mod store_dash;
pub mod tmux;
pub mod trees;

/// The binary under test (`UBUNYE_TEST_BIN` runs a test against another
/// build, e.g. the one before a fix, to see it fail).
pub fn bin() -> PathBuf {
    std::env::var_os("UBUNYE_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ubunye")), PathBuf::from)
}

/// An empty use case `uc` (with an `out/` folder) in a temp folder.
pub fn empty_use_case() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join("out")).unwrap();
    (d, uc)
}

/// The real peer's `ubunye` (`UBUNYE_PEER`, which scripts/test sets).
/// None, with a SKIPPED line, when it is not set up; a failure instead under
/// `UBUNYE_REQUIRE_PEER=1` (CI).
pub fn peer() -> Option<PathBuf> {
    found_or_skipped(std::env::var_os("UBUNYE_PEER").map(PathBuf::from).filter(|p| p.exists()))
}

/// The peer's Python (`$(dirname $UBUNYE_PEER)/python`), found as [`peer`] is.
pub fn peer_python() -> Option<PathBuf> {
    let peer = std::env::var_os("UBUNYE_PEER").map(PathBuf::from).filter(|p| p.exists());
    found_or_skipped(peer.and_then(|p| p.parent().map(|d| d.join("python"))).filter(|p| p.exists()))
}

fn found_or_skipped(found: Option<PathBuf>) -> Option<PathBuf> {
    match found {
        Some(p) => Some(p),
        None if std::env::var("UBUNYE_REQUIRE_PEER").is_ok_and(|v| v == "1") => {
            panic!("UBUNYE_REQUIRE_PEER=1 but UBUNYE_PEER does not name the peer's ubunye: run scripts/peer-env")
        }
        None => {
            eprintln!("SKIPPED: the real peer is not set up (UBUNYE_PEER); scripts/test sets it up");
            None
        }
    }
}

/// The binary, run from beside `uc`, judging from another host (every fixture
/// lease is then judged by its age), with a short settle and no colour.
pub fn ubunye(uc: &Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_HOST", ELSEWHERE)
        .env("UBUNYE_TEST_SETTLE", "20ms")
        .env("NO_COLOR", "1");
    c
}

/// `ubunye ARGS` (a shell line of arguments) on a terminal `cols` wide, run
/// from `cwd` (util-linux `script` gives it the terminal); NO_COLOR and
/// CLICOLOR_FORCE unset, then `env` (a None removes); `keys` typed a second
/// in (`q` for top, `y\n` at a prompt). Its exit code and output, lines
/// without their `\r`; None, with a SKIPPED line, without `script`. Ended
/// after 20 s if it is still running.
pub fn on_a_terminal(
    cwd: &Path,
    args: &str,
    cols: u16,
    env: &[(&str, Option<&str>)],
    keys: Option<&str>,
) -> Option<(i32, String)> {
    use std::process::Stdio;
    let line = format!("stty cols {cols} rows 30; exec '{}' {args}", bin().display());
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => {
            eprintln!("SKIPPED: no `script` (util-linux) to give ubunye a terminal: {e}");
            return None;
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    if let Some(k) = keys {
        std::thread::sleep(Duration::from_millis(1000));
        use std::io::Write;
        stdin.write_all(k.as_bytes()).unwrap();
    }
    // A program that missed its key is ended, not waited for forever.
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let pid = rustix::process::Pid::from_child(&child);
    std::thread::spawn(move || {
        if watch.recv_timeout(Duration::from_secs(20)).is_err() {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    });
    let o = child.wait_with_output().unwrap();
    let _ = done.send(());
    Some((o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).replace('\r', "")))
}

/// SIGKILL `child` once `wait` has passed, unless it ended before: whether
/// it was killed (the kill tests' one move).
pub fn kill_after(child: &mut std::process::Child, wait: Duration) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < wait && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(1));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().unwrap();
        return true;
    }
    false
}
