//! Installing the binary and living beside the Python engine, whose package
//! installs a `ubunye` command too: `--version` says which one this is,
//! `ubunye run` (the Python engine's command) says where the other is, and
//! the completions, the man page and the licence files are there.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::common;
use common::bin;

fn ubunye() -> Command {
    Command::new(bin())
}

fn stdout(args: &[&str]) -> String {
    let o = ubunye().args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn version_names_this_implementation() {
    let want = format!("ubunye-rs {}\n", env!("CARGO_PKG_VERSION"));
    for args in [&["--version"][..], &["-V"], &["exec", "--version"], &["leases", "list", "--version"]] {
        assert_eq!(stdout(args), want, "{args:?}");
    }
}

/// `ubunye run ...` is the Python engine's command: one line, exit 2, saying
/// so and how to reach it (naming the other `ubunye` when PATH has one).
#[test]
fn run_is_answered_in_one_line_with_the_way_to_the_python_engine() {
    let d = tempfile::tempdir().unwrap();
    let peer_bin = d.path().join("venv/bin");
    std::fs::create_dir_all(&peer_bin).unwrap();
    let fake = peer_bin.join("ubunye");
    std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let own_dir = bin().parent().unwrap().to_path_buf();
    let with_peer = std::env::join_paths([own_dir.clone(), peer_bin.clone(), PathBuf::from("/usr/bin")]).unwrap();
    let alone = std::env::join_paths([own_dir, PathBuf::from("/usr/bin")]).unwrap();
    for (path, names) in [(&with_peer, Some(fake.as_path())), (&alone, None::<&Path>)] {
        for args in [
            &["run", "-d", "uc", "-u", "demo", "-p", "sales", "-t", "ingest", "-dt", "2025-01-01"][..],
            &["run", "--help"],
            &["run"],
        ] {
            let o = ubunye().args(args).env("PATH", path).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(o.stdout.is_empty(), "{args:?}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with("ubunye: `run` is the Python engine's command"), "{err}");
            match names {
                Some(p) => assert!(err.contains(&format!("{} run", p.display())), "{err}"),
                None => assert!(err.contains("<venv>/bin/ubunye run") && err.contains("alias"), "{err}"),
            }
        }
    }
}

#[test]
fn completions_are_generated_from_the_binary_s_own_definitions() {
    let bash = stdout(&["completions", "bash"]);
    let checked = std::process::Command::new("bash").args(["-n", "-c", &bash]).output().unwrap();
    assert!(checked.status.success(), "bash -n: {}", String::from_utf8_lossy(&checked.stderr));
    for word in ["leases", "explain", "takeover", "--usecase-dir", "--refused-exit", "completions"] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    assert!(!bash.contains("__group-keeper"), "hidden commands do not complete");
    assert!(stdout(&["completions", "zsh"]).starts_with("#compdef ubunye"));
    assert!(stdout(&["completions", "fish"]).contains("complete -c ubunye"));
    let o = ubunye().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_that_groff_reads_without_a_warning() {
    for (args, title) in [(&["man"][..], ".TH ubunye 1"), (&["man", "leases", "list"], ".TH ubunye-leases-list 1")] {
        let page = stdout(args);
        assert!(page.lines().any(|l| l.starts_with(title)), "{args:?}:\n{page}");
        let mut groff = std::process::Command::new("groff");
        groff.args(["-man", "-Tutf8", "-ww", "-z"]).stdin(std::process::Stdio::piped());
        groff.stderr(std::process::Stdio::piped());
        let Ok(mut g) = groff.spawn() else {
            eprintln!("SKIPPED: groff is not installed; the page is not checked by a reader");
            continue;
        };
        use std::io::Write;
        g.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
        let o = g.wait_with_output().unwrap();
        assert!(o.status.success() && o.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let page = stdout(&["man"]);
    assert!(page.contains("ubunye\\-exec(1)"), "the page lists the subcommands");
    let o = ubunye().args(["man", "nope"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no subcommand 'nope'"));
}

/// Cargo.toml says `MIT OR Apache-2.0`: each of those licences has its file.
#[test]
fn each_licence_cargo_toml_declares_has_its_text() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let toml = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = toml.lines().find(|l| l.starts_with("license = ")).unwrap();
    let spdx = line.trim_start_matches("license = ").trim_matches('"');
    for id in spdx.split(" OR ") {
        let (file, says) = match id {
            "MIT" => ("LICENSE-MIT", "Permission is hereby granted, free of charge"),
            "Apache-2.0" => ("LICENSE-APACHE", "Version 2.0, January 2004"),
            other => panic!("a licence with no file rule here: {other}"),
        };
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.contains(says), "{file}");
    }
    assert!(std::fs::read_to_string(root.join("LICENSE-MIT")).unwrap().contains("Copyright (c) the ubunye-rs authors"));
}
