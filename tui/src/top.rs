//! `ubunye top`: check the folder, read it, watch it, and run the dashboard
//! until it is quit, the terminal restored whatever happens.

use std::io::IsTerminal;
use std::sync::mpsc;

use ubunye::cli::TopArgs;
use ubunye::state::{ScanError, ScanOptions};
use ubunye::sys::Sys;

use crate::app::App;
use crate::event::Loop;
use crate::model::{Model, Source};
use crate::term;
use crate::watch::{Requested, Watch};

/// Run `top`; the exit code.
pub fn run(opts: &TopArgs) -> i32 {
    let uc = &opts.dir.dir;
    // Bad input is told in one line, before the terminal is touched.
    let root = match std::fs::canonicalize(uc) {
        Ok(r) if r.join(".ubunye").is_dir() => r,
        Ok(r) => return fail(&ScanError::NotAUseCase(r).to_string()),
        Err(e) => return fail(&ScanError::NoFolder(uc.clone(), e.to_string()).to_string()),
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return fail("top needs a terminal; `ubunye leases list` prints the same table once");
    }
    let src = Source { uc: uc.clone(), opts: ScanOptions::default(), sys: Sys::real() };
    let (tx, rx) = mpsc::channel();
    // Watching and the first scan run side by side.
    let (watch, scan, raced) = start(&opts.watch, opts.interval, &root, &src, tx.clone());
    let scan = match scan {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    if raced {
        let _ = tx.send(crate::event::Event::Poll);
    }
    let mut app = App::new(Model::new(src, scan), term::colour(), &watch.mode);
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

/// Start watching and read the use case, side by side. When the watch was
/// not in place before the scan began (setting it up walks every folder), a
/// change in between could be missed: the flag says so, and one more full
/// scan after the first frame closes the gap.
pub fn start(
    requested: &str,
    interval: std::time::Duration,
    root: &std::path::Path,
    src: &Source,
    tx: mpsc::Sender<crate::event::Event>,
) -> (Watch, Result<ubunye::state::Scan, String>, bool) {
    let lineage = ubunye::layout::lineage_root(root);
    let requested = Requested::parse(requested);
    std::thread::scope(|s| {
        let (started_tx, started_rx) = mpsc::channel();
        let (lineage2, tx2) = (lineage.clone(), tx.clone());
        let watching = s.spawn(move || {
            let w = Watch::start(requested, interval, root, &lineage, tx);
            let _ = started_tx.send(());
            w
        });
        let in_place = started_rx.recv_timeout(std::time::Duration::from_millis(50)).is_ok();
        let scan = src.scan();
        let watch = watching.join().unwrap_or_else(|_| Watch::start(Requested::Poll, interval, root, &lineage2, tx2));
        let raced = !in_place && watch.mode == "notify";
        (watch, scan, raced)
    })
}

fn fail(msg: &str) -> i32 {
    eprintln!("ubunye: {msg}");
    ubunye::cli::exit::REFUSED
}
