//! One batch of a use case in a store, looked at closely (`leases explain`,
//! and the plan `leases takeover` shows). It only reads: lists, GETs, HEADs
//! and the bucket's clock.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::judge::{Judged, StoreBatch};
use super::look::read_task;
use super::objects::{Objects, StoreError};
use super::place::Place;
use super::recover::{claim_key, uploads_of};
use super::url::StoreUrl;
use crate::documents::{self, LeaseDoc, Parsed};
use crate::layout::TaskPath;
use crate::state::{Batch, HistoryEntry, State};
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
/// Every lease, note and record of the task (of every task, without one)
/// is read, as for the whole list: a run record is filed to its batch by
/// the lease or note that names its run, else by its variables, so one
/// batch is judged as the whole list judges it only when every document of
/// its task is there to file by. The count in [`Found::None`] is of the
/// batches read.
pub fn find(
    objects: &dyn Objects,
    uc: &StoreUrl,
    query: &str,
    task: Option<&str>,
    timing: &Timing,
) -> Result<(SystemTime, Found), StoreError> {
    let (now, all) = read_task(objects, uc, timing, task)?;
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

/// A claimed file, and where it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ClaimView {
    /// The output it was claimed for.
    pub output: String,
    /// `s3://bucket/key`.
    pub url: String,
    /// Its upload id, if saved in the lease.
    pub upload_id: Option<String>,
    /// Its upload is still open (started, neither completed nor aborted).
    pub upload_open: bool,
    /// An object has the key: the upload was completed.
    pub visible: bool,
}

/// One batch in a store, closely.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Explained {
    /// Its row, as `leases list` shows it.
    pub batch: StoreBatch,
    /// The store's time it was judged at (RFC 3339).
    pub now: String,
    /// The lifetime the lease's age is held to, in seconds (its `ttl_s`, or
    /// the disk's timeout for a lease without one).
    pub timeout_secs: u64,
    /// The lease's fields, for people: who wrote it.
    pub host: Option<String>,
    /// Its pid (on its own host).
    pub pid: Option<i64>,
    /// When its run started (its own clock).
    pub started_at: Option<String>,
    /// Its save counter.
    pub saves: Option<u64>,
    /// It marked itself done (`committed`).
    pub committed: bool,
    /// A taker that died while recovering this run names it here.
    pub taking_over: Option<String>,
    /// Its claims.
    pub claims: Vec<ClaimView>,
    /// The status in the holder's (or finisher's) run record.
    pub record_status: Option<String>,
    /// What happens next, in words.
    pub next: Vec<String>,
    /// Past repairs of the batch (`.ubunye/repairs/`), oldest first.
    pub repairs: Vec<Value>,
    /// What its documents say happened, newest first, as on disk
    /// (`Batch::history`): its note and run records.
    pub history: Vec<HistoryEntry>,
    /// How many files its finished note claims; None without a note.
    pub note_files: Option<usize>,
    /// How many outputs its finished note lists; None without a note.
    pub note_outputs: Option<usize>,
}

/// Look closely at `batch` (found by [`find`] at `now`, with `read`, the
/// batch as the state model read it).
pub fn explain(
    objects: &dyn Objects,
    uc: &StoreUrl,
    batch: &StoreBatch,
    read: &Batch,
    now: SystemTime,
    timing: &Timing,
) -> Result<Explained, StoreError> {
    let task = TaskPath::parse(&batch.task).ok();
    let mut e = Explained {
        batch: batch.clone(),
        now: crate::timefmt::rfc3339(now),
        timeout_secs: batch.ttl_secs.map_or(timing.heartbeat_timeout.as_secs(), |s| s.ceil() as u64),
        host: None,
        pid: None,
        started_at: None,
        saves: None,
        committed: false,
        taking_over: None,
        claims: Vec::new(),
        record_status: None,
        next: Vec::new(),
        repairs: super::audit::repairs_of(objects, uc, &batch.task, &batch.key)?,
        history: read.history(),
        note_files: read.finished.as_ref().map(|f| f.outputs.iter().map(|o| o.1.len()).sum()),
        note_outputs: read.finished.as_ref().map(|f| f.outputs.len()),
    };
    // The lease as the look read it; read again only when the state model
    // kept none of it (a lease dated after the store's now).
    let lease = match (&read.lease, &task) {
        (Some(l), _) => Some(l.doc.clone()),
        (None, Some(t)) if batch.has_lease() => {
            let place = Place { uc: uc.clone(), task: t.clone(), key: batch.key.clone() };
            objects.get(&place.lease_key())?.and_then(|g| match documents::parse_doc(&g.body) {
                Ok(Parsed::Doc(m)) => Some(LeaseDoc(m)),
                _ => None,
            })
        }
        _ => None,
    };
    if let Some(d) = &lease {
        e.host = d.host().map(str::to_string);
        e.pid = d.pid().ok();
        e.started_at = d.started_at().map(str::to_string);
        e.saves = d.0.get("saves").and_then(Value::as_u64);
        e.taking_over = match d.0.get("taking_over") {
            Some(Value::Object(m)) => Some(LeaseDoc(m.clone()).run_id()),
            _ => None,
        };
        // What the next run recovers: the run a dead taker was taking over,
        // else the lease's own.
        let recover = match d.0.get("taking_over") {
            Some(Value::Object(m)) => LeaseDoc(m.clone()),
            _ => d.clone(),
        };
        e.committed = recover.committed();
        e.claims = claims(objects, &recover)?;
    }
    // Its run's record, as the look filed it to the batch.
    if let Some(run) = batch.run_id.as_deref().filter(|r| !r.is_empty()) {
        e.record_status = read.records.iter().find(|r| r.run_id == run).and_then(|r| r.status.clone());
    }
    e.next = next(&e, timing);
    Ok(e)
}

