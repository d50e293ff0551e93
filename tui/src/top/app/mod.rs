//! The dashboard's state and its update: one [`Event`] in, the state changed,
//! and the [`Effect`]s the event loop must carry out (a rescan or a repair off
//! the UI thread, a copy to the clipboard, quitting). Rendering reads this
//! state; nothing here draws or blocks for long.

mod input;
mod order;
mod reads;
mod repaired;
mod rows;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ubunye::doctor::Finding;
use ubunye::repair::{Kind, RepairPlan};

use crate::top::event::Event;
use crate::top::filter::Filter;
use crate::top::keys::{self, Action, Ctx};
use crate::top::model::{BatchRef, Id, Model};
use crate::top::popup::{Answer, Phase};
use crate::top::repair::{self, RepairDone, RepairPopup};
pub use crate::top::view::View;

/// The batch table's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// Most urgent state first (the library's order).
    Severity,
    /// Oldest lease first.
    Age,
    Task,
    /// Most claims first.
    Claims,
}

impl SortBy {
    pub fn word(self) -> &'static str {
        match self {
            SortBy::Severity => "severity",
            SortBy::Age => "age",
            SortBy::Task => "task",
            SortBy::Claims => "claims",
        }
    }
    fn next(self) -> SortBy {
        match self {
            SortBy::Severity => SortBy::Age,
            SortBy::Age => SortBy::Task,
            SortBy::Task => SortBy::Claims,
            SortBy::Claims => SortBy::Severity,
        }
    }
    /// The column of the batch table it sorts by.
    pub fn column(self) -> &'static str {
        match self {
            SortBy::Severity => "STATE",
            SortBy::Age => "AGE",
            SortBy::Task => "TASK",
            SortBy::Claims => "CLAIMS",
        }
    }
    /// Its order unless reversed: the most urgent state, the oldest lease
    /// and the most claims first (descending); tasks from A (ascending).
    fn descending(self) -> bool {
        !matches!(self, SortBy::Task)
    }
}

/// What the event loop must do.
#[derive(Debug)]
pub enum Effect {
    /// Read the whole use case again, off the UI thread.
    FullScan,
    /// Read these tasks again whole, off the UI thread (their files changed).
    ReadTasks(Vec<String>),
    /// Doctor's look at the use case ([`ubunye::doctor::look`]), off the UI
    /// thread: it reads every file again, a task at a time.
    Examine,
    /// Read a store's batch again and explain it, off the UI thread (a
    /// folder's is explained as it is drawn).
    Explain(Id),
    /// Plan a repair of these batches of a store, off the UI thread (a
    /// store's batches are read again over the network).
    Plan { kind: Kind, ids: Vec<Id> },
    /// Carry out a confirmed repair, off the UI thread.
    Repair(Box<RepairPlan>),
    /// Repair these batches one after the other, off the UI thread.
    RepairMany(Vec<RepairPlan>),
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// Watch the folders again (after a rescan: one may have appeared).
    Rewatch,
    /// Events cannot be had: poll instead (why).
    PollInstead(String),
    /// Quit with this exit code.
    Quit(i32),
}

/// How important a status message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// The status bar.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// How changes are noticed: `notify`, `poll 2s (NFS)`.
    pub watch: String,
    /// The latest message, and when it was shown.
    pub message: Option<(Level, String, Option<Instant>)>,
    /// A standing hint (the inotify watch limit).
    pub hint: Option<String>,
    /// Folders that cannot be listed, from the last scan.
    pub problems: Option<String>,
}

/// The detail pane: the library's explain report of the selected batch.
#[derive(Clone, Debug, Default)]
pub struct Detail {
    pub id: Option<Id>,
    pub lines: Vec<String>,
    pub scroll: usize,
    /// It has the focus (and the whole body).
    pub open: bool,
    /// It shows the run's log (`l`), kept up to date, not its report.
    pub log: bool,
    generation: u64,
    /// A store's batch to explain once the explain under way is back.
    wanted: Option<Id>,
    /// A store's explain is under way.
    asked: bool,
    /// What a store's batch's documents said when it was explained: a look
    /// explains it again only when they changed (an explain reads its task
    /// whole).
    seen: Option<String>,
}

