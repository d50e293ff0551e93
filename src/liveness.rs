//! Is the run holding a lease dead? The peer's rules (FORMAT.md §6), with the
//! reasons kept so that people can be told why, plus the `stalled` flag.
//!
//! 1. Same host (the lease's `host` equals this host's string): a `kept` lease of
//!    this very process is dead; a pid with no process is dead (pid <= 0 too); a
//!    process whose start token differs from the recorded one is a reused pid, so
//!    dead; a process whose token cannot be read while one was recorded goes to the
//!    age test; otherwise the run is alive, however long since it wrote.
//! 2. Age test (another host, an empty or unparsable lease, or the unreadable
//!    token): dead if and only if the disk's clock is more than 900 s past the
//!    lease's last touch. A lease that cannot be stat'ed is never dead.
//!
//! The last touch is the lease's mtime, as the peer reads it, with one guard of
//! our own (docs/differences.md): an mtime more than a minute ahead of the disk's
//! clock, or more than a day before the lease's own `heartbeat`, was set by hand
//! or by a tool, not by a save; then the inode's change time (which no tool can
//! set) is used instead, so such a lease neither looks alive for ever nor dead at
//! once.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::documents::{Damage, LeaseDoc};
use crate::sys::{ClockSource, Now, PidProbe, Sys};

/// A lease file's times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileTimes {
    /// The last modification: what a save sets, and what the peer judges the age by.
    pub mtime: SystemTime,
    /// The inode's last change, which no tool can set: used when the mtime is
    /// not trusted.
    pub ctime: SystemTime,
}

impl FileTimes {
    /// The times in a file's metadata.
    pub fn of(meta: &std::fs::Metadata) -> FileTimes {
        use std::os::unix::fs::MetadataExt;
        let ctime = SystemTime::UNIX_EPOCH
            .checked_add(Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec().clamp(0, 999_999_999) as u32))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        FileTimes { mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), ctime }
    }
}

/// Which time was taken as the lease's last touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TouchedBy {
    /// The mtime, as the peer takes it.
    Mtime,
    /// The mtime was ahead of the disk clock: not trusted.
    CtimeFutureMtime,
    /// The mtime was far before the lease's own heartbeat: not trusted.
    CtimePastMtime,
}

/// How long since the lease was last written, by the disk's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Age {
    /// Zero when the last touch is ahead of the clock.
    #[serde(with = "secs")]
    pub age: Duration,
    /// Which time was taken as the last touch.
    pub by: TouchedBy,
    /// Which clock said "now".
    pub clock: ClockSource,
    /// Set when even the change time is ahead of the disk's clock by more than
    /// the timeout: the clock was set back since the holder last saved. How
    /// long ago that was cannot be told from one look, so such a lease is never
    /// judged dead by age; people are shown this (`clock-behind`) instead.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_secs")]
    pub clock_behind: Option<Duration>,
}

fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => secs::serialize(d, s),
        None => s.serialize_none(),
    }
}

mod secs {
    pub fn serialize<S: serde::Serializer>(d: &std::time::Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
    }
}

/// Why the age test was used instead of the process table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgeBecause {
    /// The lease names another host (or none).
    OtherHost,
    /// The lease is empty or not a JSON object: it names no process.
    NoDocument,
    /// The process exists, a start token was recorded, and the current one cannot
    /// be read (another user's process): a reused pid cannot be ruled out.
    TokenUnreadable,
    /// The lease is in an object store: runs share only the bucket, so no
    /// process table can be asked; its lifetime (`ttl_s`) decides.
    ObjectStore,
}

/// The verdict, with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Why {
    /// Same host, `kept`, and the pid is this very process: its earlier run failed.
    OwnKeptLease {
        /// The lease's pid: this process's.
        pid: i64,
    },
    /// Same host, and no process has the pid (or the pid is not positive).
    ProcessGone {
        /// The lease's pid.
        pid: i64,
    },
    /// Same host, the pid is in use by another process (its start token differs).
    PidReused {
        /// The lease's pid.
        pid: i64,
        /// The start token the lease recorded (`pid_started`).
        recorded: String,
        /// The start token of the process that has the pid now.
        current: String,
    },
    /// Same host, and the process is running (the same one, by its start token).
    ProcessAlive {
        /// The lease's pid.
        pid: i64,
        /// What `kill(pid, 0)` said: it exists, or it is another user's.
        probe: PidProbe,
        /// Its state letter from `/proc/<pid>/stat` (R, S, D, T, Z, ...).
        state: Option<char>,
    },
    /// The age test said dead (older than the timeout).
    Stale {
        /// Why the age test was used.
        because: AgeBecause,
    },
    /// The age test said alive (not older than the timeout).
    Fresh {
        /// Why the age test was used.
        because: AgeBecause,
    },
    /// The lease could not be stat'ed: never dead.
    NoStat {
        /// Why the age test was used.
        because: AgeBecause,
    },
    /// Its age cannot be measured: the disk's clock could not be read (a file
    /// server's, looked at without writing). Never dead: a run or a takeover
    /// reads the disk's clock with a probe and judges it then.
    NoDiskClock {
        /// Why the age test was used.
        because: AgeBecause,
    },
}

