//! One batch of a use case in a store, looked at closely (`leases explain`,
//! and the plan `leases takeover` shows). It only reads: lists, GETs, HEADs
//! and the bucket's clock.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{Explanation, Next};
use crate::bucket::{Objects, Place, StoreError, StoreUrl, claim_key};
use crate::documents::{self, LeaseDoc, Parsed};
use crate::layout::TaskPath;
use crate::lease::recovery_plan::{FinishedBy, PlannedFile, RecoveryPlan};
use crate::state::store::{Judged, StoreBatch, Tasks, read_tasks};
use crate::state::{Batch, State};
use crate::sys::Timing;

/// What a key prefix names in a store.
#[derive(Debug)]
pub enum Found {
    /// One batch: its row, and the batch as the state model read it (what
    /// [`explain`] tells its history from).
    One(StoreBatch, Box<Batch>),
    /// Several: the query needs more digits, or `--task`.
    Several(Vec<StoreBatch>),
    /// None; how many batches there are.
    None(usize),
}

/// The batch whose key starts with `query` (of task `task`, when given),
/// else the one whose run's id does.
/// Every lease, note and record of the task is read, as for the whole
/// list: a run record is filed to its batch by the lease or note that names
/// its run, else by its variables, so one batch is judged as the whole list
/// judges it only when every document of its task is there to file by.
/// Without `task`, the task is the one whose leases and notes alone have a
/// key that starts with `query` (one listing tells), else every task is
/// read. The count in [`Found::None`] is of the batches read.
pub fn find(
    objects: &dyn Objects,
    uc: &StoreUrl,
    query: &str,
    task: Option<&str>,
    timing: &Timing,
) -> Result<(SystemTime, Found), StoreError> {
    // A key whose lease or note is in one task only: that task is read, as
    // if it had been given (its records are filed among its own task's).
    let only = match task {
        None if !query.is_empty() && query.bytes().all(|b| b.is_ascii_hexdigit()) => {
            let mut tasks = crate::state::store::tasks_of_key(objects, uc, &query.to_ascii_lowercase())?;
            (tasks.len() == 1).then(|| tasks.remove(0))
        }
        _ => None,
    };
    let which = task.or(only.as_deref()).map_or(Tasks::All, Tasks::One);
    let crate::state::store::Read { now, judged: all, .. } = read_tasks(objects, uc, timing, which)?;
    let count = all.len();
    let in_task = |j: &Judged| task.is_none_or(|t| j.batch.task == t);
    let by_key = |j: &Judged| j.batch.key.starts_with(query);
    // Else by a run's id (or its start), as on disk: the run of its lease,
    // its note, or any of its records (a batch known only by its records,
    // its key not told by them, is named so).
    let q = query.to_ascii_lowercase();
    let by_run = |j: &Judged| {
        let runs = j.batch.named_runs().chain(j.batch.records.iter().map(|r| r.run_id.as_str()));
        runs.into_iter().any(|r| r.to_ascii_lowercase().starts_with(&q))
    };
    let mut hits: Vec<Judged> = if all.iter().any(|j| in_task(j) && by_key(j)) {
        all.into_iter().filter(|j| in_task(j) && by_key(j)).collect()
    } else if crate::state::may_be_run_id(query) {
        all.into_iter().filter(|j| in_task(j) && by_run(j)).collect()
    } else {
        Vec::new()
    };
    Ok((
        now,
        match hits.len() {
            0 => Found::None(count),
            1 => {
                let j = hits.remove(0);
                Found::One(j.row(), Box::new(j.batch))
            }
            _ => Found::Several(hits.iter().map(Judged::row).collect()),
        },
    ))
}

/// A claimed object of a dead run, and where its upload is.
struct ClaimView {
    /// The output it was claimed for.
    output: String,
    /// `s3://bucket/key`.
    url: String,
    /// Its upload is still open (started, neither completed nor aborted).
    upload_open: bool,
    /// An object has the key: the upload was completed.
    visible: bool,
}

