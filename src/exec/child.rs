//! The child process of `ubunye exec`: started with the outputs in its
//! environment, killed if `ubunye exec` dies (`PR_SET_PDEATHSIG`), sent the
//! SIGINT/SIGTERM/SIGHUP that `ubunye exec` receives, and waited for; then
//! every process it left behind is stopped and reaped (see `reap.rs`).

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};

use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;

use crate::error::Unstartable;

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChildEnd {
    /// Its exit code, or 128 + the signal that killed it.
    pub code: i32,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// The first signal `ubunye exec` received (and passed on) while it ran.
    pub interrupted_by: Option<i32>,
    /// Processes it left running when it exited, stopped before anything landed.
    pub left_behind: usize,
    /// Of those, how many could not be stopped (they kept forking faster than
    /// they could be killed): nothing may land while they run.
    pub unstopped: usize,
}

impl ChildEnd {
    /// Whether the run may land: exit 0, not interrupted, nothing left running.
    pub fn success(&self) -> bool {
        self.code == 0 && self.interrupted_by.is_none() && self.unstopped == 0
    }
}

/// The name of a signal, for messages.
pub fn signal_name(sig: i32) -> String {
    match sig {
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        SIGHUP => "SIGHUP".into(),
        9 => "SIGKILL".into(),
        other => format!("signal {other}"),
    }
}

/// Where a command is found, as `execvp` looks: a path with a `/` as given,
/// else the first executable of that name on `PATH`. When there is none:
/// `NotExecutable` if something of that name is there but cannot be run,
/// else `NotFound`.
pub fn find_command(cmd: &std::ffi::OsStr) -> Result<std::path::PathBuf, Unstartable> {
    use std::os::unix::fs::PermissionsExt;
    let look = |p: &std::path::Path| match p.metadata() {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(_) => Err(Unstartable::NotExecutable),
        Err(_) => Err(Unstartable::NotFound),
    };
    let as_path = std::path::Path::new(cmd);
    if cmd.is_empty() {
        return Err(Unstartable::NotFound);
    }
    if as_path.as_os_str().as_encoded_bytes().contains(&b'/') {
        return look(as_path).map(|()| as_path.to_path_buf());
    }
    let path = std::env::var_os("PATH").ok_or(Unstartable::NotFound)?;
    let mut why = Unstartable::NotFound;
    for p in std::env::split_paths(&path).map(|d| d.join(cmd)) {
        match look(&p) {
            Ok(()) => return Ok(p),
            Err(Unstartable::NotExecutable) => why = Unstartable::NotExecutable,
            Err(Unstartable::NotFound) => {}
        }
    }
    Err(why)
}

/// [`find_command`], when only "can it be started" matters.
pub fn resolve_command(cmd: &std::ffi::OsStr) -> Option<std::path::PathBuf> {
    find_command(cmd).ok()
}

/// How a run of the command went: it ran and ended, or it never started.
#[derive(Debug)]
pub enum Ran {
    /// It ran and ended.
    Ended(ChildEnd),
    /// It could not be started: why, and the error that said so.
    NotStarted(Unstartable, std::io::Error),
}

