//! `ubunye top` over many use cases, without a terminal: the
//! fleet view's app fed the library's counts of real fixtures (judged by a
//! fake clock, so the screens are the same on every run), drawn on a
//! TestBackend; and `top` over many off a terminal is one line and exit 2.
//! The same in a real terminal, with a use case's dashboard opened and left,
//! is in tui/tests/slow/top_tmux.rs.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ubunye::census::Census;
use ubunye::state::ScanOptions;
use ubunye_testkit::{FIXTURE_HOST, fake_sys};
use ubunye_tui::top::event::Event;
use ubunye_tui::top::fleet::app::FleetApp;
use ubunye_tui::top::fleet::draw;

use crate::common;
use common::dash::{fixture, snap_settings, text};

/// The census of a fixture, judged at the time it was captured.
fn counted(name: &str) -> Census {
    let (_d, uc, at) = fixture(name);
    let (sys, _, _) = fake_sys(FIXTURE_HOST, at);
    let mut c = ubunye::census::count(&uc, &format!("/srv/{name}"), &ScanOptions::default(), &sys, false);
    c.duration = Duration::from_millis(40);
    c
}

fn app() -> FleetApp {
    let names = ["/srv/dead-killed", "/srv/kept", "/srv/orphan", "/srv/gone"];
    let mut app = FleetApp::new(names.iter().map(|n| n.to_string()).collect(), Duration::from_secs(2));
    for (i, name) in ["dead-killed", "kept", "orphan"].iter().enumerate() {
        app.handle(Event::FleetCounted(i, Box::new(counted(name))));
    }
    let gone = Census {
        use_case: "/srv/gone".into(),
        error: Some("/srv/gone: no such folder (No such file or directory)".into()),
        scan_errors: 1,
        ..Census::default()
    };
    app.handle(Event::FleetCounted(3, Box::new(gone)));
    app.handle(Event::FleetRound(Duration::from_millis(160)));
    for _ in 0..3 {
        app.handle(Event::Tick);
    }
    app
}

fn key(app: &mut FleetApp, c: KeyCode) {
    app.handle(Event::Key(KeyEvent::new(c, KeyModifiers::NONE)));
}

fn screen(app: &FleetApp) -> String {
    let mut term = Terminal::new(TestBackend::new(100, 22)).unwrap();
    term.draw(|f| draw::draw(f, app, false)).unwrap();
    text(term.backend().buffer())
}

fn snap(name: &str, s: &str) {
    snap_settings().bind(|| insta::assert_snapshot!(name, s));
}

#[test]
fn one_row_per_use_case_with_the_librarys_counts() {
    let mut app = app();
    let t = app.totals();
    assert_eq!(t.batches(), 6, "two batches in each fixture");
    snap("fleet_main", &screen(&app));
    // The one that cannot be read says why below, and does not open.
    key(&mut app, KeyCode::Char('G'));
    key(&mut app, KeyCode::Enter);
    snap("fleet_unreadable", &screen(&app));
    key(&mut app, KeyCode::Char('/'));
    for c in "uc:kept".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.rows(), vec![1]);
    key(&mut app, KeyCode::Char('?'));
    snap("fleet_help", &screen(&app));
}

#[test]
fn top_over_many_off_a_terminal_is_one_line_and_exit_2() {
    let (_d, uc, _) = fixture("kept");
    let o = std::process::Command::new(common::bin())
        .args(["top", "-d"])
        .arg(&uc)
        .arg("-d")
        .arg(&uc)
        .arg("--find")
        .arg(uc.parent().unwrap())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("top needs a terminal") && err.lines().count() == 1, "{err}");
    let o = std::process::Command::new(common::bin())
        .args(["top", "--interval", "10ms", "--find"])
        .arg(uc.parent().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--interval 10ms") && err.lines().count() == 1, "{err}");
    // One use case too: an interval of nothing would poll without pause.
    let o =
        std::process::Command::new(common::bin()).args(["top", "--interval", "0s", "-d"]).arg(&uc).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--interval 0s") && err.contains("at least 100ms") && err.lines().count() == 1, "{err}");
}
