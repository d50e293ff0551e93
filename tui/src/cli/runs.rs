//! `ubunye runs`: the run records of a use case, newest first.

use clap::Args;
use serde::Serialize;

use super::LineageArg;
use super::{UseCasesArg, exit, say_err, table};
use ubunye::state::{self, RecordInfo, UnreadableFile};

/// The run records (lineage) of a use case, newest first.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye runs -d uc --status interrupted --since 1d\n  ubunye runs show 9ecd09db -d uc    # one run whole, the end of its log\n  ubunye runs -d uc --dt 2025-01-01..2025-01-07 --status failed\n  ubunye runs -d uc --task 'demo/sales/*' --limit 5 --json\n  ubunye runs --find /data --status error --since 1h    # all below a folder\n\nWith several use cases (-d repeated, stores among them, or --find) the newest records of all of them come first, each naming its use case; one that cannot be read is a problem (on stderr; in --json's problems) and the others are still listed."
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RunsArgs {
    /// `runs show RUN`: one run whole.
    #[command(subcommand)]
    pub show: Option<RunsCommand>,
    #[command(flatten)]
    pub ucs: UseCasesArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// Only tasks that start with this (`demo`, `demo/sales/`), match it as
    /// a pattern (`*/ingest`; `*` matches anything), or are shortened to it
    /// as a narrow table shows them (`d/s/ingest`), as `leases list --task`.
    #[arg(long, value_name = "PREFIX|GLOB")]
    pub task: Option<String>,
    #[command(flatten)]
    pub filter: super::VarFilterArgs,
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

/// What goes first at 80 and 60 columns: the seconds, then the key (the
/// run id names the run, and its batch: explain takes either), then the
/// task is abbreviated (`d/s/ingest`, which `--task` takes back) and the
/// variables cut (a batch's first variable, its date, stays) before the
/// task goes, and the use case last (rows of two use cases are told apart
/// by it); the error keeps at least 16 columns.
const FIT: table::Fit = table::Fit {
    steps: &[
        table::Step::Drop("SECONDS"),
        table::Step::Drop("KEY"),
        table::Step::Abbrev("TASK"),
        table::Step::Shrink("VARIABLES", 24),
        table::Step::Shrink("VARIABLES", 14),
        table::Step::Drop("TASK"),
        table::Step::Drop("USE CASE"),
    ],
    last_min: 16,
};

/// What `runs` does besides listing.
#[derive(clap::Subcommand, Debug)]
pub enum RunsCommand {
    /// One run whole: its record, its batch, the end of its log.
    Show(super::runs_show::ShowArgs),
}

/// A run record's status, as the record says it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Running,
    /// Also `finished`, as `leases list` calls the batch.
    #[value(alias = "finished")]
    Success,
    /// Also `failed`, as `leases list` calls the batch.
    #[value(alias = "failed")]
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
    use_case: &'a str,
    task: String,
    #[serde(flatten)]
    record: &'a RecordInfo,
    variables: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// The records of a use case, by task: `(use case, task, record)`, the use
/// case shared by its records.
pub(crate) type Records = Vec<(std::sync::Arc<Named>, String, RecordInfo)>;

/// A use case as the table shows it and as `--json` gives it.
pub(crate) struct Named {
    pub shown: String,
    pub json: String,
}

impl Named {
    /// One name for both.
    pub fn one(name: &str) -> std::sync::Arc<Named> {
        std::sync::Arc::new(Named { shown: name.into(), json: name.into() })
    }
}

pub fn run(a: &RunsArgs, colour: bool) -> i32 {
    if let Some(RunsCommand::Show(s)) = &a.show {
        return super::runs_show::run(s);
    }
    let (ucs, many) = match a.ucs.single() {
        Some(d) => (vec![crate::console::fleet::UseCase { shown: d.to_path_buf(), error: None }], false),
        None => (a.ucs.resolve_counted(), true),
    };
    let mut problems: Vec<UnreadableFile> = Vec::new();
    let mut records: Records = Vec::new();
    // Every record file, filtered or not: what "without the filters" holds.
    let mut all = 0usize;
    let mut place = String::new();
    for uc in &ucs {
        let read = match (&uc.error, uc.store()) {
            (Some(e), _) => Err((exit::USAGE, e.clone())),
            (None, Some(url)) => read_store(a, url, many, &uc.name(), &mut records, &mut problems),
            (None, None) => read_folder(a, uc, many, &mut records, &mut problems),
        };
        match read {
            Ok((lineage, n)) => {
                place = lineage;
                all += n;
            }
            Err((code, why)) if !many => {
                say_err(&why);
                return code;
            }
            // One that cannot be read is a problem of the listing (in its
            // JSON too), and the others are still listed.
            Err((_, why)) => {
                problems.push(UnreadableFile::new(&uc.shown, format!("the use case cannot be read: {why}")))
            }
        }
    }
    if many {
        place = format!("{} use case(s)", ucs.len());
    }
    show(a, &place, records, &problems, all, colour, many)
}

/// The records of the use-case folder `uc`: where they were read from, and
/// how many record files there are; else the exit code and why not.
fn read_folder(
    a: &RunsArgs,
    uc: &crate::console::fleet::UseCase,
    many: bool,
    records: &mut Records,
    problems: &mut Vec<UnreadableFile>,
) -> Result<(String, usize), (i32, String)> {
    let root = super::usecase::check(&uc.shown).map_err(|why| (exit::USAGE, why))?;
    let lineage = match &a.lineage.lineage_dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => uc.shown.join(d),
        None => ubunye::layout::lineage_root(&root),
    };
    let name = match many {
        true => std::sync::Arc::new(Named { shown: uc.name(), json: uc.path().to_string_lossy().into_owned() }),
        false => Named::one(&root.to_string_lossy()),
    };
    let n = read_lineage(&lineage, &name, a.task.as_deref(), records, problems);
    Ok((lineage.display().to_string(), n))
}