/// Whether `sig` is ignored in this process (as it was inherited).
fn ignored(sig: i32) -> bool {
    // SAFETY: a query (no new action); `old` is written by the call.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Whether this process has a controlling terminal (it was started from one,
/// in the foreground or not).
fn has_terminal() -> bool {
    std::fs::File::open("/dev/tty").is_ok()
}

/// Wait for the command (`pid`) to exit, reaping every other child meanwhile:
/// as their subreaper, `ubunye exec` gets every process the command orphans
/// (`(job &)`, a helper that daemonizes), and each one that exits would stay a
/// zombie holding its pid until the command ends (review 4, finding 3).
/// `keeper`: the group keeper's pid, set to None if it is reaped here (its
/// pid may then be another process's: it must not be signalled).
fn wait_reaping(pid: i32, keeper: &mut Option<Child>) -> std::io::Result<std::process::ExitStatus> {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((p, status))) if p.as_raw_nonzero().get() == pid => {
                return Ok(std::process::ExitStatus::from_raw(status.as_raw()));
            }
            Ok(Some((p, _))) => {
                if keeper.as_ref().is_some_and(|k| k.id() as i32 == p.as_raw_nonzero().get()) {
                    *keeper = None;
                }
            }
            Ok(None) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Run `argv` with `env` added, passing on signals, until it exits. A start
/// that fails because of the program (no such file, not executable) is
/// [`Ran::NotStarted`]; any other failure is an error.
pub fn run(
    argv: &[OsString],
    env: &[(String, OsString)],
    keeper: Option<&std::path::Path>,
    timing: &crate::sys::Timing,
) -> std::io::Result<Ran> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // A group of its own, with a keeper that kills it if `ubunye exec` dies
    // (`sentinel.rs`), where there is no terminal (a scheduler, cron, a
    // service). Started from a terminal, the command stays in the shell's job
    // with `ubunye exec`, so that job control (Ctrl-C, Ctrl-Z, `fg` and `bg`,
    // reading the terminal) works on it as on any command.
    let own_group = !has_terminal();
    if own_group {
        cmd.process_group(0);
    }
    // No writer may outlive its lease: if `ubunye exec` dies, so does the child.
    crate::sys::die_with_parent(&mut cmd, rustix::process::Signal::KILL);
    // Whatever the command leaves running becomes this process's child, to be
    // stopped before its files are landed.
    crate::reap::become_subreaper()?;
    // A signal this process was started ignoring (`nohup`, a background job
    // of a shell without job control) stays ignored, for the command too.
    let mut caught: Vec<i32> = [SIGINT, SIGTERM, SIGHUP].into_iter().filter(|&s| !ignored(s)).collect();
    if own_group {
        caught.push(SIGCONT);
    }
    let mut signals = SignalsInfo::<WithOrigin>::new(caught)?;
    // Once the command is reaped its pid may be another process's: nothing is
    // passed on any more.
    let reaped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handle = signals.handle();
    let interrupted: Arc<Mutex<Option<i32>>> = Arc::new(Mutex::new(None));
    let spawned = cmd.spawn();
    let pid = match &spawned {
        Ok(c) => c.id() as i32,
        Err(_) => 0,
    };
    // The keeper of the command's own group: kills it whole if exec dies.
    let mut keeper = match keeper {
        Some(program) if own_group && pid > 0 => super::sentinel::start(program, pid, env),
        _ => None,
    };
    let forwarder = {
        let (interrupted, reaped) = (interrupted.clone(), reaped.clone());
        std::thread::spawn(move || {
            let send = |sig: i32| {
                if let (false, Some(p), Some(s)) = (
                    reaped.load(std::sync::atomic::Ordering::SeqCst),
                    rustix::process::Pid::from_raw(pid),
                    rustix::process::Signal::from_named_raw(sig),
                ) {
                    let _ = rustix::process::kill_process(p, s);
                }
            };
            for origin in &mut signals {
                let sig = origin.signal;
                if sig == SIGCONT {
                    // `timeout`, a scheduler or `fg` continued exec's group: the
                    // command, in a group of its own, is continued too.
                    send(SIGCONT);
                    continue;
                }
                interrupted.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(sig);
                // A SIGINT from the terminal reached the whole foreground process
                // group, the child included: passing it on again would deliver it
                // twice. Anything sent to `ubunye exec` alone is passed on, with a
                // SIGCONT after it, as `timeout` does: a stopped command gets it.
                let from_terminal = sig == SIGINT && matches!(origin.cause, Cause::Kernel) && !own_group;
                if !from_terminal {
                    send(sig);
                    if own_group {
                        send(SIGCONT);
                    }
                }
            }
        })
    };
    let not_started = spawned.as_ref().err().and_then(Unstartable::of_spawn_error);
    let result = spawned.and_then(|c: Child| wait_reaping(c.id() as i32, &mut keeper));
    reaped.store(true, std::sync::atomic::Ordering::SeqCst);
    // The keeper stays while what the command left is stopped: a SIGKILL of
    // exec during the grace still takes the group with it (where the kernel
    // cannot list our children, it goes first).
    if !crate::reap::can_list_children() {
        if let Some(k) = keeper.take() {
            super::sentinel::stop(k);
        }
    }
    let keeper_pid = keeper.as_ref().map(|k| k.id() as i32);
    let stopped = if result.is_ok() {
        crate::reap::stop_descendants(timing.exec_grace, timing.kill_for, keeper_pid)
    } else {
        Default::default()
    };
    // Reaped already (something killed it): its pid may be another process's.
    if let Some(k) = keeper.filter(|_| !stopped.keeper_reaped) {
        super::sentinel::stop(k);
    }
    handle.close();
    let _ = forwarder.join();
    let status = match (result, not_started) {
        (Err(e), Some(why)) => return Ok(Ran::NotStarted(why, e)),
        (result, _) => result?,
    };
    let signal = status.signal();
    let code = status.code().unwrap_or_else(|| 128 + signal.unwrap_or(0));
    let interrupted_by = *interrupted.lock().unwrap_or_else(|e| e.into_inner());
    Ok(Ran::Ended(ChildEnd { code, signal, interrupted_by, left_behind: stopped.found, unstopped: stopped.left }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errno of a real failed start, not its text, says 127 or 126.
    #[test]
    fn a_failed_start_is_told_by_its_errno() {
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("plain.sh");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let start = |p: &std::path::Path| Command::new(p).spawn().map(|_| ()).unwrap_err();
        let missing = start(&d.path().join("missing"));
        assert_eq!(Unstartable::of_spawn_error(&missing), Some(Unstartable::NotFound), "{missing}");
        for p in [plain.as_path(), d.path()] {
            let e = start(p);
            assert_eq!(Unstartable::of_spawn_error(&e), Some(Unstartable::NotExecutable), "{}: {e}", p.display());
        }
        assert_eq!(Unstartable::of_spawn_error(&std::io::Error::other("parent gone")), None);
        assert_eq!(Unstartable::NotFound.exit_code(), 127);
        assert_eq!(Unstartable::NotExecutable.exit_code(), 126);
        // As execvp looks: on PATH, a name that is there but not executable is 126.
        assert_eq!(find_command(plain.as_os_str()), Err(Unstartable::NotExecutable));
        assert_eq!(find_command(std::ffi::OsStr::new("/no/such/thing")), Err(Unstartable::NotFound));
        assert!(find_command(std::ffi::OsStr::new("sh")).is_ok());
    }
}