/// Updates held back while frozen.
#[derive(Default)]
struct Held {
    paths: Vec<PathBuf>,
    full: bool,
}

impl Held {
    fn count(&self) -> usize {
        self.paths.len() + usize::from(self.full)
    }
}

/// Everything on the screen.
pub struct App {
    pub model: Model,
    /// Quit by Ctrl-C (not q): a fleet view ends too.
    pub interrupted: bool,
    pub view: View,
    pub sort: SortBy,
    /// The sort's order is the other way round (`S`).
    pub reversed: bool,
    pub filter: Filter,
    /// Typing a filter.
    pub editing: bool,
    /// The batch table: indexes into the model's batches, filtered and sorted.
    pub rows: Vec<usize>,
    /// Selected row and first shown row, per view.
    pub selected: [usize; 4],
    pub offset: [usize; 4],
    selected_id: Option<Id>,
    /// The user moved the selection: it stays on its batch. Until then it
    /// stays on the first row (the most urgent batch, as rows come in).
    moved: bool,
    pub detail: Detail,
    pub help: bool,
    /// The first line of the help shown.
    pub help_scroll: usize,
    pub popup: Option<RepairPopup>,
    /// The repair whose plan is being read from a store: its plan is shown
    /// when it comes, if the popup still waits for it.
    planning: Option<(Kind, Vec<Id>)>,
    pub frozen: bool,
    /// `--read-only`: the repair keys are not offered and do nothing.
    pub read_only: bool,
    /// Batches tagged with Space: t and f act on all of them.
    pub tagged: BTreeSet<Id>,
    /// The detail pane's lines once wrapped to its width, as last drawn:
    /// what its scrolling is counted in.
    pub detail_rows: usize,
    held: Held,
    pub status: Status,
    /// Batches per state, in [`State::ALL`] order.
    pub counts: [usize; ubunye::state::State::ALL.len()],
    /// The runs view: (batch index, record index), newest first.
    pub runs: Vec<(usize, usize)>,
    runs_generation: Option<u64>,
    pub findings: Vec<Finding>,
    /// The history view's task (the batch's whose `h` opened it), and its
    /// days as last made.
    pub history_task: Option<String>,
    pub history: Vec<ubunye::state::days::Day>,
    history_generation: Option<u64>,
    findings_generation: Option<u64>,
    findings_at: Option<Instant>,
    /// Doctor's look is under way (off the UI thread), asked for when the
    /// model was at this generation.
    pub examining: bool,
    examined_generation: u64,
    /// Batches the last look looked at.
    pub looked_at: usize,
    /// The first read is under way: batches read so far.
    pub loading: Option<usize>,
    /// Batches were added: filter and sort before drawing.
    stale: bool,
    sorted_at: Option<Instant>,
    /// The filter, order and direction the rows were last sorted by.
    sorted_by: Option<(String, SortBy, bool)>,
    /// A full scan (or the first read) is under way; another is wanted after it.
    pub scanning: bool,
    scan_again: bool,
    during_scan: Vec<PathBuf>,
    /// Parts of the read under way were dropped (it was frozen): it must not
    /// be taken as the whole use case.
    dropped: bool,
    /// Tasks to read again once the read under way is over.
    pending: BTreeSet<String>,
    /// Tasks whose read failed: asked again at the next tick, or after the
    /// next read that succeeds.
    retry: BTreeSet<String>,
    /// Colours on (NO_COLOR unset).
    pub colour: bool,
    /// Rows the last drawn list had room for.
    pub page: usize,
    /// Lines the last drawn detail pane had room for.
    pub detail_page: usize,
}

