//! The one table of keys. The event loop looks keys up here, and the `?` help
//! overlay and the footer are drawn from it, so what is shown is what works.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Where the key is pressed: each context has its own bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    /// The batch, run and doctor views.
    Main,
    /// The detail pane has the focus (Enter on a batch).
    Detail,
    /// Typing a filter after `/`.
    Filter,
    /// A repair popup: the plan and the question, a refusal, or a result.
    Popup,
    /// The `?` overlay.
    Help,
}

impl Ctx {
    /// The heading of the context in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Ctx::Main => "Lists",
            Ctx::Detail => "Detail pane",
            Ctx::Filter => "Filter (after /)",
            Ctx::Popup => "Repair popup",
            Ctx::Help => "This help",
        }
    }
}

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    First,
    Last,
    /// Open (or close) the detail pane of the selected batch.
    Detail,
    /// Start typing a filter.
    Filter,
    /// Next sort order.
    Sort,
    Takeover,
    Finish,
    /// Copy the selected batch's key to the clipboard (OSC 52).
    Copy,
    /// Stop (or resume) applying updates.
    Freeze,
    Rescan,
    Help,
    /// Next view (batches, runs, doctor).
    NextView,
    ViewBatches,
    ViewRuns,
    ViewDoctor,
    /// Close the topmost popup, overlay or pane (Esc).
    Close,
    Quit,
    /// In a popup: answer yes (carry out the repair).
    Yes,
    /// In a popup: answer no.
    No,
    /// In a popup: move between No and Yes.
    Toggle,
    /// In a popup: carry out the highlighted answer; in the filter: apply it.
    Confirm,
    /// In the filter: delete the last character.
    Backspace,
    /// In the filter: clear it.
    Clear,
}

/// A key as the table names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum K {
    /// A key without Ctrl or Alt (Shift is part of the character).
    Key(KeyCode),
    /// Ctrl and a letter.
    Ctrl(char),
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub ctx: Ctx,
    pub keys: &'static [K],
    /// How the keys are written in the help and the footer.
    pub label: &'static str,
    /// What the key does, in the help.
    pub help: &'static str,
    /// The word in the footer, when it is shown there.
    pub footer: Option<&'static str>,
    pub action: Action,
}

use Action as A;
use Ctx::{Detail, Filter, Help, Main, Popup};
use KeyCode as C;

const fn b(
    ctx: Ctx,
    keys: &'static [K],
    label: &'static str,
    help: &'static str,
    footer: Option<&'static str>,
    action: Action,
) -> Binding {
    Binding { ctx, keys, label, help, footer, action }
}

