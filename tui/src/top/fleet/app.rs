//! The fleet view's state and its update (pure: an event in, effects out),
//! and its one table of keys, [`KEYS`]: what is looked up is what the footer
//! and the `?` help show.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ubunye::census::Census;
use ubunye::state::{Flag, State};

use crate::top::event::Event;
use crate::top::keytable::Move;
use crate::top::shell::moved;

/// Where a key is pressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    Main,
    /// Typing a filter after `/`.
    Filter,
    /// The `?` overlay.
    Help,
}

impl Ctx {
    pub const ALL: [Ctx; 3] = [Ctx::Main, Ctx::Filter, Ctx::Help];

    /// The heading of the context in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Ctx::Main => "Use cases",
            Ctx::Filter => "Filter (after /)",
            Ctx::Help => "This help",
        }
    }
}

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// A move through the rows (in a popup: its text).
    Move(Move),
    Open,
    Filter,
    Read,
    Help,
    Quit,
    /// In the filter: done typing; clear it.
    Done,
    Clear,
    /// Close the help.
    Close,
}

/// One binding of [`KEYS`].
pub type Binding = crate::top::keytable::Binding<Ctx, Act>;

use KeyCode::{Char as C, Down, End, Enter, Esc, Home, Up};

const fn b(ctx: Ctx, keys: &'static [KeyCode], shown: &'static str, what: &'static str, act: Act) -> Binding {
    Binding { ctx, keys, shown, what, act, footer: true }
}

const fn hidden(ctx: Ctx, keys: &'static [KeyCode], shown: &'static str, what: &'static str, act: Act) -> Binding {
    Binding { ctx, keys, shown, what, act, footer: false }
}

/// Every key of the fleet view.
pub const KEYS: &[Binding] = &[
    hidden(Ctx::Main, &[Up, C('k')], "↑/k", "previous use case", Act::Move(Move::Up)),
    b(Ctx::Main, &[Down, C('j')], "↓/j", "next use case", Act::Move(Move::Down)),
    hidden(Ctx::Main, &[Home, C('g')], "g", "first use case", Act::Move(Move::First)),
    hidden(Ctx::Main, &[End, C('G')], "G", "last use case", Act::Move(Move::Last)),
    b(Ctx::Main, &[Enter], "Enter", "open its dashboard (q there comes back here)", Act::Open),
    b(Ctx::Main, &[C('/')], "/", "filter (uc:TEXT, or TEXT: the use cases whose name holds it)", Act::Filter),
    b(Ctx::Main, &[C('r')], "r", "read all again now (whole, doctor too)", Act::Read),
    b(Ctx::Main, &[C('?')], "?", "this help", Act::Help),
    b(Ctx::Main, &[C('q'), Esc], "q", "quit (Esc: clear the filter first)", Act::Quit),
    b(Ctx::Filter, &[Enter], "Enter", "keep the filter", Act::Done),
    b(Ctx::Filter, &[Esc], "Esc", "clear the filter", Act::Clear),
    b(Ctx::Help, &[C('?'), Esc, C('q')], "?/Esc", "close the help", Act::Close),
];

/// The action of `key` in `ctx`, from [`KEYS`].
pub fn lookup(ctx: Ctx, key: &KeyEvent) -> Option<Act> {
    crate::top::keytable::lookup(KEYS, ctx, key)
}

/// The footer of `ctx`: (keys, what), from [`KEYS`].
pub fn footer(ctx: Ctx) -> Vec<(&'static str, &'static str)> {
    crate::top::keytable::footer(KEYS, ctx, |_| true)
}

/// What the app asks of the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    Quit(i32),
    /// Open the dashboard of the use case at this place in the list.
    Open(usize),
    /// Read every use case again now.
    ReadNow,
}

/// One use case: its name as given, and its census once read.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub census: Option<Census>,
}

/// One use case's figures, as the table shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Batches in each state, at [`State::rank`].
    pub states: [u64; State::ALL.len()],
    pub stalled: u64,
    /// The oldest lease waiting for someone (dead, kept, pending, orphan).
    pub oldest: Option<Duration>,
    pub findings: u64,
}

impl Totals {
    pub fn of(c: &Census) -> Totals {
        let mut t = Totals::default();
        for task in c.tasks.values() {
            for (i, n) in task.states.iter().enumerate() {
                t.states[i] += n;
            }
            t.stalled += task.flags.get(&Flag::Stalled).copied().unwrap_or(0);
        }
        t.oldest = c.oldest.values().max().copied();
        t.findings = c.findings.values().sum();
        t
    }

