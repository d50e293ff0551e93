//! `ubunye leases list|explain|takeover|finish`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
use serde::Serialize;

use super::{DirArg, exit, say_err};
use crate::explain;
use crate::state::{self, Batch, Found, ScanOptions, State};
use crate::sys::Sys;

/// See and repair the leases of a use case.
#[derive(Args, Debug)]
pub struct LeasesArgs {
    #[command(subcommand)]
    pub command: LeasesCommand,
}

#[derive(Subcommand, Debug)]
pub enum LeasesCommand {
    /// Every batch that needs attention, most severe first (all batches with --all).
    List(ListArgs),
    /// The triage report of one batch: who holds it, the verdict, what it wrote,
    /// its history, and what happens next.
    Explain(ExplainArgs),
    /// Take over a dead, kept or handed-back lease, or adopt an orphan, exactly as
    /// the next run would; then release the batch.
    Takeover(super::repair::RepairArgs),
    /// Finish the commit of a dead run that committed (pending): note, replaced
    /// files, done mark; then release the batch.
    Finish(super::repair::RepairArgs),
}

/// Where the run records are.
#[derive(Args, Debug, Clone, Default)]
pub struct LineageArg {
    /// Where run records are, if not <DIR>/.ubunye/lineage (the peer's --lineage-dir).
    #[arg(long, value_name = "DIR")]
    pub lineage_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(
    after_help = "States, most severe first: unreadable, dead, orphan, pending, handed-back, kept, live, interrupted, failed, finished.\n\
Examples:\n  ubunye leases list -d uc\n  ubunye leases list -d uc --state dead --state orphan --json\n  ubunye leases list -d uc --all --task 'demo/sales/*'"
)]
pub struct ListArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// Only batches in this state (repeatable).
    #[arg(long = "state", value_name = "S", value_parser = state_words())]
    pub states: Vec<String>,
    /// Only tasks matching this pattern (`*` matches anything).
    #[arg(long, value_name = "GLOB")]
    pub task: Option<String>,
    /// Finished batches too.
    #[arg(long)]
    pub all: bool,
    /// One JSON object (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

fn state_words() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(State::ALL.map(State::word))
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye leases explain 7d106ca7 -d uc\n  ubunye leases explain uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json"
)]
pub struct ExplainArgs {
    /// A batch key, a unique prefix of one, or the path of a lease-folder file.
    pub batch: String,
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// The task, when a prefix names batches of several tasks.
    #[arg(long, value_name = "U/P/T")]
    pub task: Option<String>,
    /// The report as JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &LeasesArgs) -> i32 {
    match &a.command {
        LeasesCommand::List(l) => list(l),
        LeasesCommand::Explain(e) => explain_cmd(e),
        LeasesCommand::Takeover(r) => super::repair::run(r, super::repair::Kind::Takeover),
        LeasesCommand::Finish(r) => super::repair::run(r, super::repair::Kind::Finish),
    }
}

/// Whether to colour output.
pub(crate) fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The glyph and colour of a state.
pub fn glyph(s: State) -> (&'static str, Color) {
    match s {
        State::Unreadable => ("?", Color::Magenta),
        State::Dead => ("✖", Color::Red),
        State::Orphan => ("◌", Color::Red),
        State::Pending => ("◔", Color::Yellow),
        State::HandedBack => ("↩", Color::Yellow),
        State::Kept => ("⚑", Color::Yellow),
        State::Live => ("●", Color::Green),
        State::Interrupted => ("◐", Color::DarkYellow),
        State::Failed => ("✗", Color::DarkRed),
        State::Finished => ("✓", Color::DarkGrey),
    }
}

/// One row of `leases list --json`.
#[derive(Serialize)]
pub struct Row<'a> {
    pub task: &'a str,
    pub key: &'a str,
    pub state: State,
    pub flags: &'a [state::Flag],
    pub variables: Option<&'a serde_json::Map<String, serde_json::Value>>,
    pub run_id: Option<&'a str>,
    pub pid: Option<i64>,
    pub host: Option<&'a str>,
    pub heartbeat_age_s: Option<f64>,
    pub dead: Option<bool>,
    pub claims: usize,
    pub note: &'a str,
}

pub fn row(b: &Batch) -> Row<'_> {
    let holder = b.lease.as_ref().map(|l| &l.holder);
    let j = holder.and_then(|h| h.judgement.as_ref());
    Row {
        task: &b.task,
        key: &b.key,
        state: b.state,
        flags: &b.flags,
        variables: b.variables.as_ref(),
        run_id: b.run_id.as_deref(),
        pid: holder.and_then(|h| h.pid),
        host: holder.and_then(|h| h.host.as_deref()),
        heartbeat_age_s: j.and_then(|j| j.age).map(|a| (a.age.as_secs_f64() * 10.0).round() / 10.0),
        dead: j.map(|j| j.dead),
        claims: b.claim_count(),
        note: &b.note,
    }
}

/// The batches `list` shows.
pub fn select<'a>(batches: &'a [Batch], states: &[State], all: bool) -> Vec<&'a Batch> {
    batches
        .iter()
        .filter(|b| if states.is_empty() { all || b.state != State::Finished } else { states.contains(&b.state) })
        .collect()
}

