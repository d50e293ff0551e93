//! `ubunye exec` and the processes a command leaves: none outlives its run,
//! none is left a zombie.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command as Cmd;

use crate::common;
use common::{bin, empty_use_case};

fn exec(uc: &Path) -> Cmd {
    let mut c = std::process::Command::new(bin());
    exec_args(&mut c, uc, "200ms");
    Cmd::from_std(c)
}

/// `exec -d <uc> --task demo/sales/ingest -dt 2025-01-01 --append
/// events=out/events` added to `c` (the binary, or a program that starts
/// it), with short waits: the settle, and `grace` for what the command leaves.
fn exec_args<'c>(c: &'c mut std::process::Command, uc: &Path, grace: &str) -> &'c mut std::process::Command {
    c.env("UBUNYE_TEST_SETTLE", "30ms")
        .env("UBUNYE_EXEC_GRACE", grace)
        .env_remove("UBUNYE_RUN_LEASE")
        .env_remove("UBUNYE_TEST_KILL_FOR")
        .arg("exec")
        .arg("-d")
        .arg(uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-01", "--append", "events=out/events"])
}

/// A script that writes a row, then starts in the background a process that
/// forks and lets its parent exit, over and over (so its pid keeps changing),
/// carrying `HOPPER_MARK=<mark>` in its environment; after `after` seconds it
/// writes `late` into `target`.
fn hopper(dir: &Path, mark: &str, target: &Path, after: f64) -> String {
    let py = hop_script(dir, target, after);
    format!("echo row > \"$UBUNYE_OUT_EVENTS/part-1.csv\"; HOPPER_MARK={mark} python3 {} & sleep 0.2", py.display())
}

/// Processes whose environment holds `HOPPER_MARK=<mark>`, not zombies.
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("HOPPER_MARK={mark}");
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(env) = fs::read(e.path().join("environ")) else { continue };
        let zombie = fs::read_to_string(e.path().join("stat"))
            .map(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if !zombie && env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Stop what a test left (a failed assertion must not leave a hopper running).
fn stop_marked(mark: &str) {
    for _ in 0..2000 {
        let left = marked(mark);
        if left.is_empty() {
            return;
        }
        for p in left {
            let _ = Cmd::new("kill").args(["-9", &p.to_string()]).output();
        }
    }
}

fn use_case() -> (tempfile::TempDir, PathBuf, String) {
    let (d, uc) = empty_use_case();
    let mark = d.path().file_name().unwrap().to_string_lossy().into_owned();
    (d, uc, mark)
}

/// Whether anything is left below `ubunye exec` is asked of the kernel (exec
/// is its subreaper), and it is killed as fast as it is listed: a scan of
/// `/proc` never sees a process that forks and exits faster than it is read,
/// so exec would land at once and the process write into the output after
/// the run had committed.
#[test]
fn a_process_that_keeps_changing_its_pid_is_stopped_before_anything_lands() {
    let (d, uc, mark) = use_case();
    let late = uc.join("out/late.csv");
    let o = exec(&uc).args(["--", "sh", "-c", &hopper(d.path(), &mark, &late, 2.0)]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let left = marked(&mark);
    stop_marked(&mark);
    assert!(left.is_empty(), "still running after exec returned: {left:?}\n{err}");
    assert!(o.status.success(), "{err}");
    assert!(err.contains("they were stopped (SIGTERM, then SIGKILL) before anything landed"), "{err}");
    assert_eq!(fs::read_to_string(uc.join("out/events/part-1.csv")).unwrap(), "row\n");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!late.exists(), "written after the run ended");
}

/// What cannot be stopped in time means nothing lands: the run fails, what it
/// wrote is taken back, and the line says how to find the processes.
/// (`UBUNYE_TEST_KILL_FOR=0s`: give up at the first SIGKILL.)
#[test]
fn a_process_that_cannot_be_stopped_means_nothing_lands() {
    let (_d, uc, mark) = use_case();
    let script = format!(
        "echo row > \"$UBUNYE_OUT_EVENTS/part-1.csv\"; (trap '' TERM; HOPPER_MARK={mark} sleep 30) & sleep 0.1"
    );
    let o = exec(&uc)
        .env("UBUNYE_EXEC_GRACE", "0s")
        .env("UBUNYE_TEST_KILL_FOR", "0s")
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    stop_marked(&mark);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("could not be stopped"), "{err}");
    assert!(err.contains("grep -l UBUNYE_RUN_ID="), "{err}");
    assert!(!uc.join("out/events/part-1.csv").exists(), "nothing lands");
    let leases = uc.join(".ubunye/leases/demo/sales/ingest");
    let left: Vec<_> = fs::read_dir(&leases).map(|r| r.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "the lease is released: {left:?}");
    let records = uc.join(".ubunye/lineage/demo/sales/ingest");
    let record = fs::read_dir(&records).unwrap().flatten().next().unwrap().path();
    let rec: serde_json::Value = serde_json::from_str(&fs::read_to_string(record).unwrap()).unwrap();
    assert_eq!(rec["status"], "error");
    assert!(rec["error"].to_string().contains("could not be stopped"), "{rec}");
}

