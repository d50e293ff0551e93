//! `ubunye exec` and `ubunye leases list` against a use case in an object
//! store, on real S3-compatible servers started on 127.0.0.1 for
//! the test and stopped by their pid (SeaweedFS, and moto as a second
//! implementation; `scripts/s3-env`). Each server's tests run in their own
//! test function, so the two run side by side.
//!
//! - a run lands its files once, with names that carry its run id; a second
//!   run is refused, `--resume` skips;
//! - the zombie: a holder stopped (SIGSTOP) past the timeout at each step of
//!   its landing, taken over, then continued: nothing it uploads becomes
//!   visible, it never commits, its record never says success, and no upload
//!   is left open;
//! - races: 8 racers for one batch, 25 rounds, one winner each;
//! - bad input: one line, the documented exit code, nothing written;
//! - `ubunye top` over the store in a terminal (tmux): live, dead, taken over.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ubunye::bucket::{Acquire, Holder, Objects, Place, Refused, S3, StoreUrl, acquire};
use ubunye::layout::TaskPath;
use ubunye_testkit::s3::{BUCKET, Kind, Server, servers_bin};

struct Store {
    server: Server,
    s3: Arc<S3>,
}

fn start(kind: Kind, test: &str) -> Option<Store> {
    let bin = servers_bin(test)?;
    let server = Server::start(kind, &bin);
    let s3 = Arc::new(S3::from_vars(BUCKET, &server.vars()).expect("a client"));
    // weed makes its bucket a moment after it answers: bounded wait.
    let t = Instant::now();
    while s3.now().is_err() || s3.put("ready", b"1".to_vec()).is_err() {
        assert!(t.elapsed() < Duration::from_secs(60), "{}: the bucket took no write within 60 s", kind.name());
        std::thread::sleep(Duration::from_millis(300));
    }
    s3.delete("ready").unwrap();
    Some(Store { server, s3 })
}

impl Store {
    fn ubunye(&self) -> Command {
        let mut c = Command::new(common::bin());
        c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
        c.envs(self.server.vars());
        // Short waits for the tests (honoured by a debug build only).
        c.env("UBUNYE_TEST_TIMEOUT", "3s")
            .env("UBUNYE_TEST_HEARTBEAT_EVERY", "500ms")
            .env("UBUNYE_TEST_SETTLE", "100ms");
        c.stdin(Stdio::null());
        c
    }
    fn keys(&self, prefix: &str) -> Vec<String> {
        self.s3.list(prefix).unwrap().into_iter().map(|l| l.key).collect()
    }
    fn text(&self, key: &str) -> Option<String> {
        self.s3.get(key).unwrap().map(|g| String::from_utf8(g.body).unwrap())
    }
}

