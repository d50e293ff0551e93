//! `ubunye top`: check the folder, read it, watch it, and run the dashboard
//! until it is quit, the terminal restored whatever happens.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::mpsc;

use crate::cli::TopArgs;
use ubunye::state::{Scan, ScanOptions};
use ubunye::sys::{ClockSource, Now, Sys};

use crate::app::App;
use crate::event::{Event, Loop};
use crate::model::{Model, Source};
use crate::term;
use crate::watch::{Requested, Watch};

/// Run `top`; the exit code.
pub fn run(opts: &TopArgs) -> i32 {
    let uc = &opts.dir.dir;
    // Bad input is told in one line, before the terminal is touched.
    let root = match crate::cli::usecase::check(uc) {
        Ok(r) => r,
        Err(why) => return usage(&why),
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return usage("top needs a terminal; `ubunye leases list` prints the same table once");
    }
    let src = Source { uc: uc.clone(), opts: ScanOptions::default(), sys: Sys::real() };
    let (tx, rx) = mpsc::channel();
    // Watch first, then read: nothing that changes in between is missed. The
    // dashboard is up at once; the batches come in a task at a time.
    let lineage = ubunye::layout::lineage_root(&root);
    let watch = Watch::start(Requested::parse(&opts.watch), opts.interval, &root, &lineage, tx.clone());
    // The CLI decided (`--color`, NO_COLOR, CLICOLOR_FORCE): crossterm, which
    // reads NO_COLOR on its own, follows that decision.
    crossterm::style::force_color_output(opts.colour);
    let mut app = App::new(Model::new(src.clone(), empty(&root, &lineage, &src.sys)), opts.colour, &watch.mode);
    app.start_loading();
    if let Err(e) = read(&src, tx.clone()) {
        return fail(&format!("cannot start reading: {e}"));
    }
    let (mut terminal, mut guard) = match term::enter() {
        Ok(t) => t,
        Err(e) => {
            term::restore();
            return fail(&format!("cannot use the terminal: {e}"));
        }
    };
    if let Err(e) = term::feed(&tx, &mut guard) {
        drop(guard);
        return fail(&format!("cannot start: {e}"));
    }
    let ended = Loop {
        term: &mut terminal,
        app: &mut app,
        rx,
        tx,
        watch: Some(watch),
        clipboard: Some(Box::new(std::io::stdout())),
        on_frame: None,
    }
    .run();
    drop(guard);
    match ended {
        Ok(code) => code,
        Err(e) => fail(&format!("the terminal failed: {e}")),
    }
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

/// Read the use case off the UI thread, a task at a time: an [`Event::Part`]
/// for each task, then [`Event::Loaded`]. The first read and every rescan.
pub fn read(src: &Source, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    let src = src.clone();
    std::thread::Builder::new().name("top-read".into()).spawn(move || {
        let head = ubunye::state::scan_tasks(&src.uc, &src.opts, &src.sys, |_, batches| {
            let _ = tx.send(Event::Part(batches.into_iter().map(crate::model::keep).collect()));
        });
        let _ = tx.send(Event::Loaded(Box::new(head.map_err(|e| e.to_string()))));
    })?;
    Ok(())
}

/// Doctor's look at the use case, as `ubunye doctor` takes it: the event that
/// brings it to the dashboard.
pub fn examine(src: &Source) -> Event {
    Event::Examined(Box::new(ubunye::doctor::look(&src.uc, &src.opts, &src.sys).map_err(|e| e.to_string())))
}

/// Read these tasks again off the UI thread, as [`read`] reads every task:
/// an [`Event::Part`] for each, then [`Event::Loaded`].
pub fn read_tasks(src: &Source, tasks: Vec<String>, tx: mpsc::Sender<Event>) -> std::io::Result<()> {
    let src = src.clone();
    std::thread::Builder::new().name("top-read-tasks".into()).spawn(move || {
        let head = ubunye::state::scan_named_tasks(&src.uc, &src.opts, &src.sys, &tasks, |_, batches| {
            let _ = tx.send(Event::Part(batches.into_iter().map(crate::model::keep).collect()));
        });
        let _ = tx.send(Event::Loaded(Box::new(head.map_err(|e| e.to_string()))));
    })?;
    Ok(())
}

/// Bad input (exit 2), told before the terminal is touched.
fn usage(msg: &str) -> i32 {
    crate::cli::print::say_err(msg);
    crate::cli::exit::USAGE
}

fn fail(msg: &str) -> i32 {
    crate::cli::print::say_err(msg);
    crate::cli::exit::REFUSED
}
