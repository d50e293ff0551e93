//! Kill tests: a real process drives the engine and is SIGKILLed at each step of
//! acquire, takeover, claim, move, commit and rerun replace. After each kill the
//! next runs must leave every batch in the output exactly once, must not delete a
//! file no run claimed (a foreign file and a decoy `_ubunye-` folder sit in the
//! output), and must leave no debris but what FORMAT.md documents.

use crate::common;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use common::files;

const FILES: usize = 3;
const DECOY: &str = "_ubunye-00000000dec0";

/// Not a test: the entry point of the driver when this binary re-executes itself.
#[test]
fn driver_entry() {
    common::driver::run_if_asked();
}

/// Run the driver; returns Some(exit code) or None when it was SIGKILLed.
fn drive(uc: &Path, dt: &str, extra: &[&str]) -> Option<i32> {
    let mut args = vec![uc.display().to_string(), dt.to_string(), "--files".into(), FILES.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = common::driver::command(&common::test_name(module_path!(), "driver_entry"), &args)
        .env("UBUNYE_TEST_SETTLE", "30ms")
        .env("UBUNYE_TEST_BUSY_FOR", "20ms")
        .output()
        .unwrap();
    match out.status.code() {
        Some(c) => {
            assert!(
                c == 0 || c == 1 || (c == 3 && extra.contains(&"--fail")),
                "driver {dt} {extra:?} failed ({c}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Some(c)
        }
        None => {
            assert_eq!(out.status.signal(), Some(9), "{:?}", out.status);
            None
        }
    }
}

fn use_case() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    let out = uc.join("out/events");
    fs::create_dir_all(out.join(DECOY)).unwrap();
    fs::write(out.join("foreign.txt"), "not a run's").unwrap();
    fs::write(out.join(DECOY).join("part-decoy.txt"), "not a run's either").unwrap();
    (d, uc)
}

/// Every batch exactly once, the foreign file and the decoy intact, no debris.
/// Whether the folder's disk makes files with no name (`O_TMPFILE`).
fn has_tmpfile(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).open(dir).is_ok()
}

fn verify(uc: &Path, batches: &[&str], what: &str) {
    let out = uc.join("out/events");
    assert_eq!(fs::read_to_string(out.join("foreign.txt")).unwrap(), "not a run's", "{what}");
    assert_eq!(fs::read_to_string(out.join(DECOY).join("part-decoy.txt")).unwrap(), "not a run's either", "{what}");
    let mut seen: Vec<String> = Vec::new();
    for f in files(&out) {
        let name = Path::new(&f).file_name().unwrap().to_string_lossy().into_owned();
        if f.starts_with(DECOY) || name == "foreign.txt" || name == "_SUCCESS" {
            continue;
        }
        assert!(!f.contains("_ubunye-"), "{what}: staging debris {f}");
        assert!(name.starts_with("part-"), "{what}: unexpected {f}");
        seen.push(fs::read_to_string(out.join(&f)).unwrap());
    }
    seen.sort();
    let mut want: Vec<String> = batches.iter().flat_map(|dt| (0..FILES).map(move |k| format!("{dt}:{k}\n"))).collect();
    want.sort();
    assert_eq!(seen, want, "{what}: every batch exactly once");
    let leases = uc.join(".ubunye/leases/demo/sales/ingest");
    for name in files(&leases) {
        // FORMAT.md §2 documents each of these as what a kill can leave: a temp
        // file killed before its rename, a clock probe killed before its unlink,
        // a done mark killed between the lease's unlink and its own (§13.3).
        // No lease is left: every name here is one of these.
        let ok = name.ends_with(".finished.json")
            || name.contains(".taken-")
            || name.ends_with(".tmp")
            || name.starts_with(".clock-")
            || name.contains(".done-");
        assert!(ok, "{what}: debris in the lease folder: {name} (all: {:?})", files(&leases));
    }
    for entry in fs::read_dir(uc.join("out")).unwrap().flatten() {
        let n = entry.file_name().to_string_lossy().into_owned();
        assert!(n == "events" || n.starts_with(".events.ubunye-"), "{what}: {n} beside the output");
    }
}

const PLAIN_STEPS: &[&str] = &[
    "lease-temp-written:1",
    "created:1",
    "saved:1",
    "saved:2",
    "saved:3",
    "moved:1",
    "moved:2",
    "moved:3",
    "saved:4",
    "done-marked:1",
    "saved:5",
    "committed-saved:1",
    "noted:1",
    "saved:6",
    "outputs-cleared:1",
    "released:1",
];

