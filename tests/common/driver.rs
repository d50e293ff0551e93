//! The kill tests' driver: a test binary re-executes itself with
//! `UBUNYE_DRIVER_ARGS` set and runs [`run`], which drives the engine as a run of
//! the fixture's ingest task would (acquire, finished check, append N files
//! through a staging folder or per-file claims, commit) and kills itself with
//! SIGKILL at a chosen step. Re-executing the test binary keeps the driver the
//! same build as the test.
//!
//! args: <usecase_dir> <dt> [--rerun] [--files N] [--partitioned] [--per-file]
//!       [--fail] [--kill STEP[:N]]
//! Each file holds "<dt>:<i>\n". Prints one JSON line; exit 0 done, 1 refused,
//! 3 failed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ubunye::append::StagedAppend;
use ubunye::layout::TaskPath;
use ubunye::sys::{Hook, Step};
use ubunye::vars::cli_variables;
use ubunye::{LeaseSpec, RunLease, Sys};

fn step_named(s: &str) -> Option<Step> {
    let v = serde_json::Value::String(s.to_string());
    [
        Step::LeaseTempWritten,
        Step::Created,
        Step::DeadRenamed,
        Step::TakeoverCreated,
        Step::Settled,
        Step::Tombstoned,
        Step::FileRemoved,
        Step::RecordMarked,
        Step::Recovered,
        Step::Saved,
        Step::Moved,
        Step::DoneMarked,
        Step::CommittedSaved,
        Step::Noted,
        Step::OutputsCleared,
        Step::Released,
    ]
    .into_iter()
    .find(|st| serde_json::to_value(st).ok() == Some(v.clone()))
}

/// If this process was started as a driver, run it (never returns); else return.
pub fn run_if_asked() {
    let Ok(json) = std::env::var("UBUNYE_DRIVER_ARGS") else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&json).expect("UBUNYE_DRIVER_ARGS is a JSON list");
    run(args)
}

/// Start the current test binary as a driver with these arguments; `test_name`
/// is the driver's test as the harness names it ([`super::test_name`]).
pub fn command(test_name: &str, args: &[String]) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([test_name, "--exact", "--nocapture", "--test-threads=1", "-q"]);
    c.env("UBUNYE_DRIVER_ARGS", serde_json::to_string(args).unwrap());
    c
}

fn run(args: Vec<String>) -> ! {
    let uc = PathBuf::from(&args[0]);
    let dt = args[1].clone();
    let mut rerun = false;
    let mut n = 3usize;
    let mut partitioned = false;
    let mut per_file = false;
    let mut fail = false;
    let mut kill: Option<(Step, usize)> = None;
    let mut i = 2;
    while i < args.len() {
        match args[i].as_str() {
            "--rerun" => rerun = true,
            "--partitioned" => partitioned = true,
            "--per-file" => per_file = true,
            "--fail" => fail = true,
            "--files" => {
                i += 1;
                n = args[i].parse().expect("--files N");
            }
            "--kill" => {
                i += 1;
                let (name, nth) = args[i].split_once(':').unwrap_or((&args[i], "1"));
                kill = Some((
                    step_named(name).unwrap_or_else(|| panic!("unknown step {name}")),
                    nth.parse().expect("STEP:N"),
                ));
            }
            other => panic!("unknown argument {other}"),
        }
        i += 1;
    }
    let mut sys = Sys::from_env();
    if let Some((target, nth)) = kill {
        let seen: Arc<Mutex<HashMap<Step, usize>>> = Arc::default();
        sys.hook = Hook(Some(Arc::new(move |s: Step| {
            let mut seen = seen.lock().unwrap();
            let c = seen.entry(s).or_insert(0);
            *c += 1;
            if s == target && *c == nth {
                let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
                std::thread::sleep(std::time::Duration::from_secs(10));
            }
        })));
    }
    let task = TaskPath::parse("demo/sales/ingest").unwrap();
    let vars = cli_variables(Some(&dt), None, "DEV", &[]).unwrap();
    let spec = LeaseSpec::new(&uc, task, vars, uuid::Uuid::new_v4().to_string());
    let outcome = (|| -> ubunye::Result<serde_json::Value> {
        let (lease, acquired) = RunLease::acquire(spec, sys)?;
        if let Err(e) = lease.check_finished(&["events".to_string()], rerun) {
            lease.release();
            return Err(e);
        }
        let run = || -> ubunye::Result<()> {
            lease.writing("events", true, true)?;
            let out = uc.join("out/events");
            if per_file {
                // The peer's pandas writer: a hidden sibling staging folder (not in
                // the lease), then one claim and one rename per file.
                std::fs::create_dir_all(&out).unwrap();
                let side = uc.join("out").join(format!(".events.ubunye-{}", ubunye::fsx::hex12()));
                std::fs::create_dir_all(&side).unwrap();
                for k in 0..n {
                    let name = format!("part-{k:05}-{}.txt", lease.run_id());
                    let target = if partitioned { out.join(format!("dt={dt}")).join(&name) } else { out.join(&name) };
                    let tmp = side.join(&name);
                    std::fs::write(&tmp, format!("{dt}:{k}\n")).unwrap();
                    lease.claim("events", &target)?;
                    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                    std::fs::rename(&tmp, &target).unwrap();
                    lease.step(Step::Moved);
                    lease.landed(&target)?;
                }
                let _ = std::fs::remove_dir(&side);
                return Ok(());
            }
            let st = StagedAppend::begin(&lease, "events", &out)?;
            for k in 0..n {
                let name = format!("part-{k:05}-{}.txt", lease.run_id());
                let p =
                    if partitioned { st.staging.join(format!("dt={dt}")).join(name) } else { st.staging.join(name) };
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, format!("{dt}:{k}\n")).unwrap();
            }
            st.land(&lease)?;
            lease.written("events")?;
            Ok(())
        };
        let result = run();
        let failed = result.is_err() || fail;
        let ended = lease.end(!failed)?;
        result?;
        Ok(serde_json::json!({"acquired": acquired, "ended": ended, "failed": fail}))
    })();
    match outcome {
        Ok(v) => {
            println!("{v}");
            std::process::exit(if fail { 3 } else { 0 });
        }
        Err(e) => {
            println!("{}", serde_json::json!({"error": e.to_string(), "kind": e.kind()}));
            std::process::exit(if e.kind().is_some() { 1 } else { 3 });
        }
    }
}
