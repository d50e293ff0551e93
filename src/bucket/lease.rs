//! A batch's lease in a store (ADR 008 over conditional writes): taken by a
//! conditional create, saved (heartbeat, claims, done mark) by a conditional
//! update on the ETag last seen, each save changing the body (a counter,
//! `saves`, since ETags are content hashes), and released by a conditional
//! delete. A lease whose last write is older than the timeout by the store's
//! own clock is dead; it is taken over by a conditional update naming the new
//! holder and the dead lease inside it (`taking_over`), then a settle, then
//! the recovery (`recover.rs`). A run whose conditional write is refused has
//! lost its lease: every later step refuses.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::claims::Replacing;
use super::objects::{Objects, StoreError, Written};
use super::place::Place;
use super::recover::recover;
use super::url::StoreUrl;
use crate::protocol::finished;
use crate::protocol::{Recovery, Taker};

use crate::documents::{self, LeaseDoc, Parsed};
use crate::layout::TaskPath;
use crate::sys::{Clock, Timing};
use crate::{pyjson, timefmt};

/// Who takes the lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The run's id (a fresh uuid4): only this run ever writes it at the top
    /// of a lease, so a refused write that finds it there was this run's own.
    pub run_id: String,
    /// Its host, for people (never to judge: hosts in a store are far apart).
    pub host: String,
    /// Its pid, for people.
    pub pid: i32,
    /// It replaces a finished batch (`--rerun`): a finished note does not
    /// refuse it; its files are replaced once this run has committed.
    pub rerun: bool,
    /// A repair's name (`ubunye leases takeover`), for the record of a run
    /// it takes over; None for a run.
    pub actor: Option<String>,
}

/// Why a run may not have the batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A live run holds it: its run id, and the lease's age by the store's clock.
    Busy {
        /// The holder's run id.
        run_id: String,
        /// How long ago its lease was last written.
        age: Duration,
    },
    /// A run finished it (its finished note is there).
    Finished {
        /// The run that finished it.
        run_id: String,
    },
    /// Its lease or its note cannot be read: never judged free or dead.
    Unreadable {
        /// The object.
        url: String,
        /// Why.
        why: String,
    },
}

/// The errors of the protocol over a store.
#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    /// The store did not answer as asked.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// This run's lease was taken from it (or removed): nothing it does from
    /// now on may become visible.
    #[error("{url}: this run lost its lease: {why}")]
    Lost {
        /// The lease.
        url: String,
        /// What was found instead.
        why: String,
    },
    /// The lease changed under every one of several tries.
    #[error("{url}: the lease changed under each of {tries} tries; try again")]
    Contended {
        /// The lease.
        url: String,
        /// How many tries.
        tries: usize,
    },
}

/// The result of [`acquire`].
pub enum Acquire {
    /// This run holds the lease; what it recovered of a dead run, if it took
    /// one over.
    Held(Arc<Lease>, Option<Recovery>),
    /// It may not have the batch.
    Refused(Refused),
    /// It took over a dead run's lease, then may not have the batch: most
    /// often it is finished (the dead run had marked its lease done and its
    /// commit was completed for it, or a finished note was there); or its
    /// note cannot be read. The lease was handed back; what the recovery
    /// did, and why the batch is refused.
    Recovered {
        /// What was done for the dead run.
        recovered: Recovery,
        /// Why the batch is refused.
        refused: Refused,
    },
}

/// A lease this run holds.
pub struct Lease {
    objects: Arc<dyn Objects>,
    place: Place,
    run_id: String,
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner>,
}

struct Inner {
    doc: LeaseDoc,
    etag: String,
    lost: Option<String>,
    replacing: Option<Replacing>,
}

/// The age of an object last written at `modified`, at `now` (both the
/// store's clock); None when it is ahead of `now` by more than the tolerance
/// (a clock that cannot be trusted: not judged).
pub fn age_of(modified: SystemTime, now: SystemTime, timing: &Timing) -> Option<Duration> {
    match now.duration_since(modified) {
        Ok(d) => Some(d),
        Err(e) if e.duration() <= timing.future_tolerance => Some(Duration::ZERO),
        Err(_) => None,
    }
}

