//! `ubunye key`: the peer's keys from the command line, its spellings, and usage errors.

use assert_cmd::Command;

fn ubunye() -> Command {
    Command::cargo_bin("ubunye").unwrap()
}

#[test]
fn prints_the_peers_key_for_its_spellings() {
    for args in [
        &["--task", "demo/sales/ingest", "-dt", "2025-01-01"][..],
        &["--task", "demo/sales/ingest", "--dt", "2025-01-01"],
        &["--task", "demo/sales/ingest", "--data-timestamp", "2025-01-01", "-m", "DEV"],
        &["--task", "demo/sales/ingest", "--var", "dt=2025-01-01"],
        &["--task", "demo/sales/ingest", "--vars-json", r#"{"dt": "2025-01-01", "dtf": null, "mode": "DEV"}"#],
    ] {
        ubunye().arg("key").args(args).assert().success().stdout("39bc42311894ddba\n");
    }
    ubunye().args(["key", "--task", "demo/sales/ingest"]).assert().success().stdout("e28288cfb0ec7f09\n");
    ubunye()
        .args(["key", "--task", "demo/sales/ingest", "-dt", "20250101", "-dtf", "%Y%m%d"])
        .assert()
        .success()
        .stdout("ddaecb8fdc8d1aa5\n");
}

#[test]
fn json_output_has_the_hashed_text() {
    let out = ubunye().args(["key", "--task", "demo/sales/ingest", "-dt", "2025-01-01", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["key"], "39bc42311894ddba");
    assert_eq!(v["hashed"], r#"{"task": "demo/sales/ingest", "variables": {"dt": "2025-01-01", "mode": "DEV"}}"#);
    assert_eq!(v["names_a_batch"], true);
    let out = ubunye().args(["key", "--task", "demo/sales/ingest", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["names_a_batch"], false);
}

#[test]
fn bad_input_is_a_usage_error_in_one_line() {
    for (args, says) in [
        (&["--task", "demo/sales"][..], "is not a task path"),
        (&["--task", "demo/sales/ingest", "--var", "region"], "--var expects key=value"),
        (&["--task", "demo/sales/ingest", "--var", "1x=2"], "not a valid variable name"),
        (&["--task", "demo/sales/ingest", "--var", "mode=PROD"], "set mode with -m/--mode"),
        (&["--task", "demo/sales/ingest", "-dt", "a", "--var", "dt=b"], "given twice with different values"),
        (&["--task", "demo/sales/ingest", "--vars-json", "[1]"], "JSON object"),
        (&["--task", "demo/sales/ingest", "--vars-json", "{"], "not JSON"),
    ] {
        let out = ubunye().arg("key").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(out.stdout.is_empty());
    }
    // An unknown option is clap's usage error (exit 2).
    ubunye().args(["key", "--nope"]).assert().code(2);
}
