//! Looking never changes anything: `leases list`, `explain`,
//! `runs`, `doctor`, `takeover --dry-run`, `finish --dry-run` and `top` leave
//! every file and folder of the use case as it was, mtimes included, and say
//! the same on a read-only mount as on a writable one.
//!
//! The read-only mount is a bind mount in a mount namespace of its own
//! (`unshare -m`, as root or in a user namespace). Where that is refused the
//! read-only half says SKIPPED on stderr (CI runs as root, where it works).

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::fixture;

/// Every entry under `dir`: its path, kind, size, mtime (ns) and bytes.
fn picture(dir: &Path) -> Vec<(String, u32, u64, i128, Vec<u8>)> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<(String, u32, u64, i128, Vec<u8>)>) {
        let m = fs::symlink_metadata(d).unwrap();
        let rel = d.strip_prefix(base).unwrap().to_string_lossy().into_owned();
        let mtime = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
        let bytes = if m.is_file() { fs::read(d).unwrap_or_default() } else { Vec::new() };
        out.push((rel, m.mode(), m.len(), mtime, bytes));
        if m.is_dir() {
            let mut names: Vec<PathBuf> = fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
            names.sort();
            for n in names {
                walk(base, &n, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

/// The read-only commands, each as arguments after `ubunye`.
fn commands(uc: &Path) -> Vec<Vec<String>> {
    let list = common::ubunye(uc).args(["leases", "list", "-d", "uc", "--all", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let mut out: Vec<Vec<&str>> = vec![
        vec!["leases", "list", "-d", "uc"],
        vec!["leases", "list", "-d", "uc", "--all", "--json"],
        vec!["runs", "-d", "uc"],
        vec!["runs", "-d", "uc", "--json"],
        vec!["doctor", "-d", "uc"],
        vec!["doctor", "-d", "uc", "--json"],
    ];
    let keys: Vec<String> = v["batches"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["key"].as_str())
        .filter(|k| !k.starts_with('?'))
        .map(str::to_string)
        .collect();
    let mut owned: Vec<Vec<String>> = out.drain(..).map(|c| c.iter().map(|s| s.to_string()).collect()).collect();
    for k in keys {
        for args in [
            vec!["leases", "explain", &k, "-d", "uc"],
            vec!["leases", "explain", &k, "-d", "uc", "--json"],
            vec!["leases", "takeover", &k, "-d", "uc", "--dry-run"],
            vec!["leases", "finish", &k, "-d", "uc", "--dry-run"],
        ] {
            owned.push(args.iter().map(|s| s.to_string()).collect());
        }
    }
    owned
}

/// Run each command; what each printed and its exit code.
fn run_all(uc: &Path, cmds: &[Vec<String>]) -> Vec<(String, Option<i32>)> {
    cmds.iter()
        .map(|c| {
            let o = common::ubunye(uc).args(c).output().unwrap();
            (format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)), o.status.code())
        })
        .collect()
}

/// `ubunye top` for a moment in a real terminal (tmux), then `q`.
fn top_for_a_moment(uc: &Path) {
    let socket = format!("ublook{}", std::process::id());
    let tmux =
        |args: &[&str]| Command::new("tmux").args(["-L", &socket, "-f", "/dev/null"]).args(args).output().unwrap();
    let cmd = format!("{} top -d {}", common::bin().display(), uc.display());
    let o = tmux(&["new-session", "-d", "-s", "look", "-x", "100", "-y", "30", &cmd]);
    assert!(o.status.success(), "tmux: {}", String::from_utf8_lossy(&o.stderr));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pane = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "look"]).stdout).into_owned();
    tmux(&["send-keys", "-t", "look", "q"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux(&["kill-server"]);
    assert!(pane.contains("ubunye top"), "top did not draw:\n{pane}");
}

#[test]
fn inspection_leaves_the_use_case_as_it_was() {
    for name in ["dead-killed", "orphan", "rerun-pending", "kept", "takeover-refused-in-use", "dead-spark-staged"] {
        let (_d, uc, _) = fixture(name);
        let before = picture(&uc);
        let cmds = commands(&uc);
        let said = run_all(&uc, &cmds);
        assert!(said.iter().all(|(_, code)| code.is_some()), "{name}: a command was killed");
        if matches!(name, "dead-killed" | "orphan" | "rerun-pending") {
            top_for_a_moment(&uc);
        }
        assert!(before == picture(&uc), "{name}: looking changed the use case");
        assert!(!said.iter().any(|(t, _)| t.contains("panicked")), "{name}: {said:?}");
    }
}

/// On a read-only bind mount of the same folder, each command says what it
/// says on the writable folder (same words, same exit code).
#[test]
fn a_read_only_mount_changes_nothing_of_what_is_said() {
    let (_d, uc, _) = fixture("rerun-pending");
    let cmds = commands(&uc);
    let writable = run_all(&uc, &cmds);
    // One shell in a private mount namespace: the folder bound read-only
    // over itself, every command run there, each output to a file outside.
    let outdir = tempfile::tempdir().unwrap();
    let mut script = format!(
        "set -e; mount --bind '{u}' '{u}'; mount -o remount,bind,ro '{u}'; touch '{u}/probe' 2>/dev/null && exit 3; set +e; cd '{p}'\n",
        u = uc.display(),
        p = uc.parent().unwrap().display()
    );
    for (i, c) in cmds.iter().enumerate() {
        let args: Vec<String> = c.iter().map(|a| format!("'{a}'")).collect();
        script.push_str(&format!(
            "'{}' {} > '{o}/{i}.out' 2>&1; echo $? > '{o}/{i}.code'\n",
            common::bin().display(),
            args.join(" "),
            o = outdir.path().display()
        ));
    }
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("UBUNYE_TEST_HOST", "elsewhere|pid:[1]")
        .env("UBUNYE_TEST_SETTLE", "20ms")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    if !o.status.success() {
        let why = String::from_utf8_lossy(&o.stderr);
        if std::env::var("CI").is_ok_and(|v| v == "true") || o.status.code() == Some(3) {
            panic!("the read-only mount could not be made ({:?}): {why}", o.status.code());
        }
        eprintln!("SKIPPED: a read-only bind mount needs root or a user namespace here: {why}");
        return;
    }
    // Ages, and the listing's "now", move on between the two runs.
    let ages = regex::Regex::new(r#"\d+(\.\d+)?(s|m|h)\b|\d+\.\d+|"now": "[^"]*""#).unwrap();
    let calm = |s: &str| ages.replace_all(s, "<n>").into_owned();
    for (i, (text, code)) in writable.iter().enumerate() {
        let ro = fs::read_to_string(outdir.path().join(format!("{i}.out"))).unwrap();
        let ro_code: i32 = fs::read_to_string(outdir.path().join(format!("{i}.code"))).unwrap().trim().parse().unwrap();
        assert_eq!(calm(&ro), calm(text), "{:?} says something else on a read-only mount", cmds[i]);
        assert_eq!(Some(ro_code), *code, "{:?} exits otherwise on a read-only mount", cmds[i]);
    }
}
