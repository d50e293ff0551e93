//! The index `leases explain` keeps outside the use case (issue 16) never
//! changes what it shows: every batch read through the index, cold and warm
//! and after each of a random walk of changes, equals the batch a whole read
//! of its task gives (`scan_one` without an index), problems included.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use ubunye::state::{ScanOptions, scan, scan_one};

const T: &str = "demo/sales/ingest";

fn opts(index: Option<&Path>) -> ScanOptions {
    ScanOptions { index_dir: index.map(Path::to_path_buf), ..ScanOptions::default() }
}

/// Batch `key` read whole and through the index: the same, to the byte of
/// their Debug text.
fn same(uc: &Path, index: &Path, key: &str, sys: &ubunye::Sys, what: &str) {
    let (ws, wb) = scan_one(uc, T, key, &opts(None), sys).unwrap();
    let (is, ib) = scan_one(uc, T, key, &opts(Some(index)), sys).unwrap();
    assert_eq!(format!("{:?}", (&is.problems, &ib)), format!("{:?}", (&ws.problems, &wb)), "{what}: batch {key}");
}

struct Uc {
    _d: tempfile::TempDir,
    uc: PathBuf,
    sys: ubunye::Sys,
    record: serde_json::Value,
    note: serde_json::Value,
    lease: serde_json::Value,
}

impl Uc {
    fn leases(&self) -> PathBuf {
        self.uc.join(".ubunye/leases").join(T)
    }
    fn records(&self) -> PathBuf {
        self.uc.join(".ubunye/lineage").join(T)
    }
    /// A record of run `run` for the batch of `dt` (None: no variables).
    fn record(&self, run: &str, dt: Option<&str>, started: u32) {
        let mut r = self.record.clone();
        r["run_id"] = run.into();
        r["started_at"] = format!("2026-11-29T10:{:02}:{:02}.000000+00:00", started / 60 % 60, started % 60).into();
        match dt {
            Some(dt) => r["variables"] = serde_json::json!({"dt": dt, "mode": "DEV"}),
            None => {
                r.as_object_mut().unwrap().remove("variables");
            }
        }
        replace(&self.records().join(format!("{run}.json")), &serde_json::to_string_pretty(&r).unwrap());
    }
    fn note(&self, key: &str, run: &str) {
        let mut n = self.note.clone();
        n["run_id"] = run.into();
        replace(&self.leases().join(format!("{key}.finished.json")), &n.to_string());
    }
    fn lease(&self, key: &str, run: &str) {
        let mut l = self.lease.clone();
        l["run_id"] = run.into();
        replace(&self.leases().join(format!("{key}.json")), &l.to_string());
    }
}

/// Written to a temp file and renamed over, as both engines save: a new inode.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

fn use_case() -> Uc {
    let (d, uc, m) = fixture("dead-killed");
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let read = |p: PathBuf| -> serde_json::Value { serde_json::from_slice(&fs::read(p).unwrap()).unwrap() };
    let ldir = uc.join(".ubunye/leases").join(T);
    let rdir = uc.join(".ubunye/lineage").join(T);
    let u = Uc {
        record: read(rdir.join("a7ee7676-3983-4c1b-8fff-47937b7a2497.json")),
        note: read(ldir.join("39bc42311894ddba.finished.json")),
        lease: read(ldir.join("7d106ca76674f2a1.json")),
        _d: d,
        uc,
        sys,
    };
    // 300 batches (more than one block of the readers on every core), most
    // finished, some with a second record of an earlier attempt.
    for i in 0..300u32 {
        let dt = format!("2025-02-{i:03}");
        let run = format!("run-{i:03}");
        u.record(&run, Some(&dt), i);
        if i % 7 == 0 {
            u.record(&format!("{run}-failed"), Some(&dt), i + 1000);
        }
        if i % 3 != 0 {
            u.note(&key_of(&dt), &run);
        }
    }
    u
}

fn keys(u: &Uc) -> Vec<String> {
    let s = scan(&u.uc, &ScanOptions::default(), &u.sys).unwrap();
    s.batches.iter().filter(|b| b.task == T).map(|b| b.key.clone()).collect()
}

