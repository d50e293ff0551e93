//! `ubunye top -d s3://bucket/prefix`: the dashboard over a use case in an
//! object store. A store sends no events, so a thread looks every
//! `--interval` with the library's [`Poller`] (one listing, one HEAD of the
//! bucket for its clock, a GET only of what changed); every verdict is the
//! library's, as `leases list` gives it. Enter reads a batch's report
//! (`leases explain`); `t` shows a takeover's plan, default No, and the
//! engine checks again as it acts. Looking writes nothing.
//!
//! * [`app`]: the state and its update (pure), and the one table of keys;
//! * [`draw`]: the screen.

pub mod app;
pub mod draw;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::Backend;
use ubunye::bucket::{self, Found, Holder, Objects, Place, Poller, S3, StoreUrl};
use ubunye::layout::TaskPath;
use ubunye::repair::Kind;
use ubunye::sys::Sys;

use crate::console::exit;
use crate::console::print::say_err;
use crate::report::store::outcome_text;
use crate::top::event::Event;
use app::{Effect, StoreApp};

/// Where the dashboard reads from, and the machine that judges.
#[derive(Clone)]
pub struct Source {
    pub uc: StoreUrl,
    pub objects: Arc<dyn Objects>,
    pub sys: Sys,
}

/// The store at `dir` opened and asked its time (the bucket is there and the
/// credentials are taken), or the exit code and the line that says why not.
fn open(dir: &str, interval: Duration) -> Result<(StoreUrl, Arc<dyn Objects>), (i32, String)> {
    let uc = StoreUrl::parse(dir).map_err(|e| (exit::USAGE, format!("-d {dir}: {e}")))?;
    if interval < Duration::from_millis(100) {
        return Err((
            exit::USAGE,
            format!(
                "--interval {} would read the store without pause: give at least 100ms",
                humantime::format_duration(interval)
            ),
        ));
    }
    let objects: Arc<dyn Objects> = Arc::new(S3::from_env(&uc.bucket).map_err(|e| (exit::REFUSED, e.to_string()))?);
    objects.now().map_err(|e| (exit::REFUSED, e.to_string()))?;
    Ok((uc, objects))
}

/// Run the dashboard over the store at `dir`; the exit code. Bad input and
/// an unreachable store are told in one line before the terminal is touched.
pub fn run(dir: &str, interval: Duration, colour: bool, read_only: bool) -> i32 {
    if let Err((code, why)) = open(dir, interval) {
        say_err(&why);
        return code;
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        say_err(&format!("top needs a terminal; `ubunye leases list -d {dir} --all` prints the same table once"));
        return exit::USAGE;
    }
    crossterm::style::force_color_output(colour);
    let (mut terminal, guard) = match crate::top::term::enter() {
        Ok(t) => t,
        Err(e) => {
            say_err(&e);
            return exit::REFUSED;
        }
    };
    let ended = dashboard(&mut terminal, dir, interval, colour, read_only);
    drop(guard);
    match ended {
        Ok(e) => e.code,
        Err(e) => {
            say_err(&e);
            exit::REFUSED
        }
    }
}

/// The dashboard over the store at `dir`, in a terminal already entered,
/// until it is quit: its exit code, or the line that says why it could not
/// go on. The fleet view runs it for a store chosen, as it runs a folder's.
pub fn dashboard(
    terminal: &mut ratatui::DefaultTerminal,
    dir: &str,
    interval: Duration,
    colour: bool,
    read_only: bool,
) -> Result<crate::top::Ended, String> {
    let (uc, objects) = open(dir, interval).map_err(|(_, why)| why)?;
    let src = Source { uc, objects, sys: crate::console::machine::sys() };
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    poll(&src, interval, tx.clone(), stop.clone()).map_err(|e| format!("cannot start reading the store: {e}"))?;
    let mut app = StoreApp::new(dir, interval);
    app.read_only = read_only;
    let feed = match crate::top::term::feed(&tx) {
        Ok(f) => f,
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            return Err(format!("cannot start: {e}"));
        }
    };
    let ended = run_loop(terminal, &mut app, &src, rx, &tx, colour, Some(Box::new(std::io::stdout())));
    stop.store(true, Ordering::Relaxed);
    drop(feed);
    let code = ended.map_err(|e| format!("the terminal failed: {e}"))?;
    Ok(crate::top::Ended { code, interrupted: code != 0 })
}

/// Look at the store now and then every `every`, until `stop` or the loop
/// is gone.
fn poll(src: &Source, every: Duration, tx: Sender<Event>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    let src = src.clone();
    std::thread::Builder::new().name("top-store-poll".into()).spawn(move || {
        let mut poller = Poller::new();
        while !stop.load(Ordering::Relaxed) {
            let looked = poller.look(&*src.objects, &src.uc, &src.sys.timing).map_err(|e| e.to_string());
            if tx.send(Event::StoreLooked(Box::new(looked))).is_err() {
                return;
            }
            // Sleep in steps, so that a quit is not kept waiting.
            let mut left = every;
            while !left.is_zero() && !stop.load(Ordering::Relaxed) {
                let step = left.min(Duration::from_millis(100));
                std::thread::sleep(step);
                left -= step;
            }
        }
    })?;
    Ok(())
}

/// The loop: events in, effects carried out, a frame after each turn.
pub fn run_loop<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut StoreApp,
    src: &Source,
    rx: Receiver<Event>,
    tx: &Sender<Event>,
    colour: bool,
    clipboard: Option<Box<dyn Write>>,
) -> std::io::Result<i32> {
    crate::top::shell::run(term, &rx, &mut Screen { app, src, tx, colour, clipboard })
}

