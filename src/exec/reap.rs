//! Processes a command leaves behind. No writer may outlive its run: a
//! background process still writing into a staging folder after it was landed
//! would recreate it, unclaimed, and one still holding a landed file open could
//! change it after the run committed.
//!
//! While `ubunye exec` lives it is the command's *subreaper*
//! (`PR_SET_CHILD_SUBREAPER`): every process the command leaves behind becomes
//! its child when its own parent exits, wherever it was started from. When the
//! command exits, every process still below `ubunye exec` is sent SIGTERM, given
//! a short grace (`UBUNYE_EXEC_GRACE`, default 2 s) and then SIGKILL, and reaped,
//! before anything is landed. If `ubunye exec` itself is killed, the command
//! dies with it (`PR_SET_PDEATHSIG`) and the run that takes the dead run over
//! stops, on the same host, every process that still carries the dead run's id
//! in its environment (`UBUNYE_RUN_ID`), before it takes anything back.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

/// How long the processes a command left get between SIGTERM and SIGKILL.
pub fn grace() -> Duration {
    std::env::var("UBUNYE_EXEC_GRACE")
        .ok()
        .and_then(|v| humantime::parse_duration(v.trim()).ok())
        .unwrap_or(Duration::from_secs(2))
}

/// Make this process the reaper of its descendants' orphans.
pub fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(Into::into)
}

/// (pid, parent pid, state) of every process in `/proc`.
fn processes() -> Vec<(i32, i32, char)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut f = rest.split_whitespace();
        let state = f.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let Some(ppid) = f.next().and_then(|s| s.parse::<i32>().ok()) else { continue };
        out.push((pid, ppid, state));
    }
    out
}

/// Every live (not zombie) process below `root`.
fn descendants(root: i32) -> Vec<i32> {
    let procs = processes();
    let mut children: HashMap<i32, Vec<(i32, char)>> = HashMap::new();
    for (pid, ppid, state) in procs {
        children.entry(ppid).or_default().push((pid, state));
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &(c, state) in children.get(&p).into_iter().flatten() {
            if c != root && !out.contains(&c) {
                if state != 'Z' {
                    out.push(c);
                }
                todo.push(c);
            }
        }
    }
    out
}

fn signal_all(pids: &[i32], sig: Signal) {
    for &p in pids {
        if let Some(pid) = Pid::from_raw(p) {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }
}

/// Reap every child of ours that has exited.
fn reap() {
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// Stop every process still below this one: SIGTERM, up to `grace` for them
/// to exit, then SIGKILL; each reaped. Returns how many there were.
pub fn stop_descendants(grace: Duration) -> usize {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut seen: Vec<i32> = Vec::new();
    let start = Instant::now();
    let mut killing = false;
    // Bounded: a process that forks faster than it is killed is left after 10 s.
    while start.elapsed() < grace + Duration::from_secs(10) {
        reap();
        let left = descendants(me);
        if left.is_empty() {
            break;
        }
        for p in &left {
            if !seen.contains(p) {
                seen.push(*p);
                if !killing {
                    signal_all(&[*p], Signal::TERM);
                }
            }
        }
        if !killing && start.elapsed() >= grace {
            killing = true;
        }
        if killing {
            signal_all(&left, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    reap();
    seen.len()
}

/// Whether `/proc/<pid>/environ` holds `UBUNYE_RUN_ID=<run_id>`.
fn carries_run(pid: i32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle))
}

/// A dead run's processes on this host, still alive (a command's background
/// processes outlive a SIGKILLed `ubunye exec`): every process whose environment
/// names the run (`UBUNYE_RUN_ID`) is sent SIGKILL (the run is over; there is
/// nothing to let them finish), until none is left. Returns how many there were.
pub fn stop_run_processes(run_id: &str) -> usize {
    if run_id.is_empty() {
        return 0;
    }
    let needle = format!("UBUNYE_RUN_ID={run_id}").into_bytes();
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut seen: Vec<i32> = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let left: Vec<i32> = processes()
            .into_iter()
            .filter(|&(pid, _, state)| pid != me && state != 'Z' && carries_run(pid, &needle))
            .map(|(pid, _, _)| pid)
            .collect();
        if left.is_empty() {
            break;
        }
        signal_all(&left, Signal::KILL);
        for p in left {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    seen.len()
}