/// Look closely at `batch` (found by [`find`], with `read`, the batch as the
/// state model read it): the report a batch on disk gets
/// ([`Explanation`]: the same state, history, plan and next step, which
/// `leases explain` prints and a repair is checked against), in the store's
/// words where a store differs (its clock, its lease's lifetime, uploads).
pub fn explain(
    objects: &dyn Objects,
    uc: &StoreUrl,
    batch: &StoreBatch,
    read: &Batch,
    timing: &Timing,
) -> Result<Explanation, StoreError> {
    let task = TaskPath::parse(&batch.task).ok();
    let place = task.map(|t| Place { uc: uc.clone(), task: t, key: batch.key.clone() });
    // The lease as the look read it; read again only when the state model
    // kept none of it (a lease dated after the store's now).
    let lease = match (&read.lease, &place) {
        (Some(l), _) => Some(l.doc.clone()),
        (None, Some(p)) if batch.has_lease() => {
            objects.get(&p.lease_key())?.and_then(|g| match documents::parse_doc(&g.body) {
                Ok(Parsed::Doc(m)) => Some(LeaseDoc(m)),
                _ => None,
            })
        }
        _ => None,
    };
    // What the next run recovers: the run a dead taker was taking over,
    // else the lease's own.
    let target = lease.as_ref().map(|d| match d.0.get("taking_over") {
        Some(Value::Object(m)) => LeaseDoc(m.clone()),
        _ => d.clone(),
    });
    let dead = matches!(batch.state, State::Dead | State::Pending | State::Orphan)
        || (batch.state == State::Damaged && batch.lease_dead == Some(true));
    let claims = match (&target, dead) {
        (Some(d), true) => claims(objects, d, read)?,
        _ => Vec::new(),
    };
    let taking_over = lease.as_ref().and_then(|d| match d.0.get("taking_over") {
        Some(Value::Object(m)) => Some(LeaseDoc(m.clone()).run_id()),
        _ => None,
    });
    let use_case = PathBuf::from(uc.to_string());
    let of = Of { batch, read, timing, claims: &claims, taking_over: taking_over.as_deref(), use_case: &use_case };
    let plans = match (&target, &place, dead) {
        (Some(t), Some(p), true) => vec![plan(objects, p, t, read, &claims, target_record(read, t))],
        _ => Vec::new(),
    };
    let verdict = batch.has_lease().then(|| of.verdict());
    Ok(Explanation {
        next: of.next(plans.first()),
        use_case,
        batch: read.clone(),
        verdict,
        plans,
        repairs: crate::bucket::repairs_of(objects, uc, &batch.task, &batch.key)?,
        history: read.history(),
        staging: Vec::new(),
    })
}

/// What the record of the run `target` names says (None: no record, or one
/// that cannot be read).
fn target_record(read: &Batch, target: &LeaseDoc) -> Option<String> {
    let run = target.run_id();
    read.records.iter().find(|r| r.run_id == run && r.damaged.is_none()).and_then(|r| r.status.clone())
}

/// What a takeover will do for `target`, the dead run the next run recovers:
/// the steps [`crate::protocol::recover`] takes in a store.
fn plan(
    objects: &dyn Objects,
    place: &Place,
    target: &LeaseDoc,
    read: &Batch,
    claims: &[ClaimView],
    record_status: Option<String>,
) -> RecoveryPlan {
    // Finished as the engine finds it: marked done, or its own note is
    // there (its commit is then not completed again).
    let noted = read.finished.as_ref().is_some_and(|f| f.run_id.as_deref() == Some(target.run_id().as_str()));
    let finished = target.committed() || (noted && !target.run_id().is_empty());
    let file = |output: &str, url: &str, present: bool, size: Option<u64>| PlannedFile {
        output: output.to_string(),
        claim: url.to_string(),
        path: Some(PathBuf::from(url)),
        present,
        size,
        unseen: false,
        folder: false,
    };
    let remove = if finished {
        // Its commit is completed: what its --rerun replaces goes.
        let replaces = read.lease.iter().flat_map(|l| &l.replaces);
        replaces.flat_map(|(o, files)| files.iter().map(move |c| file(o, &c.claim, c.present, c.size))).collect()
    } else {
        claims.iter().map(|c| file(&c.output, &c.url, c.visible, None)).collect()
    };
    let running = record_status.as_deref() == Some("running");
    RecoveryPlan {
        run_id: target.run_id(),
        finished: finished.then_some(FinishedBy::Committed),
        write_note: (finished && !noted).then(|| PathBuf::from(objects.url(&place.note_key()))),
        remove,
        staging: Vec::new(),
        restore: Vec::new(),
        // Interrupted, or, for a run that had committed, ended in success.
        mark_record: running.then(|| PathBuf::from(objects.url(&place.record_key(&target.run_id())))),
        record_status,
        record_damaged: None,
        remove_done: None,
        unrepaired: Vec::new(),
        refused: Vec::new(),
    }
}

