//! `ubunye top` in-process: snapshots of every state and of the popups on
//! ratatui's TestBackend, and what keys do to the dashboard's state.
//!
//! The model comes from the peer's fixtures (mtimes restored) judged with a
//! fake clock from another host, so every verdict and age is pinned; the
//! temp folders have a fixed length, so that paths wrap the same way on every
//! machine, and are then written as /tmp/ubtXXXXXX.

use crate::common;
use common::dash::*;
use common::{ELSEWHERE, fake_sys};

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use ratatui::style::Color;
use ubunye::repair::Kind;
use ubunye::state::{ScanOptions, State};
use ubunye_tui::top::app::{App, Effect, SortBy, View};
use ubunye_tui::top::event::Event;
use ubunye_tui::top::model::{Model, Source};
use ubunye_tui::top::popup::Phase;
use ubunye_tui::top::repair;

fn snap(name: &str, s: &str) {
    snap_settings().bind(|| insta::assert_snapshot!(name, s));
}

// ---------------------------------------------------------------- states

#[test]
fn every_state_on_an_80x24_screen() {
    let cases: &[(&str, &str, Duration, State)] = &[
        ("state-dead", "dead-killed", LATER, State::Dead),
        ("state-orphan", "orphan", LATER, State::Orphan),
        ("state-pending", "rerun-pending", LATER, State::Pending),
        ("state-handed-back", "takeover-refused-in-use", LATER, State::HandedBack),
        ("state-kept", "kept", LATER, State::Kept),
        ("state-live", "live", Duration::from_secs(5), State::Live),
        ("state-finished", "finished", LATER, State::Finished),
    ];
    for (name, fx, after, want) in cases {
        let (_d, _uc, mut a) = open(fx, *after);
        assert_eq!(selected_state(&a), Some(*want), "{fx}");
        snap(name, &screen(&mut a, 80, 24));
    }
}

#[test]
fn an_unreadable_lease() {
    let (_d, mut a) = unreadable_lease();
    assert_eq!(selected_state(&a), Some(State::Unreadable));
    snap("state-unreadable", &screen(&mut a, 80, 24));
    // Doctor's look runs off the UI thread, as `ubunye doctor` reads.
    let effects = press(&mut a, "3");
    assert!(matches!(effects.as_slice(), [Effect::Examine]), "{effects:?}");
    assert!(screen(&mut a, 80, 24).contains("Looking at the use case"));
    let examined = ubunye_tui::top::workers::examine(&a.model.src);
    assert!(a.handle(examined).is_empty(), "one look until something changes");
    snap("view-doctor", &screen(&mut a, 80, 24));
}

#[test]
fn a_failed_run() {
    let (_d, mut a) = failed_run();
    assert_eq!(selected_state(&a), Some(State::Failed));
    snap("state-failed", &screen(&mut a, 80, 24));
}

#[test]
fn the_dashboard_at_100x30() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    snap("overview-100x30", &screen(&mut a, 100, 30));
}

#[test]
fn it_stays_whole_at_any_size() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    for (w, h) in [(80, 24), (40, 10), (20, 5), (1, 1), (200, 60), (81, 25)] {
        let s = screen(&mut a, w, h);
        assert!(!s.is_empty(), "{w}x{h}");
        a.help = true;
        let _ = screen(&mut a, w, h);
        a.help = false;
    }
    assert!(screen(&mut a, 30, 8).contains("too small"));
}

#[test]
fn no_colour_at_all_when_asked() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    let plain = draw(&mut a, 80, 24);
    assert!(plain.content.iter().all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    a.colour = true;
    let coloured = draw(&mut a, 80, 24);
    assert!(coloured.content.iter().any(|c| c.symbol() == "✖" && c.fg == Color::Red));
}

// ---------------------------------------------------------------- popups and views

#[test]
fn the_takeover_popup_lists_the_plan_and_defaults_to_no() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    press(&mut a, "t");
    assert!(matches!(phase(&a), Some(Phase::Asking { yes: false, .. })));
    snap("popup-takeover", &screen(&mut a, 80, 24));
    press(&mut a, "Right");
    snap("popup-takeover-yes-highlighted", &screen(&mut a, 80, 24));
}

