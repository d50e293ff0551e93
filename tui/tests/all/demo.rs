//! `ubunye demo --no-top`: the sandbox holds every state, made by the engine,
//! and no process the demo started outlives it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ubunye");

/// Processes that carry the demo's tag naming this sandbox (`ubunye exec`,
/// actors, and the commands they started).
fn tagged(sandbox: &Path) -> Vec<String> {
    let want = format!("UBUNYE_DEMO_SANDBOX={}", sandbox.display());
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else { continue };
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            found.push(format!("{name}: {}", String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    found
}

#[test]
fn the_demo_builds_every_state_and_leaves_no_process_behind() {
    let d = tempfile::tempdir().unwrap();
    let sandbox = d.path().join("sandbox");
    let started = Instant::now();
    let out = Command::new(BIN)
        .args(["demo", "--no-top", "--dir"])
        .arg(&sandbox)
        .env("NO_COLOR", "1")
        .env_remove("UBUNYE_TEST_HOST")
        .env_remove("UBUNYE_TEST_SETTLE")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("lacks"), "{stderr}");
    assert!(took < Duration::from_secs(20), "the demo took {took:?}");
    assert!(stdout.contains(&format!("Sandbox: {}", sandbox.display())), "{stdout}");
    // The table was printed while the two live runs ran.
    assert_eq!(stdout.lines().filter(|l| l.contains("● live")).count(), 2, "{stdout}");

    // Nothing the demo started is left: the live runs were stopped, and each
    // child has PDEATHSIG in case the demo dies first.
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = tagged(&sandbox);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < until, "processes outlived the demo: {left:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }

    let list = Command::new(BIN)
        .args(["leases", "list", "--all", "--json", "-d"])
        .arg(&sandbox)
        .env_remove("UBUNYE_TEST_HOST")
        .output()
        .unwrap();
    assert!(list.status.success());
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let states: BTreeSet<String> =
        v["batches"].as_array().unwrap().iter().map(|b| b["state"].as_str().unwrap().to_string()).collect();
    for want in ["dead", "orphan", "pending", "kept", "interrupted", "failed", "finished"] {
        assert!(states.contains(want), "no {want} batch in {states:?}");
    }
    // The live runs, stopped by the demo, are live no more.
    assert!(!states.contains("live"), "{states:?}");
    // Variables show (run records are on), and each batch has its own dt.
    let dts: Vec<&str> =
        v["batches"].as_array().unwrap().iter().filter_map(|b| b["variables"]["dt"].as_str()).collect();
    assert_eq!(dts.len(), v["batches"].as_array().unwrap().len(), "{v:#}");
    let distinct: BTreeSet<(&str, &str)> = v["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["task"].as_str().unwrap(), b["variables"]["dt"].as_str().unwrap()))
        .collect();
    assert_eq!(distinct.len(), dts.len());
}

#[test]
fn the_demo_refuses_a_folder_that_is_not_empty() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("precious.txt"), "x").unwrap();
    let out = Command::new(BIN).args(["demo", "--no-top", "--dir"]).arg(d.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a --dir that cannot be used is a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not empty"), "{err}");
}

#[test]
fn top_refuses_a_folder_that_is_not_a_use_case_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    for (dir, says) in [(d.path().to_path_buf(), "no .ubunye/ folder"), (d.path().join("nope"), "does not exist")] {
        let out = Command::new(BIN).args(["top", "-d"]).arg(&dir).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(out.stdout.is_empty(), "nothing may reach the terminal before the check");
    }
}

