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
//!
//! Both sides use it: `exec` while its command runs, the lease's recovery
//! ([`stop_run_processes`]) when it takes a dead run over; so it sits beside
//! them rather than inside `exec`, which uses the lease.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};

mod procfs;
use procfs::{Life, Proc, carries_run, gone, group_of, life, processes, read_stat};

/// Make this process the reaper of its descendants' orphans.
pub fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(Into::into)
}

/// Every live (not zombie) process below `root`, from a scan of `/proc`.
fn descendants(root: i32) -> Vec<Proc> {
    let mut children: HashMap<i32, Vec<Proc>> = HashMap::new();
    for p in processes() {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out: Vec<Proc> = Vec::new();
    let mut seen = vec![root];
    let mut todo = vec![root];
    while let Some(parent) = todo.pop() {
        for c in children.get(&parent).into_iter().flatten() {
            if !seen.contains(&c.pid) {
                seen.push(c.pid);
                if c.state != 'Z' {
                    out.push(*c);
                }
                todo.push(c.pid);
            }
        }
    }
    out
}

/// The children of `pid`, every thread's, from `/proc/<pid>/task/*/children`:
/// one small read each, so much quicker than a scan of `/proc`. None where the
/// kernel has no such file (`CONFIG_PROC_CHILDREN`).
fn children_of(pid: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    for t in tasks.flatten() {
        match std::fs::read_to_string(t.path().join("children")) {
            Ok(s) => out.extend(s.split_whitespace().filter_map(|c| c.parse::<i32>().ok())),
            // No such file: the kernel does not keep it (a thread that just
            // ended also says so: the caller then scans `/proc`, no harm).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(_) => {}
        }
    }
    Some(out)
}

/// Every process below `root` (zombies too), by the quick reads of
/// [`children_of`]; None where the kernel has no such files.
fn descendants_quick(root: i32) -> Option<Vec<i32>> {
    let mut out = Vec::new();
    let mut todo = children_of(root)?;
    while let Some(p) = todo.pop() {
        if p != root && !out.contains(&p) {
            out.push(p);
            todo.extend(children_of(p).unwrap_or_default());
        }
    }
    Some(out)
}

fn signal_all(pids: &[i32], sig: Signal) {
    for &p in pids {
        if let Some(pid) = Pid::from_raw(p) {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }
}

/// SIGKILL to the process groups of the processes below us that made sessions
/// of their own (`setsid`): a whole group is killed at once, so a process that
/// keeps forking a new pid for itself is caught too. A group in our own session
/// is never signalled: it may be another job of the same terminal.
fn kill_own_sessions(procs: &[Proc]) {
    let me = crate::sys::own_session();
    if me < 0 {
        return;
    }
    let mut done: Vec<i32> = Vec::new();
    for p in procs {
        if p.sid != me && p.pgid > 1 && !done.contains(&p.pgid) {
            done.push(p.pgid);
            if let Some(g) = Pid::from_raw(p.pgid) {
                let _ = rustix::process::kill_process_group(g, Signal::KILL);
            }
        }
    }
}

/// Reap every child of ours that has exited; whether any child is left. Since
/// we are the subreaper of everything below us, no child means nothing below
/// us at all: unlike a listing of `/proc`, this cannot miss a process that
/// keeps changing its pid.
///
/// `keeper`: the command's group keeper (`sentinel.rs`), kept alive while what
/// the command left is stopped (a SIGKILL of exec meanwhile must still take
/// the group with it). It does not count: when it is the only child left,
/// nothing is. Our children are read from the main thread's `children` file
/// (the kernel hands orphans to a subreaper's main thread), in one read.
fn reap(me: i32, keeper: &mut Option<i32>) -> bool {
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((p, _))) => {
                if *keeper == Some(p.as_raw_nonzero().get()) {
                    *keeper = None;
                }
            }
            Ok(None) => {
                let Some(k) = *keeper else { return true };
                return match std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
                    Ok(c) => c.split_whitespace().filter_map(|c| c.parse::<i32>().ok()).any(|c| c != k),
                    Err(_) => true,
                };
            }
            Err(e) => return e != Errno::CHILD,
        }
    }
}

/// Whether this kernel lists a process's children (`CONFIG_PROC_CHILDREN`):
/// then the group keeper can stay alive while what the command left is
/// stopped.
pub fn can_list_children() -> bool {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    std::fs::metadata(format!("/proc/{me}/task/{me}/children")).is_ok()
}

