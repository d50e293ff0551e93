//! The triage report (`ubunye::explain::Explanation`) as text: what `ubunye
//! leases explain` prints and the dashboard's detail pane shows.

use std::fmt::Write as _;

use ubunye::explain::{Explanation, run_text, size};
use ubunye::state::{Batch, Happened, HistoryEntry, LeaseInfo};
use ubunye::sys::ClockSource;
use ubunye::timefmt;

/// History lines shown in text; `--json` has them all.
const HISTORY_SHOWN: usize = 20;

/// Below 70 columns or so the time goes (`--json` has it), so that the
/// detail wraps in a column of at least 24.
const HISTORY_FIT: crate::console::table::Fit =
    crate::console::table::Fit { steps: &[crate::console::table::Step::Drop("WHEN")], last_min: 24 };

/// The report as text, its history table laid out for `width` columns (a
/// terminal's; None: piped, or the dashboard's pane, which wraps itself).
pub fn render(e: &Explanation, width: Option<usize>) -> String {
    let b = &e.batch;
    let mut o = String::new();
    let _ = writeln!(o, "{}  {}", b.task, b.variables_text().unwrap_or_else(|| unknown_variables(b)));
    let flags: Vec<String> = b
        .flags
        .iter()
        .map(|f| serde_json::to_value(f).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default())
        .collect();
    let _ = writeln!(
        o,
        "key {}   state {}{}",
        b.key,
        b.state.word().to_uppercase(),
        if flags.is_empty() { String::new() } else { format!(" ({})", flags.join(", ")) }
    );
    let _ = writeln!(o, "{}", b.note);
    if let Some(l) = &b.lease {
        holder(&mut o, l, e.verdict.as_deref());
    }
    wrote(&mut o, b, e);
    let _ = writeln!(o, "\nHistory");
    o.push_str(&history(b, e, width));
    let _ = writeln!(o, "\nWhat happens next");
    for s in &e.next.steps {
        let _ = writeln!(o, "  {s}");
    }
    if let Some(c) = &e.next.command {
        let _ = writeln!(o, "\n  Run:  {c}");
    }
    super::printable(o)
}

/// Why the variables are not shown.
fn unknown_variables(b: &Batch) -> String {
    match b.records.iter().find(|r| r.damaged.is_some()) {
        Some(r) => format!("(variables not known: its run record {}.json cannot be parsed)", r.run_id),
        None => "(variables not known: no run record names them)".into(),
    }
}

/// "Who holds it".
fn holder(o: &mut String, l: &LeaseInfo, verdict: Option<&str>) {
    let _ = writeln!(o, "\nWho holds it");
    if l.doc.0.is_empty() {
        let what = if std::fs::metadata(&l.path).is_ok_and(|m| m.len() == 0) {
            "an empty lease (no run, pid or host written: a crash as it was created)"
        } else {
            "a lease that is not JSON (no run, pid or host can be read from it)"
        };
        let _ = writeln!(o, "  lease     {what}");
    } else {
        let run = if l.holder.run_id.is_empty() { "(none named)" } else { &l.holder.run_id };
        let _ = writeln!(o, "  run       {run}");
        let this = l
            .holder
            .judgement
            .as_ref()
            .map(|j| match (j.same_host, j.age.map(|a| a.clock)) {
                (true, _) => " (this host)",
                // A store's holder is judged by its lease's age alone,
                // wherever it runs: which host it is is not looked at.
                (false, Some(ClockSource::Store)) => "",
                (false, _) => " (another host)",
            })
            .unwrap_or("");
        let process = match (l.holder.pid, &l.holder.host) {
            (Some(p), Some(h)) => format!("{p} on {h}{this}"),
            (Some(p), None) => format!("{p} (no host written)"),
            (None, Some(h)) => format!("(no pid written) on {h}{this}"),
            (None, None) => "(no pid or host written)".into(),
        };
        let _ = writeln!(o, "  process   {process}");
        let _ = writeln!(o, "  started   {}", l.holder.started_at.clone().unwrap_or_else(|| "(unknown)".into()));
    }
    if let Some(a) = l.holder.judgement.as_ref().and_then(|j| j.age) {
        let clock = match a.clock {
            ClockSource::Disk => "the disk's clock",
            // This machine's clock, which stamps a local file system's times.
            ClockSource::LocalFileSystem => "the disk's clock",
            ClockSource::Local => "this machine's clock (the disk's cannot be read without writing to it)",
            ClockSource::Store => "the store's clock",
        };
        let _ = writeln!(o, "  lease     written {} ago by {clock}", timefmt::age(a.age));
    }
    let _ = writeln!(o, "  file      {}", l.path.display());
    if let Some(v) = verdict {
        let _ = writeln!(o, "  verdict   {v}");
    }
}