/// exec is the subreaper of what its command leaves, and reaps each as it
/// exits: waiting for the command alone, each process the command orphaned
/// would stay a zombie holding its pid until the command ended (a long command
/// that orphans a few processes a second runs the host out of pids).
#[test]
fn orphans_of_a_running_command_are_reaped_as_they_exit() {
    let (d, uc, _mark) = use_case();
    let count = d.path().join("zombies");
    let script = format!(
        "i=0; while [ $i -lt 300 ]; do (true &); i=$((i+1)); done; sleep 1; z=0; for s in /proc/[0-9]*/stat; do set -- $(sed 's/.*) //' $s 2>/dev/null); [ \"$1\" = Z ] && [ \"$2\" = \"$PPID\" ] && z=$((z+1)); done; echo $z > {}; echo row > \"$UBUNYE_OUT_EVENTS/part-1.csv\"",
        count.display()
    );
    let o = exec(&uc).args(["--", "sh", "-c", &script]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let zombies: usize = fs::read_to_string(&count).unwrap().trim().parse().unwrap();
    assert!(zombies < 30, "{zombies} of 300 orphans were zombies of ubunye exec while the command ran");
}

/// A python script that keeps changing its pid (fork, the parent exits) and,
/// after `after` seconds, writes `late` into `target`.
fn hop_script(dir: &Path, target: &Path, after: f64) -> PathBuf {
    let py = dir.join("hop.py");
    fs::write(
        &py,
        format!(
            "import os, time\nt = time.monotonic()\nwhile True:\n    if os.fork(): os._exit(0)\n    if time.monotonic() - t > {after}:\n        open({:?}, 'w').write('late')\n        os._exit(0)\n",
            target.display().to_string()
        ),
    )
    .unwrap();
    py
}

/// A SIGKILLed `ubunye exec` leaves none of its command's background
/// processes running: a takeover looking for them by scanning `/proc` never
/// sees alive one that keeps changing its pid, which would write into the
/// taker's committed batch. So the command has a process group of its own
/// (exec has no terminal here: it runs in a session of its own), with a
/// keeper in it that kills the whole group the moment exec dies: nothing is
/// left, on any host, before any takeover.
#[test]
fn a_killed_exec_leaves_no_process_of_its_command_even_one_changing_its_pid() {
    use std::os::unix::process::CommandExt;
    let (d, uc, mark) = use_case();
    let late = uc.join("out/late.csv");
    let py = hop_script(d.path(), &late, 2.0);
    let started = d.path().join("started");
    let script = format!(
        "echo row > \"$UBUNYE_OUT_EVENTS/part-1.csv\"; HOPPER_MARK={mark} python3 {} & sleep 0.3; echo x > {}; exec sleep 30",
        py.display(),
        started.display()
    );
    let mut cmd = std::process::Command::new(bin());
    cmd.env("UBUNYE_TEST_SETTLE", "30ms")
        .env_remove("UBUNYE_RUN_LEASE")
        .arg("exec")
        .arg("-d")
        .arg(&uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-01", "--append", "events=out/events"])
        .args(["--", "sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| rustix::process::setsid().map(|_| ()).map_err(Into::into));
    }
    let mut exec = cmd.spawn().unwrap();
    for _ in 0..500 {
        if started.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!marked(&mark).is_empty() || started.exists(), "the command started its process");
    exec.kill().unwrap();
    exec.wait().unwrap();
    let mut left = marked(&mark);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        left = marked(&mark);
    }
    stop_marked(&mark);
    assert!(left.is_empty(), "still running a second after exec was killed: {left:?}");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!late.exists(), "written after exec was killed");
}

/// The takeover's own look for a dead run's processes (for a run whose
/// command shared exec's group, started from a terminal): a group whose
/// every process carries the run's id is killed whole, a process that keeps
/// changing its pid included; a group with any other process in it is not
/// (only the run's own processes in it are killed).
#[test]
fn a_takeover_kills_a_dead_runs_group_only_when_the_group_is_the_runs() {
    use std::os::unix::process::CommandExt;
    let (d, uc, mark) = use_case();
    let run_id = format!("run-{mark}");
    let late = uc.join("late.csv");
    let py = hop_script(d.path(), &late, 1.5);
    // The run's group: a sleep and a hopper, every one carrying the run's id.
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("python3 {} & exec sleep 30", py.display()))
        .env("UBUNYE_RUN_ID", &run_id)
        .env("HOPPER_MARK", &mark)
        .process_group(0);
    let mut group = cmd.spawn().unwrap();
    // Another group: a process without the run's id, and one of the run's.
    let outsider_mark = format!("{mark}-outsider");
    let mut mixed = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("UBUNYE_RUN_ID={run_id} HOPPER_MARK={mark} sleep 30 & exec sleep 30"))
        .env("HOPPER_MARK", &outsider_mark)
        .process_group(0)
        .spawn()
        .unwrap();
    // Once the hopper runs (its python past exec: a process in the middle of
    // execve can show an empty environment for a moment, a window noted in
    // docs/reliability.md): bounded, 10 s.
    let start = std::time::Instant::now();
    while !marked(&mark)
        .iter()
        .any(|p| fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.windows(6).any(|w| w == b"hop.py")))
    {
        assert!(start.elapsed() < Duration::from_secs(10), "the hopper did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(100));
    let stopped = ubunye::reap::stop_run_processes(&run_id);
    let _ = group.wait();
    let mut left = marked(&mark);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        left = marked(&mark);
    }
    let outsider_alive = !marked(&outsider_mark).is_empty();
    stop_marked(&mark);
    stop_marked(&outsider_mark);
    let _ = mixed.kill();
    let _ = mixed.wait();
    assert!(stopped >= 2, "{stopped}");
    assert!(left.is_empty(), "the run's processes are all stopped: {left:?}");
    assert!(outsider_alive, "a process without the run's id is never killed");
    std::thread::sleep(Duration::from_millis(1800));
    assert!(!late.exists(), "the hopper was stopped with its group");
}

