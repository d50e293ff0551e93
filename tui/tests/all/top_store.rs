//! `ubunye top -d s3://...` without a terminal or a server: the dashboard's
//! app over the in-memory store that keeps S3's rules, its looks made by the
//! library's `Poller`, its effects carried out as its loop carries them
//! out (`top::store::report`, `take_over`), its screens drawn on a
//! TestBackend. The same over a real server in a real terminal is in
//! tui/tests/slow/store.rs (tmux).

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ubunye::bucket::{Acquire, Holder, Lease, Memory, Objects, Place, Poller, StoreUrl, acquire};
use ubunye::layout::TaskPath;
use ubunye::sys::Sys;
use ubunye_testkit::{ELSEWHERE, FakeClock, fake_sys};
use ubunye_tui::top::event::Event;
use ubunye_tui::top::popup::Phase;
use ubunye_tui::top::store::app::{Effect, StoreApp};
use ubunye_tui::top::store::{Source, draw, handle, report, take_over};

use crate::common;
use common::dash::{snap_settings, text};

const DEAD: &str = "00000000000000d1";
const LIVE: &str = "00000000000000a2";
const BAD: &str = "00000000000000b3";

struct World {
    clock: Arc<FakeClock>,
    mem: Arc<Memory>,
    src: Source,
    poller: Poller,
    app: StoreApp,
}

fn place(key: &str) -> Place {
    Place {
        uc: StoreUrl::parse("s3://bkt/uc").unwrap(),
        task: TaskPath::parse("demo/sales/ingest").unwrap(),
        key: key.into(),
    }
}

fn hold(w: &World, key: &str, run: &str) -> Arc<Lease> {
    let h = Holder { run_id: run.into(), host: "h".into(), pid: 7, rerun: false, actor: None };
    match acquire(w.mem.clone(), &place(key), &h, w.clock.clone(), &w.src.sys.timing).unwrap() {
        Acquire::Held(l, _) => l,
        _ => panic!("{key}: not held"),
    }
}

/// A dead lease, a live one, one that cannot be read.
fn world() -> (World, Arc<Lease>) {
    let (sys, clock, _) = fake_sys(ELSEWHERE, UNIX_EPOCH + Duration::from_secs(1_780_000_000));
    let mem = Arc::new(Memory::new("bkt", clock.clone()));
    let sys = Sys { clock: clock.clone(), ..sys };
    let src = Source { uc: StoreUrl::parse("s3://bkt/uc").unwrap(), objects: mem.clone(), sys };
    let w = World { clock, mem, src, poller: Poller::new(), app: StoreApp::new("s3://bkt/uc", Duration::from_secs(2)) };
    let dead = hold(&w, DEAD, "dddddddd-0000-4000-8000-000000000001");
    // Its run had claimed a dozen objects (none of which it completed): the
    // takeover's plan names each.
    dead.save(|d| {
        let claims: Vec<String> =
            (0..12).map(|i| format!("s3://bkt/lake/ev/dddddddd-0000-4000-8000-000000000001-part-{i}.csv")).collect();
        let note = serde_json::json!({"appends": true, "exact": true, "state": "writing", "url": "s3://bkt/lake/ev", "claimed": claims});
        d.outputs_mut().insert("ev".into(), note);
    })
    .unwrap();
    w.clock.advance(w.src.sys.timing.heartbeat_timeout + Duration::from_secs(60));
    let _live = hold(&w, LIVE, "aaaaaaaa-0000-4000-8000-000000000002");
    w.mem.put(&format!("uc/.ubunye/leases/demo/sales/ingest/{BAD}.json"), b"{\"run_id\": ".to_vec()).unwrap();
    (w, dead)
}

impl World {
    fn look(&mut self) {
        let p = self.poller.look(&*self.mem, &self.src.uc, &self.src.sys.timing).map_err(|e| e.to_string());
        let effects = handle(&mut self.app, Event::StoreLooked(Box::new(p)));
        assert!(effects.is_empty());
    }
    /// Press `c`, and carry out what it asks as the loop would.
    fn press(&mut self, c: KeyCode) -> Vec<Effect> {
        let effects = handle(&mut self.app, Event::Key(KeyEvent::new(c, KeyModifiers::NONE)));
        for e in &effects {
            let ev = match e.clone() {
                Effect::Explain { task, key, plan } => {
                    Event::StoreExplained { report: Box::new(report(&self.src, &task, &key)), task, key, plan }
                }
                Effect::Takeover { task, key } => {
                    let (ok, text) = take_over(&self.src, &task, &key);
                    Event::StoreRepaired { ok, text }
                }
                Effect::Copy(_) | Effect::Quit(_) => continue,
            };
            assert!(handle(&mut self.app, ev).is_empty());
        }
        effects
    }
    fn screen(&mut self, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| draw::draw(f, &mut self.app, false)).unwrap();
        text(term.backend().buffer())
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
    snap("store-table", &w.screen(100, 14));
    // Enter: the batch's report, read from the store.
    w.press(KeyCode::Char('j'));
    w.press(KeyCode::Enter);
    snap("store-detail", &w.screen(100, 30));
    w.press(KeyCode::Char('?'));
    snap("store-help", &w.screen(100, 36));
    w.press(KeyCode::Esc);
    w.look();
    assert_eq!(w.mem.snapshot(), before, "the dashboard wrote to the store");
    assert!(w.mem.open_uploads("").unwrap().is_empty());
}

