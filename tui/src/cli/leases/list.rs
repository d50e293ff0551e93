//! `ubunye leases list`: every batch that needs attention, most severe first.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::table::{self, glyph_colour};
use crate::cli::{DirArg, LineageArg, exit, say_err};
use ubunye::state::{self, Batch, Flag, ScanOptions, State};
use ubunye::sys::Sys;

#[derive(Args, Debug)]
#[command(
    after_help = "States, most severe first: unreadable, dead, orphan, pending, handed-back, kept, live, interrupted, failed, finished; \
`--state stalled` picks the live batches whose heartbeat stopped.\n\
Examples:\n  ubunye leases list -d uc\n  ubunye leases list -d uc --state dead --state orphan --json\n  ubunye leases list -d uc --all --task 'demo/sales/*'\n\
  ubunye leases list -d uc --state dead,stalled,kept,unreadable --fail-if-any   # cron: exit 1 with the rows, 0 when none"
)]
pub struct ListArgs {
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// Only batches in these states (repeatable, or comma-separated);
    /// `stalled`: live batches whose heartbeat stopped (the process alive,
    /// its lease not written for three heartbeats).
    #[arg(long = "state", value_name = "S", value_parser = state_words(), value_delimiter = ',')]
    pub states: Vec<String>,
    /// Exit 1 when any batch is listed (the rows printed as usual), 0 when
    /// none: for cron and CI checks.
    #[arg(long)]
    pub fail_if_any: bool,
    /// Only tasks that start with this (`demo`, `demo/sales/`) or match it
    /// as a pattern (`*/ingest`; `*` matches anything), as the dashboard's
    /// `/task:` filter.
    #[arg(long, value_name = "PREFIX|GLOB")]
    pub task: Option<String>,
    /// Finished batches too.
    #[arg(long)]
    pub all: bool,
    /// One JSON object (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// `--state`'s word for the live batches flagged stalled.
const STALLED: &str = "stalled";

fn state_words() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(State::ALL.map(State::word).into_iter().chain([STALLED]))
}

/// What `--state` asks for: states, and the stalled flag.
#[derive(Clone, Debug, Default)]
struct Wanted {
    states: Vec<State>,
    stalled: bool,
}

impl Wanted {
    fn parse(words: &[String]) -> Wanted {
        Wanted {
            states: words.iter().filter_map(|w| State::parse(w)).collect(),
            stalled: words.iter().any(|w| w == STALLED),
        }
    }

    fn is_empty(&self) -> bool {
        self.states.is_empty() && !self.stalled
    }

    /// The filters as given, for the line that says why nothing is listed.
    fn words(&self) -> impl Iterator<Item = &str> {
        self.states.iter().map(|s| s.word()).chain(self.stalled.then_some(STALLED))
    }
}

/// Whether `list` shows a batch.
fn shown(b: &Batch, want: &Wanted, all: bool) -> bool {
    if want.is_empty() {
        all || b.state != State::Finished
    } else {
        want.states.contains(&b.state) || (want.stalled && b.flags.contains(&Flag::Stalled))
    }
}

/// One row of `leases list`, owned: a listing keeps its rows, never the
/// batches they came from (a use case can hold 100,000).
#[derive(Serialize)]
struct Row {
    task: String,
    key: String,
    state: State,
    flags: Vec<Flag>,
    variables: Option<serde_json::Map<String, serde_json::Value>>,
    run_id: Option<String>,
    pid: Option<i64>,
    host: Option<String>,
    heartbeat_age_s: Option<f64>,
    dead: Option<bool>,
    claims: usize,
    note: String,
    /// What its files say happened, newest first (as `explain` shows it).
    history: Vec<state::HistoryEntry>,
    #[serde(skip)]
    age: Option<Duration>,
    #[serde(skip)]
    has_lease: bool,
}

