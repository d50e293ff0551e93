//! `ubunye runs show <RUN>`: one run whole: its record, its batch (and the
//! command that explains it), and the end of its log.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::{DirArg, LineageArg, exit, say_err};

/// Print one run whole: its record, its batch and the end of its log.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "RUN is a run id (4 hex digits or more, or whole, as `ubunye runs` and `leases list` show it), <usecase>:<run id> (its use case named with it), or the path of its record.

Examples:
  ubunye runs show 9ecd09db -d uc
  ubunye runs show 9ecd09db -d uc --lines 200
  ubunye runs show /data/uc:9ecd09db
  ubunye runs show uc/.ubunye/lineage/demo/sales/ingest/9ecd09db-….json

The log is what `ubunye exec` kept of the command's stdout and stderr beside its record (<run id>.log, and .log.1 when it was rotated): kept for a command with no terminal, as under a scheduler.

In an object store (-d s3://bucket/prefix) a run is named by its id alone, and no log is kept."
)]
pub struct ShowArgs {
    /// The run: a run id (or its first 4+ hex digits), or its record's path.
    pub run: String,
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// How many of the log's last lines to show.
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub lines: usize,
    /// One JSON object (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &ShowArgs) -> i32 {
    // `<usecase>:<run>`: the use case named with the run, as the listings
    // of several use cases name a batch.
    let mut a = a.clone();
    if let Some((uc, run)) = super::args::split_query(&a.run) {
        if a.dir.dir != Path::new(".") {
            say_err(&format!("'{}' names its use case already: give either -d or <usecase>:<run>, not both", a.run));
            return exit::USAGE;
        }
        (a.dir.dir, a.run) = (uc.to_path_buf(), run.to_string());
    }
    let a = &a;
    if let Some(url) = a.dir.dir.to_str().filter(|d| ubunye::bucket::is_store_url(d)) {
        return in_store(a, url);
    }
    let (root, record) = match find(a) {
        Ok(x) => x,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    let bytes = match std::fs::read(&record) {
        Ok(b) => b,
        Err(e) => {
            say_err(&format!("{}: {e}", record.display()));
            return exit::REFUSED;
        }
    };
    let task = record.parent().map(task_of).unwrap_or_default();
    let log = record.with_extension("log");
    let older = ubunye::exec::tee::rotated(&log);
    // The tail reads on into the older generation when the log was just
    // rotated; the path named is the log's, or the older one's alone.
    let log = match ubunye::exec::tee::tail(&log, a.lines) {
        Some(t) if log.exists() => Log::Kept { path: log.clone(), tail: t, older: older.exists().then_some(older) },
        Some(t) => Log::Kept { path: older.clone(), tail: t, older: Some(older) },
        None => Log::None(
            "none (it had a terminal, its log was off, or it said nothing; `ubunye exec` keeps one beside the record)",
        ),
    };
    show(a, &root, &task, &record.display().to_string(), &bytes, log)
}

/// What a run's log is, as shown.
enum Log {
    /// Kept: its path (the older generation's alone when only it is
    /// there), its last lines, the older generation when there is one.
    Kept { path: PathBuf, tail: Vec<String>, older: Option<PathBuf> },
    /// None: why.
    None(&'static str),
}

/// `runs show -d s3://...`: the record named by its run id among the
/// store's records (one listing, one read). A store keeps no log.
fn in_store(a: &ShowArgs, url: &str) -> i32 {
    let q = a.run.as_str();
    if a.lineage.lineage_dir.is_some() {
        say_err(&super::store::no_lineage_dir(url));
        return exit::USAGE;
    }
    let list = format!("`ubunye runs -d {url}` lists them");
    if q.contains('/') || !ubunye::state::may_be_run_id(q) {
        say_err(&format!(
            "'{}' is not a run id: in a store, a run is named by its id (4 hex digits or more); {list}",
            ubunye::state::shorten(q)
        ));
        return exit::USAGE;
    }
    let (uc, objects) = match super::store::open(url) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let fail = |e| {
        let (code, why) = super::store::failed(e);
        say_err(&why);
        code
    };
    let mut hits = match ubunye::state::store::runs_named(&*objects, &uc, q) {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let (task, key) = match hits.len() {
        1 => hits.remove(0),
        0 => {
            say_err(&format!("no run id starting '{q}' in {uc}/.ubunye/lineage: {list}"));
            return exit::USAGE;
        }
        n => {
            let named: Vec<String> = hits.iter().take(10).map(|(t, k)| format!("{} {t}", run_of(k))).collect();
            say_err(&format!("'{q}' names {n} runs: {}. Give more of the run id.", named.join("; ")));
            return exit::USAGE;
        }
    };
    let bytes = match objects.get(&key) {
        Ok(Some(got)) => got.body,
        Ok(None) => {
            say_err(&format!("{}: it was removed while it was read", objects.url(&key)));
            return exit::REFUSED;
        }
        Err(e) => return fail(e),
    };
    let log = Log::None(
        "none (a store keeps no log of a run: its output went where `ubunye exec`'s stdout and stderr went, as a scheduler keeps them)",
    );
    show(a, Path::new(url), &task, &objects.url(&key), &bytes, log)
}

/// The run id a record's key or path names.
fn run_of(key: &str) -> &str {
    let name = key.rsplit('/').next().unwrap_or(key);
    name.strip_suffix(".json").unwrap_or(name)
}

/// One run whole, as text or JSON: its record (`bytes`, read from `record`),
/// its batch in use case `root`, and its log.
fn show(a: &ShowArgs, root: &Path, task: &str, record: &str, bytes: &[u8], log: Log) -> i32 {
    let doc: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let key = doc.get("variables").and_then(Value::as_object).and_then(|v| ubunye::state::record_key(task, v));
    if a.json {
        let (log_path, older, tail) = match &log {
            Log::Kept { path, tail, older } => (Some(path), older.as_ref(), tail.clone()),
            Log::None(_) => (None, None, Vec::new()),
        };
        crate::cli::print_json(&serde_json::json!({
            "use_case": root,
            "task": task,
            "key": key,
            "record_path": record,
            "record": doc,
            "log_path": log_path,
            "log_rotated": older,
            "log_tail": tail,
        }));
        return exit::OK;
    }
    let field = |k: &str| doc.get(k).map(text).unwrap_or_default();
    let mut out = String::new();
    let mut line = |label: &str, value: String| {
        if !value.is_empty() {
            out.push_str(&format!("{label:<9} {value}\n"));
        }
    };
    line("run", field("run_id"));
    line("task", task.to_string());
    let vars = doc.get("variables").and_then(Value::as_object).map(ubunye::state::variables_text).unwrap_or_default();
    match &key {
        Some(k) => line(
            "batch",
            format!("{}  {vars}  (`ubunye leases explain {}`)", &k[..8.min(k.len())], ubunye::suggest::batch(root, k)),
        ),
        None => line("variables", vars),
    }
    line("status", field("status"));
    line("started", field("started_at"));
    let took = doc.get("duration_sec").and_then(Value::as_f64).map(|s| format!(" (took {s:.1} s)")).unwrap_or_default();
    line("ended", if field("ended_at").is_empty() { String::new() } else { format!("{}{took}", field("ended_at")) });
    line("error", field("error"));
    for o in doc.get("outputs").and_then(Value::as_array).into_iter().flatten() {
        let g = |k: &str| o.get(k).map(text).unwrap_or_default();
        line("output", format!("{}  {}  {}", g("name"), g("format"), g("location")));
    }
    if let Some(cmd) = doc.get("command").and_then(Value::as_array) {
        let words: Vec<String> = cmd.iter().map(|w| ubunye::suggest::quote(&text(w))).collect();
        line("command", words.join(" "));
    }
    line("record", record.to_string());
    if bytes.is_empty() || doc.is_null() {
        line("note", "the record is empty or not JSON: only its name is known".into());
    }
    match log {
        Log::Kept { path, tail, older } => {
            out.push_str(&format!("\nLog (its last {} line(s) of {}):\n", tail.len(), path.display()));
            for l in &tail {
                out.push_str(&format!("  {l}\n"));
            }
            if let Some(older) = older.filter(|o| *o != path) {
                out.push_str(&format!("  (older lines: {})\n", older.display()));
            }
        }
        Log::None(why) => out.push_str(&format!("\nLog: {why}\n")),
    }
    // What a record says (its error, its command) and a folder's name are
    // quoted; neither may drive the terminal.
    crate::cli::out(&crate::report::printable(out));
    exit::OK
}

/// The use case and the record a RUN names: a record's path, or a run id
/// (or its start) among the records of the use case's lineage folder.
fn find(a: &ShowArgs) -> Result<(PathBuf, PathBuf), String> {
    let q = a.run.as_str();
    if q.contains('/') {
        let p = std::fs::canonicalize(q).map_err(|e| format!("{q}: {e}"))?;
        if p.extension().is_none_or(|x| x != "json") {
            return Err(format!("{q} is not a run record (<run id>.json in a task's lineage folder)"));
        }
        let root = ubunye::layout::use_case_above(&p).unwrap_or_else(|| a.dir.dir.clone());
        return Ok((std::fs::canonicalize(&root).unwrap_or(root), p));
    }
    if !ubunye::state::may_be_run_id(q) {
        let uc = std::fs::canonicalize(&a.dir.dir).unwrap_or_else(|_| a.dir.dir.clone());
        return Err(format!(
            "'{}' is not a run id: give 4 hex digits of it or more (`ubunye runs {}` lists them), or its record's path",
            ubunye::state::shorten(q),
            ubunye::suggest::dir(&uc)
        ));
    }
    let root = crate::cli::usecase::check(&a.dir.dir)?;
    let lineage = match &a.lineage.lineage_dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => a.dir.dir.join(d),
        None => ubunye::layout::lineage_root(&root),
    };
    let want = q.to_ascii_lowercase();
    let mut hits = Vec::new();
    let mut problems = Vec::new();
    for (task, dir) in ubunye::state::task_dirs(&lineage, &mut problems) {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(run) = name.strip_suffix(".json").filter(|r| r.to_ascii_lowercase().starts_with(&want)) {
                hits.push((run.to_string(), task.clone(), e.path()));
            }
        }
    }
    let list = format!("`ubunye runs {}` lists them", ubunye::suggest::dir(&root));
    match hits.len() {
        1 => Ok((root, hits.remove(0).2)),
        0 => Err(format!("no run id starting '{q}' in {}: {list}", lineage.display())),
        n => {
            hits.sort();
            let named: Vec<String> = hits.iter().take(10).map(|(r, t, _)| format!("{r} {t}")).collect();
            Err(format!("'{q}' names {n} runs: {}. Give more of the run id.", named.join("; ")))
        }
    }
}

/// `<lineage>/u/p/t` -> `u/p/t`.
fn task_of(dir: &Path) -> String {
    let parts: Vec<String> = dir.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    parts[parts.len().saturating_sub(3)..].join("/")
}

/// A JSON value as a line of text.
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
