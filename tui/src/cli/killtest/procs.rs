//! The processes killtest starts: each in a session of its own, so that a
//! kill reaches `ubunye exec`, its command's process group, and whatever
//! that started in the background, all at once, as a crash would.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by SIGINT or SIGTERM: stop everything started, leave the sandbox.
#[derive(Clone, Default)]
pub struct Stop(pub Arc<AtomicBool>);

impl Stop {
    /// A flag that SIGINT and SIGTERM raise.
    pub fn on_signals() -> Stop {
        let s = Stop::default();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&s.0));
        }
        s
    }
    /// Whether a stop was asked for.
    pub fn asked(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Interrupted by the user: everything started has been killed.
#[derive(Debug)]
pub struct Interrupted;

/// How a process started by [`run`] ended.
#[derive(Debug)]
pub struct Ended {
    /// Killed by us at the moment drawn (else it ended by itself).
    pub killed: bool,
    /// Its status (a killed one's: SIGKILL).
    pub status: ExitStatus,
    /// The last lines of its stderr.
    pub stderr: String,
    /// How long it ran.
    pub took: Duration,
    /// Processes that left its session and outlived it ([`kill_session`]).
    pub escaped: Vec<String>,
}

/// Every process whose session is `sid` (from /proc).
fn session_members(sid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|s| {
                // After the command's name in parentheses: state ppid pgrp session.
                s.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(3)?.parse::<i32>().ok())
                    == Some(sid)
            })
        })
        .collect()
}

/// Make this process the subreaper of everything it starts: a process that
/// leaves its session (`setsid`, a daemon's double fork) is then still our
/// descendant when its parent dies, never init's, and [`kill_session`] finds
/// it (review 16, F1).
pub fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Processes whose parent is this one, other than `leader`.
fn own_children(leader: i32) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != leader)
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|s| {
                s.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok()) == Some(me)
            })
        })
        .collect()
}

/// SIGKILL every process of session `sid`, and every process that left it
/// but is still ours (reparented to us, the subreaper), until none is left
/// (bounded: 2 s of tries); those are reaped here, the leader by its caller.
///
/// Returns the processes found outside the session but still ours, alive:
/// each `pid (name)`. They escaped the run (a new session), so neither `ubunye
/// exec` nor a takeover could stop them.
pub fn kill_session(child: &mut Child) -> Vec<String> {
    let sid = child.id() as i32;
    let _ = child.kill();
    let start = Instant::now();
    let mut escaped: Vec<String> = Vec::new();
    loop {
        let mut left: Vec<i32> = session_members(sid).into_iter().filter(|&p| p != sid).collect();
        // Ours by reparenting (we are the subreaper) but no longer in the
        // session: those escaped it. Members reparented to us are not.
        let strays: Vec<i32> = own_children(sid).into_iter().filter(|p| !left.contains(p)).collect();
        for &p in &strays {
            // Reap what is already dead; kill what is not.
            if let Some(pid) = rustix::process::Pid::from_raw(p) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
        for &p in &strays {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
            let zombie = stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            let name = stat.split_once('(').and_then(|(_, r)| r.rsplit_once(')')).map_or("?", |(n, _)| n);
            let line = format!("pid {p} ({name})");
            if !zombie && !escaped.contains(&line) {
                escaped.push(line);
            }
        }
        left.extend(strays);
        for &p in &left {
            if let Some(pid) = rustix::process::Pid::from_raw(p) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        // A zombie (exited, not yet reaped by its parent) is already dead.
        let alive = left.iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')).map(|z| !z))
                .unwrap_or(false)
        });
        if !alive || start.elapsed() > Duration::from_secs(2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for p in own_children(sid) {
        if let Some(pid) = rustix::process::Pid::from_raw(p) {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
    }
    escaped
}

/// Start `cmd` in a session of its own, stderr captured; kill its session
/// after `kill_at` (if it is still running then), else wait for it. A stop
/// asked for kills it too and returns [`Interrupted`].
pub fn run(mut cmd: Command, kill_at: Option<Duration>, stop: &Stop) -> Result<Ended, Interrupted> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| rustix::process::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            use std::os::unix::process::ExitStatusExt;
            return Ok(Ended {
                killed: false,
                status: ExitStatus::from_raw(127 << 8),
                stderr: format!("cannot start: {e}"),
                took: start.elapsed(),
                escaped: Vec::new(),
            });
        }
    };
    // Read stderr on a thread, so that a chatty command never blocks on a full pipe.
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let mut killed = false;
    let escaped: Vec<String>;
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            // Its session may hold more (a background job exec stops itself;
            // a bare command's is ours to stop).
            escaped = kill_session(&mut child);
            break st;
        }
        if stop.asked() {
            kill_session(&mut child);
            let _ = child.wait();
            let _ = reader.join();
            return Err(Interrupted);
        }
        if kill_at.is_some_and(|at| start.elapsed() >= at) {
            escaped = kill_session(&mut child);
            killed = true;
            break child.wait().unwrap_or_else(|_| {
                use std::os::unix::process::ExitStatusExt;
                ExitStatus::from_raw(9)
            });
        }
        std::thread::sleep(Duration::from_micros(500));
    };
    let took = start.elapsed();
    let text = reader.join().unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let stderr = lines[lines.len().saturating_sub(5)..].join("\n");
    Ok(Ended { killed, status, stderr, took, escaped })
}
