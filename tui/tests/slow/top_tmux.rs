//! `ubunye top` end to end, in a real terminal (tmux): a live `ubunye exec`
//! run shows live; SIGKILL it and its row turns dead (same host: by pid, no
//! 15-minute wait); `t`, yes, and the batch leaves the dead state; `q`, and
//! the terminal is as it was.
//!
//! tmux is required: without it this test fails, unless UBUNYE_SKIP_TMUX=1.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ubunye");

use crate::common;
use common::tmux::{Tmux, tmux_present};

/// A live `ubunye exec` run that keeps running.
fn live_run(uc: &Path) -> Child {
    Command::new(BIN)
        .args(["exec", "-q", "-d"])
        .arg(uc)
        .args(["--task", "demo/web/clicks", "-dt", "2025-02-01", "--append", "clicks=out/clicks", "--"])
        .args(["sh", "-c", "echo click,1 > \"$UBUNYE_OUT_CLICKS/part-$UBUNYE_RUN_ID.csv\"; exec sleep 600"])
        .env_remove("UBUNYE_TEST_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ubunye exec starts")
}

fn wait_for_file(dir: &Path, suffix: &str) -> PathBuf {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(p) = std::fs::read_dir(dir)
            .ok()
            .and_then(|rd| rd.flatten().map(|e| e.path()).find(|p| p.to_string_lossy().ends_with(suffix)))
        {
            return p;
        }
        assert!(Instant::now() < until, "no *{suffix} in {}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The table rows (not the explain pane below them) that carry a state word.
fn rows_with(pane: &str, word: &str) -> usize {
    pane.lines().take_while(|l| !l.contains("· explain")).filter(|l| l.contains(word)).count()
}

#[test]
fn a_killed_run_turns_dead_is_taken_over_and_the_terminal_is_restored() {
    if !tmux_present() {
        if std::env::var("UBUNYE_SKIP_TMUX").as_deref() == Ok("1") {
            eprintln!("tmux is not installed and UBUNYE_SKIP_TMUX=1: skipped");
            return;
        }
        panic!("tmux is not installed: this test needs it (.ci/run installs it), or set UBUNYE_SKIP_TMUX=1");
    }
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    std::fs::create_dir_all(uc.join(".ubunye")).unwrap();
    let mut run = live_run(&uc);
    wait_for_file(&uc.join(".ubunye/leases/demo/web/clicks"), ".json");
    wait_for_file(&uc.join(".ubunye/lineage/demo/web/clicks"), ".json");

    let t = Tmux { socket: format!("ubunye-e2e-{}", std::process::id()) };
    let stty = d.path().join("stty.txt");
    t.run(&["new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", "sh"]);
    let line = format!(
        "stty -a > {before}; env -u UBUNYE_TEST_HOST UBUNYE_TEST_SETTLE=50ms {BIN} top -d {uc}; c=$?; stty -a > {after}; echo TOP-EXITED $c",
        before = d.path().join("stty-before.txt").display(),
        uc = uc.display(),
        after = stty.display(),
    );
    t.keys(&[&line, "Enter"]);
    t.wait("the live run", |p| rows_with(p, "● live") == 1);

    // SIGKILL `ubunye exec`: its command dies with it (PDEATHSIG); no file
    // changes, so it is the 1 s re-judgement that sees the pid gone.
    run.kill().unwrap();
    run.wait().unwrap();
    let started = Instant::now();
    t.wait("the dead row", |p| rows_with(p, "✖ dead") == 1 && rows_with(p, "● live") == 0);
    assert!(started.elapsed() < Duration::from_secs(5), "dead took {:?}", started.elapsed());

    t.keys(&["t"]);
    let plan = t.wait("the plan", |p| p.contains("Go ahead?"));
    assert!(plan.contains("[ No ]") && plan.contains("mark its record"), "{plan}");
    t.keys(&["y"]);
    let done = t.wait("the outcome", |p| p.contains("released: the next run of the batch starts clean"));
    assert!(done.contains("taken over"), "{done}");
    t.keys(&["Escape"]);
    let after = t
        .wait("the batch out of the dead state", |p| rows_with(p, "✖ dead") == 0 && rows_with(p, "◐ interrupted") == 1);
    assert!(after.contains("watch notify"), "{after}");

    t.keys(&["q"]);
    let shell = t.wait("top to exit", |p| p.contains("TOP-EXITED 0"));
    assert!(!shell.contains("ubunye top ·"), "the dashboard is still on screen:\n{shell}");
    // The marker is echoed after stty has written its file.
    let before = std::fs::read_to_string(d.path().join("stty-before.txt")).unwrap();
    let after = std::fs::read_to_string(&stty).unwrap_or_else(|e| panic!("{e}; the pane:\n{}", t.pane()));
    assert_eq!(before, after, "the terminal's settings changed");
    assert!(after.contains(" icanon") && after.contains(" echo "), "{after}");
    assert_eq!(t.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]).trim(), "0");
    let audit = std::fs::read_to_string(uc.join(".ubunye/repairs.jsonl")).unwrap();
    assert!(audit.contains("\"outcome\":\"done\""), "{audit}");

    // SIGTERM and SIGHUP: top ends, and the terminal is restored all the same.
    for (sig, name) in [(rustix::process::Signal::TERM, "TERM"), (rustix::process::Signal::HUP, "HUP")] {
        t.keys(&["clear", "Enter"]);
        let again = format!(
            "{BIN} top -d {uc}; c=$?; stty -a > {after}; echo TOP-ENDED-{name} $c",
            uc = uc.display(),
            after = stty.display()
        );
        let _ = std::fs::remove_file(&stty);
        t.keys(&[&again, "Enter"]);
        t.wait("top again", |p| p.contains("ubunye top ·"));
        let until = Instant::now() + Duration::from_secs(5);
        let pid = loop {
            match top_pid(&uc) {
                Some(p) => break p,
                None if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
                None => panic!("no top process; the pane:\n{}", t.pane()),
            }
        };
        rustix::process::kill_process(pid, sig).unwrap();
        let code = 128 + sig.as_raw();
        t.wait("top to end on the signal", |p| p.contains(&format!("TOP-ENDED-{name} {code}")));
        assert_eq!(std::fs::read_to_string(&stty).unwrap(), before, "SIG{name} left the terminal changed");
        assert_eq!(t.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]).trim(), "0");
    }
}

