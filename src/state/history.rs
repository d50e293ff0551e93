//! A batch's history: what its files say happened, newest first. One list,
//! made from the batch as read, that `leases explain`, `leases list --json`
//! and the dashboard all show.

use std::time::SystemTime;

use serde::Serialize;

use super::{Batch, Mark};
use crate::timefmt;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Happened {
    /// A run finished the batch (its finished note).
    Finished,
    /// A run's lease was taken over (its `<key>.taken-<run>` mark).
    TakenOver,
    /// A run got to commit (its `<key>.done-<run>` mark).
    DoneMark,
    /// A run record.
    Record,
    /// A file named after the batch that this engine does not know.
    UnknownFile,
}

/// One line of a batch's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    /// The kind of file the line comes from.
    pub what: Happened,
    /// The run it is about. None for the takeover mark of an empty lease,
    /// which named no run (`<key>.taken-`), and for an unknown file.
    pub run_id: Option<String>,
    /// When: the note's `finished_at`, a record's `started_at`, a mark's or
    /// unknown file's mtime (RFC 3339).
    pub time: Option<String>,
    /// A record's status (None when it has none, or is damaged).
    pub status: Option<String>,
    /// A record's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The record exists but cannot be parsed: why ([`super::RecordInfo::damaged`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
    /// The file it was read from (its name; the folder is the batch's).
    pub file: String,
}

fn name(p: &std::path::Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn mark(what: Happened, m: &Mark) -> HistoryEntry {
    HistoryEntry {
        what,
        run_id: Some(m.run_id.clone()).filter(|r| !r.is_empty()),
        time: m.time.map(timefmt::rfc3339),
        status: None,
        error: None,
        damaged: None,
        file: name(&m.path),
    }
}

impl Batch {
    /// Everything its files say happened, newest first (entries with no time
    /// last), from its note, marks, records and unknown files.
    pub fn history(&self) -> Vec<HistoryEntry> {
        let mut out: Vec<HistoryEntry> = Vec::new();
        if let Some(f) = &self.finished {
            out.push(HistoryEntry {
                what: Happened::Finished,
                run_id: f.run_id.clone(),
                time: f.finished_at.clone(),
                status: None,
                error: None,
                damaged: None,
                file: name(&f.path),
            });
        }
        out.extend(self.tombstones.iter().map(|m| mark(Happened::TakenOver, m)));
        out.extend(self.done_marks.iter().map(|m| mark(Happened::DoneMark, m)));
        out.extend(self.records.iter().map(|r| HistoryEntry {
            what: Happened::Record,
            run_id: Some(r.run_id.clone()),
            time: r.started_at.clone(),
            status: r.status.clone(),
            error: r.error.clone(),
            damaged: r.damaged.clone(),
            // A light batch of the dashboard keeps no path when it is the usual one.
            file: if r.path.as_os_str().is_empty() { format!("{}.json", r.run_id) } else { name(&r.path) },
        }));
        out.extend(self.unknown_files.iter().map(|m| mark(Happened::UnknownFile, m)));
        // Newest run first, and within a run newest first: its note, its
        // takeover, its done mark, then its record (when it started). A run
        // is placed by when its record says it started, else by its earliest
        // entry: notes keep whole seconds only, so times of one run cannot
        // order its own entries.
        let when = |e: &HistoryEntry| -> Option<SystemTime> { e.time.as_deref().and_then(timefmt::parse) };
        let mut start: std::collections::HashMap<&str, SystemTime> = std::collections::HashMap::new();
        for r in &self.records {
            if let Some(t) = r.started_at.as_deref().and_then(timefmt::parse) {
                start.insert(r.run_id.as_str(), t);
            }
        }
        let placed: Vec<Option<SystemTime>> = out
            .iter()
            .map(|e| match e.run_id.as_deref() {
                Some(run) => start
                    .get(run)
                    .copied()
                    .or_else(|| out.iter().filter(|x| x.run_id.as_deref() == Some(run)).filter_map(when).min()),
                None => when(e),
            })
            .collect();
        let mut order: Vec<usize> = (0..out.len()).collect();
        // None (no time at all) last.
        order.sort_by(|&a, &b| {
            placed[b]
                .is_some()
                .cmp(&placed[a].is_some())
                .then_with(|| placed[b].cmp(&placed[a]))
                .then_with(|| out[a].run_id.cmp(&out[b].run_id))
                .then_with(|| out[a].what.cmp(&out[b].what))
                .then_with(|| out[a].file.cmp(&out[b].file))
        });
        let mut slots: Vec<Option<HistoryEntry>> = out.into_iter().map(Some).collect();
        order.into_iter().filter_map(|i| slots[i].take()).collect()
    }
}