/// `--read-only`: t and f are not offered (footer, help) and only say so;
/// nothing is planned, nothing is changed.
#[test]
fn read_only_offers_no_repair_and_t_only_says_so() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    a.read_only = true;
    let before = common::tree(&uc);
    press(&mut a, "t");
    assert!(a.popup.is_none());
    let shown = screen(&mut a, 100, 30);
    assert!(shown.contains("read-only: this dashboard does not repair"), "{shown}");
    let footer = shown.lines().last().unwrap();
    assert!(!footer.contains("takeover") && !footer.contains("finish") && footer.contains("help"), "{footer}");
    press(&mut a, "Enter f");
    assert!(a.popup.is_none());
    press(&mut a, "Esc ?");
    let help = screen(&mut a, 100, 40);
    assert!(!help.contains("take over") && help.contains("this help"), "{help}");
    assert_eq!(common::tree(&uc), before, "nothing changed");
}

/// `l`: the batch's run log in the detail pane, at its end, followed as it
/// grows; `l` again: the report. A run with no log says how one is kept.
#[test]
fn l_shows_the_runs_log_and_follows_it() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    let log = uc.join(".ubunye/lineage/demo/sales/ingest/a7ee7676-3983-4c1b-8fff-47937b7a2497.log");
    let text: String = (0..100).map(|i| format!("step {i} of the ingest\n")).collect();
    fs::write(&log, text).unwrap();
    press(&mut a, "l");
    let shown = screen(&mut a, 80, 24);
    assert!(shown.contains("7d106ca7 · log") && shown.contains("step 99 of the ingest"), "{shown}");
    assert!(!shown.contains("step 0 of"), "opened at its end:\n{shown}");
    let mut f = fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut f, b"step 100: loading orders.csv\n").unwrap();
    a.handle(Event::Tick);
    let shown = screen(&mut a, 80, 24);
    assert!(shown.contains("step 100: loading orders.csv"), "followed:\n{shown}");
    press(&mut a, "l");
    let shown = screen(&mut a, 80, 24);
    assert!(shown.contains("· explain") && shown.contains("Who holds it"), "{shown}");
    // The finished batch's run kept no log.
    press(&mut a, "Esc j l");
    let shown = screen(&mut a, 80, 24);
    assert!(shown.contains("has no log") && shown.contains("keeps the command's output"), "{shown}");
}

/// End/G in the detail pane reaches the report's last line however its
/// lines wrap at the pane's width.
#[test]
fn end_in_the_detail_pane_reaches_the_last_line_when_lines_wrap() {
    for width in [60, 80] {
        let (_d, _uc, mut a) = open("dead-killed", LATER);
        press(&mut a, "Enter");
        let _ = screen(&mut a, width, 20);
        press(&mut a, "End");
        let shown = screen(&mut a, width, 20);
        let last = a.detail.lines.iter().rev().find(|l| !l.trim().is_empty()).unwrap().trim().to_string();
        let tail: String = last.chars().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
        assert!(shown.contains(tail.trim()), "{width}: End shows the last line ({last}):\n{shown}");
    }
}

/// At any width the table cuts text only with `…`: a date is whole or ends
/// in `…` (`dt=2025-01` alone would read as a monthly batch), and the key
/// to paste stays while there is room for it.
#[test]
fn the_table_cuts_only_with_an_ellipsis_at_any_width() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    let date = regex::Regex::new(r"dt=\S*").unwrap();
    for (w, h) in [(40, 20), (60, 20), (80, 24), (100, 30), (120, 30)] {
        let shown = screen(&mut a, w, h);
        let rows: Vec<&str> = shown.lines().skip(3).take(2).collect();
        for row in &rows {
            for m in date.find_iter(row) {
                let t = m.as_str();
                assert!(t.len() == "dt=2025-01-02".len() || t.ends_with('…'), "{w}x{h}: '{t}' cut without …:\n{shown}");
            }
        }
        if w >= 60 {
            assert!(rows[0].contains("7d106ca7"), "{w}x{h}: the key:\n{shown}");
        }
    }
}

