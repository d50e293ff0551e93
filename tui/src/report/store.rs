//! The object-store engine's reports as text (`ubunye::bucket`): an
//! explained batch, a takeover's outcome, a refusal; for the CLI
//! (`cli/store/`) and the dashboard over a store (`top/store/`) alike.

use ubunye::bucket::{BucketError, Explained, Refused, TakeoverEnd};
use ubunye::documents::short;
use ubunye::protocol::Recovery;

/// `leases explain` of a batch in a store: the lines the CLI prints and
/// the dashboard's detail pane and repair plan show.
pub fn explained(e: &Explained) -> String {
    let b = &e.batch;
    let mut o = format!("{} {}: {}\n", b.task, b.key, b.state.word());
    o.push_str(&format!("  object  {}\n", b.url));
    if let Some(run) = &b.run_id {
        let mut who = format!("  run     {run}");
        if let Some(h) = &e.host {
            who.push_str(&format!(" on {h}"));
        }
        if let Some(p) = e.pid {
            who.push_str(&format!(" (pid {p})"));
        }
        if let Some(s) = &e.started_at {
            who.push_str(&format!(", started {s}"));
        }
        if let Some(n) = e.saves {
            who.push_str(&format!(", {n} save(s)"));
        }
        o.push_str(&format!("{who}\n"));
    }
    if let Some(a) = b.age_secs {
        o.push_str(&format!(
            "  age     {} by the store's clock (it lives {}), at {}\n",
            ubunye::timefmt::age(std::time::Duration::from_secs(a)),
            ubunye::timefmt::age(std::time::Duration::from_secs(e.timeout_secs)),
            e.now
        ));
    }
    if e.committed {
        o.push_str("  done    its lease is marked done (committed)\n");
    }
    if let Some(t) = &e.taking_over {
        o.push_str(&format!("  taking over  run {t} (a taker died while recovering it)\n"));
    }
    if let Some(s) = &e.record_status {
        o.push_str(&format!("  record  {s}\n"));
    }
    if !b.note.is_empty() {
        o.push_str(&format!("  note    {}\n", b.note));
    }
    if !e.claims.is_empty() {
        let visible = e.claims.iter().filter(|c| c.visible).count();
        let open = e.claims.iter().filter(|c| c.upload_open).count();
        o.push_str(&format!("  claims  {}: {visible} visible, {open} upload(s) open\n", e.claims.len()));
        for c in &e.claims {
            let state = match (c.visible, c.upload_open) {
                (true, _) => "visible",
                (false, true) => "upload open",
                (false, false) => "not there",
            };
            o.push_str(&format!("    {} {}  {state}\n", c.output, c.url));
        }
    }
    o.push_str("Next:\n");
    for n in &e.next {
        o.push_str(&format!("  {n}\n"));
    }
    // What its note, records and repairs say happened, as on disk.
    let of = crate::report::explain::HistoryOf {
        note_files: e.note_files,
        has_lease: b.has_lease(),
        history: &e.history,
        repairs: &e.repairs,
    };
    o.push_str("History:\n");
    o.push_str(&crate::report::explain::history_table(&of, None));
    o
}

/// What a takeover (by a run or `leases takeover`) did to a dead run's lease.
pub fn took_over(r: &Recovery) -> String {
    let replaced = match r.removed.len() {
        0 => String::new(),
        n => format!(", and the {n} file(s) its --rerun replaces removed"),
    };
    if r.finished && r.note_written {
        format!(
            "run {} had finished; its commit was completed (its finished note written){replaced}.",
            short(&r.run_id)
        )
    } else if r.finished {
        format!("run {} had finished (its finished note is there); its files were kept{replaced}.", short(&r.run_id))
    } else {
        format!(
            "took over the lease of dead run {}: {} upload(s) aborted, {} object(s) it had made visible removed.",
            short(&r.run_id),
            r.aborted,
            r.removed.len()
        )
    }
}

/// Why a run or a repair was refused the batch (`head`: its task and key).
pub fn refusal(head: &str, r: &Refused) -> String {
    match r {
        Refused::Busy { run_id, age } => format!(
            "refused: {head}: run {} holds it (its lease was written {} ago, by the store's clock); try again once it ends",
            short(run_id),
            ubunye::timefmt::age(*age)
        ),
        Refused::Finished { run_id } => {
            format!("refused: {head}: run {} finished it; --resume skips a finished batch", short(run_id))
        }
        Refused::Unreadable { url, why } => format!(
            "refused: {url}: cannot be read ({why}); a lease or note like this is never judged free or dead: look at it, and remove it only if no run is writing"
        ),
    }
}

/// What a takeover of `head` (its task and key) ended with, as text; and
/// whether it was done (false: refused or failed).
pub fn takeover_outcome(head: &str, ended: &Result<TakeoverEnd, BucketError>) -> (bool, String) {
    match ended {
        Ok(TakeoverEnd::TookOver(r)) | Ok(TakeoverEnd::Completed(r, _)) => {
            (true, format!("{}\n{head}: released.", took_over(r)))
        }
        Ok(TakeoverEnd::Free) => (true, format!("{head}: its lease was released meanwhile: nothing to do.")),
        Ok(TakeoverEnd::Refused(r)) => (false, refusal(head, r)),
        Err(e) => (false, e.to_string()),
    }
}
