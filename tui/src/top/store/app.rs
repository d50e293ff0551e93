//! The state of the dashboard over a store, and its update: an event in,
//! effects out (pure: no I/O here, so that every key is tested without a
//! terminal or a server). The keys, the footer and the `?` help come from
//! one table, [`KEYS`], per context.

use std::time::{Duration, SystemTime};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ubunye::bucket::{Polled, StoreBatch};
use ubunye::state::State;

use crate::top::keytable::Move;
use crate::top::popup::{Answer, Phase, Popup, Press};
use crate::top::shell::moved;

/// Where a key is pressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    /// The table (and the detail pane under it).
    Main,
    /// Typing a filter after `/`.
    Filter,
    /// The takeover popup: its plan and question, a refusal, an outcome.
    Popup,
    /// The `?` help.
    Help,
}

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// A move through the rows.
    Move(Move),
    Detail,
    Filter,
    All,
    Takeover,
    Copy,
    Help,
    Quit,
    /// A key of the popup (the one popup's keys, [`Press`]).
    Popup(Press),
    /// In the filter: done typing; clear it.
    Done,
    Clear,
    /// Close the help.
    Close,
}

/// One binding of [`KEYS`].
pub type Binding = crate::top::keytable::Binding<Ctx, Act>;

const fn b(
    ctx: Ctx,
    keys: &'static [KeyCode],
    shown: &'static str,
    what: &'static str,
    act: Act,
    footer: bool,
) -> Binding {
    Binding { ctx, keys, shown, what, act, footer }
}

use Act::Popup as P;
use KeyCode::{Char as C, Down, End, Enter, Esc, Home, Left, PageDown, PageUp, Right, Tab, Up};

/// Every key of the dashboard over a store.
pub const KEYS: &[Binding] = &[
    b(Ctx::Main, &[Up, C('k')], "↑/k", "previous batch", Act::Move(Move::Up), false),
    b(Ctx::Main, &[Down, C('j')], "↓/j", "next batch", Act::Move(Move::Down), true),
    b(Ctx::Main, &[Home, C('g')], "g", "first batch", Act::Move(Move::First), false),
    b(Ctx::Main, &[End, C('G')], "G", "last batch", Act::Move(Move::Last), false),
    b(Ctx::Main, &[PageUp], "PgUp", "a page up", Act::Move(Move::PageUp), false),
    b(Ctx::Main, &[PageDown], "PgDn", "a page down", Act::Move(Move::PageDown), false),
    b(Ctx::Main, &[Enter], "Enter", "explain the batch (read from the store)", Act::Detail, true),
    b(Ctx::Main, &[C('/')], "/", "filter: text, state:dead, task:demo/*", Act::Filter, true),
    b(Ctx::Main, &[C('a')], "a", "show or hide finished batches", Act::All, true),
    b(Ctx::Main, &[C('t')], "t", "take a dead batch over (shows the plan first)", Act::Takeover, true),
    b(Ctx::Main, &[C('c')], "c", "copy the batch's key (OSC 52)", Act::Copy, false),
    b(Ctx::Main, &[C('?')], "?", "this help", Act::Help, true),
    b(Ctx::Main, &[C('q'), Esc], "q", "quit (Esc: clear the filter first)", Act::Quit, true),
    b(Ctx::Filter, &[Enter], "Enter", "keep the filter", Act::Done, true),
    b(Ctx::Filter, &[Esc], "Esc", "clear the filter", Act::Clear, true),
    // The same keys as the use case dashboard's popup (`top::keys`).
    b(Ctx::Popup, &[Left, Right, Tab, C('h'), C('l')], "←/→", "the other answer", P(Press::Toggle), true),
    b(Ctx::Popup, &[C('y'), C('Y')], "y", "yes: take it over", P(Press::Yes), true),
    b(Ctx::Popup, &[C('n'), C('N'), C('q'), Esc], "n/Esc", "no: close, nothing is done", P(Press::No), true),
    b(Ctx::Popup, &[Enter], "Enter", "the highlighted answer (No unless moved)", P(Press::Enter), true),
    b(Ctx::Popup, &[Up, C('k')], "↑/k", "scroll the plan", P(Press::Scroll(Move::Up)), false),
    b(Ctx::Popup, &[Down, C('j')], "↓/j", "scroll the plan", P(Press::Scroll(Move::Down)), false),
    b(Ctx::Popup, &[PageUp], "PgUp", "the plan a page up", P(Press::Scroll(Move::PageUp)), false),
    b(Ctx::Popup, &[PageDown, C(' ')], "PgDn", "the plan a page down", P(Press::Scroll(Move::PageDown)), false),
    b(Ctx::Popup, &[Home, C('g')], "g", "the plan's top", P(Press::Scroll(Move::First)), false),
    b(Ctx::Popup, &[End, C('G')], "G", "the plan's end", P(Press::Scroll(Move::Last)), false),
    b(Ctx::Help, &[C('?'), Esc, C('q')], "?/Esc", "close the help", Act::Close, true),
];

