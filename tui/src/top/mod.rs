//! `ubunye top`: check the folder, read it, watch it, and run the dashboard
//! until it is quit, the terminal restored whatever happens.
//!
//! * [`app`]: the state and its update (pure: an event in, effects out);
//!   [`event`]: the one event enum (a leaf); [`runtime`]: the loop that feeds
//!   events in, carries effects out and draws; [`workers`]: the reads and
//!   repairs done off the UI thread; [`keys`]: the one table of keys;
//!   [`ui`]: drawing; [`popup`]: the one popup of a plan and its question,
//!   every dashboard's; [`repair`]: the two-phase repair; [`model`]: the data,
//!   kept up to date from file events; [`watch`]: notify or poll; [`term`]:
//!   the terminal, restored on every exit; [`filter`]: the `/` filter;
//!   [`view`]: the views; [`store`]: a use case in an object store as the
//!   source (polled: a store sends no events); [`fleet`]: many use cases,
//!   one row each, and the dashboard of the one chosen.

pub mod app;
pub mod event;
pub mod filter;
pub mod fleet;
pub mod index;
pub mod keys;
pub mod keytable;
pub mod listing;
pub mod model;
pub mod popup;
pub mod repair;
pub mod runtime;
pub mod shell;
pub mod store;
pub mod term;
pub mod ui;
pub mod view;
pub mod watch;
pub mod workers;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use ubunye::state::{Scan, ScanOptions};
use ubunye::sys::{ClockSource, Now, Sys};

use crate::top::app::App;
use crate::top::model::{Model, Source};
use crate::top::runtime::Loop;
use crate::top::watch::{Requested, Watch};

/// What `ubunye top` is asked (the CLI's `TopArgs`, parsed).
#[derive(Clone, Debug)]
pub struct Options {
    /// The use-case folder, as given.
    pub dir: std::path::PathBuf,
    /// `auto`, `notify` or `poll`.
    pub watch: String,
    /// How often to rescan in poll mode.
    pub interval: std::time::Duration,
    /// Whether to colour (decided by `console::colour`).
    pub colour: bool,
    /// `--read-only`: no repair keys.
    pub read_only: bool,
}

/// Where `top` reads from, checked.
enum Target {
    Folder(std::path::PathBuf),
    Store(store::Store),
}

/// Run `top`; the exit code.
pub fn run(opts: &Options) -> i32 {
    let uc = &opts.dir;
    let url = uc.to_str().filter(|d| ubunye::bucket::is_store_url(d));
    // Bad input, and a store that does not answer, are told in one line,
    // before the terminal is touched.
    let target = match url {
        Some(url) => match store::open(url, opts.interval) {
            Ok(s) => Target::Store(s),
            Err((code, why)) => {
                crate::console::print::say_err(&why);
                return code;
            }
        },
        None if opts.interval < std::time::Duration::from_millis(100) => {
            let every = humantime::format_duration(opts.interval);
            return usage(&format!("--interval {every} would poll the use case without pause: give at least 100ms"));
        }
        None => match crate::console::usecase::check(uc) {
            Ok(r) => Target::Folder(r),
            Err(why) => return usage(&why),
        },
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return usage(&match url {
            Some(url) => {
                format!("top needs a terminal; `ubunye leases list -d {url} --all` prints the same table once")
            }
            None => "top needs a terminal; `ubunye leases list` prints the same table once".into(),
        });
    }
    // The CLI decided (`--color`, NO_COLOR, CLICOLOR_FORCE): crossterm, which
    // reads NO_COLOR on its own, follows that decision.
    crossterm::style::force_color_output(opts.colour);
    let (mut terminal, guard) = match term::enter() {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let ended = match target {
        Target::Folder(root) => dashboard(&mut terminal, opts, &root),
        Target::Store(s) => store_dashboard(&mut terminal, opts, s),
    };
    drop(guard);
    match ended {
        Ok(e) => e.code,
        Err(e) => fail(&e),
    }
}

/// How a dashboard ended: its exit code, and whether by Ctrl-C (which ends a
/// fleet view too, where q only goes back to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    pub code: i32,
    pub interrupted: bool,
}

