//! Random use-case trees made of what the engines really leave: leases
//! (live, dead, stalled, committed, kept, empty, damaged), orphans, notes,
//! done and takeover marks (the empty lease's `<key>.taken-` too), temp
//! files, unknown files and run records of every status (some half-written,
//! some found only by their variables), for the agreement and damage tests.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::dash::Walk;
use ubunye_testkit::{ELSEWHERE, TASK, key_of, set_mtime};

/// A tree written under `uc`, and what the test must know of it.
pub struct Tree {
    pub uc: PathBuf,
    pub leases: PathBuf,
    pub records: PathBuf,
    /// The pids the made-up process table holds (live holders).
    pub alive: Vec<i32>,
    pub now: SystemTime,
}

fn run_id(w: &mut Walk) -> String {
    format!("0f1e2d3c-{:04x}-4000-8000-{:012x}", w.next(0xffff), w.next(1 << 40))
}

fn rfc(t: SystemTime) -> String {
    ubunye::timefmt::rfc3339(t)
}

fn secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// A lease document as the peer writes it.
fn lease_doc(w: &mut Walk, run: &str, pid: i32, host: &str, at: SystemTime, claims: &[String]) -> serde_json::Value {
    let mut doc = json!({
        "run_id": run, "task": TASK, "pid": pid, "pid_started": "4242", "host": host,
        "started_at": rfc(at), "heartbeat": secs(at),
        "outputs": {"events": {"appends": true, "exact": true, "state": "writing", "claimed": claims}},
    });
    match w.next(6) {
        0 => doc["committed"] = json!(true),
        1 => doc["kept"] = json!(true),
        2 => doc["outputs"]["events"]["claimed"] = json!([]),
        _ => {}
    }
    doc
}

fn record(run: &str, dt: &str, status: &str, started: SystemTime, ended: Option<SystemTime>) -> serde_json::Value {
    json!({
        "run_id": run, "task_path": TASK, "started_at": ubunye::timefmt::iso_micros(started),
        "ended_at": ended.map(ubunye::timefmt::iso_micros), "status": status,
        "outputs": [], "error": if status == "error" { json!("ValueError: boom") } else { json!(null) },
        "backend": "pandas", "variables": {"dt": dt, "mode": "DEV"}, "record_version": 2,
    })
}

fn write(p: &Path, bytes: &[u8], mtime: SystemTime) {
    fs::write(p, bytes).unwrap();
    set_mtime(p, mtime);
}

/// Bytes that are not what they should be: cut off, not JSON, not UTF-8.
pub fn damage(w: &mut Walk, good: &[u8]) -> Vec<u8> {
    match w.next(3) {
        0 => good[..good.len() / 2].to_vec(),
        1 => b"{not json".to_vec(),
        _ => b"{\"run_id\": \"\xff\xfe\"}".to_vec(),
    }
}

/// A random tree of up to four batches of the task, at `now`.
pub fn random(w: &mut Walk, uc: &Path, now: SystemTime) -> Tree {
    let leases = uc.join(".ubunye/leases").join(TASK);
    let records = uc.join(".ubunye/lineage").join(TASK);
    fs::create_dir_all(&leases).unwrap();
    fs::create_dir_all(&records).unwrap();
    fs::create_dir_all(uc.join("out/events")).unwrap();
    let mut alive = Vec::new();
    let ago = |m: u64| now - Duration::from_secs(m);
    for (i, dt) in ["2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04"].iter().enumerate() {
        if w.next(5) == 0 {
            continue;
        }
        let key = key_of(dt);
        let run = run_id(w);
        let started = ago(3600 - 60 * i as u64);
        let claim = format!("out/events/part-{i}-{}.csv", w.next(1000));
        if w.next(2) == 0 {
            write(&uc.join(&claim), b"a,1\n", started);
        }
        let claims = vec![claim];
        // The lease: live on this host, dead on this host, fresh or stale on
        // another, empty, or damaged.
        let has_lease = w.next(3) == 0;
        if has_lease {
            let pid = 30_000 + i as i32;
            let (host, mtime) = match w.next(5) {
                0 => {
                    alive.push(pid);
                    (ELSEWHERE, ago(w.next(200)))
                }
                1 => (ELSEWHERE, ago(5)),
                2 => ("vm|pid:[9]", ago(60)),
                _ => ("vm|pid:[9]", ago(1200)),
            };
            let doc = lease_doc(w, &run, pid, host, mtime, &claims);
            let bytes = match w.next(10) {
                0 => Vec::new(),
                1 => damage(w, doc.to_string().as_bytes()),
                _ => serde_json::to_vec(&doc).unwrap(),
            };
            write(&leases.join(format!("{key}.json")), &bytes, mtime);
        }
        if w.next(6) == 0 {
            let orphan = run_id(w);
            let doc = lease_doc(w, &orphan, 31_000 + i as i32, "vm|pid:[9]", ago(1800), &claims);
            write(&leases.join(format!("{key}.dead-0badc0de.json")), doc.to_string().as_bytes(), ago(1700));
            if w.next(2) == 0 {
                let r = record(&orphan, dt, "running", ago(1800), None);
                write(&records.join(format!("{orphan}.json")), r.to_string().as_bytes(), ago(1800));
            }
        }
        let finisher = run_id(w);
        if w.next(2) == 0 {
            let note = json!({"run_id": finisher, "task": TASK, "finished_at": rfc(ago(3000)),
                "outputs": {"events": {"claimed": if w.next(3) == 0 { vec![] } else { claims.clone() }}}});
            let bytes =
                if w.next(12) == 0 { damage(w, note.to_string().as_bytes()) } else { note.to_string().into_bytes() };
            write(&leases.join(format!("{key}.finished.json")), &bytes, ago(3000));
            let r = record(&finisher, dt, "success", ago(3010), Some(ago(3001)));
            write(&records.join(format!("{finisher}.json")), r.to_string().as_bytes(), ago(3000));
        }
        // The lease's own run's record, or a later run's that did not finish.
        let status = ["running", "success", "error", "interrupted"][w.next(4) as usize];
        if has_lease || w.next(2) == 0 {
            let rec =
                record(&run, dt, status, started, (status != "running").then(|| started + Duration::from_secs(9)));
            let bytes =
                if w.next(8) == 0 { damage(w, rec.to_string().as_bytes()) } else { rec.to_string().into_bytes() };
            write(&records.join(format!("{run}.json")), &bytes, started);
        }
        match w.next(8) {
            0 => write(&leases.join(format!("{key}.taken-")), b"", ago(100)),
            1 => write(&leases.join(format!("{key}.taken-{run}")), b"", ago(100)),
            2 => write(&leases.join(format!("{key}.done-{run}")), b"", ago(100)),
            3 => write(&leases.join(format!("{key}.0badc0de.tmp")), b"{", ago(100)),
            4 => write(&leases.join(format!("{key}.tried")), b"", ago(100)),
            _ => {}
        }
    }
    // A record of a batch with no lease-folder file (found by its variables only).
    if w.next(3) == 0 {
        let run = run_id(w);
        let r = record(
            &run,
            "2025-01-05",
            ["error", "success", "interrupted"][w.next(3) as usize],
            ago(500),
            Some(ago(490)),
        );
        write(&records.join(format!("{run}.json")), r.to_string().as_bytes(), ago(490));
    }
    Tree { uc: uc.to_path_buf(), leases, records, alive, now }
}
