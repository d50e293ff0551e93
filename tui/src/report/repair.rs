//! What a repair did, in lines: as `ubunye leases takeover|finish` prints
//! it and the dashboard's popup shows it.

use ubunye::protocol::Recovery;
use ubunye::repair::{RepairOutcome, RepairPlan};

/// A repair's plan: the batch, its state and the command, then each step,
/// as `leases takeover|finish` shows it before it asks and a dashboard's
/// popup shows it.
pub fn plan(p: &RepairPlan) -> String {
    let mut o = format!("{} {} ({}): {}\n", p.task, p.key, p.state.word(), p.kind.command());
    for s in &p.steps {
        o.push_str(&format!("  {s}\n"));
    }
    super::printable(o)
}

/// What the repair did, in lines, as the CLI prints it and the dashboard
/// shows it.
pub fn outcome(o: &RepairOutcome) -> String {
    let mut out = String::new();
    for r in &o.recovered {
        let run = if r.run_id.is_empty() { "(no run id)".into() } else { ubunye::documents::short(&r.run_id) };
        if r.processes_stopped > 0 {
            out.push_str(&format!("run {run}: stopped {} process(es) of it still running\n", r.processes_stopped));
        }
        if r.finished {
            out.push_str(&format!(
                "run {run} had finished: {}removed {} replaced file(s){}\n",
                if r.note_written { "wrote its finished note, " } else { "" },
                r.removed.len(),
                if r.record_marked { ", record marked success" } else { "" }
            ));
            continue;
        }
        out.push_str(&format!(
            "run {run} taken over{}: removed {} file(s){}{}{}\n",
            if r.from_orphan { " (orphan adopted)" } else { "" },
            r.removed.len(),
            if r.aborted > 0 { format!(", {} upload(s) aborted", r.aborted) } else { String::new() },
            if r.staging_removed.is_empty() {
                String::new()
            } else {
                format!(", {} staging folder(s)", r.staging_removed.len())
            },
            if r.record_marked { ", record marked interrupted" } else { "" }
        ));
        if let Some((path, why)) = &r.record_left {
            out.push_str(&format!("  its run record {} was left as it is: {why}\n", path.display()));
        }
        if !r.unrepaired.is_empty() {
            out.push_str(&format!(
                "  output(s) {} may hold part of its batch and cannot be taken back here: check them\n",
                r.unrepaired.join(", ")
            ));
        }
    }
    // A run that had finished leaves the batch finished, not free: what a
    // next run of it does is its note's to say (`leases explain`).
    let end = if o.recovered.iter().any(|r| r.finished) {
        "its run's commit is complete: the batch is finished"
    } else {
        "the next run of the batch starts clean"
    };
    out.push_str(&format!("{} {} released: {end}.\n", o.task, o.key));
    super::printable(out)
}

/// What taking a dead run over did, in one sentence, as a run says it when
/// it took one over (`what`: its lease, or a dead lease left beside it), on
/// a disk or in a store.
pub fn took_over(r: &Recovery, what: &str) -> String {
    let run = if r.run_id.is_empty() { "?".to_string() } else { ubunye::documents::short(&r.run_id) };
    if r.finished {
        return format!(
            "run {run} had finished ({what} was left behind); its commit was completed{}: {} replaced file(s) removed{}.",
            if r.note_written { " (its finished note written)" } else { "" },
            r.removed.len(),
            if r.record_marked { ", its record marked success" } else { "" }
        );
    }
    let aborted = if r.aborted > 0 { format!(" and aborted {} upload(s)", r.aborted) } else { String::new() };
    let mut s = format!(
        "run {run} died before it finished; took over {what}{aborted} and removed {} file(s) it had appended.",
        r.removed.len()
    );
    if !r.unrepaired.is_empty() {
        s.push_str(&format!(
            " Output(s) {} may hold part or all of its batch and cannot be taken back here: check them.",
            r.unrepaired.join(", ")
        ));
    }
    if r.processes_stopped > 0 {
        s.push_str(&format!(" Stopped {} process(es) of it still running.", r.processes_stopped));
    }
    if let Some((path, why)) = &r.record_left {
        s.push_str(&format!(" Its run record {} was left as it is: {why}.", path.display()));
    }
    s
}