/// `ubunye exec` with no terminal, in a session of its own (as under a
/// scheduler).
fn exec_alone(uc: &Path, script: &str, grace: &str) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(bin());
    exec_args(&mut cmd, uc, grace)
        .args(["--", "sh", "-c", script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| rustix::process::setsid().map(|_| ()).map_err(Into::into));
    }
    cmd
}

/// SIGKILL `exec`; then the command's loop, which adds a line to `ticks`
/// every 50 ms, must have stopped with it (stopped by hand afterwards either way).
fn kill_and_check_the_loop_stopped(mut exec: std::process::Child, ticks: &Path, mark: &str) {
    exec.kill().unwrap();
    exec.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let n = fs::read_to_string(ticks).unwrap().lines().count();
    std::thread::sleep(Duration::from_millis(600));
    let m = fs::read_to_string(ticks).unwrap().lines().count();
    stop_marked(mark);
    assert_eq!(n, m, "the loop still runs after exec was killed ({n} then {m} lines)");
}

/// The group keeper stays until what the command left is stopped: stopped
/// before them, a SIGKILL of exec during that grace (`timeout -k`, a
/// scheduler's TERM then KILL) would leave the command's background processes
/// running.
#[test]
fn a_kill_during_the_grace_still_takes_the_commands_group() {
    let (d, uc, mark) = use_case();
    let ticks = d.path().join("ticks");
    let script = format!("(trap '' TERM; while :; do echo t >> {}; sleep 0.05; done) & sleep 0.2", ticks.display());
    let mut exec = exec_alone(&uc, &script, "5s").env("HOPPER_MARK", &mark).spawn().unwrap();
    // The command has exited; exec is in its grace, waiting for the loop.
    std::thread::sleep(Duration::from_millis(1200));
    assert!(exec.try_wait().unwrap().is_none(), "exec waits out the grace");
    kill_and_check_the_loop_stopped(exec, &ticks, &mark);
}

