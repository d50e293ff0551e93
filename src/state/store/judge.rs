//! A store's batches judged by the disk's state model: each lease, finished
//! note and run record read from the bucket is put into a [`state::Batch`]
//! as its file would be, and [`state::file_records`] files the records and
//! gives each batch its one state, flags and note, as a scan of a disk does.
//! What only a store has (a lease's lifetime, `ttl_s`, and its age by the
//! store's clock) is judged here: the store asks no process table, so a
//! lease is dead exactly when it is older than its lifetime.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::SystemTime;

use crate::bucket::{
    Got, Listed, Objects, StoreError, StoreUrl, age_of, claim_key, lifetime_of, read_doc, stalled_after,
};
use crate::liveness::{Age, AgeBecause, Judgement, TouchedBy, Why};
use crate::state::{
    self, Batch, ClaimInfo, Holder, LeaseInfo, Mark, OutputInfo, RecordInfo, State, UnreadableFile, note_of,
    record_key, record_of,
};
use crate::sys::{ClockSource, Now, Timing};

/// One batch of a use case in a store: a row of `leases list`, `top` and
/// `doctor`, judged as a batch on disk is.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StoreBatch {
    /// Its task.
    pub task: String,
    /// Its key.
    pub key: String,
    /// Its one state, as on disk.
    pub state: State,
    /// The run that holds it, held it, finished it, or last ran it.
    pub run_id: Option<String>,
    /// The lease's age by the store's clock, in seconds.
    pub age_secs: Option<u64>,
    /// The lifetime its lease is judged by, in seconds: the `ttl_s` its
    /// holder wrote, else the disk's timeout; None without a readable lease.
    pub ttl_secs: Option<f64>,
    /// Files its lease claims.
    pub claims: usize,
    /// Its lease object, else its note, else its newest run record.
    pub url: String,
    /// One line on its state, as `leases list` on disk words it.
    pub note: String,
    /// The `status` of its newest run record that can be read.
    pub record_status: Option<String>,
    /// Whether its lease is older than its lifetime; None without a
    /// readable lease.
    #[serde(skip)]
    pub lease_dead: Option<bool>,
}

impl StoreBatch {
    /// Whether a lease holds the batch (live, dead or waiting on its commit).
    pub fn has_lease(&self) -> bool {
        self.ttl_secs.is_some()
    }
}

/// A batch's lease and note, as listed.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub lease: Option<Listed>,
    pub note: Option<Listed>,
}

/// What a HEAD of each claimed object of a dead lease found: (URL, size
/// when there). A poller keeps what it found by the lease's key and ETag,
/// and looks again once the lease changes or [`HEADS_LAST`] has passed by
/// the store's clock (a zombie's upload completed, or an object deleted by
/// hand, change no lease).
#[derive(Debug, Default)]
pub(super) struct Heads {
    /// By lease key: its ETag and the store's time when its claims were
    /// looked at, and what was found.
    seen: HashMap<String, (String, SystemTime, Sizes)>,
}

/// Each claim's URL, and its object's size when it is there.
type Sizes = HashMap<String, Option<u64>>;

/// How long a poller trusts what a HEAD of a dead lease's claims found.
pub const HEADS_LAST: std::time::Duration = std::time::Duration::from_secs(30);

impl Heads {
    fn of(
        &mut self,
        objects: &dyn Objects,
        lease: &str,
        etag: &str,
        urls: &[&str],
        now: SystemTime,
    ) -> Result<&Sizes, StoreError> {
        let fresh =
            |(e, at, _): &(String, SystemTime, _)| e == etag && now.duration_since(*at).is_ok_and(|d| d < HEADS_LAST);
        if !self.seen.get(lease).is_some_and(fresh) {
            let mut found = HashMap::new();
            for url in urls {
                let size = match claim_key(objects.bucket(), url) {
                    Some(k) => objects.head(k)?.map(|l| l.size),
                    None => None,
                };
                found.insert(url.to_string(), size);
            }
            self.seen.insert(lease.to_string(), (etag.to_string(), now, found));
        }
        Ok(&self.seen[lease].2)
    }

    /// Forget the leases no longer listed.
    pub fn keep_only(&mut self, listed: &dyn Fn(&str) -> bool) {
        self.seen.retain(|k, _| listed(k));
    }
}

/// A batch judged, and what the state model does not keep of its lease.
pub(crate) struct Judged {
    pub batch: Batch,
    side: Side,
}

impl Judged {
    /// Its row.
    pub fn row(&self) -> StoreBatch {
        let (b, side) = (&self.batch, &self.side);
        let url = if side.url.is_empty() {
            let newest = b.records.first().map(|r| &r.path).or(b.unreadable.first().map(|u| &u.path));
            newest.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            side.url.clone()
        };
        StoreBatch {
            task: b.task.clone(),
            key: b.key.clone(),
            state: b.state,
            run_id: b.run_id.clone(),
            age_secs: side.age_secs,
            ttl_secs: side.ttl_secs,
            claims: side.claims,
            url,
            note: if b.state == State::Damaged { empty_lease_note(side) } else { b.note.clone() },
            record_status: b.records.iter().find(|r| r.damaged.is_none()).and_then(|r| r.status.clone()),
            lease_dead: side.dead,
        }
    }