/// `h` on a batch: its task by date (4 history), each day's batch with its
/// state; Enter on a day goes to that batch's report.
#[test]
fn h_shows_the_tasks_days_and_enter_goes_to_one() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    press(&mut a, "h");
    assert_eq!(a.view, View::History);
    let shown = screen(&mut a, 80, 24);
    assert!(shown.contains("demo/sales/ingest by date: 2 batch(es), 0 day(s) with none"), "{shown}");
    // The variables' column is as wide as its header (`mode=DEV` is 8).
    assert!(shown.lines().any(|l| l.contains(" VARIABLES ")), "{shown}");
    let days: Vec<&str> = shown.lines().filter(|l| l.starts_with("2025-")).collect();
    assert_eq!(days.len(), 2, "{shown}");
    assert!(days[0].starts_with("2025-01-01") && days[0].contains("✓ finished"), "{shown}");
    assert!(days[1].starts_with("2025-01-02") && days[1].contains("✖ dead"), "{shown}");
    press(&mut a, "j Enter");
    assert_eq!(a.view, View::Batches);
    assert_eq!(selected_state(&a), Some(State::Dead));
    assert!(a.detail.open);
}

#[test]
fn the_finish_popup_of_a_pending_batch() {
    let (_d, _uc, mut a) = open("rerun-pending", LATER);
    press(&mut a, "f");
    assert!(matches!(phase(&a), Some(Phase::Asking { what, .. }) if what.plan.kind == Kind::Finish));
    snap("popup-finish", &screen(&mut a, 80, 24));
}

#[test]
fn a_live_batch_is_refused_in_one_line() {
    let (_d, _uc, mut a) = open("live", Duration::from_secs(5));
    press(&mut a, "t");
    assert!(matches!(phase(&a), Some(Phase::Refused)));
    snap("popup-refused-live", &screen(&mut a, 80, 24));
    press(&mut a, "Esc");
    assert!(a.popup.is_none());
}

#[test]
fn a_takeover_carried_out_turns_dead_into_interrupted() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    let effects = press(&mut a, "t y");
    let Some(Effect::Repair(plan)) = effects.into_iter().next() else { panic!("no repair asked for") };
    assert!(matches!(phase(&a), Some(Phase::Running)));
    snap("popup-running", &screen(&mut a, 80, 24));
    // What the event loop does off the UI thread.
    let done = repair::carry_out(&a.model.src, *plan);
    assert!(done.outcome.is_ok(), "{:?}", done.outcome);
    a.handle(Event::Repaired(Box::new(done)));
    assert!(matches!(phase(&a), Some(Phase::Done { ok: true })));
    // 80x20: the audit line (naming the user who ran the test) stays below.
    snap("popup-result", &screen(&mut a, 80, 20));
    press(&mut a, "Esc");
    assert_eq!(selected_state(&a), Some(State::Interrupted));
    snap("state-interrupted", &screen(&mut a, 80, 20));
    let audit = fs::read_to_string(uc.join(".ubunye/repairs.jsonl")).unwrap();
    assert!(audit.contains("\"outcome\":\"done\""), "{audit}");
}