/// Every key `top` knows.
pub const BINDINGS: &[Binding] = &[
    b(Main, &[K::Key(C::Up), K::Key(C::Char('k'))], "↑/k", "select the row above", None, A::Up),
    b(Main, &[K::Key(C::Down), K::Key(C::Char('j'))], "↓/j", "select the row below", None, A::Down),
    b(Main, &[K::Key(C::PageUp), K::Ctrl('b')], "PgUp", "a page up", None, A::PageUp),
    b(Main, &[K::Key(C::PageDown), K::Ctrl('f')], "PgDn", "a page down", None, A::PageDown),
    b(Main, &[K::Key(C::Home), K::Key(C::Char('g'))], "Home/g", "the first row", None, A::First),
    b(Main, &[K::Key(C::End), K::Key(C::Char('G'))], "End/G", "the last row", None, A::Last),
    b(Main, &[K::Key(C::Enter)], "Enter", "the batch's full report (explain), scrollable", Some("detail"), A::Detail),
    b(Main, &[K::Key(C::Char('/'))], "/", "filter: text, state:dead, task:demo/*", Some("filter"), A::Filter),
    b(Main, &[K::Key(C::Char('s'))], "s", "sort: severity, age, task, claims", Some("sort"), A::Sort),
    b(Main, &[K::Key(C::Char('t'))], "t", "take over the batch (shows the plan first)", Some("takeover"), A::Takeover),
    b(Main, &[K::Key(C::Char('f'))], "f", "finish a pending commit (shows the plan first)", Some("finish"), A::Finish),
    b(Main, &[K::Key(C::Char('y'))], "y", "copy the batch key (OSC 52)", Some("copy key"), A::Copy),
    b(Main, &[K::Key(C::Char('F'))], "F", "freeze: stop applying updates (again: resume)", Some("freeze"), A::Freeze),
    b(Main, &[K::Key(C::Char('r'))], "r", "rescan everything now", Some("rescan"), A::Rescan),
    b(Main, &[K::Key(C::Tab)], "Tab", "next view: batches, runs, doctor", Some("view"), A::NextView),
    b(Main, &[K::Key(C::Char('1'))], "1", "batches", None, A::ViewBatches),
    b(Main, &[K::Key(C::Char('2'))], "2", "run records", None, A::ViewRuns),
    b(Main, &[K::Key(C::Char('3'))], "3", "doctor findings", None, A::ViewDoctor),
    b(Main, &[K::Key(C::Char('?'))], "?", "this help", Some("help"), A::Help),
    b(Main, &[K::Key(C::Esc)], "Esc", "clear the filter", None, A::Close),
    b(Main, &[K::Key(C::Char('q')), K::Ctrl('c')], "q", "quit", Some("quit"), A::Quit),
    b(Detail, &[K::Key(C::Up), K::Key(C::Char('k'))], "↑/k", "scroll up", None, A::Up),
    b(Detail, &[K::Key(C::Down), K::Key(C::Char('j'))], "↓/j", "scroll down", None, A::Down),
    b(Detail, &[K::Key(C::PageUp), K::Ctrl('b')], "PgUp", "a page up", None, A::PageUp),
    b(Detail, &[K::Key(C::PageDown), K::Ctrl('f'), K::Key(C::Char(' '))], "PgDn", "a page down", None, A::PageDown),
    b(Detail, &[K::Key(C::Home), K::Key(C::Char('g'))], "Home/g", "the top", None, A::First),
    b(Detail, &[K::Key(C::End), K::Key(C::Char('G'))], "End/G", "the end", None, A::Last),
    b(Detail, &[K::Key(C::Esc), K::Key(C::Enter)], "Esc", "back to the list", Some("back"), A::Close),
    b(Detail, &[K::Key(C::Char('t'))], "t", "take over the batch", Some("takeover"), A::Takeover),
    b(Detail, &[K::Key(C::Char('f'))], "f", "finish a pending commit", Some("finish"), A::Finish),
    b(Detail, &[K::Key(C::Char('y'))], "y", "copy the batch key", Some("copy key"), A::Copy),
    b(Detail, &[K::Key(C::Char('F'))], "F", "freeze / resume", None, A::Freeze),
    b(Detail, &[K::Key(C::Char('?'))], "?", "this help", Some("help"), A::Help),
    b(Detail, &[K::Key(C::Char('q')), K::Ctrl('c')], "q", "quit", Some("quit"), A::Quit),
    b(Filter, &[K::Key(C::Enter)], "Enter", "keep the filter", Some("keep"), A::Confirm),
    b(Filter, &[K::Key(C::Esc)], "Esc", "drop the filter", Some("drop"), A::Clear),
    b(Filter, &[K::Key(C::Backspace)], "Backspace", "delete a character", None, A::Backspace),
    b(Filter, &[K::Ctrl('c')], "Ctrl-C", "quit", None, A::Quit),
    b(Popup, &[K::Key(C::Char('y')), K::Key(C::Char('Y'))], "y", "yes: carry out the plan", Some("yes"), A::Yes),
    b(Popup, &[K::Key(C::Char('n')), K::Key(C::Char('N'))], "n", "no: change nothing", Some("no"), A::No),
    b(
        Popup,
        &[K::Key(C::Left), K::Key(C::Right), K::Key(C::Tab), K::Key(C::Char('h')), K::Key(C::Char('l'))],
        "←/→",
        "move between No and Yes",
        None,
        A::Toggle,
    ),
    b(Popup, &[K::Key(C::Enter)], "Enter", "the highlighted answer (No unless moved)", Some("answer"), A::Confirm),
    b(Popup, &[K::Key(C::Up), K::Key(C::Char('k'))], "↑/k", "scroll the plan", None, A::Up),
    b(Popup, &[K::Key(C::Down), K::Key(C::Char('j'))], "↓/j", "scroll the plan", None, A::Down),
    b(Popup, &[K::Key(C::Esc)], "Esc", "cancel: change nothing", Some("cancel"), A::Close),
    b(Popup, &[K::Ctrl('c')], "Ctrl-C", "quit (a repair under way finishes first)", None, A::Quit),
    b(Help, &[K::Key(C::Up), K::Key(C::Char('k'))], "↑/k", "scroll up", None, A::Up),
    b(Help, &[K::Key(C::Down), K::Key(C::Char('j'))], "↓/j", "scroll down", Some("scroll"), A::Down),
    b(Help, &[K::Key(C::PageUp), K::Ctrl('b')], "PgUp", "a page up", None, A::PageUp),
    b(Help, &[K::Key(C::PageDown), K::Ctrl('f'), K::Key(C::Char(' '))], "PgDn", "a page down", None, A::PageDown),
    b(Help, &[K::Key(C::Esc), K::Key(C::Char('?')), K::Key(C::Char('q'))], "Esc/?", "close", Some("close"), A::Close),
    b(Help, &[K::Ctrl('c')], "Ctrl-C", "quit", None, A::Quit),
];