impl App {
    pub fn new(model: Model, colour: bool, watch: &str) -> App {
        let mut app = App {
            model,
            interrupted: false,
            view: View::Batches,
            sort: SortBy::Severity,
            reversed: false,
            filter: Filter::default(),
            editing: false,
            rows: Vec::new(),
            selected: [0; 4],
            offset: [0; 4],
            selected_id: None,
            moved: false,
            detail: Detail::default(),
            help: false,
            help_scroll: 0,
            popup: None,
            planning: None,
            frozen: false,
            read_only: false,
            tagged: BTreeSet::new(),
            detail_rows: 0,
            held: Held::default(),
            status: Status { watch: watch.to_string(), ..Status::default() },
            counts: [0; ubunye::state::State::ALL.len()],
            runs: Vec::new(),
            runs_generation: None,
            history_task: None,
            history: Vec::new(),
            history_generation: None,
            findings: Vec::new(),
            findings_generation: None,
            findings_at: None,
            examining: false,
            examined_generation: 0,
            looked_at: 0,
            loading: None,
            stale: false,
            sorted_at: None,
            sorted_by: None,
            scanning: false,
            scan_again: false,
            during_scan: Vec::new(),
            dropped: false,
            pending: BTreeSet::new(),
            retry: BTreeSet::new(),
            colour,
            page: 10,
            detail_page: 10,
        };
        app.note_problems();
        app.rebuild();
        app
    }

    /// The context keys are looked up in.
    pub fn ctx(&self) -> Ctx {
        if self.help {
            Ctx::Help
        } else if self.popup.is_some() {
            Ctx::Popup
        } else if self.editing {
            Ctx::Filter
        } else if self.detail.open && self.view == View::Batches {
            Ctx::Detail
        } else {
            Ctx::Main
        }
    }

