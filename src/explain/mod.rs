//! `ubunye leases explain`: the triage report an expert would give for one
//! batch: what it is, who holds it and the verdict in plain words, what it
//! wrote, its history, and exactly what the next run or a repair would do, from
//! the same plan the engine acts on.

pub mod store;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::layout::{LeasePaths, TaskPath};
use crate::lease::recovery_plan::{BatchFiles, RecoveryPlan, plan_recovery};
use crate::liveness::{AgeBecause, Judgement, TouchedBy, Why};
use crate::state::staging::{self, StagingFolder};
use crate::state::{Batch, Flag, HistoryEntry, LeaseInfo, Scan, State};
use crate::timefmt;

/// The next step, and the one command to run.
#[derive(Clone, Debug, Serialize)]
pub struct Next {
    /// `takeover`, `finish`, `wait`, `end-the-process`, `check-the-file`,
    /// `run-again`, `nothing`.
    pub action: &'static str,
    /// What will happen, step by step.
    pub steps: Vec<String>,
    /// The command to run, when there is one.
    pub command: Option<String>,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// The use-case folder, as opened.
    pub use_case: PathBuf,
    /// The batch, as a whole scan reads it.
    pub batch: Batch,
    /// The verdict on the holder in plain words.
    pub verdict: Option<String>,
    /// What recovering the dead holder (or each orphan) will do.
    pub plans: Vec<RecoveryPlan>,
    /// What happens next, and the command that does it.
    pub next: Next,
    /// Past repairs of this batch (`.ubunye/repairs.jsonl`).
    pub repairs: Vec<serde_json::Value>,
    /// What its files say happened, newest first ([`Batch::history`]).
    pub history: Vec<HistoryEntry>,
    /// Staging folders of its dead runs: those their leases name, and those
    /// found in or beside an output they may have written without claiming
    /// (which no lease names, so nothing removes them), with what each holds.
    pub staging: Vec<Staging>,
}

/// A staging folder the report names.
#[derive(Clone, Debug, Serialize)]
pub struct Staging {
    /// The output it belongs to.
    pub output: String,
    /// A lease names it (a takeover removes it); else it was found beside
    /// the output, and nothing removes it.
    pub named: bool,
    /// The folder and what it holds.
    #[serde(flatten)]
    pub folder: StagingFolder,
}

fn mins(secs: f64) -> String {
    timefmt::age(std::time::Duration::from_secs_f64(secs.max(0.0)))
}