fn matches(k: K, ev: &KeyEvent) -> bool {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let alt = ev.modifiers.contains(KeyModifiers::ALT);
    match k {
        K::Ctrl(c) => ctrl && !alt && ev.code == KeyCode::Char(c),
        K::Key(KeyCode::Char(c)) => !ctrl && !alt && matches!(ev.code, KeyCode::Char(e) if e == c),
        // BackTab and Tab: Shift is not asked for.
        K::Key(code) => !ctrl && !alt && ev.code == code,
    }
}

/// The action of a key in a context, if it has one.
pub fn lookup(ctx: Ctx, ev: &KeyEvent) -> Option<Action> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    BINDINGS.iter().filter(|b| b.ctx == ctx).find(|b| b.keys.iter().any(|k| matches(*k, ev))).map(|b| b.action)
}

/// The bindings of a context, in table order.
pub fn of(ctx: Ctx) -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(move |b| b.ctx == ctx)
}

/// `t takeover  f finish ...`: the footer of a context.
pub fn footer(ctx: Ctx) -> Vec<(&'static str, &'static str)> {
    of(ctx).filter_map(|b| b.footer.map(|f| (b.label, f))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        for ctx in [Main, Detail, Filter, Popup, Help] {
            let keys: Vec<K> = of(ctx).flat_map(|b| b.keys.iter().copied()).collect();
            for (i, k) in keys.iter().enumerate() {
                assert!(!keys[i + 1..].contains(k), "{k:?} twice in {ctx:?}");
            }
        }
    }

    #[test]
    fn shift_letters_and_ctrl_are_told_apart() {
        let key = |c, m| KeyEvent::new(KeyCode::Char(c), m);
        assert_eq!(lookup(Main, &key('F', KeyModifiers::SHIFT)), Some(Action::Freeze));
        assert_eq!(lookup(Main, &key('f', KeyModifiers::NONE)), Some(Action::Finish));
        assert_eq!(lookup(Main, &key('f', KeyModifiers::CONTROL)), Some(Action::PageDown));
        assert_eq!(lookup(Main, &key('c', KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(lookup(Popup, &key('y', KeyModifiers::NONE)), Some(Action::Yes));
        assert_eq!(lookup(Main, &key('y', KeyModifiers::NONE)), Some(Action::Copy));
    }
}
