//! What a repair did, in lines: as `ubunye leases takeover|finish` prints
//! it and the dashboard's popup shows it.

use ubunye::repair::RepairOutcome;

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
                "run {run} had finished: {}removed {} replaced file(s)\n",
                if r.note_written { "wrote its finished note, " } else { "" },
                r.removed.len()
            ));
            continue;
        }
        out.push_str(&format!(
            "run {run} taken over{}: removed {} file(s){}{}\n",
            if r.from_orphan { " (orphan adopted)" } else { "" },
            r.removed.len(),
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
    out.push_str(&format!("{} {} released: the next run of the batch starts clean.\n", o.task, o.key));
    out
}
