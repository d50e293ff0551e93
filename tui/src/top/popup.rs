//! The one popup of every dashboard that acts: a plan and its Yes/No
//! question, then the action under way and its outcome (or, before, why
//! none applies). Each dashboard fills it with its own words and its own
//! "what to act on" (`T`: the disk's repair plans, the store's batch); the
//! keys do the same in both, answered No unless the user says yes, and it is
//! drawn by one function ([`crate::top::ui::draw_popup`]).

use crate::top::keytable::Move;

/// A popup: its title, what it says, where that is scrolled to, and its
/// phase.
#[derive(Clone, Debug)]
pub struct Popup<T> {
    pub title: String,
    /// What it says, a line each (wrapped to its width when drawn): the
    /// whole plan, a refusal's reason, an outcome.
    pub lines: Vec<String>,
    pub scroll: Scroll,
    pub phase: Phase<T>,
}

/// Where a popup is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase<T> {
    /// The plan is being read.
    Planning,
    /// The plan is shown, and the question asked: `yes` is the highlighted
    /// answer, false until moved.
    Asking { what: T, yes: bool },
    /// Nothing applies: the lines say why.
    Refused,
    /// The action is under way; it cannot be dismissed, its outcome comes.
    Running,
    /// What the action did (`ok`), or why it refused as it acted.
    Done { ok: bool },
}

/// What a popup's key does (each dashboard's key table binds its keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Press {
    /// Move between No and Yes.
    Toggle,
    Yes,
    /// No, or close what only tells.
    No,
    /// The highlighted answer; or close what only tells.
    Enter,
    Scroll(Move),
}

/// What became of a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer<T> {
    /// The popup stays (perhaps scrolled or its answer moved).
    Open,
    /// Answered no: close it, nothing is done.
    No,
    /// It only told: close it.
    Close,
    /// Answered yes: act on this (the dashboard shows it under way).
    Yes(T),
}

impl<T: Clone> Popup<T> {
    pub fn new(title: impl Into<String>, lines: Vec<String>, phase: Phase<T>) -> Popup<T> {
        Popup { title: title.into(), lines, scroll: Scroll::default(), phase }
    }

    /// A key of the popup: the same in every dashboard.
    pub fn press(&mut self, p: Press) -> Answer<T> {
        if let Press::Scroll(m) = p {
            self.scroll.go(m);
            return Answer::Open;
        }
        match (&mut self.phase, p) {
            (Phase::Running, _) => Answer::Open,
            (Phase::Asking { yes, .. }, Press::Toggle) => {
                *yes = !*yes;
                Answer::Open
            }
            (Phase::Asking { what, yes }, Press::Yes | Press::Enter) if p == Press::Yes || *yes => {
                Answer::Yes(what.clone())
            }
            (Phase::Asking { .. }, Press::No | Press::Enter) => Answer::No,
            (_, Press::No | Press::Enter) => Answer::Close,
            _ => Answer::Open,
        }
    }

    /// The footer while the popup is open, unless it asks (then the key
    /// table's): nothing while it runs (no key but quitting is heard), else
    /// how to close it.
    pub fn notice_footer(&self) -> Option<&'static [(&'static str, &'static str)]> {
        match self.phase {
            Phase::Asking { .. } => None,
            Phase::Running => Some(&[]),
            _ => Some(&[("Enter/Esc", "close")]),
        }
    }
}

/// Where a popup's text is scrolled to, and how much of it the last drawing
/// showed (the text is wrapped to the popup's width, known when drawn).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scroll {
    /// The first line shown.
    pub top: usize,
    /// Lines shown; 0 until drawn.
    pub page: usize,
    /// Lines in all; 0 until drawn.
    pub len: usize,
}

impl Scroll {
    /// The first line shown when at the end (unknown until drawn: no limit).
    fn end(&self) -> usize {
        if self.len == 0 { usize::MAX } else { self.len.saturating_sub(self.page) }
    }

    /// A line, a page, or all the way, never past the end.
    pub fn go(&mut self, m: Move) {
        let page = self.page.max(1);
        self.top = match m {
            Move::Up => self.top.saturating_sub(1),
            Move::Down => self.top.saturating_add(1),
            Move::PageUp => self.top.saturating_sub(page),
            Move::PageDown => self.top.saturating_add(page),
            Move::First => 0,
            Move::Last => usize::MAX,
        }
        .min(self.end());
    }

    /// What the drawing had room for: `page` of `len` lines. The first line
    /// shown moves up if it was past the end.
    pub fn fit(&mut self, page: usize, len: usize) {
        self.page = page;
        self.len = len;
        self.top = self.top.min(self.end());
    }

    /// There is more than is shown.
    pub fn more(&self) -> bool {
        self.len > self.page
    }

    /// `1-18/19`: the lines shown and how many there are.
    pub fn counter(&self) -> String {
        format!("{}-{}/{}", self.top + 1, (self.top + self.page).min(self.len), self.len)
    }
}
