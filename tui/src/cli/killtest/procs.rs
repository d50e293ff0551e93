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

/// SIGKILL every process of session `sid` until none is left (bounded: 2 s
/// of tries), the leader `child` reaped last.
pub fn kill_session(child: &mut Child) {
    let sid = child.id() as i32;
    let _ = child.kill();
    let start = Instant::now();
    loop {
        let left: Vec<i32> = session_members(sid).into_iter().filter(|&p| p != sid).collect();
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
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            // Its session may hold more (a background job exec stops itself;
            // a bare command's is ours to stop).
            kill_session(&mut child);
            break st;
        }
        if stop.asked() {
            kill_session(&mut child);
            let _ = child.wait();
            let _ = reader.join();
            return Err(Interrupted);
        }
        if kill_at.is_some_and(|at| start.elapsed() >= at) {
            kill_session(&mut child);
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
    Ok(Ended { killed, status, stderr, took })
}