fn claims(objects: &dyn Objects, doc: &LeaseDoc) -> Result<Vec<ClaimView>, StoreError> {
    let mut out = Vec::new();
    for note in doc.notes().unwrap_or_default() {
        let ids = uploads_of(doc, &note.name);
        let keys: Vec<&str> = note.claimed.iter().filter_map(|c| claim_key(objects.bucket(), c)).collect();
        let open: Vec<(String, String)> = match keys.is_empty() {
            false => objects.open_uploads(&super::recover::common_prefix(&keys))?,
            true => Vec::new(),
        };
        for claim in &note.claimed {
            let key = claim_key(objects.bucket(), claim);
            out.push(ClaimView {
                output: note.name.clone(),
                url: claim.clone(),
                upload_id: ids.iter().find(|(c, _)| c == claim).map(|(_, id)| id.clone()),
                upload_open: key.is_some_and(|k| open.iter().any(|(ok, _)| ok == k)),
                visible: match key {
                    Some(k) => objects.head(k)?.is_some(),
                    None => false,
                },
            });
        }
    }
    Ok(out)
}

fn next(e: &Explained, timing: &Timing) -> Vec<String> {
    let limit = e.batch.ttl_secs.map_or(timing.heartbeat_timeout, Duration::from_secs_f64);
    let run = e.batch.run_id.as_deref().map(documents::short).unwrap_or_else(|| "?".into());
    let age = e.batch.age_secs.map(Duration::from_secs).unwrap_or_default();
    let open = e.claims.iter().filter(|c| c.upload_open).count();
    let visible = e.claims.iter().filter(|c| c.visible).count();
    match e.batch.state {
        State::Live | State::HandedBack | State::Kept => vec![
            format!(
                "run {run} holds the batch: its lease was written {} ago by the store's clock, within the {} its lease lives",
                crate::timefmt::age(age),
                crate::timefmt::age(limit)
            ),
            format!(
                "a run of the batch is refused while it lives; if it stops saving, its lease is dead {} after its last save",
                crate::timefmt::age(limit)
            ),
        ],
        State::Pending | State::Dead if e.committed => vec![
            match e.taking_over.as_deref() {
                Some(t) => format!(
                    "run {run} died while it took over run {}, which had marked its lease done: its uploads are the batch",
                    documents::short(t)
                ),
                None => format!("run {run} is dead, and had marked its lease done: its uploads are the batch"),
            },
            "the next run (or `ubunye leases takeover`) writes its finished note and hands the lease back".into(),
        ],
        State::Damaged => vec![e.batch.note.clone()],
        State::Pending | State::Dead | State::Orphan => vec![
            format!(
                "run {run} is dead: its lease was last written {} ago, past the {} its lease lives",
                crate::timefmt::age(age),
                crate::timefmt::age(limit)
            ),
            format!(
                "the next run (or `ubunye leases takeover`) aborts its {} claimed upload(s) ({open} still open), then deletes the {visible} claimed object(s) it had completed, and marks its record interrupted",
                e.claims.len()
            ),
        ],
        State::Finished if e.note_outputs == Some(0) => {
            vec![format!("run {run} finished the batch; its note lists no output, so a new run of it goes ahead")]
        }
        State::Finished if e.note_files.is_none() => vec![
            format!("run {run}'s record says success, but no finished note is there"),
            "only a note makes a run of the batch refused: the next run of it goes ahead".into(),
        ],
        State::Finished => {
            vec![format!("run {run} finished the batch: a run of it is refused, and `--resume` skips it")]
        }
        State::Failed | State::Interrupted => vec![
            format!("no lease holds the batch: {}", e.batch.note),
            "the batch is not finished: the next run of it goes ahead".into(),
        ],
        State::Unreadable => vec![
            format!("{} cannot be read: it is never judged free or dead", e.batch.url),
            "look at it; remove it only if no run is writing (a run that lost its lease finds out at its next save)"
                .into(),
        ],
    }
}
