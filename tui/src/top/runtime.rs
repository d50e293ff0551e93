//! The dashboard of a use case on the shell ([`super::shell`]): each turn
//! the shell drains the channel of [`Event`]s and hands them here, to the
//! [`App`] (pure: it returns effects); the effects are carried out (reads
//! and repairs off the UI thread, the clipboard, the watcher) and the shell
//! draws once.

use std::io::Write;
use std::sync::mpsc::{Receiver, Sender};

use ratatui::Terminal;
use ratatui::backend::Backend;

use super::app::{App, Effect, Level};
use super::event::Event;
use super::repair;
use super::watch::Watch;

/// Called after each frame.
pub type FrameHook<'a> = Box<dyn FnMut(&App) + 'a>;

/// Most events handled in one turn; the rest wait for the next.
const DRAIN: usize = 10_000;

/// The loop and what it needs.
pub struct Loop<'a, B: Backend> {
    pub term: &'a mut Terminal<B>,
    pub app: &'a mut App,
    pub rx: Receiver<Event>,
    pub tx: Sender<Event>,
    pub watch: Option<Watch>,
    /// Where OSC 52 goes (the terminal); None: copying only says so.
    pub clipboard: Option<Box<dyn Write + 'a>>,
    /// Called after each frame is drawn (benchmarks).
    pub on_frame: Option<FrameHook<'a>>,
}

impl<B: Backend> Loop<'_, B> {
    /// Run until quit; returns the exit code.
    pub fn run(self) -> std::io::Result<i32> {
        let Loop { term, app, rx, tx, watch, clipboard, on_frame } = self;
        if let Some(w) = &watch {
            app.set_watch(&w.mode);
            app.status.hint = w.hint.clone();
        }
        let mut screen = Dashboard { app, tx, watch, clipboard, on_frame };
        super::shell::run(term, &rx, &mut screen)
    }
}

/// The dashboard of a use case as the shell runs it: a turn's events go to
/// the app at once ([`App::handle_all`]), and the watcher hears first of the
/// folders made.
struct Dashboard<'a> {
    app: &'a mut App,
    tx: Sender<Event>,
    watch: Option<Watch>,
    clipboard: Option<Box<dyn Write + 'a>>,
    on_frame: Option<FrameHook<'a>>,
}

impl super::shell::Screen for Dashboard<'_> {
    type Out = i32;
    const DRAIN: usize = DRAIN;

    fn draw(&mut self, f: &mut ratatui::Frame) -> std::io::Result<()> {
        crate::top::ui::draw(f, self.app);
        Ok(())
    }

    fn drawn(&mut self) {
        if let Some(cb) = self.on_frame.as_mut() {
            cb(self.app);
        }
    }

    fn closed(&mut self) -> i32 {
        0
    }

    fn turn(&mut self, events: Vec<Event>) -> std::io::Result<Option<i32>> {
        // A folder made below the watched ones is watched before the
        // app reads it (the watcher's business: the app stays pure).
        if let Some(w) = self.watch.as_mut() {
            for e in &events {
                if let Event::FsChange(paths) = e
                    && let Err(e) = w.noticed(paths)
                {
                    let limit = crate::top::watch::is_limit(&e);
                    w.failed(if limit { "watch limit" } else { "notify failed" });
                    self.app.set_watch(&w.mode);
                    self.app.status.hint = w.hint.clone();
                }
            }
        }
        let effects = self.app.handle_all(events);
        for effect in effects {
            if let Some(code) = self.carry_out(effect) {
                return Ok(Some(code));
            }
        }
        Ok(None)
    }
}

