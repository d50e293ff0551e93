//! `ubunye top` over many use cases (`-d` repeated, `--find ROOT`): one row
//! per use case, its batches counted by state as `ubunye metrics` counts
//! them (a task at a time: no use case is held whole, only its counts and
//! the batches that hold a lease, so memory follows those, not the fleet).
//! Every `--interval` each use case is brought up to date
//! ([`ubunye::tally`]): its task folders are listed, a task whose folder
//! changed is read again alone, and the held leases are judged again (dead
//! and stalled depend on time); every [`FULL_EVERY`] each is read whole
//! again. Enter opens the dashboard of the use case chosen in the same
//! terminal, as `ubunye top -d` opens it; `q` there comes back here. A use
//! case that cannot be read is a row that says why. Looking writes nothing.
//!
//! * [`app`]: the state and its update (pure), and the one table of keys;
//! * [`draw`]: the screen.

pub mod app;
pub mod draw;

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::Backend;
use ubunye::state::ScanOptions;
use ubunye::sys::Sys;

use crate::console::exit;
use crate::console::fleet::{Counter, UseCase};
use crate::console::print::say_err;
use crate::top::event::Event;
use app::{Effect, FleetApp};

/// What `ubunye top` is asked, over many use cases.
#[derive(Clone, Debug)]
pub struct Options {
    pub ucs: Vec<UseCase>,
    /// For the dashboard of one: `auto`, `notify` or `poll`.
    pub watch: String,
    pub interval: Duration,
    pub colour: bool,
    /// `--read-only`: the dashboards it opens have no repair keys.
    pub read_only: bool,
}

/// Run the fleet view; the exit code. Bad input is told in one line before
/// the terminal is touched.
pub fn run(opts: &Options) -> i32 {
    if opts.interval < Duration::from_millis(100) {
        say_err(&format!(
            "--interval {} would read the use cases without pause: give at least 100ms",
            humantime::format_duration(opts.interval)
        ));
        return exit::USAGE;
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        say_err("top needs a terminal; `ubunye leases list` with the same -d/--find prints the batches once");
        return exit::USAGE;
    }
    crossterm::style::force_color_output(opts.colour);
    let (mut terminal, guard) = match crate::top::term::enter() {
        Ok(t) => t,
        Err(e) => {
            say_err(&e);
            return exit::REFUSED;
        }
    };
    let ended = views(&mut terminal, opts, &crate::console::machine::sys());
    drop(guard);
    match ended {
        Ok(code) => code,
        Err(e) => {
            say_err(&e);
            exit::REFUSED
        }
    }
}

/// The fleet view, and the dashboard of each use case opened from it, until
/// quit.
fn views(terminal: &mut ratatui::DefaultTerminal, opts: &Options, sys: &Sys) -> Result<i32, String> {
    let mut app = FleetApp::new(opts.ucs.iter().map(UseCase::name).collect(), opts.interval);
    // One counter for the view's whole life, paused while a use case's
    // dashboard is open (which reads that use case itself): its counts are
    // kept across, never read again for coming back, and no second counter
    // ever reads beside it.
    let (tx, rx) = mpsc::channel();
    let flags = Flags::default();
    let _stop = Stop(flags.stop.clone());
    count(&opts.ucs, opts.interval, sys, tx.clone(), flags.clone())
        .map_err(|e| format!("cannot start reading: {e}"))?;
    loop {
        let feed = crate::top::term::feed(&tx).map_err(|e| format!("cannot start: {e}"))?;
        let asked =
            overview(terminal, &mut app, &rx, &flags.now, opts.colour).map_err(|e| format!("the terminal failed: {e}"));
        drop(feed);
        let i = match asked? {
            Effect::Open(i) => i,
            Effect::Quit(code) => return Ok(code),
            Effect::ReadNow => continue,
        };
        let uc = &opts.ucs[i];
        let one = crate::top::Options {
            dir: uc.shown.clone(),
            watch: opts.watch.clone(),
            interval: opts.interval,
            colour: opts.colour,
            read_only: opts.read_only,
        };
        flags.paused.store(true, Ordering::Relaxed);
        let ended = match uc.store() {
            Some(url) => crate::top::store::open(url, opts.interval)
                .map_err(|(_, why)| why)
                .and_then(|s| crate::top::store_dashboard(terminal, &one, s))
                .map_err(|e| format!("{}: {e}", uc.name())),
            None => match crate::console::usecase::check(&uc.shown) {
                Err(why) => Err(format!("cannot open {}: {why}", uc.name())),
                Ok(root) => crate::top::dashboard(terminal, &one, &root).map_err(|e| format!("{}: {e}", uc.name())),
            },
        };
        flags.paused.store(false, Ordering::Relaxed);
        match ended {
            // `q` in the dashboard: back to the fleet; Ctrl-C or a signal
            // ends both.
            Ok(e) if e.code == 0 && !e.interrupted => {}
            Ok(e) => return Ok(e.code),
            Err(e) => app.message = Some(e),
        }
        let _ = terminal.clear();
    }
}

