//! Both engines on one folder: `ubunye exec` (this engine) and the real Python
//! peer's `ubunye run` (ubunye-engine 0.8.0) on the same use case, task and
//! variables, so the same batch key.
//!
//! The peer comes from `UBUNYE_PEER` (its `ubunye` command; `scripts/test` sets
//! it up with `scripts/peer-env`). Without it these tests say so and pass, unless
//! `UBUNYE_REQUIRE_PEER=1` (as CI sets), when they fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{copy_tree, peer, root};

fn use_case() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    copy_tree(&root().join("tests/peer_uc"), &uc);
    (d, uc)
}

/// The peer's run of demo/sales/ingest for `dt`, with its test hooks in `env`.
fn peer_run(peer: &Path, uc: &Path, dt: &str, extra: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(peer);
    c.current_dir(uc.parent().unwrap())
        .args([
            "run",
            "-d",
            "uc",
            "-u",
            "demo",
            "-p",
            "sales",
            "--backend",
            "pandas",
            "--lineage",
            "-t",
            "ingest",
            "-dt",
            dt,
        ])
        .args(extra)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// This engine's run of the same batch: a command writing one file.
fn rust_run(uc: &Path, dt: &str, extra: &[&str], script: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ubunye"));
    c.current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_SETTLE", "100ms")
        .env_remove("UBUNYE_TEST_HOST")
        .args([
            "exec",
            "-q",
            "-d",
            "uc",
            "-u",
            "demo",
            "-p",
            "sales",
            "-t",
            "ingest",
            "-dt",
            dt,
            "--append",
            "events=out/events",
        ])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

const WRITE: &str = "echo rust > \"$UBUNYE_OUT_EVENTS/part-rust-$UBUNYE_RUN_ID.txt\"";

/// Data files of the batch in out/events (there is one batch per use case here).
fn data_files(uc: &Path) -> Vec<String> {
    let Ok(rd) = fs::read_dir(uc.join("out/events")) else { return Vec::new() };
    let mut v: Vec<String> =
        rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("part-")).collect();
    v.sort();
    v
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn wait_for(p: &Path, secs: u64) {
    let t = Instant::now();
    while !p.exists() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out waiting for {}", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lease(uc: &Path) -> PathBuf {
    uc.join(".ubunye/leases/demo/sales/ingest/39bc42311894ddba.json")
}

#[test]
fn each_engines_live_lease_refuses_the_others_run() {
    let Some(peer) = peer() else { return };
    // The peer holds the batch (sleeping in its transform).
    let (d, uc) = use_case();
    let mark = d.path().join("mark");
    let holder =
        peer_run(&peer, &uc, "2025-01-01", &[], &[("UB_SLEEP_TRANSFORM", "4"), ("UB_MARK", mark.to_str().unwrap())])
            .spawn()
            .unwrap();
    wait_for(&mark, 60);
    let o = rust_run(&uc, "2025-01-01", &[], WRITE).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("of demo/sales/ingest with the same variables is still running (process"), "{err}");
    assert!(err.contains(&format!("process {} on", holder.id())), "names the peer's process: {err}");
    let h = holder.wait_with_output().unwrap();
    assert!(h.status.success(), "{}", text(&h));
    assert_eq!(data_files(&uc).len(), 1);
    // This engine holds it (a command that sleeps): the peer is refused.
    let (_d, uc) = use_case();
    let holder = rust_run(&uc, "2025-01-01", &[], &format!("sleep 3; {WRITE}")).spawn().unwrap();
    wait_for(&lease(&uc), 10);
    let o = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = text(&o);
    let first = err.lines().find(|l| l.contains("[ERROR]")).unwrap_or_default();
    assert!(
        first.contains("[ERROR] Run refused for ingest: Run ")
            && first.contains("with the same variables is still running (process"),
        "{err}"
    );
    let h = holder.wait_with_output().unwrap();
    assert!(h.status.success(), "{}", text(&h));
    assert_eq!(data_files(&uc).len(), 1);
}

fn pair(a: Command, b: Command, stagger: Duration) -> (Output, Output) {
    let (mut a, mut b) = (a, b);
    let ca: Child = a.spawn().unwrap();
    std::thread::sleep(stagger);
    let cb: Child = b.spawn().unwrap();
    (ca.wait_with_output().unwrap(), cb.wait_with_output().unwrap())
}

/// E-02: pairs of runs of one batch started together. In every pair the batch
/// lands once and the loser is refused (held, or finished if the winner was
/// already done).
#[test]
fn pairs_started_together_land_the_batch_once() {
    let peer = peer();
    let mut seed = 0x5eed_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut table = [(0usize, 0usize), (0, 0)];
    for i in 0..100 {
        let rust_python = i % 2 == 0;
        if rust_python && peer.is_none() {
            continue;
        }
        let (_d, uc) = use_case();
        let stagger = Duration::from_millis(next() % 400);
        let (a, b) = if rust_python {
            let p = peer_run(peer.as_ref().unwrap(), &uc, "2025-01-01", &[], &[("UB_SLEEP_TRANSFORM", "1")]);
            let r = rust_run(&uc, "2025-01-01", &[], &format!("sleep 1; {WRITE}"));
            if next() % 2 == 0 { pair(p, r, stagger) } else { pair(r, p, stagger) }
        } else {
            pair(
                rust_run(&uc, "2025-01-01", &[], &format!("sleep 0.3; {WRITE}")),
                rust_run(&uc, "2025-01-01", &[], &format!("sleep 0.3; {WRITE}")),
                stagger / 4,
            )
        };
        let codes = [a.status.code(), b.status.code()];
        assert!(
            codes.contains(&Some(0)) && codes.contains(&Some(1)),
            "pair {i}: {codes:?}\n{}\n{}",
            text(&a),
            text(&b)
        );
        let loser = if a.status.code() == Some(1) { &a } else { &b };
        let l = text(loser);
        assert!(l.contains("still running") || l.contains("already finished this batch"), "pair {i}: {l}");
        let files = data_files(&uc);
        assert_eq!(files.len(), 1, "pair {i}: the batch once: {files:?}");
        let slot = &mut table[usize::from(!rust_python)];
        slot.0 += 1;
        if l.contains("still running") {
            slot.1 += 1;
        }
    }
    eprintln!(
        "pairs: Rust+Python {} (refused while running: {}), Rust+Rust {} (refused while running: {}); every batch landed once",
        table[0].0, table[0].1, table[1].0, table[1].1
    );
}

/// E-01: the peer's run SIGKILLed at a random moment, then `ubunye leases
/// takeover`, then the peer's next run: the batch is there exactly once. And the
/// reverse: this engine's run killed, the peer's next run takes over.
#[test]
fn crash_then_repair_across_engines() {
    let Some(peer) = peer() else { return };
    let mut seed = 0xdead_beef_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut outcomes = std::collections::BTreeMap::new();
    for i in 0..20 {
        let (_d, uc) = use_case();
        // Half the runs hang for a moment after their append landed, so that
        // kills land while the lease holds a claim, not only before or after.
        let hang: &[(&str, &str)] = if i % 2 == 0 { &[("UB_HANG_AFTER_WRITE", "1.5")] } else { &[] };
        let mut child = peer_run(&peer, &uc, "2025-01-01", &[], hang).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(600 + next() % 2400));
        let _ = child.kill();
        let _ = child.wait();
        let t = Command::new(env!("CARGO_BIN_EXE_ubunye"))
            .current_dir(uc.parent().unwrap())
            .env("UBUNYE_TEST_SETTLE", "100ms")
            .args(["leases", "takeover", "39bc", "-d", "uc", "--yes"])
            .output()
            .unwrap();
        let n = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
        assert!(
            n.status.code() == Some(0) || text(&n).contains("already finished this batch"),
            "trial {i}: {}",
            text(&n)
        );
        assert_eq!(data_files(&uc).len(), 1, "trial {i}: takeover said {}", text(&t));
        *outcomes
            .entry(format!(
                "peer killed, takeover {}",
                if t.status.success() { "repaired" } else { "had nothing to do" }
            ))
            .or_insert(0) += 1;
    }
    for i in 0..20 {
        let (_d, uc) = use_case();
        let mut child = rust_run(&uc, "2025-01-01", &[], &format!("{WRITE}; sleep 0.{}", next() % 5)).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(next() % 600));
        let _ = child.kill();
        let _ = child.wait();
        let n = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
        assert!(
            n.status.code() == Some(0) || text(&n).contains("already finished this batch"),
            "reverse trial {i}: {}",
            text(&n)
        );
        assert_eq!(data_files(&uc).len(), 1, "reverse trial {i}: {}", text(&n));
        *outcomes.entry("exec killed, peer ran next".to_string()).or_insert(0) += 1;
    }
    eprintln!("{outcomes:?}: every batch landed exactly once");
}

