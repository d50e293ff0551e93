//! `ubunye exec` end to end, through the real binary.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::Command as Cmd;

use crate::common;
use common::{bin, files, tree};

fn ubunye(uc: &Path) -> Cmd {
    let mut c = Cmd::new(bin());
    c.env("UBUNYE_TEST_SETTLE", "30ms").env_remove("UBUNYE_RUN_LEASE").arg("exec").arg("-d").arg(uc);
    c
}

const LEASES: &str = ".ubunye/leases/demo/sales/ingest";
const WRITE_ONE: &str = "echo \"$UBUNYE_VAR_DT\" > \"$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.txt\"";

/// The run records of a task's lineage folder (its runs' logs are beside
/// them).
fn records(dir: &Path) -> Vec<String> {
    files(dir).into_iter().filter(|f| f.ends_with(".json")).collect()
}

fn ingest(uc: &Path, dt: &str) -> Cmd {
    let mut c = ubunye(uc);
    c.args(["-u", "demo", "-p", "sales", "-t", "ingest", "-dt", dt, "--append", "events=out/events"]);
    c
}

#[test]
fn an_append_lands_once_and_a_finished_batch_is_refused() {
    let d = tempfile::tempdir().unwrap();
    ingest(d.path(), "2025-01-01").args(["--", "sh", "-c", WRITE_ONE]).assert().success();
    let out = files(&d.path().join("out/events"));
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out.contains(&"_SUCCESS".to_string()));
    assert_eq!(files(&d.path().join(LEASES)), vec!["39bc42311894ddba.finished.json"]);
    // Again: refused in one line, exit 1, nothing written.
    let o = ingest(d.path(), "2025-01-01").args(["--", "sh", "-c", WRITE_ONE]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("already finished this batch (run ") && err.contains("--rerun"), "{err}");
    assert_eq!(files(&d.path().join("out/events")), out);
    // --resume: one [SKIP] line, exit 0.
    ingest(d.path(), "2025-01-01")
        .args(["--resume", "--", "sh", "-c", WRITE_ONE])
        .assert()
        .success()
        .stdout("[SKIP] demo/sales/ingest already finished this batch (--resume); kept as it is.\n");
    // --rerun: replaced; the old file goes after the new one committed.
    ingest(d.path(), "2025-01-01").args(["--rerun", "--", "sh", "-c", WRITE_ONE]).assert().success();
    let after = files(&d.path().join("out/events"));
    assert_eq!(after.len(), 2, "{after:?}");
    assert_ne!(after, out, "the batch was replaced");
}