fn exec_args(uc: &str, dt: &str, script: &str) -> Vec<String> {
    [
        "exec",
        "-d",
        uc,
        "--task",
        "demo/sales/ingest",
        "-dt",
        dt,
        "--append",
        &format!("events=s3://{BUCKET}/lake/{dt}"),
        "--",
        "sh",
        "-c",
        script,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Three files, one of 12 MiB (two parts).
const WRITE: &str = "echo a > $UBUNYE_OUT_EVENTS/part-0.csv; mkdir $UBUNYE_OUT_EVENTS/k=1; \
    echo b > $UBUNYE_OUT_EVENTS/k=1/part-1.csv; head -c 12582912 /dev/zero > $UBUNYE_OUT_EVENTS/big.bin";

fn output(c: &mut Command) -> (i32, String) {
    let o = c.output().expect("run ubunye");
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn record_status(st: &Store, run: &str) -> Option<String> {
    let key = format!("uc/.ubunye/lineage/demo/sales/ingest/{run}.json");
    let text = st.text(&key)?;
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["status"].as_str().map(str::to_string)
}

fn lands_once_and_refuses_a_second_run(st: &Store) {
    let uc = format!("s3://{BUCKET}/uc");
    let (code, err) = output(st.ubunye().args(exec_args(&uc, "d1", WRITE)));
    assert_eq!(code, 0, "{err}");
    let keys = st.keys("lake/d1/");
    assert_eq!(keys.len(), 3, "{keys:?}");
    let run = keys[0].trim_start_matches("lake/d1/")[..36].to_string();
    assert!(keys.iter().all(|k| k.contains(&run)), "every name carries the run id: {keys:?}");
    assert!(keys.iter().any(|k| k.ends_with(&format!("k=1/{run}-part-1.csv"))), "{keys:?}");
    assert_eq!(st.s3.head(&format!("lake/d1/{run}-big.bin")).unwrap().unwrap().size, 12 << 20);
    assert_eq!(record_status(st, &run).as_deref(), Some("success"));
    assert!(st.s3.open_uploads("").unwrap().is_empty());
    let leases = st.keys("uc/.ubunye/leases/");
    assert_eq!(leases.len(), 1, "only the finished note is left: {leases:?}");
    let (code, err) = output(st.ubunye().args(exec_args(&uc, "d1", WRITE)));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("finished it"), "{err}");
    let (code, err) = output(st.ubunye().arg("exec").arg("--resume").args(&exec_args(&uc, "d1", WRITE)[1..]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("[SKIP]"), "{err}");
    assert_eq!(st.keys("lake/d1/").len(), 3);
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "--all", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["batches"][0]["state"], "finished");
    assert_eq!(v["batches"][0]["run_id"], run.as_str());
    let o = st.ubunye().args(["runs", "-d", &uc, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mine: Vec<&serde_json::Value> =
        v["records"].as_array().unwrap().iter().filter(|r| r["run_id"] == run.as_str()).collect();
    assert_eq!(mine.len(), 1, "{v}");
    assert_eq!(mine[0]["status"], "success");
    assert_eq!(mine[0]["task"], "demo/sales/ingest");
    let o = st.ubunye().args(["runs", "-d", &uc, "--status", "success"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains(&run[..8]));
    // --rerun replaces the batch: the new run's files, then the old ones
    // removed, the note naming the new run.
    let (code, err) = output(st.ubunye().arg("exec").arg("--rerun").args(&exec_args(&uc, "d1", WRITE)[1..]));
    assert_eq!(code, 0, "{err}");
    let keys = st.keys("lake/d1/");
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|k| !k.contains(&run)), "the replaced run's files are gone: {keys:?}");
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "--all", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rerun = keys[0].trim_start_matches("lake/d1/")[..36].to_string();
    assert_eq!(v["batches"][0]["run_id"], rerun.as_str());
}

/// A lease lives the `ttl_s` its holder wrote, whatever the taker's own
/// timeout: a run stopped with `--lease-ttl 2s` (and no test timeout, so
/// the disk's 15 minutes otherwise) is taken over 3 s later. A run past
/// `--timeout` is stopped: exit 124, `TimedOut` in its record, nothing seen.
fn lifetimes_and_timeouts(st: &Store) {
    let uc = format!("s3://{BUCKET}/uc");
    let mut a = st.ubunye();
    a.env_remove("UBUNYE_TEST_TIMEOUT")
        .arg("exec")
        .args(["--lease-ttl", "2s"])
        .args(&exec_args(&uc, "t1", WRITE)[1..])
        .env("UBUNYE_TEST_STOP_AT", "parts-sent")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut stopped = a.spawn().unwrap();
    wait_stopped(&stopped);
    let lease = st.keys("uc/.ubunye/leases/").into_iter().find(|k| !k.ends_with(".finished.json")).unwrap();
    assert!(st.text(&lease).unwrap().contains("\"ttl_s\": 2"), "{:?}", st.text(&lease));
    std::thread::sleep(Duration::from_millis(3500));
    let o = st.ubunye().env_remove("UBUNYE_TEST_TIMEOUT").args(["leases", "list", "-d", &uc, "--json"]).output();
    let v: serde_json::Value = serde_json::from_slice(&o.unwrap().stdout).unwrap();
    // Listed dead at 3.5 s: by the 2 s it wrote, not the 15 minutes a lease
    // without `ttl_s` lives.
    let key = lease.rsplit('/').next().unwrap().trim_end_matches(".json");
    let row = v["batches"].as_array().unwrap().iter().find(|b| b["key"] == key);
    assert!(row.is_some_and(|b| b["state"] == "dead" && b["dead"] == true), "{v}");
    let (code, err) = output(st.ubunye().env_remove("UBUNYE_TEST_TIMEOUT").args(exec_args(&uc, "t1", WRITE)));
    assert_eq!(code, 0, "a lease past its own 2 s was not taken over: {err}");
    let (code, zerr) = continue_and_wait(&mut stopped, "--lease-ttl");
    assert_eq!(code, 1, "{zerr}");
    assert!(zerr.contains("lost its lease"), "{zerr}");
    assert_eq!(st.keys("lake/t1/").len(), 3);

    let mut slow = exec_args(&uc, "t2", "echo a > $UBUNYE_OUT_EVENTS/a.csv; sleep 30");
    slow.splice(1..1, ["--timeout".to_string(), "1s".to_string()]);
    let t = Instant::now();
    let (code, err) = output(st.ubunye().args(&slow));
    assert_eq!(code, 124, "{err}");
    assert!(t.elapsed() < Duration::from_secs(20), "stopped at its timeout, not after its sleep");
    assert!(err.contains("TimedOut"), "{err}");
    assert!(st.keys("lake/t2/").is_empty());
    let records: Vec<String> = st.keys("uc/.ubunye/lineage/").iter().filter_map(|k| st.text(k)).collect();
    assert!(records.iter().any(|r| r.contains("lake/t2") && r.contains("TimedOut") && r.contains("\"error\"")));
    // A run whose `ubunye exec` is sent SIGTERM: its record says so in the
    // words a disk's run uses, and nothing is seen.
    // Sent once its command runs (it says so in a file of the test's).
    let marks = tempfile::tempdir().unwrap();
    let started = marks.path().join("started");
    let script = format!("echo a > $UBUNYE_OUT_EVENTS/a.csv; touch {}; sleep 30", started.display());
    let mut run = live_run(st, &uc, "t3", &script);
    let until = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(Instant::now() < until, "the command of t3 never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_child(&run);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = ended(&mut run, "a run sent SIGTERM");
    assert!(!status.success(), "{status:?}");
    assert!(st.keys("lake/t3/").is_empty());
    let records: Vec<String> = st.keys("uc/.ubunye/lineage/").iter().filter_map(|k| st.text(k)).collect();
    let said = records.iter().find(|r| r.contains("lake/t3")).cloned().unwrap_or_default();
    assert!(said.contains("Terminated: ubunye exec received SIGTERM"), "{said}");
}

fn wait_stopped(child: &Child) {
    let t = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap_or_default();
        let state = stat.rsplit(')').next().and_then(|r| r.split_whitespace().next()).unwrap_or("");
        if state == "T" {
            return;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the holder never reached its stop ({stat})");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A holder stopped at `step`, taken over once its lease is dead by the
/// store's clock, then continued.
fn zombie(st: &Store, step: &str, dt: &str) {
    let uc = format!("s3://{BUCKET}/uc");
    let mut a = st.ubunye();
    a.args(exec_args(&uc, dt, WRITE)).env("UBUNYE_TEST_STOP_AT", step).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut zombie = a.spawn().unwrap();
    wait_stopped(&zombie);
    // Past the 3 s timeout by the store's clock (1 s resolution).
    std::thread::sleep(Duration::from_millis(4500));
    let (code, err) = output(st.ubunye().args(exec_args(&uc, dt, WRITE)));
    assert_eq!(code, 0, "{step}: the taker: {err}");
    assert!(err.contains("died before it finished; took over its lease"), "{step}: {err}");
    let (code, zerr) = continue_and_wait(&mut zombie, step);
    assert_eq!(code, 1, "{step}: the zombie: {zerr}");
    assert!(zerr.contains("lost its lease"), "{step}: {zerr}");
    let keys = st.keys(&format!("lake/{dt}/"));
    assert_eq!(keys.len(), 3, "{step}: only the taker's files: {keys:?}");
    let taker = keys[0].trim_start_matches(&format!("lake/{dt}/"))[..36].to_string();
    assert!(keys.iter().all(|k| k.contains(&taker)), "{step}: a file of the zombie is visible: {keys:?}");
    let note_key =
        st.keys("uc/.ubunye/leases/").into_iter().filter(|k| k.ends_with(".finished.json")).collect::<Vec<_>>();
    let notes: Vec<String> = note_key.iter().filter_map(|k| st.text(k)).filter(|t| t.contains(&taker)).collect();
    assert_eq!(notes.len(), 1, "{step}: the finished note names the taker");
    // The zombie's record: never success.
    let records = st.keys("uc/.ubunye/lineage/demo/sales/ingest/");
    for r in records {
        let run = r.rsplit('/').next().unwrap().trim_end_matches(".json").to_string();
        if run != taker && st.text(&r).unwrap().contains(&format!("lake/{dt}")) {
            assert_ne!(record_status(st, &run).as_deref(), Some("success"), "{step}: the zombie's record says success");
        }
    }
    assert!(st.s3.open_uploads("lake/").unwrap().is_empty(), "{step}: an upload is left open");
    assert!(!st.keys("uc/.ubunye/leases/").iter().any(|k| !k.ends_with(".finished.json")), "{step}: a lease is left");
}

fn races(st: &Store, rounds: usize) {
    let clock: Arc<dyn ubunye::sys::Clock> = Arc::new(ubunye::sys::SystemClock);
    let timing = ubunye::sys::Timing { settle: Duration::from_millis(50), ..ubunye::sys::Timing::peer() };
    for round in 0..rounds {
        let place = Place {
            uc: StoreUrl::parse(&format!("s3://{BUCKET}/races")).unwrap(),
            task: TaskPath::parse("demo/race/one").unwrap(),
            key: format!("{round:016x}"),
        };
        let won: Vec<_> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..8)
                .map(|r| {
                    let (place, clock, s3) = (place.clone(), clock.clone(), st.s3.clone());
                    s.spawn(move || {
                        let holder = Holder {
                            run_id: format!("racer-{round}-{r}"),
                            host: "h".into(),
                            pid: r,
                            rerun: false,
                            actor: None,
                        };
                        match acquire(s3 as Arc<dyn Objects>, &place, &holder, clock, &timing) {
                            Ok(Acquire::Held(l, _)) => Some(l),
                            Ok(Acquire::Refused(Refused::Busy { .. })) => None,
                            Ok(Acquire::Refused(r)) => panic!("round {round}: a racer was refused as {r:?}"),
                            Ok(Acquire::Recovered { recovered: r, .. }) => {
                                panic!("round {round}: a racer completed {r:?}")
                            }
                            Err(e) => panic!("round {round}: a racer failed: {e}"),
                        }
                    })
                })
                .collect();
            racers.into_iter().filter_map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(won.len(), 1, "round {round}: {} racers hold one batch", won.len());
        assert!(won[0].release().unwrap());
    }
}

fn bad_input(st: &Store, kind: Kind) {
    let uc = format!("s3://{BUCKET}/uc");
    let before = st.keys("");
    for (args, code, says) in [
        (vec!["leases", "list", "-d", "s3://Bad_Bucket/uc"], 2, "not a bucket name"),
        (vec!["leases", "list", "-d", "s3://no-such-bucket/uc"], 1, "does not exist"),
        (vec!["leases", "list", "-d", &uc, "--lineage-dir", "l"], 2, "--lineage-dir names a folder"),
        (vec!["top", "-d", "s3://no-such-bucket/uc"], 1, "does not exist"),
        (vec!["top", "--watch", "notify", "-d", &uc], 2, "a store sends no events"),
        (vec!["top", "--interval", "0s", "-d", &uc], 2, "--interval 0"),
        (vec!["top", "--interval", "1ms", "-d", &uc], 2, "at least 100ms"),
        // No run has used the prefix yet: said as a folder with no .ubunye/
        // is, never read as a use case with nothing wrong in it.
        (vec!["leases", "explain", "-d", &uc, "0123"], 2, "nothing is under .ubunye/ there"),
        (vec!["leases", "list", "-d", &uc, "--fail-if-any"], 2, "nothing is under .ubunye/ there"),
        (vec!["doctor", "-d", &uc], 2, "nothing is under .ubunye/ there"),
        (vec!["runs", "-d", &uc], 2, "nothing is under .ubunye/ there"),
        (vec!["top", "-d", &uc], 2, "nothing is under .ubunye/ there"),
        (vec!["leases", "takeover", "-d", &uc, "01", "--yes"], 2, "'01' is 2 hex digit(s)"),
        // Named as in a folder: 4 digits or more, never a path; what a store
        // has not (--lineage-dir, repairs of many) refused in one line.
        (vec!["leases", "explain", "-d", &uc, "0"], 2, "'0' is 1 hex digit(s)"),
        (vec!["leases", "explain", "-d", &uc, "uc/x.json"], 2, "is a path"),
        (vec!["leases", "explain", "-d", &uc, "0123", "--lineage-dir", "l"], 2, "--lineage-dir names a folder"),
        (vec!["leases", "takeover", "-d", &uc, "--state", "dead", "--dry-run"], 2, "repair one batch at a time"),
    ] {
        let (c, err) = output(st.ubunye().args(&args));
        assert_eq!(c, code, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(!err.contains(ubunye_testkit::s3::SECRET_KEY), "a secret was printed");
    }
    // An output above the use case's state, two outputs that overlap, and a
    // name the S3 client would send encoded.
    for (append, says) in
        [(format!("e=s3://{BUCKET}/uc"), "inside or above"), (format!("e=s3://{BUCKET}/lake/ev~1"), "encoded")]
    {
        let mut args = exec_args(&uc, "d9", "true");
        args[8] = append.clone();
        let (c, err) = output(st.ubunye().args(&args));
        assert_eq!(c, 2, "{append}: {err}");
        assert!(err.contains(says), "{append}: {err}");
    }
    // A task the client would send encoded; an endpoint with a password in
    // it: one line, no secret.
    let mut odd = exec_args(&uc, "d9", "true");
    odd[4] = "démo/ventes/ingest".into();
    let (c, err) = output(st.ubunye().args(&odd));
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("the task 'démo/ventes/ingest'"), "{err}");
    let with_password = st.server.endpoint.replace("http://", "http://alice:s3cr3t@");
    let (c, err) = output(st.ubunye().args(exec_args(&uc, "d9", "true")).env("AWS_ENDPOINT_URL", &with_password));
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("holds a user name or password") && !err.contains("s3cr3t"), "{err}");
    let mut two = exec_args(&uc, "d9", "true");
    two.splice(9..9, ["--append".to_string(), format!("f=s3://{BUCKET}/lake/d9/sub")]);
    let (c, err) = output(st.ubunye().args(&two));
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("overlaps"), "{err}");
    let (c, err) = output(st.ubunye().args(["leases", "list", "-d", &format!("s3://{BUCKET}/uc~1")]));
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("encoded"), "{err}");
    let mut over = exec_args(&uc, "d9", "true");
    over[7] = "--overwrite".into();
    let (c, err) = output(st.ubunye().args(&over));
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("--overwrite to an object store is refused"), "{err}");
    // moto takes any credentials; SeaweedFS checks them.
    if kind == Kind::SeaweedFs {
        let (c, err) =
            output(st.ubunye().args(exec_args(&uc, "d9", "true")).env("AWS_SECRET_ACCESS_KEY", "wrong-secret"));
        assert_eq!(c, 1, "{err}");
        assert!(err.contains("refused the credentials"), "{err}");
        assert!(!err.contains("wrong-secret"), "a secret was printed: {err}");
    }
    let (c, err) = output(st.ubunye().args(exec_args(&uc, "d9", "true")).env_remove("AWS_ACCESS_KEY_ID"));
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("no credentials"), "{err}");
    let (c, err) = output(st.ubunye().args(exec_args(&uc, "d9", "true")).env("AWS_ENDPOINT_URL", "http://127.0.0.1:9"));
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("no answer from the store"), "{err}");
    // Plain HTTP without AWS_ALLOW_HTTP: the variable is named; a bucket
    // that is not there is said so, from exec too.
    let (c, err) = output(st.ubunye().args(exec_args(&uc, "d9", "true")).env_remove("AWS_ALLOW_HTTP"));
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("AWS_ALLOW_HTTP=true") && err.lines().count() == 1, "{err}");
    let mut nowhere = exec_args("s3://no-such-bucket/uc", "d9", "true");
    nowhere[8] = "events=s3://no-such-bucket/lake/d9".into();
    let (c, err) = output(st.ubunye().args(&nowhere));
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("does not exist") && err.lines().count() == 1, "{err}");
    // A lease's lifetime of less than a second.
    for ttl in ["10ms", "1y", "2days"] {
        let mut odd = exec_args(&uc, "d9", "true");
        odd.splice(1..1, ["--lease-ttl".to_string(), ttl.to_string()]);
        let (c, err) = output(st.ubunye().args(&odd));
        assert_eq!(c, 2, "{ttl}: {err}");
        assert!(err.contains("--lease-ttl must be between a second and a day"), "{ttl}: {err}");
    }
    assert_eq!(st.keys(""), before, "bad input wrote something");
}