/// The verdict on a lease's holder, in one sentence.
pub fn verdict(l: &LeaseInfo, key_prefix: &str) -> String {
    let Some(j) = &l.holder.judgement else { return "cannot be judged: the lease is damaged".into() };
    let host = l.holder.host.clone().unwrap_or_else(|| "no host".into());
    let age = j.age.map(|a| a.age.as_secs_f64());
    let age_txt = age.map(mins).unwrap_or_else(|| "an unknown time".into());
    let mut s = match &j.why {
        Why::ProcessGone { pid } if *pid <= 0 => format!("dead: it names no process (pid {pid}), checked on this host"),
        Why::ProcessGone { pid } => format!("dead: process {pid} is gone, checked on this host"),
        Why::PidReused { pid, recorded, current } => format!(
            "dead: pid {pid} now belongs to another process (its start time is {current}, the lease recorded {recorded}), checked on this host"
        ),
        Why::OwnKeptLease { pid } => {
            format!("dead: process {pid} is this very process, whose earlier run failed and kept the lease")
        }
        Why::ProcessAlive { pid, state, .. } if j.stalled => {
            let how = match state {
                Some('T') | Some('t') => format!("process {pid} is stopped (state T)"),
                Some('Z') => {
                    format!("process {pid} is a zombie (state Z): it has exited and its parent has not reaped it")
                }
                Some('D') => format!("process {pid} is blocked in the kernel (state D)"),
                Some(c) => format!("process {pid} is running (state {c})"),
                None => format!("process {pid} exists"),
            };
            format!(
                "alive but stalled: {how} and has not written its lease for {age_txt}; the engine never takes over a live process: end it with `kill {pid}`, then `ubunye leases takeover {key_prefix}`"
            )
        }
        Why::ProcessAlive { pid, .. } => {
            format!("alive: process {pid} is running on this host (the same process: its start time matches)")
        }
        Why::Stale { because } => format!(
            "dead: {} its lease has not been written for {age_txt} by the disk's clock (the limit is 15 minutes)",
            because_txt(*because, &host)
        ),
        Why::Fresh { because } => format!(
            "alive: {} its lease was written {age_txt} ago by the disk's clock; it is judged dead after 15 minutes without a write",
            because_txt(*because, &host)
        ),
        Why::NoStat { .. } => "cannot be judged: the lease cannot be stat'ed, so it is never judged dead".into(),
        Why::NoDiskClock { because } => format!(
            "cannot be judged from here: {} and the disk's clock cannot be read without writing on this file system, so its age cannot be measured (by this machine's clock, which the file server's may differ from, it was written {age_txt} ago); it is never judged dead so. `ubunye leases takeover {key_prefix}` reads the disk's clock with a probe, as a run does, and takes it over only if it is dead by that clock",
            because_txt(*because, &host).trim_end_matches(';')
        ),
    };
    if let Some(a) = j.age {
        if let Some(behind) = a.clock_behind {
            let _ = write!(
                s,
                ". Its times are {} ahead of the disk's clock: the clock was set back since it last wrote, so its age cannot be told; if its holder is surely gone, it can be taken over once the clock has caught up",
                timefmt::age(behind)
            );
        } else if a.by != TouchedBy::Mtime {
            s.push_str(". Its mtime was set by hand or by a tool, so its change time was used");
        }
    }
    s
}

fn because_txt(b: AgeBecause, host: &str) -> String {
    match b {
        AgeBecause::OtherHost => format!("it was taken on another host ({host}), so its process cannot be checked from here;"),
        AgeBecause::NoDocument => "the lease is empty or not JSON (a crash inside its creation), so it names no process;".into(),
        AgeBecause::TokenUnreadable => "its process exists but its start time cannot be read (another user's?), so a reused pid cannot be ruled out;".into(),
        AgeBecause::ObjectStore => "it is in an object store, which runs share with nothing else, so no process can be checked;".into(),
    }
}

/// `512 B`, `1.2 KiB`, `-` for unknown.
pub fn size(n: Option<u64>) -> String {
    match n {
        None => "-".into(),
        Some(n) if n < 1024 => format!("{n} B"),
        Some(n) if n < 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        Some(n) => format!("{:.1} MiB", n as f64 / 1048576.0),
    }
}

/// What a takeover's plan shows beside the plan itself: the staging folders
/// with what they hold, and where the use case is.
struct Seen<'a> {
    root: &'a Path,
    staging: &'a [Staging],
}

impl Seen<'_> {
    fn named(&self, st: &str) -> String {
        let full = self.root.join(st);
        match self.staging.iter().find(|s| s.named && s.folder.path == full) {
            Some(s) => format!("{st}/ ({})", s.folder.size.map(|z| z.text()).unwrap_or_else(|| "not there".into())),
            None => format!("{st}/ (not there)"),
        }
    }

    fn beside(&self, output: &str) -> Vec<String> {
        self.staging
            .iter()
            .filter(|s| !s.named && s.output == output)
            .map(|s| {
                let rel = s.folder.path.strip_prefix(self.root).unwrap_or(&s.folder.path);
                format!("{}/ ({})", rel.display(), s.folder.size.map(|z| z.text()).unwrap_or_default())
            })
            .collect()
    }
}