/// A batch finished by one engine is refused by the other and replaced by the
/// other's --rerun.
#[test]
fn finished_batches_across_engines() {
    let Some(peer) = peer() else { return };
    let (_d, uc) = use_case();
    let o = rust_run(&uc, "2025-01-01", &[], WRITE).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("already finished this batch (run "), "{}", text(&o));
    let o = peer_run(&peer, &uc, "2025-01-01", &["--rerun"], &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let files = data_files(&uc);
    assert!(
        files.len() == 1 && files[0].ends_with(".snappy.parquet"),
        "the peer replaced this engine's file: {files:?}"
    );
    // The reverse.
    let (_d, uc) = use_case();
    let o = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = rust_run(&uc, "2025-01-01", &[], WRITE).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already finished this batch"));
    let o = rust_run(&uc, "2025-01-01", &["--rerun"], WRITE).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let files = data_files(&uc);
    assert!(files.len() == 1 && files[0].starts_with("part-rust-"), "this engine replaced the peer's file: {files:?}");
    // And the peer reads this engine's records and notes: its own lineage tool.
    for args in [&["lineage", "list"][..], &["lineage", "show"], &["lineage", "openlineage"]] {
        let o = Command::new(&peer)
            .current_dir(uc.parent().unwrap())
            .args(args)
            .args(["-d", "uc", "-u", "demo", "-p", "sales", "-t", "ingest"])
            .output()
            .unwrap();
        assert!(
            o.status.success() && !text(&o).contains("Traceback"),
            "the peer's `{}` on this engine's records:\n{}",
            args.join(" "),
            text(&o)
        );
    }
}