    pub fn batches(&self) -> u64 {
        self.states.iter().sum()
    }

    pub fn count(&self, s: State) -> u64 {
        self.states[s.rank()]
    }

    /// Not finished: what `leases list` shows without `--all`.
    pub fn open(&self) -> u64 {
        self.batches() - self.count(State::Finished)
    }

    fn add(&mut self, o: &Totals) {
        for (a, b) in self.states.iter_mut().zip(o.states) {
            *a += b;
        }
        self.stalled += o.stalled;
        self.oldest = self.oldest.max(o.oldest);
        self.findings += o.findings;
    }
}

/// The fleet view.
#[derive(Debug)]
pub struct FleetApp {
    pub members: Vec<Member>,
    /// The selected row, among those the filter lets through.
    pub selected: usize,
    pub filter: String,
    pub typing: bool,
    pub help: bool,
    /// How often every use case is read again.
    pub every: Duration,
    /// Whole reads done, the last one's time, and the ticks since it.
    pub rounds: u64,
    pub took: Duration,
    pub since: u64,
    /// A line for the header (a use case that could not be opened).
    pub message: Option<String>,
}

impl FleetApp {
    pub fn new(names: Vec<String>, every: Duration) -> FleetApp {
        FleetApp {
            members: names.into_iter().map(|name| Member { name, census: None }).collect(),
            selected: 0,
            filter: String::new(),
            typing: false,
            help: false,
            every,
            rounds: 0,
            took: Duration::ZERO,
            since: 0,
            message: None,
        }
    }

    pub fn ctx(&self) -> Ctx {
        if self.help {
            Ctx::Help
        } else if self.typing {
            Ctx::Filter
        } else {
            Ctx::Main
        }
    }

    /// The places of the use cases the filter lets through, in the order given.
    pub fn rows(&self) -> Vec<usize> {
        let f = self.filter.trim();
        let f = f.strip_prefix("uc:").unwrap_or(f).to_lowercase();
        (0..self.members.len()).filter(|&i| self.members[i].name.to_lowercase().contains(&f)).collect()
    }

    /// The selected use case's place, when a row is selected.
    pub fn chosen(&self) -> Option<usize> {
        self.rows().get(self.selected).copied()
    }

    /// The figures of every use case read so far, added up.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for c in self.members.iter().filter_map(|m| m.census.as_ref()) {
            t.add(&Totals::of(c));
        }
        t
    }

    /// One event in: what the loop must do.
    pub fn handle(&mut self, ev: Event) -> Vec<Effect> {
        match ev {
            Event::Key(k) => return self.key(&k),
            Event::FleetCounted(i, c) => {
                if let Some(m) = self.members.get_mut(i) {
                    m.census = Some(*c);
                }
            }
            Event::FleetRound(took) => {
                self.rounds += 1;
                self.took = took;
                self.since = 0;
            }
            Event::Tick => self.since += 1,
            Event::Signal(sig) => return vec![Effect::Quit(128 + sig)],
            _ => {}
        }
        Vec::new()
    }

    fn key(&mut self, key: &KeyEvent) -> Vec<Effect> {
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
        let n = self.rows().len();
        match lookup(ctx, key) {
            Some(Act::Close) => self.help = false,
            Some(Act::Move(m)) => self.selected = moved(self.selected, m, n, 1),
            Some(Act::Filter) => self.typing = true,
            Some(Act::Help) => self.help = true,
            Some(Act::Read) => return vec![Effect::ReadNow],
            Some(Act::Quit) if !self.filter.is_empty() && key.code == Esc => {
                self.filter.clear();
                self.selected = 0;
            }
            Some(Act::Quit) => return vec![Effect::Quit(0)],
            Some(Act::Open) => return self.open(),
            _ => {}
        }
        Vec::new()
    }

    fn open(&mut self) -> Vec<Effect> {
        let Some(i) = self.chosen() else { return Vec::new() };
        let m = &self.members[i];
        match m.census.as_ref().and_then(|c| c.error.as_ref()) {
            // What cannot be read cannot be shown: say why, stay here.
            Some(e) => {
                self.message = Some(format!("cannot open {}: {e}", m.name));
                Vec::new()
            }
            None => {
                self.message = None;
                vec![Effect::Open(i)]
            }
        }
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