/// Space tags rows; t then plans every tagged batch in one popup (those no
/// repair applies to said as skipped), default No; yes repairs each in turn
/// off the UI thread; the tags are cleared. Esc clears tags before anything.
#[test]
fn tagged_batches_are_repaired_together() {
    let (_d, uc, _) = fixture("dead-killed");
    let dir = uc.join(".ubunye/leases/demo/sales/ingest");
    let second = dir.join("aaaa000000000001.json");
    fs::copy(dir.join("7d106ca76674f2a1.json"), &second).unwrap();
    let old = fs::metadata(dir.join("7d106ca76674f2a1.json")).unwrap().modified().unwrap();
    common::set_mtime(&second, old);
    let captured = old + Duration::from_secs(1);
    let (sys, _, _) = fake_sys(ELSEWHERE, captured + LATER);
    let mut a = app(&uc, sys);
    assert_eq!(states(&a), vec![State::Dead, State::Dead, State::Finished]);
    press(&mut a, "Space Esc");
    assert!(a.tagged.is_empty(), "Esc clears the tags");
    press(&mut a, "g Space Space Space");
    assert_eq!(a.tagged.len(), 3);
    assert!(screen(&mut a, 100, 30).contains("+✖ dead"), "tagged rows are marked");
    press(&mut a, "t");
    let Some(Phase::Asking { what, yes: false }) = phase(&a) else { panic!("{:?}", a.popup) };
    assert_eq!((what.more.len(), what.skipped.len()), (1, 1), "two plans, the finished batch skipped");
    let shown = screen(&mut a, 100, 40);
    assert!(shown.contains("Take over 2 tagged batches") && shown.contains("skip: "), "{shown}");
    let effects = press(&mut a, "y");
    let Some(Effect::RepairMany(plans)) = effects.into_iter().next() else { panic!("no repairs asked for") };
    assert_eq!(plans.len(), 2);
    let done: Vec<_> = plans.into_iter().map(|p| repair::carry_out(&a.model.src, p)).collect();
    assert!(done.iter().all(|d| d.outcome.is_ok()), "{:?}", done.iter().map(|d| &d.outcome).collect::<Vec<_>>());
    a.handle(Event::RepairedMany(done));
    assert!(matches!(phase(&a), Some(Phase::Done { ok: true })));
    assert!(a.tagged.is_empty());
    press(&mut a, "Esc");
    assert!(!states(&a).contains(&State::Dead), "{:?}", states(&a));
    let audit = fs::read_to_string(uc.join(".ubunye/repairs.jsonl")).unwrap();
    assert_eq!(audit.lines().filter(|l| l.contains("\"outcome\":\"done\"")).count(), 2, "{audit}");
}

#[test]
fn a_repair_refused_by_the_engine_is_shown() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    let effects = press(&mut a, "t y");
    let Some(Effect::Repair(plan)) = effects.into_iter().next() else { panic!("no repair asked for") };
    // The batch changes hands after the plan was shown: the engine refuses.
    let key = &plan.key;
    fs::remove_file(uc.join(format!(".ubunye/leases/demo/sales/ingest/{key}.json"))).unwrap();
    let done = repair::carry_out(&a.model.src, *plan);
    a.handle(Event::Repaired(Box::new(done)));
    assert!(matches!(phase(&a), Some(Phase::Done { ok: false })));
    snap("popup-result-refused", &screen(&mut a, 80, 24));
}

#[test]
fn help_runs_doctor_filter_and_detail_views() {
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    press(&mut a, "?");
    snap("help", &screen(&mut a, 80, 24));
    press(&mut a, "Esc 2");
    snap("view-runs", &screen(&mut a, 80, 24));
    snap("view-runs-wide", &screen(&mut a, 120, 12));
    press(&mut a, "Esc ?");
    press(&mut a, "j j");
    snap("help-scrolled", &screen(&mut a, 80, 24));
    // The help closed first: keys under it do nothing else.
    press(&mut a, "Esc 1 / type:state:dead");
    snap("filter-typing", &screen(&mut a, 80, 24));
    press(&mut a, "Enter Enter");
    snap("detail-open", &screen(&mut a, 80, 24));
}

// ---------------------------------------------------------------- keys -> state

type Check = fn(&App, &[Effect]);

