//! The dashboard's state and its update: one [`Event`] in, the state changed,
//! and the [`Effect`]s the event loop must carry out (a rescan or a repair off
//! the UI thread, a copy to the clipboard, quitting). Rendering reads this
//! state; nothing here draws or blocks for long.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ubunye::doctor::Finding;
use ubunye::repair::{Kind, RepairPlan};
use ubunye::state::{Batch, Scan, State};

use crate::event::Event;
use crate::filter::Filter;
use crate::keys::{self, Action, Ctx};
use crate::model::{Id, Model};
use crate::popup::{self, Popup, RepairDone};

/// The three views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Batches,
    Runs,
    Doctor,
}

impl View {
    pub const ALL: [View; 3] = [View::Batches, View::Runs, View::Doctor];
    pub fn title(self) -> &'static str {
        match self {
            View::Batches => "1 batches",
            View::Runs => "2 runs",
            View::Doctor => "3 doctor",
        }
    }
    fn index(self) -> usize {
        match self {
            View::Batches => 0,
            View::Runs => 1,
            View::Doctor => 2,
        }
    }
}

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
}

/// What the event loop must do.
#[derive(Debug)]
pub enum Effect {
    /// Read the whole use case again, off the UI thread.
    FullScan,
    /// Carry out a confirmed repair, off the UI thread.
    Repair(Box<RepairPlan>),
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
    generation: u64,
}

/// Updates held back while frozen.
#[derive(Default)]
struct Held {
    paths: Vec<PathBuf>,
    full: bool,
    scan: Option<Box<Scan>>,
}

impl Held {
    fn count(&self) -> usize {
        self.paths.len() + usize::from(self.full) + usize::from(self.scan.is_some())
    }
}

