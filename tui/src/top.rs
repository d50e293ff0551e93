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
    // Watch first, then read: nothing that changes in between is missed.
    let watch = Watch::start(
        Requested::parse(&opts.watch),
        opts.interval,
        &root,
        &ubunye::layout::lineage_root(&root),
        tx.clone(),
    );
    let scan = match src.scan() {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
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

fn fail(msg: &str) -> i32 {
    eprintln!("ubunye: {msg}");
    ubunye::cli::exit::REFUSED
}