/// Render rows as the table `leases list` prints.
pub fn table(rows: &[&Batch], colour: bool) -> String {
    let mut t = Table::new();
    t.load_style(presets::NOTHING).set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(["STATE", "TASK", "VARIABLES / KEY", "RUN", "PID@HOST", "AGE", "CLAIMS", "NOTE"]);
    for b in rows {
        let (g, c) = glyph(b.state);
        let mut state = Cell::new(format!("{g} {}", b.state.word()));
        if colour {
            state = state.fg(c);
        }
        let holder = b.lease.as_ref().map(|l| &l.holder);
        let who = holder
            .map(|h| {
                format!(
                    "{}@{}",
                    h.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                    h.host.as_deref().map(short_host).unwrap_or("?")
                )
            })
            .unwrap_or_default();
        let age = holder
            .and_then(|h| h.judgement.as_ref())
            .and_then(|j| j.age)
            .map(|a| crate::timefmt::age(a.age))
            .unwrap_or_default();
        let stalled = if b.flags.contains(&state::Flag::Stalled) { " stalled" } else { "" };
        t.add_row(vec![
            state,
            Cell::new(&b.task),
            Cell::new(b.variables_text().unwrap_or_else(|| b.key.clone())),
            Cell::new(b.run_id.as_deref().map(crate::doc::short).unwrap_or_default()),
            Cell::new(who),
            Cell::new(format!("{age}{stalled}")),
            Cell::new(if b.lease.is_some() || !b.orphans.is_empty() {
                b.claim_count().to_string()
            } else {
                String::new()
            }),
            Cell::new(&b.note),
        ]);
    }
    t.to_string()
}

/// `vm|pid:[4026531836]` -> `vm`
fn short_host(h: &str) -> &str {
    h.split('|').next().unwrap_or(h)
}

fn options(lineage: &LineageArg, task: Option<String>) -> ScanOptions {
    ScanOptions { lineage_dir: lineage.lineage_dir.clone(), task_glob: task }
}

fn list(a: &ListArgs) -> i32 {
    let sys = Sys::real();
    let s = match state::scan(&a.dir.dir, &options(&a.lineage, a.task.clone()), &sys) {
        Ok(s) => s,
        Err(e) => {
            say_err(&e.to_string());
            return exit::REFUSED;
        }
    };
    let states: Vec<State> = a.states.iter().filter_map(|w| State::parse(w)).collect();
    let rows = select(&s.batches, &states, a.all);
    if a.json {
        let out = serde_json::json!({
            "use_case": s.root,
            "clock": s.now.source,
            "now": crate::timefmt::rfc3339(s.now.time),
            "batches": rows.iter().map(|b| row(b)).collect::<Vec<_>>(),
            "problems": s.problems,
        });
        super::outln(&serde_json::to_string_pretty(&out).unwrap_or_default());
        return exit::OK;
    }
    for p in &s.problems {
        say_err(&format!("{} cannot be listed: {}", p.path.display(), p.why));
    }
    if rows.is_empty() {
        let hidden = s.batches.len();
        super::outln(&format!(
            "No batch needs attention in {} ({hidden} batch(es){}).",
            s.root.display(),
            if hidden > 0 && !a.all { ", all finished: --all shows them" } else { "" }
        ));
        return exit::OK;
    }
    super::out(&table(&rows, colour()));
    super::outln("");
    exit::OK
}

/// Find and read one batch for `explain` (and the repairs).
pub fn locate(
    dir: &DirArg,
    lineage: &LineageArg,
    query: &str,
    task: Option<&str>,
    sys: &Sys,
) -> Result<(state::Scan, Batch), String> {
    let opts = ScanOptions { lineage_dir: lineage.lineage_dir.clone(), task_glob: None };
    let found = state::find(&dir.dir, query, task).map_err(|e| e.to_string())?;
    let id = match found {
        Found::One(id) => id,
        Found::Ambiguous(c) => {
            let list: Vec<String> = c.iter().map(|b| format!("{} {}", b.key, b.task)).collect();
            return Err(format!(
                "'{query}' names {} batches: {}. Give more of the key, or --task.",
                c.len(),
                list.join("; ")
            ));
        }
        Found::None(near) => {
            // A batch known only by its run records (interrupted, failed): look there.
            let opts = ScanOptions { lineage_dir: lineage.lineage_dir.clone(), task_glob: task.map(str::to_string) };
            let s = state::scan(&dir.dir, &opts, sys).map_err(|e| e.to_string())?;
            let q = query.to_ascii_lowercase();
            let hits: Vec<&Batch> = s.batches.iter().filter(|b| b.key.starts_with(&q)).collect();
            match hits.len() {
                1 => {
                    let b = hits[0].clone();
                    return Ok((s, b));
                }
                0 => {
                    let near: Vec<String> = near.iter().map(|b| format!("{} {}", &b.key, b.task)).collect();
                    return Err(if near.is_empty() {
                        format!("no batch with a key starting '{query}' in {}", s.root.display())
                    } else {
                        format!("no batch with a key starting '{query}'; the nearest: {}", near.join("; "))
                    });
                }
                n => return Err(format!("'{query}' names {n} batches; give more of the key, or --task")),
            }
        }
    };
    state::scan_batch(&dir.dir, &id.task, &id.key, &opts, sys).map_err(|e| e.to_string())
}

fn explain_cmd(a: &ExplainArgs) -> i32 {
    let sys = Sys::real();
    let (scan, batch) = match locate(&a.dir, &a.lineage, &a.batch, a.task.as_deref(), &sys) {
        Ok(x) => x,
        Err(e) => {
            say_err(&e);
            return exit::REFUSED;
        }
    };
    let e = explain::explain(&scan, batch, &a.dir.dir);
    if a.json {
        super::outln(&serde_json::to_string_pretty(&e).unwrap_or_default());
    } else {
        super::out(&explain::render(&e));
    }
    exit::OK
}