#[test]
fn a_failed_command_leaves_the_output_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    ingest(d.path(), "2025-01-01").args(["--", "sh", "-c", WRITE_ONE]).assert().success();
    let before = tree(&d.path().join("out"));
    let o = ingest(d.path(), "2025-01-02").args(["--", "sh", "-c", &format!("{WRITE_ONE}; exit 7")]).output().unwrap();
    assert_eq!(o.status.code(), Some(7), "the command's own code");
    assert_eq!(tree(&d.path().join("out")), before);
    assert_eq!(files(&d.path().join(LEASES)), vec!["39bc42311894ddba.finished.json"], "lease released");
    let rec = records(&d.path().join(".ubunye/lineage/demo/sales/ingest"));
    let statuses: Vec<String> = rec
        .iter()
        .map(|f| {
            serde_json::from_str::<serde_json::Value>(
                &fs::read_to_string(d.path().join(".ubunye/lineage/demo/sales/ingest").join(f)).unwrap(),
            )
            .unwrap()["status"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut statuses = statuses;
    statuses.sort();
    assert_eq!(statuses, vec!["error", "success"]);
}

#[test]
fn partitioned_appends_keep_their_folders() {
    let d = tempfile::tempdir().unwrap();
    let script = "mkdir -p \"$UBUNYE_OUT_EVENTS/dt=$UBUNYE_VAR_DT/region=wc\" && echo a > \"$UBUNYE_OUT_EVENTS/dt=$UBUNYE_VAR_DT/region=wc/part-$UBUNYE_RUN_ID.txt\" && touch \"$UBUNYE_OUT_EVENTS/_SUCCESS\" \"$UBUNYE_OUT_EVENTS/.hidden\"";
    ingest(d.path(), "2025-01-01").args(["--", "sh", "-c", script]).assert().success();
    let out = files(&d.path().join("out/events"));
    // The writer's top `_SUCCESS` is not moved (ubunye writes the output's);
    // a hidden file is the writer's too, and lands.
    assert_eq!(out.len(), 3, "{out:?}");
    assert!(out.contains(&".hidden".to_string()) && out.contains(&"_SUCCESS".to_string()), "{out:?}");
    assert!(out.iter().any(|f| f.starts_with("dt=2025-01-01/region=wc/part-")), "{out:?}");
    let note = fs::read_to_string(d.path().join(LEASES).join("39bc42311894ddba.finished.json")).unwrap();
    assert!(note.contains("out/events/dt=2025-01-01/region=wc/part-"), "{note}");
}

#[test]
fn a_name_clash_is_refused_before_anything_is_claimed() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("out/events")).unwrap();
    fs::write(d.path().join("out/events/data.txt"), "someone else's").unwrap();
    let o = ingest(d.path(), "2025-01-01")
        .args(["--", "sh", "-c", "echo mine > \"$UBUNYE_OUT_EVENTS/data.txt\""])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("already exists in the output"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(fs::read_to_string(d.path().join("out/events/data.txt")).unwrap(), "someone else's");
    assert_eq!(files(&d.path().join("out/events")), vec!["data.txt"], "no staging left");
    assert_eq!(files(&d.path().join(LEASES)), Vec::<String>::new(), "no lease left");
}

#[test]
fn an_overwrite_is_never_seen_half_done() {
    let d = tempfile::tempdir().unwrap();
    let write = |n: usize| format!("for i in $(seq 1 50); do echo {n} > \"$UBUNYE_OUT_TOTALS/f$i.csv\"; done");
    let summary = |uc: &Path, n: usize| {
        let mut c = ubunye(uc);
        c.args([
            "--task",
            "demo/sales/summary",
            "-dt",
            "2025-01-01",
            "--overwrite",
            "totals=out/summary",
            "--",
            "sh",
            "-c",
            &write(n),
        ]);
        c
    };
    summary(d.path(), 1).assert().success();
    assert_eq!(files(&d.path().join("out/summary")).len(), 50);
    // A reader opens the output by its path, lists it and reads every file
    // through that one handle, in a loop, while the output is replaced again and
    // again. Each look must be one version, and a version newer than any seen
    // before must be complete: never a mix, never half of a new output. (An old
    // version may thin out under a reader that still holds it while its copy is
    // removed: that is not a half-done swap.)
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (out, stop) = (d.path().join("out/summary"), stop.clone());
        std::thread::spawn(move || {
            use rustix::fs::{Mode, OFlags};
            let mut looks = 0usize;
            let mut newest = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let dir = rustix::fs::open(&out, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
                    .expect("the output is always there");
                let mut names = Vec::new();
                for e in rustix::fs::Dir::read_from(&dir).unwrap().flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n != "." && n != ".." {
                        names.push(n);
                    }
                }
                let mut versions = std::collections::BTreeSet::new();
                let mut count = 0;
                for n in &names {
                    if let Ok(fd) = rustix::fs::openat(&dir, n.as_str(), OFlags::RDONLY, Mode::empty()) {
                        let mut buf = [0u8; 16];
                        let k = rustix::io::read(&fd, &mut buf).unwrap();
                        versions.insert(String::from_utf8_lossy(&buf[..k]).trim().parse::<u32>().unwrap());
                        count += 1;
                    }
                }
                assert!(versions.len() <= 1, "a mix of two versions in one look: {versions:?}");
                if let Some(&v) = versions.iter().next()
                    && v > newest
                {
                    assert_eq!(count, 50, "version {v} seen half-done");
                    newest = v;
                }
                looks += 1;
            }
            looks
        })
    };
    for n in 2..8 {
        summary(d.path(), n).assert().success();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let looks = reader.join().unwrap();
    assert!(looks > 10, "the reader ran ({looks} looks)");
    let last: Vec<String> = files(&d.path().join("out/summary"))
        .iter()
        .map(|f| fs::read_to_string(d.path().join("out/summary").join(f)).unwrap())
        .collect();
    assert!(last.iter().all(|v| v == "7\n"));
    let leftovers: Vec<_> = fs::read_dir(d.path().join("out")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no staging or old copy left beside it: {leftovers:?}");
}

#[test]
fn two_runs_of_one_batch_at_once_one_runs_the_other_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    for _ in 0..2 {
        children.push(
            Command::new(bin())
                .env("UBUNYE_TEST_SETTLE", "30ms")
                .args(["exec", "-d"])
                .arg(d.path())
                .args([
                    "--task",
                    "demo/sales/ingest",
                    "-dt",
                    "2025-01-01",
                    "--append",
                    "events=out/events",
                    "--",
                    "sh",
                    "-c",
                    &format!("sleep 1; {WRITE_ONE}"),
                ])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
    }
    let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let codes: Vec<_> = outs.iter().map(|o| o.status.code()).collect();
    assert!(codes.contains(&Some(0)) && codes.contains(&Some(1)), "{codes:?}");
    let refused = outs.iter().find(|o| o.status.code() == Some(1)).unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("with the same variables is still running (process "), "{err}");
    assert_eq!(files(&d.path().join("out/events")).len(), 2, "the batch once");
}

