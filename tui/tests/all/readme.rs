//! Every command README.md shows, run as a reader would run it, each held to
//! the exit code the README and the exit-code table document. The commands
//! are read from README.md itself, so the README cannot drift from the
//! binary: a new command there fails here until it has its expectation.
//!
//! * ```` ```sh ```` blocks: each line (with its `\` continuations) is a
//!   command, run by bash from beside the demo's sandbox `uc` (built by
//!   `ubunye demo --no-top --dir uc`, as the README says), those marked so on
//!   a terminal (a prompt answered, `top` quit);
//! * ```` ```console ```` blocks: a session in a fresh folder, `$ ` lines run
//!   in one bash in order, and what each prints compared with the README's
//!   lines (run ids, times and the version normalised);
//! * ```` ```text ```` blocks are pictures, not commands.

use std::path::Path;
use std::process::Command;

use crate::common;
use common::bin;

/// How a README command is run, and what it must end with.
struct Expect {
    /// The command as the README writes it (comment and spaces trimmed).
    command: &'static str,
    how: How,
    /// The exit codes the docs allow, and why.
    codes: &'static [i32],
    why: &'static str,
}

enum How {
    Shell,
    /// On a terminal, these keys typed.
    Terminal(&'static str),
    /// Run as this instead.
    As(&'static str),
    /// Not run here, and why.
    Not(&'static str),
}

const EXPECT: &[Expect] = &[
    Expect {
        command: "cargo install --path tui",
        how: How::Not("installs into ~/.cargo; the tests run the built binary"),
        codes: &[],
        why: "",
    },
    Expect { command: "ubunye completions bash > ubunye.bash", how: How::Shell, codes: &[0], why: "prints the script" },
    Expect { command: "ubunye man > ubunye.1", how: How::Shell, codes: &[0], why: "prints the page" },
    Expect {
        command: "alias ubunye-py=~/venvs/ubunye/bin/ubunye",
        how: How::Shell,
        codes: &[0],
        why: "an alias is made",
    },
    Expect {
        command: "cargo run --release -- demo",
        how: How::As("ubunye demo --no-top --dir another"),
        codes: &[0],
        why: "the demo, without the dashboard (this test has no terminal to quit it in)",
    },
    Expect { command: "scripts/test", how: How::Not("it is the test suite itself"), codes: &[], why: "" },
    Expect { command: "ubunye leases list -d uc", how: How::Shell, codes: &[0], why: "a listing" },
    Expect {
        command: "ubunye leases explain f194d8cb -d uc",
        how: How::Shell,
        codes: &[0],
        why: "the dead batch's report",
    },
    Expect {
        command: "ubunye leases takeover f194d8cb -d uc",
        how: How::Terminal("y\n"),
        codes: &[0],
        why: "the dead batch, taken over once it is confirmed",
    },
    Expect {
        command: "ubunye leases finish bc4afddd -d uc",
        how: How::Terminal("y\n"),
        codes: &[0],
        why: "the pending batch, finished once it is confirmed",
    },
    Expect {
        command: "ubunye runs -d uc --status interrupted --since 1d",
        how: How::Shell,
        codes: &[0],
        why: "records",
    },
    Expect {
        command: "ubunye leases takeover -d uc --state dead --task 'demo/*' --dry-run",
        how: How::Shell,
        codes: &[0],
        why: "the plan for every dead batch, nothing changed",
    },
    Expect {
        command: "ubunye leases history -d uc --task demo/sales/ingest",
        how: How::Shell,
        codes: &[0],
        why: "the task's days",
    },
    Expect {
        command: "ubunye leases list -d uc --all --dt 2025-01-01..2025-01-07 --var mode=DEV",
        how: How::Shell,
        codes: &[0],
        why: "a week of one mode",
    },
    Expect {
        command: "ubunye runs show 9ecd09db -d uc",
        how: How::Shell,
        codes: &[2],
        why: "the README's run id is its own example's: this sandbox has other runs, so it names none",
    },
    Expect {
        command: "ubunye leases list -d uc --state dead,stalled,kept,unreadable,damaged",
        how: How::Shell,
        codes: &[0],
        why: "the page's first look",
    },
    Expect {
        command: "ubunye leases takeover /tmp/uc:f194d8cb",
        how: How::Not(
            "the page's line as explain prints it for a sandbox in /tmp/uc; `ubunye leases takeover f194d8cb -d uc` runs above",
        ),
        codes: &[],
        why: "",
    },
    Expect { command: "ubunye runs -d uc --status failed", how: How::Shell, codes: &[0], why: "the failed runs" },
    Expect { command: "ubunye doctor -d uc", how: How::Shell, codes: &[0, 1], why: "0 nothing found, 1 findings" },
    Expect { command: "ubunye top -d uc", how: How::Terminal("q"), codes: &[0], why: "the dashboard, quit with q" },
    Expect {
        command: "ubunye leases list -d uc --state dead,stalled,kept,unreadable,damaged --fail-if-any",
        how: How::Shell,
        codes: &[0, 1],
        why: "1 with the rows when a batch needs someone, 0 when none",
    },
    Expect {
        command: "ubunye leases list -d uc -d another --state dead,kept",
        how: How::Shell,
        codes: &[0],
        why: "two use cases in one listing",
    },
    Expect {
        command: "ubunye leases explain uc:f194d8cb",
        how: How::Shell,
        codes: &[0],
        why: "the dead batch, by <usecase>:<key>",
    },
    Expect { command: "ubunye metrics -d uc -d another", how: How::Shell, codes: &[0], why: "the metrics of both" },
    Expect {
        command: "ubunye killtest --example",
        how: How::Shell,
        codes: &[0],
        why: "the job under ubunye exec passes",
    },
    Expect {
        command: "ubunye killtest --kills 20 -- -d uc -u demo -p sales -t ingest -dt 2025-01-01 --append events=out/events -- ./ingest.sh",
        how: How::Not("the README's ingest.sh is the reader's own job"),
        codes: &[],
        why: "",
    },
    Expect {
        command: "ubunye exec -d uc -u demo -p sales -t ingest -dt 2025-01-01 --append events=out/events -- ./ingest.sh",
        how: How::Shell,
        codes: &[1],
        why: "the demo finished this batch: a run of it is refused, as the README says of a second run",
    },
];

/// A fenced block of README.md: its tag and its lines.
fn blocks(readme: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in readme.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(tag)) => open = Some((tag.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "README.md has a fence that is not closed");
    out
}

/// The commands of a block: continuation lines joined.
fn commands(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in lines {
        let l = l.trim();
        if let Some(head) = l.strip_suffix('\\') {
            cur.push_str(head.trim_end());
            cur.push(' ');
        } else {
            cur.push_str(l);
            if !cur.trim().is_empty() {
                out.push(std::mem::take(&mut cur).trim().to_string());
            }
            cur.clear();
        }
    }
    out
}

/// A command as the table names it: no comment, single spaces.
fn bare(command: &str) -> String {
    let code = command.split(" # ").next().unwrap_or(command);
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn normalize(text: &str) -> String {
    common::rewrite(
        text.trim_end(),
        &[
            (r"\brun [0-9a-f]{8}\b", "run <id>"),
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>"),
            (r"ubunye-rs \d+\.\d+\.\d+", "ubunye-rs <version>"),
        ],
    )
}

/// `bash -c` with `ubunye` meaning the binary under test.
fn bash(cwd: &Path, script: &str) -> std::process::Output {
    let script = format!("ubunye() {{ \"$UBUNYE_BIN\" \"$@\"; }}\nexport -f ubunye\n{script}");
    Command::new("bash")
        .args(["-c", &script])
        .current_dir(cwd)
        .env("UBUNYE_BIN", bin())
        .env("UBUNYE_TEST_SETTLE", "20ms")
        .env("NO_COLOR", "1")
        .env_remove("UBUNYE_TEST_HOST")
        .output()
        .unwrap()
}

#[test]
fn every_command_the_readme_shows_exits_as_documented() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(bin()).args(["demo", "--no-top", "--dir"]).arg(d.path().join("uc")).output().unwrap();
    assert!(o.status.success(), "the sandbox: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(
        d.path().join("ingest.sh"),
        "#!/bin/sh\necho order,1 > \"$UBUNYE_OUT_EVENTS/part-$UBUNYE_RUN_ID.csv\"\n",
    )
    .unwrap();
    std::fs::set_permissions(d.path().join("ingest.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut seen = Vec::new();
    let mut sessions = 0;
    for (tag, lines) in blocks(&readme) {
        match tag.as_str() {
            "text" => continue,
            "console" => {
                console(&lines);
                sessions += 1;
                continue;
            }
            "sh" => {}
            other => panic!("README.md has a ```{other} block: tag it sh (commands), console ($ sessions) or text"),
        }
        for command in commands(&lines) {
            let name = bare(&command);
            let e = EXPECT.iter().find(|e| e.command == name).unwrap_or_else(|| {
                panic!("README.md shows `{name}`: give it its expected exit code in this test's EXPECT")
            });
            seen.push(e.command);
            let mut said = String::new();
            let code = match &e.how {
                How::Not(why) => {
                    eprintln!("not run: {name} ({why})");
                    continue;
                }
                How::Shell | How::As(_) => {
                    let run = if let How::As(instead) = &e.how { *instead } else { command.as_str() };
                    let o = bash(d.path(), run);
                    said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
                    o.status.code()
                }
                How::Terminal(keys) => {
                    let args = name.strip_prefix("ubunye ").unwrap();
                    let env = [("UBUNYE_TEST_SETTLE", Some("20ms")), ("UBUNYE_TEST_HOST", None)];
                    match common::on_a_terminal(d.path(), args, 120, &env, Some(keys)) {
                        Some((code, _)) => Some(code),
                        None => continue,
                    }
                }
            };
            let code = code.unwrap_or(-1);
            assert!(
                e.codes.contains(&code),
                "`{name}` ended with {code}; the docs say {:?}: {}\nit said:\n{said}",
                e.codes,
                e.why
            );
        }
    }
    let stale: Vec<&str> = EXPECT.iter().map(|e| e.command).filter(|c| !seen.contains(c)).collect();
    assert!(stale.is_empty(), "expected commands README.md no longer shows: {stale:?}");
    assert!(sessions >= 3, "the console sessions were not found ({sessions})");
    // The repairs it showed were done: no dead and no pending batch left.
    let o = Command::new(bin()).args(["leases", "list", "--json", "-d"]).arg(d.path().join("uc")).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for b in v["batches"].as_array().unwrap() {
        assert!(b["state"] != "dead" && b["state"] != "pending", "{b}");
    }
}

/// A `$ ` session in a fresh folder: each command's output is the README's.
fn console(lines: &[String]) {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let mut cont = false;
    for l in lines {
        if let Some(cmd) = l.strip_prefix("$ ") {
            steps.push((cmd.to_string(), Vec::new()));
        } else if let Some(last) = steps.last_mut().filter(|_| cont) {
            last.0.push('\n');
            last.0.push_str(l);
        } else if let Some(last) = steps.last_mut() {
            last.1.push(l.clone());
        } else {
            panic!("a console block must start with a `$ ` command: {l}");
        }
        cont = l.trim_end().ends_with('\\');
    }
    let mut script = String::new();
    for (i, (cmd, _)) in steps.iter().enumerate() {
        script.push_str(&format!("echo '@@ {i}'\n{{ {cmd}\n}} 2>&1\necho \"@@ rc $?\"\n"));
    }
    let d = tempfile::tempdir().unwrap();
    let o = bash(d.path(), &script);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut parts = text.split("@@ ").skip(1);
    for (i, (cmd, want)) in steps.iter().enumerate() {
        let head = parts.next().unwrap_or_else(|| panic!("`{cmd}` did not run:\n{text}"));
        let got = head.strip_prefix(&format!("{i}\n")).unwrap_or(head);
        let rc = parts.next().unwrap_or_default();
        let code: i32 = rc.trim().strip_prefix("rc ").and_then(|c| c.parse().ok()).unwrap_or(-1);
        // Exit as the output says: a refusal is one `ubunye: ` line and 1.
        let refused = want.len() == 1 && want[0].starts_with("ubunye: ") && want[0].contains("already finished");
        assert_eq!(code, if refused { 1 } else { 0 }, "`{cmd}`:\n{got}");
        assert_eq!(normalize(got), normalize(&want.join("\n")), "`{cmd}` prints what README.md says");
    }
}
