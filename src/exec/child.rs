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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
    /// It ran past its maximum runtime (`--timeout`) and was stopped.
    pub timed_out: bool,
    /// Its log could not be written (the file and why); the run went on.
    pub log_failed: Option<String>,
}

impl ChildEnd {
    /// Whether the run may land: exit 0, not interrupted, not timed out,
    /// nothing left running.
    pub fn success(&self) -> bool {
        self.code == 0 && self.interrupted_by.is_none() && self.unstopped == 0 && !self.timed_out
    }
}

/// How the command is run, besides its arguments and environment.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// This program, to start as the command's group keeper (`sentinel.rs`).
    pub keeper: Option<&'a std::path::Path>,
    /// The grace before SIGKILL, and how long a kill may take.
    pub timing: &'a crate::sys::Timing,
    /// Where its stdout and stderr are also kept (with no terminal only).
    pub log: Option<super::tee::LogSpec>,
    /// Its maximum runtime: past it, it is stopped as a takeover stops a
    /// dead run (SIGTERM to its group, SIGKILL after the grace).
    pub timeout: Option<std::time::Duration>,
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
/// zombie holding its pid until the command ends.
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
pub fn run(argv: &[OsString], env: &[(String, OsString)], opts: Options<'_>) -> std::io::Result<Ran> {
    let (keeper, timing) = (opts.keeper, opts.timing);
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
    let log = opts.log.filter(|_| own_group);
    if log.is_some() {
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
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
    let mut spawned = cmd.spawn();
    let pid = match &spawned {
        Ok(c) => c.id() as i32,
        Err(_) => 0,
    };
    let tee = match (&mut spawned, log) {
        (Ok(c), Some(spec)) => Some(super::tee::Tee::start(spec, c.stdout.take(), c.stderr.take())),
        _ => None,
    };
    let timer = opts.timeout.filter(|_| pid > 0).map(|t| Timer::start(pid, own_group, t, timing.exec_grace));
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
    let timed_out = timer.is_some_and(Timer::stop);
    // The keeper stays while what the command left is stopped: a SIGKILL of
    // exec during the grace still takes the group with it (where the kernel
    // cannot list our children, it goes first).
    if !crate::reap::can_list_children()
        && let Some(k) = keeper.take()
    {
        super::sentinel::stop(k);
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
    // Its pipes close once it and all it left have gone: a process that
    // could not be stopped may hold one, so the wait is bounded.
    let log_failed = tee.and_then(|t| t.finish(timing.exec_grace.max(std::time::Duration::from_secs(1))));
    let status = match (result, not_started) {
        (Err(e), Some(why)) => return Ok(Ran::NotStarted(why, e)),
        (result, _) => result?,
    };
    let signal = status.signal();
    let code = status.code().unwrap_or_else(|| 128 + signal.unwrap_or(0));
    let interrupted_by = *interrupted.lock().unwrap_or_else(|e| e.into_inner());
    Ok(Ran::Ended(ChildEnd {
        code,
        signal,
        interrupted_by,
        left_behind: stopped.found,
        unstopped: stopped.left,
        timed_out,
        log_failed,
    }))
}

/// The command's maximum runtime: a thread that, at the deadline, sends
/// SIGTERM to its group (to it alone when it shares exec's), then SIGKILL
/// after the grace, unless it was reaped first.
struct Timer {
    done: Arc<(Mutex<bool>, std::sync::Condvar)>,
    fired: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Timer {
    fn start(pid: i32, group: bool, after: std::time::Duration, grace: std::time::Duration) -> Timer {
        let done = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, f) = (done.clone(), fired.clone());
        let thread = std::thread::spawn(move || {
            // Waits until `until` or until the command is reaped: true if reaped.
            let reaped_by = |until: std::time::Instant| {
                let (lock, cv) = &*d;
                let mut reaped = lock.lock().unwrap_or_else(|e| e.into_inner());
                while !*reaped {
                    let left = until.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    reaped = cv.wait_timeout(reaped, left).unwrap_or_else(|e| e.into_inner()).0;
                }
                *reaped
            };
            let send = |sig: rustix::process::Signal| {
                // Sent while the command is not reaped (the lock held), so
                // its pid is still its own.
                let reaped = d.0.lock().unwrap_or_else(|e| e.into_inner());
                if *reaped {
                    return;
                }
                if let Some(p) = rustix::process::Pid::from_raw(pid) {
                    let _ = if group {
                        rustix::process::kill_process_group(p, sig)
                    } else {
                        rustix::process::kill_process(p, sig)
                    };
                }
            };
            if reaped_by(std::time::Instant::now() + after) {
                return;
            }
            f.store(true, std::sync::atomic::Ordering::SeqCst);
            send(rustix::process::Signal::TERM);
            if !group {
                send(rustix::process::Signal::CONT);
            }
            if !reaped_by(std::time::Instant::now() + grace) {
                send(rustix::process::Signal::KILL);
            }
        });
        Timer { done, fired, thread }
    }

    /// The command was reaped: stop the timer. Whether it fired.
    fn stop(self) -> bool {
        {
            let (lock, cv) = &*self.done;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        let _ = self.thread.join();
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
    }
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