#[test]
fn a_dead_batch_is_taken_over_after_its_plan_and_leaves_the_table() {
    let (mut w, _dead) = world();
    w.look();
    // The rows: unreadable, dead, live. The unreadable one is refused.
    w.press(KeyCode::Char('t'));
    assert!(matches!(&w.app.popup, Some(p) if p.phase == Phase::Refused && p.lines[0].contains("cannot be read")));
    w.press(KeyCode::Esc);
    w.press(KeyCode::Char('j'));
    assert_eq!(w.app.chosen().unwrap().1, DEAD);
    w.press(KeyCode::Char('t'));
    snap("store-takeover-plan", &w.screen(100, 24));
    // Enter answers No: nothing changes.
    let before = w.mem.snapshot();
    w.press(KeyCode::Enter);
    assert!(w.app.popup.is_none());
    assert_eq!(w.mem.snapshot(), before);
    w.press(KeyCode::Char('t'));
    w.press(KeyCode::Char('y'));
    match &w.app.popup {
        Some(p) if p.phase == (Phase::Done { ok: true }) => {
            let text = p.lines.join("\n");
            assert!(text.contains("run dddddddd taken over") && text.contains("released"), "{text}")
        }
        other => panic!("{other:?}"),
    }
    snap("store-takeover-done", &w.screen(100, 16));
    w.press(KeyCode::Esc);
    w.look();
    let keys: Vec<&str> = w.app.batches.iter().map(|b| b.key.as_str()).collect();
    assert_eq!(keys, [LIVE, BAD], "the taken-over batch is free: no lease, no row");
    assert!(w.mem.get(&place(DEAD).lease_key()).unwrap().is_none());
}

#[test]
fn a_lease_that_comes_alive_after_the_plan_is_not_taken_over() {
    let (mut w, dead) = world();
    w.look();
    w.press(KeyCode::Char('j'));
    w.press(KeyCode::Char('t'));
    assert!(matches!(&w.app.popup, Some(p) if matches!(p.phase, Phase::Asking { .. })));
    // Its run was only paused: it saves its lease again.
    dead.save(|_| ()).unwrap();
    w.press(KeyCode::Char('y'));
    match &w.app.popup {
        Some(p) if p.phase == (Phase::Done { ok: false }) => {
            assert!(p.lines.iter().any(|l| l.contains("holds it")), "{:?}", p.lines)
        }
        other => panic!("{other:?}"),
    }
    assert!(w.mem.get(&place(DEAD).lease_key()).unwrap().is_some(), "the live lease is kept");
}

/// The store's plan scrolls in the one popup as the use case's does: under
/// a counter, the question always in view, and scrolling answers nothing.
#[test]
fn a_plan_longer_than_the_store_popup_scrolls_as_the_use_cases_does() {
    let (mut w, _dead) = world();
    w.look();
    w.press(KeyCode::Char('j'));
    w.press(KeyCode::Char('t'));
    let counter = regex::Regex::new(r"take over demo/sales/ingest \S+ ─+ (\d+)-(\d+)/(\d+) ").unwrap();
    let at = |s: &str| counter.captures(s).map(|c| [1, 2, 3].map(|i| c[i].parse::<usize>().unwrap()));
    let top = w.screen(100, 16);
    let Some([1, last, len]) = at(&top) else { panic!("no counter:\n{top}") };
    assert!(last < len && top.contains("Go ahead?  [ No ]  [ Yes ]"), "{top}");
    w.press(KeyCode::End);
    let end = w.screen(100, 16);
    assert_eq!(at(&end), Some([len - last + 1, len, len]), "{end}");
    assert!(end.contains("part-11.csv: not there") && end.contains("Go ahead?"), "{end}");
    w.press(KeyCode::Home);
    w.press(KeyCode::Char('j'));
    assert_eq!(at(&w.screen(100, 16)).map(|c| c[0]), Some(2));
    let before = w.mem.snapshot();
    assert!(w.press(KeyCode::Enter).is_empty() && w.app.popup.is_none(), "Enter is still No");
    assert_eq!(w.mem.snapshot(), before);
}
