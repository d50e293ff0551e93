//! The one table of keys. The event loop looks keys up here, and the `?` help
//! overlay and the footer are drawn from it, so what is shown is what works:
//! a binding of the lists names the views it works in, and is neither looked
//! up, nor offered in the footer, in any other.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::top::keytable::Move;
use crate::top::popup::Press;
use crate::top::view::View;

/// Where the key is pressed: each context has its own bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctx {
    /// The batch, run and doctor views (each binding says in which).
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
    pub const ALL: [Ctx; 5] = [Ctx::Main, Ctx::Detail, Ctx::Filter, Ctx::Popup, Ctx::Help];

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
    /// Sort by the next column (state, age, task, claims).
    Sort,
    /// Reverse the order of the sort.
    Reverse,
    Takeover,
    Finish,
    /// Copy the selected batch's key to the clipboard (OSC 52).
    Copy,
    /// Show the run's log in the detail pane, followed (again: the report).
    Log,
    /// Tag (or untag) the selected batch: t and f then act on every tagged.
    Tag,
    /// Stop (or resume) applying updates.
    Freeze,
    Rescan,
    Help,
    /// Next view (batches, runs, doctor).
    NextView,
    ViewBatches,
    ViewRuns,
    ViewDoctor,
    /// The selected batch's task by date (its history).
    ViewHistory,
    /// Close the topmost popup, overlay or pane (Esc).
    Close,
    Quit,
    /// A key of the repair popup (the one popup's keys, [`Press`]).
    Popup(Press),
    /// In the filter: apply it.
    Confirm,
    /// In the filter: delete the last character.
    Backspace,
    /// In the filter: clear it.
    Clear,
}

impl Action {
    /// Whether it changes a use case (a repair): what `--read-only` leaves out.
    pub fn writes(self) -> bool {
        matches!(self, Action::Takeover | Action::Finish | Action::Tag)
    }
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
    /// The views it works in: all of them unless [`Binding::only`] says
    /// otherwise (the detail pane is the batch view's; the filter, the
    /// popups and the help are over any view).
    pub views: &'static [View],
}

impl Binding {
    /// The binding, in these views only.
    const fn only(self, views: &'static [View]) -> Binding {
        Binding { views, ..self }
    }

    /// It works in this view.
    pub fn works_in(&self, view: View) -> bool {
        self.views.contains(&view)
    }
}

use Action as A;
use Action::Popup as P;
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
    Binding { ctx, keys, label, help, footer, action, views: &View::ALL }
}

const BATCHES: &[View] = &[View::Batches];
/// The views the `/` filter narrows.
const FILTERED: &[View] = &[View::Batches, View::Runs];
/// The views whose lines lead to a batch.
const TO_BATCH: &[View] = &[View::Runs, View::Doctor, View::History];