/// The dashboard over a store as the shell runs it.
struct Screen<'a> {
    app: &'a mut StoreApp,
    src: &'a Source,
    tx: &'a Sender<Event>,
    colour: bool,
    clipboard: Option<Box<dyn Write>>,
}

impl crate::top::shell::Screen for Screen<'_> {
    type Out = i32;

    fn draw(&mut self, f: &mut ratatui::Frame) -> std::io::Result<()> {
        draw::draw(f, self.app, self.colour);
        Ok(())
    }

    fn turn(&mut self, events: Vec<Event>) -> std::io::Result<Option<i32>> {
        Ok(events.into_iter().find_map(|ev| self.one(ev)))
    }

    fn closed(&mut self) -> i32 {
        0
    }
}

impl Screen<'_> {
    /// One event in: the effects it asks for carried out; Some to quit.
    fn one(&mut self, ev: Event) -> Option<i32> {
        for effect in handle(self.app, ev) {
            match effect {
                Effect::Quit(code) => return Some(code),
                Effect::Explain { task, key, plan } => spawn(self.tx, "top-store-explain", {
                    let src = self.src.clone();
                    move || {
                        let report = Box::new(report(&src, &task, &key));
                        Event::StoreExplained { task, key, plan, report }
                    }
                }),
                Effect::Takeover { task, key } => spawn(self.tx, "top-store-takeover", {
                    let dir = self.app.uc.clone();
                    move || {
                        let (ok, text) = take_over_apart(&dir, &task, &key);
                        Event::StoreRepaired { ok, text }
                    }
                }),
                Effect::Copy(text) => {
                    if let Some(out) = self.clipboard.as_mut() {
                        let _ = out.write_all(crate::top::term::osc52(&text).as_bytes());
                        let _ = out.flush();
                    }
                }
            }
        }
        None
    }
}

/// One event into the app: what it asks for.
pub fn handle(app: &mut StoreApp, ev: Event) -> Vec<Effect> {
    match ev {
        Event::Key(k) => app.key(&k),
        Event::StoreLooked(p) => {
            app.looked(*p);
            Vec::new()
        }
        Event::StoreExplained { task, key, plan, report } => {
            app.explained(&task, &key, plan, *report);
            Vec::new()
        }
        Event::StoreRepaired { ok, text } => {
            app.repaired(ok, text);
            Vec::new()
        }
        Event::Signal(sig) => vec![Effect::Quit(128 + sig)],
        _ => Vec::new(),
    }
}

fn spawn(tx: &Sender<Event>, name: &str, work: impl FnOnce() -> Event + Send + 'static) {
    let tx2 = tx.clone();
    let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
        let _ = tx2.send(work());
    });
    if let Err(e) = spawned {
        let _ = tx.send(Event::StoreRepaired { ok: false, text: format!("cannot start: {e}; nothing was done") });
    }
}

/// A batch's report read fresh from the store, and whether a takeover applies.
pub fn report(src: &Source, task: &str, key: &str) -> crate::top::event::StoreReport {
    let t = &src.sys.timing;
    let (_, found) = bucket::find(&*src.objects, &src.uc, key, Some(task), t).map_err(|e| e.to_string())?;
    let Found::One(b, read) = found else {
        return Err(format!("{task} {key} is no longer in the store"));
    };
    let e = bucket::explain(&*src.objects, &src.uc, &b, &read, t).map_err(|e| e.to_string())?;
    let plan = ubunye::repair::check(Kind::Takeover, &e).map(|p| crate::report::repair_plan(&p));
    Ok((crate::report::explanation(&e, None), plan))
}

/// `ubunye leases takeover --yes` of one batch, in a process of its own (its
/// own process group, no terminal): quitting the dashboard, Ctrl-C or the
/// terminal closing while it runs leave it to finish, so that no half-done
/// takeover leaves a lease no process holds. Its output is the outcome
/// shown.
pub fn take_over_apart(dir: &str, task: &str, key: &str) -> (bool, String) {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return (false, format!("cannot start the takeover: {e}; nothing was done")),
    };
    let out = std::process::Command::new(exe)
        .args(["leases", "takeover", "--yes", "-d", dir, "--task", task, key])
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .output();
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            let text = text.lines().map(|l| l.strip_prefix("ubunye: ").unwrap_or(l)).collect::<Vec<_>>().join("\n");
            (o.status.success(), text)
        }
        Err(e) => (false, format!("cannot start the takeover: {e}; nothing was done")),
    }
}

/// `leases takeover` of one batch, as the CLI does it, in this process.
pub fn take_over(src: &Source, task: &str, key: &str) -> (bool, String) {
    let head = format!("{task} {key}");
    let Ok(task) = TaskPath::parse(task) else {
        return (false, format!("{head}: the task is not <usecase>/<package>/<task>"));
    };
    let place = Place { uc: src.uc.clone(), task, key: key.into() };
    let holder = Holder {
        run_id: uuid::Uuid::new_v4().to_string(),
        host: src.sys.host.clone(),
        pid: src.sys.pid,
        rerun: false,
        actor: Some(Kind::Takeover.command().to_string()),
    };
    let ended = bucket::takeover(src.objects.clone(), &place, &holder, src.sys.clock.clone(), &src.sys.timing);
    outcome_text(Kind::Takeover, &place.task.to_string(), key, ended)
}
