//! The dashboard's test helpers: a fixture opened in `top`'s model at a time
//! of the test's choosing, keys pressed, screens drawn on a TestBackend.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ubunye::state::{ScanOptions, State};
use ubunye::sys::Sys;
use ubunye_testkit::{ELSEWHERE, FIXTURE_HOST, fake_sys, fixture_in, set_mtime, task, vars};
use ubunye_tui::top::app::{App, Effect};
use ubunye_tui::top::event::Event;
use ubunye_tui::top::model::{Model, Source};
use ubunye_tui::top::popup::Phase;
use ubunye_tui::top::repair::Repair;

/// A temp folder `/tmp/ubtXXXXXX`: its path has the same length on every
/// machine, so that screens wrap the same way (see [`snap_settings`]).
pub fn short_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("ubt").rand_bytes(6).tempdir_in("/tmp").unwrap()
}

/// A fixture copied to /tmp/ubtXXXXXX/uc, mtimes restored to the whole
/// second; its capture time. The screens in tui/tests/all/snapshots were recorded
/// with whole seconds: `live`, 5 s after its capture, shows its lease written
/// 15s ago (14.9 s to the nanosecond).
pub fn fixture(name: &str) -> (tempfile::TempDir, PathBuf, SystemTime) {
    let (d, uc, m) = fixture_in(short_tempdir(), name);
    for p in m.paths() {
        let secs = m.mtime(&p).duration_since(UNIX_EPOCH).unwrap().as_secs();
        set_mtime(&uc.join(&p), UNIX_EPOCH + Duration::from_secs(secs));
    }
    (d, uc, m.captured_at())
}

pub fn app(uc: &Path, sys: Sys) -> App {
    let src = Source::disk(uc.to_path_buf(), ScanOptions::default(), sys);
    let scan = src.scan().unwrap();
    App::new(Model::new(src, scan), false, "notify")
}

/// A use case whose one batch failed: its run (of `ubunye exec`) ended in an
/// error, its lease given back; the dashboard on it.
pub fn failed_run() -> (tempfile::TempDir, App) {
    let d = short_tempdir();
    let uc = d.path().join("uc");
    fs::create_dir_all(uc.join(".ubunye")).unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1_795_948_000);
    let (sys, _, _) = fake_sys(FIXTURE_HOST, now);
    let (task, vars) = (task(), vars("2025-01-03"));
    let run = "0f1e2d3c-0000-4000-8000-000000000001".to_string();
    let spec = ubunye::LeaseSpec::new(&uc, task.clone(), vars.clone(), run.clone());
    let (lease, _) = ubunye::RunLease::acquire(spec, sys.clone()).unwrap();
    let rs = ubunye::lineage::RecordSpec { run_id: run, task, variables: vars, backend: "exec".into(), command: None };
    let mut rec = ubunye::lineage::RunRecord::start(
        &ubunye::layout::lineage_root(&uc),
        &rs,
        now,
        std::time::Duration::from_secs(2),
    )
    .unwrap();
    lease.end(false).unwrap();
    rec.finish("error", Some("CommandFailed: sh exited with code 1.".into()), now + Duration::from_secs(2)).unwrap();
    (d, app(&uc, sys))
}

/// `dead-killed` with its dead run's lease not UTF-8 (unreadable), the
/// dashboard on it 20 minutes after.
pub fn unreadable_lease() -> (tempfile::TempDir, App) {
    let (d, uc, captured) = fixture("dead-killed");
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    fs::write(&lease, b"{\"run_id\": \"a7ee7676\", \"pid\": \"\xff\"}").unwrap();
    let (sys, _, _) = fake_sys(ELSEWHERE, captured + LATER);
    (d, app(&uc, sys))
}

/// The fixture's dashboard `after` its capture.
pub fn open(name: &str, after: Duration) -> (tempfile::TempDir, PathBuf, App) {
    let (d, uc, captured) = fixture(name);
    let (sys, _, _) = fake_sys(ELSEWHERE, captured + after);
    let a = app(&uc, sys);
    (d, uc, a)
}

pub const LATER: Duration = Duration::from_secs(20 * 60);