impl Row {
    /// `history`: only JSON shows it (a table has no room for it, and 100,000
    /// rows keep it in memory).
    fn from_batch(mut b: Batch, history: bool) -> Row {
        let claims = b.claim_count();
        let history = if history { b.history() } else { Vec::new() };
        let has_lease = b.lease.is_some() || !b.orphans.is_empty();
        let holder = b.lease.take().map(|l| l.holder);
        let age = holder.as_ref().and_then(|h| h.judgement.as_ref()).and_then(|j| j.age).map(|a| a.age);
        Row {
            dead: holder.as_ref().and_then(|h| h.judgement.as_ref()).map(|j| j.dead),
            pid: holder.as_ref().and_then(|h| h.pid),
            host: holder.and_then(|h| h.host),
            heartbeat_age_s: age.map(|a| (a.as_secs_f64() * 10.0).round() / 10.0),
            age,
            claims,
            history,
            has_lease,
            task: b.task,
            key: b.key,
            state: b.state,
            flags: b.flags,
            variables: b.variables,
            run_id: b.run_id,
            note: b.note,
        }
    }

    fn line(&self, colour: bool) -> table::Line {
        let (g, code) = glyph_colour(self.state);
        let who = if self.pid.is_some() || self.host.is_some() {
            format!(
                "{}@{}",
                self.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                self.host.as_deref().map(short_host).unwrap_or("?")
            )
        } else {
            String::new()
        };
        let age = self.age.map(ubunye::timefmt::age).unwrap_or_default();
        let stalled = if self.flags.contains(&Flag::Stalled) { " stalled" } else { "" };
        table::Line {
            cells: vec![
                format!("{g} {}", self.state.word()),
                self.task.clone(),
                self.variables.as_ref().map(state::variables_text).unwrap_or_else(|| self.key.clone()),
                self.run_id.as_deref().map(ubunye::documents::short).unwrap_or_default().to_string(),
                who,
                format!("{age}{stalled}"),
                if self.has_lease { self.claims.to_string() } else { String::new() },
                self.note.clone(),
            ],
            colour: code.filter(|_| colour).map(|c| (0, c)),
        }
    }
}

/// `vm|pid:[4026531836]` -> `vm`
fn short_host(h: &str) -> &str {
    h.split('|').next().unwrap_or(h)
}

pub fn run(a: &ListArgs, colour: bool) -> i32 {
    let sys = crate::console::machine::sys();
    let states = Wanted::parse(&a.states);
    let opts =
        ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), task_glob: a.task.clone(), ..ScanOptions::default() };
    if a.json {
        return run_json(a, &opts, &states, &sys);
    }
    // A table's lines, made as each task is read (a row's batch is not
    // kept), a list per state: tasks come in order and keys in order within
    // a task, so each list is in the listing's order.
    let mut by_state: Vec<Vec<table::Line>> = State::ALL.iter().map(|_| Vec::new()).collect();
    let mut count = Count::default();
    let head = state::scan_tasks(&a.dir.dir, &opts, &sys, |_, batches| {
        count.add(&batches);
        for b in batches.into_iter().filter(|b| shown(b, &states, a.all)) {
            by_state[b.state.rank()].push(Row::from_batch(b, false).line(colour));
        }
    });
    let head = match head {
        Ok(h) => h,
        Err(e) => {
            say_err(&e.to_string());
            return exit::USAGE;
        }
    };
    let rows: Vec<table::Line> = by_state.into_iter().flatten().collect();
    let empty = rows.is_empty().then(|| nothing_shown(a, &states, &head.root, count, &sys));
    for p in &head.problems {
        say_err(&format!("{}: {}", p.path.display(), p.why));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(why) = empty {
        let _ = writeln!(out, "{why}");
        let _ = out.flush();
        return exit::OK;
    }
    let listed = rows.len();
    let header = ["STATE", "TASK", "VARIABLES / KEY", "RUN", "PID@HOST", "AGE", "CLAIMS", "NOTE"];
    let _ = table::print(&mut out, &header, rows.len(), |i| rows[i].clone(), table::terminal_width());
    let _ = out.flush();
    found(a, listed)
}

/// The exit code once the rows are out: with `--fail-if-any`, 1 when any
/// batch was listed.
fn found(a: &ListArgs, listed: usize) -> i32 {
    if a.fail_if_any && listed > 0 { exit::REFUSED } else { exit::OK }
}