/// The pid of `ubunye top -d <uc>`.
fn top_pid(uc: &Path) -> Option<rustix::process::Pid> {
    let want = format!("top\0-d\0{}", uc.display());
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd);
        (cmd.starts_with(BIN) && cmd.contains(&want)).then(|| rustix::process::Pid::from_raw(pid)).flatten()
    })
}

/// `top --find ROOT` over three use cases: one row each with its
/// counts, kept up to date; `/uc:` keeps one; Enter opens its dashboard, `q`
/// there comes back to the fleet, Ctrl-C there quits both with the terminal
/// restored; nothing in any use case changed.
#[test]
fn the_fleet_view_counts_each_use_case_opens_one_and_comes_back() {
    if !common::tmux::require_tmux("the_fleet_view_counts_each_use_case_opens_one_and_comes_back") {
        return;
    }
    let d = common::dash::short_tempdir();
    let root = d.path().join("root");
    common::copy_tree(&common::fixture_dir("dead-killed").join("uc"), &root.join("dead"));
    common::copy_tree(&common::fixture_dir("kept").join("uc"), &root.join("team/a"));
    common::copy_tree(&common::fixture_dir("kept").join("uc"), &root.join("team/b"));

    let t = Tmux { socket: format!("ubunye-fleet-{}", std::process::id()) };
    t.run(&["new-session", "-d", "-s", "e2e", "-x", "110", "-y", "30", "sh"]);
    // The fixtures' host is this one: the dead run's pid is looked up here.
    let line = format!(
        "env UBUNYE_TEST_HOST='{}' {BIN} top --find {} --interval 200ms; echo TOP-EXITED $?",
        common::FIXTURE_HOST,
        root.display()
    );
    t.keys(&[&line, "Enter"]);
    let fleet = t.wait("every use case counted", |p| p.contains("3 use cases") && !p.contains("reading"));
    let row = |p: &str, name: &str| p.lines().find(|l| l.contains(name)).map(str::to_string).unwrap_or_default();
    for name in ["root/dead", "root/team/a", "root/team/b"] {
        assert!(!row(&fleet, name).is_empty(), "no row for {name}:\n{fleet}");
    }
    // The kept fixture's one batch is kept; the dead one's is dead.
    let words = |l: String| l.split_whitespace().skip(1).take(4).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(row(&fleet, "root/team/a")), ["2", "1", "0", "0"], "batches, open, live, dead:\n{fleet}");
    assert!(fleet.contains("1 dead") && fleet.contains("2 kept"), "the totals:\n{fleet}");
    // A change shows by itself: its task is read again at the next look.
    let kept = |p: &str| row(p, "root/team/a").split_whitespace().nth(5).map(str::to_string);
    assert_eq!(kept(&fleet).as_deref(), Some("1"), "{fleet}");
    std::fs::remove_file(root.join("team/a/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json")).unwrap();
    t.wait("team/a's kept lease gone from its row", |p| kept(p).as_deref() == Some("0"));
    let before = common::tree(&root);

    t.keys(&["/", "uc:team/b", "Enter"]);
    let one = t.wait("the filter", |p| p.contains("/uc:team/b") && row(p, "root/team/a").is_empty());
    assert!(!row(&one, "root/team/b").is_empty() && row(&one, "root/dead").is_empty(), "{one}");
    t.keys(&["Enter"]);
    let dash = t.wait("the use case's dashboard", |p| p.contains("ubunye top ·") && p.contains("kept"));
    assert!(dash.contains("team/b"), "{dash}");
    t.keys(&["q"]);
    t.wait("the fleet again", |p| p.contains("3 use cases") && !p.contains("ubunye top ·"));
    // Ctrl-C in a use case's dashboard ends both, not only the dashboard.
    t.keys(&["Enter"]);
    t.wait("the use case's dashboard again", |p| p.contains("ubunye top ·"));
    t.keys(&["C-c"]);
    let shell = t.wait("top to exit", |p| p.contains("TOP-EXITED 0"));
    assert!(!shell.contains("use cases"), "the fleet is still on screen:\n{shell}");
    assert_eq!(t.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]).trim(), "0");
    assert_eq!(common::tree(&root), before, "looking changed a use case");
}

