//! The one event enum of the dashboard, on one channel: keys, resizes, the 1 s
//! tick, file changes, watch errors, and the results of work done off the UI
//! thread. A leaf: it names only the data the events carry; the loop that
//! drains them is [`super::runtime`].

use std::path::PathBuf;

use crossterm::event::KeyEvent;
use ubunye::state::ScanHead;

use crate::top::model::Kept;
use crate::top::repair::RepairDone;

/// Everything that can happen.
#[derive(Debug)]
pub enum Event {
    Key(KeyEvent),
    Resize(u16, u16),
    /// Once a second: leases are judged again (dead and stalled depend on time).
    Tick,
    /// Paths that changed (debounced file-system events).
    FsChange(Vec<PathBuf>),
    /// Poll mode: time to read everything again.
    Poll,
    /// The watcher reported an error; `limit` when it is the inotify limit.
    WatchError {
        message: String,
        limit: bool,
    },
    /// A read of the whole use case (the first, or a rescan), a task at a
    /// time: one task's batches.
    Part(Vec<Kept>),
    /// The read is over (the folders that could not be listed), or failed.
    Loaded(Box<Result<ScanHead, String>>),
    /// Doctor's look at the use case is over.
    Examined(Box<Result<ubunye::doctor::Look, String>>),
    /// A repair finished.
    Repaired(Box<RepairDone>),
    /// The repairs of tagged batches carried out, in order.
    RepairedMany(Vec<RepairDone>),
    /// SIGTERM, SIGHUP or SIGINT arrived.
    Signal(i32),
    /// A store's batch read again and explained ([`crate::top::store`]):
    /// its report's lines, for the detail pane, or why it could not be read.
    Explained {
        id: (String, String),
        lines: Result<Vec<String>, String>,
    },
    /// A store's repair planned off the UI thread: the batches it was asked
    /// for, and the popup of its plan (or of why none applies).
    Planned {
        kind: ubunye::repair::Kind,
        ids: Vec<(String, String)>,
        popup: Box<crate::top::repair::RepairPopup>,
    },
    /// The fleet view ([`crate::top::fleet`]): one use case counted (its
    /// place in the list).
    FleetCounted(usize, Box<ubunye::census::Census>),
    /// The fleet view: every use case counted once more, in this long.
    FleetRound(std::time::Duration),
}