fn fresh_kill(step: &str, mode: &[&str]) {
    let (_d, uc) = use_case();
    assert_eq!(drive(&uc, "A", mode), Some(0));
    let mut args = mode.to_vec();
    args.extend(["--kill", step]);
    assert_eq!(drive(&uc, "B", &args), None, "{step} {mode:?} was reached");
    if step.starts_with("lease-temp-written") {
        let leases = uc.join(".ubunye/leases/demo/sales/ingest");
        let temps: Vec<String> = files(&leases).into_iter().filter(|n| n.ends_with(".tmp")).collect();
        if has_tmpfile(&leases) {
            // The create's content has no name until it is linked: nothing is left
            // that no later run of the batch would take away.
            assert!(temps.is_empty(), "{step} {mode:?}: {temps:?}");
        } else {
            eprintln!("NOTE: {} has no O_TMPFILE: a kill there leaves the named temp file", leases.display());
        }
    }
    // The next run of B: done, or refused as finished when the killed run committed.
    let code = drive(&uc, "B", mode).unwrap();
    verify(&uc, &["A", "B"], &format!("fresh {step} {mode:?} then rerun ({code})"));
    // And again: now it is surely finished.
    assert_eq!(drive(&uc, "B", mode), Some(1), "{step}: finished batches are refused");
}

#[test]
fn kill_at_every_step_of_a_run() {
    for step in PLAIN_STEPS {
        fresh_kill(step, &[]);
    }
}

#[test]
fn kill_at_every_step_of_a_partitioned_run() {
    for step in PLAIN_STEPS {
        fresh_kill(step, &["--partitioned"]);
    }
}

#[test]
fn kill_at_every_step_of_per_file_claims() {
    // Per-file claims save the lease once per file: writing, then 3 claims.
    for step in [
        "lease-temp-written:1",
        "saved:1",
        "saved:2",
        "moved:1",
        "saved:3",
        "moved:2",
        "saved:4",
        "moved:3",
        "done-marked:1",
        "committed-saved:1",
        "noted:1",
        "released:1",
    ] {
        fresh_kill(step, &["--per-file"]);
        fresh_kill(step, &["--per-file", "--partitioned"]);
    }
}

#[test]
fn kill_at_every_step_of_a_takeover() {
    for step in [
        "lease-temp-written:1",
        "dead-renamed:1",
        "takeover-created:1",
        "settled:1",
        "tombstoned:1",
        "file-removed:1",
        "file-removed:2",
        "recovered:1",
        "saved:1",
        "released:1",
    ] {
        let (_d, uc) = use_case();
        assert_eq!(drive(&uc, "A", &[]), Some(0));
        // A run of B dies after moving 2 of its 3 files in.
        assert_eq!(drive(&uc, "B", &["--kill", "moved:2"]), None);
        // The next run of B is killed while it takes the dead run over.
        assert_eq!(drive(&uc, "B", &["--kill", step]), None, "{step} was reached");
        // The next run lands the batch, or is refused when the killed taker had
        // already committed it (a kill at release).
        let code = drive(&uc, "B", &[]).unwrap();
        assert!(code == 0 || step.starts_with("released"), "{step}: the next run lands the batch ({code})");
        verify(&uc, &["A", "B"], &format!("takeover {step}"));
    }
}

#[test]
fn kill_at_every_step_of_a_rerun_replace() {
    // --rerun saves: replaces, writing, staging, claims, written, committed, cleared, replace.
    for step in [
        "saved:1",
        "saved:4",
        "moved:2",
        "done-marked:1",
        "committed-saved:1",
        "noted:1",
        "outputs-cleared:1",
        "file-removed:1",
        "file-removed:2",
        "saved:8",
        "released:1",
    ] {
        let (_d, uc) = use_case();
        assert_eq!(drive(&uc, "A", &[]), Some(0));
        assert_eq!(drive(&uc, "A", &["--rerun", "--kill", step]), None, "{step} was reached");
        // A plain run finishes whatever the killed rerun left, then is refused.
        assert_eq!(drive(&uc, "A", &[]), Some(1), "{step}");
        verify(&uc, &["A"], &format!("rerun {step}"));
        assert_eq!(drive(&uc, "A", &["--rerun"]), Some(0), "{step}");
        verify(&uc, &["A"], &format!("rerun {step}, rerun again"));
    }
}

