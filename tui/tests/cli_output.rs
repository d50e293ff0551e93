//! What the binary prints, as a script or a pipe sees it: a reader that goes
//! away (`| head -1`) ends the output quietly, never a panic.

use std::path::Path;
use std::process::{Command, Stdio};

mod common;
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
    let (_d, uc) = fixture("dead-killed");
    let cases: [(&[&str], i32); 11] = [
        (&["top", "-d", "nowhere"], 2),
        (&["leases", "list", "--all", "-d", "uc"], 0),
        (&["leases", "list", "--all", "--json", "-d", "uc"], 0),
        (&["leases", "explain", "7d10", "-d", "uc"], 0),
        (&["leases", "takeover", "7d10", "--dry-run", "-d", "uc"], 0),
        (&["runs", "-d", "uc"], 0),
        (&["runs", "--json", "-d", "uc"], 0),
        (&["doctor", "-d", "uc"], 0),
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