/// What a batch's report is told from.
struct Of<'a> {
    batch: &'a StoreBatch,
    read: &'a Batch,
    timing: &'a Timing,
    claims: &'a [ClaimView],
    taking_over: Option<&'a str>,
    use_case: &'a Path,
}

impl Of<'_> {
    fn limit(&self) -> Duration {
        self.batch.ttl_secs.map_or(self.timing.heartbeat_timeout, Duration::from_secs_f64)
    }

    fn age(&self) -> Duration {
        self.batch.age_secs.map(Duration::from_secs).unwrap_or_default()
    }

    fn run(&self) -> String {
        self.batch.run_id.as_deref().map(documents::short).unwrap_or_else(|| "?".into())
    }

    fn command(&self, verb: &str) -> String {
        format!("ubunye leases {verb} {}", crate::suggest::batch(self.use_case, &self.batch.key))
    }

    /// The verdict on the lease's holder, by the store's clock.
    fn verdict(&self) -> String {
        let (age, limit) = (crate::timefmt::age(self.age()), crate::timefmt::age(self.limit()));
        let store = "it is in an object store, which runs share with nothing else, so no process can be checked:";
        if self.batch.lease_dead == Some(true) {
            format!(
                "dead: {store} its lease was last written {age} ago by the store's clock, past the {limit} it lives"
            )
        } else {
            format!("alive: {store} its lease was written {age} ago by the store's clock, within the {limit} it lives")
        }
    }

    /// What happens next, and the command that does it.
    fn next(&self, plan: Option<&RecoveryPlan>) -> Next {
        let (run, age, limit) = (self.run(), crate::timefmt::age(self.age()), crate::timefmt::age(self.limit()));
        let open = self.claims.iter().filter(|c| c.upload_open).count();
        let visible = self.claims.iter().filter(|c| c.visible).count();
        let next = |action, steps: Vec<String>, command: Option<String>| Next { action, steps, command };
        match self.batch.state {
            State::Live | State::HandedBack | State::Kept => next(
                "wait",
                vec![
                    format!("run {run} holds the batch: its lease was written {age} ago by the store's clock, within the {limit} its lease lives"),
                    format!("a run of the batch is refused while it lives; if it stops saving, its lease is dead {limit} after its last save"),
                ],
                None,
            ),
            State::Pending | State::Dead if plan.is_some_and(|p| p.finished.is_some()) => {
                let mut steps = vec![match self.taking_over {
                    Some(t) => format!(
                        "run {run} died while it took over run {}, which had marked its lease done: its uploads are the batch",
                        documents::short(t)
                    ),
                    None if self.batch.state == State::Pending => {
                        format!("run {run} is dead, and had marked its lease done: its uploads are the batch")
                    }
                    None => format!("run {run} is dead, and its finished note names it: its uploads are the batch"),
                }];
                // A repair finishes a committed run; one its own note names
                // and that did not commit is taken over, and found finished.
                let (action, verb) = if self.batch.state == State::Pending { ("finish", "finish") } else { ("takeover", "takeover") };
                let what = if plan.is_some_and(|p| p.write_note.is_some()) { "writes its finished note" } else { "keeps its files (its note is there)" };
                steps.push(format!("`{}` (or the next run) {what} and hands the lease back", self.command(verb)));
                steps.extend(plan.into_iter().flat_map(|p| p.present()).map(|f| format!("  remove {} (its --rerun replaces it)", f.claim)));
                if let Some(p) = plan.filter(|p| p.mark_record.is_some()) {
                    steps.push(format!("  mark its record {}.json as ended in success (it died before it wrote its end)", p.run_id));
                }
                next(action, steps, Some(self.command(verb)))
            }
            State::Damaged if self.batch.lease_dead != Some(true) => next("wait", vec![self.batch.note.clone()], None),
            State::Pending | State::Dead | State::Orphan | State::Damaged => {
                let mut steps = vec![format!(
                    "run {run} is dead: its lease was last written {age} ago, past the {limit} its lease lives"
                )];
                if self.batch.state == State::Damaged {
                    steps = vec![self.batch.note.clone()];
                }
                steps.push(format!("The next run of this batch, or `{}`, will:", self.command("takeover")));
                steps.push(match self.claims.len() {
                    0 => "  take back nothing: it claimed no object, so it started no upload".to_string(),
                    n => format!(
                        "  abort its {n} claimed upload(s) ({open} still open), wait {} for a completion already sent to show, then delete the {visible} claimed object(s) it had completed:",
                        crate::timefmt::age(self.timing.settle)
                    ),
                });
                // Each claim, as the takeover will find it.
                steps.extend(self.claims.iter().map(|c| match (c.visible, c.upload_open) {
                    (true, _) => format!("    delete {} (its upload was completed)", c.url),
                    (false, true) => format!("    abort the upload of {} (still open)", c.url),
                    (false, false) => format!("    skip {}: not there (its upload never completed)", c.url),
                }));
                if let Some(p) = plan.filter(|p| p.mark_record.is_some()) {
                    steps.push(format!("  mark its record {}.json interrupted", p.run_id));
                }
                next("takeover", steps, Some(self.command("takeover")))
            }
            State::Finished if self.read.finished.as_ref().is_some_and(|f| f.outputs.is_empty()) => next(
                "nothing",
                vec![format!("run {run} finished the batch; its note lists no output, so a new run of it goes ahead")],
                None,
            ),
            State::Finished if self.read.finished.is_none() => next(
                "nothing",
                vec![
                    format!("run {run}'s record says success, but no finished note is there"),
                    "only a note makes a run of the batch refused: the next run of it goes ahead".into(),
                ],
                None,
            ),
            State::Finished => next(
                "nothing",
                vec![format!("run {run} finished the batch: a run of it is refused, and `--resume` skips it")],
                None,
            ),
            State::Failed | State::Interrupted => next(
                "run-again",
                vec![
                    format!("no lease holds the batch: {}", self.batch.note),
                    "the batch is not finished: the next run of it goes ahead".into(),
                ],
                None,
            ),
            State::Unreadable => next(
                "check-the-file",
                vec![
                    format!("{} cannot be read: it is never judged free or dead", self.batch.url),
                    "look at it; remove it only if no run is writing (a run that lost its lease finds out at its next save)".into(),
                ],
                None,
            ),
        }
    }
}