#[test]
fn keys_change_the_state_as_the_table_says() {
    let cases: &[(&str, &str, &str, Check)] = &[
        ("down moves the selection", "dead-killed", "j", |a, _| assert_eq!(a.selected[0], 1)),
        ("down stops at the end", "dead-killed", "j j j j G j", |a, _| assert_eq!(a.selected[0], 1)),
        ("up stops at the top", "dead-killed", "k k g", |a, _| assert_eq!(a.selected[0], 0)),
        ("arrows work too", "dead-killed", "Down Up Down", |a, _| assert_eq!(a.selected[0], 1)),
        ("a state filter", "dead-killed", "/ type:state:finished Enter", |a, _| {
            assert_eq!(states(a), vec![State::Finished]);
            assert!(!a.editing);
        }),
        ("a text filter", "dead-killed", "/ type:2025-01-02", |a, _| {
            assert_eq!(states(a), vec![State::Dead]);
            assert!(a.editing);
        }),
        ("a date filter", "dead-killed", "/ type:dt:2025-01-01 Enter", |a, _| {
            assert_eq!(states(a), vec![State::Finished])
        }),
        (
            "a date range and a variable",
            "dead-killed",
            "/ type:dt:2025-01-02.. Space type:var:mode=DEV Enter",
            |a, _| assert_eq!(states(a), vec![State::Dead]),
        ),
        ("a variable no batch has", "dead-killed", "/ type:var:mode=PROD Enter", |a, _| assert!(a.rows.is_empty())),
        ("a filter that matches nothing", "dead-killed", "/ type:state:nosuch Enter", |a, _| {
            assert!(a.rows.is_empty())
        }),
        ("backspace edits the filter", "dead-killed", "/ type:state:deadx Backspace", |a, _| {
            assert_eq!(states(a), vec![State::Dead])
        }),
        ("esc in the filter drops it", "dead-killed", "/ type:state:dead Esc", |a, _| {
            assert_eq!(a.rows.len(), 2);
            assert!(!a.editing && a.filter.is_empty());
        }),
        ("esc on the list clears a kept filter", "dead-killed", "/ type:state:dead Enter Esc", |a, _| {
            assert_eq!(a.rows.len(), 2)
        }),
        ("s cycles the sort", "dead-killed", "s", |a, _| assert_eq!(a.sort, SortBy::Age)),
        ("s four times is back", "dead-killed", "s s s s", |a, _| assert_eq!(a.sort, SortBy::Severity)),
        ("sort by task keeps the selection", "dead-killed", "j s s", |a, _| {
            assert_eq!(a.sort, SortBy::Task);
            assert_eq!(selected_state(a), Some(State::Finished));
        }),
        ("? opens the help", "dead-killed", "?", |a, _| assert!(a.help)),
        ("esc closes the help", "dead-killed", "? Esc", |a, _| assert!(!a.help)),
        ("keys under the help do nothing else", "dead-killed", "? j t", |a, _| {
            assert!(a.help && a.selected[0] == 0 && a.popup.is_none())
        }),
        ("F freezes", "dead-killed", "F", |a, _| assert!(a.frozen)),
        ("F again resumes", "dead-killed", "F F", |a, _| assert!(!a.frozen)),
        ("q quits", "dead-killed", "q", |_, e| assert!(matches!(e, [Effect::Quit(0)]))),
        ("r rescans", "dead-killed", "r", |a, e| {
            assert!(matches!(e, [Effect::FullScan]));
            assert!(a.scanning);
        }),
        ("y copies the key", "dead-killed", "y", |_, e| {
            assert!(matches!(e, [Effect::Copy(k)] if k == "7d106ca76674f2a1"))
        }),
        ("tab goes to the runs", "dead-killed", "Tab", |a, _| assert_eq!(a.view, View::Runs)),
        ("tab four times is back", "dead-killed", "Tab Tab Tab Tab", |a, _| assert_eq!(a.view, View::Batches)),
        ("enter opens the detail", "dead-killed", "Enter", |a, _| assert!(a.detail.open)),
        ("the detail scrolls", "dead-killed", "Enter j j", |a, _| assert_eq!(a.detail.scroll, 2)),
        ("esc closes the detail", "dead-killed", "Enter Esc", |a, _| assert!(!a.detail.open)),
        ("enter on a run shows its batch", "dead-killed", "2 Enter", |a, _| {
            assert_eq!(a.view, View::Batches);
            assert!(a.detail.open);
        }),
        ("t opens the plan, No highlighted", "dead-killed", "t", |a, e| {
            assert!(e.is_empty());
            assert!(matches!(phase(a), Some(Phase::Asking { yes: false, .. })));
        }),
        ("enter answers No by default", "dead-killed", "t Enter", |a, e| {
            assert!(e.is_empty() && a.popup.is_none());
            assert_eq!(selected_state(a), Some(State::Dead));
        }),
        ("esc cancels the plan", "dead-killed", "t Esc", |a, e| assert!(e.is_empty() && a.popup.is_none())),
        ("n cancels the plan", "dead-killed", "t n", |a, e| assert!(e.is_empty() && a.popup.is_none())),
        ("scrolling the plan does not answer", "dead-killed", "t j", |a, e| {
            assert!(e.is_empty() && matches!(phase(a), Some(Phase::Asking { yes: false, .. })))
        }),
        ("right then enter says yes", "dead-killed", "t Right Enter", |a, e| {
            assert!(matches!(e, [Effect::Repair(_)]));
            assert!(matches!(phase(a), Some(Phase::Running)));
        }),
        ("right left enter is no again", "dead-killed", "t Right Left Enter", |a, e| {
            assert!(e.is_empty() && a.popup.is_none())
        }),
        ("y says yes", "dead-killed", "t y", |_, e| assert!(matches!(e, [Effect::Repair(_)]))),
        ("finish of a dead batch is refused", "dead-killed", "f", |a, _| {
            assert!(matches!(phase(a), Some(Phase::Refused)) && a.popup.as_ref().unwrap().title.starts_with("Finish "))
        }),
        ("takeover of a finished batch is refused", "dead-killed", "j t", |a, _| {
            assert!(matches!(phase(a), Some(Phase::Refused)))
        }),
        ("y in a refusal does nothing", "dead-killed", "j t y", |a, e| {
            assert!(e.is_empty() && matches!(phase(a), Some(Phase::Refused)))
        }),
        ("repairs only from the batch view", "dead-killed", "2 t", |a, _| assert!(a.popup.is_none())),
    ];
    for (name, fx, keys, check) in cases {
        let (_d, _uc, mut a) = open(fx, LATER);
        let effects = press(&mut a, keys);
        check(&a, &effects);
        // Every state still draws.
        let _ = screen(&mut a, 80, 24);
        eprintln!("ok: {name}");
    }
}

