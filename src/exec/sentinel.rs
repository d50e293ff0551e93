//! The command's group keeper. When `ubunye exec` gives its command a process
//! group of its own (when it has no terminal, see `child.rs`), it also
//! starts, in that group, a small process of its own binary (`ubunye
//! __group-keeper <pid>`) that does nothing until `ubunye exec` dies: the
//! kernel then sends it SIGURG (`PR_SET_PDEATHSIG`), and it kills the whole
//! group at once (`kill(0, SIGKILL)`). So a SIGKILLed `ubunye exec` (an OOM
//! kill, a scheduler's `kill -9` of exec's own group) leaves none of its
//! command's processes running, even one that keeps changing its pid, on any
//! host, without waiting for a takeover. When the command ends normally, exec
//! kills the keeper first (SIGKILL: it does not catch that), then stops what
//! is left with the grace (`reap.rs`).
//!
//! SIGURG is ignored by default: if exec dies before the keeper has set up
//! its handler, the signal is lost, so the keeper also checks, once its
//! handler is in place, that its parent is still exec.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rustix::process::Signal;
use signal_hook::consts::SIGURG;

/// The hidden subcommand that runs the keeper.
pub const SUBCOMMAND: &str = "__group-keeper";

/// Start the keeper of group `group` (the command's pid), running `program`
/// (this binary). None when it cannot be started (the command already ended
/// and its group is gone, say): exec goes on without it.
pub fn start(program: &Path, group: i32, env: &[(String, OsString)]) -> Option<Child> {
    let exec_pid = rustix::process::getpid();
    let mut cmd = Command::new(program);
    cmd.arg(SUBCOMMAND)
        .arg(exec_pid.as_raw_nonzero().get().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(group);
    // It carries the run's id like the command, so that a takeover sees the
    // group as the run's alone.
    for (k, v) in env {
        cmd.env(k, v);
    }
    crate::sys::die_with_parent(&mut cmd, Signal::URG);
    cmd.spawn().ok()
}

/// Stop the keeper (the command ended normally) and reap it.
pub fn stop(mut keeper: Child) {
    let _ = keeper.kill();
    let _ = keeper.wait();
}

/// Whether this process was started as `ubunye exec` starts a keeper: in its
/// command's group (so never a group leader) and with the run's id. Typed by
/// hand, a keeper would kill the caller's own group.
pub fn may_keep() -> bool {
    // A group id of 0 is a group led from outside our pid namespace: never
    // the command's group, which exec makes inside it.
    let group = crate::sys::own_process_group();
    group > 0
        && group != rustix::process::getpid().as_raw_nonzero().get()
        && std::env::var_os("UBUNYE_RUN_ID").is_some_and(|v| !v.is_empty())
}

/// The keeper itself: wait until `ubunye exec` (`parent`) dies, then kill the
/// process group. Never returns.
pub fn keep(parent: &str) -> ! {
    let parent: Option<i32> = parent.parse().ok();
    // Nothing sent to the group may end the keeper (`kill -USR1 0` to reopen
    // logs, `kill -QUIT 0` for a thread dump): every signal that can be is
    // ignored, SIGURG (its wake-up) aside.
    for sig in 1..=64 {
        if ![libc::SIGKILL, libc::SIGSTOP, libc::SIGURG].contains(&sig) {
            // SAFETY: setting a disposition to SIG_IGN; an invalid number fails harmlessly.
            unsafe { libc::signal(sig, libc::SIG_IGN) };
        }
    }
    let gone = || rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != parent;
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGURG]) {
        while !gone() {
            // Woken by any of them; only a changed parent counts (SIGURG
            // comes when the parent has died, and then getppid says so).
            if signals.wait().next().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    } else {
        while !gone() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let _ = rustix::process::kill_current_process_group(Signal::KILL);
    // Not reached: the line above kills this process too.
    std::process::exit(0)
}
