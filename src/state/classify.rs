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
    if b.records.iter().any(|r| r.damaged.is_some()) {
        b.flags.push(Flag::DamagedRecord);
    }
    if !b.unknown_files.is_empty() {
        b.flags.push(Flag::UnknownFiles);
    }
    // By path: the same note however the folder happened to list them.
    b.unreadable.sort_by(|x, y| x.path.cmp(&y.path));
    if let Some(u) = b.unreadable.iter().find(|u| blocks(b, u)) {
        b.state = State::Unreadable;
        b.note = format!("{}: {}", file_name(&u.path), u.why);
        b.run_id = b.lease.as_ref().map(|l| l.holder.run_id.clone());
        return;
    }
    if !b.unreadable.is_empty() {
        b.flags.push(Flag::UnreadableFiles);
    }
    judge_readable(b);
    // What cannot be read but decides nothing now is said beside the state.
    let said: Vec<String> = b
        .unreadable
        .iter()
        .map(|u| format!("its {} {} cannot be read: {}", u.kind.word(), file_name(&u.path), u.why))
        .collect();
    for s in said {
        b.note.push_str("; ");
        b.note.push_str(&s);
    }
}

/// Whether a file that cannot be read decides what the next run (or a
/// takeover) does, so that nothing can be judged while it cannot be read: a
/// lease, a dead run's lease beside it, a finished note with no lease (a run
/// of the batch that appends is refused until it is fixed), and the record of
/// a dead run whose plan must read it (not committed, no done mark). A note
/// beside a lease waits for that lease's run; a record of a run already taken
/// over, or of a live run, decides nothing.
fn blocks(b: &Batch, u: &UnreadableFile) -> bool {
    match u.kind {
        FileKind::Note => b.lease.is_none(),
        // A record that is all the batch has: nothing else can be said of it.
        FileKind::Record if b.nothing_readable() => true,
        FileKind::Record => {
            let run = u.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let dead_lease = b
                .lease
                .as_deref()
                .filter(|l| l.holder.judgement.as_ref().is_some_and(|j| j.dead))
                .into_iter()
                .chain(&b.orphans);
            dead_lease
                .filter(|l| !l.committed && l.holder.run_id == run)
                .any(|_| !b.done_marks.iter().any(|d| d.run_id == run))
        }
        _ => true,
    }
}

/// The state of a batch none of whose unreadable files (if any) decides it.
fn judge_readable(b: &mut Batch) {
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
        if l.doc.0.is_empty() || b.orphans.iter().any(|o| o.doc.0.is_empty()) {
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
        } else if l.tombstoned && dead {
            (State::HandedBack, format!("takeover refused: {present} claimed file(s) could not be removed"))
        } else if l.tombstoned {
            // Written back by a refused takeover: alive
            // by its judgement until it is old again, as every engine holds it.
            let age = j.and_then(|j| j.age).map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
            (
                State::Live,
                format!(
                    "handed back by a refused takeover ({present} claimed file(s) could not be removed), written {age} ago: held as a live run's until it is judged dead again"
                ),
            )
        } else if l.committed {
            (State::Live, "committing".into())
        } else if l.doc.0.is_empty() {
            // It names no run and no claims: neither live nor dead can be
            // said of a run, only the file's age, by which every engine
            // takes it over.
            let age = j.and_then(|j| j.age).map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
            let what = l.not_json.clone().unwrap_or_else(|| "not a JSON object".into());
            let when = if dead {
                format!("untouched for {age}: the next run takes it over by its age, or a takeover now")
            } else {
                format!("written {age} ago: taken over once it is 15 minutes old, as the Python engine judges")
            };
            (State::Damaged, format!("its lease {} is not JSON ({what}); {when}", file_name(&l.path)))
        } else if dead {
            (State::Dead, format!("{}; {present} of {claims} claimed file(s) present", verdict_short(j)))
        } else {
            let age = j.and_then(|j| j.age).map(|a| crate::timefmt::age(a.age)).unwrap_or_default();
            if j.is_some_and(|j| matches!(j.why, crate::liveness::Why::NoDiskClock { .. })) {
                (
                    State::Live,
                    format!(
                        "not judged: the disk's clock cannot be read without writing here (written {age} ago by this machine's clock); a takeover reads it and decides"
                    ),
                )
            } else if j.is_some_and(|j| j.stalled) {
                (State::Live, format!("stalled: lease not written for {age}"))
            } else {
                (State::Live, format!("running; lease written {age} ago"))
            }
        };
        b.state = state;
        b.note = note;
        for o in &b.orphans {
            let damaged = if o.doc.0.is_empty() { ", empty or not JSON" } else { "" };
            b.note.push_str(&format!("; a dead run's lease {}{damaged} is beside it", file_name(&o.path)));
        }
        return;
    }
    if let Some(o) = b.orphans.first() {
        b.state = State::Orphan;
        b.run_id = Some(o.holder.run_id.clone()).filter(|r| !r.is_empty());
        let present: usize =
            b.orphans.iter().flat_map(|o| &o.outputs).map(|o| o.claims.iter().filter(|c| c.present).count()).sum();
        let file = o.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let pid = o.holder.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
        let more = if b.orphans.len() > 1 { format!(" (and {} more)", b.orphans.len() - 1) } else { String::new() };
        b.note = format!(
            "a dead run's lease left by a killed takeover ({file}{more}{pid}; no lease holds the batch): {present} claimed file(s) to take back"
        );
        return;
    }
    classify_ended(b, latest_usable(b));
}