/// `timeout` sends its signal and then SIGCONT to its group; a command in a
/// group of its own would never get the SIGCONT, so a stopped command would
/// keep the signal pending and exec wait for ever. exec passes on SIGCONT,
/// and a SIGCONT after each signal it passes on.
#[test]
fn a_stopped_command_still_ends_on_a_signal_to_exec() {
    let (_d, uc, mark) = use_case();
    let mut exec = exec_alone(&uc, "echo row > \"$UBUNYE_OUT_EVENTS/part-1.csv\"; kill -STOP $$; sleep 30", "200ms")
        .env("HOPPER_MARK", &mark)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let pid = rustix::process::Pid::from_raw(exec.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let mut status = None;
    for _ in 0..500 {
        status = exec.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if status.is_none() {
        let _ = exec.kill();
    }
    stop_marked(&mark);
    assert!(status.is_some_and(|s| !s.success()), "exec ended, the run rolled back: {status:?}");
    assert!(!uc.join("out/events/part-1.csv").exists(), "nothing landed");
}

/// The keeper ignores every signal it can: any signal to the command's group
/// it did not catch (`kill -USR1 0` to reopen logs, `kill -QUIT 0` for a
/// thread dump) would kill it, and a later SIGKILL of exec would leave the
/// command's processes running.
#[test]
fn a_signal_to_the_group_does_not_end_the_keeper() {
    let (d, uc, mark) = use_case();
    let ticks = d.path().join("ticks");
    let script = format!(
        "trap '' USR1 QUIT; (trap '' TERM USR1 QUIT; while :; do echo t >> {}; sleep 0.05; done) & sleep 0.2; kill -USR1 0; kill -QUIT 0; sleep 30",
        ticks.display()
    );
    let exec = exec_alone(&uc, &script, "5s").env("HOPPER_MARK", &mark).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    kill_and_check_the_loop_stopped(exec, &ticks, &mark);
}

/// A signal exec was started ignoring stays ignored, for the command too:
/// under `nohup ubunye exec …`, an exec that caught SIGHUP would start its
/// command with SIGHUP at its default action, and a hangup would kill the run
/// nohup was meant to keep.
#[test]
fn a_hangup_ignored_by_nohup_stays_ignored_for_the_command() {
    use std::os::unix::process::CommandExt;
    let (_d, uc, _mark) = use_case();
    let mut cmd = exec_alone(&uc, "kill -HUP $$; echo survived > \"$UBUNYE_OUT_EVENTS/part-1.csv\"", "200ms");
    // SAFETY: setting a disposition to SIG_IGN is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let status = cmd.status().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(fs::read_to_string(uc.join("out/events/part-1.csv")).unwrap(), "survived\n");
}

/// The keeper's hidden subcommand, typed by hand, would kill the caller's own
/// process group: it refuses unless started as `ubunye exec` starts it (with
/// the run's id, in the command's group, not leading one).
#[test]
fn the_group_keeper_typed_by_hand_does_nothing() {
    use std::os::unix::process::CommandExt;
    // In this test's own group, without a run id: were it to act, this test
    // process would be killed with its group.
    let o =
        std::process::Command::new(bin()).args(["__group-keeper", "1"]).env_remove("UBUNYE_RUN_ID").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("started by `ubunye exec` only"), "{o:?}");
    // With a run id but leading its own group (as a shell's job): refused too.
    let o = std::process::Command::new(bin())
        .args(["__group-keeper", "1"])
        .env("UBUNYE_RUN_ID", "x")
        .process_group(0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// CI's runner starts the tests inside a pid namespace whose session and
/// group leaders live outside it: there `getsid` and `getpgrp` answer 0, and
/// exec panicked on it (rustix asserts a positive id). Here the same is made
/// with `unshare --pid --mount-proc` (a shell as the namespace's init, exec
/// below it): a command that leaves a process in a session of its own,
/// deaf to SIGTERM, is stopped, the batch lands, and nothing panics.
///
/// `unshare` needs root (or user namespaces); where it is refused this test
/// says so on stderr and checks nothing. CI runs every exec test inside such
/// a namespace anyway.
#[test]
fn exec_works_in_a_pid_namespace_whose_leaders_are_outside() {
    let probe = std::process::Command::new("unshare").args(["--pid", "--fork", "--mount-proc", "true"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!(
            "SKIPPED exec_works_in_a_pid_namespace_whose_leaders_are_outside: `unshare --pid` refused here ({probe:?})"
        );
        return;
    }
    let (_d, uc, mark) = use_case();
    let script = format!(
        "echo row > \"$UBUNYE_OUT_EVENTS/part-1.csv\"; HOPPER_MARK={mark} setsid sh -c \"trap '' TERM; sleep 30\" & sleep 0.2"
    );
    // `sh -c '"$@"' sh <bin> exec ...`: the shell is pid 1, exec its child.
    let mut c = std::process::Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc", "sh", "-c", "\"$@\"; echo \"exit=$?\"", "sh"]).arg(bin());
    let o = exec_args(&mut c, &uc, "0s")
        .args(["--", "sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    stop_marked(&mark);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.contains("exit=0"), "{out}\n{err}");
    assert!(err.contains("stopped (SIGTERM, then SIGKILL) before anything landed"), "{err}");
    assert_eq!(fs::read_to_string(uc.join("out/events/part-1.csv")).unwrap(), "row\n");
}