/// The dashboard of the use case at `root` (`opts.dir` checked), in a
/// terminal already entered, until it is quit: its exit code, or the line
/// that says why it could not go on. The fleet view runs it for the use
/// case chosen, and takes the terminal back after.
pub fn dashboard(terminal: &mut ratatui::DefaultTerminal, opts: &Options, root: &Path) -> Result<Ended, String> {
    let src = Source::disk(opts.dir.clone(), ScanOptions::default(), crate::console::machine::sys());
    let (tx, rx) = mpsc::channel();
    // Watch first, then read: nothing that changes in between is missed. The
    // dashboard is up at once; the batches come in a task at a time.
    let lineage = ubunye::layout::lineage_root(root);
    let watch = Watch::start(Requested::parse(&opts.watch), opts.interval, root, &lineage, tx.clone());
    let app = App::new(Model::new(src.clone(), empty(root, &lineage, &src.sys)), opts.colour, &watch.mode);
    show(terminal, opts, app, (tx, rx), Some(watch))
}

/// The dashboard of the use case in the store opened, as [`dashboard`]
/// shows a folder's: read at once, then every `--interval`.
pub fn store_dashboard(
    terminal: &mut ratatui::DefaultTerminal,
    opts: &Options,
    s: store::Store,
) -> Result<Ended, String> {
    let root = std::path::PathBuf::from(s.url.to_string());
    let sys = crate::console::machine::sys();
    let src = Source { uc: root.clone(), opts: ScanOptions::default(), sys, store: Some(s) };
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    workers::poll_every(opts.interval, tx.clone(), stop.clone()).map_err(|e| format!("cannot start: {e}"))?;
    let mode = format!("poll {} (store)", humantime::format_duration(opts.interval));
    let empty = empty(&root, &ubunye::layout::lineage_root(&root), &src.sys);
    let app = App::new(Model::new(src, empty), opts.colour, &mode);
    let ended = show(terminal, opts, app, (tx, rx), None);
    stop.store(true, Ordering::Relaxed);
    ended
}

/// The dashboard over `app`, its first read started, until it is quit.
fn show(
    terminal: &mut ratatui::DefaultTerminal,
    opts: &Options,
    mut app: App,
    (tx, rx): (mpsc::Sender<event::Event>, mpsc::Receiver<event::Event>),
    watch: Option<Watch>,
) -> Result<Ended, String> {
    app.read_only = opts.read_only;
    app.start_loading();
    workers::read(&app.model.src, tx.clone()).map_err(|e| format!("cannot start reading: {e}"))?;
    let feed = term::feed(&tx).map_err(|e| format!("cannot start: {e}"))?;
    let ended = Loop {
        term: terminal,
        app: &mut app,
        rx,
        tx,
        watch,
        clipboard: Some(Box::new(std::io::stdout())),
        on_frame: None,
    }
    .run();
    drop(feed);
    let code = ended.map_err(|e| format!("the terminal failed: {e}"))?;
    Ok(Ended { code, interrupted: app.interrupted })
}

/// A use case with nothing read yet.
pub fn empty(root: &Path, lineage: &Path, sys: &Sys) -> Scan {
    Scan {
        root: root.to_path_buf(),
        lineage_dir: lineage.to_path_buf(),
        now: Now { time: sys.clock.now(), source: ClockSource::Local },
        batches: Vec::new(),
        problems: Vec::new(),
    }
}

/// Bad input (exit 2), told before the terminal is touched.
fn usage(msg: &str) -> i32 {
    crate::console::print::say_err(msg);
    crate::console::exit::USAGE
}

fn fail(msg: &str) -> i32 {
    crate::console::print::say_err(msg);
    crate::console::exit::REFUSED
}
