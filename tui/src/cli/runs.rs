//! `ubunye runs`: the run records of a use case, newest first.

use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::LineageArg;
use super::{DirArg, exit, say_err, table};
use ubunye::state::{self, RecordInfo, UnreadableFile};

/// The run records (lineage) of a use case, newest first.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye runs -d uc --status interrupted --since 1d\n  ubunye runs -d uc --task 'demo/sales/*' --limit 5 --json"
)]
pub struct RunsArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// Only tasks that start with this (`demo`, `demo/sales/`) or match it
    /// as a pattern (`*/ingest`; `*` matches anything), as `leases list --task`.
    #[arg(long, value_name = "PREFIX|GLOB")]
    pub task: Option<String>,
    /// Only records with this status.
    #[arg(long, value_name = "S", value_enum)]
    pub status: Option<Status>,
    /// Only runs started within this long (e.g. 2h, 3d).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub since: Option<std::time::Duration>,
    /// At most this many, the newest (how many more there were is said).
    #[arg(long, value_name = "N", default_value = "50")]
    pub limit: usize,
    /// JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// A run record's status, as the record says it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Running,
    Success,
    Error,
    Interrupted,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Success => "success",
            Status::Error => "error",
            Status::Interrupted => "interrupted",
        }
    }
}

#[derive(Serialize)]
struct Row<'a> {
    task: String,
    #[serde(flatten)]
    record: &'a RecordInfo,
    variables: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

pub fn run(a: &RunsArgs, colour: bool) -> i32 {
    let root = match super::usecase::check(&a.dir.dir) {
        Ok(r) => r,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    let lineage = match &a.lineage.lineage_dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => a.dir.dir.join(d),
        None => ubunye::layout::lineage_root(&root),
    };
    let mut problems: Vec<UnreadableFile> = Vec::new();
    let mut records: Vec<(String, RecordInfo)> = Vec::new();
    // Every record file, filtered or not: what "without the filters" holds.
    let mut all = 0usize;
    for (task, dir) in state::task_dirs(&lineage, &mut problems) {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let wanted = a.task.as_deref().is_none_or(|t| state::task_matches(t, &task));
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            all += 1;
            if !wanted {
                continue;
            }
            match state::read_record(&p) {
                Ok(r) => records.push((task.clone(), r)),
                Err(u) => problems.push(u),
            }
        }
    }
    show(a, &lineage.display().to_string(), records, &problems, all, colour)
}

/// Filter, sort, cut and print `records` (`all`: how many there are without
/// the filters), read from `place` (a folder, or a store's URL).
pub(crate) fn show(
    a: &RunsArgs,
    place: &str,
    mut records: Vec<(String, RecordInfo)>,
    problems: &[UnreadableFile],
    all: usize,
    colour: bool,
) -> i32 {
    records.retain(|(t, _)| a.task.as_deref().is_none_or(|f| state::task_matches(f, t)));
    let cutoff = a.since.and_then(|d| std::time::SystemTime::now().checked_sub(d));
    records.retain(|(_, r)| {
        a.status.is_none_or(|s| r.status.as_deref() == Some(s.word()))
            && cutoff.is_none_or(|c| r.started_at.as_deref().and_then(ubunye::timefmt::parse).is_some_and(|t| t >= c))
    });
    records.sort_by(|x, y| y.1.started_at.cmp(&x.1.started_at));
    let left_out = records.len().saturating_sub(a.limit);
    records.truncate(a.limit);
    let mut filters: Vec<String> = a.task.iter().map(|t| format!("--task '{t}'")).collect();
    filters.extend(a.status.map(|s| format!("--status {}", s.word())));
    filters.extend(a.since.map(|d| format!("--since {}", humantime::format_duration(d))));
    let nothing = match (records.is_empty(), filters.is_empty()) {
        (false, _) => None,
        (true, true) => Some(format!("No run records in {place}.")),
        (true, false) => Some(format!(
            "No run records match {} in {place}; without {}: {all} record(s).",
            filters.join(" "),
            if filters.len() == 1 { "it" } else { "them" }
        )),
    };
    let cut = (left_out > 0)
        .then(|| format!("{left_out} older record(s) left out by --limit {}: a larger --limit shows them", a.limit));
    if a.json {
        let rows: Vec<Row<'_>> =
            records.iter().map(|(t, r)| Row { task: t.clone(), record: r, variables: r.variables.as_ref() }).collect();
        super::print_json(&serde_json::json!({"records": rows, "left_out": left_out, "problems": problems}));
        if let Some(why) = nothing.filter(|_| !filters.is_empty()) {
            say_err(&why);
        }
        return exit::OK;
    }
    for p in problems {
        say_err(&format!("{}: {}", p.path.display(), p.why));
    }
    if let Some(why) = nothing {
        super::outln(&why);
        return exit::OK;
    }
    let line = |i: usize| {
        let (task, r) = &records[i];
        let vars = r.variables.as_ref().map(state::variables_text).unwrap_or_default();
        // A record that cannot be parsed is named as unreadable, with its file.
        let status = match (&r.status, &r.damaged) {
            (_, Some(_)) => "unreadable".to_string(),
            (Some(s), None) => s.clone(),
            (None, None) => "(none)".into(),
        };
        let code = super::table::sgr(state::Tone::of_record(r.status.as_deref().filter(|_| r.damaged.is_none())));
        let secs = match (
            r.started_at.as_deref().and_then(ubunye::timefmt::parse),
            r.ended_at.as_deref().and_then(ubunye::timefmt::parse),
        ) {
            (Some(s), Some(e)) => e.duration_since(s).map(|d| format!("{:.1}", d.as_secs_f64())).unwrap_or_default(),
            _ => String::new(),
        };
        table::Line {
            cells: vec![
                r.started_at.clone().unwrap_or_default(),
                status,
                task.clone(),
                ubunye::documents::short(&r.run_id).to_string(),
                vars,
                secs,
                match &r.damaged {
                    Some(why) => format!("{} cannot be parsed: {why}", r.path.display()),
                    None => r.error.clone().unwrap_or_default(),
                },
            ],
            colour: code.filter(|_| colour).map(|c| (1, c)),
        }
    };
    let header = ["STARTED", "STATUS", "TASK", "RUN", "VARIABLES", "SECONDS", "ERROR"];
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let _ = table::print(&mut out, &header, records.len(), line, table::terminal_width());
    let _ = out.flush();
    if let Some(cut) = cut {
        say_err(&cut);
    }
    exit::OK
}
