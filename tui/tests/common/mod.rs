//! Helpers shared by the binary's tests: the peer's fixtures with their mtimes
//! restored, the binary pinned to judge from another host, and a normalised
//! picture of a use case to compare with the peer's.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use assert_cmd::Command;

pub mod dash;
pub mod trees;
use serde_json::Value;

/// The binary under test (`UBUNYE_TEST_BIN` runs a test against another
/// build, e.g. the one before a fix, to see it fail).
pub fn bin() -> PathBuf {
    std::env::var_os("UBUNYE_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ubunye")), PathBuf::from)
}

/// An empty use case `uc` (with an `out/` folder) in a temp folder.
pub fn empty_use_case() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join("out")).unwrap();
    (d, uc)
}

pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/peer").join(name)
}

pub fn copy(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &t);
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

pub fn set_mtime(p: &Path, secs: u64) {
    let ts = rustix::fs::Timespec { tv_sec: secs as i64, tv_nsec: 0 };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        p,
        &rustix::fs::Timestamps { last_access: ts, last_modification: ts },
        rustix::fs::AtFlags::empty(),
    )
    .unwrap();
}

/// `fixtures/peer/<name>/uc` copied to a temp folder, mtimes restored.
pub fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let src = fixture_dir(name);
    let d = tempfile::tempdir().unwrap();
    let uc = d.path().join("uc");
    copy(&src.join("uc"), &uc);
    let m: Value = serde_json::from_str(&fs::read_to_string(src.join("MANIFEST.json")).unwrap()).unwrap();
    for f in m["files"].as_array().unwrap() {
        let t = UNIX_EPOCH + Duration::from_nanos(f["mtime_ns"].as_u64().unwrap());
        set_mtime(&uc.join(f["path"].as_str().unwrap()), t.duration_since(UNIX_EPOCH).unwrap().as_secs());
    }
    (d, uc)
}

/// The binary, run from beside `uc`, judging from another host (every fixture
/// lease is then judged by its age), with a short settle and no colour.
pub fn ubunye(uc: &Path) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(uc.parent().unwrap())
        .env("UBUNYE_TEST_HOST", "elsewhere|pid:[1]")
        .env("UBUNYE_TEST_SETTLE", "20ms")
        .env("NO_COLOR", "1");
    c
}

pub fn files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(rd) = fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Every file and folder under `dir`, relative, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(rd) = fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Every file's path and bytes (for "nothing changed").
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir).into_iter().map(|f| (f.clone(), fs::read(dir.join(&f)).unwrap_or_default())).collect()
}

pub fn normalize(s: &str) -> String {
    let rules = [
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>"),
        (r"\.dead-[0-9a-f]{8}", ".dead-<hex>"),
        (r"_ubunye-[0-9a-f]{12}", "_ubunye-<hex>"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)", "<time>"),
        (r"\brun [0-9a-f]{8}\b", "run <id>"),
        (r"ubunye leases (takeover|finish) \(run <id>\)", "run <id>"),
    ];
    let mut out = s.to_string();
    for (re, with) in rules {
        out = regex::Regex::new(re).unwrap().replace_all(&out, with).into_owned();
    }
    out
}

fn normalize_json(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(normalize(s)),
        Value::Array(a) => Value::Array(a.iter().map(normalize_json).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), if k == "heartbeat" || k == "pid" { Value::Null } else { normalize_json(v) }))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The state of a use case as a sorted list of (normalised path, normalised
/// content); run records only for the runs in `records` (by run id).
pub fn snapshot(uc: &Path, records: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for top in [".ubunye/leases", ".ubunye/lineage", "out"] {
        for f in files(&uc.join(top)) {
            let rel = format!("{top}/{f}");
            let path = uc.join(&rel);
            if top == ".ubunye/lineage" && !records.iter().any(|r| f.ends_with(&format!("{r}.json"))) {
                continue;
            }
            let content = if top == "out" {
                if f.ends_with("_SUCCESS") { String::new() } else { "<data>".into() }
            } else if rel.ends_with(".json") {
                let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
                serde_json::to_string(&normalize_json(&v)).unwrap()
            } else {
                normalize(&fs::read_to_string(&path).unwrap())
            };
            out.push((normalize(&rel), content));
        }
    }
    out.sort();
    out
}

/// The run ids whose records a fixture holds.
pub fn record_ids(uc: &Path) -> Vec<String> {
    files(&uc.join(".ubunye/lineage"))
        .iter()
        .map(|f| Path::new(f).file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// `ubunye ARGS` (a shell line of arguments) on a terminal `cols` wide, run
/// from `cwd` (util-linux `script` gives it the terminal); NO_COLOR and
/// CLICOLOR_FORCE unset, then `env` (a None removes); `keys` typed a second
/// in (`q` for top, `y\n` at a prompt). Its exit code and output, lines
/// without their `\r`; None, with a SKIPPED line, without `script`. Ended
/// after 20 s if it is still running.
pub fn on_a_terminal(
    cwd: &Path,
    args: &str,
    cols: u16,
    env: &[(&str, Option<&str>)],
    keys: Option<&str>,
) -> Option<(i32, String)> {
    use std::process::Stdio;
    let line = format!("stty cols {cols} rows 30; exec '{}' {args}", bin().display());
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => {
            eprintln!("SKIPPED: no `script` (util-linux) to give ubunye a terminal: {e}");
            return None;
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    if let Some(k) = keys {
        std::thread::sleep(Duration::from_millis(1000));
        use std::io::Write;
        stdin.write_all(k.as_bytes()).unwrap();
    }
    // A program that missed its key is ended, not waited for forever.
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let pid = rustix::process::Pid::from_child(&child);
    std::thread::spawn(move || {
        if watch.recv_timeout(Duration::from_secs(20)).is_err() {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    });
    let o = child.wait_with_output().unwrap();
    let _ = done.send(());
    Some((o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).replace('\r', "")))
}
