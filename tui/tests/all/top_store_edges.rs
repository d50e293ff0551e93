//! `ubunye top -d s3://...` at its edges, over the in-memory store: plans
//! and explains that come back in another order than they were asked for,
//! what a poll costs, the states against the list's after time passes and
//! keys are pressed, and a store that stops answering. The harness is
//! tests/common/store_dash.rs (the loop's effects carried out as the loop
//! does), its effects held back where a test needs them to come back late.

use std::time::Duration;

use ubunye::state::State;
use ubunye_tui::top::app::{Effect, Level};
use ubunye_tui::top::popup::Phase;
use ubunye_tui::top::store::Store;

use crate::common;
use common::dash::press;
use common::store_dash::{BAD, DEAD, LIVE, World, url};

/// Every call of the in-memory store that writes.
const WRITES: [&str; 9] =
    ["create", "update", "put", "delete_if", "delete", "start_uploads", "send_parts", "complete_new", "abort"];

fn world() -> (World, std::sync::Arc<ubunye::bucket::Lease>) {
    let (w, _, live) = common::store_dash::world(0);
    (w, live)
}

impl World {
    fn writes(&self) -> usize {
        WRITES.iter().map(|op| self.mem.calls(op)).sum()
    }
    /// The app's (key, state) of every batch, in key order.
    fn shown(&self) -> Vec<(String, State)> {
        let mut v: Vec<(String, State)> = (0..self.app.model.len())
            .filter_map(|i| self.app.model.row(i))
            .map(|b| (b.key().to_string(), b.state()))
            .collect();
        v.sort();
        v
    }
    /// The list's (key, state) of every batch, in key order, judged now.
    fn listed(&self) -> Vec<(String, State)> {
        let (_, rows) = ubunye::state::store::look(&*self.mem, &url(), &self.app.model.src.sys.timing).unwrap();
        let mut v: Vec<(String, State)> = rows.into_iter().map(|r| (r.key, r.state)).collect();
        v.sort();
        v
    }
}

/// A plan asked for, let go (Esc), and another asked for: the second's is
/// the one the popup waits for, whichever thread comes back first. The
/// loop reads each plan on a thread of its own, so the first, started
/// earlier, is often back first.
#[test]
fn the_plan_asked_for_last_is_shown_when_an_earlier_one_comes_back_first() {
    let (mut w, _live) = world();
    w.look();
    assert_eq!(w.chosen(), BAD);
    // t on the unreadable batch, the plan not back yet; Esc; t on the dead one.
    let first = press(&mut w.app, "t");
    assert!(matches!(&first[..], [Effect::Plan { .. }]), "{first:?}");
    press(&mut w.app, "Esc j");
    assert_eq!(w.chosen(), DEAD);
    let second = press(&mut w.app, "t");
    assert!(matches!(&second[..], [Effect::Plan { .. }]), "{second:?}");
    // The first thread comes back first: its plan is not shown...
    let late = w.result_of(&first[0]).unwrap();
    w.app.handle(late);
    assert!(matches!(&w.app.popup, Some(p) if matches!(p.phase, Phase::Planning)), "{:?}", w.app.popup);
    // ...and the dead batch's plan, back next, is.
    let wanted = w.result_of(&second[0]).unwrap();
    w.app.handle(wanted);
    assert!(
        matches!(&w.app.popup, Some(p) if matches!(p.phase, Phase::Asking { .. })),
        "the popup still waits for a plan that came back: {:?}",
        w.app.popup.as_ref().map(|p| (&p.title, &p.phase, &p.lines))
    );
}

/// The same with a takeover then a finish of one batch.
#[test]
fn a_finish_asked_for_after_a_takeover_was_let_go_is_shown() {
    let (mut w, _live) = world();
    w.look();
    press(&mut w.app, "j");
    let first = press(&mut w.app, "t");
    press(&mut w.app, "Esc");
    let second = press(&mut w.app, "f");
    let late = w.result_of(&first[0]).unwrap();
    w.app.handle(late);
    let wanted = w.result_of(&second[0]).unwrap();
    w.app.handle(wanted);
    assert!(
        w.app.popup.as_ref().is_some_and(|p| !matches!(p.phase, Phase::Planning) && p.title.starts_with("Finish")),
        "{:?}",
        w.app.popup.as_ref().map(|p| (&p.title, &p.phase))
    );
}

/// A poll of a store where nothing changed reads no object (store.rs: "a
/// GET only of what changed"), the detail pane closed: the selected
/// batch is not explained again, its whole task read, at every look.
#[test]
fn a_poll_where_nothing_changed_reads_no_object() {
    let (mut w, _live) = world();
    w.look();
    w.tick();
    assert!(!w.app.detail.open);
    // The store's own poller, looking again, reads nothing.
    let own = Store::new(url(), w.mem.clone(), false);
    own.look(&w.app.model.src.sys).unwrap();
    let gets = w.mem.calls("get");
    own.look(&w.app.model.src.sys).unwrap();
    assert_eq!(w.mem.calls("get"), gets);
    w.look();
    w.look();
    w.look();
    assert_eq!(w.mem.calls("get") - gets, 0, "GETs of three polls, nothing changed, the detail pane closed");
}

