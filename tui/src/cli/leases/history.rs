//! `ubunye leases history`: one task's batches by date, the days with none
//! shown as gaps (`ubunye::state::days`).

use clap::Args;

use crate::cli::table::{self, glyph_colour};
use crate::cli::{DirArg, LineageArg, VarFilterArgs, exit, say_err};
use ubunye::state::days::{Day, by_date};
use ubunye::state::{self, ScanOptions};

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ubunye leases history -d uc --task demo/sales/ingest
  ubunye leases history -d uc --task demo/sales/ingest \\
    --dt 2025-01-01..2025-01-31 --var mode=PROD

A batch's date is its dt variable: a day (2025-01-04, or as its own -dtf %Y%m%d gives it). Between the first and the last day, or the ends of --dt A..B, each day with no batch is a line of its own (· no batch): a day that never ran. Failed and interrupted days carry their state's mark. Batches of every state are shown; finished ones too.")]
pub struct HistoryArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// The task (`demo/sales/ingest`), or a start or pattern that names
    /// several: each is shown on its own.
    #[arg(long, value_name = "U/P/T")]
    pub task: String,
    #[command(flatten)]
    pub filter: VarFilterArgs,
    /// One JSON object (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// One task's part of the answer.
#[derive(serde::Serialize)]
struct TaskDays {
    task: String,
    batches: usize,
    gaps: usize,
    days: Vec<Day>,
}

/// What goes first at 80 and 60 columns: the run id, then the variables
/// shrink; the note keeps at least 16 columns.
const FIT: table::Fit = table::Fit {
    steps: &[table::Step::Drop("RUN"), table::Step::Shrink("VARIABLES", 12), table::Step::Drop("VARIABLES")],
    last_min: 16,
};

pub fn run(a: &HistoryArgs, colour: bool) -> i32 {
    let sys = crate::console::machine::sys();
    let vars = match a.filter.filter() {
        Ok(f) => f,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    let (from, to) = match a.filter.dt.as_deref().map(|d| d.split_once("..")) {
        Some(Some((lo, hi))) => (Some(lo).filter(|s| !s.is_empty()), Some(hi).filter(|s| !s.is_empty())),
        _ => (None, None),
    };
    let mut tasks: Vec<TaskDays> = Vec::new();
    let mut add = |task: &str, batches: Vec<state::Batch>| {
        let kept: Vec<state::Batch> = batches.into_iter().filter(|b| vars.matches(b.variables.as_ref())).collect();
        if kept.is_empty() {
            return;
        }
        let days = by_date(&kept, from, to);
        let gaps = days.iter().filter(|d| d.batch.is_none()).count();
        tasks.push(TaskDays { task: task.to_string(), batches: days.len() - gaps, gaps, days });
    };
    let read = match a.dir.dir.to_str().filter(|d| ubunye::bucket::is_store_url(d)) {
        Some(url) => in_store(a, url, &sys, &mut add),
        None => {
            let opts = ScanOptions {
                lineage_dir: a.lineage.lineage_dir.clone(),
                task_glob: Some(a.task.clone()),
                ..ScanOptions::default()
            };
            state::scan_tasks(&a.dir.dir, &opts, &sys, add)
                .map(|h| (h.root, h.problems))
                .map_err(|e| (exit::USAGE, e.to_string()))
        }
    };
    let (root, problems) = match read {
        Ok(x) => x,
        Err((code, why)) => {
            say_err(&why);
            return code;
        }
    };
    crate::cli::say_problems(&problems);
    if a.json {
        crate::cli::print_json(&serde_json::json!({"use_case": root, "tasks": tasks, "problems": problems}));
        return exit::OK;
    }
    if tasks.is_empty() {
        let mut filters = vec![format!("--task '{}'", a.task)];
        filters.extend(vars.words());
        // It quotes the filters as typed: made printable.
        crate::cli::outln(&crate::report::printable(format!(
            "No batch with a dt matches {} in {} (a batch's date is its dt variable; `ubunye leases list --all {}` shows every batch).",
            filters.join(" "),
            root.display(),
            ubunye::suggest::dir(&root)
        )));
        return exit::OK;
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    crate::console::print::wrote_stdout();
    for (i, t) in tasks.iter().enumerate() {
        use std::io::Write;
        let first = t.days.first().map(|d| d.dt.as_str()).unwrap_or_default();
        let last = t.days.last().map(|d| d.dt.as_str()).unwrap_or_default();
        let _ = writeln!(
            out,
            "{}{} · {first} … {last} · {} batch(es), {} day(s) with none",
            if i > 0 { "\n" } else { "" },
            t.task,
            t.batches,
            t.gaps
        );
        let line = |n: usize| {
            let d = &t.days[n];
            match &d.batch {
                Some(b) => {
                    let (g, code) = glyph_colour(b.state);
                    table::Line {
                        cells: vec![
                            d.dt.clone(),
                            format!("{g} {}", b.state.word()),
                            crate::cli::leases::list::short_key(&b.key).to_string(),
                            b.others.clone(),
                            b.run_id.as_deref().map(ubunye::documents::short).unwrap_or_default(),
                            b.note.clone(),
                        ],
                        colour: code.filter(|_| colour).map(|c| (1, c)),
                    }
                }
                None => table::Line {
                    cells: vec![
                        d.dt.clone(),
                        "· no batch".into(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ],
                    colour: None,
                },
            }
        };
        let header = ["DT", "STATE", "KEY", "VARIABLES", "RUN", "NOTE"];
        let _ = table::print(&mut out, &header, t.days.len(), line, table::terminal_width(), &FIT);
    }
    use std::io::Write;
    let _ = out.flush();
    exit::OK
}

/// The batches of the tasks `--task` names in a store (`-d s3://...`),
/// each task's given to `add` in task order, as a folder's scan gives them;
/// the use case's URL and the objects no engine reads.
fn in_store(
    a: &HistoryArgs,
    url: &str,
    sys: &ubunye::Sys,
    add: &mut impl FnMut(&str, Vec<state::Batch>),
) -> Result<(std::path::PathBuf, Vec<state::UnreadableFile>), (i32, String)> {
    if a.lineage.lineage_dir.is_some() {
        return Err((exit::USAGE, crate::cli::store::no_lineage_dir(url)));
    }
    let (uc, objects) = crate::cli::store::open_quiet(url)?;
    let (_, batches, problems) = ubunye::state::store::batches_of(&*objects, &uc, &sys.timing, Some(&a.task))
        .map_err(crate::cli::store::failed)?;
    let mut by_task: std::collections::BTreeMap<String, Vec<state::Batch>> = Default::default();
    for b in batches {
        by_task.entry(b.task.clone()).or_default().push(b);
    }
    for (task, batches) in by_task {
        add(&task, batches);
    }
    Ok((std::path::PathBuf::from(url), problems))
}