fn saves_of(doc: &LeaseDoc) -> u64 {
    doc.0.get("saves").and_then(Value::as_u64).unwrap_or(0)
}

/// The lifetime a lease is judged by: its own `ttl_s`, written by its
/// holder; the disk's timeout (`heartbeat_timeout`, the peer's 15 minutes)
/// for a lease without one. A `ttl_s` that is not a positive number of
/// seconds makes the lease unreadable ([`read_doc`]), never judged.
pub fn lifetime_of(doc: &LeaseDoc, timing: &Timing) -> Duration {
    ttl_of(doc).ok().flatten().unwrap_or(timing.heartbeat_timeout)
}

/// How long a live lease may go unwritten before it is said to be stalled:
/// three of its holder's saves (each the lifetime over six, at most the
/// heartbeat), as a lease on disk is stalled after three missed heartbeats;
/// and a second more, as the store tells times to the second (a lease saved
/// just before a second turns reads a second old).
pub fn stalled_after(lifetime: Duration, timing: &Timing) -> Duration {
    timing.stalled_after.min(lifetime / 2) + Duration::from_secs(1)
}

/// The lease's `ttl_s`: None when it has none, an error when it is not a
/// positive number of seconds (at most a year).
fn ttl_of(doc: &LeaseDoc) -> Result<Option<Duration>, String> {
    const YEAR: f64 = 365.0 * 86_400.0;
    match doc.0.get("ttl_s") {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= YEAR => Ok(Some(Duration::from_secs_f64(s))),
            _ => Err(format!("its ttl_s ({v}) is not a number of seconds between 0 and a year")),
        },
    }
}

/// `ttl_s` as written: whole seconds as an integer, else a float.
fn ttl_value(ttl: Duration) -> Value {
    if ttl.subsec_nanos() == 0 { Value::from(ttl.as_secs()) } else { pyjson::float_value(ttl.as_secs_f64()) }
}

/// The lease a holder writes first, with the lifetime it chose (`ttl_s`).
fn fresh(holder: &Holder, task: &TaskPath, now: SystemTime, ttl: Duration) -> LeaseDoc {
    let mut d = LeaseDoc::new(
        &holder.run_id,
        task.as_str(),
        holder.pid,
        None,
        &holder.host,
        timefmt::iso_micros(now),
        timefmt::epoch_secs(now),
    );
    d.set("store", Value::String("s3".into()));
    d.set("saves", Value::from(1u64));
    d.set("ttl_s", ttl_value(ttl));
    d
}

