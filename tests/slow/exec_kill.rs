//! `ubunye exec`'s overwrites killed around their swap: a driver (this test
//! binary, re-executed) runs `ubunye::exec::run` and SIGKILLs itself at a
//! chosen step; the next run, whatever its command does, must find the output
//! as it was before the killed run, and leave no copy beside it.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ubunye::exec::{self, Lineage};
use ubunye::layout::TaskPath;
use ubunye::sys::{Hook, Step};
use ubunye::vars::cli_variables;

/// Not a test: the driver, when this binary re-executes itself.
/// args: <uc> <script> [<step>] ; exits 0 done, 1 refused, 3 failed.
#[test]
fn driver_entry() {
    let Ok(json) = std::env::var("UBUNYE_EXEC_DRIVER") else { return };
    let args: Vec<String> = serde_json::from_str(&json).unwrap();
    let mut sys = ubunye::Sys::from_env();
    if let Some(step) = args.get(2) {
        let target = match step.as_str() {
            "swapped" => Step::Swapped,
            "moved-aside" => Step::MovedAside,
            other => panic!("unknown step {other}"),
        };
        let seen = Arc::new(Mutex::new(0));
        sys.hook = Hook(Some(Arc::new(move |s: Step| {
            if s == target {
                *seen.lock().unwrap() += 1;
                let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
                std::thread::sleep(std::time::Duration::from_secs(10));
            }
        })));
    }
    let spec = exec::ExecSpec::check(
        Path::new(&args[0]),
        TaskPath::parse("demo/sales/summary").unwrap(),
        cli_variables(Some("2025-01-01"), None, "DEV", &[]).unwrap(),
        &[],
        &["s=out/summary".to_string()],
        false,
        false,
        Lineage::Dir(".ubunye/lineage".into()),
        vec!["sh".into(), "-c".into(), args[1].clone().into()],
    )
    .unwrap();
    let code = match exec::run(&spec, sys, &mut |_| {}) {
        Ok(exec::ExecEnd::Done { .. }) => 0,
        Ok(_) => 3,
        Err(e) => {
            eprintln!("{e}");
            1
        }
    };
    std::process::exit(code);
}

/// Run the driver; Some(exit code), or None when it was SIGKILLed.
fn drive(uc: &Path, script: &str, kill: Option<&str>, no_exchange: bool) -> Option<i32> {
    let mut args = vec![uc.display().to_string(), script.to_string()];
    args.extend(kill.map(str::to_string));
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.arg(crate::common::test_name(module_path!(), "driver_entry"))
        .args(["--exact", "--nocapture", "--test-threads=1", "-q"])
        .env("UBUNYE_EXEC_DRIVER", serde_json::to_string(&args).unwrap())
        .env("UBUNYE_TEST_SETTLE", "20ms")
        .env_remove("UBUNYE_RUN_LEASE");
    if no_exchange {
        c.env("UBUNYE_TEST_NO_EXCHANGE", "1");
    }
    let out = c.output().unwrap();
    match out.status.code() {
        Some(code) => Some(code),
        None => {
            assert_eq!(out.status.signal(), Some(9), "{}", String::from_utf8_lossy(&out.stderr));
            None
        }
    }
}

fn summary(uc: &Path) -> String {
    fs::read_to_string(uc.join("out/summary/t.csv")).unwrap_or_else(|_| "<no output>".into())
}

fn beside(uc: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(uc.join("out")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

const WRITE: &str = "echo NEW > \"$UBUNYE_OUT_S/t.csv\"";

/// Every kill point around a swap, with and without an exchange: the next run
/// (failing, or succeeding) finds the committed output, puts it back, and ends
/// with the output its own outcome says and nothing beside it.
#[test]
fn an_overwrite_killed_around_its_swap_is_put_back() {
    for (step, no_exchange) in [("swapped", false), ("moved-aside", true), ("swapped", true)] {
        for next_fails in [true, false] {
            let what = format!("killed at {step} (no exchange: {no_exchange}), next run fails: {next_fails}");
            let d = tempfile::tempdir().unwrap();
            let uc = d.path().join("uc");
            fs::create_dir_all(uc.join("out/summary")).unwrap();
            fs::write(uc.join("out/summary/t.csv"), "OLD\n").unwrap();
            assert_eq!(drive(&uc, WRITE, Some(step), no_exchange), None, "{what}: killed");
            let seen = summary(&uc);
            match step {
                "moved-aside" => assert_eq!(seen, "<no output>", "{what}"),
                _ => assert_eq!(seen, "NEW\n", "{what}: swapped before the kill"),
            }
            // Before anything is done, explain shows the put-back it plans.
            let s = ubunye::state::scan(&uc, &Default::default(), &ubunye::Sys::from_env()).unwrap();
            let b = s.batches.iter().find(|b| b.task == "demo/sales/summary").unwrap().clone();
            assert_eq!(b.state, ubunye::state::State::Dead, "{what}: {}", b.note);
            let e = ubunye::explain::explain(&s, b);
            assert_eq!(e.plans[0].restore, ["s"], "{what}");
            assert!(e.next.steps.iter().any(|s| s.contains("put output s back")), "{what}");
            let (script, want, code) = if next_fails {
                ("exit 1", "OLD\n", 3)
            } else {
                ("echo NEWER > \"$UBUNYE_OUT_S/t.csv\"", "NEWER\n", 0)
            };
            assert_eq!(drive(&uc, script, None, no_exchange), Some(code), "{what}");
            assert_eq!(summary(&uc), want, "{what}");
            assert_eq!(beside(&uc), ["summary"], "{what}: no staging or old copy left");
            let leases = uc.join(".ubunye/leases/demo/sales/summary");
            let left: Vec<_> = fs::read_dir(&leases)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with("json") && !n.ends_with(".finished.json"))
                .collect();
            assert!(left.is_empty(), "{what}: {left:?}");
        }
    }
}

/// A run that committed removes its old copy; one that was swapped and then
/// failed (its lease lost, say) is undone by its own rollback: covered by the
/// kill matrix above and `exec_runs`. Here: without an exchange, a run that
/// completes leaves no `.old` behind.
#[test]
fn without_an_exchange_a_run_leaves_no_old_copy() {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join("out/summary")).unwrap();
    fs::write(uc.join("out/summary/t.csv"), "OLD\n").unwrap();
    assert_eq!(drive(&uc, WRITE, None, true), Some(0));
    assert_eq!(summary(&uc), "NEW\n");
    assert_eq!(beside(&uc), ["summary"]);
}