/// The state `leases list --all --json` gives the batch, and its note.
fn listed(uc: &Path) -> (String, String, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_ubunye"))
        .current_dir(uc.parent().unwrap())
        .args(["leases", "list", "-d", "uc", "--all", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = v["batches"].as_array().unwrap().iter().find(|b| b["key"] == "39bc42311894ddba").cloned().unwrap();
    (b["state"].as_str().unwrap().to_string(), b["note"].as_str().unwrap().to_string(), b["history"].clone())
}

/// With the real peer: a finished batch, then a `--rerun` that fails
/// after its append landed (the peer takes its files back, its record says
/// error). The batch is finished (the peer's plain run is refused with
/// BatchFinished), and the failed rerun is in its history and its note.
#[test]
fn a_failed_peer_rerun_leaves_a_finished_batch_as_the_peer_treats_it() {
    let Some(peer) = peer() else { return };
    let (_d, uc) = use_case();
    let o = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = peer_run(&peer, &uc, "2025-01-01", &["--rerun"], &[("UB_FAIL_AFTER_WRITE", "1")]).output().unwrap();
    assert!(!o.status.success(), "the rerun fails: {}", text(&o));
    assert_eq!(data_files(&uc).len(), 1, "its file was taken back");
    let (state, note, history) = listed(&uc);
    assert_eq!(state, "finished", "{note}");
    assert!(note.contains("a later run") && note.contains("failed"), "{note}");
    assert!(history.as_array().unwrap().iter().any(|h| h["status"] == "error"), "{history}");
    let e = Command::new(env!("CARGO_BIN_EXE_ubunye"))
        .current_dir(uc.parent().unwrap())
        .args(["leases", "explain", "39bc4231", "-d", "uc", "--json"])
        .output()
        .unwrap();
    let e: serde_json::Value = serde_json::from_slice(&e.stdout).unwrap();
    assert_eq!((e["batch"]["state"].as_str(), &e["history"]), (Some("finished"), &history));
    // The peer agrees that it is finished: its plain run is refused.
    let o = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("finished"), "{}", text(&o));
}

/// With the real peer: an empty lease taken over by `ubunye leases takeover`
/// leaves only `<key>.taken-`; the batch is not finished, and the
/// peer's next run goes ahead, as this engine's list says.
#[test]
fn an_empty_lease_taken_over_lets_the_peers_run_go_ahead() {
    let Some(peer) = peer() else { return };
    let (_d, uc) = use_case();
    fs::create_dir_all(lease(&uc).parent().unwrap()).unwrap();
    fs::write(lease(&uc), b"").unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(20 * 60);
    fs::File::options().write(true).open(lease(&uc)).unwrap().set_modified(old).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ubunye"))
        .current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_SETTLE", "100ms")
        .args(["leases", "takeover", "39bc4231", "-d", "uc", "--yes"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let (state, note, _) = listed(&uc);
    assert_eq!(state, "interrupted", "{note}");
    let o = peer_run(&peer, &uc, "2025-01-01", &[], &[]).output().unwrap();
    assert!(o.status.success(), "the peer's run goes ahead: {}", text(&o));
    assert_eq!(listed(&uc).0, "finished");
}