/// A run killed (SIGKILL) after its parts were sent: `leases list`,
/// `explain` and `doctor` name its dead lease and open uploads, and change
/// nothing; `takeover --dry-run` changes nothing; `takeover --yes` aborts
/// its uploads and hands the batch back.
fn repairs(st: &Store) {
    let uc = format!("s3://{BUCKET}/uc");
    let mut a = st.ubunye();
    a.args(exec_args(&uc, "r1", WRITE))
        .env("UBUNYE_TEST_STOP_AT", "parts-sent")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = a.spawn().unwrap();
    wait_stopped(&child);
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(4500));
    let key = String::from_utf8(
        Command::new(common::bin()).args(["key", "--task", "demo/sales/ingest", "-dt", "r1"]).output().unwrap().stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let picture = || (st.keys(""), st.s3.open_uploads("").unwrap());
    let before = picture();
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = v["batches"].as_array().unwrap().iter().find(|b| b["key"] == key.as_str()).cloned().unwrap();
    assert_eq!(row["state"], "dead", "{row}");
    // A filter that leaves nothing says what the store holds without it.
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "--all", "--json"]).output().unwrap();
    let all = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["batches"].as_array().unwrap().len();
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "--task", "nope"]).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains(&format!("of its {all} batch(es) need attention")), "{said}");
    let (c, text) = {
        let o = st.ubunye().args(["leases", "explain", "-d", &uc, &key[..8]]).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    assert_eq!(c, Some(0), "{text}");
    assert!(text.contains("state DEAD") && text.contains("(3 still open)"), "{text}");
    let o = st.ubunye().args(["doctor", "-d", &uc]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "doctor finds the dead lease");
    let text = String::from_utf8_lossy(&o.stdout);
    let url = format!("{uc}/.ubunye/leases/demo/sales/ingest/{key}.json");
    assert!(text.contains("needs-repair") && text.contains(&url), "{text}");
    // Among other use cases, by the same finding, naming its use case; a
    // folder that is not there is its own finding, and the store is still
    // looked at.
    let o = st.ubunye().args(["doctor", "-d", &uc, "-d", "/nonexistent-use-case", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mine = |f: &&serde_json::Value| f["use_case"] == uc.as_str();
    let found: Vec<_> = v["findings"].as_array().unwrap().iter().filter(mine).collect();
    assert_eq!(found.len(), 1, "{v}");
    assert_eq!(
        (found[0]["kind"].as_str(), found[0]["key"].as_str()),
        (Some("needs-repair"), Some(key.as_str())),
        "{v}"
    );
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["kind"] == "unreadable" && !mine(&f)), "{v}");
    // `runs` among other use cases lists the store's records by the same
    // rows, each naming its use case.
    let o = st.ubunye().args(["runs", "-d", &uc, "-d", "/nonexistent-use-case", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["records"].as_array().unwrap();
    assert!(!runs.is_empty() && runs.iter().all(|r| r["use_case"] == uc.as_str()), "{v}");
    assert!(runs.iter().any(|r| r["status"] == "running"), "the killed run's record: {v}");
    assert_eq!(v["problems"].as_array().map(Vec::len), Some(1), "the missing folder: {v}");
    // The metrics count a store's batches by the states a folder's have,
    // alone or among other use cases (a folder that is not there is its
    // own row, and the store is still counted).
    for extra in [None, Some("/nonexistent-use-case")] {
        let mut m = st.ubunye();
        m.args(["metrics", "-d", &uc]);
        if let Some(d) = extra {
            m.args(["-d", d]);
        }
        let o = m.output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{text} {}", String::from_utf8_lossy(&o.stderr));
        let series = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name) && l.contains(&format!("use_case=\"{uc}\"")))
                .and_then(|l| l.rsplit(' ').next())
                .map(str::to_string)
        };
        let dead = text.lines().find(|l| {
            l.starts_with("ubunye_batches{")
                && l.contains(&format!("use_case=\"{uc}\""))
                && l.contains("state=\"dead\"")
        });
        assert!(dead.is_some_and(|l| l.ends_with(" 1")), "{text}");
        assert_eq!(series("ubunye_scan_errors").as_deref(), Some("0"), "{text}");
        assert!(text.contains("kind=\"needs-repair\""), "{text}");
    }
    // A task's batches by date, read from the store as from a folder.
    let o = st.ubunye().args(["leases", "history", "-d", &uc, "--task", "d/s/ingest", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["use_case"].as_str(), v["tasks"][0]["task"].as_str()),
        (Some(uc.as_str()), Some("demo/sales/ingest"))
    );
    let days = v["tasks"][0]["days"].as_array().cloned().unwrap_or_default();
    assert!(days.iter().any(|d| d["batch"]["key"] == key.as_str()), "{v}");
    // The same use case mistyped is not up, as a folder that is not one.
    let typo = uc.replace("/uc", "/uC");
    let o = st.ubunye().args(["metrics", "-d", &typo]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("ubunye_use_case_up{{use_case=\"{typo}\"}} 0")), "{text}");
    // `leases list` over many use cases lists the store's batches beside a
    // folder's row, by the same states; its `<usecase>:<key>` is explained
    // as printed.
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "-d", "/nonexistent-use-case", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["batches"].as_array().cloned().unwrap_or_default();
    let dead = rows.iter().find(|r| r["key"] == key.as_str()).cloned().unwrap_or_default();
    assert_eq!((dead["state"].as_str(), dead["use_case"].as_str()), (Some("dead"), Some(uc.as_str())), "{v}");
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "-d", "/nonexistent-use-case"]).output().unwrap();
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    let named = format!("{uc}:{}", &key[..8]);
    assert!(table.contains(&named), "{table}");
    let o = st.ubunye().args(["leases", "explain", &named]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    // Judged by its lease's age alone: which host ran it is not looked at.
    assert!(said.contains("state DEAD") && !said.contains("(another host)"), "{said}");
    let o = st.ubunye().args(["leases", "takeover", "-d", &uc, &key[..8], "--dry-run"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--dry-run: nothing was changed"));
    assert_eq!(picture(), before, "looking and a dry run changed the bucket");
    let o = st.ubunye().args(["leases", "takeover", "-d", &uc, &key[..8], "--yes"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("3 upload(s) aborted"), "{out}");
    // The settle is said before it is waited, as on disk, in the store's
    // words: it waits once, after the fence, for a completion in flight.
    let err = String::from_utf8_lossy(&o.stderr);
    let run = ubunye::documents::short(row["run_id"].as_str().unwrap());
    // The run, named by the id `runs` shows: its record whole, read from
    // the store; a store keeps no log, and says so.
    let full = row["run_id"].as_str().unwrap();
    let o = st.ubunye().args(["runs", "show", &run, "-d", &uc]).output().unwrap();
    let shown = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{shown}{}", String::from_utf8_lossy(&o.stderr));
    let record = format!("{uc}/.ubunye/lineage/demo/sales/ingest/{full}.json");
    assert!(shown.contains(&format!("run       {full}")) && shown.contains(&format!("record    {record}")), "{shown}");
    assert!(shown.contains("status    interrupted") && shown.contains("Log: none (a store keeps no log"), "{shown}");
    assert!(shown.contains(&format!("`ubunye leases explain {uc}:{}`", &key[..8])), "{shown}");
    let o = st.ubunye().args(["runs", "show", &run, "-d", &uc, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["record_path"].as_str(), v["key"].as_str()), (Some(record.as_str()), Some(key.as_str())), "{v}");
    assert!(v["log_path"].is_null(), "{v}");
    assert!(err.contains(&format!("aborting the uploads of run {run}'s 3 claimed object(s), then waiting")), "{err}");
    assert!(st.s3.open_uploads("").unwrap().is_empty());
    assert!(st.keys("lake/r1/").is_empty());
    // Audited, as on disk: one entry, which explain shows.
    assert_eq!(st.keys("uc/.ubunye/repairs/").len(), 1, "{:?}", st.keys("uc/.ubunye/"));
    let o = st.ubunye().args(["leases", "explain", "-d", &uc, &key[..8], "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["repairs"][0];
    assert_eq!(
        (r["command"].as_str(), r["outcome"].as_str(), r["state"].as_str()),
        (Some("ubunye leases takeover"), Some("done"), Some("dead")),
        "{v}"
    );
    assert_eq!(r["taken_over"][0], v["batch"]["run_id"], "{v}");
    assert_eq!(v["batch"]["state"], "interrupted", "{v}");
    let o = st.ubunye().args(["doctor", "-d", &uc]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    // A key no batch has, in a use case runs have used; the same use case
    // mistyped: one line each, exit 2, as in a folder.
    let typo = uc.replace("/uc", "/uC");
    for (args, says) in [
        (vec!["leases", "explain", "-d", &uc, "ffff0000"], "no batch's key or run starts with 'ffff0000'"),
        (vec!["leases", "list", "-d", &typo, "--fail-if-any"], "nothing is under .ubunye/ there"),
        (vec!["top", "-d", &uc], "top needs a terminal"),
    ] {
        let (c, err) = output(st.ubunye().args(&args));
        assert_eq!((c, err.lines().count()), (2, 1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A stray upload no lease names (a run killed before it saved its keys,
    // or not one of ours) is named by doctor, and left alone.
    let id = st.s3.start_uploads(&["lake/r1/stray.csv".into()]).unwrap();
    let o = st.ubunye().args(["doctor", "-d", &uc, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["kind"], "stray-upload", "{v}");
    assert_eq!(st.s3.open_uploads("").unwrap(), [("lake/r1/stray.csv".to_string(), id[0].clone())]);
    st.s3.abort("lake/r1/stray.csv", &id[0]).unwrap();
}

fn runs_and_zombies(kind: Kind, test: &str) {
    let Some(st) = start(kind, test) else { return };
    let t = Instant::now();
    let lap = |what: &str| eprintln!("{}: {what} at {:.1} s", kind.name(), t.elapsed().as_secs_f64());
    bad_input(&st, kind);
    lap("bad input");
    lands_once_and_refuses_a_second_run(&st);
    lap("a run");
    lifetimes_and_timeouts(&st);
    lap("lifetimes and timeouts");
    for (i, step) in ["keys-claimed", "uploads-claimed", "parts-sent", "completed"].iter().enumerate() {
        zombie(&st, step, &format!("z{i}"));
    }
    lap("zombies");
    repairs(&st);
    lap("repairs");
    odd_names(&st);
    lap("odd names");
}

/// Objects put by hand under names no engine gives (an empty folder, `..`,
/// a control character) and a folder marker: the use case is still listed,
/// explained and examined, each odd object named once, none printed raw.
fn odd_names(st: &Store) {
    let uc = format!("s3://{BUCKET}/odd");
    let (code, err) = output(st.ubunye().args(exec_args(&uc, "o1", WRITE)));
    assert_eq!(code, 0, "{err}");
    let bin = std::path::PathBuf::from(std::env::var_os("UBUNYE_S3_BIN").expect("UBUNYE_S3_BIN"));
    let vars: std::collections::HashMap<String, String> = st.server.vars().into_iter().collect();
    let put = |key: &str| {
        // A folder marker is empty; the others hold a JSON object.
        let body = if key.ends_with('/') { "b''" } else { "b'{}'" };
        let script = format!(
            "import boto3, sys\nboto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='us-east-1').put_object(Bucket=sys.argv[4], Key=sys.argv[5], Body={body})"
        );
        let o = Command::new(bin.join("python"))
            .args([
                "-c",
                &script,
                &vars["AWS_ENDPOINT_URL"],
                &vars["AWS_ACCESS_KEY_ID"],
                &vars["AWS_SECRET_ACCESS_KEY"],
                BUCKET,
                key,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "put {key:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let odd = [
        "odd/.ubunye/leases/demo//ingest/0123456789abcdef.json",
        "odd/.ubunye/leases/demo/sales/ingest/e\u{1b}[2J.json",
    ];
    for k in odd {
        put(k);
    }
    put("odd/.ubunye/leases/demo/sales/ingest/");
    let o = st.ubunye().args(["leases", "list", "-d", &uc, "--all", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Each odd object is said once: a problem, or (where the store made
    // `demo//ingest` into `demo/ingest`, as SeaweedFS does) a row that no
    // engine reads; the batch run above is listed as it is.
    let rows = v["batches"].as_array().unwrap();
    let said = v["problems"].as_array().unwrap().len() + rows.iter().filter(|r| r["state"] == "unreadable").count();
    assert_eq!(said, odd.len(), "{v}");
    assert_eq!(rows.iter().filter(|r| r["state"] == "finished").count(), 1, "{v}");
    let o = st.ubunye().args(["doctor", "-d", &uc]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("0123456789abcdef.json") && text.contains("[2J.json"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

/// Wait (at most 120 s) for `run` to end: how it ended.
fn ended(run: &mut Child, what: &str) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = run.try_wait().unwrap() {
            return s;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "{what}: the run never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Continue a stopped run, and wait (at most 120 s) for it to end: its exit
/// code and stderr.
fn continue_and_wait(run: &mut Child, what: &str) -> (i32, String) {
    let pid = rustix::process::Pid::from_child(run);
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    let status = ended(run, what);
    let mut err = String::new();
    std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.code().unwrap_or(-1), err)
}

/// Nothing of run `dt`'s batch is left: no object under its output, no open
/// upload, no lease.
fn nothing_left(st: &Store, dt: &str, what: &str) {
    assert!(st.keys(&format!("lake/{dt}/")).is_empty(), "{what}: visible: {:?}", st.keys(&format!("lake/{dt}/")));
    assert!(st.s3.open_uploads(&format!("lake/{dt}/")).unwrap().is_empty(), "{what}: an upload is left open");
    let leases: Vec<String> =
        st.keys("uc/.ubunye/leases/").into_iter().filter(|k| !k.ends_with(".finished.json")).collect();
    assert!(leases.is_empty(), "{what}: a lease is left: {:?}", leases.iter().map(|k| st.text(k)).collect::<Vec<_>>());
}

/// The store crashes (SIGKILL) while runs land, and comes back:
/// - a run paused past its lease's lifetime, taken over meanwhile, meets a
///   dropped connection with its first request: it says it lost its lease,
///   naming the taker;
/// - at each step of a landing the store is killed and started again: the
///   run waits for it, takes back what it made visible, says so in its
///   record, and hands the lease back; nothing is left;
/// - a store that does not come back within the run's wait: the run says
///   what may be visible and when; the next run takes it back.
#[test]
fn seaweedfs_crashes_mid_run() {
    let Some(mut st) = start(Kind::SeaweedFs, "store::seaweedfs_crashes_mid_run") else { return };
    let uc = format!("s3://{BUCKET}/uc");
    let stopped_at = |st: &Store, step: &str, dt: &str, outage: &str| {
        let mut a = st.ubunye();
        a.args(exec_args(&uc, dt, WRITE))
            .env("UBUNYE_TEST_STOP_AT", step)
            .env("UBUNYE_TEST_STORE_OUTAGE", outage)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let run = a.spawn().unwrap();
        wait_stopped(&run);
        run
    };

    // The zombie whose connection the crash dropped.
    let mut zombie = stopped_at(&st, "parts-sent", "c0", "60s");
    st.server.crash();
    st.server.restart();
    std::thread::sleep(Duration::from_millis(4500));
    let (code, err) = output(st.ubunye().args(exec_args(&uc, "c0", WRITE)));
    assert_eq!(code, 0, "the taker: {err}");
    let taker = st.keys("lake/c0/")[0].trim_start_matches("lake/c0/")[..8].to_string();
    let (code, zerr) = continue_and_wait(&mut zombie, "the zombie");
    assert_eq!(code, 1, "the zombie: {zerr}");
    // The taker named: it holds the lease, or finished the batch and handed it back.
    assert!(zerr.contains("lost its lease") && zerr.contains(&format!("run {taker} ")), "{zerr}");
    assert_eq!(st.keys("lake/c0/").len(), 3, "only the taker's files");

    // Killed at each step, back 2 s later.
    for (i, step) in ["keys-claimed", "uploads-claimed", "parts-sent", "completed"].iter().enumerate() {
        let dt = format!("c{}", i + 1);
        let mut run = stopped_at(&st, step, &dt, "90s");
        st.server.crash();
        let pid = rustix::process::Pid::from_child(&run);
        rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
        std::thread::sleep(Duration::from_secs(2));
        st.server.restart();
        let (code, err) = continue_and_wait(&mut run, step);
        assert_eq!(code, 1, "{step}: {err}");
        assert!(err.contains("once the store answered") && err.contains("nothing of it is visible"), "{step}: {err}");
        nothing_left(&st, &dt, &format!("{step}: {err}"));
        let records = st.keys("uc/.ubunye/lineage/demo/sales/ingest/");
        let mine: Vec<String> =
            records.iter().filter_map(|r| st.text(r)).filter(|t| t.contains(&format!("lake/{dt}"))).collect();
        assert_eq!(mine.len(), 1, "{step}: {records:?}");
        assert!(mine[0].contains("\"status\": \"error\"") && mine[0].contains("StoreFailed"), "{step}: {}", mine[0]);
        let (code, err) = output(st.ubunye().args(exec_args(&uc, &dt, WRITE)));
        assert_eq!((code, st.keys(&format!("lake/{dt}/")).len()), (0, 3), "{step}: the next run: {err}");
    }

    // Not back within the run's wait (3 s): said, then taken back by the
    // next run once the store answers and the lease is past its lifetime.
    let mut run = stopped_at(&st, "completed", "c9", "3s");
    st.server.crash();
    let (code, err) = continue_and_wait(&mut run, "unreachable");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("up to 3 object(s) of this run under s3://ubunye-test/lake/c9/ may be visible")
            && err.contains("once this run's lease is 3s old"),
        "{err}"
    );
    st.server.restart();
    std::thread::sleep(Duration::from_millis(3500));
    let (code, err) = output(st.ubunye().args(exec_args(&uc, "c9", WRITE)));
    assert_eq!(code, 0, "the next run: {err}");
    assert!(err.contains("died before it finished; took over its lease"), "{err}");
    let keys = st.keys("lake/c9/");
    assert_eq!(keys.len(), 3, "only the next run's files: {keys:?}");
    assert!(st.s3.open_uploads("lake/").unwrap().is_empty());
}

// Each server's races in a test of their own, beside its other tests:
// SeaweedFS makes a conditional write that meets another wait a whole second
// (a lock of its own), so its 25 rounds take over a minute.
#[test]
fn seaweedfs_races() {
    let Some(st) = start(Kind::SeaweedFs, "store::seaweedfs_races") else { return };
    races(&st, 25);
}

#[test]
fn seaweedfs_runs_and_zombies() {
    runs_and_zombies(Kind::SeaweedFs, "store::seaweedfs_runs_and_zombies");
}

#[test]
fn moto_races() {
    let Some(st) = start(Kind::Moto, "store::moto_races") else { return };
    races(&st, 25);
}

#[test]
fn moto_runs_and_zombies() {
    runs_and_zombies(Kind::Moto, "store::moto_runs_and_zombies");
}

/// A run of batch `dt` that holds its lease (bounded wait: 20 s) while
/// `script` runs.
fn live_run(st: &Store, uc: &str, dt: &str, script: &str) -> Child {
    let run = st.ubunye().args(exec_args(uc, dt, script)).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while !st.keys("uc/.ubunye/leases/").iter().any(|k| !k.ends_with(".finished.json")) {
        assert!(Instant::now() < until, "the run of {dt} took no lease");
        std::thread::sleep(Duration::from_millis(50));
    }
    run
}

/// `ubunye top -d s3://...` in a real terminal (tmux) over moto: a live run
/// shows live; SIGKILLed, its lease turns dead by the store's clock (the
/// test's 3 s timeout); `t` shows the plan, `y` takes it over and the batch
/// shows interrupted, as on disk; `q`, and the terminal is as it was.
#[test]
fn moto_top_in_a_terminal() {
    use common::tmux::{Tmux, require_tmux};
    if !require_tmux("store::moto_top_in_a_terminal") {
        return;
    }
    let Some(st) = start(Kind::Moto, "store::moto_top_in_a_terminal") else { return };
    let uc = format!("s3://{BUCKET}/uc");
    let mut run = live_run(&st, &uc, "t1", "echo a > $UBUNYE_OUT_EVENTS/part-0.csv; exec sleep 600");
    let d = tempfile::tempdir().unwrap();
    let t = Tmux { socket: format!("ubunye-store-{}", std::process::id()) };
    t.run(&["new-session", "-d", "-s", "e2e", "-x", "110", "-y", "30", "sh"]);
    let env: Vec<String> = st.server.vars().into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    let (before, after) = (d.path().join("before"), d.path().join("after"));
    let line = format!(
        "stty -a > {b}; env {env} UBUNYE_TEST_TIMEOUT=3s {bin} top -d {uc} --interval 300ms; c=$?; stty -a > {a}; echo TOP-EXITED $c",
        b = before.display(),
        a = after.display(),
        env = env.join(" "),
        bin = common::bin().display(),
    );
    t.keys(&[&line, "Enter"]);
    t.wait("the live run", |p| p.contains("● live") && p.contains("demo/sales/ingest"));
    run.kill().unwrap();
    run.wait().unwrap();
    t.wait("the dead row, by the store's clock", |p| p.contains("✖ dead") && !p.contains("● live"));
    t.keys(&["t"]);
    let plan = t.wait("the plan", |p| p.contains("Go ahead?"));
    assert!(plan.contains("[ No ]") && plan.contains("mark its record"), "{plan}");
    t.keys(&["y"]);
    let done = t.wait("the outcome", |p| p.contains("starts clean."));
    assert!(done.contains("taken over") && done.contains("record marked interrupted"), "{done}");
    t.keys(&["Escape"]);
    // As on disk: no lease holds the batch now, and its run's record says
    // it was taken over.
    let pane = t.wait("the batch interrupted", |p| p.contains("◐ interrupted") && !p.contains("✖ dead"));
    assert!(pane.contains("1 interrupted"), "{pane}");
    assert!(st.s3.open_uploads("").unwrap().is_empty());
    let records = st.keys("uc/.ubunye/lineage/demo/sales/ingest/");
    assert_eq!(records.len(), 1, "{records:?}");
    let run = records[0].rsplit('/').next().unwrap().trim_end_matches(".json");
    assert_eq!(record_status(&st, run).as_deref(), Some("interrupted"));
    t.keys(&["q"]);
    t.wait("top to exit", |p| p.contains("TOP-EXITED 0"));
    assert_eq!(std::fs::read_to_string(&before).unwrap(), std::fs::read_to_string(&after).unwrap());
    assert_eq!(t.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]).trim(), "0");

    // The fleet view counts the store among other use cases, and Enter
    // opens its dashboard; q there comes back.
    let fleet_line = format!(
        "env {env} {bin} top -d {uc} -d /nonexistent-use-case --interval 300ms; echo FLEET-EXITED $?",
        env = env.join(" "),
        bin = common::bin().display(),
    );
    t.keys(&[&fleet_line, "Enter"]);
    let fleet =
        t.wait("the store's row", |p| p.contains(&uc) && p.contains("2 use cases") && p.contains(" 1 interrupted"));
    assert!(fleet.contains("1 cannot be read"), "{fleet}");
    t.keys(&["g", "Enter"]);
    t.wait("the store's dashboard", |p| p.contains(&format!("ubunye top · {uc}")) && p.contains("◐ interrupted"));
    t.keys(&["q"]);
    t.wait("back in the fleet view", |p| p.contains("2 use cases"));
    t.keys(&["q"]);
    t.wait("the fleet view to exit", |p| p.contains("FLEET-EXITED 0"));

    // Ctrl-C while a takeover runs (its settle is the default 3 s here):
    // the dashboard ends at once, the takeover, a process of its own,
    // finishes, and no lease is left that nobody holds.
    let mut run = live_run(&st, &uc, "t2", "exec sleep 600");
    run.kill().unwrap();
    run.wait().unwrap();
    t.keys(&["clear", "Enter"]);
    t.keys(&[&line.replace("TOP-EXITED", "TOP-AGAIN"), "Enter"]);
    t.wait("the dead row", |p| p.contains("✖ dead"));
    t.keys(&["t"]);
    t.wait("the plan", |p| p.contains("Go ahead?"));
    t.keys(&["y"]);
    t.wait("the takeover under way", |p| p.contains("Repairing through the engine"));
    t.keys(&["C-c"]);
    t.wait("top to exit on Ctrl-C", |p| p.contains("TOP-AGAIN 0"));
    let until = Instant::now() + Duration::from_secs(20);
    while !st.keys("uc/.ubunye/leases/").iter().all(|k| k.ends_with(".finished.json")) {
        assert!(Instant::now() < until, "a lease is left: {:?}", st.keys("uc/.ubunye/leases/"));
        std::thread::sleep(Duration::from_millis(100));
    }
}