/// "What it wrote": its lease's and each orphan's outputs.
fn wrote(o: &mut String, b: &Batch, e: &Explanation) {
    let leases: Vec<&LeaseInfo> = b.lease.as_deref().into_iter().chain(&b.orphans).collect();
    if leases.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nWhat it wrote");
    for l in leases {
        let orphan = !b.lease.as_deref().is_some_and(|x| std::ptr::eq(x, l));
        if orphan {
            let pid = l.holder.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
            let _ = writeln!(
                o,
                "  dead run's lease {} (run {}{pid}):",
                l.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                run_text(&l.holder.run_id)
            );
        }
        if l.outputs.is_empty() && l.replaces.is_empty() {
            let _ = writeln!(o, "  (no output yet)");
        }
        for out in &l.outputs {
            let mode = if out.appends { "append" } else { "overwrite" };
            let exact = if out.exact { "claimed" } else { "NOT claimed: cannot be taken back" };
            let _ = writeln!(o, "  {}  {mode}, {exact}, {}", out.name, out.state.clone().unwrap_or_default());
            if let Some(st) = &out.staging {
                let held = e
                    .staging
                    .iter()
                    .find(|s| s.named && s.folder.path.ends_with(st))
                    .and_then(|s| s.folder.size)
                    .map(|z| z.text());
                let _ = writeln!(
                    o,
                    "    staging {st} ({})",
                    match held {
                        Some(h) if out.staging_exists => format!("there: {h}"),
                        _ if out.staging_exists => "there".into(),
                        _ => "not there".into(),
                    }
                );
            }
            for c in &out.claims {
                let _ = writeln!(
                    o,
                    "    {}  {}",
                    c.claim,
                    match (c.present, c.folder) {
                        (true, true) => "a folder, where a claimed file should be".to_string(),
                        (true, false) => format!("present, {}", size(c.size)),
                        (false, _) => "missing".into(),
                    }
                );
            }
        }
        for (out, files) in &l.replaces {
            let _ = writeln!(o, "  {out}  replaces (files of the run it replaced, removed after commit)");
            for c in files {
                let _ = writeln!(
                    o,
                    "    {}  {}",
                    c.claim,
                    if c.present { format!("present, {}", size(c.size)) } else { "gone".into() }
                );
            }
        }
    }
    for s in e.staging.iter().filter(|s| !s.named) {
        let rel = s.folder.path.strip_prefix(&e.use_case).unwrap_or(&s.folder.path);
        let _ = writeln!(
            o,
            "  {}  staging folder {}/ in or beside it, named by no lease ({}): left as it is",
            s.output,
            rel.display(),
            s.folder.size.map(|z| z.text()).unwrap_or_default()
        );
    }
}

/// What a batch's history table is made of, on disk or in a store.
pub struct HistoryOf<'a> {
    /// How many files its finished note claims; None without a note.
    pub note_files: Option<usize>,
    /// A lease holds the batch.
    pub has_lease: bool,
    /// Newest first.
    pub history: &'a [HistoryEntry],
    /// Past repairs, oldest first (audit entries).
    pub repairs: &'a [serde_json::Value],
}