/// Parse a lease object; its damage in words.
pub(crate) fn read_doc(body: &[u8], uc: &StoreUrl) -> Result<LeaseDoc, String> {
    match documents::parse_doc(body) {
        Ok(p @ Parsed::Doc(_)) => {
            let d = LeaseDoc::from_parsed(p);
            ttl_of(&d)?;
            super::claims::store_claims(&d, uc)?;
            super::claims::store_replaces(&d, uc)?;
            if let Some(t) = d.0.get("taking_over") {
                let Value::Object(m) = t else { return Err("taking_over is not a lease".into()) };
                super::claims::store_claims(&LeaseDoc(m.clone()), uc).map_err(|e| format!("taking_over: {e}"))?;
            }
            Ok(d)
        }
        Ok(Parsed::NotADoc) => Err("it is not a JSON object (a write cut short, or not a lease)".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The run a batch's finished note names, if there is a note.
fn note_run(objects: &dyn Objects, place: &Place) -> Result<Option<String>, StoreError> {
    Ok(objects.get(&place.note_key())?.map(|got| match documents::parse_doc(&got.body) {
        Ok(Parsed::Doc(m)) => LeaseDoc(m).run_id(),
        _ => String::new(),
    }))
}

/// Take the lease of `place` for `holder`: create it; or, when a dead run
/// holds it, take it over and recover that run; or say why not. Once held,
/// the finished note is read: a finished batch hands the lease back and is
/// refused.
pub fn acquire(
    objects: Arc<dyn Objects>,
    place: &Place,
    holder: &Holder,
    clock: Arc<dyn Clock>,
    timing: &Timing,
) -> Result<Acquire, BucketError> {
    const TRIES: usize = 8;
    let key = place.lease_key();
    for _ in 0..TRIES {
        let doc = fresh(holder, &place.task, clock.now(), timing.store_ttl);
        let body = doc.to_json().into_bytes();
        if let Written::Done(etag) = objects.create(&key, body)? {
            let lease = Lease::new(objects.clone(), place, holder, clock.clone(), doc, etag);
            return lease.check_finished(None, holder.rerun);
        }
        let Some(got) = objects.get(&key)? else { continue };
        let seen = match read_doc(&got.body, &place.uc) {
            Ok(d) => d,
            Err(why) => return Ok(Acquire::Refused(Refused::Unreadable { url: objects.url(&key), why })),
        };
        if seen.is_run(&holder.run_id) {
            // A create retried after it had landed: ours.
            let lease = Lease::new(objects.clone(), place, holder, clock.clone(), seen, got.etag);
            return lease.check_finished(None, holder.rerun);
        }
        let now = objects.now()?;
        // Dead past the lifetime its holder wrote in it.
        match age_of(got.modified, now, timing) {
            Some(a) if a > lifetime_of(&seen, timing) => {}
            Some(age) => return Ok(Acquire::Refused(Refused::Busy { run_id: seen.run_id(), age })),
            None => {
                return Ok(Acquire::Refused(Refused::Unreadable {
                    url: objects.url(&key),
                    why: "it was written after the store's own clock says now: its age cannot be told".into(),
                }));
            }
        }
        // The run to recover: the dead holder, or the run a dead taker was
        // recovering (it claimed nothing of its own yet).
        let target = match seen.0.get("taking_over") {
            Some(Value::Object(m)) => LeaseDoc(m.clone()),
            _ => seen.clone(),
        };
        let mut mine = fresh(holder, &place.task, clock.now(), timing.store_ttl);
        mine.set("saves", Value::from(saves_of(&seen).wrapping_add(1)));
        mine.set("taking_over", Value::Object(target.0.clone()));
        let Written::Done(etag) = objects.update(&key, mine.to_json().into_bytes(), &got.etag)? else {
            // Someone else changed it first: look again.
            continue;
        };
        let lease = Lease::new(objects.clone(), place, holder, clock.clone(), mine, etag);
        // Finished: it had marked its lease done, or its own finished note is
        // there (`noted`): its claims are the batch, never taken back.
        // Otherwise the dead run's next save is refused from here on; its
        // uploads are aborted at once (the fence), then, after the settle,
        // what it had completed is looked for and deleted.
        let noted = note_run(&*objects, place)?;
        let noted = noted.as_deref() == Some(target.run_id().as_str()) && !target.run_id().is_empty();
        let now = clock.now();
        let at = timefmt::utc_z(now);
        let taker = Taker { run_id: &holder.run_id, actor: holder.actor.as_deref(), at: &at };
        let recovered = recover(&*objects, place, &target, noted, &taker, (now, timing.settle))?;
        lease.save(|d| d.remove("taking_over"))?;
        return lease.check_finished(Some(recovered), holder.rerun);
    }
    Err(BucketError::Contended { url: objects.url(&key), tries: TRIES })
}

impl Lease {
    fn new(
        objects: Arc<dyn Objects>,
        place: &Place,
        holder: &Holder,
        clock: Arc<dyn Clock>,
        doc: LeaseDoc,
        etag: String,
    ) -> Arc<Lease> {
        Arc::new(Lease {
            objects,
            place: place.clone(),
            run_id: holder.run_id.clone(),
            clock,
            inner: Mutex::new(Inner { doc, etag, lost: None, replacing: None }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn url(&self) -> String {
        self.objects.url(&self.place.lease_key())
    }

    /// The batch's place.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// This run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The lease as last saved.
    pub fn doc(&self) -> LeaseDoc {
        self.lock().doc.clone()
    }

    /// Why this run lost its lease, once it has.
    pub fn lost(&self) -> Option<String> {
        self.lock().lost.clone()
    }

    fn lose(&self, inner: &mut Inner, why: String) -> BucketError {
        inner.lost.get_or_insert(why.clone());
        BucketError::Lost { url: self.url(), why }
    }

    /// Save the lease changed by `change`, with a new heartbeat and counter,
    /// only if it is still the one this run last saw. A refusal that finds
    /// another run's lease (or none) loses it for good.
    pub fn save(&self, change: impl FnOnce(&mut LeaseDoc)) -> Result<(), BucketError> {
        let mut g = self.lock();
        if let Some(why) = g.lost.clone() {
            return Err(BucketError::Lost { url: self.url(), why });
        }
        let mut doc = g.doc.clone();
        change(&mut doc);
        let key = self.place.lease_key();
        // Two tries: the second only after finding this run's own earlier
        // write (a retried or timed-out save that had landed).
        for _ in 0..2 {
            doc.set("saves", Value::from(saves_of(&g.doc).max(saves_of(&doc)).wrapping_add(1)));
            doc.set("heartbeat", pyjson::float_value(timefmt::epoch_secs(self.clock.now())));
            match self.objects.update(&key, doc.to_json().into_bytes(), &g.etag)? {
                Written::Done(etag) => {
                    g.doc = doc;
                    g.etag = etag;
                    return Ok(());
                }
                Written::Refused => match self.objects.get(&key)? {
                    Some(got) => match read_doc(&got.body, &self.place.uc) {
                        Ok(d) if d.is_run(&self.run_id) => {
                            g.etag = got.etag;
                            let saves = saves_of(&d);
                            g.doc.set("saves", Value::from(saves));
                        }
                        Ok(d) => return Err(self.lose(&mut g, format!("run {} holds it now", d.run_short()))),
                        Err(why) => {
                            return Err(self.lose(&mut g, format!("it was rewritten and cannot be read: {why}")));
                        }
                    },
                    None => return Err(self.lose(&mut g, self.gone())),
                },
            }
        }
        Err(self.lose(&mut g, "it changed under each save".into()))
    }

    /// Whether the lease is still the one this run last saved, read now (not
    /// the heartbeat's last word): the last look before anything becomes
    /// visible.
    pub fn still_held(&self) -> Result<(), BucketError> {
        let etag = {
            let g = self.lock();
            if let Some(why) = g.lost.clone() {
                return Err(BucketError::Lost { url: self.url(), why });
            }
            g.etag.clone()
        };
        let now = self.objects.head(&self.place.lease_key())?;
        let mut g = self.lock();
        match now {
            Some(h) if h.etag == etag || h.etag == g.etag => Ok(()),
            Some(_) => Err(self.lose(&mut g, "another run saved it since this run's last save".into())),
            None => Err(self.lose(&mut g, self.gone())),
        }
    }

    /// Why a lease that is not there any more was lost: the run whose
    /// finished note is there now (another run took it over and finished the
    /// batch), or that it was handed back by another run.
    fn gone(&self) -> String {
        match note_run(&*self.objects, &self.place) {
            Ok(Some(run)) if !run.is_empty() && run != self.run_id => {
                format!("run {} took it over and finished the batch", documents::short(&run))
            }
            _ => "it is gone: another run took it over and handed it back".into(),
        }
    }

    /// The finished batch this `--rerun` replaces, if any.
    pub fn replacing(&self) -> Option<Replacing> {
        self.lock().replacing.clone()
    }

    /// After the lease is held: a finished batch hands it back and is
    /// refused; with `rerun`, it is kept to be replaced.
    fn check_finished(self: Arc<Self>, recovered: Option<Recovery>, rerun: bool) -> Result<Acquire, BucketError> {
        let key = self.place.note_key();
        let Some(got) = self.objects.get(&key)? else { return Ok(Acquire::Held(self, recovered)) };
        let note = finished::parse(&got.body);
        if let Ok(n) = &note
            && !finished::refuses(n)
        {
            // A note that lists no outputs refuses no run (the peer's rule):
            // this run's note replaces exactly it.
            let run_id = n.run_id().unwrap_or_default().to_string();
            self.lock().replacing = Some(Replacing { etag: got.etag, run_id, claimed: Vec::new() });
            return Ok(Acquire::Held(self, recovered));
        }
        if rerun {
            match super::claims::replacing_of(&got.body, &got.etag, &self.place.uc) {
                Some(Ok(rep)) => {
                    self.lock().replacing = Some(rep);
                    return Ok(Acquire::Held(self, recovered));
                }
                Some(Err(why)) => {
                    let why = format!("a --rerun cannot replace it: it {why}");
                    return self.refuse(Refused::Unreadable { url: self.objects.url(&key), why }, recovered);
                }
                None => {}
            }
        }
        let refusal = match note {
            Ok(n) => Refused::Finished { run_id: n.run_id().unwrap_or_default().to_string() },
            Err(why) => Refused::Unreadable {
                url: self.objects.url(&key),
                why: format!("the finished note cannot be read ({why})"),
            },
        };
        self.refuse(refusal, recovered)
    }

    /// Hand the lease back and refuse the batch, telling whatever the
    /// recovery before it did.
    fn refuse(&self, refused: Refused, recovered: Option<Recovery>) -> Result<Acquire, BucketError> {
        self.release()?;
        Ok(match recovered {
            Some(recovered) => Acquire::Recovered { recovered, refused },
            None => Acquire::Refused(refused),
        })
    }

    /// Hand the lease back: delete it only if it is still this run's save.
    /// True when it was this run's to delete. A store error is tried again
    /// (three tries in all): a delete that had landed finds nothing the next
    /// time, which counts as released.
    pub fn release(&self) -> Result<bool, BucketError> {
        let mut g = self.lock();
        if g.lost.is_some() {
            return Ok(false);
        }
        let key = self.place.lease_key();
        let mut tries = 0;
        loop {
            tries += 1;
            // Some(released), or None: still this run's, saved since under
            // another ETag (a save whose answer was lost had landed).
            let attempt = self.objects.delete_if(&key, &g.etag).and_then(|deleted| match deleted {
                true => Ok(Some(true)),
                false => match self.objects.get(&key)? {
                    None => Ok(Some(true)),
                    Some(got) if read_doc(&got.body, &self.place.uc).is_ok_and(|d| d.is_run(&self.run_id)) => {
                        g.etag = got.etag;
                        Ok(None)
                    }
                    Some(_) => Ok(Some(false)),
                },
            });
            match attempt {
                Ok(Some(released)) => return Ok(released),
                Ok(None) | Err(_) if tries < 3 => {
                    if attempt.is_err() {
                        std::thread::sleep(std::time::Duration::from_millis(200));
                    }
                }
                Ok(None) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Read the lease again after a save whose answer was lost: whether it
    /// says `committed`, if it is still this run's (its ETag then adopted);
    /// lost if another run's or gone.
    pub fn reread(&self) -> Result<bool, BucketError> {
        // Read under the lock: a heartbeat's save answered meanwhile would
        // otherwise be overwritten here by the older ETag.
        let mut g = self.lock();
        let got = self.objects.get(&self.place.lease_key())?;
        match got.map(|got| (read_doc(&got.body, &self.place.uc), got.etag)) {
            Some((Ok(d), etag)) if d.is_run(&self.run_id) => {
                let committed = d.committed();
                g.doc = d;
                g.etag = etag;
                Ok(committed)
            }
            Some((Ok(d), _)) => Err(self.lose(&mut g, format!("run {} holds it now", d.run_short()))),
            Some((Err(why), _)) => Err(self.lose(&mut g, format!("it was rewritten and cannot be read: {why}"))),
            None => Err(self.lose(&mut g, self.gone())),
        }
    }
}