/// What [`stop_descendants`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stopped {
    /// How many processes were running below `ubunye exec` at once (at most)
    /// after the command had exited.
    pub found: usize,
    /// How many were still running when it gave up: the run must not land.
    pub left: usize,
    /// The group keeper was reaped here (it was killed): it must not be
    /// signalled any more.
    pub keeper_reaped: bool,
}

/// Everything below `me`: by the quick reads where the kernel has them, else
/// by a scan of `/proc`.
fn below(me: i32, keeper: Option<i32>) -> Vec<i32> {
    let mut all = descendants_quick(me).unwrap_or_else(|| descendants(me).iter().map(|p| p.pid).collect());
    all.retain(|&p| Some(p) != keeper);
    all
}

/// Stop every process still below this one: SIGTERM, up to `grace` for them
/// to exit, then SIGKILL until none is left; each reaped.
///
/// Whether anything is left is asked of the kernel (`waitpid` says there is no
/// child), never of a listing. A process that keeps changing its pid (it forks,
/// and the parent exits) is out of date in any list by the time it is
/// signalled: while killing, the list is read from `/proc/<pid>/task/*/children`
/// (a few small reads: as their subreaper, everything below us is our child or
/// a child's child) and each entry is killed at once, over and over; a SIGKILL
/// that reaches a process inside `fork` cancels the fork. A process that made a
/// session of its own is killed with its whole group. What is still running
/// after `kill_for` is reported in [`Stopped::left`].
///
/// `keeper`: the command's group keeper, left alone (see `reap`).
pub fn stop_descendants(grace: Duration, kill_for: Duration, keeper: Option<i32>) -> Stopped {
    let mut alive = keeper;
    let mut s = stop_below(grace, kill_for, &mut alive);
    s.keeper_reaped = keeper.is_some() && alive.is_none();
    s
}