    /// The batch as the state model holds it, its note as [`Judged::row`]
    /// words it: what the disk's listing renders.
    pub fn into_batch(self) -> Batch {
        let mut b = self.batch;
        if b.state == State::Damaged {
            b.note = empty_lease_note(&self.side);
        }
        b
    }

    /// Its lease as read, when it could be.
    pub fn lease_doc(&self) -> Option<&crate::documents::LeaseDoc> {
        self.batch.lease.as_ref().map(|l| &l.doc)
    }
}

/// A lease that is an empty JSON object, as a store's engine judges it: a
/// lease that names no run, alive until it is older than its lifetime.
fn empty_lease_note(side: &Side) -> String {
    let age = crate::timefmt::age(std::time::Duration::from_secs(side.age_secs.unwrap_or(0)));
    let life = crate::timefmt::age(std::time::Duration::from_secs_f64(side.ttl_secs.unwrap_or(0.0)));
    match side.dead {
        Some(true) => format!(
            "its lease is an empty JSON object (it names no run), written {age} ago, past the {life} it lives: the next run (or a takeover) takes it over"
        ),
        _ => format!(
            "its lease is an empty JSON object (it names no run), written {age} ago: taken over once it is older than the {life} it lives"
        ),
    }
}

/// What the state model does not keep of a store's lease.
#[derive(Clone, Default)]
struct Side {
    dead: Option<bool>,
    age_secs: Option<u64>,
    ttl_secs: Option<f64>,
    claims: usize,
    url: String,
}

/// Every batch `batches` and `records` name, judged at the store's `now`
/// (`read`: each listed object's body by key, None for one gone since the
/// listing), in task and key order.
#[allow(clippy::too_many_arguments)]
pub(super) fn judge_all(
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
    batches: BTreeMap<(String, String), Found>,
    records: Vec<(String, Listed)>,
    read: &mut HashMap<String, Option<Got>>,
    now: SystemTime,
    heads: &mut Heads,
) -> Result<Vec<Judged>, StoreError> {
    type Records = Vec<Result<(RecordInfo, Option<String>), UnreadableFile>>;
    let mut tasks: BTreeMap<String, (Vec<Batch>, Records)> = BTreeMap::new();
    let mut sides: HashMap<(String, String), Side> = HashMap::new();
    for ((task, key), found) in batches {
        let mut b = Batch::new(&task, &key);
        let mut side = Side::default();
        // A lease or note under a folder that is not a task: no engine reads
        // it, and no repair can name it. Said, never judged free or dead.
        if let Err(why) = crate::layout::TaskPath::parse(&task) {
            let l = found.lease.as_ref().or(found.note.as_ref()).expect("a listed batch has a lease or a note");
            side.url = objects.url(&l.key);
            let why =
                format!("it is under '{task}', which is not <usecase>/<package>/<task> ({why}): no engine reads it");
            b.unreadable.push(UnreadableFile::misplaced(Path::new(&side.url), why));
            tasks.entry(task.clone()).or_default().0.push(b);
            sides.insert((task, key), side);
            continue;
        }
        if let Some(l) = &found.lease
            && let Some(got) = read.remove(&l.key).flatten()
        {
            side.url = objects.url(&l.key);
            lease_into(&mut b, &mut side, objects, uc, timing, (&l.key, &got), now, heads)?;
        }
        if let Some(l) = &found.note
            && let Some(got) = read.remove(&l.key).flatten()
        {
            let url = objects.url(&l.key);
            match note_of(&got.body, Path::new(&url)) {
                Ok(f) => b.finished = Some(Box::new(f)),
                Err(u) => b.unreadable.push(u),
            }
            if side.url.is_empty() {
                side.url = url;
            }
        }
        // Its lease released and its note gone between the list and the
        // reads: the batch is judged by its records alone, if it has any.
        if !side.url.is_empty() {
            tasks.entry(task.clone()).or_default().0.push(b);
            sides.insert((task, key), side);
        }
    }
    for (task, l) in records {
        let Some(got) = read.remove(&l.key).flatten() else { continue };
        let url = objects.url(&l.key);
        // A record that cannot be read is a damaged one here: a store's
        // recovery never reads a dead run's record to decide what to take
        // back (it marks the record only if it can parse it), so such a
        // record decides nothing and is said beside the state.
        let r = record_of(&got.body, Path::new(&url)).unwrap_or_else(|u| damaged_record(&u));
        let hashed = r.variables.as_ref().and_then(|v| record_key(&task, v));
        tasks.entry(task).or_default().1.push(Ok((r, hashed)));
    }
    let now = Now { time: now, source: ClockSource::Store };
    let mut out = Vec::new();
    for (task, (batches, records)) in tasks {
        for b in state::file_records(&task, batches, records, now) {
            let side = sides.remove(&(b.task.clone(), b.key.clone())).unwrap_or_default();
            out.push(Judged { batch: b, side });
        }
    }
    out.sort_by(|a, b| (&a.batch.task, &a.batch.key).cmp(&(&b.batch.task, &b.batch.key)));
    Ok(out)
}

