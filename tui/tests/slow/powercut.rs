//! The power-cut test: the kill test's runs of `ubunye exec`,
//! `ubunye leases takeover` and `ubunye exec --rerun`, on a use case kept by
//! a file system that loses what was not synced when the power goes
//! (`tests/cutfs`, over FUSE). Each round starts one of them and cuts the
//! power: at its k-th sync (every sync point of a run, in turn), or at a
//! random moment (some rounds after it finished). The page cache has written
//! back a random part of what was not synced, inode by inode and in no
//! order. The machine comes back with only what reached the disk; the next
//! round runs on that. Then one clean pass with `--resume`, and the kill
//! test's verifier: every batch exactly once, nothing missing, no batch
//! blocked by a file that cannot be read, nothing foreign lost.
//!
//! Needs FUSE (`/dev/fuse` and `fusermount3`, Debian's `fuse3`): without it
//! SKIPPED, loudly, unless UBUNYE_REQUIRE_FUSE=1 (CI), when it fails.
//! `UBUNYE_CUTS` (default 300) and `UBUNYE_CUT_SEED` size it.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::killing::{DECOY, FILES, Table, env_num, exec, leases_now, rerun, takeover, verify};
use ubunye_cutfs::{Disk, Mounted, fuse_or_skip};
use ubunye_testkit::Rng;

const BATCHES: usize = 6;