// ---------------------------------------------------------------- changes

/// A file event for a lease folder entry.

#[test]
fn a_file_event_rereads_only_its_batch() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    let lease = lease_path(&uc, "7d106ca76674f2a1.json");
    fs::remove_file(&lease).unwrap();
    a.handle(Event::FsChange(vec![lease]));
    // The lease went; its record (named by no file now) is kept from the scan.
    let b = a.model.to_batches().into_iter().find(|b| b.key == "7d106ca76674f2a1").unwrap();
    assert_eq!(b.state, State::Interrupted, "{}", b.note);
    assert!(a.model.last_change.is_some());
}

#[test]
fn events_held_while_frozen_are_applied_on_resume() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    press(&mut a, "F");
    let lease = lease_path(&uc, "7d106ca76674f2a1.json");
    fs::remove_file(&lease).unwrap();
    a.handle(Event::FsChange(vec![lease]));
    a.handle(Event::Tick);
    assert_eq!(a.held(), 1);
    assert_eq!(states(&a), vec![State::Dead, State::Finished], "frozen: nothing applied");
    snap("frozen", &screen(&mut a, 80, 24));
    press(&mut a, "F");
    assert_eq!(states(&a), vec![State::Interrupted, State::Finished]);
}

#[test]
fn unclear_paths_and_bursts_ask_for_a_full_rescan() {
    let (_d, uc, mut a) = open("dead-killed", LATER);
    let root = fs::canonicalize(&uc).unwrap();
    // A new task folder: unclear.
    let effects = a.handle(Event::FsChange(vec![root.join(".ubunye/leases/demo/new")]));
    assert!(matches!(effects.as_slice(), [Effect::FullScan]));
    // Thousands of batches at once.
    let (_d, uc, mut a) = open("dead-killed", LATER);
    let many: Vec<PathBuf> = (0..5000).map(|i| lease_path(&uc, &format!("{i:016x}.json"))).collect();
    let effects = a.handle(Event::FsChange(many));
    assert!(matches!(effects.as_slice(), [Effect::FullScan]));
    // A clock probe and a record's temp file: nothing.
    let effects = a.handle(Event::FsChange(vec![
        root.join(".ubunye/leases/.clock-0123abcd"),
        root.join(".ubunye/lineage/demo/sales/ingest/x.0123abcd.tmp"),
    ]));
    assert!(effects.is_empty());
}

