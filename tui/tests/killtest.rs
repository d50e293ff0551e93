//! The kill test of seed 004, on `ubunye exec` and `ubunye leases takeover`:
//! many batches; `ubunye exec` killed with SIGKILL at random moments, and, one
//! time in three, a takeover of a batch a killed run left behind, killed at a
//! random moment too (in its settle wait, its removals, its release); a seed
//! makes it repeatable. Then one clean pass with `--resume`; then a verifier that
//! recomputes what every output must hold: 0 missing, 0 doubled, 0 corrupt, 0
//! leftover staging or temp files.
//!
//! `UBUNYE_KILLS` (default 60, as CI runs it), `UBUNYE_KILL_SEED` (default 1) and
//! `UBUNYE_KILL_BATCHES` (default 8) size it; `scripts/killtest` runs it at any
//! size and prints the table.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ubunye_testkit::Rng;

const FILES: usize = 6;
const DECOY: &str = "_ubunye-00000000dec0";

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The job: write FILES files for its batch, slowly, so that kills land inside
/// it. Batches with an odd number are partitioned (`dt=<batch>/`).
fn job(batch: usize) -> String {
    let dir = if batch % 2 == 1 { "$UBUNYE_OUT_EVENTS/dt=$UBUNYE_VAR_DT" } else { "$UBUNYE_OUT_EVENTS" };
    format!(
        "mkdir -p \"{dir}\"; for i in $(seq 1 {FILES}); do printf '%s:%s\\n' \"$UBUNYE_VAR_DT\" $i > \"{dir}/part-$i-$UBUNYE_RUN_ID.txt\"; sleep 0.01; done"
    )
}

fn exec(uc: &Path, batch: usize) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ubunye"));
    c.env("UBUNYE_TEST_SETTLE", "40ms")
        .env_remove("UBUNYE_RUN_LEASE")
        .args(["exec", "-q", "-d"])
        .arg(uc)
        .args([
            "--task",
            "demo/sales/ingest",
            "-dt",
            &format!("b{batch:03}"),
            "--resume",
            "--append",
            "events=out/events",
            "--",
            "sh",
            "-c",
            &job(batch),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// `ubunye leases takeover <key> --yes` of a batch of this use case.
fn takeover(uc: &Path, key: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ubunye"));
    c.env("UBUNYE_TEST_SETTLE", "40ms")
        .args(["leases", "takeover", key, "--yes", "-d"])
        .arg(uc)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// The keys of the leases there now (held or left by a killed run).
fn leases_now(uc: &Path) -> Vec<String> {
    let mut keys: Vec<String> = fs::read_dir(uc.join(".ubunye/leases/demo/sales/ingest"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.len() == 21 && n.ends_with(".json"))
                .map(|n| n[..16].to_string())
                .collect()
        })
        .unwrap_or_default();
    keys.sort();
    keys
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Table {
    kills: usize,
    takeover_kills: usize,
    missing: usize,
    doubled: usize,
    corrupt: usize,
    leftover_staging: usize,
    leftover_temp: usize,
    foreign_lost: usize,
}

fn walk(d: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.clone());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, out);
            }
        }
    }
}

fn verify(uc: &Path, batches: usize, kills: usize, takeover_kills: usize) -> Table {
    let mut t = Table { kills, takeover_kills, ..Table::default() };
    let out = uc.join("out/events");
    if fs::read_to_string(out.join("foreign.txt")).ok().as_deref() != Some("not a run's") {
        t.foreign_lost += 1;
    }
    if fs::read_to_string(out.join(DECOY).join("keep.txt")).ok().as_deref() != Some("decoy") {
        t.foreign_lost += 1;
    }
    let mut counts = vec![vec![0usize; FILES + 1]; batches];
    let mut all = Vec::new();
    walk(&out, &mut all);
    for p in all {
        let rel = p.strip_prefix(&out).unwrap().to_string_lossy().into_owned();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if rel.starts_with(DECOY) {
            continue;
        }
        if name.starts_with("_ubunye-") {
            t.leftover_staging += 1;
            continue;
        }
        if p.is_dir() || name == "_SUCCESS" || name == "foreign.txt" {
            continue;
        }
        if name.ends_with(".tmp") || name.starts_with('.') {
            t.leftover_temp += 1;
            continue;
        }
        let text = fs::read_to_string(&p).unwrap_or_default();
        let parsed = text.strip_suffix('\n').and_then(|l| l.split_once(':')).and_then(|(b, i)| {
            let b: usize = b.strip_prefix('b')?.parse().ok()?;
            let i: usize = i.parse().ok()?;
            (b < batches && (1..=FILES).contains(&i)).then_some((b, i))
        });
        match parsed {
            Some((b, i)) if name.starts_with(&format!("part-{i}-")) => counts[b][i] += 1,
            _ => t.corrupt += 1,
        }
    }
    for per_batch in &counts {
        for &c in &per_batch[1..] {
            if c == 0 {
                t.missing += 1;
            } else if c > 1 {
                t.doubled += c - 1;
            }
        }
    }
    // The lease folder: every lease released, no orphan, no tombstone of a run
    // that is still somehow holding; temp files of a killed save count too.
    let mut leases = Vec::new();
    walk(&uc.join(".ubunye/leases"), &mut leases);
    for p in leases {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let lease = name.len() == 21 && name.ends_with(".json");
        if lease || name.contains(".dead-") {
            t.leftover_staging += 1;
        }
    }
    t
}

