//! What the kill tests share (tui/tests/slow/killtest.rs, and the power-cut test,
//! tui/tests/slow/powercut.rs): the job, the commands, and the verifier that
//! recomputes what every output must hold.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const FILES: usize = 6;
pub const DECOY: &str = "_ubunye-00000000dec0";

pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The job: write FILES files for its batch, slowly, so that kills land inside
/// it. Batches with an odd number are partitioned (`dt=<batch>/`).
pub fn job(batch: usize) -> String {
    let dir = if batch % 2 == 1 { "$UBUNYE_OUT_EVENTS/dt=$UBUNYE_VAR_DT" } else { "$UBUNYE_OUT_EVENTS" };
    format!(
        "mkdir -p \"{dir}\"; for i in $(seq 1 {FILES}); do printf '%s:%s\\n' \"$UBUNYE_VAR_DT\" $i > \"{dir}/part-$i-$UBUNYE_RUN_ID.txt\"; sleep 0.01; done"
    )
}

/// `ubunye exec --rerun` of a batch: it replaces what a finished run landed.
pub fn rerun(uc: &Path, batch: usize) -> Command {
    let c = exec(uc, batch);
    let args: Vec<std::ffi::OsString> =
        c.get_args().map(|a| if a == "--resume" { "--rerun".into() } else { a.to_os_string() }).collect();
    let mut r = Command::new(c.get_program());
    r.envs(c.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_os_string(), v.to_os_string()))));
    r.env_remove("UBUNYE_RUN_LEASE").args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    r
}

pub fn exec(uc: &Path, batch: usize) -> Command {
    let mut c = Command::new(super::bin());
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
pub fn takeover(uc: &Path, key: &str) -> Command {
    let mut c = Command::new(super::bin());
    c.env("UBUNYE_TEST_SETTLE", "40ms")
        .args(["leases", "takeover", key, "--yes", "-d"])
        .arg(uc)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// The keys of the leases there now (held or left by a killed run).
pub fn leases_now(uc: &Path) -> Vec<String> {
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
pub struct Table {
    pub kills: usize,
    pub takeover_kills: usize,
    pub missing: usize,
    pub doubled: usize,
    pub corrupt: usize,
    pub leftover_staging: usize,
    pub leftover_temp: usize,
    pub foreign_lost: usize,
}

pub fn walk(d: &Path, out: &mut Vec<PathBuf>) {
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

pub fn verify(uc: &Path, batches: usize, kills: usize, takeover_kills: usize) -> Table {
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
