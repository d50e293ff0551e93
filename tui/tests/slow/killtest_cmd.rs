//! `ubunye killtest` on the kinds of jobs users have, each held to
//! the verdict it must get: PASS for the well-behaved ones (partitioned
//! appends, an overwrite, background processes), FAIL naming the cause for
//! a naive job writing in place, one writing outside its outputs, and one
//! reading its own output. Then seed 004's `--example`, bad input, Ctrl-C.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::bin;

/// A folder with a use case `uc` and the job scripts beside it.
fn place() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("uc")).unwrap();
    (d, PathBuf::from("uc"))
}

fn script(dir: &Path, name: &str, body: &str) {
    fs::write(dir.join(name), format!("#!/bin/sh\n{body}\n")).unwrap();
}

/// `ubunye killtest ARGS` from `dir`, as JSON.
fn killtest(dir: &Path, args: &[&str]) -> (Output, serde_json::Value) {
    let o = Command::new(bin()).current_dir(dir).arg("killtest").arg("--json").args(args).output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

fn causes(v: &serde_json::Value) -> String {
    v["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

/// `ubunye killtest --sandbox SANDBOX` of a job that does nothing, from `dir`.
fn in_sandbox(dir: &Path, sandbox: &str) -> Output {
    let exec = ["--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e", "--", "true"];
    Command::new(bin()).current_dir(dir).args(["killtest", "--sandbox", sandbox]).args(exec).output().unwrap()
}

/// The folders killtest makes beside a use case.
fn sandboxes(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ubunye-killtest-"))
        .collect()
}

/// `ubunye exec`'s arguments for one batch (`-dt 1`) of `task` appending
/// `events=out/events`, running `sh JOB`.
fn append_job<'a>(task: &'a str, job: &'a str) -> Vec<&'a str> {
    vec!["--", "-d", "uc", "--task", task, "-dt", "1", "--append", "events=out/events", "--", "sh", job]
}

/// How many processes have `needle` in their /proc `file` (cmdline, environ).
fn processes_with(file: &str, needle: &str) -> usize {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| fs::read(e.path().join(file)).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(needle))
        .count()
}

const APPEND: &str = r#"mkdir -p "$UBUNYE_OUT_EVENTS/dt=$UBUNYE_VAR_DT"
for i in 1 2 3 4; do printf '%s:%s\n' "$UBUNYE_VAR_DT" $i > "$UBUNYE_OUT_EVENTS/dt=$UBUNYE_VAR_DT/part-$i-$UBUNYE_RUN_ID.txt"; sleep 0.01; done"#;

#[test]
fn well_behaved_jobs_pass() {
    let (d, _) = place();
    let dir = d.path();
    script(dir, "append.sh", APPEND);
    script(dir, "over.sh", r#"for i in 1 2 3; do echo "total $i" > "$UBUNYE_OUT_TOTALS/t-$i.txt"; sleep 0.01; done"#);
    script(
        dir,
        "background.sh",
        r#"( sleep 30 ) &
( echo side > "$UBUNYE_OUT_EVENTS/side-$UBUNYE_RUN_ID.txt"; while :; do sleep 0.005; done ) &
for i in 1 2 3; do echo "x $i" > "$UBUNYE_OUT_EVENTS/p-$i-$UBUNYE_RUN_ID.txt"; sleep 0.01; done
until [ -e "$UBUNYE_OUT_EVENTS/side-$UBUNYE_RUN_ID.txt" ]; do sleep 0.005; done"#,
    );
    for (what, exec) in [
        (
            "partitioned appends, three batches",
            "--batches=dt=1,dt=2,dt=3 -- -d uc --task a/b/append --append events=out/events -- sh append.sh",
        ),
        ("an overwrite", "-- -d uc --task a/b/over -dt 1 --overwrite totals=out/totals -- sh over.sh"),
        ("background processes", "-- -d uc --task a/b/bg -dt 1 --append events=out/events -- sh background.sh"),
    ] {
        let mut args = vec!["--kills", "12", "--seed", "5"];
        args.extend(exec.split(' '));
        let (o, v) = killtest(dir, &args);
        assert_eq!(v["verdict"], "PASS", "{what}: {}\n{}", causes(&v), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(0), "{what}");
        assert!(v["kills"].as_u64().unwrap() > 0, "{what}: some kill landed inside a run: {v}");
        assert_eq!(v["kept"], false, "{what}: a PASS removes its sandbox");
        assert!(!Path::new(v["sandbox"].as_str().unwrap()).exists(), "{what}");
    }
    assert!(sandboxes(dir).is_empty());
    // The background job's `sleep 30` never outlives its round.
    let left = processes_with("environ", &format!("UBUNYE_USECASE_DIR={}", dir.display()));
    assert_eq!(left, 0, "no process of a round is left");
    assert!(fs::read_dir(dir.join("uc")).unwrap().next().is_none(), "the real use case is untouched");
}

#[test]
fn jobs_that_are_not_safe_fail_naming_the_cause() {
    let (d, _) = place();
    let dir = d.path();
    script(
        dir,
        "inplace.sh",
        r#"mkdir -p "$UBUNYE_USECASE_DIR/out/events"
for i in 1 2 3; do printf 'a\n' > "$UBUNYE_USECASE_DIR/out/events/item-$i.txt"; sleep 0.01; printf 'b\n' >> "$UBUNYE_USECASE_DIR/out/events/item-$i.txt"; done"#,
    );
    script(
        dir,
        "outside.sh",
        r#"echo started > "$UBUNYE_USECASE_DIR/progress.log"; sleep 0.02; echo data > "$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.txt""#,
    );
    // Seed 001's second case: it counts the rows already there.
    script(
        dir,
        "own.sh",
        r#"n=$(cat "$UBUNYE_USECASE_DIR"/out/events/part-* 2>/dev/null | wc -l); sleep 0.02
echo "row $((n + 1))" > "$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.txt""#,
    );
    for (job, says) in [
        ("inplace.sh", "into output events in place, not beneath its staging folder $UBUNYE_OUT_EVENTS"),
        ("outside.sh", "the command wrote progress.log outside its outputs"),
        ("own.sh", "then a --rerun of every batch: output events holds 1 file(s) the reference run did not write"),
    ] {
        let (o, v) = killtest(dir, &[&["--kills", "6", "--seed", "2"][..], &append_job("a/b/c", job)].concat());
        assert_eq!(o.status.code(), Some(1), "{job}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(v["verdict"], "FAIL", "{job}");
        assert!(causes(&v).contains(says), "{job}: wanted {says:?} in:\n{}", causes(&v));
        assert_eq!(v["kept"], true, "{job}: a FAIL keeps its sandbox");
        assert!(Path::new(v["sandbox"].as_str().unwrap()).join("killed/uc").is_dir(), "{job}");
    }
    // A helper that leaves the run's session (as a daemon does) outlives a
    // kill where neither exec nor a takeover can stop it:
    // named, and killed by killtest, its subreaper.
    script(
        dir,
        "escape.sh",
        r#"setsid sh -c 'sleep 3; echo late > "$0/late.txt"' "$UBUNYE_OUT_EVENTS" < /dev/null > /dev/null 2>&1 &
sleep 0.3; echo data > "$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.txt""#,
    );
    // A command that writes nothing beneath its $UBUNYE_OUT_<NAME>.
    script(dir, "nothing.sh", "sleep 0.02");
    for (job, says) in [
        ("escape.sh", "left a run's session and outlived it"),
        ("nothing.sh", "the reference run wrote nothing beneath $UBUNYE_OUT_EVENTS"),
    ] {
        let (o, v) = killtest(dir, &[&["--kills", "6", "--seed", "2"][..], &append_job("a/b/e", job)].concat());
        assert_eq!(o.status.code(), Some(1), "{job}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(causes(&v).contains(says), "{job}: wanted {says:?} in:\n{}", causes(&v));
    }
    let left = processes_with("cmdline", "late.txt");
    assert_eq!(left, 0, "no escaped helper outlives killtest");
    assert!(
        causes(&killtest(dir, &[&["--kills", "2"][..], &append_job("a/b/c", "own.sh")].concat()).1)
            .contains("reads its own output")
    );
    assert!(fs::read_dir(dir.join("uc")).unwrap().next().is_none(), "the real use case is untouched");
}

/// --compare replaces the comparison by content: a job that stamps each
/// row with the time fails by content, and passes a comparison that leaves
/// the stamp out.
#[test]
fn a_comparison_of_the_users_own_replaces_the_one_by_content() {
    let (d, _) = place();
    let dir = d.path();
    script(dir, "stamp.sh", r#"sleep 0.02; echo "row 1 $(date +%s%N)" > "$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.txt""#);
    let exec =
        ["--", "-d", "uc", "--task", "a/b/c", "-dt", "1", "--append", "events=out/events", "--", "sh", "stamp.sh"];
    let (_, v) = killtest(dir, &[&["--kills", "3"][..], &exec].concat());
    assert_eq!(v["verdict"], "FAIL", "by content, the stamps differ");
    let same = r#"test "$(cut -d' ' -f1,2 "$UBUNYE_REF_OUT_EVENTS"/part-*)" = "$(cut -d' ' -f1,2 "$UBUNYE_OUT_EVENTS"/part-*)""#;
    let (o, v) = killtest(dir, &[&["--kills", "3", "--compare", same][..], &exec].concat());
    assert_eq!(v["verdict"], "PASS", "{}\n{}", causes(&v), String::from_utf8_lossy(&o.stderr));
    let (_, v) = killtest(dir, &[&["--kills", "3", "--compare", "exit 3"][..], &exec].concat());
    assert!(causes(&v).contains("--compare exited 3"), "{}", causes(&v));
}

/// Seed 004's three ways of one job: naive and skip-if-exists, run alone,
/// fail; the same naive job under ubunye exec passes.
#[test]
fn the_example_shows_the_difference() {
    let o = Command::new(bin()).args(["killtest", "--example", "--kills", "8", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let verdicts: Vec<&str> = v["modes"].as_array().unwrap().iter().map(|m| m["verdict"].as_str().unwrap()).collect();
    assert_eq!((verdicts[0], verdicts[2]), ("FAIL", "PASS"), "{v}");
    // Skip-if-exists fails only when a kill tears an item (between its two
    // writes); kills that land between items, or rounds that all finish
    // before their kill on a loaded machine, leave nothing to see (a run can
    // get two kills and no tear). When it fails, it is for a torn item.
    let skip = &v["modes"][1]["outcome"]["rows"][0]["outputs"]["events"];
    let torn = skip["corrupt"].as_array().unwrap().len();
    assert!(verdicts[1] == "PASS" || torn > 0, "{v}");
    // The naive job alone lands a killed run's files: doubled or corrupt.
    let naive = &v["modes"][0]["outcome"]["rows"][0]["outputs"]["events"];
    let bad = naive["doubled"].as_array().unwrap().len() + naive["corrupt"].as_array().unwrap().len();
    assert!(bad > 0, "{naive}");
    let text = Command::new(bin()).args(["killtest", "--example", "--kills", "4"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("naive, under ubunye exec") && text.lines().last() == Some("under ubunye exec: PASS"),
        "{text}"
    );
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_written() {
    let (d, _) = place();
    let dir = d.path();
    fs::create_dir_all(dir.join("uc/out/a/b")).unwrap();
    fs::write(dir.join("uc/config.yaml"), "x").unwrap();
    std::os::unix::fs::symlink(dir.join("uc/config.yaml"), dir.join("uc/link")).unwrap();
    fn with<'a>(before: &[&'a str]) -> Vec<&'a str> {
        [before, &["--", "sh", "-c", "true"][..]].concat()
    }
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            with(&["--kills", "0", "--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e"]),
            "--kills 0 kills nothing",
        ),
        (
            vec!["--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e", "--", "no-such-program-here"],
            "no such program",
        ),
        (
            with(&["--", "-d", "uc", "--task", "a/b/c", "--append", "a=out/a", "--append", "b=out/a/b"]),
            "inside the other",
        ),
        (
            with(&["--", "-d", "uc", "--task", "a/b/c", "--rerun", "--append", "e=out/e"]),
            "killtest runs --resume and --rerun itself",
        ),
        (with(&["--", "-d", "uc", "--task", "a/b/c"]), "name the command's outputs"),
        (
            with(&["--copy", "/etc/hostname", "--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e"]),
            "not inside the use case",
        ),
        (
            with(&["--copy", "uc/link", "--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e"]),
            "is a symlink or a special file",
        ),
        (
            with(&["--batches", "dt=1,dt=1", "--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e"]),
            "is the same batch as",
        ),
        (
            with(&["--batches", "nonsense", "--", "-d", "uc", "--task", "a/b/c", "--append", "e=out/e"]),
            "is not name=value",
        ),
        (with(&["--", "-d", "nowhere", "--task", "a/b/c", "--append", "e=out/e"]), "does not exist"),
        (vec![], "give ubunye exec's arguments after --"),
    ];
    for (args, says) in cases {
        let o = Command::new(bin()).current_dir(dir).arg("killtest").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(says), "{args:?}: wanted {says:?} in: {err}");
        assert!(sandboxes(dir).is_empty(), "{args:?}: no sandbox made");
    }
    // A sandbox folder that is not empty is refused, and left as it was.
    fs::create_dir_all(dir.join("mine")).unwrap();
    fs::write(dir.join("mine/keep"), "k").unwrap();
    let o = in_sandbox(dir, "mine");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(fs::read_dir(dir.join("mine")).unwrap().count(), 1);
    // A sandbox inside the use case (an output above all) is refused.
    for inside in ["uc/out/e", "uc"] {
        let o = in_sandbox(dir, inside);
        assert_eq!(o.status.code(), Some(2), "{inside}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("inside the use case"), "{inside}");
    }
    // A job that fails uninterrupted cannot be kill tested.
    let o = Command::new(bin())
        .current_dir(dir)
        .args([
            "killtest",
            "--",
            "-d",
            "uc",
            "--task",
            "a/b/c",
            "--append",
            "e=out/e",
            "--",
            "sh",
            "-c",
            "echo no input >&2; exit 4",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the reference run failed: batch ") && err.contains(" exited 4: no input / "), "{err}");
    let mut real = Vec::new();
    common::killing::walk(&dir.join("uc"), &mut real);
    let mut real: Vec<String> =
        real.iter().map(|p| p.strip_prefix(dir.join("uc")).unwrap().to_string_lossy().into_owned()).collect();
    real.sort();
    assert_eq!(real, ["config.yaml", "link", "out", "out/a", "out/a/b"], "the real use case is untouched");
}

/// Ctrl-C stops every process killtest started, keeps the sandbox and
/// names it in the last line.
#[test]
fn ctrl_c_stops_everything_and_names_the_sandbox() {
    let (d, _) = place();
    let dir = d.path();
    script(
        dir,
        "slow.sh",
        r#"for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > "$UBUNYE_OUT_EVENTS/p-$i-$UBUNYE_RUN_ID"; sleep 0.1; done"#,
    );
    let child = Command::new(bin())
        .current_dir(dir)
        .args(["killtest", "--kills", "50"])
        .args(append_job("a/b/c", "slow.sh"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::INT).unwrap();
    let start = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "it stops at once");
    assert_eq!(o.status.code(), Some(130));
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.trim_end().lines().last().unwrap_or_default().to_string();
    assert!(last.contains("interrupted: every process killtest started is stopped; the sandbox is left at "), "{err}");
    let sandbox = last.rsplit(" at ").next().unwrap();
    assert!(Path::new(sandbox).join("killed/uc").is_dir(), "{sandbox}");
    let left = processes_with("cmdline", "slow.sh");
    assert_eq!(left, 0, "no process of the job is left");
}