/// The records of the use case in a store at `url`, as [`read_folder`]
/// gives a folder's.
fn read_store(
    a: &RunsArgs,
    url: &str,
    many: bool,
    shown: &str,
    records: &mut Records,
    problems: &mut Vec<UnreadableFile>,
) -> Result<(String, usize), (i32, String)> {
    if a.lineage.lineage_dir.is_some() {
        return Err((exit::USAGE, super::store::no_lineage_dir(url)));
    }
    let (uc, objects) = super::store::open_quiet(url)?;
    let (read, unread) = ubunye::state::store::records(&*objects, &uc).map_err(super::store::failed)?;
    let n = read.len() + unread.len();
    let name =
        if many { std::sync::Arc::new(Named { shown: shown.into(), json: url.into() }) } else { Named::one(url) };
    records.extend(read.into_iter().map(|(t, r)| (name.clone(), t, r)));
    problems.extend(unread);
    Ok((format!("s3://{}/{}", uc.bucket, uc.key(".ubunye/lineage")), n))
}

/// Read every record of `lineage` whose task passes `task` into `records`
/// (those that cannot be read into `problems`); how many record files there
/// are, filtered or not.
fn read_lineage(
    lineage: &std::path::Path,
    uc: &std::sync::Arc<Named>,
    task: Option<&str>,
    records: &mut Records,
    problems: &mut Vec<UnreadableFile>,
) -> usize {
    let mut all = 0;
    for (t, dir) in state::task_dirs(lineage, problems) {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let wanted = task.is_none_or(|f| state::task_matches(f, &t));
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
                Ok(r) => records.push((uc.clone(), t.clone(), r)),
                Err(u) => problems.push(u),
            }
        }
    }
    all
}

/// Filter, sort, cut and print `records` (`all`: how many there are without
/// the filters), read from `place` (a folder, or a store's URL).
/// `many`: the records are of several use cases (the table names each).
pub(crate) fn show(
    a: &RunsArgs,
    place: &str,
    mut records: Records,
    problems: &[UnreadableFile],
    all: usize,
    colour: bool,
    many: bool,
) -> i32 {
    let vars = match a.filter.filter() {
        Ok(f) => f,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    records.retain(|(_, t, r)| {
        a.task.as_deref().is_none_or(|f| state::task_matches(f, t)) && vars.matches(r.variables.as_ref())
    });
    let cutoff = a.since.and_then(|d| std::time::SystemTime::now().checked_sub(d));
    records.retain(|(_, _, r)| {
        a.status.is_none_or(|s| r.status.as_deref() == Some(s.word()))
            && cutoff.is_none_or(|c| r.started_at.as_deref().and_then(ubunye::timefmt::parse).is_some_and(|t| t >= c))
    });
    records.sort_by(|x, y| y.2.started_at.cmp(&x.2.started_at));
    let left_out = records.len().saturating_sub(a.limit);
    records.truncate(a.limit);
    let mut filters: Vec<String> = a.task.iter().map(|t| format!("--task '{t}'")).collect();
    filters.extend(a.status.map(|s| format!("--status {}", s.word())));
    filters.extend(vars.words());
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
        let rows: Vec<Row<'_>> = records
            .iter()
            .map(|(uc, t, r)| Row { use_case: &uc.json, task: t.clone(), record: r, variables: r.variables.as_ref() })
            .collect();
        super::print_json(&serde_json::json!({"records": rows, "left_out": left_out, "problems": problems}));
        if let Some(why) = nothing.filter(|_| !filters.is_empty()) {
            say_err(&why);
        }
        return exit::OK;
    }
    super::say_problems(problems);
    if let Some(why) = nothing {
        // It quotes the filters as typed: made printable.
        super::outln(&crate::report::printable(why));
        return exit::OK;
    }
    let now = std::time::SystemTime::now();
    let line = |i: usize| {
        let (uc, task, r) = &records[i];
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
        let started = r.started_at.as_deref().map(|s| match ubunye::timefmt::parse(s) {
            Some(t) => ubunye::timefmt::short_local(t, now),
            None => s.to_string(),
        });
        let key = r.variables.as_ref().and_then(|v| state::record_key(task, v)).unwrap_or_default();
        let mut cells = vec![started.unwrap_or_default(), status];
        if many {
            cells.push(uc.shown.clone());
        }
        cells.extend([
            task.clone(),
            super::leases::list::short_key(&key).to_string(),
            ubunye::documents::short(&r.run_id).to_string(),
            vars,
            secs,
            match &r.damaged {
                Some(why) => format!("{} cannot be parsed: {why}", r.path.display()),
                None => r.error.clone().unwrap_or_default(),
            },
        ]);
        table::Line { cells, colour: code.filter(|_| colour).map(|c| (1, c)) }
    };
    let mut header = vec!["STARTED", "STATUS", "TASK", "KEY", "RUN", "VARIABLES", "SECONDS", "ERROR"];
    if many {
        header.insert(2, "USE CASE");
    }
    let lines: Vec<table::Line> = (0..records.len()).map(line).collect();
    super::out(&crate::console::grid::render(
        &header,
        &lines,
        table::terminal_width(),
        &FIT,
        crate::console::grid::Last::Cut,
        1,
    ));
    if let Some(cut) = cut {
        say_err(&cut);
    }
    exit::OK
}