impl Dashboard<'_> {
    /// Do what the app asked; Some(code) to quit.
    fn carry_out(&mut self, effect: Effect) -> Option<i32> {
        match effect {
            Effect::Quit(code) => return Some(code),
            Effect::FullScan => {
                if let Err(e) = super::workers::read(&self.app.model.src, self.tx.clone()) {
                    let _ = self.tx.send(Event::Loaded(Box::new(Err(format!("cannot start a rescan: {e}")))));
                }
            }
            Effect::ReadTasks(tasks) => {
                if let Err(e) = super::workers::read_tasks(&self.app.model.src, tasks, self.tx.clone()) {
                    let _ = self.tx.send(Event::Loaded(Box::new(Err(format!("cannot start a rescan: {e}")))));
                }
            }
            Effect::Examine => {
                let (src, tx) = (self.app.model.src.clone(), self.tx.clone());
                let spawned = std::thread::Builder::new().name("top-doctor".into()).spawn(move || {
                    let _ = tx.send(super::workers::examine(&src));
                });
                if let Err(e) = spawned {
                    let _ = self.tx.send(Event::Examined(Box::new(Err(format!("cannot start: {e}")))));
                }
            }
            Effect::Explain(id) => {
                let (src, tx) = (self.app.model.src.clone(), self.tx.clone());
                let spawned = std::thread::Builder::new().name("top-explain".into()).spawn({
                    let id = id.clone();
                    move || {
                        let _ = tx.send(super::workers::explain(&src, id));
                    }
                });
                if let Err(e) = spawned {
                    let _ = self.tx.send(Event::Explained { id, lines: Err(format!("cannot start: {e}")) });
                }
            }
            Effect::Plan { kind, ids } => {
                let (src, tx) = (self.app.model.src.clone(), self.tx.clone());
                let root = self.app.model.scan.root.clone();
                let spawned = std::thread::Builder::new().name("top-plan".into()).spawn(move || {
                    let _ = tx.send(super::workers::plan(&src, &root, kind, ids));
                });
                if let Err(e) = spawned {
                    self.app.popup = None;
                    self.app.say(Level::Error, format!("cannot read the plan: {e}; nothing was done"));
                }
            }
            Effect::Repair(plan) => {
                let (src, tx) = (self.app.model.src.clone(), self.tx.clone());
                let spawned = std::thread::Builder::new().name("top-repair".into()).spawn(move || {
                    let _ = tx.send(Event::Repaired(Box::new(repair::carry_out(&src, *plan))));
                });
                if let Err(e) = spawned {
                    self.app.popup = None;
                    self.app.say(Level::Error, format!("cannot start the repair: {e}; nothing was done"));
                }
            }
            Effect::RepairMany(plans) => {
                let (src, tx) = (self.app.model.src.clone(), self.tx.clone());
                let spawned = std::thread::Builder::new().name("top-repair".into()).spawn(move || {
                    let done = plans.into_iter().map(|p| repair::carry_out(&src, p)).collect();
                    let _ = tx.send(Event::RepairedMany(done));
                });
                if let Err(e) = spawned {
                    self.app.popup = None;
                    self.app.say(Level::Error, format!("cannot start the repairs: {e}; nothing was done"));
                }
            }
            Effect::Copy(text) => match self.clipboard.as_mut() {
                Some(out) => {
                    let _ = out.write_all(crate::top::term::osc52(&text).as_bytes());
                    let _ = out.flush();
                }
                None => self.app.say(Level::Info, format!("key {text} (no terminal to copy to)")),
            },
            Effect::Rewatch => {
                if let Some(w) = self.watch.as_mut() {
                    if let Err(e) = w.ensure() {
                        let limit = crate::top::watch::is_limit(&e);
                        w.failed(if limit { "watch limit" } else { "notify failed" });
                        if !limit {
                            self.app.say(Level::Warn, format!("cannot watch for changes ({e}); polling instead"));
                        }
                    }
                    self.app.set_watch(&w.mode);
                    self.app.status.hint = w.hint.clone();
                }
            }
            Effect::PollInstead(why) => {
                if let Some(w) = self.watch.as_mut() {
                    w.failed(&why);
                    self.app.set_watch(&w.mode);
                    self.app.status.hint = w.hint.clone();
                }
            }
        }
        None
    }
}