#[test]
fn a_failed_run_leaves_the_output_as_it_was() {
    let (_d, uc) = use_case();
    assert_eq!(drive(&uc, "A", &[]), Some(0));
    let before = common::tree(&uc.join("out"));
    assert_eq!(drive(&uc, "B", &["--fail"]), Some(3));
    assert_eq!(common::tree(&uc.join("out")), before);
    assert_eq!(
        files(&uc.join(".ubunye/leases/demo/sales/ingest")),
        vec!["39bc42311894ddba.finished.json".replace("39bc42311894ddba", &key("A"))]
    );
}

fn key(dt: &str) -> String {
    common::key_of(dt)
}

/// A takeover of batch `dt` with no run after it, as `ubunye leases takeover`
/// does: the engine's acquire, then release.
fn takeover(uc: &Path, dt: &str) {
    let spec = ubunye::LeaseSpec::new(uc, common::task(), common::vars(dt), uuid::Uuid::new_v4().to_string());
    let mut sys = ubunye::Sys::from_env();
    sys.timing.settle = std::time::Duration::from_millis(30);
    match ubunye::RunLease::acquire(spec, sys) {
        Ok((lease, _)) => {
            lease.release();
        }
        Err(e) => panic!("takeover of {dt}: {e}"),
    }
}

/// The crash matrix: every kill point of a run, a takeover and a
/// --rerun, on flat and partitioned outputs, each followed by another batch's
/// run, a takeover, a --resume pass and a --rerun, with a foreign file and a
/// decoy staging folder in the output. Prints the table docs/reliability.md
/// quotes.
#[test]
fn crash_matrix() {
    let run_points = [
        "lease-temp-written:1",
        "created:1",
        "saved:1",
        "saved:2",
        "saved:3",
        "moved:1",
        "moved:3",
        "done-marked:1",
        "committed-saved:1",
        "noted:1",
        "outputs-cleared:1",
        "released:1",
    ];
    let takeover_points =
        ["dead-renamed:1", "takeover-created:1", "settled:1", "tombstoned:1", "file-removed:1", "recovered:1"];
    let rerun_points =
        ["saved:1", "moved:2", "done-marked:1", "committed-saved:1", "outputs-cleared:1", "file-removed:1", "saved:8"];
    let mut rows: Vec<(String, usize, usize)> = Vec::new();
    for layout in ["flat", "partitioned"] {
        let lay: &[&str] = if layout == "flat" { &[] } else { &["--partitioned"] };
        for (phase, points) in
            [("run", &run_points[..]), ("takeover", &takeover_points[..]), ("rerun", &rerun_points[..])]
        {
            let mut trials = 0;
            for point in points {
                let (_d, uc) = use_case();
                assert_eq!(drive(&uc, "A", lay), Some(0));
                let mut args: Vec<&str> = lay.to_vec();
                match phase {
                    "run" => {
                        args.extend(["--kill", point]);
                        assert_eq!(drive(&uc, "B", &args), None, "{layout} {phase} {point}");
                    }
                    "takeover" => {
                        let mut dead = lay.to_vec();
                        dead.extend(["--kill", "moved:2"]);
                        assert_eq!(drive(&uc, "B", &dead), None);
                        args.extend(["--kill", point]);
                        assert_eq!(drive(&uc, "B", &args), None, "{layout} {phase} {point}");
                    }
                    _ => {
                        args.extend(["--rerun", "--kill", point]);
                        assert_eq!(drive(&uc, "A", &args), None, "{layout} {phase} {point}");
                    }
                }
                // Then: another batch, a takeover, a --resume pass, a --rerun.
                assert_eq!(drive(&uc, "C", lay), Some(0), "{layout} {phase} {point}: another batch");
                takeover(&uc, if phase == "rerun" { "A" } else { "B" });
                for dt in ["A", "B"] {
                    let code = drive(&uc, dt, lay);
                    assert!(
                        code == Some(0) || code == Some(1),
                        "{layout} {phase} {point}: --resume of {dt} ({code:?})"
                    );
                }
                let mut rerun = lay.to_vec();
                rerun.push("--rerun");
                assert_eq!(drive(&uc, "B", &rerun), Some(0), "{layout} {phase} {point}: --rerun");
                verify(&uc, &["A", "B", "C"], &format!("{layout} {phase} {point}"));
                trials += 1;
            }
            rows.push((format!("{layout} / {phase}"), points.len(), trials));
        }
    }
    eprintln!("| outputs / killed in | kill points | trials right |");
    for (what, points, ok) in &rows {
        eprintln!("| {what} | {points} | {ok} of {points} |");
    }
}
