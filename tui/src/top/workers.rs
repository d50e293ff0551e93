//! The dashboard's work off the UI thread: the reads of the use case (whole,
//! or some tasks again) and doctor's look; each sends its results to the
//! loop as [`Event`]s.

use std::sync::mpsc;

use super::event::Event;
use super::model::Source;

/// Read the use case off the UI thread, a task at a time: an [`Event::Part`]
/// for each task, then [`Event::Loaded`]. The first read and every rescan.
pub fn read(src: &Source, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    let src = src.clone();
    std::thread::Builder::new().name("top-read".into()).spawn(move || {
        let head = ubunye::state::scan_tasks(&src.uc, &src.opts, &src.sys, |_, batches| {
            let _ = tx.send(Event::Part(super::model::keep_all(batches)));
        });
        let _ = tx.send(Event::Loaded(Box::new(head.map_err(|e| e.to_string()))));
    })?;
    Ok(())
}

/// Doctor's look at the use case, as `ubunye doctor` takes it: the event that
/// brings it to the dashboard.
pub fn examine(src: &Source) -> Event {
    Event::Examined(Box::new(ubunye::doctor::look(&src.uc, &src.opts, &src.sys).map_err(|e| e.to_string())))
}

/// Read these tasks again off the UI thread, as [`read`] reads every task:
/// an [`Event::Part`] for each, then [`Event::Loaded`].
pub fn read_tasks(src: &Source, tasks: Vec<String>, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    let src = src.clone();
    std::thread::Builder::new().name("top-read-tasks".into()).spawn(move || {
        let head = ubunye::state::scan_named_tasks(&src.uc, &src.opts, &src.sys, &tasks, |_, batches| {
            let _ = tx.send(Event::Part(super::model::keep_all(batches)));
        });
        let _ = tx.send(Event::Loaded(Box::new(head.map_err(|e| e.to_string()))));
    })?;
    Ok(())
}
