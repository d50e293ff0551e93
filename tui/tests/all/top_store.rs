//! `ubunye top -d s3://...` without a terminal or a server: the use case
//! dashboard's app over the in-memory store that keeps S3's rules, its
//! looks made by the library's `Poller`, its effects carried out as its
//! loop carries them out (`top::workers`, `top::repair::carry_out`, the
//! takeover in this process), its screens drawn on a TestBackend. The same
//! over a real server in a real terminal is in tui/tests/slow/store.rs (tmux).

use std::time::Duration;

use ubunye::bucket::Objects;
use ubunye::state::State;
use ubunye_tui::top::app::Effect;
use ubunye_tui::top::event::Event;
use ubunye_tui::top::popup::Phase;

use crate::common;
use common::dash::{press, screen, snap_settings, states};
use common::store_dash::{BAD, DEAD, LIVE, World, place};

fn world() -> (World, std::sync::Arc<ubunye::bucket::Lease>) {
    // Its run had claimed a dozen objects (none of which it completed): the
    // takeover's plan names each.
    let (w, dead, _) = common::store_dash::world(12);
    (w, dead)
}

impl World {
    fn screen(&mut self, w: u16, h: u16) -> String {
        let s = screen(&mut self.app, w, h);
        // A store's explain is read off the UI thread: drawn once it is back.
        let more = self.app.handle(Event::Tick);
        self.carry_out(&more);
        if more.is_empty() { s } else { screen(&mut self.app, w, h) }
    }
    fn keys(&self) -> Vec<String> {
        self.app.rows.iter().filter_map(|&i| self.app.model.row(i)).map(|b| b.key().to_string()).collect()
    }
}

fn snap(name: &str, s: &str) {
    snap_settings().bind(|| insta::assert_snapshot!(name, s));
}

#[test]
fn the_table_shows_the_librarys_verdicts_and_looking_writes_nothing() {
    let (mut w, _dead) = world();
    let before = w.mem.snapshot();
    w.look();
    assert_eq!(states(&w.app), [State::Unreadable, State::Dead, State::Live]);
    snap("store-table", &w.screen(100, 14));
    // The store's clock judges its leases at each look; this machine's
    // ticks do not: the live lease stays live until a look says otherwise.
    w.clock.advance(Duration::from_secs(3600));
    w.app.handle(Event::Tick);
    assert_eq!(states(&w.app), [State::Unreadable, State::Dead, State::Live]);
    w.look();
    assert_eq!(states(&w.app), [State::Unreadable, State::Dead, State::Dead]);
    // Enter: the batch's report, read from the store.
    w.press("j Enter");
    snap("store-detail", &w.screen(100, 30));
    w.press("?");
    snap("store-help", &w.screen(100, 36));
    w.press("Esc Esc");
    // The other views: the runs, doctor's look (the store's).
    w.press("2");
    w.press("3");
    assert!(w.app.looked_at > 0 || !w.app.findings.is_empty(), "doctor looked at the store");
    w.press("1");
    w.look();
    assert_eq!(w.mem.snapshot(), before, "the dashboard wrote to the store");
    assert!(w.mem.open_uploads("").unwrap().is_empty());
}

#[test]
fn a_dead_batch_is_taken_over_after_its_plan_and_leaves_the_table() {
    let (mut w, _dead) = world();
    w.look();
    // The rows: unreadable, dead, live. The unreadable one is refused.
    w.press("t");
    assert!(
        matches!(&w.app.popup, Some(p) if matches!(p.phase, Phase::Refused) && p.lines.join(" ").contains("cannot be read")),
        "{:?}",
        w.app.popup
    );
    w.press("Esc j");
    assert_eq!(w.chosen(), DEAD);
    // The plan is read from the store off the screen's thread: t reads
    // nothing itself, shows that it is being read, and asks the loop.
    let gets = w.mem.calls("get");
    let asked = press(&mut w.app, "t");
    assert!(matches!(&asked[..], [Effect::Plan { .. }]), "{asked:?}");
    assert!(matches!(&w.app.popup, Some(p) if matches!(p.phase, Phase::Planning)), "{:?}", w.app.popup);
    assert_eq!(w.mem.calls("get"), gets, "the screen's thread read the store");
    w.press("Esc");
    w.press("t");
    snap("store-takeover-plan", &w.screen(100, 24));
    // Enter answers No: nothing changes.
    let before = w.mem.snapshot();
    w.press("Enter");
    assert!(w.app.popup.is_none());
    assert_eq!(w.mem.snapshot(), before);
    // The plan is read off the screen's thread: y once it is shown.
    w.press("t");
    w.press("y");
    match &w.app.popup {
        Some(p) if matches!(p.phase, Phase::Done { ok: true }) => {
            let text = p.lines.join("\n");
            assert!(text.contains("run dddddddd taken over") && text.contains("released"), "{text}")
        }
        other => panic!("{other:?}"),
    }
    snap("store-takeover-done", &w.screen(100, 16));
    w.press("Esc");
    assert_eq!(w.keys(), [BAD, LIVE], "the taken-over batch is free: no lease, no row");
    w.look();
    assert_eq!(w.keys(), [BAD, LIVE]);
    assert!(w.mem.get(&place(DEAD).lease_key()).unwrap().is_none());
}

#[test]
fn a_lease_that_comes_alive_after_the_plan_is_not_taken_over() {
    let (mut w, dead) = world();
    w.look();
    w.press("j t");
    assert!(matches!(&w.app.popup, Some(p) if matches!(p.phase, Phase::Asking { .. })));
    // Its run was only paused: it saves its lease again.
    dead.save(|_| ()).unwrap();
    w.press("y");
    match &w.app.popup {
        Some(p) if matches!(p.phase, Phase::Done { ok: false }) => {
            // Read again before the engine acts, as on disk: the plan no
            // longer holds, and that is what is said.
            let text = p.lines.join(" ");
            assert!(text.contains("changed since the plan was shown (it is live now"), "{:?}", p.lines)
        }
        other => panic!("{other:?}"),
    }
    assert!(w.mem.get(&place(DEAD).lease_key()).unwrap().is_some(), "the live lease is kept");
}

/// The store's plan scrolls in the one popup as the use case's does: under
/// a counter, the question always in view, and scrolling answers nothing.
#[test]
fn a_plan_longer_than_the_popup_scrolls_as_the_use_cases_does() {
    let (mut w, _dead) = world();
    w.look();
    w.press("j t");
    let counter = regex::Regex::new(r"Take over demo/sales/ingest \S+ ─+ (\d+)-(\d+)/(\d+) ").unwrap();
    let at = |s: &str| counter.captures(s).map(|c| [1, 2, 3].map(|i| c[i].parse::<usize>().unwrap()));
    let top = w.screen(100, 16);
    let Some([1, last, len]) = at(&top) else { panic!("no counter:\n{top}") };
    assert!(last < len && top.contains("Go ahead?  [ No ]  [ Yes ]"), "{top}");
    w.press("End");
    let end = w.screen(100, 16);
    assert_eq!(at(&end), Some([len - last + 1, len, len]), "{end}");
    assert!(end.contains("part-11.csv: not there") && end.contains("Go ahead?"), "{end}");
    w.press("Home j");
    assert_eq!(at(&w.screen(100, 16)).map(|c| c[0]), Some(2));
    let before = w.mem.snapshot();
    assert!(w.press("Enter").is_empty() && w.app.popup.is_none(), "Enter is still No");
    assert_eq!(w.mem.snapshot(), before);
}
