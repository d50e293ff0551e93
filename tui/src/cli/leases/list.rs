//! `ubunye leases list`: every batch that needs attention, most severe first.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::cli::table::{self, glyph_colour};
use crate::cli::{LineageArg, UseCasesArg, exit, say_err};
use crate::console::fleet::UseCase;
use ubunye::state::{self, Batch, Flag, ScanOptions, State};
use ubunye::sys::Sys;

#[derive(Args, Debug)]
#[command(
    after_help = "States, most severe first: unreadable, damaged, dead, orphan, pending, handed-back, kept, live, interrupted, failed, finished; \
`--state stalled` picks the live batches whose heartbeat stopped.

Examples:
  ubunye leases list -d uc
  ubunye leases list -d uc --state dead --state orphan --json
  ubunye leases list -d uc --all --task 'demo/sales/*'
  ubunye leases list -d uc --all --dt 2025-01-01..2025-01-31 --var mode=PROD
  ubunye leases list -d a -d b --state dead,kept        # several use cases
  ubunye leases list --find /data --state dead,kept     # all below a folder

For cron: exit 1 with the rows when a batch needs someone, 0 when none:
  ubunye leases list -d uc --fail-if-any \\
    --state dead,stalled,kept,unreadable,damaged

With several use cases each row names its batch as <usecase>:<key>, which explain, takeover and finish take; a use case that cannot be read is an unreadable row, and the others are still listed."
)]
pub struct ListArgs {
    #[command(flatten)]
    pub ucs: UseCasesArg,
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
    /// Only tasks that start with this (`demo`, `demo/sales/`), match it as
    /// a pattern (`*/ingest`; `*` matches anything), or are shortened to it
    /// as a narrow table shows them (`d/s/ingest`), as the dashboard's
    /// `/task:` filter.
    #[arg(long, value_name = "PREFIX|GLOB")]
    pub task: Option<String>,
    #[command(flatten)]
    pub filter: crate::cli::VarFilterArgs,
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
    /// `--dt` and `--var`.
    vars: state::VarFilter,
}