/// A run record that cannot be read, as a record whose status is not known.
fn damaged_record(u: &UnreadableFile) -> RecordInfo {
    RecordInfo {
        run_id: u.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        path: u.path.clone(),
        status: None,
        started_at: None,
        ended_at: None,
        error: None,
        backend: None,
        damaged: Some(u.why.clone()),
        variables: None,
        locations: Vec::new(),
    }
}

/// Read a lease object into `b` as the state model reads a lease file: its
/// holder judged by its age against its lifetime, by the store's clock. A
/// lease that cannot be read, or is dated after the store's now, is
/// unreadable: never judged free or dead.
#[allow(clippy::too_many_arguments)]
fn lease_into(
    b: &mut Batch,
    side: &mut Side,
    objects: &dyn Objects,
    uc: &StoreUrl,
    timing: &Timing,
    (key, got): (&str, &Got),
    now: SystemTime,
    heads: &mut Heads,
) -> Result<(), StoreError> {
    let path = Path::new(&side.url).to_path_buf();
    let doc = match read_doc(&got.body, uc) {
        Ok(d) => d,
        Err(why) => {
            b.unreadable.push(UnreadableFile::new(&path, why));
            return Ok(());
        }
    };
    let lifetime = lifetime_of(&doc, timing);
    side.ttl_secs = Some(lifetime.as_secs_f64());
    let Some(age) = age_of(got.modified, now, timing) else {
        let why = "it was written after the store's clock says now: its age cannot be told";
        b.unreadable.push(UnreadableFile::new(&path, why));
        return Ok(());
    };
    side.age_secs = Some(age.as_secs());
    let dead = age > lifetime;
    side.dead = Some(dead);
    // A taker that died while it recovered a dead run: its lease wraps
    // that run's, which is what the next run recovers (its claims, its
    // commit); the taker is the holder shown.
    let target = match doc.0.get("taking_over") {
        Some(serde_json::Value::Object(m)) => crate::documents::LeaseDoc(m.clone()),
        _ => doc.clone(),
    };
    side.claims = target.claim_count();
    // The run it was taking over is named by the batch, as a disk's takeover
    // mark names it: its records are the batch's (filed by run, not only by
    // variables, which a record may mask).
    if doc.0.contains_key("taking_over") && !target.run_id().is_empty() && target.run_id() != doc.run_id() {
        let mark = Mark { run_id: target.run_id(), path: path.clone(), time: Some(got.modified) };
        b.tombstones.push(mark);
    }
    let notes = target.notes().unwrap_or_default();
    let replaces = target.replaces().unwrap_or_default();
    // Whether a claimed object is there matters once its run is gone (what
    // the next run takes back); a live run's are not looked at.
    let urls: Vec<&str> = notes
        .iter()
        .flat_map(|n| n.claimed.iter())
        .chain(replaces.iter().flat_map(|(_, f)| f.iter()))
        .map(String::as_str)
        .collect();
    let none = HashMap::new();
    let there = if dead { heads.of(objects, key, &got.etag, &urls, now)? } else { &none };
    let claim = |c: &String| {
        let size = there.get(c.as_str()).copied().flatten();
        ClaimInfo { claim: c.clone(), present: size.is_some(), size, folder: false }
    };
    let outputs = notes
        .iter()
        .map(|n| OutputInfo {
            name: n.name.clone(),
            appends: n.appends,
            exact: n.exact,
            state: n.state.clone(),
            staging: n.staging.clone(),
            staging_exists: false,
            claims: n.claimed.iter().map(claim).collect(),
        })
        .collect();
    let replaces = replaces.iter().map(|(o, f)| (o.clone(), f.iter().map(claim).collect())).collect();
    let because = AgeBecause::ObjectStore;
    let holder = Holder {
        run_id: doc.run_id(),
        pid: doc.pid().ok().filter(|_| doc.0.contains_key("pid")),
        host: doc.host().map(str::to_string),
        started_at: doc.started_at().map(str::to_string),
        heartbeat: doc.heartbeat(),
        judgement: Some(Judgement {
            dead,
            same_host: false,
            why: if dead { Why::Stale { because } } else { Why::Fresh { because } },
            age: Some(Age { age, by: TouchedBy::Mtime, clock: ClockSource::Store, clock_behind: None }),
            stalled: !dead && age > stalled_after(lifetime, timing),
        }),
    };
    b.lease = Some(Box::new(LeaseInfo {
        path,
        holder,
        committed: target.committed(),
        // A store's runs never keep a lease, and its engine takes a dead
        // one over whatever `kept` says (a disk's field, in a lease copied
        // into a bucket).
        kept: false,
        outputs,
        replaces,
        tombstoned: false,
        refused_paths: Vec::new(),
        times: None,
        doc,
        not_json: None,
    }));
    Ok(())
}