/// Every key `top` knows.
pub const BINDINGS: &[Binding] = &[
    b(Main, &[K::Key(C::Up), K::Key(C::Char('k'))], "↑/k", "select the row above", None, A::Up),
    b(Main, &[K::Key(C::Down), K::Key(C::Char('j'))], "↓/j", "select the row below", None, A::Down),
    b(Main, &[K::Key(C::PageUp), K::Ctrl('b')], "PgUp", "a page up", None, A::PageUp),
    b(Main, &[K::Key(C::PageDown), K::Ctrl('f')], "PgDn", "a page down", None, A::PageDown),
    b(Main, &[K::Key(C::Home), K::Key(C::Char('g'))], "Home/g", "the first row", None, A::First),
    b(Main, &[K::Key(C::End), K::Key(C::Char('G'))], "End/G", "the last row", None, A::Last),
    b(Main, &[K::Key(C::Enter)], "Enter", "the batch's full report (explain), scrollable", Some("detail"), A::Detail)
        .only(BATCHES),
    b(Main, &[K::Key(C::Enter)], "Enter", "the line's batch, with its full report", Some("batch"), A::Detail)
        .only(TO_BATCH),
    b(Main, &[K::Key(C::Char('/'))], "/", "filter: text, state:dead, task:demo/*", Some("filter"), A::Filter)
        .only(FILTERED),
    b(Main, &[K::Key(C::Char('t'))], "t", "take over the batch (shows the plan first)", Some("takeover"), A::Takeover)
        .only(BATCHES),
    b(Main, &[K::Key(C::Char('f'))], "f", "finish a pending commit (shows the plan first)", Some("finish"), A::Finish)
        .only(BATCHES),
    b(Main, &[K::Key(C::Char('F'))], "F", "freeze: stop applying updates (again: resume)", Some("freeze"), A::Freeze),
    b(Main, &[K::Key(C::Char('s'))], "s", "sort by the next column: state, age, task, claims", Some("sort"), A::Sort)
        .only(BATCHES),
    b(Main, &[K::Key(C::Char('S'))], "S", "reverse the sort (the header marks it ▲ or ▼)", Some("sort"), A::Reverse)
        .only(BATCHES),
    b(Main, &[K::Key(C::Char('y'))], "y", "copy the batch key (OSC 52)", Some("copy key"), A::Copy).only(BATCHES),
    b(Main, &[K::Key(C::Char('l'))], "l", "the run's log (a live run's is followed)", Some("log"), A::Log)
        .only(BATCHES),
    b(
        Main,
        &[K::Key(C::Char(' '))],
        "Space",
        "tag the batch: t and f then act on every tagged one",
        Some("tag"),
        A::Tag,
    )
    .only(BATCHES),
    b(Main, &[K::Key(C::Char('r'))], "r", "rescan everything now", Some("rescan"), A::Rescan),
    b(Main, &[K::Key(C::Tab)], "Tab", "next view: batches, runs, doctor, history", Some("view"), A::NextView),
    b(Main, &[K::Key(C::Char('1'))], "1", "batches", None, A::ViewBatches),
    b(Main, &[K::Key(C::Char('2'))], "2", "run records", None, A::ViewRuns),
    b(Main, &[K::Key(C::Char('3'))], "3", "doctor findings", None, A::ViewDoctor),
    b(
        Main,
        &[K::Key(C::Char('4')), K::Key(C::Char('h'))],
        "4/h",
        "its task by date: the days failed or never run",
        Some("history"),
        A::ViewHistory,
    )
    .only(BATCHES),
    b(Main, &[K::Key(C::Char('?'))], "?", "this help", Some("help"), A::Help),
    b(Main, &[K::Key(C::Esc)], "Esc", "clear the tags, then the filter", None, A::Close).only(FILTERED),
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
    b(Detail, &[K::Key(C::Char('l'))], "l", "the run's log / the report", Some("log"), A::Log),
    b(Detail, &[K::Key(C::Char('F'))], "F", "freeze / resume", None, A::Freeze),
    b(Detail, &[K::Key(C::Char('?'))], "?", "this help", Some("help"), A::Help),
    b(Detail, &[K::Key(C::Char('q')), K::Ctrl('c')], "q", "quit", Some("quit"), A::Quit),
    b(Filter, &[K::Key(C::Enter)], "Enter", "keep the filter", Some("keep"), A::Confirm),
    b(Filter, &[K::Key(C::Esc)], "Esc", "drop the filter", Some("drop"), A::Clear),
    b(Filter, &[K::Key(C::Backspace)], "Backspace", "delete a character", None, A::Backspace),
    b(Filter, &[K::Ctrl('c')], "Ctrl-C", "quit", None, A::Quit),
    b(Popup, &[K::Key(C::Char('y')), K::Key(C::Char('Y'))], "y", "yes: carry out the plan", Some("yes"), P(Press::Yes)),
    b(Popup, &[K::Key(C::Char('n')), K::Key(C::Char('N'))], "n", "no: change nothing", Some("no"), P(Press::No)),
    b(
        Popup,
        &[K::Key(C::Left), K::Key(C::Right), K::Key(C::Tab), K::Key(C::Char('h')), K::Key(C::Char('l'))],
        "←/→",
        "move between No and Yes",
        None,
        P(Press::Toggle),
    ),
    b(Popup, &[K::Key(C::Enter)], "Enter", "the highlighted answer (No unless moved)", Some("answer"), P(Press::Enter)),
    b(Popup, &[K::Key(C::Up), K::Key(C::Char('k'))], "↑/k", "scroll the plan", None, P(Press::Scroll(Move::Up))),
    b(Popup, &[K::Key(C::Down), K::Key(C::Char('j'))], "↓/j", "scroll the plan", None, P(Press::Scroll(Move::Down))),
    b(Popup, &[K::Key(C::PageUp), K::Ctrl('b')], "PgUp", "the plan a page up", None, P(Press::Scroll(Move::PageUp))),
    b(
        Popup,
        &[K::Key(C::PageDown), K::Ctrl('f'), K::Key(C::Char(' '))],
        "PgDn",
        "the plan a page down",
        None,
        P(Press::Scroll(Move::PageDown)),
    ),
    b(Popup, &[K::Key(C::Home), K::Key(C::Char('g'))], "Home/g", "the plan's top", None, P(Press::Scroll(Move::First))),
    b(Popup, &[K::Key(C::End), K::Key(C::Char('G'))], "End/G", "the plan's end", None, P(Press::Scroll(Move::Last))),
    b(Popup, &[K::Key(C::Esc), K::Key(C::Char('q'))], "Esc", "cancel: change nothing", Some("cancel"), P(Press::No)),
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

fn binding(ctx: Ctx, view: View, ev: &KeyEvent) -> Option<&'static Binding> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    of(ctx, view).find(|b| b.keys.iter().any(|k| matches(*k, ev)))
}

/// The action of a key in a context and view, if it has one there.
pub fn lookup(ctx: Ctx, view: View, ev: &KeyEvent) -> Option<Action> {
    binding(ctx, view, ev).map(|b| b.action)
}

/// A key that does nothing in this view but works in another: its binding
/// there (so that the user can be told where).
pub fn elsewhere(ctx: Ctx, view: View, ev: &KeyEvent) -> Option<&'static Binding> {
    if binding(ctx, view, ev).is_some() {
        return None;
    }
    View::ALL.into_iter().filter(|v| *v != view).find_map(|v| binding(ctx, v, ev))
}