/// No key, view, tick or poll writes to the store, time passing or not.
#[test]
fn no_key_view_tick_or_poll_writes() {
    let (mut w, _live) = world();
    let (before, writes) = (w.mem.snapshot(), w.writes());
    w.look();
    for keys in [
        "j",
        "Enter",
        "l",
        "l",
        "Esc",
        "F",
        "j",
        "F",
        "s",
        "s",
        "S",
        "s",
        "s",
        "/",
        "type:dead",
        "Enter",
        "Esc",
        "Space",
        "j",
        "Space",
        "Esc",
        "y",
        "2",
        "Enter",
        "3",
        "Enter",
        "4",
        "Enter",
        "h",
        "1",
        "r",
        "?",
        "Esc",
        "G",
        "g",
        "t",
        "Esc",
        "f",
        "n",
        "Tab",
        "q",
    ] {
        w.press(keys);
        w.clock.advance(Duration::from_secs(7));
        w.tick();
        if keys == "r" || keys == "F" {
            w.look();
        }
    }
    w.clock.advance(Duration::from_secs(3600));
    w.tick();
    w.look();
    assert_eq!(w.writes() - writes, 0, "calls that write");
    assert_eq!(w.mem.snapshot(), before);
}

/// The app's states are the list's at each look, whatever happened in
/// between (time passing with no look, ticks, the other views, a freeze,
/// a lease saved again); and between looks they stay as the last look said.
#[test]
fn the_states_are_the_lists_at_each_look_and_stay_between_looks() {
    let (mut w, live) = world();
    w.look();
    assert_eq!(w.shown(), w.listed());
    let at_look = w.shown();
    // Time passes beyond the live lease's lifetime: no look, so no change.
    w.clock.advance(w.app.model.src.sys.timing.heartbeat_timeout * 2);
    for keys in ["2", "3", "4", "1", "F", "F", "Enter", "Esc", "s", "S"] {
        w.press(keys);
        w.tick();
        assert_eq!(w.shown(), at_look, "after {keys}, no look");
    }
    assert_ne!(w.listed(), at_look, "the live lease is dead by now");
    w.look();
    assert_eq!(w.shown(), w.listed());
    // Its run saves it again: live at the next look.
    live.save(|_| ()).unwrap();
    w.tick();
    assert_ne!(w.shown(), w.listed());
    w.look();
    assert_eq!(w.shown(), w.listed());
    assert!(w.shown().contains(&(LIVE.to_string(), State::Live)));
    // Frozen: a poll is held, the states too; resumed: the look is made.
    w.press("F");
    w.clock.advance(w.app.model.src.sys.timing.heartbeat_timeout * 2);
    let frozen = w.shown();
    w.look();
    assert_eq!(w.shown(), frozen);
    w.press("F");
    assert_eq!(w.shown(), w.listed());
}

/// A store that stops answering: a poll says so, the last table stays;
/// once it answers again the next poll brings the table back and the
/// warning goes.
#[test]
fn a_store_that_stops_answering_is_said_and_the_last_table_stays_until_it_answers() {
    let (mut w, _live) = world();
    w.look();
    let table = w.shown();
    w.mem.set_down(true);
    w.clock.advance(Duration::from_secs(5));
    w.look();
    assert_eq!(w.shown(), table);
    assert!(
        matches!(&w.app.status.message, Some((Level::Error, m, _)) if m.contains("down")),
        "{:?}",
        w.app.status.message
    );
    w.look();
    assert_eq!(w.shown(), table);
    w.mem.set_down(false);
    w.look();
    assert_eq!(w.shown(), w.listed());
    assert!(w.app.status.message.is_none(), "{:?}", w.app.status.message);
}

/// An explain that fails says so in the detail pane, and the next look
/// explains the batch again once the store answers.
#[test]
fn an_explain_that_fails_is_said_and_read_again_at_the_next_look() {
    let (mut w, _live) = world();
    w.look();
    // The explain the move asks for: the store does not answer.
    w.mem.set_down(true);
    w.press("j");
    w.mem.set_down(false);
    assert_eq!(w.app.detail.id.as_ref().map(|i| i.1.as_str()), Some(DEAD));
    let text = w.app.detail.lines.join("\n");
    assert!(text.contains("cannot read the batch from the store"), "{text}");
    w.look();
    let text = w.app.detail.lines.join("\n");
    assert!(!text.contains("cannot read") && text.contains(DEAD), "{text}");
}

/// An explain that comes back after the selection moved is not shown for
/// the batch now selected; the selected one's is asked for and shown.
#[test]
fn an_explain_back_after_the_selection_moved_is_not_shown_for_the_new_one() {
    let (mut w, _live) = world();
    w.look();
    // The first look's explain of the first row, carried out.
    assert_eq!(w.chosen(), BAD);
    // Move to the dead batch: its explain is asked for (none under way).
    let asked = press(&mut w.app, "j");
    let Some(Effect::Explain(id)) = asked.first() else { panic!("{asked:?}") };
    assert_eq!(id.1, DEAD);
    // Move to the live one while it is under way: nothing more asked yet.
    let more = press(&mut w.app, "j");
    assert!(more.is_empty(), "{more:?}");
    assert_eq!(w.chosen(), LIVE);
    // The dead batch's comes back: not shown; the live one's is asked for.
    let back = w.result_of(&asked[0]).unwrap();
    let next = w.app.handle(back);
    assert!(!w.app.detail.lines.join("\n").contains(DEAD), "{:?}", w.app.detail.lines);
    let Some(Effect::Explain(id)) = next.first() else { panic!("{next:?}") };
    assert_eq!(id.1, LIVE);
    w.carry_out(&next);
    let text = w.app.detail.lines.join("\n");
    assert!(text.contains(LIVE) && !text.contains(DEAD), "{text}");
}