#[test]
fn a_vanished_folder_is_said_and_the_last_state_kept() {
    let (d, uc, mut a) = open("dead-killed", LATER);
    let n = a.rows.len();
    let effects = press(&mut a, "r");
    assert!(matches!(effects.as_slice(), [Effect::FullScan]));
    fs::remove_dir_all(d.path()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    ubunye_tui::top::workers::read(&a.model.src, tx).unwrap();
    let events: Vec<Event> = rx.iter().collect();
    assert!(matches!(events.as_slice(), [Event::Loaded(res)] if res.is_err()), "{events:?}");
    a.handle_all(events);
    assert_eq!(a.rows.len(), n);
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("showing what was last read"), "{s}");
    // A batch event on the vanished folder: said, no panic.
    a.handle(Event::FsChange(vec![uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json")]));
    a.handle(Event::Tick);
    let _ = screen(&mut a, 80, 24);
}

#[test]
fn time_alone_turns_a_live_lease_dead() {
    let (_d, uc, captured) = fixture("live");
    let (sys, clock, _) = fake_sys(ELSEWHERE, captured + Duration::from_secs(5));
    let mut a = app(&uc, sys);
    assert_eq!(selected_state(&a), Some(State::Live));
    clock.advance(Duration::from_secs(16 * 60));
    a.handle(Event::Tick);
    assert_eq!(selected_state(&a), Some(State::Dead));
}

/// The tick judges only the batches with a lease, found again after any
/// batch is put: a finished batch that takes a lease after a tick is judged
/// by time at the next.
#[test]
fn a_lease_taken_after_a_tick_is_judged_by_the_next() {
    let (_d, uc, captured) = fixture("live");
    let (sys, clock, _) = fake_sys(ELSEWHERE, captured + Duration::from_secs(5));
    let mut a = app(&uc, sys);
    a.handle(Event::Tick);
    let state = |a: &App, key: &str| a.model.to_batches().into_iter().find(|b| b.key == key).map(|b| b.state);
    assert_eq!(state(&a, "39bc42311894ddba"), Some(State::Finished));
    let (live, taken) = (lease_path(&uc, "7d106ca76674f2a1.json"), lease_path(&uc, "39bc42311894ddba.json"));
    fs::copy(&live, &taken).unwrap();
    // Written when the other was (the fixture's time), as its heartbeat says.
    let mtime = fs::metadata(&live).unwrap().modified().unwrap();
    fs::File::options().write(true).open(&taken).unwrap().set_modified(mtime).unwrap();
    a.handle(Event::FsChange(vec![taken]));
    assert_eq!(state(&a, "39bc42311894ddba"), Some(State::Live));
    clock.advance(Duration::from_secs(16 * 60));
    a.handle(Event::Tick);
    assert_eq!(state(&a, "39bc42311894ddba"), Some(State::Dead));
}

#[test]
fn every_key_of_the_table_is_in_the_help() {
    // Every key the footer shows is in the help overlay (one table).
    let (_d, _uc, mut a) = open("dead-killed", LATER);
    press(&mut a, "?");
    let s = screen(&mut a, 120, 90);
    for b in ubunye_tui::top::keys::BINDINGS {
        assert!(s.contains(b.help), "{} missing from the help", b.help);
    }
}

#[test]
fn reading_the_use_case_is_not_a_change_and_a_lease_write_is() {
    use ubunye_tui::top::model::Target;
    use ubunye_tui::top::watch::{Requested, Watch};
    let (_d, uc, captured) = fixture("dead-killed");
    let (sys, _, _) = fake_sys(ELSEWHERE, captured + LATER);
    let a = app(&uc, sys);
    let root = a.model.scan.root.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let watch =
        Watch::start(Requested::Notify, Duration::from_secs(2), &root, &ubunye::layout::lineage_root(&root), tx);
    assert_eq!(watch.mode, "notify");
    // Scans open and list every folder: no event of theirs may ask for more.
    for _ in 0..3 {
        a.model.src.scan().unwrap();
    }
    std::thread::sleep(Duration::from_millis(400));
    for ev in rx.try_iter() {
        if let Event::FsChange(paths) = ev {
            for p in paths {
                let t = a.model.target(&p);
                assert!(matches!(t, Target::Ignore), "{} -> {t:?}", p.display());
            }
        }
    }
    // A lease written as the engine writes it: a temp file, then a rename.
    let lease = root.join(".ubunye/leases/demo/sales/ingest/39bc42311894ddba.json");
    fs::write(lease.with_extension("0123abcd.tmp"), "{}").unwrap();
    fs::rename(lease.with_extension("0123abcd.tmp"), &lease).unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(5);
    let want = Target::Batch(("demo/sales/ingest".into(), "39bc42311894ddba".into()));
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::FsChange(paths)) if paths.iter().any(|p| a.model.target(p) == want) => break,
            Ok(_) => {}
            Err(e) => panic!("no event for the lease: {e}"),
        }
    }
}

