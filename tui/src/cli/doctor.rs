//! `ubunye doctor`: findings the engine leaves for people. Exit 1 when there
//! are any, 0 when clean. Nothing is changed.

use std::path::Path;

use clap::Args;

use super::LineageArg;
use super::{UseCasesArg, exit, say_err};
use ubunye::state::ScanOptions;

/// What the engine leaves for people.
///
/// Looks for stray staging folders, temp files, old takeover marks, done marks
/// without a lease, running records without a lease, paths outside the use
/// case, unreadable files and stalled runs, and says what each one is and what
/// to do about it.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 nothing found, 1 findings, 2 a -d that is not a use case.\nNothing is ever changed.\n\nA use case may be in an object store (-d s3://bucket/prefix): its findings are the same kinds, each naming the object's URL.\n\nWith several use cases (-d repeated, stores among them, or --find ROOT) each finding names its use case, and one that cannot be read is a finding of its own (kind unreadable), not the end of the look."
)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub ucs: UseCasesArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// A finding with its use case (several use cases).
#[derive(serde::Serialize)]
struct Of<'a> {
    use_case: &'a str,
    #[serde(flatten)]
    finding: &'a ubunye::doctor::Finding,
}

pub fn run(a: &DoctorArgs) -> i32 {
    let sys = crate::console::machine::sys();
    let opts = ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), task_glob: None, ..ScanOptions::default() };
    let Some(dir) = a.ucs.single() else { return many(a, &opts, &sys) };
    let look = match look(dir, &opts, &sys) {
        Ok(l) => l,
        Err((code, why)) => {
            say_err(&why);
            return code;
        }
    };
    let (root, findings, looked_at) = (look.root, look.findings, look.looked_at);
    if a.json {
        super::outln(
            &serde_json::to_string_pretty(&serde_json::json!({"use_case": root, "findings": findings}))
                .unwrap_or_default(),
        );
    } else if findings.is_empty() {
        super::outln(&format!("{}: clean ({looked_at} batch(es) looked at).", root.display()));
    } else {
        print_findings(&findings);
        super::outln(&format!("{} finding(s).", findings.len()));
    }
    if findings.is_empty() { exit::OK } else { exit::REFUSED }
}

/// Doctor's look at one use case, in a folder or a store; the exit code and
/// the line that says why not.
fn look(dir: &Path, opts: &ScanOptions, sys: &ubunye::sys::Sys) -> Result<ubunye::doctor::Look, (i32, String)> {
    let Some(url) = dir.to_str().filter(|d| ubunye::bucket::is_store_url(d)) else {
        return ubunye::doctor::look(dir, opts, sys).map_err(|e| (exit::USAGE, e.to_string()));
    };
    if opts.lineage_dir.is_some() {
        return Err((exit::USAGE, super::store::no_lineage_dir(url)));
    }
    let (uc, objects) = super::store::open_quiet(url)?;
    ubunye::doctor::store::look(&*objects, &uc, &sys.timing).map_err(super::store::failed)
}

fn print_findings(findings: &[ubunye::doctor::Finding]) {
    let width = super::table::terminal_width();
    for f in findings {
        match width {
            // Piped: the kind and path, then the detail beside them, a line
            // each (what scripts and older readers of it expect).
            None => {
                let at = match (&f.task, &f.key) {
                    (Some(t), Some(k)) => format!(" [{t} {k}]"),
                    _ => String::new(),
                };
                let text = format!("{:<18} {}{at}\n{:<18} {}", f.kind, f.path.display(), "", f.detail);
                super::outln(&crate::report::printable(text));
            }
            // On a terminal: the kind and batch, the path alone on its line
            // (never cut: it is pasted), the detail wrapped under them.
            Some(w) => {
                let at = match (&f.task, &f.key) {
                    (Some(t), Some(k)) => format!("  {t} {}", super::leases::list::short_key(k)),
                    _ => String::new(),
                };
                let mut text = format!("{}{at}\n  {}\n", f.kind, f.path.display());
                for line in wrap(&f.detail, w.saturating_sub(2).max(20)) {
                    text.push_str(&format!("  {line}\n"));
                }
                super::print::out(&crate::report::printable(text));
            }
        }
    }
}

