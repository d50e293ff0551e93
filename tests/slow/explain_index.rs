//! The index `leases explain` keeps outside the use case never
//! changes what it shows: every batch read through the index, cold and warm
//! and after each of a random walk of changes, equals the batch a whole read
//! of its task gives (`scan_one` without an index), problems included.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use ubunye::state::{ScanOptions, scan, scan_one};

const T: &str = "demo/sales/ingest";

fn opts(index: Option<&Path>) -> ScanOptions {
    // Files are kept once left alone 10 ms, not the two minutes a user gets.
    let index_settle = Some(std::time::Duration::from_millis(10));
    ScanOptions { index_dir: index.map(Path::to_path_buf), index_settle, ..ScanOptions::default() }
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

/// Let every file written so far settle: the index keeps a file only once
/// its ctime is older than the look by more than a tick of the kernel's
/// clock, which stamps file times and which no `Sys` stands in for.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(40));
}

/// The lines of the one index file in `index`, but its header.
fn index_lines(index: &Path) -> Vec<String> {
    let files: Vec<_> = fs::read_dir(index).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    fs::read_to_string(&files[0]).unwrap().lines().skip(1).map(str::to_string).collect()
}

fn inode(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&fs::symlink_metadata(p).unwrap())
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
    settle();
    // Cold (the index is made), then warm (the index alone, nothing re-read
    // but the batch's own files and records).
    for pass in ["cold", "warm"] {
        for k in &all {
            same(&u.uc, index.path(), k, &u.sys, pass);
        }
    }
    // The index is used: it holds a line for every settled file of the task.
    let files = fs::read_dir(u.leases()).unwrap().count() + fs::read_dir(u.records()).unwrap().count();
    let lines = index_lines(index.path());
    assert!(lines.len() + 5 >= files, "{} lines for {files} files", lines.len());
    // Of the lease folder only notes: whether a lease can be read depends on
    // the host reading it.
    let leases: Vec<_> = lines.iter().filter(|l| l.starts_with("L\t")).collect();
    assert!(!leases.is_empty() && leases.iter().all(|l| l.ends_with(".finished.json")), "{leases:?}");

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
    assert!(good.starts_with("ubunye-index 2\t"), "{}", &good[..40]);
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

/// `path` removed and made again with `text` on the inode it had, as ext4
/// does when nothing else is freed first: files
/// are made beside it until one is given that inode, which is then renamed
/// into place, and the rest removed. False if no such file was made.
fn remade_on_its_inode(path: &Path, text: &str) -> bool {
    let ino = inode(path);
    fs::remove_file(path).unwrap();
    let dir = path.parent().unwrap();
    let mut made = Vec::new();
    let mut found = false;
    for i in 0..20_000 {
        let f = dir.join(format!(".scratch-{i}"));
        fs::write(&f, text).unwrap();
        if inode(&f) == ino {
            fs::rename(&f, path).unwrap();
            found = true;
            break;
        }
        made.push(f);
    }
    for f in made {
        fs::remove_file(f).unwrap();
    }
    if !found {
        fs::write(path, text).unwrap();
    }
    found
}

/// Whether `dir` is on ext4, whose inode allocator gives a freed inode back.
fn on_ext4(dir: &Path) -> bool {
    rustix::fs::statfs(dir).is_ok_and(|s| s.f_type as u64 == 0xEF53)
}

