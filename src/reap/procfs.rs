//! What `/proc` tells of a process: its stat line (read as bytes), the run
//! its environment names, and whether it still runs code of its own.

use std::path::Path;

/// A process as `/proc/<pid>/stat` tells it.
#[derive(Clone, Copy)]
pub(super) struct Proc {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) state: char,
    /// Its session.
    pub(super) sid: i32,
    /// Its process group.
    pub(super) pgid: i32,
}

/// Every process in `/proc`.
pub(super) fn processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(Some(st)) = read_stat(&e.path().join("stat")) else { continue };
        out.push(Proc { pid, ppid: st.ppid, state: st.state, sid: st.sid, pgid: st.pgid });
    }
    out
}

/// What a stat line (a process's or a thread's) says that is used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stat {
    pub(super) state: char,
    pub(super) ppid: i32,
    pub(super) pgid: i32,
    pub(super) sid: i32,
    pub(super) flags: u64,
}

/// Read a stat line as bytes (a process's name need not be UTF-8: read as
/// a string it fails, and the process would go unseen); Ok(None) when it
/// cannot be parsed.
pub(super) fn read_stat(path: &Path) -> std::io::Result<Option<Stat>> {
    Ok(parse_stat(&std::fs::read(path)?))
}

/// `pid (comm) state ppid pgrp session tty_nr tpgid flags ...`: comm may
/// hold spaces, parentheses and any byte but NUL.
fn parse_stat(line: &[u8]) -> Option<Stat> {
    let close = line.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&line[close + 1..]).ok()?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let mut num = || f.next().and_then(|s| s.parse::<i32>().ok());
    let (ppid, pgid, sid) = (num()?, num()?, num()?);
    let (_tty, _tpgid) = (num()?, num()?);
    let flags = f.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgid, sid, flags })
}

/// Whether `/proc/<pid>/environ` holds `UBUNYE_RUN_ID=<run_id>`.
pub(super) fn carries_run(pid: i32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle))
}

/// The process group and session of `pid`, from `/proc/<pid>/stat`.
pub(super) fn group_of(pid: i32) -> Option<(i32, i32)> {
    read_stat(Path::new(&format!("/proc/{pid}/stat"))).ok().flatten().map(|st| (st.pgid, st.sid))
}

/// `PF_EXITING` in a stat line's flags (`include/linux/sched.h`): set at the
/// start of `do_exit`, before the thread lets go of its memory.
const PF_EXITING: u64 = 0x4;

/// Whether a process runs code of its own still, as far as `/proc` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Life {
    /// Reaped.
    Gone,
    /// Every thread of it is a zombie or has `PF_EXITING`.
    Exiting,
    Running,
    /// Its stat could not be read or parsed: to be taken as running.
    Unknown,
}

/// An error reading `/proc/<pid>/...` that means the process is gone.
pub(super) fn gone(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
}

fn exiting(st: &Stat) -> bool {
    matches!(st.state, 'Z' | 'X' | 'x') || st.flags & PF_EXITING != 0
}

/// [`Life`] of `pid`. A process whose first thread exited while others run
/// shows that thread's stat (a zombie; `Zl` in ps) and runs all the same:
/// each thread's stat is read then.
pub(super) fn life(pid: i32) -> Life {
    match read_stat(Path::new(&format!("/proc/{pid}/stat"))) {
        Err(e) if gone(&e) => return Life::Gone,
        Err(_) | Ok(None) => return Life::Unknown,
        Ok(Some(st)) if !exiting(&st) => return Life::Running,
        Ok(Some(_)) => {}
    }
    let threads = match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(t) => t,
        Err(e) if gone(&e) => return Life::Gone,
        Err(_) => return Life::Unknown,
    };
    for t in threads {
        let Ok(t) = t else { return Life::Unknown };
        match read_stat(&t.path().join("stat")) {
            Err(e) if gone(&e) => {}
            Err(_) | Ok(None) => return Life::Unknown,
            Ok(Some(st)) if !exiting(&st) => return Life::Running,
            Ok(Some(_)) => {}
        }
    }
    Life::Exiting
}

/// A Python program whose first thread exits while a second sleeps (a
/// zombie to its stat line, alive all the same).
#[cfg(test)]
pub(super) fn first_thread_exits() -> std::process::Command {
    let script = format!(
        "import ctypes, threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\ntime.sleep(0.05)\nctypes.CDLL(None).syscall({}, 0)\n",
        libc::SYS_exit
    );
    let mut cmd = std::process::Command::new("python3");
    cmd.args(["-c", &script]);
    cmd
}

/// Until `ok`, 10 s at most.
#[cfg(test)]
pub(super) fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !ok() {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{what}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Whether its stat line says zombie or exiting (its first thread's).
#[cfg(test)]
pub(super) fn stat_says_exiting(pid: i32) -> bool {
    read_stat(Path::new(&format!("/proc/{pid}/stat"))).ok().flatten().is_some_and(|s| exiting(&s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_stat_line_is_read_as_bytes_to_its_flags() {
        // Flags as the kernel prints them: decimal. 4194560 = PF_RANDOMIZE | PF_FORKNOEXEC.
        let st = parse_stat(b"42 (a) b) c) S 7 42 40 0 -1 4194560 120 0 0 0").unwrap();
        assert_eq!(st, Stat { state: 'S', ppid: 7, pgid: 42, sid: 40, flags: 4194560 });
        assert!(!exiting(&st));
        let odd = parse_stat(b"42 (\xff\xfeoutsider) S 1 42 42 0 -1 4194560 120 0").unwrap();
        assert_eq!(odd.pgid, 42, "a name that is not UTF-8 is read all the same");
        assert!(exiting(&parse_stat(b"42 (hop.py) R 1 42 42 0 -1 4194564 120 0").unwrap()));
        assert!(exiting(&parse_stat(b"42 (sleep) Z 1 42 42 0 -1 4194560 1 0").unwrap()));
        assert_eq!(parse_stat(b"42 (sleep) S 1 42"), None);
        assert_eq!(parse_stat(b"no parenthesis"), None);
    }

    #[test]
    fn this_process_runs_a_zombie_is_exiting_and_a_reaped_child_is_gone() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        assert_eq!(life(me), Life::Running);
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        wait_until("`true` did not exit", || life(pid) == Life::Exiting);
        child.wait().unwrap();
        assert_eq!(life(pid), Life::Gone);
    }

    /// A first thread's zombie stat is not the process's: it runs while
    /// another thread does.
    #[test]
    fn a_process_whose_first_thread_exited_runs_while_another_thread_does() {
        let mut child = first_thread_exits().spawn().unwrap();
        let pid = child.id() as i32;
        wait_until("its first thread did not exit", || stat_says_exiting(pid));
        assert_eq!(life(pid), Life::Running);
        let _ = child.kill();
        let _ = child.wait();
    }
}