/// `text` in lines of at most `width` columns, broken at spaces; a command
/// in backticks is never broken (it is pasted), nor is a word longer than
/// the width.
fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    // Words, a backticked span counting as one.
    let mut words: Vec<String> = Vec::new();
    let mut quoted = false;
    for part in text.split(' ') {
        match words.last_mut() {
            Some(last) if quoted => {
                last.push(' ');
                last.push_str(part);
            }
            _ => words.push(part.to_string()),
        }
        if part.matches('`').count() % 2 == 1 {
            quoted = !quoted;
        }
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in words {
        if !line.is_empty() && line.width() + 1 + word.width() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Doctor over several use cases: each looked at in turn; one that cannot
/// be read is a finding (`unreadable`) and the others are still looked at.
fn many(a: &DoctorArgs, opts: &ScanOptions, sys: &ubunye::sys::Sys) -> i32 {
    // (as shown, as JSON gives it, findings, files looked at)
    let mut all: Vec<(String, String, Vec<ubunye::doctor::Finding>, Option<usize>)> = Vec::new();
    for uc in a.ucs.resolve_counted() {
        let look = match &uc.error {
            Some(e) => Err(e.clone()),
            None => look(&uc.shown, opts, sys).map_err(|(_, why)| why),
        };
        let (findings, looked) = match look {
            Ok(l) => (l.findings, Some(l.looked_at)),
            Err(why) => (
                vec![ubunye::doctor::Finding {
                    kind: "unreadable",
                    path: uc.shown.clone(),
                    detail: format!("this use case cannot be read: {why}"),
                    task: None,
                    key: None,
                }],
                None,
            ),
        };
        all.push((uc.name(), uc.path().to_string_lossy().into_owned(), findings, looked));
    }
    let count: usize = all.iter().map(|(_, _, f, _)| f.len()).sum();
    if a.json {
        let use_cases: Vec<serde_json::Value> = all
            .iter()
            .map(|(shown, uc, f, looked)| {
                serde_json::json!({"shown": shown, "use_case": uc, "findings": f.len(), "looked_at": looked})
            })
            .collect();
        let findings: Vec<Of<'_>> =
            all.iter().flat_map(|(_, uc, fs, _)| fs.iter().map(move |f| Of { use_case: uc, finding: f })).collect();
        super::outln(
            &serde_json::to_string_pretty(&serde_json::json!({"use_cases": use_cases, "findings": findings}))
                .unwrap_or_default(),
        );
    } else {
        for (uc, _, findings, _) in all.iter().filter(|(_, _, f, _)| !f.is_empty()) {
            super::outln(&format!("== {uc}: {} finding(s)", findings.len()));
            print_findings(findings);
        }
        // Then every use case on a line, the clean ones too.
        let rows: Vec<super::table::Line> = all
            .iter()
            .map(|(uc, _, findings, looked)| super::table::Line {
                cells: vec![
                    uc.clone(),
                    if findings.is_empty() { "clean".into() } else { findings.len().to_string() },
                    looked.map(|n| n.to_string()).unwrap_or_else(|| "(cannot be read)".into()),
                ],
                colour: None,
            })
            .collect();
        let header = ["USE CASE", "FINDINGS", "BATCHES LOOKED AT"];
        // The count of batches goes before the findings are cut.
        const FIT: super::table::Fit =
            super::table::Fit { steps: &[super::table::Step::Drop("BATCHES LOOKED AT")], last_min: 17 };
        let width = super::table::terminal_width();
        super::out(&crate::console::grid::render(&header, &rows, width, &FIT, crate::console::grid::Last::Cut, 1));
        super::outln(&format!("{count} finding(s) in {} use case(s).", all.len()));
    }
    if count == 0 { exit::OK } else { exit::REFUSED }
}

#[cfg(test)]
mod tests {
    #[test]
    fn wrap_breaks_at_spaces_and_never_inside_a_command() {
        let text = "dead: process 7 gone. Repair it with `ubunye leases takeover /tmp/uc:f194d8cb` now";
        let lines = super::wrap(text, 30);
        assert_eq!(
            lines,
            ["dead: process 7 gone. Repair", "it with", "`ubunye leases takeover /tmp/uc:f194d8cb`", "now"]
        );
    }
}
