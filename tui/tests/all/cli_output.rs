//! What the binary prints, as a script or a pipe sees it: a reader that goes
//! away (`| head -1`) ends the output quietly, never a panic.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use common::{bin, fixture};

/// `cmd` with its stdout (and stderr, if `stderr_too`) a pipe whose reading
/// end is closed before the program writes a byte: every write meets EPIPE.
fn closed_pipes(mut cmd: Command, stderr_too: bool) -> std::process::ExitStatus {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    cmd.stderr(if stderr_too { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    child.wait().unwrap()
}

fn states(sandbox: &Path) -> Vec<String> {
    let o = Command::new(bin()).args(["leases", "list", "--all", "--json", "-d"]).arg(sandbox).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["batches"].as_array().unwrap().iter().map(|b| b["state"].as_str().unwrap().to_string()).collect()
}

/// `ubunye demo --no-top | head -1` ended with exit 101 (`println!` panics on
/// EPIPE). Now the demo builds its sandbox, says what it can, and exits 0,
/// with its stdout and even its stderr gone.
#[test]
fn the_demo_piped_into_head_ends_quietly() {
    let d = tempfile::tempdir().unwrap();
    let sandbox = d.path().join("s");
    let o = Command::new("bash")
        .args(["-c", r#"set -o pipefail; "$0" demo --no-top --dir "$1" | head -1"#])
        .arg(bin())
        .arg(&sandbox)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("Sandbox: {}\n", sandbox.display()));

    let sandbox = d.path().join("closed");
    let mut c = Command::new(bin());
    c.args(["demo", "--no-top", "--dir"]).arg(&sandbox);
    assert_eq!(closed_pipes(c, true).code(), Some(0));
    assert!(states(&sandbox).iter().any(|s| s == "dead"), "the sandbox was built");
}

/// Every command that prints, with nobody reading: its documented exit code,
/// not 101. `ubunye exec` with its stderr gone still runs its batch to the end
/// (SIGPIPE is not made fatal: exec must not die holding a lease).
#[test]
fn every_command_with_nobody_reading_exits_as_documented() {
    let (_d, uc, _) = fixture("dead-killed");
    let cases: [(&[&str], i32); 11] = [
        (&["top", "-d", "nowhere"], 2),
        (&["leases", "list", "--all", "-d", "uc"], 0),
        (&["leases", "list", "--all", "--json", "-d", "uc"], 0),
        (&["leases", "explain", "7d10", "-d", "uc"], 0),
        (&["leases", "takeover", "7d10", "--dry-run", "-d", "uc"], 0),
        (&["runs", "-d", "uc"], 0),
        (&["runs", "--json", "-d", "uc"], 0),
        // A dead batch needs a repair: a finding.
        (&["doctor", "-d", "uc"], 1),
        (&["key", "--task", "demo/sales/ingest", "-dt", "2025-01-01"], 0),
        (&["--help"], 0),
        (&["leases", "list", "--bogus"], 2),
    ];
    for (args, code) in cases {
        let mut c = Command::new(bin());
        c.args(args).current_dir(uc.parent().unwrap()).env("UBUNYE_TEST_HOST", "elsewhere|pid:[1]");
        for stderr_too in [false, true] {
            assert_eq!(
                closed_pipes(c_clone(&c), stderr_too).code(),
                Some(code),
                "{args:?} (stderr closed: {stderr_too})"
            );
        }
    }
    let mut c = Command::new(bin());
    c.args(["exec", "-d"]).arg(&uc).args(["--task", "demo/sales/pipe", "-dt", "2025-01-01"]);
    c.args(["--append", "e=out/pipe", "--", "sh", "-c", "echo x > \"$UBUNYE_OUT_E/p\""]);
    assert_eq!(closed_pipes(c, true).code(), Some(0));
    assert!(uc.join("out/pipe/p").exists(), "the batch landed");
}

/// `Command` is not `Clone`: the same program, arguments and environment.
fn c_clone(c: &Command) -> Command {
    let mut n = Command::new(c.get_program());
    n.args(c.get_args());
    if let Some(d) = c.get_current_dir() {
        n.current_dir(d);
    }
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => n.env(k, v),
            None => n.env_remove(k),
        };
    }
    n
}

/// `ubunye ARGS` on a terminal, judging from another host, as the fixtures want.
fn terminal(uc: &Path, args: &str, cols: u16, env: &[(&str, Option<&str>)], keys: Option<&str>) -> Option<String> {
    let mut env = env.to_vec();
    env.push(("UBUNYE_TEST_HOST", Some("elsewhere|pid:[1]")));
    let (code, text) = common::on_a_terminal(uc.parent().unwrap(), args, cols, &env, keys)?;
    assert_eq!(code, 0, "{args}:\n{text}");
    Some(text)
}

fn on_a_terminal(uc: &Path, args: &str, cols: u16) -> Option<String> {
    terminal(uc, args, cols, &[("NO_COLOR", Some("1"))], None)
}

/// `--color auto|always|never` beside NO_COLOR and CLICOLOR_FORCE: one rule
/// (`ubunye_tui::cli::colour`), for `leases list`, `runs` and the dashboard.
#[test]
fn colour_follows_one_rule_on_every_surface() {
    // A dead batch (red) and a running record (green): finished rows and
    // successful records are in the terminal's own colour.
    let (_d, uc, _) = fixture("dead-killed");
    let piped = |args: &[&str], env: &[(&str, &str)]| -> bool {
        let mut c = Command::new(bin());
        c.args(args).arg("-d").arg(&uc).env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        c.envs(env.iter().copied());
        let o = c.output().unwrap();
        assert!(o.status.success(), "{args:?} {env:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).contains("\x1b[")
    };
    for cmd in [&["leases", "list", "--all"][..], &["runs"]] {
        let with = |flags: &[&'static str]| -> Vec<&'static str> { flags.iter().chain(cmd).copied().collect() };
        assert!(!piped(&with(&[]), &[]), "{cmd:?}: piped, no colour");
        assert!(piped(&with(&[]), &[("CLICOLOR_FORCE", "1")]), "{cmd:?}: CLICOLOR_FORCE");
        assert!(!piped(&with(&[]), &[("CLICOLOR_FORCE", "0")]), "{cmd:?}: CLICOLOR_FORCE=0");
        assert!(!piped(&with(&[]), &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]), "{cmd:?}: NO_COLOR first");
        assert!(piped(&with(&["--color", "always"]), &[("NO_COLOR", "1")]), "{cmd:?}: the flag first");
        assert!(!piped(&with(&["--color", "never"]), &[("CLICOLOR_FORCE", "1")]), "{cmd:?}: never");
        let mut after: Vec<&str> = cmd.to_vec();
        after.extend(["--color", "always"]);
        assert!(piped(&after, &[]), "{cmd:?}: --color is global, after the subcommand too");
    }
    let Some(list) = terminal(&uc, "leases list --all -d uc", 120, &[], None) else { return };
    assert!(list.contains("\x1b[1;31m✖ dead\x1b[0m"), "a terminal is coloured:\n{list}");
    assert!(list.contains(" ✓ finished"), "a finished row in the terminal's own colour:\n{list}");
    let list = terminal(&uc, "leases list --all -d uc", 120, &[("NO_COLOR", Some("1"))], None).unwrap();
    assert!(!list.contains("\x1b["), "NO_COLOR:\n{list}");
    // The dashboard draws bold and reverse text in any case; colour is a
    // foreground colour (`38;5;N`, or `3N`).
    let colours = |text: &str| {
        regex::Regex::new(r"\x1b\[([0-9;]*)m")
            .unwrap()
            .captures_iter(text)
            .any(|c| c[1].split(';').any(|p| p == "38" || p.parse::<u8>().is_ok_and(|n| (30..=37).contains(&n))))
    };
    for (args, env, want) in [
        ("top -d uc", None, true),
        ("top --color never -d uc", None, false),
        ("top -d uc", Some("1"), false),
        ("--color always top -d uc", Some("1"), true),
    ] {
        let screen = terminal(&uc, args, 100, &[("NO_COLOR", env)], Some("q")).unwrap();
        assert_eq!(colours(&screen), want, "{args} NO_COLOR={env:?}");
        assert!(screen.contains("ubunye top"), "{args}: the dashboard was drawn");
    }
}

/// Every table has one renderer: piped, cells whole and no line ending in a
/// space; on a wide terminal only the last column is cut (with `…`), and no
/// word is wrapped in the middle.
#[test]
fn tables_keep_cells_whole_and_pad_no_line() {
    let (_d, uc, _) = fixture("taken-over-done");
    let o = Command::new(bin()).args(["runs", "--json", "-d"]).arg(&uc).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let records = v["records"].as_array().unwrap();
    // The text shows each start as a short local time (the whole RFC 3339
    // time is --json's).
    let started: Vec<String> = records
        .iter()
        .map(|r| ubunye::timefmt::parse(r["started_at"].as_str().unwrap()).unwrap())
        .map(|t| ubunye::timefmt::short_local(t, std::time::SystemTime::now()))
        .collect();
    let error = records.iter().find_map(|r| r["error"].as_str()).unwrap();
    assert_eq!(started.len(), 3);
    for args in [&["runs"][..], &["leases", "list", "--all"]] {
        let o = Command::new(bin()).args(args).arg("-d").arg(&uc).env("NO_COLOR", "1").output().unwrap();
        let text = String::from_utf8(o.stdout).unwrap();
        for l in text.lines() {
            assert!(!l.ends_with(' '), "{args:?}: a piped line ends in spaces: {l:?}");
        }
        if args[0] == "runs" {
            for s in &started {
                assert!(text.lines().any(|l| l.contains(&format!(" {s} "))), "{s} whole:\n{text}");
            }
            assert!(text.contains(error), "piped, the last column is whole too:\n{text}");
        }
    }
    let Some(text) = on_a_terminal(&uc, "runs -d uc", 120) else { return };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "a header and a line per record, none wrapped:\n{text}");
    for s in &started {
        assert!(lines.iter().any(|l| l.contains(&format!(" {s} "))), "{s} whole on a terminal:\n{text}");
    }
    let cut: Vec<&&str> = lines.iter().filter(|l| l.ends_with('…')).collect();
    assert_eq!(cut.len(), 1, "only the long error is cut:\n{text}");
    assert!(cut[0].contains(" interrupted ") && cut[0].chars().count() <= 120, "{text}");
}