/// Whether the holder of a lease is dead, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// The holder is dead: the next run (or a takeover) takes the lease over.
    pub dead: bool,
    /// The lease names this host, so the process table was asked.
    pub same_host: bool,
    /// The reason (`reason` in JSON), with what it found.
    #[serde(flatten)]
    pub why: Why,
    /// The lease's age, when it was computed (always by the age test; on request
    /// otherwise).
    pub age: Option<Age>,
    /// Judged alive, yet the lease has not been written for longer than three
    /// heartbeats: the holder may be stuck. The peer keeps such a lease on the
    /// same host for ever; people must see it.
    pub stalled: bool,
}

/// The last touch of a lease and its age by `now`.
pub fn age_of(times: FileTimes, heartbeat: Option<f64>, now: Now, sys: &Sys) -> Age {
    let t = &sys.timing;
    let mut by = TouchedBy::Mtime;
    let mut touched = times.mtime;
    if times.mtime > now.time + t.future_tolerance {
        by = TouchedBy::CtimeFutureMtime;
        touched = times.ctime;
    } else if let Some(hb) = heartbeat.and_then(crate::timefmt::from_epoch_secs)
        && times.mtime + Duration::from_secs(86_400) < hb
    {
        by = TouchedBy::CtimePastMtime;
        touched = times.ctime;
    }
    let age = now.time.duration_since(touched).unwrap_or(Duration::ZERO);
    let clock_behind = touched.duration_since(now.time).ok().filter(|ahead| *ahead > t.heartbeat_timeout);
    Age { age, by, clock: now.source, clock_behind }
}

/// Judge the holder of a lease, as the peer's `_dead` does.
///
/// `times` is the lease file's stat (None when it failed). `now` reads the disk's
/// clock; it is called only when an age is needed, unless `want_age` asks for the
/// age (and so the `stalled` flag) in every case. A lease the peer would crash on
/// (a pid that is not a number) is damage, never judged.
pub fn judge(
    doc: &LeaseDoc,
    times: Option<FileTimes>,
    now: &mut dyn FnMut() -> Now,
    sys: &Sys,
    want_age: bool,
) -> Result<Judgement, Damage> {
    let heartbeat = doc.heartbeat();
    let age_now =
        |times: Option<FileTimes>, now: &mut dyn FnMut() -> Now| times.map(|ft| age_of(ft, heartbeat, now(), sys));
    let same_host = !doc.is_empty() && doc.host_is(&sys.host);
    let because = if doc.is_empty() {
        AgeBecause::NoDocument
    } else if !same_host {
        AgeBecause::OtherHost
    } else {
        let pid = doc.pid()?;
        let done = |dead: bool, why: Why, age: Option<Age>| {
            let stalled = !dead && age.is_some_and(|a| a.age > sys.timing.stalled_after);
            Ok(Judgement { dead, same_host, why, age, stalled })
        };
        let maybe_age = |now: &mut dyn FnMut() -> Now| {
            if want_age { times.map(|ft| age_of(ft, heartbeat, now(), sys)) } else { None }
        };
        if doc.kept() && pid == i64::from(sys.pid) {
            return done(true, Why::OwnKeptLease { pid }, maybe_age(now));
        }
        let Ok(pid32) = i32::try_from(pid) else {
            if pid <= 0 {
                return done(true, Why::ProcessGone { pid }, maybe_age(now));
            }
            return Err(Damage::BadField { field: "pid".into(), what: format!("{pid}, not a possible process id") });
        };
        if pid32 <= 0 {
            return done(true, Why::ProcessGone { pid }, maybe_age(now));
        }
        let probe = sys.procs.probe(pid32);
        if probe == PidProbe::Gone {
            return done(true, Why::ProcessGone { pid }, maybe_age(now));
        }
        let current = sys.procs.start_token(pid32);
        let recorded = doc.pid_started();
        match (recorded, &current) {
            (Some(rec), Some(cur)) if rec != &Value::String(cur.clone()) => {
                let recorded = crate::documents::py_str(Some(rec), "None");
                return done(true, Why::PidReused { pid, recorded, current: cur.clone() }, maybe_age(now));
            }
            (Some(rec), None) if crate::pyjson::truthy(rec) => AgeBecause::TokenUnreadable,
            _ => {
                let state = sys.procs.state(pid32);
                return done(false, Why::ProcessAlive { pid, probe, state }, maybe_age(now));
            }
        }
    };
    let Some(age) = age_now(times, now) else {
        return Ok(Judgement { dead: false, same_host, why: Why::NoStat { because }, age: None, stalled: false });
    };
    if age.clock == ClockSource::Local {
        // This machine's clock against times a file server stamped: a guess,
        // and a lease whose age cannot be judged is never called dead.
        return Ok(Judgement {
            dead: false,
            same_host,
            why: Why::NoDiskClock { because },
            age: Some(age),
            stalled: false,
        });
    }
    let dead = age.age > sys.timing.heartbeat_timeout;
    let why = if dead { Why::Stale { because } } else { Why::Fresh { because } };
    let stalled = !dead && age.age > sys.timing.stalled_after;
    Ok(Judgement { dead, same_host, why, age: Some(age), stalled })
}
