//! Unreadable is never absent: every kind of file the state model
//! reads (lease, dead run's lease, finished note, run record, done and
//! takeover marks) damaged every way (cut off, not JSON, not UTF-8, no read
//! permission for the user looking), and every surface names it: `leases
//! list`, `leases explain`, `runs` (records), `doctor`, the dashboard and
//! the repair check, which either refuses naming it or shows a plan that
//! names it: no repair goes ahead past it in silence.
//!
//! Marks are read by name and mtime only: damaging their content changes no
//! verdict, which is asserted, and they are still named in the history.
//!
//! "No read permission" needs a user the file is closed to: as root, the
//! commands run as `nobody` (uid 65534); otherwise as this user.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use common::TASK;
use common::dash::{LATER, app, fixture, read_all, settle};
use common::{ELSEWHERE, fake_sys};

const DEAD: &str = "7d106ca76674f2a1";
const FINISHED: &str = "39bc42311894ddba";
const DEAD_RUN: &str = "a7ee7676-3983-4c1b-8fff-47937b7a2497";
const FINISHED_RUN: &str = "b3e1fa02-bd26-47f1-890a-8704893f379c";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Damage {
    CutOff,
    NotJson,
    NotUtf8,
    NoPermission,
}

fn root_user() -> bool {
    rustix::process::geteuid().is_root()
}

/// The binary as the user who looks: `nobody` when the tests run as root.
fn look(uc: &Path, args: &[&str]) -> (String, Option<i32>) {
    let mut c = std::process::Command::new(common::bin());
    c.current_dir(uc.parent().unwrap())
        .args(args)
        .env("UBUNYE_TEST_HOST", "elsewhere|pid:[1]")
        .env("NO_COLOR", "1")
        .env("HOME", "/");
    if root_user() {
        c.uid(65534).gid(65534);
    }
    let o = c.output().unwrap();
    (format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)), o.status.code())
}

/// Open the whole temp tree to others (a temp folder is 0700), as a shared
/// use case is.
fn open_to_all(dir: &Path) {
    let mut d = dir.to_path_buf();
    loop {
        if d.starts_with(std::env::temp_dir()) && d != std::env::temp_dir() {
            let _ = fs::set_permissions(&d, fs::Permissions::from_mode(0o755));
        }
        if !d.pop() {
            break;
        }
    }
    for e in walk(dir) {
        let m = fs::symlink_metadata(&e).unwrap();
        let mode = if m.is_dir() { 0o755 } else { 0o644 };
        let _ = fs::set_permissions(&e, fs::Permissions::from_mode(mode));
    }
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// Damage a file, keeping its mtime (a file cut off by a crash is as old as
/// the crash).
fn damage(path: &Path, how: Damage) {
    let good = fs::read(path).unwrap();
    let mtime = fs::metadata(path).unwrap().modified().unwrap();
    let _keep = Mtime(path.to_path_buf(), mtime);
    match how {
        Damage::CutOff => fs::write(path, &good[..good.len() / 2]).unwrap(),
        Damage::NotJson => fs::write(path, b"{\"run_id\": not json").unwrap(),
        Damage::NotUtf8 => fs::write(path, b"{\"run_id\": \"\xff\xfe\"}").unwrap(),
        Damage::NoPermission => fs::set_permissions(path, fs::Permissions::from_mode(0o000)).unwrap(),
    }
}

/// The fixture `dead-killed` with an orphan and both kinds of mark added:
/// every kind of file, and where each is.
fn use_case() -> (tempfile::TempDir, PathBuf, std::time::SystemTime, Vec<(&'static str, PathBuf, &'static str)>) {
    let (d, uc, captured) = fixture("dead-killed");
    let leases = uc.join(".ubunye/leases").join(TASK);
    let records = uc.join(".ubunye/lineage").join(TASK);
    let lease = leases.join(format!("{DEAD}.json"));
    let orphan = leases.join(format!("{DEAD}.dead-0badc0de.json"));
    let text = fs::read_to_string(&lease).unwrap().replace(DEAD_RUN, "0badc0de-0000-4000-8000-000000000001");
    fs::write(&orphan, text).unwrap();
    let done = leases.join(format!("{FINISHED}.done-{FINISHED_RUN}"));
    fs::write(&done, b"2026-11-29T10:33:09Z").unwrap();
    let taken = leases.join(format!("{DEAD}.taken-0badc0de-0000-4000-8000-000000000002"));
    fs::write(&taken, b"2026-11-29T10:33:09Z").unwrap();
    let files = vec![
        ("lease", lease, DEAD),
        ("orphan", orphan, DEAD),
        ("note", leases.join(format!("{FINISHED}.finished.json")), FINISHED),
        ("record", records.join(format!("{DEAD_RUN}.json")), DEAD),
        ("done mark", done, FINISHED),
        ("takeover mark", taken, DEAD),
    ];
    (d, uc, captured, files)
}

/// Puts a file's mtime back when dropped.
struct Mtime(PathBuf, std::time::SystemTime);

impl Drop for Mtime {
    fn drop(&mut self) {
        let _ = common::try_set_mtime(&self.0, self.1);
    }
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// The dashboard's detail pane for the batch, as the user who looks sees it.
fn dashboard_says(uc: &Path, captured: std::time::SystemTime, key: &str, how: Damage) -> Option<String> {
    if how == Damage::NoPermission && root_user() {
        // In-process, root reads everything: the binary's `top` as nobody.
        return Some(top_as_the_looker(uc, key));
    }
    let (sys, _, _) = fake_sys(ELSEWHERE, captured + LATER);
    let mut a = app(uc, sys);
    let events = read_all(&a);
    let effects = a.handle_all(events);
    settle(&mut a, effects);
    let id = (TASK.to_string(), key.to_string());
    let b = a.model.whole(&id).ok().flatten()?;
    let e = ubunye::explain::explain(&a.model.scan, b);
    Some(ubunye_tui::report::explanation(&e, None))
}

fn top_as_the_looker(uc: &Path, key: &str) -> String {
    let socket = format!("ubdmg{}", std::process::id());
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux").args(["-L", &socket, "-f", "/dev/null"]).args(args).output().unwrap()
    };
    let cmd = format!(
        "setpriv --reuid=65534 --regid=65534 --clear-groups env UBUNYE_TEST_HOST='elsewhere|pid:[1]' HOME=/ {} top -d {}",
        common::bin().display(),
        uc.display()
    );
    assert!(tmux(&["new-session", "-d", "-s", "d", "-x", "200", "-y", "50", &cmd]).status.success());
    std::thread::sleep(std::time::Duration::from_millis(1200));
    // Select the batch: filter by its key, then the first row is it.
    tmux(&["send-keys", "-t", "d", "/", &key[..8], "Enter"]);
    std::thread::sleep(std::time::Duration::from_millis(600));
    let pane = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "d"]).stdout).into_owned();
    tmux(&["kill-server"]);
    pane
}

