//! The fleet view's keys and events, state by state (no terminal).

use std::collections::BTreeMap;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ubunye::census::{Census, TaskCount};
use ubunye::state::{Flag, State};

use super::*;

fn key(c: KeyCode) -> Event {
    Event::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn census(dead: u64, finished: u64, error: Option<&str>) -> Census {
    let mut t = TaskCount::default();
    t.states[State::Dead.rank()] = dead;
    t.states[State::Finished.rank()] = finished;
    t.flags.insert(Flag::Stalled, 1);
    let mut c = Census { error: error.map(String::from), ..Census::default() };
    c.tasks.insert("demo/sales/ingest".into(), t);
    c.oldest = BTreeMap::from([(State::Dead, Duration::from_secs(90))]);
    c.findings.insert("needs-repair", dead);
    c
}

fn app() -> FleetApp {
    FleetApp::new(vec!["/srv/a/sales".into(), "/srv/b/clicks".into(), "/srv/c/bad".into()], Duration::from_secs(2))
}

#[test]
fn counts_fill_their_rows_and_add_up() {
    let mut a = app();
    assert_eq!(a.totals(), Totals::default());
    a.handle(Event::FleetCounted(0, Box::new(census(2, 5, None))));
    a.handle(Event::FleetCounted(1, Box::new(census(1, 0, None))));
    // A place outside the list is ignored, not a panic.
    a.handle(Event::FleetCounted(9, Box::new(census(7, 7, None))));
    let t = a.totals();
    assert_eq!((t.batches(), t.count(State::Dead), t.open(), t.stalled, t.findings), (8, 3, 3, 2, 3));
    assert_eq!(t.oldest, Some(Duration::from_secs(90)));
    a.handle(Event::FleetRound(Duration::from_millis(300)));
    a.handle(Event::Tick);
    a.handle(Event::Tick);
    assert_eq!((a.rounds, a.took, a.since), (1, Duration::from_millis(300), 2));
}

#[test]
fn moving_opening_and_quitting() {
    let mut a = app();
    assert_eq!(a.handle(key(KeyCode::Enter)), vec![Effect::Open(0)]);
    a.handle(key(KeyCode::Char('j')));
    a.handle(key(KeyCode::Down));
    a.handle(key(KeyCode::Down));
    assert_eq!(a.selected, 2, "stops at the last row");
    a.handle(key(KeyCode::Char('k')));
    assert_eq!(a.handle(key(KeyCode::Enter)), vec![Effect::Open(1)]);
    a.handle(key(KeyCode::Char('G')));
    assert_eq!(a.chosen(), Some(2));
    a.handle(key(KeyCode::Char('g')));
    assert_eq!(a.chosen(), Some(0));
    assert_eq!(a.handle(key(KeyCode::Char('r'))), vec![Effect::ReadNow]);
    assert_eq!(a.handle(key(KeyCode::Char('q'))), vec![Effect::Quit(0)]);
    let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(a.handle(ctrl_c), vec![Effect::Quit(0)]);
    assert_eq!(a.handle(Event::Signal(15)), vec![Effect::Quit(143)]);
}

#[test]
fn a_use_case_that_cannot_be_read_is_not_opened_and_says_why() {
    let mut a = app();
    a.handle(Event::FleetCounted(2, Box::new(census(0, 0, Some("permission denied")))));
    a.handle(key(KeyCode::Char('G')));
    assert_eq!(a.handle(key(KeyCode::Enter)), vec![]);
    assert_eq!(a.message.as_deref(), Some("cannot open /srv/c/bad: permission denied"));
    a.handle(key(KeyCode::Char('g')));
    assert_eq!(a.handle(key(KeyCode::Enter)), vec![Effect::Open(0)]);
    assert_eq!(a.message, None, "the message goes once something opens");
}

#[test]
fn the_filter_takes_uc_or_plain_text_and_esc_clears_it() {
    let mut a = app();
    a.handle(key(KeyCode::Char('G')));
    a.handle(key(KeyCode::Char('/')));
    assert_eq!(a.ctx(), Ctx::Filter);
    for c in "uc:CLICK".chars() {
        a.handle(key(KeyCode::Char(c)));
    }
    // While typing, q is a letter, not quit.
    assert_eq!(a.handle(key(KeyCode::Char('q'))), vec![]);
    a.handle(key(KeyCode::Backspace));
    a.handle(key(KeyCode::Enter));
    assert_eq!((a.ctx(), a.rows(), a.selected), (Ctx::Main, vec![1], 0));
    assert_eq!(a.handle(key(KeyCode::Enter)), vec![Effect::Open(1)]);
    // Esc clears a kept filter before it quits.
    assert_eq!(a.handle(key(KeyCode::Esc)), vec![]);
    assert_eq!(a.rows(), vec![0, 1, 2]);
    assert_eq!(a.handle(key(KeyCode::Esc)), vec![Effect::Quit(0)]);
    // Plain text works too; a filter that matches nothing opens nothing.
    a.handle(key(KeyCode::Char('/')));
    for c in "zzz".chars() {
        a.handle(key(KeyCode::Char(c)));
    }
    a.handle(key(KeyCode::Enter));
    assert_eq!((a.rows(), a.handle(key(KeyCode::Enter))), (vec![], vec![]));
    a.handle(key(KeyCode::Char('/')));
    a.handle(key(KeyCode::Esc));
    assert_eq!(a.rows().len(), 3);
}

#[test]
fn help_opens_and_closes_and_every_binding_is_looked_up() {
    let mut a = app();
    a.handle(key(KeyCode::Char('?')));
    assert_eq!(a.ctx(), Ctx::Help);
    assert_eq!(a.handle(key(KeyCode::Char('q'))), vec![], "q closes the help, it does not quit");
    assert_eq!(a.ctx(), Ctx::Main);
    for b in KEYS {
        for c in b.keys {
            assert_eq!(lookup(b.ctx, &KeyEvent::new(*c, KeyModifiers::NONE)), Some(b.act), "{:?} {c:?}", b.ctx);
        }
    }
    for ctx in Ctx::ALL {
        for (shown, _) in footer(ctx) {
            assert!(KEYS.iter().any(|b| b.ctx == ctx && b.shown == shown));
        }
    }
}