fn stop_below(grace: Duration, limit: Duration, keeper: &mut Option<i32>) -> Stopped {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut termed: Vec<i32> = Vec::new();
    let mut found = 0;
    let start = Instant::now();
    // SIGTERM to each process as it is found, until the grace is over.
    while reap(me, keeper) {
        let left = below(me, *keeper);
        found = found.max(left.len().max(1));
        for &p in &left {
            if !termed.contains(&p) {
                termed.push(p);
                signal_all(&[p], Signal::TERM);
            }
        }
        if start.elapsed() >= grace {
            // SIGKILL to everything below us, as quickly as it can be listed.
            let killing = Instant::now();
            let mut rounds = 0u32;
            while reap(me, keeper) {
                if rounds.is_multiple_of(64) {
                    let mut left = descendants(me);
                    left.retain(|p| Some(p.pid) != *keeper);
                    found = found.max(left.len().max(1));
                    kill_own_sessions(&left);
                    signal_all(&left.iter().map(|p| p.pid).collect::<Vec<_>>(), Signal::KILL);
                    if killing.elapsed() >= limit {
                        // Given up: they were running when the time was over
                        // (the last SIGKILL may still stop them; the run fails
                        // either way).
                        return Stopped { found, left: left.len().max(1), keeper_reaped: false };
                    }
                    std::thread::sleep(Duration::from_millis(1));
                } else {
                    signal_all(&below(me, *keeper), Signal::KILL);
                    std::thread::yield_now();
                }
                rounds = rounds.wrapping_add(1);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Stopped { found, left: 0, keeper_reaped: false }
}

/// Whether every live process of group `pgid` carries the run: then the group
/// is the run's alone (exec started from a terminal shares the shell's job
/// with its command, see `child.rs`), and one `kill(-pgid)` stops all of it at
/// once, a process that keeps changing its pid included. A group with any other process in it
/// (the shell script that started exec, a `tee` it pipes into) is never
/// signalled whole.
fn group_is_the_runs(pgid: i32, needle: &[u8], me: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    let mut any = false;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let st = match read_stat(&e.path().join("stat")) {
            Ok(Some(st)) => st,
            Err(e) if gone(&e) => continue,
            // A process that cannot be told may be in the group.
            Ok(None) | Err(_) => return false,
        };
        if st.pgid != pgid {
            continue;
        }
        if pid == me {
            return false;
        }
        if carries_run(pid, needle) {
            any = true;
            continue;
        }
        // Gone or exiting since it was listed: no matter (an exiting process
        // has let go of its memory, so its environment reads empty, and a
        // zombie still answers kill 0: a run's process that forks and exits
        // over and over is nearly always in that state). Alive without the
        // mark, or not to be told: not the run's.
        match life(pid) {
            Life::Gone | Life::Exiting => {}
            Life::Running | Life::Unknown => return false,
        }
    }
    any
}

/// A dead run's processes on this host, still alive (a command's background
/// processes outlive a SIGKILLed `ubunye exec`): every process whose environment
/// names the run (`UBUNYE_RUN_ID`) is sent SIGKILL as soon as it is found (the
/// run is over; there is nothing to let them finish), and so is its whole
/// process group when every process in it is the run's. The look is repeated
/// until three in a row find none (5 s at most): a process that keeps changing
/// its pid is caught alive at some point, and its group with it. Returns how
/// many there were.
pub fn stop_run_processes(run_id: &str) -> usize {
    if run_id.is_empty() {
        return 0;
    }
    let needle = format!("UBUNYE_RUN_ID={run_id}").into_bytes();
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut seen: Vec<i32> = Vec::new();
    let mut groups: Vec<i32> = Vec::new();
    let mut empty_looks = 0;
    let start = Instant::now();
    while empty_looks < 3 && start.elapsed() < Duration::from_secs(5) {
        let mut found = false;
        let Ok(entries) = std::fs::read_dir("/proc") else { break };
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            if pid == me || !carries_run(pid, &needle) {
                continue;
            }
            found = true;
            // Its group is looked at before it is killed (once dead, it no
            // longer shows the group is the run's).
            if let Some((pgid, _)) = group_of(pid).filter(|&(g, _)| g > 1 && !groups.contains(&g))
                && group_is_the_runs(pgid, &needle, me)
            {
                groups.push(pgid);
            }
            signal_all(&[pid], Signal::KILL);
            if !seen.contains(&pid) {
                seen.push(pid);
            }
            for &g in &groups {
                if let Some(g) = Pid::from_raw(g) {
                    let _ = rustix::process::kill_process_group(g, Signal::KILL);
                }
            }
        }
        empty_looks = if found { 0 } else { empty_looks + 1 };
        if found {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::procfs::{first_thread_exits, stat_says_exiting, wait_until};
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    fn in_group(cmd: &mut Command, pgid: i32) -> Child {
        cmd.process_group(pgid).spawn().unwrap()
    }

    /// A group is the run's only when no process in it is alive without the
    /// run's id, whatever its name or its threads.
    #[test]
    fn a_group_is_the_runs_only_without_a_live_outsider() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let needle = b"UBUNYE_RUN_ID=review-20-group";
        let mut run = in_group(Command::new("sleep").arg("30").env("UBUNYE_RUN_ID", "review-20-group"), 0);
        let pgid = run.id() as i32;
        wait_until("the run's sleep did not start", || carries_run(pgid, needle));
        assert!(group_is_the_runs(pgid, needle, me));
        // An outsider named with bytes that are not UTF-8 (its name is the
        // one it was run by).
        let d = tempfile::tempdir().unwrap();
        let odd = d.path().join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"\xff\xfeoutsider"));
        std::os::unix::fs::symlink("/bin/sleep", &odd).unwrap();
        let mut outsider = in_group(Command::new(&odd).arg("30").env_remove("UBUNYE_RUN_ID"), pgid);
        let o = outsider.id() as i32;
        wait_until("the outsider did not start", || {
            std::fs::read(format!("/proc/{o}/stat")).is_ok_and(|l| l.windows(2).any(|w| w == b"\xff\xfe"))
        });
        assert!(!group_is_the_runs(pgid, needle, me), "an outsider not named in UTF-8 was not seen");
        let _ = outsider.kill();
        let _ = outsider.wait();
        assert!(group_is_the_runs(pgid, needle, me));
        // An outsider whose first thread exited: its stat line says zombie.
        let mut outsider = in_group(first_thread_exits().env_remove("UBUNYE_RUN_ID"), pgid);
        let o = outsider.id() as i32;
        wait_until("its first thread did not exit", || stat_says_exiting(o));
        assert!(!group_is_the_runs(pgid, needle, me), "an outsider whose first thread exited was not seen");
        let _ = outsider.kill();
        let _ = outsider.wait();
        let _ = run.kill();
        let _ = run.wait();
    }
}