/// The claims of `doc`, the dead run the next run recovers: whether each
/// was completed as the look found it (`read`: it HEADed each claim of a
/// dead lease), and whether its upload is still open (one listing of the
/// open uploads per output).
fn claims(objects: &dyn Objects, doc: &LeaseDoc, read: &Batch) -> Result<Vec<ClaimView>, StoreError> {
    let looked = |output: &str, claim: &str| {
        let lease = read.lease.as_ref()?;
        let o = lease.outputs.iter().find(|o| o.name == output)?;
        o.claims.iter().find(|c| c.claim == claim).map(|c| c.present)
    };
    let mut out = Vec::new();
    for note in doc.notes().unwrap_or_default() {
        let keys: Vec<&str> = note.claimed.iter().filter_map(|c| claim_key(objects.bucket(), c)).collect();
        let open: Vec<(String, String)> = match keys.is_empty() {
            false => objects.open_uploads(&crate::bucket::common_prefix(&keys))?,
            true => Vec::new(),
        };
        for claim in &note.claimed {
            let key = claim_key(objects.bucket(), claim);
            out.push(ClaimView {
                output: note.name.clone(),
                url: claim.clone(),
                upload_open: key.is_some_and(|k| open.iter().any(|(ok, _)| ok == k)),
                visible: match (looked(&note.name, claim), key) {
                    (Some(present), _) => present,
                    (None, Some(k)) => objects.head(k)?.is_some(),
                    (None, None) => false,
                },
            });
        }
    }
    Ok(out)
}