/// The newest record whose status can be read.
fn latest_usable(b: &Batch) -> Option<usize> {
    b.records.iter().position(|r| r.damaged.is_none())
}

/// A batch that no lease holds: finished, failed or interrupted, by what its
/// note, records and marks say.
fn classify_ended(b: &mut Batch, latest: Option<usize>) {
    // Borrowed: the batch's other fields are written beside it.
    let latest = latest.map(|i| &b.records[i]);
    let when = |t: &Option<String>| t.as_deref().and_then(crate::timefmt::parse);
    if let Some(f) = &b.finished {
        // A finished note: the batch is finished, whatever a later run did
        // (a plain run of it is refused, as the peer refuses it). A later run
        // that did not finish (a --rerun that failed or was taken over) took
        // its own files back and is said beside it.
        b.state = State::Finished;
        b.run_id = f.run_id.clone();
        b.note = format!("finished at {}", f.finished_at.clone().unwrap_or_default());
        if f.outputs.is_empty() {
            // The peer's finished check passes a note that lists no output.
            b.note.push_str("; its note lists no output, so a new run of it goes ahead");
        }
        let later = latest.filter(|r| {
            r.status.as_deref() != Some("success")
                && f.run_id.as_deref() != Some(r.run_id.as_str())
                && when(&r.started_at) > when(&f.finished_at)
        });
        if let Some(r) = later {
            let how = match r.status.as_deref() {
                Some("error") => "failed",
                Some("interrupted") => "was interrupted",
                Some("running") => "says running, with no lease to hold it",
                _ => "did not finish",
            };
            b.note.push_str(&format!(
                "; a later run {} {how}{} (the finished batch stands)",
                crate::documents::short(&r.run_id),
                r.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default()
            ));
        }
        return;
    }
    // A run taken over after the last record that says how a run ended, with
    // no such record of its own (an empty lease, a record half-written): that
    // takeover is the last word.
    let newest_mark = b.tombstones.iter().max_by_key(|t| t.time);
    let end = |r: &RecordInfo| when(&r.ended_at).or(when(&r.started_at));
    let taken_after = newest_mark.is_some_and(|t| {
        let own = b.records.iter().any(|r| r.run_id == t.run_id && r.damaged.is_none());
        !own && latest.is_none_or(|r| t.time.is_some() && end(r).is_some_and(|e| t.time > Some(e)))
    });
    if taken_after {
        return ended_without_a_status(b);
    }
    match latest.and_then(|r| r.status.as_deref().map(|s| (r, s))) {
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
        Some((r, "success")) => {
            b.state = State::Finished;
            b.run_id = Some(r.run_id.clone());
            b.note = "finished (no note: the batch is not named, or predates notes)".into();
        }
        _ => ended_without_a_status(b),
    }
}

/// No note and no record that says how its last run ended: what its marks
/// and other files say. Only a done mark (its run got to commit) makes it
/// finished; a takeover mark, a temp file or a damaged record alone does not.
fn ended_without_a_status(b: &mut Batch) {
    let newest_mark = b.tombstones.iter().max_by_key(|t| t.time);
    let done = b.done_marks.iter().max_by_key(|d| d.time);
    if let Some(d) = done.filter(|d| newest_mark.is_none_or(|t| t.time <= d.time)) {
        b.state = State::Finished;
        b.run_id = Some(d.run_id.clone()).filter(|r| !r.is_empty());
        b.note = format!(
            "its run {} committed (its done mark is there) and left no note: the batch is not named, or predates notes",
            crate::documents::short(&d.run_id)
        );
        return;
    }
    b.state = State::Interrupted;
    b.run_id = newest_mark
        .map(|t| t.run_id.clone())
        .or_else(|| b.records.first().map(|r| r.run_id.clone()))
        .filter(|r| !r.is_empty());
    let since = "no run has finished the batch since: a new run goes ahead";
    b.note = if let Some(t) = newest_mark {
        if t.run_id.is_empty() {
            format!("an empty lease (no run named) was taken over and {since}")
        } else {
            format!("run {} was taken over and {since}", crate::documents::short(&t.run_id))
        }
    } else if let Some(r) = b.records.first() {
        format!(
            "its run record {}.json cannot be parsed ({}); no run is known to have finished the batch",
            r.run_id,
            r.damaged.clone().unwrap_or_default()
        )
    } else if !b.temp_files.is_empty() {
        "a run was killed while it saved its lease (a temp file is left) and no run has finished the batch".into()
    } else {
        let names: Vec<String> = b
            .unknown_files
            .iter()
            .map(|m| m.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
            .collect();
        format!(
            "only files this engine does not know: {}; no run is known to have finished the batch",
            names.join(", ")
        )
    };
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
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
