//! The dashboard's work off the UI thread: the reads of the use case (whole,
//! or some tasks again), doctor's look, a store's batch explained, and the
//! store's polls; each sends its results to the loop as [`Event`]s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use ubunye::state::ScanHead;

use super::event::Event;
use super::model::{Id, Source, keep_all};

/// Read the use case off the UI thread, a task at a time: an [`Event::Part`]
/// for each task, then [`Event::Loaded`]. The first read and every rescan.
pub fn read(src: &Source, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    if src.store.is_some() {
        return look(src, tx);
    }
    let src = src.clone();
    std::thread::Builder::new().name("top-read".into()).spawn(move || {
        let head = ubunye::state::scan_tasks(&src.uc, &src.opts, &src.sys, |_, batches| {
            let _ = tx.send(Event::Part(keep_all(batches)));
        });
        let _ = tx.send(Event::Loaded(Box::new(head.map_err(|e| e.to_string()))));
    })?;
    Ok(())
}

/// A store's look, as a read of the whole use case: its batches a task at a
/// time, then the store's time they were judged at. (A store has no folder
/// that cannot be listed: a listing that fails fails the look.)
fn look(src: &Source, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    let src = src.clone();
    std::thread::Builder::new().name("top-store-look".into()).spawn(move || {
        let Some(store) = &src.store else { return };
        let head = store.look(&src.sys).map(|(now, mut batches)| {
            while !batches.is_empty() {
                let task = batches[0].task.clone();
                let n = batches.iter().take_while(|b| b.task == task).count();
                let rest = batches.split_off(n);
                let _ = tx.send(Event::Part(keep_all(std::mem::replace(&mut batches, rest))));
            }
            let root = src.uc.clone();
            ScanHead { lineage_dir: ubunye::layout::lineage_root(&root), root, now, problems: Vec::new() }
        });
        let _ = tx.send(Event::Loaded(Box::new(head)));
    })?;
    Ok(())
}

/// Doctor's look at the use case, as `ubunye doctor` takes it: the event that
/// brings it to the dashboard.
pub fn examine(src: &Source) -> Event {
    let look = match &src.store {
        Some(store) => store.doctor(&src.sys),
        None => ubunye::doctor::look(&src.uc, &src.opts, &src.sys).map_err(|e| e.to_string()),
    };
    Event::Examined(Box::new(look))
}

/// Read these tasks again off the UI thread, as [`read`] reads every task:
/// an [`Event::Part`] for each, then [`Event::Loaded`]. (A store's look
/// reads only what changed: it is read whole.)
pub fn read_tasks(src: &Source, tasks: Vec<String>, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    if src.store.is_some() {
        return look(src, tx);
    }
    let src = src.clone();
    std::thread::Builder::new().name("top-read-tasks".into()).spawn(move || {
        let head = ubunye::state::scan_named_tasks(&src.uc, &src.opts, &src.sys, &tasks, |_, batches| {
            let _ = tx.send(Event::Part(keep_all(batches)));
        });
        let _ = tx.send(Event::Loaded(Box::new(head.map_err(|e| e.to_string()))));
    })?;
    Ok(())
}

/// A store's batch read again and explained (network reads, so never on
/// the UI thread): its report's lines.
pub fn explain(src: &Source, id: Id) -> Event {
    let lines = match &src.store {
        Some(store) => store
            .explain(&id.0, &id.1, &src.sys)
            .map(|e| crate::report::explanation(&e, None).lines().map(str::to_string).collect())
            .map_err(|e| format!("cannot read the batch from the store: {e}")),
        None => Ok(Vec::new()),
    };
    Event::Explained { id, lines }
}

/// Ask for a look every `every` ([`Event::Poll`]) until `stop` or the loop
/// is gone: a store sends no events.
pub fn poll_every(every: Duration, tx: Sender<Event>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new().name("top-store-poll".into()).spawn(move || {
        loop {
            // Sleep in steps, so that a quit is not kept waiting.
            let mut left = every;
            while !left.is_zero() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let step = left.min(Duration::from_millis(100));
                std::thread::sleep(step);
                left -= step;
            }
            if tx.send(Event::Poll).is_err() {
                return;
            }
        }
    })?;
    Ok(())
}

/// A store's repair planned off the UI thread: each batch read again from
/// the store, explained and checked ([`crate::top::repair::plan_ids`]); the
/// event that brings the popup to the dashboard. `root` names the use case.
pub fn plan(src: &Source, root: &std::path::Path, kind: ubunye::repair::Kind, ids: Vec<(String, String)>) -> Event {
    let popup = super::repair::plan_ids(kind, &ids, root, |task, key| match &src.store {
        Some(store) => ubunye::repair::check(kind, &store.explain(task, key, &src.sys)?),
        None => Err(format!("{task} {key}: not in a store")),
    });
    Event::Planned { kind, ids, popup: Box::new(popup) }
}