/// The action of `key` in `ctx`, from [`KEYS`].
pub fn lookup(ctx: Ctx, key: &KeyEvent) -> Option<Act> {
    crate::top::keytable::lookup(KEYS, ctx, key)
}

/// The footer of `ctx`: (keys, what), from [`KEYS`]; read-only, without
/// the takeover.
pub fn footer(ctx: Ctx, read_only: bool) -> Vec<(&'static str, &'static str)> {
    crate::top::keytable::footer(KEYS, ctx, |a| shown(*a, read_only))
}

/// Whether an action is offered: `--read-only` leaves the takeover out.
pub fn shown(act: Act, read_only: bool) -> bool {
    !(read_only && act == Act::Takeover)
}

/// What the app asks the loop to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Read the batch's whole report (for the detail pane, or for a
    /// takeover's plan when `plan`).
    Explain { task: String, key: String, plan: bool },
    /// Take the batch over (the engine checks again as it acts).
    Takeover { task: String, key: String },
    /// Put this on the clipboard.
    Copy(String),
    /// End, with this exit code.
    Quit(i32),
}

/// The detail pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detail {
    Loading { task: String, key: String },
    Ready { task: String, key: String, lines: Vec<String> },
}

/// Everything the dashboard shows.
#[derive(Debug)]
pub struct StoreApp {
    /// The use case, as given.
    pub uc: String,
    /// How often the store is read.
    pub every: Duration,
    /// Every batch, as the last look judged them.
    pub batches: Vec<StoreBatch>,
    /// The store's time of the last look.
    pub now: Option<SystemTime>,
    /// Looks so far, and how many objects the last one read.
    pub looks: u64,
    pub last_read: usize,
    /// The last look's failure, shown until a look succeeds.
    pub error: Option<String>,
    /// Show finished batches too.
    pub all: bool,
    pub filter: String,
    pub typing: bool,
    /// The selected row of [`StoreApp::rows`].
    pub selected: usize,
    /// Rows in a page (the last drawing's).
    pub page: usize,
    pub detail: Option<Detail>,
    /// The takeover popup: what its yes asks for, the takeover.
    pub popup: Option<Popup<Effect>>,
    pub help: bool,
    /// `--read-only`: no takeover key.
    pub read_only: bool,
}

impl StoreApp {
    /// Nothing read yet.
    pub fn new(uc: &str, every: Duration) -> StoreApp {
        StoreApp {
            uc: uc.into(),
            every,
            batches: Vec::new(),
            now: None,
            looks: 0,
            last_read: 0,
            error: None,
            all: false,
            filter: String::new(),
            typing: false,
            selected: 0,
            page: 10,
            detail: None,
            popup: None,
            help: false,
            read_only: false,
        }
    }

    /// The context keys are looked up in.
    pub fn ctx(&self) -> Ctx {
        if self.help {
            Ctx::Help
        } else if self.popup.is_some() {
            Ctx::Popup
        } else if self.typing {
            Ctx::Filter
        } else {
            Ctx::Main
        }
    }

    /// The rows shown: most severe first, then task and key; finished ones
    /// only with `a`; those the filter passes (the use case dashboard's
    /// filter: `state:`, `task:`, `dt:`, `var:` and words).
    pub fn rows(&self) -> Vec<&StoreBatch> {
        let filter = crate::top::filter::Filter::parse(&self.filter);
        let mut rows: Vec<&StoreBatch> = self
            .batches
            .iter()
            .filter(|b| self.all || b.state != State::Finished)
            .filter(|b| filter.matches(*b))
            .collect();
        rows.sort_by(|a, b| (a.state, &a.task, &a.key).cmp(&(b.state, &b.task, &b.key)));
        rows
    }

    /// The selected batch's task and key.
    pub fn chosen(&self) -> Option<(String, String)> {
        self.rows().get(self.selected).map(|b| (b.task.clone(), b.key.clone()))
    }