fn run_killtest(kills: usize, seed: u64, batches: usize) -> Table {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join("out/events").join(DECOY)).unwrap();
    fs::write(uc.join("out/events/foreign.txt"), "not a run's").unwrap();
    fs::write(uc.join("out/events").join(DECOY).join("keep.txt"), "decoy").unwrap();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut done = 0;
    let mut takeover_kills = 0;
    while done + takeover_kills < kills {
        let left = leases_now(&uc);
        if !left.is_empty() && rng.below(3) == 0 {
            // A takeover of a batch a killed run left, killed at a random moment.
            let key = &left[rng.below(left.len() as u64) as usize];
            let mut child = takeover(&uc, key).spawn().unwrap();
            if common::kill_after(&mut child, Duration::from_millis(rng.below(80))) {
                takeover_kills += 1;
            }
            let out = child.wait_with_output().unwrap();
            if let Some(code) = out.status.code() {
                // Done (0), or refused in one line (1): a takeover killed before
                // left its own mark, or the batch was already taken back.
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(code == 0 || (code == 1 && err.lines().count() == 1), "takeover {key} exited {code}: {err}");
            }
            continue;
        }
        let batch = rng.below(batches as u64) as usize;
        let mut child = exec(&uc, batch).spawn().unwrap();
        if common::kill_after(&mut child, Duration::from_millis(rng.below(150))) {
            done += 1;
        }
        let out = child.wait_with_output().unwrap();
        if let Some(code) = out.status.code() {
            // Finished on its own: done, skipped (finished), or refused because a
            // killed run's lease is being taken over by nobody yet (never here:
            // same host, pids are checked).
            assert!(code == 0, "batch b{batch:03} exited {code}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    // One clean pass with --resume: every batch done or skipped.
    for b in 0..batches {
        let out = exec(&uc, b).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "clean pass b{b:03}: {}", String::from_utf8_lossy(&out.stderr));
    }
    verify(&uc, batches, done, takeover_kills)
}

#[test]
fn random_kills_then_one_clean_pass_leave_every_batch_exactly_once() {
    let kills = env_num("UBUNYE_KILLS", 60) as usize;
    let seed = env_num("UBUNYE_KILL_SEED", 1);
    let batches = env_num("UBUNYE_KILL_BATCHES", 8) as usize;
    let t = run_killtest(kills, seed, batches);
    eprintln!(
        "{batches} batches x {FILES} files, {} SIGKILLs at random moments (seed {seed}): {} of ubunye exec, {} of ubunye leases takeover; then one clean pass with --resume",
        t.kills + t.takeover_kills,
        t.kills,
        t.takeover_kills
    );
    eprintln!("missing doubled corrupt leftover-staging leftover-temp foreign-lost");
    eprintln!(
        "{:>7} {:>7} {:>7} {:>16} {:>13} {:>12}",
        t.missing, t.doubled, t.corrupt, t.leftover_staging, t.leftover_temp, t.foreign_lost
    );
    assert_eq!(t.kills + t.takeover_kills, kills);
    assert_eq!(
        t,
        Table { kills: t.kills, takeover_kills: t.takeover_kills, ..Table::default() },
        "every batch exactly once, nothing left over"
    );
}
