//! `ubunye doctor`: findings the engine leaves for people. Exit 1 when there
//! are any, 0 when clean. Nothing is changed.

use clap::Args;

use super::LineageArg;
use super::{DirArg, exit, say_err};
use ubunye::state::ScanOptions;

/// What the engine leaves for people.
///
/// Looks for stray staging folders, temp files, old takeover marks, done marks
/// without a lease, running records without a lease, paths outside the use
/// case, unreadable files and stalled runs, and says what each one is and what
/// to do about it.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 nothing found, 1 findings, 2 a -d that is not a use case.\nNothing is ever changed."
)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &DoctorArgs) -> i32 {
    let sys = crate::console::machine::sys();
    let opts = ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), task_glob: None, ..ScanOptions::default() };
    let look = match ubunye::doctor::look(&a.dir.dir, &opts, &sys) {
        Ok(l) => l,
        Err(e) => {
            say_err(&e.to_string());
            return exit::USAGE;
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
        for f in &findings {
            let at = match (&f.task, &f.key) {
                (Some(t), Some(k)) => format!(" [{t} {k}]"),
                _ => String::new(),
            };
            super::outln(&format!("{:<18} {}{at}\n{:<18} {}", f.kind, f.path.display(), "", f.detail));
        }
        super::outln(&format!("{} finding(s).", findings.len()));
    }
    if findings.is_empty() { exit::OK } else { exit::REFUSED }
}