/// A terminal that goes away (its window closed: the tmux server killed)
/// ends `top`, one use case or many, within seconds. (It did not, once:
/// the key reader was waited for, and crossterm's read on a terminal that
/// is gone never returns; the process spun a core for ever.)
#[test]
fn closing_the_terminal_ends_top() {
    if !common::tmux::require_tmux("closing_the_terminal_ends_top") {
        return;
    }
    let d = common::dash::short_tempdir();
    let root = d.path().join("root");
    common::copy_tree(&common::fixture_dir("kept").join("uc"), &root.join("a"));
    common::copy_tree(&common::fixture_dir("kept").join("uc"), &root.join("b"));
    for (n, args) in [(0, format!("-d {}", root.join("a").display())), (1, format!("--find {}", root.display()))] {
        let t = Tmux { socket: format!("ubunye-close-{}-{n}", std::process::id()) };
        let cmd = format!("{BIN} top {args}");
        t.run(&["new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", &cmd]);
        t.wait("top", |p| p.contains("ubunye top"));
        let pid = t.run(&["list-panes", "-t", "e2e", "-F", "#{pane_pid}"]).trim().to_string();
        assert!(Path::new(&format!("/proc/{pid}")).exists(), "top {args} runs as pid {pid}");
        t.run(&["kill-server"]);
        let until = Instant::now() + Duration::from_secs(6);
        while Path::new(&format!("/proc/{pid}/stat")).exists() {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // A zombie has ended: only its parent (tmux, gone) had to reap it.
            if stat.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')) {
                break;
            }
            if Instant::now() > until {
                let _ = Command::new("kill").args(["-9", &pid]).status();
                panic!("top {args} still runs 6 s after its terminal went away");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The page, as a paged engineer plays it in a terminal of 80x24, typing
/// nothing the screen did not show: the list names the dead batch's key;
/// explain of that key ends with the repair to run; that command, as
/// printed, takes the batch over after a `y`; the failed runs list names
/// a run id; `runs show` of it ends with the run's log.
#[test]
fn the_page_from_the_list_to_the_log_at_80x24() {
    if !common::tmux::require_tmux("the_page_from_the_list_to_the_log_at_80x24") {
        return;
    }
    let d = common::dash::short_tempdir();
    let uc = d.path().join("uc");
    let o =
        Command::new(BIN).args(["demo", "--no-top", "--dir"]).arg(&uc).env_remove("UBUNYE_TEST_HOST").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bin_dir = Path::new(BIN).parent().unwrap();
    let t = Tmux { socket: format!("ubunye-page-{}", std::process::id()) };
    t.run(&["new-session", "-d", "-s", "e2e", "-x", "80", "-y", "24", "sh"]);
    // `ubunye` on PATH, as installed; a short settle for the test. Each step
    // ends by printing PAGE-42 (typed as arithmetic, so that the typed line
    // is not taken for its end).
    let setup = format!(
        "export PATH={}:$PATH UBUNYE_TEST_SETTLE=50ms; unset UBUNYE_TEST_HOST; cd {}; clear",
        bin_dir.display(),
        d.path().display()
    );
    t.keys(&[&setup, "Enter"]);
    let run = |line: &str, done: &str| -> String {
        t.keys(&["clear", "Enter"]);
        t.wait("a clear screen", |p| p.trim().lines().count() <= 1);
        t.keys(&[line, "Enter"]);
        t.wait(done, |p| p.contains("PAGE-42"))
    };
    let screen_has = |p: &str, what: &str| p.lines().find(|l| l.contains(what)).map(str::to_string);

    // 1. What needs someone: the dead row shows its key.
    let list = run("ubunye leases list -d uc; echo PAGE-$((40+2))", "the list");
    assert!(list.lines().all(|l| l.chars().count() <= 80), "{list}");
    let row = screen_has(&list, "✖ dead").unwrap_or_else(|| panic!("no dead row:\n{list}"));
    let key = row.split_whitespace().nth(2).unwrap().to_string();
    assert_eq!(key.len(), 8, "the KEY column: {row}");

    // 2. Explain it, by what the list showed; the screen ends with the repair.
    let explain = run(&format!("ubunye leases explain {key} -d uc; echo PAGE-$((40+2))"), "explain");
    let repair = screen_has(&explain, "Run:").unwrap_or_else(|| panic!("no Run: line:\n{explain}"));
    let repair = repair.trim().strip_prefix("Run:").unwrap().trim().to_string();
    assert!(repair.starts_with("ubunye leases takeover ") && repair.contains(&key), "{repair}");

    // 3. Run it as printed; answer y at its question.
    t.keys(&["clear", "Enter"]);
    t.wait("a clear screen", |p| p.trim().lines().count() <= 1);
    t.keys(&[&format!("{repair}; echo PAGE-$((40+2))"), "Enter"]);
    let asked = t.wait("the question", |p| p.contains("Go ahead? [y/N]"));
    assert!(asked.contains("remove") || asked.contains("mark its record"), "{asked}");
    t.keys(&["y", "Enter"]);
    let done = t.wait("the takeover", |p| p.contains("PAGE-42"));
    assert!(done.contains("waiting") && done.contains("released"), "{done}");

    // 4. Which runs failed, by what the screen shows: a run id.
    let runs = run("ubunye runs -d uc --status failed; echo PAGE-$((40+2))", "the failed runs");
    // The failed batch of the list (dt=2025-01-03), as the engineer reads it.
    let row = screen_has(&runs, "dt=2025-01-03").unwrap_or_else(|| panic!("no failed run of 01-03:\n{runs}"));
    // The RUN column: the row's one word of 8 hex digits.
    let run_id = row
        .split_whitespace()
        .find(|w| w.len() == 8 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_default()
        .to_string();
    assert_eq!(run_id.len(), 8, "the RUN column: {row}\n{runs}");

    // 5. That run whole, ending with its log.
    let show = run(&format!("ubunye runs show {run_id} -d uc; echo PAGE-$((40+2))"), "runs show");
    assert!(show.contains("Log (its last") && show.contains("orders.csv: no such file"), "{show}");
}
