//! `ubunye top`'s keys where they are shown: the footer of each view offers
//! only keys that work there, the batch table's header marks the sort that
//! `s` and `S` change, and a repair plan longer than its popup scrolls under
//! a counter with the question always in view.

use crate::common;
use common::dash::*;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ubunye::state::State;
use ubunye_tui::top::app::{App, Effect, SortBy, View};
use ubunye_tui::top::event::Event;
use ubunye_tui::top::keys::{self, K};
use ubunye_tui::top::popup::Phase;

fn snap(name: &str, s: &str) {
    snap_settings().bind(|| insta::assert_snapshot!(name, s));
}

// ---------------------------------------------------------------- the popup

/// The `first-last/len` counter on the popup's top border.
fn counter(screen: &str, title: &str) -> Option<(usize, usize, usize)> {
    let re = regex::Regex::new(r" (\d+)-(\d+)/(\d+) ").unwrap();
    let line = screen.lines().find(|l| l.contains(title))?;
    let c = re.captures(line)?;
    Some((c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?))
}

#[test]
fn a_plan_longer_than_its_popup_scrolls_under_a_counter_and_the_question_stays() {
    let (_d, _uc, mut a) = open("dead-spark-staged", LATER);
    press(&mut a, "t");
    assert!(matches!(phase(&a), Some(Phase::Asking { yes: false, .. })));
    let title = "┌ Take over demo/sales/ingest 540a6418";
    let top = screen(&mut a, 80, 24);
    let Some((1, 18, len)) = counter(&top, title) else { panic!("no 1-18/N counter:\n{top}") };
    assert!(len > 18, "{len}");
    assert!(top.contains("Go ahead?  [ No ]  [ Yes ]"), "{top}");
    assert!(!top.contains("audited in"), "the plan's end is below:\n{top}");
    snap("popup-long-top", &top);

    press(&mut a, "End");
    let end = screen(&mut a, 80, 24);
    assert_eq!(counter(&end, title), Some((len - 17, len, len)), "{end}");
    assert!(end.contains("audited in") && end.contains(".ubunye/repairs.jsonl."), "{end}");
    assert!(end.contains("Go ahead?  [ No ]  [ Yes ]"), "{end}");
    snap("popup-long-end", &end);

    // Never past the end; a page up and down; the top; a line down.
    let steps: &[(&str, usize)] = &[("Down Down", len - 17), ("PgUp", 1), ("PgDn", len - 17), ("Home", 1), ("j", 2)];
    for (keys, first) in steps {
        press(&mut a, keys);
        let s = screen(&mut a, 80, 24);
        assert_eq!(counter(&s, title).map(|c| c.0), Some(*first), "after {keys}:\n{s}");
        assert!(s.contains("Go ahead?"), "after {keys}:\n{s}");
    }
    // Scrolling answered nothing: Enter is still No.
    let effects = press(&mut a, "Enter");
    assert!(effects.is_empty() && a.popup.is_none(), "{effects:?}");
}

#[test]
fn the_finish_popup_scrolls_too() {
    let (_d, _uc, mut a) = open("rerun-pending", LATER);
    press(&mut a, "f");
    let title = "┌ Finish demo/sales/ingest 39bc4231";
    let s = screen(&mut a, 80, 20);
    let Some((1, last, len)) = counter(&s, title) else { panic!("no counter:\n{s}") };
    assert!(last < len && s.contains("Go ahead?"), "{s}");
    press(&mut a, "G");
    let s = screen(&mut a, 80, 20);
    assert_eq!(counter(&s, title), Some((len - last + 1, len, len)), "{s}");
    assert!(s.contains("audited in") && s.contains("Go ahead?"), "{s}");
    // A plan that fits has no counter.
    let s = screen(&mut a, 80, 40);
    assert_eq!(counter(&s, title), None, "{s}");
}

// ---------------------------------------------------------------- the footer, per view

/// The dashboard on an unreadable lease beside a finished batch in a view
/// (the doctor's look done: it names the lease, with its batch).
fn in_view(view: View) -> (tempfile::TempDir, App) {
    let (d, mut a) = unreadable_lease();
    let key = ["1", "2", "3", "4"][view.index()];
    press(&mut a, key);
    if view == View::Doctor {
        let examined = ubunye_tui::top::workers::examine(&a.model.src);
        a.handle(examined);
    }
    assert_eq!(a.view, view);
    (d, a)
}

/// What a key can change, in words: not the status message (a key that only
/// says why it does nothing does nothing).
fn look(a: &App) -> String {
    format!(
        "{:?} {:?} {:?} {} {} {} {} {:?} {} {} {} {}",
        a.view,
        a.selected,
        a.sort,
        a.reversed,
        a.popup.is_some(),
        a.help,
        a.editing,
        a.filter.text,
        a.frozen,
        a.detail.open,
        a.scanning,
        a.rows.len(),
    )
}