/// Every command the tools suggest runs as printed from another folder: the
/// demo's sandbox holds every state, and doctor, explain (text and JSON) and
/// the errors name each batch so (`<usecase>:<key>` or `-d`). A repair is
/// run with `--dry-run` added, so the sandbox stays as it is.
#[test]
fn every_suggested_command_runs_as_printed_from_another_folder() {
    let d = tempfile::tempdir().unwrap();
    let sandbox = d.path().join("sandbox");
    let out =
        Command::new(BIN).args(["demo", "--no-top", "--dir"]).arg(&sandbox).env("NO_COLOR", "1").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let elsewhere = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(BIN).args(args).current_dir(elsewhere.path()).env("NO_COLOR", "1").output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
    };
    let uc = sandbox.to_str().unwrap();
    let (_, list) = run(&["leases", "list", "--all", "--json", "-d", uc]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let keys: Vec<String> =
        list["batches"].as_array().unwrap().iter().map(|b| b["key"].as_str().unwrap().to_string()).collect();
    assert!(keys.len() >= 8, "{list}");
    let mut said = String::new();
    said += &run(&["doctor", "-d", uc]).1;
    for k in &keys {
        said += &run(&["leases", "explain", &k[..8], "-d", uc]).1;
        let (_, json) = run(&["leases", "explain", &k[..8], "-d", uc, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        if let Some(c) = v["next"]["command"].as_str() {
            said += &format!("`{c}`\n");
        }
    }
    for bad in ["f1", "ffff", "zz"] {
        said += &run(&["leases", "explain", bad, "-d", uc]).1;
    }
    let found: BTreeSet<String> = regex::Regex::new(r"`(?:kill \d+ && )?(ubunye [^`]+)`")
        .unwrap()
        .captures_iter(&said)
        .map(|c| c[1].to_string())
        .chain(said.lines().filter_map(|l| l.trim().strip_prefix("Run:").map(|c| c.trim().to_string())))
        .filter(|c| !c.contains('<'))
        .collect();
    let repairs = found.iter().filter(|c| c.contains(" takeover ") || c.contains(" finish ")).count();
    assert!(repairs >= 3 && found.iter().any(|c| c.contains(" list ")), "{found:#?}\nfrom:\n{said}");
    for cmd in &found {
        let mut words: Vec<String> = cmd.split_whitespace().skip(1).map(str::to_string).collect();
        if words.iter().any(|w| w == "takeover" || w == "finish") {
            words.push("--dry-run".into());
        }
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let (code, text) = run(&args);
        assert!(code == Some(0) || code == Some(1), "`{cmd}` from another folder: {code:?}\n{text}");
        assert!(!text.contains("not a use-case folder") && !text.contains("no batch"), "`{cmd}`: {text}");
    }
}

/// Every table fits 60, 80 and 120 columns without a wrapped line, on the
/// demo's sandbox (every state): `leases list` and `runs` of one use case
/// and of two, and doctor (whose only longer line is a path alone, never
/// cut: it is pasted).
#[test]
fn every_table_fits_60_80_and_120_columns() {
    use unicode_width::UnicodeWidthStr;
    let d = tempfile::tempdir().unwrap();
    let sandbox = d.path().join("sandbox");
    let out =
        Command::new(BIN).args(["demo", "--no-top", "--dir"]).arg(&sandbox).env("NO_COLOR", "1").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let uc = sandbox.to_str().unwrap();
    let tables: [&[&str]; 5] = [
        &["leases", "list", "--all", "-d", uc],
        &["leases", "list", "--all", "-d", uc, "-d", uc],
        &["runs", "-d", uc],
        &["runs", "-d", uc, "-d", uc],
        &["doctor", "-d", uc],
    ];
    for args in tables {
        for width in [60, 80, 120] {
            let o =
                Command::new(BIN).args(args).env("COLUMNS", width.to_string()).env("NO_COLOR", "1").output().unwrap();
            let text = String::from_utf8(o.stdout).unwrap();
            assert!(text.lines().count() > 3, "{args:?}: {text}");
            for l in text.lines() {
                let lone_path = l.trim_start().starts_with('/') && !l.trim().contains(' ');
                assert!(l.width() <= width || lone_path, "{args:?} at {width}: a line of {}:\n{l}\n{text}", l.width());
            }
            // What the tables are for stays: the state and the key.
            if args[0] == "leases" {
                assert!(text.contains("✖ dead") && text.contains("f194d8cb") || text.contains(":"), "{args:?}: {text}");
            }
        }
    }
    // doctor over two use cases ends with a table of them (one cannot be read).
    let gone = d.path().join("a-use-case-folder-that-is-not-there").to_string_lossy().into_owned();
    for width in [60, 80, 120] {
        let o = Command::new(BIN).args(["doctor", "-d", uc, "-d", &gone]).env("COLUMNS", width.to_string()).output();
        let text = String::from_utf8(o.unwrap().stdout).unwrap();
        let table: Vec<&str> = text.lines().skip_while(|l| !l.starts_with(" USE CASE")).collect();
        assert_eq!(table.len(), 4, "the header, two use cases, the count: {text}");
        assert!(table[1].contains(uc) && table[2].contains(&gone), "a use case's path is never cut: {text}");
        assert!(table.iter().all(|l| l.width() <= width), "{width}: {text}");
    }
    // explain's history, of every batch: a table whose detail wraps in its
    // column, a run id never cut.
    let o = Command::new(BIN).args(["leases", "list", "--all", "--json", "-d", uc]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let keys: Vec<String> =
        v["batches"].as_array().unwrap().iter().map(|b| b["key"].as_str().unwrap().into()).collect();
    assert!(keys.len() > 5, "{v}");
    for key in &keys {
        for width in [60, 80, 120] {
            let o = Command::new(BIN)
                .args(["leases", "explain", &key[..8], "-d", uc])
                .env("COLUMNS", width.to_string())
                .output()
                .unwrap();
            let text = String::from_utf8(o.stdout).unwrap();
            let history: Vec<&str> =
                text.lines().skip_while(|l| *l != "History").skip(1).take_while(|l| !l.is_empty()).collect();
            assert!(history.first().is_some_and(|h| h.starts_with("  WHAT  ")), "{key} at {width}:\n{text}");
            assert!(history.iter().all(|l| l.width() <= width), "{key} at {width}:\n{text}");
            for run in v["batches"].as_array().unwrap().iter().filter(|b| b["key"] == key.as_str()) {
                if let Some(r) = run["holder"]["run_id"].as_str().filter(|r| r.len() >= 8) {
                    assert!(history.iter().any(|l| l.contains(&r[..8])), "{key} at {width}: run {r}\n{text}");
                }
            }
        }
    }
}
