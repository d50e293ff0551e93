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

/// One process as its `/proc/<pid>/stat` says.
struct Proc {
    pid: i32,
    ppid: i32,
    sid: i32,
    zombie: bool,
    name: String,
}

/// Every process, read once from /proc (those that vanish while it reads are
/// left out).
fn processes() -> Vec<Proc> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (name) state ppid pgrp session ...`; the name may hold spaces and ')'.
            let (head, rest) = s.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(Proc {
                pid,
                ppid: f.get(1)?.parse().ok()?,
                sid: f.get(3)?.parse().ok()?,
                zombie: f.first() == Some(&"Z"),
                name,
            })
        })
        .collect()
}

/// Make this process the subreaper of everything it starts: a process that
/// leaves its session (`setsid`, a daemon's double fork) is then still our
/// descendant when its parent dies, never init's, and [`kill_session`] finds
/// it.
pub fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
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
    let me = std::process::id() as i32;
    let reap = |pid: i32| {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
    };
    loop {
        // Members of the session, and processes that left it but are ours
        // by reparenting (we are the subreaper): those escaped it.
        let all = processes();
        let left: Vec<&Proc> = all.iter().filter(|p| p.pid != sid && (p.sid == sid || p.ppid == me)).collect();
        for p in left.iter().filter(|p| p.sid != sid) {
            reap(p.pid);
            let line = format!("pid {} ({})", p.pid, p.name);
            if !p.zombie && !escaped.contains(&line) {
                escaped.push(line);
            }
        }
        for p in left.iter().filter(|p| !p.zombie) {
            if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        // A zombie (exited, not yet reaped by its parent) is already dead.
        if left.iter().all(|p| p.zombie) || start.elapsed() > Duration::from_secs(2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for p in processes().iter().filter(|p| p.ppid == me && p.pid != sid) {
        reap(p.pid);
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