/// What every surface says of the batch `key`.
struct Said {
    list_row: String,
    list_code: Option<i32>,
    explain: String,
    runs: String,
    doctor: String,
    dry: String,
    dry_code: Option<i32>,
    dashboard: Option<String>,
    state: String,
}

fn everything(uc: &Path, captured: std::time::SystemTime, key: &str, how: Damage) -> Said {
    let (list, list_code) = look(uc, &["leases", "list", "-d", "uc", "--all", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&list).unwrap_or_else(|e| panic!("{e}: {list}"));
    let row = v["batches"].as_array().unwrap().iter().find(|b| b["key"] == key).cloned().unwrap();
    let (dry, dry_code) = look(uc, &["leases", "takeover", key, "-d", "uc", "--dry-run"]);
    Said {
        list_row: row.to_string() + &v["problems"].to_string(),
        list_code,
        explain: look(uc, &["leases", "explain", key, "-d", "uc"]).0,
        runs: look(uc, &["runs", "-d", "uc"]).0,
        doctor: look(uc, &["doctor", "-d", "uc", "--json"]).0,
        dry,
        dry_code,
        dashboard: dashboard_says(uc, captured, key, how),
        state: row["state"].as_str().unwrap().to_string(),
    }
}

#[test]
fn every_kind_of_damaged_file_is_named_on_every_surface() {
    let ages = regex::Regex::new(r"\d+(\.\d+)?(s|m|h)\b|\d+\.\d+").unwrap();
    for how in [Damage::CutOff, Damage::NotJson, Damage::NotUtf8, Damage::NoPermission] {
        for i in 0..6 {
            let (_d, uc, captured, files) = use_case();
            let (kind, path, key) = files[i].clone();
            let what = format!("{kind} {how:?}");
            open_to_all(uc.parent().unwrap());
            let before = everything(&uc, captured, key, Damage::CutOff);
            damage(&path, how);
            let after = everything(&uc, captured, key, how);
            assert_eq!(after.list_code, Some(0), "{what}");
            if kind.ends_with("mark") {
                // Read by name and mtime only: its content changes nothing
                // (but the ages, which move on between two looks).
                let calm = |s: &str| ages.replace_all(s, "<n>").into_owned();
                assert_eq!(calm(&after.list_row), calm(&before.list_row), "{what}: list");
                assert_eq!(calm(&after.explain), calm(&before.explain), "{what}: explain");
                assert_eq!(calm(&after.dry), calm(&before.dry), "{what}: the repair check");
                continue;
            }
            let file = name_of(&path);
            assert!(after.list_row.contains(&file), "{what}: list does not name {file}: {}", after.list_row);
            assert!(after.explain.contains(&file), "{what}: explain does not name {file}:\n{}", after.explain);
            assert!(after.doctor.contains(&file), "{what}: doctor does not name {file}: {}", after.doctor);
            if kind == "record" {
                assert!(after.runs.contains(&file), "{what}: runs does not name {file}:\n{}", after.runs);
            }
            assert!(after.dry.contains(&file), "{what}: the repair check does not name {file}:\n{}", after.dry);
            let blocked = after.state == "unreadable";
            assert_eq!(after.dry_code, Some(if blocked { 1 } else { 0 }), "{what}: {}", after.dry);
            let unreadable = matches!(how, Damage::NotUtf8 | Damage::NoPermission) || kind == "note";
            assert_eq!(blocked, unreadable, "{what}: only a file that cannot be read at all (or a note) stops repairs");
            let pane = after.dashboard.unwrap_or_default();
            assert!(pane.contains(&file), "{what}: the dashboard does not name {file}:\n{pane}");
            let _ = fs::set_permissions(&path, fs::Permissions::from_mode(0o644));
        }
    }
}