fn plan_steps(p: &RecoveryPlan, paths: &LeasePaths, settle: bool, seen: &Seen<'_>) -> Vec<String> {
    let mut steps = Vec::new();
    let run = if p.run_id.is_empty() { "(no run id)".to_string() } else { crate::documents::short(&p.run_id) };
    if settle {
        steps.push(format!("rename its lease aside, hold the batch, and wait 3 s for run {run} to show it is alive (a live run that writes its lease again is left alone)"));
        steps.push(format!(
            "leave the takeover mark {}",
            paths.taken(&p.run_id).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ));
    }
    if let Some(by) = p.finished {
        let why = match by {
            crate::lease::recovery_plan::FinishedBy::Committed => "its lease says committed",
            crate::lease::recovery_plan::FinishedBy::DoneMark => "its done mark is there",
            crate::lease::recovery_plan::FinishedBy::SuccessRecord => "its record says success",
        };
        steps.push(format!("treat run {run} as finished ({why}): its appends are the batch and stay"));
        if let Some(n) = &p.write_note {
            steps.push(format!(
                "write the finished note {} for it",
                n.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ));
        }
    }
    for f in &p.remove {
        match (&f.path, f.present) {
            (None, _) => {}
            (Some(_), true) if f.folder => {}
            (Some(_), true) => steps.push(format!("remove {} ({})", f.claim, size(f.size))),
            (Some(_), false) => steps.push(format!(
                "skip {}: not there (it never landed, or was moved away{})",
                f.claim,
                if f.unseen { "; its folder is not visible either" } else { "" }
            )),
        }
    }
    for name in &p.restore {
        steps.push(format!(
            "put output {name} back as it was before the run (its new contents were swapped in, never committed)"
        ));
    }
    for st in &p.staging {
        steps.push(if p.finished.is_some() {
            format!("remove {}: the old copy of an output it replaced", seen.named(st))
        } else {
            format!("remove its staging folder {} and all it holds (nothing in it counts)", seen.named(st))
        });
    }
    let record_file = format!("{}.json", p.run_id);
    if let Some(r) = &p.mark_record {
        steps.push(format!(
            "mark its record {} interrupted",
            r.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ));
    } else if let Some(why) = &p.record_damaged {
        steps.push(format!(
            "leave its run record {record_file} as it is: it cannot be parsed ({why}); the Python engine leaves it so too"
        ));
    } else if p.finished.is_none() {
        match p.record_status.as_deref() {
            None if p.run_id.is_empty() => steps.push("(it names no run, so there is no run record to mark)".into()),
            None => steps.push(format!("(no run record to mark: {record_file} is not there)")),
            Some(s) => steps.push(format!("leave its record as it is (it says {s})")),
        }
    }
    if let Some(d) = &p.remove_done {
        steps.push(format!(
            "remove its done mark {}",
            d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ));
    }
    for out in &p.unrepaired {
        let beside = seen.beside(out);
        steps.push(if beside.is_empty() {
            format!(
                "name output {out} as possibly holding part of its batch: it claimed no file there, so nothing can be taken back here (no staging folder is in or beside it)"
            )
        } else {
            format!(
                "name output {out} as possibly holding part of its batch: it claimed no file there, so nothing can be taken back here. In or beside it: {}, a staging folder no lease names (this run's unfinished write, or another run's now): it is left as it is; check it",
                beside.join(", ")
            )
        });
    }
    for r in &p.refused {
        steps.push(format!("REFUSE: {r}; nothing is removed until that path is dealt with by hand"));
    }
    steps
}

/// Past repairs of a batch, from `<uc>/.ubunye/repairs.jsonl`.
pub fn repairs_of(root: &Path, task: &str, key: &str) -> Vec<serde_json::Value> {
    let Ok(text) =
        crate::fsx::read_regular(&root.join(".ubunye/repairs.jsonl")).map(|b| String::from_utf8_lossy(&b).into_owned())
    else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["key"] == key && v["task"] == task)
        .collect()
}

