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

use crate::common;

use std::fs;
use std::time::Duration;

use common::killing::{DECOY, FILES, Table, env_num, exec, leases_now, takeover, verify};
use ubunye_testkit::Rng;

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