#[test]
fn a_batch_read_through_the_index_is_the_batch_a_whole_read_gives() {
    let u = use_case();
    let index = tempfile::tempdir().unwrap();
    let all = keys(&u);
    assert!(all.len() > 300, "{}", all.len());
    // Cold (the index is made), then warm (the index alone, nothing re-read
    // but the batch's own files and records).
    for pass in ["cold", "warm"] {
        for k in &all {
            same(&u.uc, index.path(), k, &u.sys, pass);
        }
    }
    let kept: Vec<_> = fs::read_dir(index.path()).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "one index file for the task");

    // A walk of changes, each checked on the batches it touches and a few others.
    let mut rng = Rng(0x1de8);
    let dts: Vec<String> = (0..320).map(|i| format!("2025-02-{i:03}")).collect();
    for step in 0..60 {
        let dt = &dts[rng.below(dts.len() as u64) as usize];
        let other = &dts[rng.below(dts.len() as u64) as usize];
        let (key, other_key) = (key_of(dt), key_of(other));
        let run = format!("walk-{step}");
        let what = match rng.below(9) {
            0 => {
                u.record(&run, Some(dt), 2000 + step);
                "a new record"
            }
            1 => {
                // Its note now names another batch's run: that record is filed here.
                u.note(&key, &format!("run-{}", &other[8..]));
                "a note naming another batch's run"
            }
            2 => {
                u.lease(&key, &run);
                u.record(&run, Some(other), 3000 + step);
                "a lease naming a run whose record hashes elsewhere"
            }
            3 => {
                let _ = fs::remove_file(u.leases().join(format!("{key}.finished.json")));
                "a note removed"
            }
            4 => {
                let _ = fs::remove_file(u.records().join(format!("run-{}.json", &dt[8..])));
                "a record removed"
            }
            5 => {
                // Torn in place: the same inode, now unreadable.
                let p = u.records().join(format!("run-{}.json", &dt[8..]));
                if p.exists() {
                    fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(10).unwrap();
                }
                "a record torn in place"
            }
            6 => {
                u.record(&run, None, 4000 + step);
                u.lease(&key, &run);
                "a record without variables, named by a lease"
            }
            7 => {
                fs::write(u.leases().join(format!("{key}.done-run-{}", &other[8..])), "x").unwrap();
                "a mark naming another batch's run"
            }
            _ => {
                replace(&u.leases().join(format!("{key}.json")), "{\"run_id\": ");
                "an unreadable lease"
            }
        };
        let mut check = vec![key.clone(), other_key.clone(), "????????????????".to_string()];
        check.extend((0..4).map(|_| all[rng.below(all.len() as u64) as usize].clone()));
        for k in &check {
            same(&u.uc, index.path(), k, &u.sys, &format!("step {step}: {what}"));
        }
    }
    // And every batch at the end, through the index the walk kept up.
    for k in keys(&u) {
        same(&u.uc, index.path(), &k, &u.sys, "after the walk");
    }
}

#[test]
fn an_index_folder_inside_the_use_case_or_a_damaged_index_is_not_used() {
    let u = use_case();
    let key = key_of("2025-02-001");
    // Inside the use case: nothing is made there, and the batch is the same.
    let inside = u.uc.join("cache/ubunye");
    same(&u.uc, &inside, &key, &u.sys, "inside");
    assert!(!u.uc.join("cache").exists(), "looking never writes inside the use case");
    let through = u.uc.join(".ubunye/lineage/x");
    same(&u.uc, &through, &key, &u.sys, "inside the records' folder");
    assert!(!through.exists());
    // A damaged index file is read as no index, and rewritten.
    let index = tempfile::tempdir().unwrap();
    same(&u.uc, index.path(), &key, &u.sys, "cold");
    let file = fs::read_dir(index.path()).unwrap().next().unwrap().unwrap().path();
    let good = fs::read_to_string(&file).unwrap();
    assert!(good.starts_with("ubunye-index 1\t"), "{}", &good[..40]);
    let mut bad = good.clone();
    bad.truncate(good.len() / 2);
    bad.push_str("R\tnot-a-number\tx\ty\tz\nL\t1\n\0\0");
    fs::write(&file, &bad).unwrap();
    for k in keys(&u) {
        same(&u.uc, index.path(), &k, &u.sys, "a damaged index");
    }
    // Lines that could not be trusted were dropped and the rest kept.
    let sorted = |t: &str| {
        let mut l: Vec<String> = t.lines().map(str::to_string).collect();
        l.sort();
        l
    };
    let (now, good) = (sorted(&fs::read_to_string(&file).unwrap()), sorted(&good));
    let differ: Vec<_> = now.iter().zip(&good).filter(|(a, b)| a != b).take(3).collect();
    assert!(differ.is_empty() && now.len() == good.len(), "{differ:?} ({} vs {} lines)", now.len(), good.len());
}