fn history(b: &Batch, e: &Explanation, width: Option<usize>) -> String {
    let of = HistoryOf {
        note_files: b.finished.as_ref().map(|f| f.outputs.iter().map(|x| x.1.len()).sum()),
        has_lease: b.lease.is_some(),
        history: &e.history,
        repairs: &e.repairs,
    };
    let mut o = history_table(&of, width);
    // A file that cannot be read, after the table: its path is pasted, so
    // it is never broken inside a column.
    for u in &b.unreadable {
        let _ = writeln!(o, "  unreadable {} {}: {}", u.kind.word(), u.path.display(), u.why);
    }
    o
}

/// The history as a table: what, which run, when (UTC, to the second;
/// `--json` has the stored times), and the rest, which wraps inside its
/// column (an error is read whole).
pub fn history_table(h: &HistoryOf, width: Option<usize>) -> String {
    let mut rows: Vec<[String; 4]> = Vec::new();
    if h.note_files.is_none() {
        rows.push(["finished".into(), String::new(), String::new(), "no note".into()]);
    }
    rows.extend(h.history.iter().take(HISTORY_SHOWN).map(|e| history_row(h, e)));
    if h.history.len() > HISTORY_SHOWN {
        let more = format!("{} more (--json lists them all)", h.history.len() - HISTORY_SHOWN);
        rows.push(["…".into(), String::new(), String::new(), more]);
    }
    for r in h.repairs {
        let what = format!(
            "{} by {}@{}: {}",
            r["command"].as_str().unwrap_or(""),
            r["user"].as_str().unwrap_or("?"),
            r["host"].as_str().unwrap_or("?"),
            r["outcome"].as_str().unwrap_or("")
        );
        rows.push(["repair".into(), String::new(), when(r["time"].as_str()), what]);
    }
    let lines: Vec<crate::console::table::Line> =
        rows.into_iter().map(|r| crate::console::table::Line { cells: r.into(), colour: None }).collect();
    crate::console::grid::render(
        &["WHAT", "RUN", "WHEN", "DETAIL"],
        &lines,
        width,
        &HISTORY_FIT,
        crate::console::grid::Last::Wrap,
        2,
    )
}

/// A stored time as `2026-12-05T05:39:34Z`; as written when it is not a time.
fn when(t: Option<&str>) -> String {
    let t = t.unwrap_or("");
    timefmt::parse(t).map(timefmt::utc_z).unwrap_or_else(|| t.to_string())
}

/// One history row: what, run, when, the rest.
fn history_row(of: &HistoryOf, h: &HistoryEntry) -> [String; 4] {
    let run = h.run_id.as_deref().map(run_text).unwrap_or_default();
    let time = when(h.time.as_deref());
    let (what, rest) = match h.what {
        Happened::Finished => ("finished", format!("{} claimed file(s)", of.note_files.unwrap_or(0))),
        Happened::TakenOver => match &h.run_id {
            Some(_) => ("takeover", "taken over".into()),
            None => ("takeover", format!("an empty lease (it named no run) was taken over ({})", h.file)),
        },
        Happened::DoneMark => {
            ("done mark", if of.has_lease { "with its lease" } else { "left without a lease" }.into())
        }
        Happened::Record => match &h.damaged {
            Some(why) => ("record", format!("UNREADABLE: {} cannot be parsed: {why}", h.file)),
            None => (
                "record",
                format!(
                    "{}{}",
                    h.status.clone().unwrap_or_else(|| "(none)".into()),
                    h.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
                ),
            ),
        },
        Happened::UnknownFile => (
            "file",
            format!(
                "{}: not a file this engine knows (a newer engine's? ubunye-engine 0.9.1 leaves <key>.tried after a failed run that committed a keyed Delta write); left as it is",
                h.file
            ),
        ),
    };
    let time = if matches!(h.what, Happened::DoneMark) || h.damaged.is_some() { String::new() } else { time };
    [what.into(), run, time, rest]
}