/// Build the report for one batch.
pub fn explain(scan: &Scan, batch: Batch) -> Explanation {
    // Every command it suggests runs as printed, from any folder.
    let prefix = &crate::suggest::batch(&scan.root, &batch.key);
    let task = TaskPath::parse(&batch.task).ok();
    let named = batch.variables.as_ref().map(|v| {
        crate::vars::variables_from_json(&serde_json::Value::Object(v.clone()))
            .map(|v| crate::key::names_a_batch(&v))
            .unwrap_or(true)
    });
    let beneath = crate::beneath::Beneath::new(&scan.root).ok();
    let mut plans = Vec::new();
    let mut plan_error = None;
    if let (Some(task), Some(beneath)) = (&task, &beneath) {
        let paths = LeasePaths::new(&scan.root, task, &batch.key);
        let files = BatchFiles {
            beneath,
            paths: &paths,
            lineage_dir: &scan.lineage_dir,
            task,
            busy: std::time::Duration::ZERO,
        };
        let dead_lease = batch.lease.as_deref().filter(|_| {
            matches!(batch.state, State::Dead | State::Damaged | State::Kept | State::HandedBack | State::Pending)
        });
        for l in dead_lease.into_iter().chain(&batch.orphans) {
            match plan_recovery(&files, &l.doc, named) {
                Ok(p) => plans.push(p),
                Err(u) => plan_error = Some(format!("{}: {}", u.path.display(), u.why)),
            }
        }
    }
    let verdict = batch.lease.as_ref().map(|l| verdict(l, prefix));
    let paths = task.as_ref().map(|t| LeasePaths::new(&scan.root, t, &batch.key));
    let staging_seen = staging_of(scan, &batch, &plans);
    let seen = Seen { root: &scan.root, staging: &staging_seen };
    let judgement: Option<&Judgement> = batch.lease.as_ref().and_then(|l| l.holder.judgement.as_ref());
    let next = match batch.state {
        State::Unreadable => Next {
            action: "check-the-file",
            steps: batch.unreadable.iter().map(|u| format!("its {} {} cannot be read: {}", u.kind.word(), u.path.display(), u.why)).collect::<Vec<_>>().into_iter().chain([
                "Nothing is run, taken over or removed while it cannot be read: whether its run is alive, and which files it claims, cannot be told.".to_string(),
                "Fix what stops it from being read (a permission, a file in the way), or look at it: it may list another run's files. Do not delete it by hand.".to_string(),
            ]).collect(),
            command: None,
        },
        State::Damaged if !judgement.is_some_and(|j| j.dead) => Next {
            action: "wait",
            steps: vec![
                format!("Its lease is not JSON ({}): it names no run and no claims, so whether a run holds the batch cannot be told from it.", batch.lease.as_ref().and_then(|l| l.not_json.clone()).unwrap_or_default()),
                "Every engine takes it over once it is 15 minutes old by the disk's clock, as the Python engine judges; a run that is alive writes its lease again at each heartbeat, which makes it JSON again. Then the next run of this batch, or a takeover, takes it over.".into(),
                "Do not delete it by hand: a run may be writing it.".into(),
            ],
            command: None,
        },
        State::Dead | State::Damaged | State::Orphan | State::Kept | State::HandedBack if plan_error.is_none() => {
            let mut steps = vec![format!("The next run of this batch, or `ubunye leases takeover {prefix}`, will:")];
            if let Some(l) = batch.lease.as_deref().filter(|l| l.doc.0.is_empty() && batch.state != State::Orphan) {
                steps.push(format!(
                    "  (its lease {} is empty or not JSON: it names no run and no claims, and is taken over by its age, as the Python engine takes it over)",
                    l.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                ));
            }
            for (i, p) in plans.iter().enumerate() {
                let settle = i == 0 && batch.state != State::Orphan;
                if batch.state == State::Orphan || i > 0 {
                    let l = if batch.state == State::Orphan { batch.orphans.get(i) } else { batch.orphans.get(i - 1) };
                    let file = l.and_then(|l| l.path.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    steps.push(format!("adopt the dead run's lease {file} (run {}):", run_text(&p.run_id)));
                }
                if let Some(paths) = &paths {
                    steps.extend(plan_steps(p, paths, settle, &seen).into_iter().map(|s| format!("  {s}")));
                }
            }
            if batch.state == State::Kept && batch.flags.contains(&Flag::HolderAlive) {
                let pid = batch.lease.as_ref().and_then(|l| l.holder.pid).unwrap_or(0);
                Next {
                    action: "end-the-process",
                    steps: vec![format!(
                        "The run ended and kept its lease, but its process {pid} still runs (a notebook?): the engine does not take over a lease whose process is alive. End that process, then run the takeover."
                    )]
                    .into_iter()
                    .chain(steps)
                    .collect(),
                    command: Some(format!("ubunye leases takeover {prefix}")),
                }
            } else {
                Next { action: "takeover", steps, command: Some(format!("ubunye leases takeover {prefix}")) }
            }
        }
        State::Pending if plan_error.is_none() => {
            let mut steps = vec![format!("Its run committed and died before finishing. `ubunye leases finish {prefix}` (or the next run of this batch) will:")];
            if let (Some(p), Some(paths)) = (plans.first(), &paths) {
                steps.extend(plan_steps(p, paths, true, &seen).into_iter().map(|s| format!("  {s}")));
            }
            Next { action: "finish", steps, command: Some(format!("ubunye leases finish {prefix}")) }
        }
        State::Dead | State::Damaged | State::Orphan | State::Kept | State::HandedBack | State::Pending => Next {
            action: "check-the-file",
            steps: vec![format!("Recovery cannot be planned: {}. Nothing is taken over while it cannot be read.", plan_error.clone().unwrap_or_default())],
            command: None,
        },
        State::Live if judgement.is_some_and(|j| j.stalled) => {
            let pid = batch.lease.as_ref().and_then(|l| l.holder.pid).unwrap_or(0);
            let remote = judgement.is_some_and(|j| !j.same_host);
            Next {
                action: "end-the-process",
                steps: vec![if remote {
                    "Its host has not written the lease for a while; if that host is down, it is judged dead after 15 minutes without a write, and then the next run takes it over.".to_string()
                } else {
                    format!("Its process {pid} is alive, so the engine will not take it over, however long it stalls. If it is stuck, end it (`kill {pid}`; `kill -9 {pid}` if it does not stop), then take the batch over.")
                }],
                command: (!remote).then(|| format!("kill {pid} && ubunye leases takeover {prefix}")),
            }
        }
        State::Live => Next { action: "wait", steps: vec!["A live run holds the batch: wait for it to finish. Never delete its lease: it lists that run's claimed files.".into()], command: None },
        State::Interrupted | State::Failed => Next {
            action: "run-again",
            steps: vec!["No lease holds the batch and its last run did not finish: nothing is left to take back. A new run of it goes ahead: run the batch again.".into()],
            command: None,
        },
        State::Finished => Next { action: "nothing", steps: vec![finished_next(&batch)], command: None },
    };
    // What the repair leaves, said in its plan: files it does not know, and
    // files that cannot be read but that it does not need.
    let mut next = next;
    if matches!(next.action, "takeover" | "finish" | "end-the-process") {
        for m in &batch.unknown_files {
            next.steps.push(format!(
                "  leave {} as it is: not a file this engine knows (a newer engine's?)",
                m.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ));
        }
        for u in &batch.unreadable {
            let then = if u.kind == crate::state::FileKind::Note {
                "; a run of the batch that appends is refused until it can be read"
            } else {
                ""
            };
            next.steps.push(format!(
                "  leave its {} {} as it is: it cannot be read ({}), and the takeover does not need it{then}",
                u.kind.word(),
                u.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                u.why
            ));
        }
    }
    // A plan with a REFUSE cannot go ahead: a person deals with each path
    // first, so no command is offered that would only be refused.
    if matches!(next.action, "takeover" | "finish") && plans.iter().any(|p| !p.refused.is_empty()) {
        let then = next.command.take().unwrap_or_default();
        next.action = "check-the-file";
        next.steps.push(format!(
            "Nothing is taken over while a REFUSE stands: deal with each path it names by hand (move it out of the way), then run `{then}`."
        ));
    }
    let repairs = repairs_of(&scan.root, &batch.task, &batch.key);
    let history = batch.history();
    Explanation { use_case: scan.root.clone(), batch, verdict, plans, next, repairs, history, staging: staging_seen }
}

/// `run 1a2b3c4d`, or what stands for a run that named no id.
pub fn run_text(run_id: &str) -> String {
    if run_id.is_empty() { "(no run id: an empty lease)".into() } else { crate::documents::short(run_id) }
}

/// What a new run of a finished batch does.
fn finished_next(b: &Batch) -> String {
    let Some(f) = &b.finished else {
        return "The batch is finished (its run record says success, or its run committed). It has no finished note (the batch names no variable, or it predates notes), so a new run of it goes ahead.".into();
    };
    let files: usize = f.outputs.iter().map(|o| o.1.len()).sum();
    let claimed: Vec<&str> = f.outputs.iter().filter(|o| !o.1.is_empty()).map(|o| o.0.as_str()).collect();
    let all: Vec<&str> = f.outputs.iter().map(|o| o.0.as_str()).collect();
    if f.outputs.is_empty() {
        return "The batch is finished. Its note lists no output, so a new run of it goes ahead.".into();
    }
    if claimed.is_empty() {
        return format!(
            "The batch is finished. Its run claimed no appended file (its output(s) {} overwrite, or appended nothing): a new run whose outputs all overwrite goes ahead and replaces them (it is not refused); a run that appends is refused (--rerun replaces the batch, --resume skips it).",
            all.join(", ")
        );
    }
    format!(
        "The batch is finished. A new run of it that appends is refused (--resume skips it); with --rerun it replaces the batch, removing the {files} file(s) the finished run claimed in {} once the new run has committed. A run whose outputs all overwrite goes ahead.",
        claimed.join(", ")
    )
}

/// The staging folders of a batch's dead runs: those their leases name, and
/// for each output a plan names as possibly holding part of the batch (it
/// claimed nothing), those in and beside that output's folder, as the task's
/// other files say where it is. Read only: to say what is there.
fn staging_of(scan: &Scan, b: &Batch, plans: &[RecoveryPlan]) -> Vec<Staging> {
    let mut out: Vec<Staging> = Vec::new();
    let leases: Vec<&LeaseInfo> = b.lease.as_deref().into_iter().chain(&b.orphans).collect();
    for l in &leases {
        for o in &l.outputs {
            if let Some(st) = o.staging.as_deref().filter(|st| !st.is_empty()) {
                let path = scan.root.join(st);
                let size = staging::measure(&path);
                out.push(Staging { output: o.name.clone(), named: true, folder: StagingFolder { path, size } });
            }
        }
    }
    let unrepaired: std::collections::BTreeSet<&str> =
        plans.iter().flat_map(|p| p.unrepaired.iter().map(String::as_str)).collect();
    for name in unrepaired {
        let Some(folder) = output_folder_of(scan, b, name) else { continue };
        for f in staging::around(&folder) {
            if !out.iter().any(|s| s.folder.path == f.path) {
                out.push(Staging { output: name.to_string(), named: false, folder: f });
            }
        }
    }
    out
}

/// Where an output of the batch's task is: its own claims and records first,
/// then the task's other notes and records.
fn output_folder_of(scan: &Scan, b: &Batch, output: &str) -> Option<PathBuf> {
    let own = b.lease.as_deref().into_iter().chain(&b.orphans).flat_map(|l| &l.outputs).filter(|o| o.name == output);
    for o in own {
        if let Some(c) = o.claims.first() {
            let full = crate::beneath::normpath(&scan.root.join(&c.claim));
            let mut d = full.parent()?.to_path_buf();
            while d.file_name().is_some_and(|n| n.to_string_lossy().contains('=')) {
                d.pop();
            }
            return Some(d);
        }
    }
    let leases = crate::layout::leases_root(&scan.root).join(&b.task);
    staging::output_folder(&scan.root, &leases, &scan.lineage_dir.join(&b.task), output)
}
