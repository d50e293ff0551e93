//! `leases list --state dead,stalled,kept,unreadable --fail-if-any`: the
//! one-liner for cron. `--state` takes a comma-separated list as
//! well as repeats, `stalled` picks the live batches whose heartbeat
//! stopped, and `--fail-if-any` exits 1 with the rows, 0 when none.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common;
use common::*;

fn list(uc: &Path, args: &[&str]) -> (i32, String, String) {
    let o =
        Command::new(bin()).args(["leases", "list", "-d"]).arg(uc).args(args).env("NO_COLOR", "1").output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap_or(-1), s(&o.stdout), s(&o.stderr))
}

const CRON: &str = "dead,stalled,kept,unreadable";

#[test]
fn a_comma_list_is_the_same_as_repeats_and_any_row_fails() {
    let (_d, uc, _) = fixture("dead-killed");
    let (code, comma, _) = list(&uc, &["--state", "dead,kept"]);
    assert_eq!(code, 0, "without --fail-if-any a listing is a success");
    let (_, repeated, _) = list(&uc, &["--state", "dead", "--state", "kept"]);
    assert_eq!(comma, repeated);
    assert!(comma.contains("dead"), "{comma}");
    let (code, out, err) = list(&uc, &["--state", CRON, "--fail-if-any"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, comma, "the rows are printed as without it");
    let (code, out, _) = list(&uc, &["--state", CRON, "--fail-if-any", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["batches"][0]["state"], "dead", "{v}");
}

#[test]
fn nothing_listed_is_a_success_and_says_why() {
    let (_d, uc, _) = fixture("finished");
    let (code, out, err) = list(&uc, &["--state", CRON, "--fail-if-any"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No batch matches --state dead --state kept --state unreadable --state stalled"), "{out}");
    let (code, out, _) = list(&uc, &["--state", CRON, "--fail-if-any", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["batches"].as_array().map(Vec::len), Some(0), "{v}");
    let (code, _, err) = list(&uc, &["--state", "dead,nonsense"]);
    assert_eq!(code, 2, "a word that is no state is a usage error: {err}");
}

fn stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('T'))
}

/// A real `ubunye exec` holder stopped with SIGSTOP (its heartbeat stops,
/// its process lives) is listed as stalled and fails the check; resumed and
/// its lease written again, it passes.
#[test]
fn a_stopped_holder_is_stalled_until_it_is_resumed() {
    let (d, uc) = empty_use_case();
    let started = d.path().join("started");
    let mut holder = Command::new(bin())
        .env("UBUNYE_TEST_HEARTBEAT_EVERY", "200ms")
        .args(["exec", "-q", "-d"])
        .arg(&uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-02", "--append", "events=out/events", "--"])
        .args(["sh", "-c", &format!("touch {}; sleep 30", started.display())])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let wait = |what: &str, ok: &dyn Fn() -> bool| {
        let start = Instant::now();
        while !ok() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait("the command did not start", &|| started.exists());
    let (code, out, _) = list(&uc, &["--state", CRON, "--fail-if-any"]);
    assert_eq!(code, 0, "a live holder passes: {out}");
    let pid = rustix::process::Pid::from_raw(holder.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    wait("exec did not stop", &|| stopped(holder.id()));
    // Its lease last written ten minutes ago, as a stopped heartbeat leaves it.
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    set_mtime(&lease, SystemTime::now() - Duration::from_secs(600));
    let (code, out, err) = list(&uc, &["--state", CRON, "--fail-if-any", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(v["batches"][0]["state"], "live", "{v}");
    assert!(v["batches"][0]["flags"].as_array().unwrap().iter().any(|f| f == "stalled"), "{v}");
    // Resumed: its heartbeat writes the lease again.
    let before = std::fs::metadata(&lease).unwrap().modified().unwrap();
    wait("the heartbeat did not resume", &|| {
        std::fs::metadata(&lease).and_then(|m| m.modified()).is_ok_and(|t| t > before)
    });
    let (code, out, _) = list(&uc, &["--state", CRON, "--fail-if-any"]);
    assert_eq!(code, 0, "resumed, it passes: {out}");
    holder.kill().unwrap();
    holder.wait().unwrap();
}