fn event(k: K) -> Event {
    Event::Key(match k {
        K::Key(code) => KeyEvent::new(code, KeyModifiers::NONE),
        K::Ctrl(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
    })
}

#[test]
fn every_key_the_footer_offers_does_something_in_its_view() {
    for view in View::ALL {
        let (_d, mut a) = in_view(view);
        // Wide enough for the whole footer.
        let footer = screen(&mut a, 240, 24).lines().last().unwrap_or_default().to_string();
        let offered: Vec<_> = keys::of(a.ctx(), view).filter(|b| b.footer.is_some()).collect();
        assert!(!offered.is_empty());
        for b in offered {
            let word = b.footer.unwrap_or_default();
            assert!(footer.contains(word), "{view:?}: {word} not in the footer {footer:?}");
            for k in b.keys {
                let (_d, mut a) = in_view(view);
                let before = look(&a);
                let effects = a.handle(event(*k));
                assert!(
                    !effects.is_empty() || look(&a) != before,
                    "{view:?}: {k:?} ({} {word}) is offered and changes nothing",
                    b.label
                );
            }
        }
    }
}

#[test]
fn the_runs_and_doctor_views_offer_no_repair_and_t_there_opens_none() {
    for view in [View::Runs, View::Doctor] {
        let (_d, mut a) = in_view(view);
        let footer = screen(&mut a, 240, 24).lines().last().unwrap_or_default().to_string();
        for no in ["takeover", "finish", "copy key", "sort", "detail"] {
            assert!(!footer.contains(no), "{view:?} offers {no}: {footer:?}");
        }
        for k in ["t", "f", "y", "s", "S"] {
            let effects = press(&mut a, k);
            assert!(effects.is_empty() && a.popup.is_none(), "{view:?} {k}: {effects:?}");
            assert_eq!(a.view, view);
            // Said where it works instead.
            let said = a.status.message.as_ref().map(|m| m.1.clone()).unwrap_or_default();
            assert!(said.starts_with(&format!("{k} works in 1 batches only: ")), "{said}");
        }
        assert_eq!((a.sort, a.reversed), (SortBy::Severity, false), "{view:?}: s and S did not sort");
    }
}

// ---------------------------------------------------------------- the sort

fn header(s: &str) -> String {
    s.lines().find(|l| l.starts_with("STATE")).unwrap_or_default().to_string()
}

#[test]
fn the_header_marks_the_sort_that_s_cycles_and_capital_s_reverses() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    // Keys, the header's mark, the sort, the rows' states, a snapshot.
    type Case = (&'static str, &'static str, SortBy, &'static [State], Option<&'static str>);
    let cases: &[Case] = &[
        ("", "STATE ▼", SortBy::Severity, &[State::Dead, State::Finished], None),
        ("S", "STATE ▲", SortBy::Severity, &[State::Finished, State::Dead], None),
        // Each column starts in its own order: the oldest lease first.
        ("s", "AGE ▼", SortBy::Age, &[State::Dead, State::Finished], Some("sort-age")),
        ("S", "AGE ▲", SortBy::Age, &[State::Finished, State::Dead], Some("sort-age-reversed")),
        ("S", "AGE ▼", SortBy::Age, &[State::Dead, State::Finished], None),
        ("s", "TASK ▲", SortBy::Task, &[State::Finished, State::Dead], None),
        ("S", "TASK ▼", SortBy::Task, &[State::Dead, State::Finished], None),
        // The sorted column is never dropped for room (CLAIMS is, at 80).
        ("s", "CLAIMS ▼", SortBy::Claims, &[State::Dead, State::Finished], Some("sort-claims")),
        ("s", "STATE ▼", SortBy::Severity, &[State::Dead, State::Finished], None),
    ];
    for (keys, marked, by, order, name) in cases {
        press(&mut a, keys);
        let s = screen(&mut a, 80, 24);
        assert_eq!(a.sort, *by, "after {keys}");
        assert_eq!(states(&a), order.to_vec(), "after {keys}");
        let h = header(&s);
        assert!(h.contains(marked), "after {keys}: {h:?} lacks {marked:?}");
        assert_eq!(h.matches(['▲', '▼']).count(), 1, "{h:?}");
        if let Some(name) = name {
            snap(name, &s);
        }
    }
    // Both keys are in the footer (one word for two keys) and the help.
    assert!(screen(&mut a, 100, 24).lines().last().is_some_and(|l| l.contains("s/S sort")));
    press(&mut a, "?");
    let help = screen(&mut a, 120, 90);
    assert!(help.contains("reverse the sort") && help.contains("sort by the next column"), "{help}");
}

#[test]
fn the_sort_is_kept_by_a_change() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    press(&mut a, "s S");
    assert_eq!(states(&a), vec![State::Finished, State::Dead]);
    change(&mut a, vec![lease_path(&uc, "7d106ca76674f2a1.json")]);
    assert_eq!((a.sort, a.reversed), (SortBy::Age, true));
    assert_eq!(states(&a), vec![State::Finished, State::Dead]);
    assert!(matches!(press(&mut a, "q").as_slice(), [Effect::Quit(0)]));
}