/// How screens are snapshotted: the temp folder and the fresh run ids of
/// repairs written the same way every time (same lengths: the layout is
/// untouched). Each test file binds them around its `assert_snapshot!` (whose
/// file decides where snapshots live).
pub fn snap_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"/tmp/ubt[A-Za-z0-9]{6}", "/tmp/ubtXXXXXX");
    settings.add_filter(r"(takeover|finish) \(run [0-9a-f]{8}\)", "$1 (run RRRRRRRR)");
    // A takeover mark's time is its file's mtime: the real clock's.
    settings.add_filter(r"taken over at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "taken over at YYYY-MM-DDTHH:MM:SSZ");
    settings.add_filter(r"(takeover +[0-9a-f]{8} +)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "${1}YYYY-MM-DDTHH:MM:SSZ");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

pub fn text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    buf.content
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn draw(app: &mut App, w: u16, h: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| ubunye_tui::top::ui::draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

pub fn screen(app: &mut App, w: u16, h: u16) -> String {
    text(&draw(app, w, h))
}

pub fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Press keys written as words: `j`, `Enter`, `Esc`, `Right`, `Tab`, `Space`, or
/// `type:some text` to type text.
pub fn press(app: &mut App, keys: &str) -> Vec<Effect> {
    let mut effects = Vec::new();
    for k in keys.split_whitespace() {
        if let Some(t) = k.strip_prefix("type:") {
            for c in t.chars() {
                effects.extend(app.handle(key(KeyCode::Char(c))));
            }
            continue;
        }
        let code = match k {
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Right" => KeyCode::Right,
            "Left" => KeyCode::Left,
            "Up" => KeyCode::Up,
            "Down" => KeyCode::Down,
            "Tab" => KeyCode::Tab,
            "Space" => KeyCode::Char(' '),
            "Backspace" => KeyCode::Backspace,
            "PgDn" => KeyCode::PageDown,
            "PgUp" => KeyCode::PageUp,
            "Home" => KeyCode::Home,
            "End" => KeyCode::End,
            one if one.chars().count() == 1 => KeyCode::Char(one.chars().next().unwrap()),
            other => panic!("no key {other}"),
        };
        effects.extend(app.handle(key(code)));
    }
    effects
}

/// The repair popup's phase, when one is open.
pub fn phase(app: &App) -> Option<&Phase<Repair>> {
    app.popup.as_ref().map(|p| &p.phase)
}

pub fn states(app: &App) -> Vec<State> {
    app.rows.iter().map(|&i| app.model.state_of(i)).collect()
}

pub fn selected_state(app: &App) -> Option<State> {
    app.selected_batch().map(|b| b.state())
}

/// A lease-folder file of the fixtures' task.
pub fn lease_path(uc: &Path, name: &str) -> PathBuf {
    fs::canonicalize(uc).unwrap().join(".ubunye/leases/demo/sales/ingest").join(name)
}

/// Carry out the reads the dashboard asked for (a whole rescan, or its
/// tasks read again), as the event loop does on its threads, until it asks
/// for no more.
pub fn settle(a: &mut App, mut effects: Vec<Effect>) {
    loop {
        let mut more = Vec::new();
        for e in effects {
            let events = events_of(a, &e);
            if !events.is_empty() {
                more.extend(a.handle_all(events));
            }
        }
        if !more.iter().any(|e| matches!(e, Effect::FullScan | Effect::ReadTasks(_))) {
            return;
        }
        effects = more;
    }
}

/// Files changed: their events handled, and the reads they ask for done.
pub fn change(a: &mut App, paths: Vec<PathBuf>) {
    let effects = a.handle(Event::FsChange(paths));
    settle(a, effects);
}

/// The events of the read an effect asks for (a whole rescan, or some tasks
/// read again), read now, as the event loop's thread would send them; none
/// for another effect.
pub fn events_of(a: &App, e: &Effect) -> Vec<Event> {
    let (tx, rx) = std::sync::mpsc::channel();
    match e {
        Effect::FullScan => ubunye_tui::top::workers::read(&a.model.src, tx).unwrap(),
        Effect::ReadTasks(t) => ubunye_tui::top::workers::read_tasks(&a.model.src, t.clone(), tx).unwrap(),
        _ => return Vec::new(),
    }
    rx.iter().collect()
}

/// The events of a whole rescan, read now.
pub fn read_all(a: &App) -> Vec<Event> {
    events_of(a, &Effect::FullScan)
}

/// A deterministic walk (xorshift): the same seed, the same steps.
pub struct Walk(u64);

impl Walk {
    pub fn new(seed: u64) -> Walk {
        Walk(seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) | 1)
    }

    /// A number below `n`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}