/// Everything on the screen.
pub struct App {
    pub model: Model,
    pub view: View,
    pub sort: SortBy,
    pub filter: Filter,
    /// Typing a filter.
    pub editing: bool,
    /// The batch table: indexes into the model's batches, filtered and sorted.
    pub rows: Vec<usize>,
    /// Selected row and first shown row, per view.
    pub selected: [usize; 3],
    pub offset: [usize; 3],
    selected_id: Option<Id>,
    /// The user moved the selection: it stays on its batch. Until then it
    /// stays on the first row (the most urgent batch, as rows come in).
    moved: bool,
    pub detail: Detail,
    pub help: bool,
    /// The first line of the help shown.
    pub help_scroll: usize,
    pub popup: Option<Popup>,
    pub frozen: bool,
    held: Held,
    pub status: Status,
    /// Batches per state, in [`State::ALL`] order.
    pub counts: [usize; 10],
    /// The runs view: (batch index, record index), newest first.
    pub runs: Vec<(usize, usize)>,
    runs_generation: Option<u64>,
    pub findings: Vec<Finding>,
    findings_generation: Option<u64>,
    findings_at: Option<Instant>,
    /// The first read is under way: batches read so far.
    pub loading: Option<usize>,
    /// Batches were added: filter and sort before drawing.
    stale: bool,
    sorted_at: Option<Instant>,
    /// A full scan (or the first read) is under way; another is wanted after it.
    pub scanning: bool,
    scan_again: bool,
    during_scan: Vec<PathBuf>,
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
            view: View::Batches,
            sort: SortBy::Severity,
            filter: Filter::default(),
            editing: false,
            rows: Vec::new(),
            selected: [0; 3],
            offset: [0; 3],
            selected_id: None,
            moved: false,
            detail: Detail::default(),
            help: false,
            help_scroll: 0,
            popup: None,
            frozen: false,
            held: Held::default(),
            status: Status { watch: watch.to_string(), ..Status::default() },
            counts: [0; 10],
            runs: Vec::new(),
            runs_generation: None,
            findings: Vec::new(),
            findings_generation: None,
            findings_at: None,
            loading: None,
            stale: false,
            sorted_at: None,
            scanning: false,
            scan_again: false,
            during_scan: Vec::new(),
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

    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        self.status.message = Some((level, text.into(), Some(Instant::now())));
    }

    /// The selected batch in the batch view.
    pub fn selected_batch(&self) -> Option<&Batch> {
        self.rows.get(self.selected[0]).and_then(|&i| self.model.batches().get(i))
    }

    /// Handle one event.
    pub fn handle(&mut self, ev: Event) -> Vec<Effect> {
        let effects = self.dispatch(ev);
        self.flush();
        effects
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
            Event::Key(k) => self.on_key(k),
            Event::Resize(..) => Vec::new(),
            Event::Tick => self.on_tick(),
            Event::FsChange(paths) => self.on_change(paths),
            // A poll while a scan is under way is dropped, not queued: scans
            // never run back to back, however long one takes.
            Event::Poll if self.scanning => Vec::new(),
            Event::Poll => self.want_full_scan(),
            Event::WatchError { message, limit } => self.on_watch_error(message, limit),
            Event::Scanned(res) => self.on_scanned(*res),
            Event::Part(batches) => {
                self.model.extend(batches);
                self.loading = Some(self.model.batches().len());
                self.stale = true;
                Vec::new()
            }
            Event::Loaded(head) => self.on_loaded(*head),
            Event::Repaired(done) => self.on_repaired(*done),
            Event::Signal(sig) => vec![Effect::Quit(128 + sig)],
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
        self.flush();
        effects
    }

    /// Start with nothing read: the batches arrive a task at a time
    /// ([`Event::Part`]), then [`Event::Loaded`]. Changes seen meanwhile are
    /// applied again at the end.
    pub fn start_loading(&mut self) {
        self.loading = Some(0);
        self.scanning = true;
        self.during_scan.clear();
    }

    fn on_loaded(&mut self, head: Result<ubunye::state::ScanHead, String>) -> Vec<Effect> {
        self.loading = None;
        self.scanning = false;
        match head {
            Ok(h) => {
                self.model.loaded(h);
                self.note_problems();
            }
            Err(e) => self.say(Level::Error, format!("cannot read the use case: {e}")),
        }
        let mut effects = vec![Effect::Rewatch];
        let again = std::mem::take(&mut self.during_scan);
        if !again.is_empty() && self.model.apply(&again).full {
            self.scan_again = true;
        }
        self.stale = true;
        if std::mem::take(&mut self.scan_again) {
            effects.extend(self.want_full_scan());
        }
        effects
    }

    fn on_tick(&mut self) -> Vec<Effect> {
        self.flush();
        if let Some((Level::Info, _, Some(at))) = &self.status.message {
            if at.elapsed() > Duration::from_secs(8) {
                self.status.message = None;
            }
        }
        if self.frozen {
            return Vec::new();
        }
        if self.model.tick() {
            self.rebuild();
        }
        if self.selected_batch().is_some_and(|b| b.lease.is_some()) {
            self.refresh_detail(true);
        }
        Vec::new()
    }

    fn on_change(&mut self, paths: Vec<PathBuf>) -> Vec<Effect> {
        if self.frozen {
            self.held.paths.extend(paths);
            if self.held.paths.len() > crate::model::BURST {
                self.held.paths.clear();
                self.held.full = true;
            }
            return Vec::new();
        }
        if self.scanning {
            self.during_scan.extend(paths.iter().cloned());
        }
        let applied = self.model.apply(&paths);
        if let Some(e) = applied.errors.first() {
            self.say(Level::Error, format!("cannot read: {e}"));
        }
        if applied.changed {
            self.rebuild();
        }
        if applied.full { self.want_full_scan() } else { Vec::new() }
    }

    fn want_full_scan(&mut self) -> Vec<Effect> {
        if self.frozen {
            self.held.full = true;
            return Vec::new();
        }
        if self.scanning {
            self.scan_again = true;
            return Vec::new();
        }
        self.scanning = true;
        self.during_scan.clear();
        vec![Effect::FullScan]
    }

    fn on_scanned(&mut self, res: Result<Scan, String>) -> Vec<Effect> {
        self.scanning = false;
        let mut effects = vec![Effect::Rewatch];
        match res {
            Ok(scan) if self.frozen => {
                self.held.scan = Some(Box::new(scan));
            }
            Ok(scan) => {
                self.model.install(scan);
                self.note_problems();
                let again = std::mem::take(&mut self.during_scan);
                if !again.is_empty() {
                    let applied = self.model.apply(&again);
                    if applied.full {
                        self.scan_again = true;
                    }
                }
                if matches!(&self.status.message, Some((Level::Error, _, _))) {
                    self.status.message = None;
                }
                self.rebuild();
            }
            Err(e) => self.say(Level::Error, format!("showing what was last read: {e}")),
        }
        if std::mem::take(&mut self.scan_again) {
            effects.extend(self.want_full_scan());
        }
        effects
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

    fn on_repaired(&mut self, done: RepairDone) -> Vec<Effect> {
        let (ok, text) = popup::outcome_text(&done);
        let kind = done.plan.kind;
        let t = popup::title(kind, &done.plan.task, &done.plan.key);
        let id = (done.plan.task.clone(), done.plan.key.clone());
        self.popup = Some(Popup::Done { kind, title: t, ok, text, scroll: 0 });
        let now = self.model.now();
        match self.model.reread(&id, now) {
            Ok(()) => {
                self.model.last_change = Some(self.model.src.sys.clock.now());
                self.model.generation += 1;
            }
            Err(e) => self.say(Level::Error, format!("cannot read: {e}")),
        }
        self.rebuild();
        self.refresh_detail(true);
        Vec::new()
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        // Keys act on what is on the screen: the runs and findings up to date.
        self.prepare();
        let ctx = self.ctx();
        let action = keys::lookup(ctx, &k);
        if ctx == Ctx::Filter && action.is_none() {
            if let KeyCode::Char(c) = k.code {
                if !k.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
                    let mut text = self.filter.text.clone();
                    text.push(c);
                    self.set_filter(&text);
                }
            }
            return Vec::new();
        }
        let Some(action) = action else { return Vec::new() };
        match ctx {
            Ctx::Help => self.help_key(action),
            Ctx::Popup => self.popup_key(action),
            Ctx::Filter => self.filter_key(action),
            Ctx::Detail => self.detail_key(action),
            Ctx::Main => self.main_key(action),
        }
    }

    fn help_key(&mut self, a: Action) -> Vec<Effect> {
        let page = self.page.max(1);
        match a {
            Action::Quit => return vec![Effect::Quit(0)],
            Action::Up => self.help_scroll = self.help_scroll.saturating_sub(1),
            Action::Down => self.help_scroll += 1,
            Action::PageUp => self.help_scroll = self.help_scroll.saturating_sub(page),
            Action::PageDown => self.help_scroll += page,
            _ => {
                self.help = false;
                self.help_scroll = 0;
            }
        }
        Vec::new()
    }

    fn filter_key(&mut self, a: Action) -> Vec<Effect> {
        match a {
            Action::Confirm => self.editing = false,
            Action::Clear => {
                self.editing = false;
                self.set_filter("");
            }
            Action::Backspace => {
                let mut text = self.filter.text.clone();
                text.pop();
                self.set_filter(&text);
            }
            Action::Quit => return vec![Effect::Quit(0)],
            _ => {}
        }
        Vec::new()
    }

    fn popup_key(&mut self, a: Action) -> Vec<Effect> {
        let Some(p) = self.popup.as_mut() else { return Vec::new() };
        match p {
            Popup::Confirm { plan, yes, scroll } => match a {
                Action::Yes => {
                    let plan = plan.clone();
                    return self.start_repair(plan);
                }
                Action::Confirm if *yes => {
                    let plan = plan.clone();
                    return self.start_repair(plan);
                }
                Action::No | Action::Close | Action::Confirm => {
                    self.popup = None;
                    self.say(Level::Info, "Nothing was done.");
                }
                Action::Toggle => *yes = !*yes,
                Action::Up => *scroll = scroll.saturating_sub(1),
                Action::Down => *scroll = scroll.saturating_add(1),
                Action::Quit => {
                    self.popup = None;
                    return vec![Effect::Quit(0)];
                }
                _ => {}
            },
            Popup::Running { .. } => {
                if a == Action::Quit {
                    self.say(Level::Warn, "a repair is under way: it ends in a moment");
                }
            }
            Popup::Refused { .. } => match a {
                Action::Close | Action::Confirm | Action::No => self.popup = None,
                Action::Quit => return vec![Effect::Quit(0)],
                _ => {}
            },
            Popup::Done { scroll, .. } => match a {
                Action::Close | Action::Confirm | Action::No => self.popup = None,
                Action::Up => *scroll = scroll.saturating_sub(1),
                Action::Down => *scroll = scroll.saturating_add(1),
                Action::Quit => return vec![Effect::Quit(0)],
                _ => {}
            },
        }
        Vec::new()
    }

    fn start_repair(&mut self, plan: Box<RepairPlan>) -> Vec<Effect> {
        let title = popup::title(plan.kind, &plan.task, &plan.key);
        self.popup = Some(Popup::Running { kind: plan.kind, title });
        vec![Effect::Repair(plan)]
    }

    fn detail_key(&mut self, a: Action) -> Vec<Effect> {
        let last = self.detail.lines.len().saturating_sub(1);
        let page = self.detail_page.max(1);
        match a {
            Action::Up => self.detail.scroll = self.detail.scroll.saturating_sub(1),
            Action::Down => self.detail.scroll = (self.detail.scroll + 1).min(last),
            Action::PageUp => self.detail.scroll = self.detail.scroll.saturating_sub(page),
            Action::PageDown => self.detail.scroll = (self.detail.scroll + page).min(last),
            Action::First => self.detail.scroll = 0,
            Action::Last => self.detail.scroll = last.saturating_sub(page.saturating_sub(1)),
            Action::Close => self.detail.open = false,
            _ => return self.main_key(a),
        }
        Vec::new()
    }

    fn main_key(&mut self, a: Action) -> Vec<Effect> {
        match a {
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => self.move_by(-(self.page.max(1) as isize)),
            Action::PageDown => self.move_by(self.page.max(1) as isize),
            Action::First => self.move_by(isize::MIN / 2),
            Action::Last => self.move_by(isize::MAX / 2),
            Action::Detail => self.open_detail(),
            Action::Filter => self.editing = true,
            Action::Sort => {
                self.sort = self.sort.next();
                self.rebuild();
                self.say(Level::Info, format!("sorted by {}", self.sort.word()));
            }
            Action::Takeover => self.open_repair(Kind::Takeover),
            Action::Finish => self.open_repair(Kind::Finish),
            Action::Copy => {
                if let Some(b) = self.selected_batch() {
                    let key = b.key.clone();
                    self.say(Level::Info, format!("copied {key} to the clipboard (OSC 52)"));
                    return vec![Effect::Copy(key)];
                }
            }
            Action::Freeze => return self.toggle_freeze(),
            Action::Rescan => {
                self.say(Level::Info, "rescanning");
                return self.want_full_scan();
            }
            Action::Help => self.help = true,
            Action::NextView => {
                let i = (self.view.index() + 1) % View::ALL.len();
                self.switch(View::ALL[i]);
            }
            Action::ViewBatches => self.switch(View::Batches),
            Action::ViewRuns => self.switch(View::Runs),
            Action::ViewDoctor => self.switch(View::Doctor),
            Action::Close if !self.filter.is_empty() => self.set_filter(""),
            Action::Quit => return vec![Effect::Quit(0)],
            _ => {}
        }
        Vec::new()
    }

    fn switch(&mut self, v: View) {
        self.view = v;
        self.detail.open = false;
        if v == View::Doctor {
            // Fresh findings when the view is opened.
            self.findings_generation = None;
        }
    }

    fn toggle_freeze(&mut self) -> Vec<Effect> {
        self.frozen = !self.frozen;
        if self.frozen {
            self.say(Level::Info, "frozen: updates are held until F is pressed again");
            return Vec::new();
        }
        let held = std::mem::take(&mut self.held);
        let n = held.count();
        let mut effects = Vec::new();
        if let Some(scan) = held.scan {
            self.model.install(*scan);
            self.note_problems();
        }
        if held.full {
            effects.extend(self.want_full_scan());
        }
        if !held.paths.is_empty() {
            effects.extend(self.on_change(held.paths));
        }
        self.model.tick();
        self.rebuild();
        self.say(Level::Info, format!("resumed: {n} held update(s) applied"));
        effects
    }

    fn open_detail(&mut self) {
        match self.view {
            View::Batches => {
                if let Some(b) = self.selected_batch() {
                    self.selected_id = Some((b.task.clone(), b.key.clone()));
                    self.moved = true;
                    self.detail.open = true;
                    self.detail.scroll = 0;
                }
            }
            View::Runs => {
                let id = self.runs.get(self.selected[1]).and_then(|&(bi, _)| self.model.batches().get(bi));
                let id = id.map(|b| (b.task.clone(), b.key.clone()));
                self.jump_to(id);
            }
            View::Doctor => {
                let id = self
                    .findings
                    .get(self.selected[2])
                    .and_then(|f| Some((f.task.clone()?, f.key.clone()?)))
                    .filter(|id| self.model.get(id).is_some());
                self.jump_to(id);
            }
        }
    }

    /// Show a batch in the batch view, with its detail open.
    fn jump_to(&mut self, id: Option<Id>) {
        let Some(id) = id else {
            self.say(Level::Info, "no batch to show for this line");
            return;
        };
        if !self.rows.iter().any(|&i| self.model.batches().get(i).is_some_and(|b| b.task == id.0 && b.key == id.1)) {
            self.set_filter("");
        }
        self.selected_id = Some(id);
        self.moved = true;
        self.view = View::Batches;
        self.rebuild();
        self.detail.open = true;
        self.detail.scroll = 0;
    }

    fn open_repair(&mut self, kind: Kind) {
        if self.view != View::Batches {
            self.say(Level::Info, "repairs are made from the batch view (1)");
            return;
        }
        let Some(b) = self.selected_batch() else {
            self.say(Level::Info, "no batch selected");
            return;
        };
        let (task, key) = (b.task.clone(), b.key.clone());
        // The selection stays on this batch whatever it becomes.
        self.moved = true;
        self.selected_id = Some((task.clone(), key.clone()));
        self.popup = Some(popup::plan(&self.model.src, kind, &task, &key));
    }

    fn move_by(&mut self, delta: isize) {
        let v = self.view.index();
        let len = match self.view {
            View::Batches => self.rows.len(),
            View::Runs => self.runs.len(),
            View::Doctor => self.findings.len(),
        };
        if len == 0 {
            self.selected[v] = 0;
            return;
        }
        let cur = self.selected[v] as isize;
        self.selected[v] = (cur.saturating_add(delta)).clamp(0, len as isize - 1) as usize;
        if self.view == View::Batches {
            self.moved = true;
            self.selected_id = self.selected_batch().map(|b| (b.task.clone(), b.key.clone()));
            self.refresh_detail(false);
        }
    }

    pub fn set_filter(&mut self, text: &str) {
        self.filter = Filter::parse(text);
        self.runs_generation = None;
        self.rebuild();
    }

    /// Filter and sort the batch table again, keeping the selected batch
    /// selected, and count the states.
    pub fn rebuild(&mut self) {
        let batches = self.model.batches();
        let mut counts = [0usize; 10];
        for b in batches {
            if let Some(i) = State::ALL.iter().position(|s| *s == b.state) {
                counts[i] += 1;
            }
        }
        self.counts = counts;
        let mut rows: Vec<usize> = if self.filter.is_empty() {
            (0..batches.len()).collect()
        } else {
            (0..batches.len()).filter(|&i| self.filter.matches(&batches[i])).collect()
        };
        let severity = |a: &Batch, b: &Batch| {
            a.state.cmp(&b.state).then_with(|| a.task.cmp(&b.task)).then_with(|| a.key.cmp(&b.key))
        };
        let age = |b: &Batch| b.lease.as_ref().and_then(|l| l.holder.judgement.as_ref()).and_then(|j| j.age);
        match self.sort {
            SortBy::Severity => rows.sort_unstable_by(|&x, &y| severity(&batches[x], &batches[y])),
            SortBy::Task => rows.sort_unstable_by(|&x, &y| {
                let (a, b) = (&batches[x], &batches[y]);
                a.task.cmp(&b.task).then_with(|| a.key.cmp(&b.key))
            }),
            SortBy::Age => rows.sort_unstable_by(|&x, &y| {
                let (a, b) = (&batches[x], &batches[y]);
                let (aa, ba) = (age(a).map(|a| a.age), age(b).map(|a| a.age));
                ba.cmp(&aa).then_with(|| severity(a, b))
            }),
            SortBy::Claims => rows.sort_unstable_by(|&x, &y| {
                let (a, b) = (&batches[x], &batches[y]);
                b.claim_count().cmp(&a.claim_count()).then_with(|| severity(a, b))
            }),
        }
        self.rows = rows;
        let found = self.selected_id.as_ref().filter(|_| self.moved).and_then(|id| {
            self.rows.iter().position(|&i| batches.get(i).is_some_and(|b| b.task == id.0 && b.key == id.1))
        });
        match found {
            Some(pos) => self.selected[0] = pos,
            None => {
                if !self.moved {
                    self.selected[0] = 0;
                }
                self.selected[0] = self.selected[0].min(self.rows.len().saturating_sub(1));
                self.selected_id = self.selected_batch().map(|b| (b.task.clone(), b.key.clone()));
            }
        }
        if self.rows.is_empty() {
            self.detail.open = false;
        }
        self.refresh_detail(false);
    }

    /// Explain the selected batch again if it changed (or `force`).
    pub fn refresh_detail(&mut self, force: bool) {
        let Some(b) = self.selected_batch() else {
            self.detail.id = None;
            self.detail.lines.clear();
            return;
        };
        let id = (b.task.clone(), b.key.clone());
        let same = self.detail.id.as_ref() == Some(&id);
        if same && !force && self.detail.generation == self.model.generation {
            return;
        }
        let e = ubunye::explain::explain(&self.model.scan, b.clone(), &self.model.src.uc);
        self.detail.lines = ubunye::explain::render(&e).lines().map(str::to_string).collect();
        if !same {
            self.detail.scroll = 0;
        }
        self.detail.scroll = self.detail.scroll.min(self.detail.lines.len().saturating_sub(1));
        self.detail.id = Some(id);
        self.detail.generation = self.model.generation;
    }

    /// Bring the runs or doctor view's data up to date before drawing it.
    pub fn prepare(&mut self) {
        match self.view {
            View::Batches => {}
            View::Runs if self.runs_generation != Some(self.model.generation) => {
                let batches = self.model.batches();
                let mut runs: Vec<(usize, usize)> = batches
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| self.filter.is_empty() || self.filter.matches(b))
                    .flat_map(|(bi, b)| (0..b.records.len()).map(move |ri| (bi, ri)))
                    .collect();
                runs.sort_by(|&(a, ar), &(b, br)| {
                    batches[b].records[br].started_at.cmp(&batches[a].records[ar].started_at)
                });
                self.runs = runs;
                self.runs_generation = Some(self.model.generation);
                self.selected[1] = self.selected[1].min(self.runs.len().saturating_sub(1));
            }
            View::Runs => {}
            View::Doctor => {
                let stale = self.findings_generation != Some(self.model.generation);
                let due = self.findings_at.is_none_or(|t| t.elapsed() > Duration::from_secs(3));
                if self.findings_generation.is_none() || (stale && due) {
                    self.findings = ubunye::doctor::examine(&self.model.scan);
                    self.findings_generation = Some(self.model.generation);
                    self.findings_at = Some(Instant::now());
                    self.selected[2] = self.selected[2].min(self.findings.len().saturating_sub(1));
                }
            }
        }
    }

    /// Held updates (shown in the status bar while frozen).
    pub fn held(&self) -> usize {
        self.held.count()
    }

    /// Set the watch mode shown in the status bar.
    pub fn set_watch(&mut self, mode: &str) {
        self.status.watch = mode.to_string();
    }
}
