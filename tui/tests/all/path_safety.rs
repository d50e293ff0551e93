//! Canary files outside the use case survive every command, whatever a lease or
//! note names: `..`, an absolute path, a symlinked folder, a staging folder that
//! is not one, under `.ubunye/`.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use common::*;

const LEASE: &str = ".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json";

fn craft(uc: &Path, how: &str) -> std::path::PathBuf {
    let canary_dir = uc.parent().unwrap().join("outside");
    fs::create_dir_all(&canary_dir).unwrap();
    fs::write(canary_dir.join("canary"), "keep").unwrap();
    fs::write(uc.join(".ubunye/lineage/keep.json"), "{}").unwrap();
    let path = uc.join(LEASE);
    let mut doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let claims = doc["outputs"]["events"]["claimed"].as_array_mut().unwrap();
    match how {
        "dotdot" => claims.push("../outside/canary".into()),
        "deep-dotdot" => claims.push("out/../../outside/canary".into()),
        "absolute" => claims.push(canary_dir.join("canary").to_string_lossy().into()),
        "symlinked-folder" => {
            std::os::unix::fs::symlink(&canary_dir, uc.join("out/link")).unwrap();
            claims.push("out/link/canary".into());
        }
        "ubunye" => claims.push(".ubunye/lineage/keep.json".into()),
        "staging-outside" => doc["outputs"]["events"]["staging"] = "../outside".into(),
        "staging-not-one" => doc["outputs"]["events"]["staging"] = "out/events".into(),
        "replaces-outside" => {
            doc["committed"] = true.into();
            doc["replaces"] = serde_json::json!({"events": ["../outside/canary"]});
        }
        other => panic!("{other}"),
    }
    fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    set_mtime(&path, UNIX_EPOCH + Duration::from_secs(1_795_948_390));
    canary_dir.join("canary")
}

#[test]
fn canaries_survive_exec_takeover_and_finish() {
    for how in [
        "dotdot",
        "deep-dotdot",
        "absolute",
        "symlinked-folder",
        "ubunye",
        "staging-outside",
        "staging-not-one",
        "replaces-outside",
    ] {
        for command in ["takeover", "finish", "exec"] {
            let (_d, uc, _) = fixture("dead-killed");
            let canary = craft(&uc, how);
            let before = tree(&uc);
            let o = match command {
                "exec" => ubunye(&uc)
                    .args([
                        "exec",
                        "-d",
                        "uc",
                        "-u",
                        "demo",
                        "-p",
                        "sales",
                        "-t",
                        "ingest",
                        "-dt",
                        "2025-01-02",
                        "--append",
                        "events=out/events",
                        "--",
                        "true",
                    ])
                    .output()
                    .unwrap(),
                _ => ubunye(&uc).args(["leases", command, "7d10", "-d", "uc", "--yes"]).output().unwrap(),
            };
            assert_eq!(o.status.code(), Some(1), "{how} {command}: {}", String::from_utf8_lossy(&o.stderr));
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(err.trim_end().lines().count(), 1, "{how} {command}: {err}");
            assert_eq!(fs::read_to_string(&canary).unwrap(), "keep", "{how} {command}");
            assert!(uc.join(".ubunye/lineage/keep.json").exists(), "{how} {command}");
            assert_eq!(tree(&uc), before, "{how} {command}: nothing changed");
        }
    }
}

#[test]
fn a_finished_note_naming_a_path_outside_refuses_the_rerun() {
    let (_d, uc, _) = fixture("finished");
    let canary_dir = uc.parent().unwrap().join("outside");
    fs::create_dir_all(&canary_dir).unwrap();
    fs::write(canary_dir.join("canary"), "keep").unwrap();
    let note = uc.join(".ubunye/leases/demo/sales/ingest/39bc42311894ddba.finished.json");
    let text =
        fs::read_to_string(&note).unwrap().replace("\"claimed\": [", "\"claimed\": [\n        \"../outside/canary\",");
    fs::write(&note, text).unwrap();
    let before = tree(&uc);
    let o = ubunye(&uc)
        .args([
            "exec",
            "-d",
            "uc",
            "-u",
            "demo",
            "-p",
            "sales",
            "-t",
            "ingest",
            "-dt",
            "2025-01-01",
            "--rerun",
            "--append",
            "events=out/events",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("will not remove"));
    assert_eq!(fs::read_to_string(canary_dir.join("canary")).unwrap(), "keep");
    assert_eq!(tree(&uc), before);
}