/// `--json`: the rows are made and written out on a thread of their own as
/// each task is read, and kept as JSON bytes (`stream::Rows`): memory holds a
/// task or two, whatever the use case's size.
fn run_json(a: &ListArgs, opts: &ScanOptions, states: &Wanted, sys: &Sys) -> i32 {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Batch>>(1);
    let (want, all) = (states.clone(), a.all);
    let writer = std::thread::spawn(move || -> std::io::Result<(super::stream::Rows, Count)> {
        let mut rows = super::stream::Rows::new();
        let mut count = Count::default();
        for batches in rx {
            count.add(&batches);
            for b in batches.into_iter().filter(|b| shown(b, &want, all)) {
                rows.push(b.state, &Row::from_batch(b, true))?;
            }
        }
        Ok((rows, count))
    });
    let head = state::scan_tasks(&a.dir.dir, opts, sys, |_, batches| {
        let _ = tx.send(batches);
    });
    drop(tx);
    let written = writer.join().unwrap_or_else(|_| Err(std::io::Error::other("the JSON writer panicked")));
    let head = match head {
        Ok(h) => h,
        Err(e) => {
            say_err(&e.to_string());
            return exit::USAGE;
        }
    };
    let (rows, count) = match written {
        Ok(r) => r,
        Err(e) => {
            say_err(&format!(
                "cannot hold the listing's rows: {e} (a temporary file in {}; set TMPDIR)",
                std::env::temp_dir().display()
            ));
            return exit::USAGE;
        }
    };
    let listed = rows.len();
    let empty = (listed == 0).then(|| nothing_shown(a, states, &head.root, count, sys));
    let now = ubunye::timefmt::rfc3339(head.now.time);
    // A path that is not UTF-8 is written as the problems' paths are (lossily).
    let root = serde_json::Value::String(head.root.to_string_lossy().into_owned());
    let clock = serde_json::to_value(head.now.source).unwrap_or_default();
    let fields: [(&str, &serde_json::Value); 3] = [("use_case", &root), ("clock", &clock), ("now", &now.into())];
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let _ = rows.write_document(&mut out, &fields, &head.problems).and_then(|_| out.flush());
    // A filter that left nothing says so, beside the document.
    if let Some(why) = empty.filter(|_| a.task.is_some() || !states.is_empty()) {
        say_err(&why);
    }
    found(a, listed)
}

/// How many batches a scan held, and how many of them need attention.
#[derive(Clone, Copy, Default)]
struct Count {
    all: usize,
    attention: usize,
}

impl Count {
    fn add(&mut self, batches: &[Batch]) {
        self.all += batches.len();
        self.attention += batches.iter().filter(|b| b.state != State::Finished).count();
    }
}

/// Why the list is empty, in one line: the filters that left nothing, and
/// what the use case holds without them. `count` is of the scan made; with
/// `--task` it is read again without it (only now that nothing matched: a
/// filtered list of a big use case reads its own tasks alone).
fn nothing_shown(a: &ListArgs, states: &Wanted, root: &std::path::Path, count: Count, sys: &Sys) -> String {
    let mut filters: Vec<String> = a.task.iter().map(|t| format!("--task '{t}'")).collect();
    filters.extend(states.words().map(|w| format!("--state {w}")));
    if filters.is_empty() {
        return format!(
            "No batch needs attention in {} ({} batch(es){}).",
            root.display(),
            count.all,
            if count.all > 0 && !a.all { ", all finished: --all shows them" } else { "" }
        );
    }
    let mut without = count;
    if a.task.is_some() {
        without = Count::default();
        let opts =
            ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), task_glob: None, ..ScanOptions::default() };
        let _ = state::scan_tasks(root, &opts, sys, |_, batches| without.add(&batches));
    }
    format!(
        "No batch matches {} in {}; without {}: {} of its {} batch(es) need attention{}.",
        filters.join(" "),
        root.display(),
        if filters.len() == 1 { "it" } else { "them" },
        without.attention,
        without.all,
        // No task matched at all: say what --task takes.
        if a.task.is_some() && count.all == 0 {
            " (--task takes the start of a task's name, or a pattern with *)"
        } else {
            ""
        }
    )
}
