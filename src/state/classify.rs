//! One state, flags and note for a read batch.

use std::fs;

use super::*;
use crate::liveness::{self, Why};
use crate::sys::Sys;

/// Judge a batch's lease again, as time passes (dead and stalled depend on the
/// clock): re-stat the lease, re-probe its process, re-classify. Nothing else is
/// read. For a dashboard's once-a-second tick.
pub fn rejudge(b: &mut Batch, sys: &Sys, now: Now) {
    if let Some(l) = b.lease.as_mut() {
        l.times = fs::metadata(&l.path).ok().map(|m| FileTimes::of(&m));
        l.holder.judgement = liveness::judge(&l.doc, l.times, &mut || now, sys, true).ok();
    }
    classify(b, now);
}

/// Give a read batch its one state, flags and note.
pub fn classify(b: &mut Batch, now: Now) {
    let _ = now;
    b.flags.clear();
    if !b.temp_files.is_empty() {
        b.flags.push(Flag::TempFiles);
    }
    if b.lease.is_none() && !b.done_marks.is_empty() {
        b.flags.push(Flag::LeftoverDone);
    }
    if b.lease.as_deref().into_iter().chain(&b.orphans).any(|l| !l.refused_paths.is_empty()) {
        b.flags.push(Flag::PathsOutside);
    }
    let latest = b.records.first();
    if !b.unreadable.is_empty() {
        b.state = State::Unreadable;
        // By path: the same note however the folder happened to list them.
        b.unreadable.sort_by(|x, y| x.path.cmp(&y.path));
        let u = &b.unreadable[0];
        b.note =
            format!("{}: {}", u.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), u.why);
        b.run_id = b.lease.as_ref().map(|l| l.holder.run_id.clone());
        return;
    }
    if let Some(l) = &b.lease {
        b.run_id = Some(l.holder.run_id.clone()).filter(|r| !r.is_empty());
        let j = l.holder.judgement.as_ref();
        let dead = j.is_some_and(|j| j.dead);
        if j.is_some_and(|j| j.stalled) {
            b.flags.push(Flag::Stalled);
        }
        if j.and_then(|j| j.age).is_some_and(|a| a.clock_behind.is_some()) {
            b.flags.push(Flag::ClockBehind);
        }
        if j.and_then(|j| j.age).is_some_and(|a| a.clock == crate::sys::ClockSource::Local) {
            b.flags.push(Flag::LocalClock);
        }
        if l.committed {
            b.flags.push(Flag::Committed);
        }
        if l.doc.0.is_empty() {
            b.flags.push(Flag::NotJson);
        }

        if !l.replaces.is_empty() {
            b.flags.push(Flag::Replaces);
        }
        let claims: usize = l.outputs.iter().map(|o| o.claims.len()).sum();
        let present: usize = l.outputs.iter().map(|o| o.claims.iter().filter(|c| c.present).count()).sum();
        let replaced: usize = l.replaces.iter().map(|(_, f)| f.iter().filter(|c| c.present).count()).sum();
        let (state, note) = if l.committed && dead {
            let todo = if replaced > 0 {
                format!("{replaced} replaced file(s) still to remove")
            } else if b.finished.as_ref().and_then(|f| f.run_id.as_deref()) != Some(l.holder.run_id.as_str())
                && !l.outputs.is_empty()
            {
                "its finished note still to write".to_string()
            } else {
                "its release still to do".to_string()
            };
            (State::Pending, format!("committed, holder gone: {todo}"))
        } else if l.kept {
            if !dead {
                b.flags.push(Flag::HolderAlive);
            }
            let what = if l.committed { "file(s) of the run it replaced" } else { "claimed file(s)" };
            (State::Kept, format!("run ended and kept its lease: {} {what} it could not remove", present.max(replaced)))
        } else if l.tombstoned {
            (State::HandedBack, format!("takeover refused: {present} claimed file(s) could not be removed"))
        } else if l.committed {
            (State::Live, "committing".into())
        } else if dead {
            (State::Dead, format!("{}; {present} of {claims} claimed file(s) present", verdict_short(j)))
        } else {
            let age = j.and_then(|j| j.age).map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
            if l.doc.0.is_empty() {
                (
                    State::Live,
                    format!("empty or not JSON, written {age} ago: held until 15 min old, as the peer judges"),
                )
            } else if j.is_some_and(|j| j.stalled) {
                (State::Live, format!("stalled: lease not written for {age}"))
            } else {
                (State::Live, format!("running; lease written {age} ago"))
            }
        };
        b.state = state;
        b.note = note;
        return;
    }
    if let Some(o) = b.orphans.first() {
        b.state = State::Orphan;
        b.run_id = Some(o.holder.run_id.clone()).filter(|r| !r.is_empty());
        let present: usize =
            b.orphans.iter().flat_map(|o| &o.outputs).map(|o| o.claims.iter().filter(|c| c.present).count()).sum();
        b.note = format!("a dead run's lease left beside the lease: {present} claimed file(s) to take back");
        return;
    }
    let note_time = b.finished.as_ref().and_then(|f| f.finished_at.clone());
    let newer_record = latest.filter(|r| match (&r.started_at, &note_time) {
        (Some(s), Some(n)) => crate::timefmt::parse(s) > crate::timefmt::parse(n),
        _ => b.finished.is_none(),
    });
    match newer_record.and_then(|r| r.status.as_deref().map(|s| (r, s))) {
        Some((r, "interrupted")) => {
            b.state = State::Interrupted;
            b.run_id = Some(r.run_id.clone());
            b.note = r.error.clone().unwrap_or_else(|| "interrupted".into());
        }
        Some((r, "error")) => {
            b.state = State::Failed;
            b.run_id = Some(r.run_id.clone());
            b.note = r.error.clone().unwrap_or_else(|| "failed".into());
        }
        Some((r, "running")) => {
            // A record says running, yet no lease holds the batch: the run died
            // without one (leases off) or the record was never marked.
            b.state = State::Interrupted;
            b.run_id = Some(r.run_id.clone());
            b.note = "its record says running, but no lease holds the batch".into();
        }
        _ => {
            b.state = State::Finished;
            match &b.finished {
                Some(f) => {
                    b.run_id = f.run_id.clone();
                    b.note = format!("finished at {}", f.finished_at.clone().unwrap_or_default());
                }
                None => {
                    b.run_id = latest.map(|r| r.run_id.clone());
                    b.note = "finished (no note: the batch is not named, or predates notes)".into();
                }
            }
        }
    }
}

/// A short verdict of a dead lease.
fn verdict_short(j: Option<&Judgement>) -> String {
    let Some(j) = j else { return "damaged".into() };
    let age = j.age.map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
    match &j.why {
        Why::ProcessGone { pid } => format!("process {pid} gone (this host)"),
        Why::PidReused { pid, .. } => format!("pid {pid} reused by another process (this host)"),
        Why::OwnKeptLease { .. } => "kept by this process's own earlier run".into(),
        Why::Stale { .. } => format!("lease untouched for {age}"),
        other => format!("{other:?}"),
    }
}