/// What the counter is told: stop, pause (a dashboard is open), look now.
#[derive(Clone, Default)]
struct Flags {
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    now: Arc<AtomicBool>,
}

/// Tells the counter to stop when dropped, however the view ends.
struct Stop(Arc<AtomicBool>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How often every use case is read whole again (and doctor's findings
/// counted again); between, each is brought up to date ([`ubunye::tally`]).
pub const FULL_EVERY: Duration = Duration::from_secs(600);

/// Count every use case, then keep the counts up to date until told to
/// stop (an [`Event::FleetCounted`] for each use case whose counts changed,
/// then an [`Event::FleetRound`] each round); while paused it reads nothing;
/// `now` cuts the wait short.
fn count(ucs: &[UseCase], every: Duration, sys: &Sys, tx: Sender<Event>, flags: Flags) -> std::io::Result<()> {
    let (ucs, sys) = (ucs.to_vec(), sys.clone());
    std::thread::Builder::new().name("top-fleet-count".into()).spawn(move || {
        let opts = ScanOptions::default();
        let mut counters: Vec<Counter> = ucs.iter().map(|uc| Counter::new(uc, &opts, &sys, FULL_EVERY)).collect();
        let idle = |flags: &Flags| flags.paused.load(Ordering::Relaxed) || flags.stop.load(Ordering::Relaxed);
        let mut whole = false;
        while !flags.stop.load(Ordering::Relaxed) {
            let started = Instant::now();
            // `r`: every use case read whole, doctor's findings with it.
            if std::mem::take(&mut whole) {
                counters.iter_mut().for_each(Counter::read_whole_next);
            }
            for (i, c) in counters.iter_mut().enumerate() {
                // Paused or stopped: the rest waits for the next round.
                if idle(&flags) {
                    break;
                }
                if let Some(c) = c.refresh(&sys)
                    && tx.send(Event::FleetCounted(i, c)).is_err()
                {
                    return;
                }
            }
            let took = started.elapsed();
            if !idle(&flags) && tx.send(Event::FleetRound(took)).is_err() {
                return;
            }
            // Sleep in steps, so that a quit or `r` is not kept waiting;
            // never less than the round took (at most half a core); while
            // paused, until it is not.
            let mut left = every.max(took);
            loop {
                let paused = flags.paused.load(Ordering::Relaxed);
                if flags.stop.load(Ordering::Relaxed) || (!paused && left.is_zero()) {
                    break;
                }
                if !paused && flags.now.swap(false, Ordering::Relaxed) {
                    whole = true;
                    break;
                }
                let step =
                    left.min(Duration::from_millis(100)).max(Duration::from_millis(if paused { 100 } else { 0 }));
                std::thread::sleep(step);
                left = left.saturating_sub(step);
            }
        }
    })?;
    Ok(())
}

/// The fleet view's loop: events in, a frame after each turn, until it asks
/// to quit or to open a use case.
pub fn overview<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut FleetApp,
    rx: &Receiver<Event>,
    now: &AtomicBool,
    colour: bool,
) -> std::io::Result<Effect> {
    crate::top::shell::run(term, rx, &mut Screen { app, now, colour })
}

/// The fleet view as the shell runs it.
struct Screen<'a> {
    app: &'a mut FleetApp,
    now: &'a AtomicBool,
    colour: bool,
}

impl crate::top::shell::Screen for Screen<'_> {
    type Out = Effect;

    fn draw(&mut self, f: &mut ratatui::Frame) -> std::io::Result<()> {
        draw::draw(f, self.app, self.colour);
        Ok(())
    }

    fn turn(&mut self, events: Vec<Event>) -> std::io::Result<Option<Effect>> {
        for ev in events {
            for effect in self.app.handle(ev) {
                match effect {
                    Effect::ReadNow => self.now.store(true, Ordering::Relaxed),
                    asked => return Ok(Some(asked)),
                }
            }
        }
        Ok(None)
    }

    fn closed(&mut self) -> Effect {
        Effect::Quit(0)
    }
}
