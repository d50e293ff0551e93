//! `ubunye top`'s keys where they are shown: the footer of each view offers
//! only keys that work there.

mod common;
use common::dash::*;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ubunye_tui::app::{App, SortBy, View};
use ubunye_tui::event::Event;
use ubunye_tui::keys::{self, K};

// ---------------------------------------------------------------- the footer, per view

/// The dashboard on an unreadable lease beside a finished batch in a view
/// (the doctor's look done: it names the lease, with its batch).
fn in_view(view: View) -> (tempfile::TempDir, App) {
    let (d, mut a) = unreadable_lease();
    let key = ["1", "2", "3"][view.index()];
    press(&mut a, key);
    if view == View::Doctor {
        let examined = ubunye_tui::top::examine(&a.model.src);
        a.handle(examined);
    }
    assert_eq!(a.view, view);
    (d, a)
}

/// What a key can change, in words: not the status message (a key that only
/// says why it does nothing does nothing).
fn look(a: &App) -> String {
    format!(
        "{:?} {:?} {:?} {} {} {} {:?} {} {} {} {}",
        a.view,
        a.selected,
        a.sort,
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
        for k in ["t", "f", "y", "s"] {
            let effects = press(&mut a, k);
            assert!(effects.is_empty() && a.popup.is_none(), "{view:?} {k}: {effects:?}");
            assert_eq!(a.view, view);
            // Said where it works instead.
            let said = a.status.message.as_ref().map(|m| m.1.clone()).unwrap_or_default();
            assert!(said.starts_with(&format!("{k} works in 1 batches only: ")), "{said}");
        }
        assert_eq!(a.sort, SortBy::Severity, "{view:?}: s did not sort");
    }
}