/// The bindings of a context that work in a view, in table order.
pub fn of(ctx: Ctx, view: View) -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(move |b| b.ctx == ctx && b.works_in(view))
}

/// `t takeover  f finish ...`: the footer of a context in a view. Next
/// bindings with the same word share it: `s/S sort`.
pub fn footer(ctx: Ctx, view: View, read_only: bool) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for b in of(ctx, view).filter(|b| !(read_only && b.action.writes())) {
        let Some(word) = b.footer else { continue };
        match out.last_mut() {
            Some((label, w)) if *w == word => {
                label.push('/');
                label.push_str(b.label);
            }
            _ => out.push((b.label.to_string(), word)),
        }
    }
    out
}

/// The help of a context: groups of bindings, each with its heading, the
/// bindings of every view first, then those of some views under their names
/// (`Only in 1 batches`), in table order.
pub fn help(ctx: Ctx, read_only: bool) -> Vec<(String, Vec<&'static Binding>)> {
    let mut groups: Vec<(&'static [View], Vec<&'static Binding>)> = Vec::new();
    for b in BINDINGS.iter().filter(|b| b.ctx == ctx && !(read_only && b.action.writes())) {
        match groups.iter_mut().find(|(v, _)| *v == b.views) {
            Some((_, g)) => g.push(b),
            None => groups.push((b.views, vec![b])),
        }
    }
    groups.sort_by_key(|(v, _)| v.len() != View::ALL.len());
    groups
        .into_iter()
        .map(|(views, g)| {
            let heading = if views.len() == View::ALL.len() {
                ctx.title().to_string()
            } else {
                let names: Vec<&str> = views.iter().map(|v| v.title()).collect();
                format!("Only in {}", names.join(" and "))
            };
            (heading, g)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice_in_one_context_and_view() {
        for ctx in Ctx::ALL {
            for view in View::ALL {
                let keys: Vec<K> = of(ctx, view).flat_map(|b| b.keys.iter().copied()).collect();
                for (i, k) in keys.iter().enumerate() {
                    assert!(!keys[i + 1..].contains(k), "{k:?} twice in {ctx:?} {view:?}");
                }
            }
        }
    }

    #[test]
    fn shift_letters_and_ctrl_are_told_apart() {
        let key = |c, m| KeyEvent::new(KeyCode::Char(c), m);
        let b = View::Batches;
        assert_eq!(lookup(Main, b, &key('F', KeyModifiers::SHIFT)), Some(Action::Freeze));
        assert_eq!(lookup(Main, b, &key('f', KeyModifiers::NONE)), Some(Action::Finish));
        assert_eq!(lookup(Main, b, &key('f', KeyModifiers::CONTROL)), Some(Action::PageDown));
        assert_eq!(lookup(Main, b, &key('c', KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(lookup(Popup, b, &key('y', KeyModifiers::NONE)), Some(Action::Popup(Press::Yes)));
        assert_eq!(lookup(Main, b, &key('y', KeyModifiers::NONE)), Some(Action::Copy));
        assert_eq!(lookup(Main, b, &key('s', KeyModifiers::NONE)), Some(Action::Sort));
        assert_eq!(lookup(Main, b, &key('S', KeyModifiers::SHIFT)), Some(Action::Reverse));
    }

    #[test]
    fn the_repairs_are_the_batch_views_only() {
        let t = KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE);
        assert_eq!(lookup(Main, View::Batches, &t), Some(Action::Takeover));
        for view in [View::Runs, View::Doctor] {
            assert_eq!(lookup(Main, view, &t), None, "{view:?}");
            assert_eq!(elsewhere(Main, view, &t).map(|b| b.action), Some(Action::Takeover));
            let words: Vec<&str> = footer(Main, view, false).into_iter().map(|(_, w)| w).collect();
            for no in ["takeover", "finish", "copy key", "sort", "detail"] {
                assert!(!words.contains(&no), "{view:?} offers {no}: {words:?}");
            }
        }
        assert_eq!(elsewhere(Main, View::Batches, &t).map(|b| b.action), None);
    }

    #[test]
    fn next_bindings_with_one_word_share_it_in_the_footer() {
        let f = footer(Main, View::Batches, false);
        assert!(f.contains(&("s/S".to_string(), "sort")), "{f:?}");
        assert_eq!(f.iter().filter(|(_, w)| *w == "sort").count(), 1);
    }

    #[test]
    fn the_help_has_every_binding_once_under_its_views() {
        for ctx in Ctx::ALL {
            let groups = help(ctx, false);
            let n: usize = groups.iter().map(|(_, g)| g.len()).sum();
            assert_eq!(n, BINDINGS.iter().filter(|b| b.ctx == ctx).count(), "{ctx:?}");
            assert_eq!(groups[0].0, ctx.title());
        }
        let main = help(Main, false);
        let batches = main.iter().find(|(h, _)| h == "Only in 1 batches").map(|(_, g)| g);
        assert!(batches.is_some_and(|g| g.iter().any(|b| b.action == Action::Takeover)), "{main:?}");
    }
}