#[test]
fn the_first_read_streams_in_and_changes_seen_meanwhile_are_applied_after() {
    let (_d, uc, captured) = fixture("dead-killed");
    let (sys, _, _) = fake_sys(ELSEWHERE, captured + LATER);
    let src = Source::disk(uc.clone(), ScanOptions::default(), sys.clone());
    let root = fs::canonicalize(&uc).unwrap();
    let lineage = ubunye::layout::lineage_root(&root);
    let mut a = App::new(Model::new(src.clone(), ubunye_tui::top::empty(&root, &lineage, &sys)), false, "notify");
    a.start_loading();
    assert!(screen(&mut a, 80, 24).contains("Reading the use case"));
    let (tx, rx) = std::sync::mpsc::channel();
    ubunye_tui::top::workers::read(&src, tx).unwrap();
    let events: Vec<Event> = rx.iter().collect();
    assert!(matches!(events.last(), Some(Event::Loaded(_))));
    // A change arrives before the read is over: applied once it is.
    let (parts, loaded): (Vec<Event>, Vec<Event>) = events.into_iter().partition(|e| matches!(e, Event::Part(_)));
    a.handle_all(parts);
    assert_eq!(states(&a), vec![State::Dead, State::Finished]);
    assert!(a.loading.is_some());
    let lease = lease_path(&uc, "7d106ca76674f2a1.json");
    fs::remove_file(&lease).unwrap();
    a.handle(Event::FsChange(vec![lease]));
    let effects = a.handle_all(loaded);
    assert!(a.loading.is_none());
    assert_eq!(states(&a), vec![State::Interrupted, State::Finished]);
    // And its task is read again whole (records filed as a full scan files
    // them), once the first read is over.
    assert!(
        matches!(effects.as_slice(), [Effect::Rewatch, Effect::ReadTasks(t)] if t == &["demo/sales/ingest".to_string()]),
        "{effects:?}"
    );
    settle(&mut a, effects);
    assert!(!a.scanning);
    assert_eq!(states(&a), vec![State::Interrupted, State::Finished]);
}

/// A path three levels down is its task, read again,
/// only when a task's read can tell what it is (a folder, or gone); a file, a
/// symlink that leads nowhere or a name that is not UTF-8 is a full scan's
/// problem to report.
#[test]
fn a_task_level_path_is_its_task_only_when_it_is_a_folder_or_gone() {
    use std::os::unix::ffi::OsStrExt;
    use ubunye_tui::top::model::Target;
    let (_d, _uc, a) = open("dead-killed", LATER);
    let leases = a.model.scan.root.join(".ubunye/leases/demo/sales");
    let lineage = ubunye::layout::lineage_root(&a.model.scan.root).join("demo/sales");
    assert_eq!(a.model.target(&leases.join("ingest")), Target::Task("demo/sales/ingest".into()));
    assert_eq!(a.model.target(&lineage.join("ingest")), Target::Task("demo/sales/ingest".into()));
    assert_eq!(a.model.target(&leases.join("gone")), Target::Task("demo/sales/gone".into()));
    fs::write(leases.join("stray.json"), "{}").unwrap();
    assert_eq!(a.model.target(&leases.join("stray.json")), Target::Full);
    std::os::unix::fs::symlink("/nowhere/at/all", leases.join("dangling")).unwrap();
    assert_eq!(a.model.target(&leases.join("dangling")), Target::Full);
    let odd = leases.join(std::ffi::OsStr::from_bytes(b"t\xff"));
    fs::create_dir(&odd).unwrap();
    assert_eq!(a.model.target(&odd), Target::Full);
}