#[test]
fn the_command_gets_its_batch_in_the_environment() {
    let d = tempfile::tempdir().unwrap();
    let o = ubunye(d.path())
        .args([
            "--task",
            "demo/sales/ingest",
            "-dt",
            "2025-01-01",
            "--var",
            "region=wc",
            "--append",
            "events=out/events",
            "--overwrite",
            "sum-mary=out/summary",
            "--",
        ])
        .args(["sh", "-c", "env | grep ^UBUNYE_ | sort"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let env = String::from_utf8_lossy(&o.stdout);
    for want in [
        "UBUNYE_BATCH_KEY=",
        "UBUNYE_RUN_ID=",
        "UBUNYE_TASK=demo/sales/ingest",
        "UBUNYE_VAR_DT=2025-01-01",
        "UBUNYE_VAR_MODE=DEV",
        "UBUNYE_VAR_REGION=wc",
        "UBUNYE_OUT_EVENTS=",
        "UBUNYE_OUT_SUM_MARY=",
    ] {
        assert!(env.lines().any(|l| l.starts_with(want)), "{want} in {env}");
    }
    assert!(env.contains("/out/events/_ubunye-"), "{env}");
    assert!(env.contains("/out/.summary.ubunye-"), "{env}");
    assert!(!env.contains("UBUNYE_VAR_DTF"), "None values are not passed");
}

#[test]
fn the_run_record_is_the_peers_with_backend_exec_and_secrets_masked() {
    let d = tempfile::tempdir().unwrap();
    ubunye(d.path())
        .args([
            "--task",
            "demo/sales/ingest",
            "-dt",
            "2025-01-01",
            "--var",
            "api_token=s3cr3t-value",
            "--append",
            "events=out/events",
            "--",
        ])
        .args(["sh", "-c", "echo s3cr3t-value > /dev/null"])
        .assert()
        .success();
    let dir = d.path().join(".ubunye/lineage/demo/sales/ingest");
    let recs = records(&dir);
    assert_eq!(recs.len(), 1);
    let text = fs::read_to_string(dir.join(&recs[0])).unwrap();
    assert!(!text.contains("s3cr3t-value"), "{text}");
    let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.keys().map(String::as_str).collect();
    assert_eq!(
        &keys[..28],
        [
            "run_id",
            "task_path",
            "usecase",
            "package",
            "task_name",
            "profile",
            "model",
            "version",
            "config_hash",
            "started_at",
            "ended_at",
            "duration_sec",
            "status",
            "inputs",
            "outputs",
            "error",
            "engine_version",
            "backend",
            "variables",
            "record_version",
            "code_hash",
            "environment",
            "environment_hash",
            "timings",
            "expectations",
            "llm_calls",
            "llm_budget",
            "time_zone"
        ]
    );
    assert_eq!(v["status"], "success");
    assert_eq!(v["backend"], "exec");
    assert_eq!(v["variables"]["api_token"], "***");
    assert_eq!(v["command"][2], "echo *** > /dev/null");
    assert_eq!(v["outputs"][0]["name"], "events");
    assert!(text.ends_with('}'), "no trailing newline, as the peer");
}

#[test]
fn sigterm_is_passed_on_and_the_run_rolled_back() {
    let d = tempfile::tempdir().unwrap();
    let mark = d.path().join("started");
    let script = format!("{WRITE_ONE}; touch {}; trap 'exit 143' TERM; while :; do sleep 0.05; done", mark.display());
    let child = Command::new(bin())
        .args(["exec", "-d"])
        .arg(d.path())
        .args([
            "--task",
            "demo/sales/ingest",
            "-dt",
            "2025-01-01",
            "--append",
            "events=out/events",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..500 {
        if mark.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("interrupted by SIGTERM"));
    assert_eq!(files(&d.path().join("out/events")), Vec::<String>::new(), "staging removed, nothing landed");
    assert_eq!(files(&d.path().join(LEASES)), Vec::<String>::new());
}

#[test]
fn the_child_dies_with_ubunye_exec() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("child.pid");
    let script = format!("echo $$ > {}; sleep 60", pidfile.display());
    let mut child = Command::new(bin())
        .args(["exec", "-d"])
        .arg(d.path())
        .args([
            "--task",
            "demo/sales/ingest",
            "-dt",
            "2025-01-01",
            "--append",
            "events=out/events",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..500 {
        if fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let grandchild: i32 = fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        rustix::process::test_kill_process(rustix::process::Pid::from_raw(grandchild).unwrap()).is_err()
    });
    assert!(gone, "the command outlived ubunye exec");
    // The next run takes the dead run over (same host: by pid) and runs; the
    // dead run's record says interrupted, naming the taker.
    let o = ingest(d.path(), "2025-01-01").args(["--", "sh", "-c", WRITE_ONE]).output().unwrap();
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("died before it finished; took over its lease"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(files(&d.path().join("out/events")).len(), 2);
    let dir = d.path().join(".ubunye/lineage/demo/sales/ingest");
    let records: Vec<serde_json::Value> = records(&dir)
        .iter()
        .map(|f| serde_json::from_str(&fs::read_to_string(dir.join(f)).unwrap()).unwrap())
        .collect();
    let dead = records.iter().find(|r| r["status"] == "interrupted").expect("the dead run's record is marked");
    assert!(dead["error"].as_str().unwrap().starts_with("The run did not finish; run "), "{dead}");
    assert!(records.iter().any(|r| r["status"] == "success"));
}

#[test]
fn bad_input_is_refused_and_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("a-file"), "x").unwrap();
    fs::create_dir(d.path().join("ro")).unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--task", "demo/sales/ingest", "--append", "events=out/events"], 2, "after --"),
        (
            &["--task", "demo/sales/ingest", "--append", "events=out/events", "--", "no-such-program-xyz"],
            127,
            "cannot start",
        ),
        (
            &["--task", "demo/sales/ingest", "--append", "events=out/a", "--append", "events=out/b", "--", "true"],
            2,
            "given twice",
        ),
        (
            &["--task", "demo/sales/ingest", "--append", "a=out/x", "--overwrite", "b=out/x", "--", "true"],
            2,
            "same folder",
        ),
        (&["--task", "demo/sales/ingest", "--append", "a=.ubunye/x", "--", "true"], 2, "inside .ubunye"),
        (&["--task", "demo/sales/ingest", "--append", "a=a-file", "--", "true"], 2, "not a folder"),
        (&["--task", "demo/sales/ingest", "--append", "events", "--", "true"], 2, "NAME=PATH"),
        (&["--task", "demo/sales", "--", "true"], 2, "not a task path"),
        (&["--task", "demo/sales/ingest", "--var", "x", "--", "true"], 2, "key=value"),
        (&["--task", "demo/sales/ingest", "--append", "a=a-file/sub", "--", "true"], 1, "could not create"),
    ];
    for (args, code, says) in cases {
        let o = ubunye(d.path()).args(*args).output().unwrap();
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    }
    assert_eq!(files(d.path()), vec!["a-file"], "no lease, no staging, no record left");
    let o = Cmd::new(bin()).args(["exec", "-d", "/no/such/folder", "--task", "a/b/c", "--", "true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn leases_off_writes_no_lease() {
    let d = tempfile::tempdir().unwrap();
    let o = ingest(d.path(), "2025-01-01")
        .env("UBUNYE_RUN_LEASE", " Off ")
        .args(["--", "sh", "-c", WRITE_ONE])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("UBUNYE_RUN_LEASE is off"));
    assert!(!d.path().join(".ubunye/leases").exists());
    assert_eq!(files(&d.path().join("out/events")).len(), 2);
}

/// `ubunye exec` as a scheduler runs it: no controlling terminal (`setsid`),
/// so the command's output is also kept in its log.
fn detached(uc: &Path, dt: &str, extra: &[&str], script: &str) -> std::process::Output {
    Command::new("setsid")
        .arg(bin())
        .args(["exec", "-d"])
        .arg(uc)
        .args(["-u", "demo", "-p", "sales", "-t", "ingest", "-dt", dt, "--append", "events=out/events"])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .env("UBUNYE_TEST_SETTLE", "30ms")
        .env("UBUNYE_EXEC_GRACE", "300ms")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The run's log: `<lineage>/<task>/<run>.log`.
fn logs(uc: &Path) -> Vec<std::path::PathBuf> {
    let dir = uc.join(".ubunye/lineage/demo/sales/ingest");
    let mut l: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.to_string_lossy().ends_with(".json"))
        .collect();
    l.sort();
    l
}

/// The command's stdout and stderr reach exec's own, as always, and its
/// log beside the run record, outside the outputs; past its bound the log
/// is rotated; UBUNYE_EXEC_LOG=off keeps none.
#[test]
fn a_runs_output_is_kept_in_its_log_beside_its_record() {
    let d = tempfile::tempdir().unwrap();
    let o = detached(d.path(), "2025-01-01", &[], &format!("echo to-stdout; echo to-stderr >&2; {WRITE_ONE}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "to-stdout\n");
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("to-stderr\n"), "{}", String::from_utf8_lossy(&o.stderr));
    let l = logs(d.path());
    assert_eq!(l.len(), 1, "{l:?}");
    let text = fs::read_to_string(&l[0]).unwrap();
    assert!(text.contains("to-stdout\n") && text.contains("to-stderr\n"), "{text}");
    let record = l[0].with_extension("json");
    assert!(record.exists(), "the log is beside its record: {}", record.display());
    assert!(!files(&d.path().join("out/events")).iter().any(|f| f.ends_with(".log")));
    // A bound of 1 KiB: rotated, one older generation kept, neither larger.
    let d = tempfile::tempdir().unwrap();
    let o = Command::new("setsid")
        .arg(bin())
        .args(["exec", "-d"])
        .arg(d.path())
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-02", "--"])
        .args(["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo line-$i; i=$((i+1)); done"])
        .env("UBUNYE_EXEC_LOG_MAX", "1KiB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let l = logs(d.path());
    assert_eq!(l.len(), 2, "the log and one older generation: {l:?}");
    assert!(l.iter().all(|p| fs::metadata(p).unwrap().len() <= 1024), "{l:?}");
    assert!(fs::read_to_string(&l[0]).unwrap().ends_with("line-299\n"), "the newest lines are in the log");
    // Off.
    let d = tempfile::tempdir().unwrap();
    let o = Command::new("setsid")
        .arg(bin())
        .args(["exec", "-d"])
        .arg(d.path())
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-02", "--", "echo", "hi"])
        .env("UBUNYE_EXEC_LOG", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(logs(d.path()).is_empty());
}

/// A run past its --timeout is stopped (its process group), nothing lands,
/// what it wrote is taken back, its record says TimedOut, exec exits 124,
/// and the next run of the batch goes ahead.
#[test]
fn a_run_past_its_timeout_is_stopped_and_nothing_lands() {
    let d = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let o =
        detached(d.path(), "2025-01-01", &["--timeout", "1s"], &format!("{WRITE_ONE}; (sleep 60 &); exec sleep 60"));
    assert!(started.elapsed() < Duration::from_secs(15), "stopped at its timeout, not after 60 s");
    assert_eq!(o.status.code(), Some(124), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ran past --timeout 1s and was stopped"), "{err}");
    assert!(files(&d.path().join("out/events")).is_empty(), "nothing landed");
    let record = fs::read_dir(d.path().join(".ubunye/lineage/demo/sales/ingest"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&fs::read(record).unwrap()).unwrap();
    assert_eq!(v["status"], "error");
    assert!(v["error"].as_str().unwrap().starts_with("TimedOut: "), "{v}");
    assert!(files(&d.path().join(LEASES)).is_empty(), "the lease is released");
    let o = detached(d.path(), "2025-01-01", &["--timeout", "30s"], WRITE_ONE);
    assert!(o.status.success(), "the next run goes ahead: {}", String::from_utf8_lossy(&o.stderr));
    let o = detached(d.path(), "2025-01-03", &["--timeout", "0s"], WRITE_ONE);
    assert_eq!(o.status.code(), Some(2));
}

/// SIGKILL of `ubunye exec` while a --timeout runs: its command dies with
/// it, and the next run takes the batch over as after any kill.
#[test]
fn a_run_with_a_timeout_killed_is_taken_over_by_the_next() {
    let d = tempfile::tempdir().unwrap();
    let mut run = Command::new("setsid")
        .arg(bin())
        .args(["exec", "-d"])
        .arg(d.path())
        .args(["-u", "demo", "-p", "sales", "-t", "ingest", "-dt", "2025-01-01", "--append", "events=out/events"])
        .args([
            "--timeout",
            "60s",
            "--",
            "sh",
            "-c",
            &format!("{WRITE_ONE}; touch \"$UBUNYE_OUT_EVENTS/../wrote\"; exec sleep 60"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(15);
    while !d.path().join("out/events/wrote").exists() {
        assert!(std::time::Instant::now() < until, "the command wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let o = detached(d.path(), "2025-01-01", &["--timeout", "30s"], WRITE_ONE);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("died before it finished; took over its lease"), "{err}");
    let out: Vec<String> = files(&d.path().join("out/events")).into_iter().filter(|f| f.starts_with("part-")).collect();
    assert_eq!(out.len(), 1, "the batch once: {out:?}");
}
