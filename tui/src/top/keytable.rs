//! One key table for a view with contexts and actions of its own (the
//! dashboard over a store, the fleet view): its bindings, what a key does,
//! and the footer, all from the one table, so what is shown is what works.
//! (The dashboard of a use case has its views as well: [`super::keys`].)

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};

/// A move through a list of rows (or a popup's text): an action the key
/// tables share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
    First,
    Last,
    PageUp,
    PageDown,
}

/// One binding: the context, the keys, how they are shown, what they do.
pub struct Binding<C: 'static, A: 'static> {
    pub ctx: C,
    pub keys: &'static [KeyCode],
    pub shown: &'static str,
    pub what: &'static str,
    pub act: A,
    /// Offered in the footer.
    pub footer: bool,
}

/// The action of `key` in `ctx`.
pub fn lookup<C: PartialEq + Copy, A: Copy>(table: &[Binding<C, A>], ctx: C, key: &KeyEvent) -> Option<A> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    table.iter().find(|b| b.ctx == ctx && b.keys.contains(&key.code)).map(|b| b.act)
}

/// The footer of `ctx`: (keys, what, up to its first parenthesis), of the
/// bindings whose action `shown` keeps.
pub fn footer<C: PartialEq + Copy, A>(
    table: &[Binding<C, A>],
    ctx: C,
    shown: impl Fn(&A) -> bool,
) -> Vec<(&'static str, &'static str)> {
    table
        .iter()
        .filter(|b| b.ctx == ctx && b.footer && shown(&b.act))
        .map(|b| (b.shown, b.what.split(" (").next().unwrap_or(b.what)))
        .collect()
}

/// A key pressed while a filter is typed after `/`: `done` (its action)
/// keeps the filter, `clear` empties it, both end the typing; Backspace and
/// letters edit it.
pub fn type_filter<A: PartialEq>(
    act: Option<A>,
    done: A,
    clear: A,
    key: &KeyEvent,
    filter: &mut String,
    typing: &mut bool,
) {
    match (act, key.code) {
        (Some(a), _) if a == done => *typing = false,
        (Some(a), _) if a == clear => {
            *typing = false;
            filter.clear();
        }
        (_, KeyCode::Backspace) => {
            filter.pop();
        }
        (_, KeyCode::Char(c)) => filter.push(c),
        _ => {}
    }
}