/// Files replaced on a reused inode, each after the index knew the file it
/// replaces (settled): a record removed and made again with the same name,
/// size and inode that now hashes to another batch; a note saved again on the
/// inode it had (two renamed saves take turns between two inodes) naming
/// another run; a symlink made to point elsewhere (listed by its own inode).
#[test]
fn a_file_replaced_on_a_reused_inode_is_read_again() {
    let u = use_case();
    let index = tempfile::tempdir().unwrap();
    // i = 3: no note, so its record is filed by its variables alone.
    let (k3, k4) = (key_of("2025-02-003"), key_of("2025-02-004"));
    let rec = u.records().join("run-003.json");
    settle();
    for k in keys(&u) {
        same(&u.uc, index.path(), &k, &u.sys, "cold");
    }
    let before = fs::read_to_string(&rec).unwrap();
    let after = before.replace("2025-02-003", "2025-02-004");
    assert_eq!(after.len(), before.len());
    let reused = remade_on_its_inode(&rec, &after);
    assert!(reused || !on_ext4(&rec), "ext4 gave the inode back");
    let (_, b4) = scan_one(&u.uc, T, &k4, &opts(None), &u.sys).unwrap();
    assert!(b4.unwrap().records.iter().any(|r| r.run_id == "run-003"), "the record now belongs to batch 004");
    // Batch 004 first: a look at 003 reads its own records again.
    for k in [&k4, &k3] {
        same(&u.uc, index.path(), k, &u.sys, "a record made again on its inode");
    }

    // A note made again on its inode, naming another batch's run: both name
    // it now, and the run is filed to the later key of the two (looked at
    // from the other batch first, whose own files are read again).
    let dt = |i: u32| format!("2025-02-{i:03}");
    let (i, j) = (10..40u32)
        .flat_map(|i| (10..40u32).map(move |j| (i, j)))
        .find(|&(i, j)| i % 3 != 0 && j % 3 != 0 && key_of(&dt(i)) > key_of(&dt(j)))
        .unwrap();
    let (ki, kj) = (key_of(&dt(i)), key_of(&dt(j)));
    settle();
    same(&u.uc, index.path(), &kj, &u.sys, "settled again");
    let note = u.leases().join(format!("{ki}.finished.json"));
    let text = fs::read_to_string(&note).unwrap().replace(&format!("run-{i:03}"), &format!("run-{j:03}"));
    assert!(remade_on_its_inode(&note, &text) || !on_ext4(&note));
    let (_, bi) = scan_one(&u.uc, T, &ki, &opts(None), &u.sys).unwrap();
    assert!(bi.unwrap().records.iter().any(|r| r.run_id == format!("run-{j:03}")), "filed to the later key");
    for k in [&kj, &ki] {
        same(&u.uc, index.path(), k, &u.sys, "a note made again on its inode");
    }

    // A note that is a symlink to another batch's note, then to a third's.
    let (k5, k7, k8) = (ki, key_of("2025-02-007"), key_of("2025-02-008"));
    for target in [&k7, &k8] {
        fs::remove_file(&note).unwrap();
        std::os::unix::fs::symlink(format!("{target}.finished.json"), &note).unwrap();
        settle();
        for k in [&k5, &k7, &k8] {
            same(&u.uc, index.path(), k, &u.sys, &format!("a note linked to {target}'s"));
        }
    }
    let named = format!("\t{k5}.finished.json");
    assert!(!index_lines(index.path()).iter().any(|l| l.ends_with(&named)), "a symlink is never kept");
}

/// Two looks at once, each at its own batch, through one index folder: each
/// sees what a whole read sees, and the index left is one of theirs, whole.
#[test]
fn two_looks_at_once_share_the_index() {
    let u = use_case();
    let index = tempfile::tempdir().unwrap();
    settle();
    let all = keys(&u);
    std::thread::scope(|s| {
        for half in [0, 1] {
            let (u, all, index) = (&u, &all, index.path());
            s.spawn(move || {
                for k in all.iter().skip(half).step_by(2) {
                    same(&u.uc, index, k, &u.sys, "two at once");
                }
            });
        }
    });
    assert!(!index_lines(index.path()).is_empty());
    for k in &all {
        same(&u.uc, index.path(), k, &u.sys, "after");
    }
}

/// A records' folder that does not exist yet, named through a symlink: an
/// index folder inside where it would be is never made.
#[test]
fn an_index_folder_inside_a_records_folder_not_made_yet_is_not_used() {
    let u = use_case();
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("real")).unwrap();
    std::os::unix::fs::symlink(d.path().join("real"), d.path().join("link")).unwrap();
    let o = |index: &Path| ScanOptions {
        lineage_dir: Some(d.path().join("link/lineage")),
        index_dir: Some(index.to_path_buf()),
        index_settle: Some(std::time::Duration::from_millis(10)),
        ..ScanOptions::default()
    };
    let inside = d.path().join("real/lineage/cache");
    let key = key_of("2025-02-001");
    let (_, through) = scan_one(&u.uc, T, &key, &o(&inside), &u.sys).unwrap();
    let (_, whole) = scan_one(&u.uc, T, &key, &ScanOptions { index_dir: None, ..o(&inside) }, &u.sys).unwrap();
    assert_eq!(format!("{through:?}"), format!("{whole:?}"));
    assert!(!d.path().join("real/lineage").exists(), "nothing made where the records would be");
}
