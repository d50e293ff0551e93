//! `--help` that teaches: every subcommand's long text shows, the one-liners
//! still list in `ubunye --help`, and no example or table line of a help text
//! wraps at 80 or 100 columns.

use crate::common;
use common::bin;

fn help(args: &[&str]) -> String {
    let o = assert_cmd::Command::new(bin()).args(args).env("COLUMNS", "100").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// `exec --help` and `doctor --help` showed only the one line `ubunye --help`
/// lists (the enum variant's doc comment set `long_about` to nothing).
#[test]
fn long_help_shows_the_long_text_and_the_list_the_one_liners() {
    for (args, long) in [
        (&["exec", "--help"][..], "One live run per batch (the task and its variables"),
        (&["doctor", "--help"], "Looks for stray staging folders, temp files, old takeover marks"),
        (&["key", "--help"], "The key is what names the lease, the finished note"),
        (&["top", "--help"], "The table `leases list --all` prints once, kept up to date"),
        (&["help", "exec"], "One live run per batch (the task and its variables"),
    ] {
        let text = help(args);
        assert!(text.contains(long), "{args:?}:\n{text}");
    }
    let list = help(&["--help"]);
    for line in [
        "Run any program as a batch under a lease (claimed appends, swapped overwrites)",
        "What the engine leaves for people: stray staging, temp files, old marks...",
        "Print the batch key of a task and its variables, as the Python engine computes it",
    ] {
        assert!(list.lines().any(|l| l.trim_end().ends_with(line)), "{line}:\n{list}");
    }
    assert!(!list.contains("One live run per batch"), "{list}");
}

/// Every subcommand, at 80 and 100 columns: each indented line of its help's
/// own text (examples, `\` continuations, tables) comes out whole, as one line.
#[test]
fn help_examples_do_not_wrap_at_80_or_100_columns() {
    fn walk(c: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        for s in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            let p = format!("{path} {}", s.get_name());
            out.push((p.clone(), s.clone()));
            walk(s, &p, out);
        }
    }
    let mut all = Vec::new();
    let root = ubunye_tui::cli::command();
    all.push(("ubunye".to_string(), root.clone()));
    walk(&root, "ubunye", &mut all);
    let mut checked = 0;
    for (name, cmd) in &all {
        let source: Vec<String> = [cmd.get_long_about(), cmd.get_after_long_help(), cmd.get_after_help()]
            .into_iter()
            .flatten()
            .map(|t| t.to_string())
            .collect();
        let lines: Vec<&str> = source.iter().flat_map(|t| t.lines()).filter(|l| l.starts_with("  ")).collect();
        for width in [80, 100] {
            let text = cmd.clone().term_width(width).render_long_help().to_string();
            for line in &lines {
                assert!(line.chars().count() <= width, "{name}: longer than {width} columns: {line}");
                assert!(text.lines().any(|l| l == *line), "{name} at {width} columns cut:\n{line}\n---\n{text}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} lines checked");
}