    /// A look at the store arrived.
    pub fn looked(&mut self, polled: Result<Polled, String>) {
        match polled {
            Ok(p) => {
                let chosen = self.chosen();
                self.batches = p.batches;
                self.now = Some(p.now);
                self.looks += 1;
                self.last_read = p.read;
                self.error = None;
                self.keep_selection(chosen);
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// The same batch stays selected when rows move.
    fn keep_selection(&mut self, chosen: Option<(String, String)>) {
        let rows = self.rows();
        if let Some((t, k)) = chosen
            && let Some(i) = rows.iter().position(|b| b.task == t && b.key == k)
        {
            self.selected = i;
            return;
        }
        self.selected = self.selected.min(rows.len().saturating_sub(1));
    }

    /// A report arrived (for the pane, or a takeover's plan).
    pub fn explained(&mut self, task: &str, key: &str, plan: bool, report: crate::top::event::StoreReport) {
        let title = format!("take over {task} {key}");
        if plan {
            if !self.popup.as_ref().is_some_and(|p| p.phase == Phase::Planning && p.title == title) {
                return;
            }
            self.popup = Some(match report {
                Ok((_, Ok(plan))) => {
                    let mut lines = vec![
                        "The takeover will do what the next run of the batch would do: take the dead lease over,".into(),
                        "abort its claimed uploads, remove the claimed objects it made visible, and hand the lease back.".into(),
                        String::new(),
                    ];
                    lines.extend(plan.lines().map(str::to_string));
                    let what = Effect::Takeover { task: task.into(), key: key.into() };
                    Popup::new(title, lines, Phase::Asking { what, yes: false })
                }
                Ok((_, Err(reason))) | Err(reason) => refused(title, &reason),
            });
            return;
        }
        if matches!(&self.detail, Some(Detail::Loading { task: t, key: k }) if t == task && k == key) {
            let lines = match report {
                Ok((text, _)) => text.lines().map(str::to_string).collect(),
                Err(e) => vec![e],
            };
            self.detail = Some(Detail::Ready { task: task.into(), key: key.into(), lines });
        }
    }

    /// A takeover ended.
    pub fn repaired(&mut self, ok: bool, text: String) {
        if let Some(p) = &self.popup
            && p.phase == Phase::Running
        {
            let lines = std::iter::once(if ok { "Done." } else { "Not done." }).chain(text.lines());
            let lines = lines.map(str::to_string).collect();
            self.popup = Some(Popup::new(p.title.clone(), lines, Phase::Done { ok }));
        }
    }

    /// A key was pressed.
    pub fn key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        if key.code == C('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            return vec![Effect::Quit(0)];
        }
        let ctx = self.ctx();
        if ctx == Ctx::Filter {
            let act = lookup(ctx, key);
            crate::top::keytable::type_filter(act, Act::Done, Act::Clear, key, &mut self.filter, &mut self.typing);
            self.selected = 0;
            return Vec::new();
        }
        let Some(act) = lookup(ctx, key) else { return Vec::new() };
        match ctx {
            Ctx::Help => {
                self.help = false;
                Vec::new()
            }
            Ctx::Popup => self.popup_key(act),
            _ => self.main_key(act),
        }
    }

    fn main_key(&mut self, act: Act) -> Vec<Effect> {
        let n = self.rows().len();
        match act {
            Act::Move(m) => self.selected = moved(self.selected, m, n, self.page),
            Act::Filter => self.typing = true,
            Act::All => {
                let chosen = self.chosen();
                self.all = !self.all;
                self.keep_selection(chosen);
            }
            Act::Help => self.help = true,
            Act::Quit if !self.filter.is_empty() => {
                self.filter.clear();
                self.selected = 0;
            }
            Act::Quit => return vec![Effect::Quit(0)],
            Act::Detail => {
                if self.detail.is_some() {
                    self.detail = None;
                } else if let Some((task, key)) = self.chosen() {
                    self.detail = Some(Detail::Loading { task: task.clone(), key: key.clone() });
                    return vec![Effect::Explain { task, key, plan: false }];
                }
            }
            Act::Takeover if self.read_only => {
                self.popup =
                    Some(refused("read-only".into(), "this dashboard does not repair (started with --read-only)"));
            }
            Act::Takeover => {
                if let Some((task, key)) = self.chosen() {
                    let title = format!("take over {task} {key}");
                    let lines = vec!["reading the batch from the store…".into()];
                    self.popup = Some(Popup::new(title, lines, Phase::Planning));
                    return vec![Effect::Explain { task, key, plan: true }];
                }
            }
            Act::Copy => {
                if let Some((_, key)) = self.chosen() {
                    return vec![Effect::Copy(key)];
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn popup_key(&mut self, act: Act) -> Vec<Effect> {
        let (Some(p), Act::Popup(press)) = (&mut self.popup, act) else { return Vec::new() };
        match p.press(press) {
            Answer::Yes(takeover) => {
                let lines = vec!["taking it over…".into()];
                self.popup = Some(Popup::new(p.title.clone(), lines, Phase::Running));
                return vec![takeover];
            }
            Answer::No | Answer::Close => self.popup = None,
            Answer::Open => {}
        }
        Vec::new()
    }
}

/// The popup when no takeover applies: why.
fn refused(title: String, reason: &str) -> Popup<Effect> {
    Popup::new(title, vec![format!("No takeover applies: {reason}")], Phase::Refused)
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