impl Wanted {
    fn parse(words: &[String]) -> Wanted {
        Wanted {
            states: words.iter().filter_map(|w| State::parse(w)).collect(),
            stalled: words.iter().any(|w| w == STALLED),
            vars: state::VarFilter::default(),
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
    if !want.vars.matches(b.variables.as_ref()) {
        return false;
    }
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
    /// The use-case folder, resolved.
    use_case: String,
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
    /// With several use cases: the use case as given or found (what the
    /// table shows before the key).
    #[serde(skip)]
    shown: Option<String>,
}

impl Row {
    /// `history`: only JSON shows it (a table has no room for it, and 100,000
    /// rows keep it in memory).
    fn from_batch(mut b: Batch, history: bool, uc: &Origin) -> Row {
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
            use_case: uc.root.clone(),
            shown: uc.shown.clone(),
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
        let mut cells = vec![format!("{g} {}", self.state.word())];
        match &self.shown {
            Some(uc) => {
                cells.push(if self.key.is_empty() { uc.clone() } else { format!("{uc}:{}", short_key(&self.key)) })
            }
            None => cells.push(short_key(&self.key).to_string()),
        }
        cells.extend([
            self.task.clone(),
            self.variables.as_ref().map(state::variables_text).unwrap_or_default(),
            self.run_id.as_deref().map(ubunye::documents::short).unwrap_or_default().to_string(),
            who,
            format!("{age}{stalled}"),
            if self.has_lease { self.claims.to_string() } else { String::new() },
            self.note.clone(),
        ]);
        table::Line { cells, colour: code.filter(|_| colour).map(|c| (0, c)) }
    }

    /// A use case among several that cannot be read: a row of its own.
    fn unreadable(uc: &Origin, why: String) -> Row {
        Row {
            use_case: uc.root.clone(),
            task: String::new(),
            key: String::new(),
            state: State::Unreadable,
            flags: Vec::new(),
            variables: None,
            run_id: None,
            pid: None,
            host: None,
            heartbeat_age_s: None,
            dead: None,
            claims: 0,
            note: format!("this use case cannot be read: {why}"),
            history: Vec::new(),
            age: None,
            has_lease: false,
            shown: uc.shown.clone(),
        }
    }
}

/// Whose rows these are: the use case resolved, and as shown (with several).
#[derive(Clone, Debug, Default)]
struct Origin {
    root: String,
    shown: Option<String>,
}

/// What goes first at 80 and 60 columns: who holds it and its claims
/// (explain has them), then the age; the task is abbreviated (`d/s/ingest`),
/// the variables cut to 24, then the task goes before the variables are cut
/// further (the key names the batch; the variables say which day it is);
/// the note keeps at least 16 columns.
const FIT: table::Fit = table::Fit {
    steps: &[
        table::Step::Drop("PID@HOST"),
        table::Step::Drop("RUN"),
        table::Step::Drop("CLAIMS"),
        table::Step::Drop("AGE"),
        table::Step::Abbrev("TASK"),
        table::Step::Shrink("VARIABLES", 24),
        table::Step::Drop("TASK"),
        table::Step::Shrink("VARIABLES", 14),
        // Only when the id to paste (`<usecase>:<key>`, never cut) is wide.
        table::Step::Drop("VARIABLES"),
    ],
    last_min: 16,
};

/// A key as the tables show it: its first 8 digits, as a run id is shown;
/// every command takes it (4 digits or more name a batch).
pub(crate) fn short_key(key: &str) -> &str {
    key.get(..8).unwrap_or(key)
}

/// `vm|pid:[4026531836]` -> `vm`
fn short_host(h: &str) -> &str {
    h.split('|').next().unwrap_or(h)
}

/// The use cases a listing reads: the one `-d` as always, or many.
fn use_cases(a: &UseCasesArg) -> (Vec<UseCase>, bool) {
    match a.single() {
        Some(d) => (vec![UseCase { shown: d.to_path_buf(), error: None }], false),
        None => (a.resolve_counted(), true),
    }
}

/// A store's batches (`-d s3://...`), as a folder's scan gives them,
/// `--task` applied; its head (the URL as the root) for the listing's
/// summary. Why it cannot be read comes with the exit code a store alone
/// ends with: 2 for a URL that does not parse or a `--lineage-dir` (a
/// store's records are in the store) or a prefix no run has used, 1 for a
/// store that cannot be reached or read.
fn store_batches(url: &str, opts: &ScanOptions, sys: &Sys) -> Result<(state::ScanHead, Vec<Batch>), (i32, String)> {
    if opts.lineage_dir.is_some() {
        return Err((exit::USAGE, crate::cli::store::no_lineage_dir(url)));
    }
    let (uc, objects) = crate::cli::store::open_quiet(url)?;
    // Only the tasks `--task` matches are read, as a folder's scan reads
    // only their folders.
    let glob = opts.task_glob.as_deref();
    let (now, batches, problems) =
        ubunye::state::store::batches_of(&*objects, &uc, &sys.timing, glob).map_err(crate::cli::store::failed)?;
    let head = state::ScanHead {
        root: std::path::PathBuf::from(url),
        lineage_dir: std::path::PathBuf::from(format!("{url}/.ubunye/lineage")),
        now: ubunye::sys::Now { time: now, source: ubunye::sys::ClockSource::Store },
        problems,
    };
    Ok((head, batches))
}

impl Origin {
    /// One use case: the folder resolved, as its listing always gave it;
    /// among many, as named made absolute, the same whether it can be read
    /// or not (as `runs`, `doctor` and the metrics name it).
    fn of(uc: &UseCase, many: bool) -> Origin {
        let root = match (many, uc.store()) {
            (_, Some(url)) => std::path::PathBuf::from(url),
            (true, None) => uc.path(),
            (false, None) => std::fs::canonicalize(&uc.shown).unwrap_or_else(|_| uc.shown.clone()),
        };
        Origin { root: root.to_string_lossy().into_owned(), shown: many.then(|| uc.name()) }
    }
}

/// One use case's batches, a task's at a time to `each`, and its head (or
/// why it cannot be read, with the exit code it ends a listing of it alone
/// with).
fn read(
    uc: &UseCase,
    opts: &ScanOptions,
    sys: &Sys,
    each: &mut dyn FnMut(Vec<Batch>),
) -> Result<state::ScanHead, (i32, String)> {
    match (&uc.error, uc.store()) {
        (Some(e), _) => Err((exit::USAGE, e.clone())),
        (None, Some(url)) => store_batches(url, opts, sys).map(|(head, batches)| {
            each(batches);
            head
        }),
        (None, None) => state::scan_tasks(&uc.shown, opts, sys, |_, batches| each(batches))
            .map_err(|e| (exit::USAGE, e.to_string())),
    }
}

/// One use case's part of a listing: its head, or why it could not be read.
struct Part {
    uc: UseCase,
    head: Result<state::ScanHead, String>,
}

pub fn run(a: &ListArgs, colour: bool) -> i32 {
    let sys = crate::console::machine::sys();
    let mut states = Wanted::parse(&a.states);
    states.vars = match a.filter.filter() {
        Ok(f) => f,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    let opts =
        ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), task_glob: a.task.clone(), ..ScanOptions::default() };
    let (ucs, many) = use_cases(&a.ucs);
    if a.json {
        return run_json(a, ucs, many, &opts, &states, &sys);
    }
    // A table's lines, made as each task is read (a row's batch is not
    // kept), a list per state: use cases, tasks and keys come in order, so
    // each list is in the listing's order.
    let mut by_state: Vec<Vec<table::Line>> = State::ALL.iter().map(|_| Vec::new()).collect();
    let mut count = Count::default();
    let mut parts = Vec::new();
    for uc in ucs {
        let origin = Origin::of(&uc, many);
        let mut add = |batches: Vec<Batch>| {
            count.add(&batches);
            for b in batches.into_iter().filter(|b| shown(b, &states, a.all)) {
                by_state[b.state.rank()].push(Row::from_batch(b, false, &origin).line(colour));
            }
        };
        let head = read(&uc, &opts, &sys, &mut add);
        let head = match head {
            Err((code, e)) if !many => {
                say_err(&e);
                return code;
            }
            Err((_, e)) => {
                by_state[State::Unreadable.rank()].push(Row::unreadable(&origin, e.clone()).line(colour));
                Err(e)
            }
            Ok(h) => Ok(h),
        };
        parts.push(Part { uc, head });
    }
    let rows: Vec<table::Line> = by_state.into_iter().flatten().collect();
    let empty = rows.is_empty().then(|| nothing_shown(a, &states, &parts, count, &sys));
    let problems = parts.iter().filter_map(|p| p.head.as_ref().ok()).flat_map(|h| &h.problems);
    crate::cli::say_problems(problems);
    crate::console::print::wrote_stdout();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(why) = empty {
        // It quotes the filters as typed: made printable.
        let _ = writeln!(out, "{}", crate::report::printable(why));
        let _ = out.flush();
        return exit::OK;
    }
    let listed = rows.len();
    let mut header = vec!["STATE", "KEY", "TASK", "VARIABLES", "RUN", "PID@HOST", "AGE", "CLAIMS", "NOTE"];
    if many {
        header[1] = "USE CASE:KEY";
    }
    let _ = table::print(&mut out, &header, rows.len(), |i| rows[i].clone(), table::terminal_width(), &FIT);
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
fn run_json(a: &ListArgs, ucs: Vec<UseCase>, many: bool, opts: &ScanOptions, states: &Wanted, sys: &Sys) -> i32 {
    let (tx, rx) = std::sync::mpsc::sync_channel::<(std::sync::Arc<Origin>, Result<Vec<Batch>, String>)>(1);
    let (want, all) = (states.clone(), a.all);
    let writer = std::thread::spawn(move || -> std::io::Result<(super::stream::Rows, Count)> {
        let mut rows = super::stream::Rows::new();
        let mut count = Count::default();
        for (origin, batches) in rx {
            match batches {
                Ok(batches) => {
                    count.add(&batches);
                    for b in batches.into_iter().filter(|b| shown(b, &want, all)) {
                        rows.push(b.state, &Row::from_batch(b, true, &origin))?;
                    }
                }
                Err(why) => rows.push(State::Unreadable, &Row::unreadable(&origin, why))?,
            }
        }
        Ok((rows, count))
    });
    let mut parts = Vec::new();
    for uc in ucs {
        let origin = std::sync::Arc::new(Origin::of(&uc, many));
        let head = read(&uc, opts, sys, &mut |batches| {
            let _ = tx.send((origin.clone(), Ok(batches)));
        });
        let head = match head {
            Err((code, e)) if !many => {
                say_err(&e);
                return code;
            }
            Err((_, e)) => {
                let _ = tx.send((origin, Err(e.clone())));
                Err(e)
            }
            Ok(h) => Ok(h),
        };
        parts.push(Part { uc, head });
    }
    drop(tx);
    let written = writer.join().unwrap_or_else(|_| Err(std::io::Error::other("the JSON writer panicked")));
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
    let empty = (listed == 0).then(|| nothing_shown(a, states, &parts, count, sys));
    let problems: Vec<state::UnreadableFile> =
        parts.iter().filter_map(|p| p.head.as_ref().ok()).flat_map(|h| h.problems.iter().cloned()).collect();
    let head_of = |h: &state::ScanHead| {
        [
            // A path that is not UTF-8 is written as the problems' paths are (lossily).
            ("use_case", serde_json::Value::String(h.root.to_string_lossy().into_owned())),
            ("clock", serde_json::to_value(h.now.source).unwrap_or_default()),
            ("now", ubunye::timefmt::rfc3339(h.now.time).into()),
        ]
    };
    let fields: Vec<(&str, serde_json::Value)> = if many {
        let list = parts
            .iter()
            .map(|p| {
                let mut o = serde_json::Map::new();
                o.insert("shown".into(), p.uc.name().into());
                if let Ok(h) = &p.head {
                    o.extend(head_of(h).map(|(k, v)| (k.to_string(), v)));
                }
                // As its rows name it (not resolved), whether read or not.
                o.insert("use_case".into(), Origin::of(&p.uc, true).root.into());
                if let Err(e) = &p.head {
                    o.insert("error".into(), e.clone().into());
                }
                serde_json::Value::Object(o)
            })
            .collect();
        vec![("use_cases", serde_json::Value::Array(list))]
    } else {
        parts.iter().filter_map(|p| p.head.as_ref().ok()).flat_map(head_of).collect()
    };
    let fields: Vec<(&str, &serde_json::Value)> = fields.iter().map(|(k, v)| (*k, v)).collect();
    crate::console::print::wrote_stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let _ = rows.write_document(&mut out, &fields, &problems).and_then(|_| out.flush());
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
/// what the use cases hold without them. `count` is of the scan made; with
/// `--task` they are read again without it (only now that nothing matched: a
/// filtered list of a big use case reads its own tasks alone).
fn nothing_shown(a: &ListArgs, states: &Wanted, parts: &[Part], count: Count, sys: &Sys) -> String {
    let roots: Vec<&std::path::Path> =
        parts.iter().filter_map(|p| p.head.as_ref().ok()).map(|h| h.root.as_path()).collect();
    let place = match roots.as_slice() {
        [one] if parts.len() == 1 => one.display().to_string(),
        _ => format!("{} use case(s)", parts.len()),
    };
    let mut filters: Vec<String> = a.task.iter().map(|t| format!("--task '{t}'")).collect();
    filters.extend(states.words().map(|w| format!("--state {w}")));
    filters.extend(states.vars.words());
    if filters.is_empty() {
        return format!(
            "No batch needs attention in {place} ({} batch(es){}).",
            count.all,
            if count.all > 0 && !a.all { ", all finished: --all shows them" } else { "" }
        );
    }
    let mut without = count;
    if a.task.is_some() {
        without = Count::default();
        let opts =
            ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), task_glob: None, ..ScanOptions::default() };
        for p in parts {
            match (&p.head, p.uc.store()) {
                // A store is read again, all of it, only now that nothing
                // matched; one that cannot be read again is said so.
                (Ok(_), Some(url)) => match store_batches(url, &opts, sys) {
                    Ok((_, batches)) => without.add(&batches),
                    Err((_, why)) => {
                        return format!(
                            "No batch matches {} in {place}; what it holds without {} could not be read: {why}",
                            filters.join(" "),
                            if filters.len() == 1 { "it" } else { "them" }
                        );
                    }
                },
                (Ok(head), None) => {
                    let _ = state::scan_tasks(&head.root, &opts, sys, |_, batches| without.add(&batches));
                }
                (Err(_), _) => {}
            }
        }
    }
    format!(
        "No batch matches {} in {place}; without {}: {} of its {} batch(es) need attention{}.",
        filters.join(" "),
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