/// Every process with a file or its folder under `at`, SIGKILLed until none
/// is left (bounded: 10 s): a mount cannot go while one holds it.
fn kill_users(at: &Path) {
    // Never this process or one above it (the runner, a shell).
    let mut mine = vec![std::process::id() as i32];
    let mut pid = std::process::id() as i32;
    for _ in 0..64 {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1)).and_then(|p| p.parse().ok());
        match ppid {
            Some(p) if p > 1 => {
                mine.push(p);
                pid = p;
            }
            _ => break,
        }
    }
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let mut found = 0;
        for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            if mine.contains(&pid) {
                continue;
            }
            let mut paths = vec![e.path().join("cwd")];
            if let Ok(fds) = fs::read_dir(e.path().join("fd")) {
                paths.extend(fds.flatten().map(|f| f.path()));
            }
            if paths.iter().any(|p| fs::read_link(p).is_ok_and(|t| t.starts_with(at))) {
                found += 1;
                if let Some(p) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                }
            }
        }
        if found == 0 {
            return;
        }
        assert!(Instant::now() < until, "processes still use {} after 10 s", at.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Rig {
    disk: Disk,
    at: std::path::PathBuf,
    mount: Option<Mounted>,
}

/// A disk in a temp folder, mounted; the use case's path on it.
fn rig() -> (tempfile::TempDir, Rig, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let at = d.path().join("disk");
    fs::create_dir(&at).unwrap();
    let mut rig = Rig { disk: Disk::new(), at: at.clone(), mount: None };
    rig.mounted();
    (d, rig, at.join("uc"))
}

impl Rig {
    /// Unmount, once no process uses the disk (bounded: a process that has
    /// just exited may hold it a moment longer).
    fn unmount(&mut self) {
        let Some(m) = self.mount.take() else { return };
        // Twice, a moment apart: a run's last process may still be going.
        kill_users(&self.at);
        std::thread::sleep(Duration::from_millis(30));
        kill_users(&self.at);
        m.unmount().unwrap_or_else(|e| panic!("unmount {}: {e}", self.at.display()));
    }

    fn mounted(&mut self) -> &Mounted {
        if self.mount.is_none() {
            self.mount = Some(self.disk.mount(&self.at).expect("mount the power-cut file system"));
        }
        self.mount.as_ref().unwrap()
    }

    /// The power goes: `child` and everything else on the disk die, the
    /// page cache wrote back what `rng` picks, the machine comes back.
    fn cut(&mut self, mut child: Child, rng: &mut Rng) {
        if let Some(m) = &self.mount {
            m.cut();
        }
        let _ = child.kill();
        let _ = child.wait();
        self.unmount();
        let p = rng.below(3);
        let debug = std::env::var("UBUNYE_CUT_DEBUG").is_ok();
        if debug {
            eprintln!("at the cut, now: {:?}", self.disk.paths(false));
        }
        self.disk.power_back_after(&mut || rng.below(3) < p);
        if debug {
            eprintln!("after the cut: {:?}", self.disk.paths(false));
        }
    }
}

/// Wait for `child` to end or the power to be cut (bounded: 20 s).
fn wait_for(child: &mut Child, m: &Mounted) {
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && !m.ctl.is_cut() {
        assert!(Instant::now() < until, "a run took over 20 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How many syncs one whole run of each kind makes (on a disk set aside).
fn syncs_of_a_run(rig: &mut Rig, uc: &Path) -> u64 {
    let before = rig.mounted().ctl.syncs();
    let out = exec(uc, 0).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    rig.mounted().ctl.syncs() - before
}

fn power_cuts(cuts: usize, seed: u64) -> (Table, usize, u64) {
    let (_d, mut rig, uc) = rig();
    fs::create_dir_all(uc.join("out/events").join(DECOY)).unwrap();
    fs::create_dir_all(uc.join(".ubunye")).unwrap();
    fs::write(uc.join("out/events/foreign.txt"), "not a run's").unwrap();
    fs::write(uc.join("out/events").join(DECOY).join("keep.txt"), "decoy").unwrap();
    // The disk as set up is durable; then a first run (how many sync points
    // a run makes), and a power cut just after it with nothing written back:
    // what that first run made (the task's lease and record folders, new)
    // must be on the disk by its own syncs.
    rig.disk.sync_all();
    let per_run = syncs_of_a_run(&mut rig, &uc);
    if let Some(m) = &rig.mount {
        m.cut();
    }
    rig.unmount();
    rig.disk.power_back();
    rig.mounted();
    let first = exec(&uc, 0).output().unwrap();
    assert!(
        String::from_utf8_lossy(&first.stderr).is_empty() || first.status.success(),
        "the first run's batch, after a cut: {}",
        String::from_utf8_lossy(&first.stderr)
    );
    if std::env::var("UBUNYE_CUT_DEBUG").is_ok() {
        eprintln!("durable after the reference run: {:?}", rig.disk.paths(true));
    }
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut takeovers, mut reruns) = (0, 0);
    for round in 0..cuts {
        rig.mounted();
        let left = leases_now(&uc);
        if std::env::var("UBUNYE_CUT_DEBUG").is_ok() {
            eprintln!("round {round}: {} lease(s) left", left.len());
        }
        // The first rounds take each kind of run in turn (an exec, a
        // --rerun, a takeover when a cut run left a lease), each cut at each
        // of its sync points; the rest pick at random.
        let at_sync = per_run > 0 && (round as u64) < 3 * per_run;
        let kind = if at_sync {
            round % 3
        } else if rng.below(3) == 0 {
            2
        } else if rng.below(6) == 0 {
            1
        } else {
            0
        };
        let mut c: Command = if kind == 2 && !left.is_empty() {
            takeovers += 1;
            takeover(&uc, &left[rng.below(left.len() as u64) as usize])
        } else if kind == 1 {
            reruns += 1;
            rerun(&uc, rng.below(BATCHES as u64) as usize)
        } else {
            exec(&uc, rng.below(BATCHES as u64) as usize)
        };
        let m = rig.mounted();
        if at_sync {
            m.ctl.cut_at(m.ctl.syncs() + 1 + (round as u64 / 3) % per_run);
        }
        let mut child = c.spawn().unwrap();
        if at_sync {
            wait_for(&mut child, rig.mount.as_ref().unwrap());
        } else {
            std::thread::sleep(Duration::from_millis(rng.below(250)));
        }
        rig.cut(child, &mut rng);
    }
    // The machine is back for good: one clean pass, then the verifier. A
    // batch the clean pass cannot finish is blocked.
    rig.mounted();
    let mut blocked = 0;
    for b in 0..BATCHES {
        let out = exec(&uc, b).output().unwrap();
        if out.status.code() != Some(0) {
            eprintln!("clean pass b{b:03} exited {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
            blocked += 1;
        }
    }
    let t = verify(&uc, BATCHES, cuts - takeovers, takeovers);
    eprintln!("({reruns} of the runs were --rerun)");
    rig.unmount();
    (t, blocked, per_run)
}

#[test]
fn power_cuts_at_every_sync_point_and_at_random_leave_every_batch_exactly_once() {
    if !fuse_or_skip("powercut") {
        return;
    }
    let cuts = env_num("UBUNYE_CUTS", 300) as usize;
    let seed = env_num("UBUNYE_CUT_SEED", 1);
    let start = Instant::now();
    let (t, blocked, per_run) = power_cuts(cuts, seed);
    eprintln!(
        "{BATCHES} batches x {FILES} files, {cuts} power cuts (seed {seed}): {} during ubunye exec (a sixth of them --rerun), {} during ubunye leases takeover; a run makes {per_run} sync(s): the first {} rounds cut each kind of run at each in turn; then one clean pass with --resume, in {:.0} s",
        t.kills,
        t.takeover_kills,
        3 * per_run,
        start.elapsed().as_secs_f64()
    );
    eprintln!("missing doubled corrupt blocked leftover-staging leftover-temp foreign-lost");
    eprintln!(
        "{:>7} {:>7} {:>7} {:>7} {:>16} {:>13} {:>12}",
        t.missing, t.doubled, t.corrupt, blocked, t.leftover_staging, t.leftover_temp, t.foreign_lost
    );
    assert_eq!(
        (t.missing, t.doubled, t.corrupt, blocked, t.leftover_staging, t.leftover_temp, t.foreign_lost),
        (0, 0, 0, 0, 0, 0, 0),
        "every batch exactly once after power cuts"
    );
}

/// A file system that refuses fsync (EINVAL): the run still lands its
/// batch, and says in one warning line that it is not safe against power
/// loss; nothing claims a durability it did not get.
#[test]
fn a_file_system_that_refuses_fsync_is_named_in_a_warning() {
    if !fuse_or_skip("powercut::refuses_fsync") {
        return;
    }
    let (_d, mut rig, uc) = rig();
    rig.mounted().ctl.refuse_syncs();
    fs::create_dir_all(uc.join(".ubunye")).unwrap();
    let out = exec(&uc, 0).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("the file system refuses fsync") && warnings[0].contains("not if the machine loses power"),
        "{err}"
    );
    let t = verify(&uc, 1, 0, 0);
    assert_eq!((t.missing, t.doubled, t.corrupt), (0, 0, 0));
    rig.unmount();
}

/// A batch landed where its lease folder (`new_leases`) or its output folder
/// did not exist yet, then the power cut with nothing written back: what the
/// run said it finished is on the disk, folders and all, the other run's
/// batch too (a new folder whose name is not synced vanishes, and a finished
/// batch would run twice, or lose its files).
fn into_new_folders(new_leases: bool) {
    let (_d, mut rig, uc) = rig();
    fs::create_dir_all(uc.join(".ubunye")).unwrap();
    if new_leases {
        // The output is there (and durable); the task's lease folder is not.
        fs::create_dir_all(uc.join("out/events")).unwrap();
    } else {
        // The task's lease folder is there (another batch ran); the output
        // folder is not.
        let out = exec(&uc, 0).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        fs::remove_dir_all(uc.join("out")).unwrap();
        fs::remove_file(uc.join(".ubunye/leases/demo/sales/ingest").join(format!("{}.finished.json", key(0)))).unwrap();
    }
    rig.disk.sync_all();
    let out = exec(&uc, 1).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    rig.mount.as_ref().unwrap().cut();
    rig.unmount();
    rig.disk.power_back();
    rig.mounted();
    let again = exec(&uc, 1).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    let t = verify(&uc, 2, 0, 0);
    // Batch 1's files exactly once; batch 0 has none (never run, or taken away).
    assert_eq!((t.doubled, t.corrupt, t.leftover_staging), (0, 0, 0), "new_leases {new_leases}: {t:?}");
    assert_eq!(t.missing, FILES, "new_leases {new_leases}: only batch 0's files are missing: {t:?}");
    rig.unmount();
}

fn key(batch: usize) -> String {
    let o = Command::new(common::bin())
        .args(["key", "--task", "demo/sales/ingest", "-dt", &format!("b{batch:03}")])
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

#[test]
fn a_run_into_a_new_lease_folder_survives_a_cut_after_it_finished() {
    if fuse_or_skip("powercut::new_lease_folder") {
        into_new_folders(true);
    }
}

#[test]
fn a_run_into_a_new_output_folder_survives_a_cut_after_it_finished() {
    if fuse_or_skip("powercut::new_output_folder") {
        into_new_folders(false);
    }
}

/// A disk whose clock a look cannot read without writing (no local kernel
/// stamps its times, and it has no O_TMPFILE: this FUSE disk, as many
/// network file systems): a look says so and judges no lease, and a repair
/// asked on a terminal still reads it as it will act, with the peer's probe
/// file, so it can be answered and carried out.
#[test]
fn a_repair_asked_where_a_look_cannot_read_the_disks_clock_goes_ahead() {
    if !fuse_or_skip("powercut::repair_where_a_look_cannot_read_the_clock") {
        return;
    }
    let (_d, mut rig, uc) = rig();
    let from = ubunye_testkit::fixture_dir("dead-killed");
    ubunye_testkit::copy_tree(&from.join("uc"), &uc);
    // Its lease is past a 1 s timeout by the disk's clock (a time set by
    // hand would not do: the change time is then read).
    std::thread::sleep(Duration::from_millis(1500));
    let mut look = common::ubunye(&uc);
    let look = look.env("UBUNYE_TEST_TIMEOUT", "1s").args(["leases", "list", "-d", "uc", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&look.stdout).unwrap();
    let row = v["batches"].as_array().unwrap().iter().find(|b| b["key"] == "7d106ca76674f2a1").cloned();
    assert!(
        row.as_ref().is_some_and(|b| b["flags"].as_array().is_some_and(|f| f.iter().any(|f| f == "local-clock"))),
        "this disk's clock is read by a look: the test is moot here: {v}"
    );
    let env = [
        ("UBUNYE_TEST_HOST", Some(common::ELSEWHERE)),
        ("UBUNYE_TEST_SETTLE", Some("20ms")),
        ("UBUNYE_TEST_TIMEOUT", Some("1s")),
        ("NO_COLOR", Some("1")),
    ];
    let Some((code, text)) =
        common::on_a_terminal(uc.parent().unwrap(), "leases takeover 7d10 -d uc", 100, &env, Some("y\n"))
    else {
        return;
    };
    assert!(text.contains("Go ahead? [y/N]") && text.contains("taken over"), "{text}");
    assert_eq!(code, 0, "{text}");
    rig.unmount();
}