    /// The sort's direction as the header marks it: ▼ descending, ▲
    /// ascending.
    pub fn sort_arrow(&self) -> &'static str {
        if self.sort.descending() != self.reversed { "▼" } else { "▲" }
    }

    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        self.status.message = Some((level, text.into(), Some(Instant::now())));
    }

    /// The selected batch in the batch view.
    pub fn selected_batch(&self) -> Option<BatchRef<'_>> {
        self.rows.get(self.selected[0]).and_then(|&i| self.model.row(i))
    }

    /// Handle one event.
    pub fn handle(&mut self, ev: Event) -> Vec<Effect> {
        let mut effects = self.dispatch(ev);
        self.settle(&mut effects);
        effects
    }

    /// After events: rows sorted when due, and the doctor view's look asked
    /// for when it is open and out of date.
    fn settle(&mut self, effects: &mut Vec<Effect>) {
        self.flush();
        if !self.detail.asked
            && let Some(id) = self.detail.wanted.take()
        {
            self.detail.asked = true;
            effects.push(Effect::Explain(id));
        }
        if self.view != View::Doctor || self.examining {
            return;
        }
        let stale = self.findings_generation != Some(self.model.generation);
        let due = self.findings_at.is_none_or(|t| t.elapsed() > Duration::from_secs(3));
        if self.findings_generation.is_none() || (stale && due) {
            self.examining = true;
            self.examined_generation = self.model.generation;
            effects.push(Effect::Examine);
        }
    }

    /// Filter and sort again if batches were added without it: during the
    /// first read at most four times a second (each sort is of every row so
    /// far), after it at once.
    fn flush(&mut self) {
        let soon = self.loading.is_some() && self.sorted_at.is_some_and(|t| t.elapsed() < Duration::from_millis(250));
        if self.stale && !soon {
            self.stale = false;
            self.rebuild();
            self.sorted_at = Some(Instant::now());
        }
    }

    fn dispatch(&mut self, ev: Event) -> Vec<Effect> {
        match ev {
            Event::Key(k) => {
                let effects = self.on_key(k);
                // Ctrl-C quits all the way out (a fleet view too, where q
                // only goes back to it).
                let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl_c && effects.iter().any(|e| matches!(e, Effect::Quit(_))) {
                    self.interrupted = true;
                }
                effects
            }
            Event::Resize(..) => Vec::new(),
            Event::Tick => self.on_tick(),
            Event::FsChange(paths) => self.on_change(paths),
            // A poll while a scan is under way is dropped, not queued: scans
            // never run back to back, however long one takes.
            Event::Poll if self.scanning => Vec::new(),
            Event::Poll => self.want_full_scan(),
            Event::WatchError { message, limit } => self.on_watch_error(message, limit),
            // A rescan's parts are dropped while frozen (nothing on screen may
            // change); the rescan is done again when the freeze ends. The
            // first read is always shown.
            Event::Part(_) if self.frozen && self.loading.is_none() => {
                self.dropped = true;
                self.held.full = true;
                Vec::new()
            }
            Event::Part(batches) => {
                self.model.extend(batches);
                if self.loading.is_some() {
                    self.loading = Some(self.model.len());
                }
                self.stale = true;
                Vec::new()
            }
            Event::Loaded(head) => self.on_loaded(*head),
            Event::Examined(res) => {
                self.examining = false;
                self.findings_at = Some(Instant::now());
                match *res {
                    Ok(look) => {
                        self.findings = look.findings;
                        self.looked_at = look.looked_at;
                        self.findings_generation = Some(self.examined_generation);
                        self.selected[2] = self.selected[2].min(self.findings.len().saturating_sub(1));
                    }
                    Err(e) => self.say(Level::Error, format!("doctor: {e}")),
                }
                Vec::new()
            }
            Event::Repaired(done) => self.on_repaired(*done),
            Event::RepairedMany(done) => self.on_repaired_many(done),
            Event::Signal(sig) => vec![Effect::Quit(128 + sig)],
            Event::Explained { id, lines } => {
                self.explained(id, lines);
                Vec::new()
            }
            Event::Planned { kind, ids, popup } => {
                // Only the plan the popup waits for: an earlier one, let go,
                // leaves the later request waiting.
                let waiting =
                    self.popup.as_ref().is_some_and(|p| matches!(p.phase, crate::top::popup::Phase::Planning));
                if waiting && self.planning.as_ref() == Some(&(kind, ids)) {
                    self.planning = None;
                    self.popup = Some(*popup);
                }
                Vec::new()
            }
            // The fleet view has its own app (`top::fleet`).
            Event::FleetCounted(..) | Event::FleetRound(_) => Vec::new(),
        }
    }

    /// Handle every event drained from the channel, file changes merged into
    /// one burst.
    pub fn handle_all(&mut self, events: Vec<Event>) -> Vec<Effect> {
        let mut effects = Vec::new();
        let mut paths = Vec::new();
        for ev in events {
            match ev {
                Event::FsChange(p) => paths.extend(p),
                other => {
                    if !paths.is_empty() {
                        effects.extend(self.on_change(std::mem::take(&mut paths)));
                    }
                    effects.extend(self.dispatch(other));
                }
            }
        }
        if !paths.is_empty() {
            effects.extend(self.on_change(paths));
        }
        self.settle(&mut effects);
        effects
    }

    fn on_tick(&mut self) -> Vec<Effect> {
        self.flush();
        if let Some((Level::Info, _, Some(at))) = &self.status.message
            && at.elapsed() > Duration::from_secs(8)
        {
            self.status.message = None;
        }
        if self.frozen {
            return Vec::new();
        }
        if self.model.tick() {
            self.rebuild();
        }
        if self.detail.log && self.detail.open {
            // A live run's log grows: followed while the end is shown.
            let at_end = self.detail.scroll + self.detail_page >= self.detail_rows;
            self.refresh_detail(true);
            if at_end {
                self.detail.scroll = usize::MAX / 2;
            }
        } else if self.model.src.store.is_none() && self.selected_batch().is_some_and(|b| b.lease().is_some()) {
            // (A store's batch changes only at a look: explained again then.)
            self.refresh_detail(true);
        }
        let retry = std::mem::take(&mut self.retry);
        self.want_tasks(retry)
    }

    fn note_problems(&mut self) {
        let p = &self.model.scan.problems;
        self.status.problems = p.first().map(|first| {
            let more = if p.len() > 1 { format!(" (and {} more: see 3 doctor)", p.len() - 1) } else { String::new() };
            format!("cannot list {}: {}{more}", first.path.display(), first.why)
        });
    }

    fn on_watch_error(&mut self, message: String, limit: bool) -> Vec<Effect> {
        if limit {
            return vec![Effect::PollInstead("watch limit".into())];
        }
        self.say(Level::Warn, format!("watching: {message}"));
        Vec::new()
    }
}
