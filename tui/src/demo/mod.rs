//! `ubunye demo`: a sandbox use case holding every kind of state, each made by
//! the engine itself: `ubunye exec` runs (finished, failed, and two live ones
//! that keep running), actors killed at protocol steps (dead, orphan, pending),
//! a kept lease, and a run taken over by `ubunye leases takeover`
//! (interrupted). Then `top` on it (or, off a terminal or with --no-top, the
//! `leases list --all` table); the live runs are stopped when it ends.

pub mod actor;
pub mod children;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::console::print::{errln, outln};
use ubunye::key::batch_key;
use ubunye::state::{self, ScanOptions, State};
use ubunye::vars::cli_variables;

use children::Live;

const INGEST: &str = "demo/sales/ingest";
const SUMMARY: &str = "demo/sales/summary";
const CLICKS: &str = "demo/web/clicks";

/// The states the sandbox must show.
pub const STATES: [State; 8] = [
    State::Dead,
    State::Orphan,
    State::Pending,
    State::Kept,
    State::Live,
    State::Interrupted,
    State::Failed,
    State::Finished,
];

/// What `ubunye demo` is asked.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where to build the sandbox (default: a new folder in the temp folder).
    pub dir: Option<PathBuf>,
    /// Show the list, not the dashboard.
    pub no_top: bool,
}

/// Run `ubunye demo`; the exit code. `show` shows the built sandbox (the
/// dashboard when `interactive`, else the list) and gives its exit code.
pub fn run(opts: &Options, show: &dyn Fn(&Path, bool) -> i32) -> i32 {
    let uc = match sandbox(opts.dir.as_deref()) {
        Ok(d) => d,
        // A --dir that cannot hold a sandbox is bad input.
        Err(e) if opts.dir.is_some() => {
            errln(&format!("ubunye demo: {e}"));
            return crate::console::exit::USAGE;
        }
        Err(e) => return fail(&e),
    };
    let interactive = !opts.no_top && std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    errln(&format!("ubunye demo: building a sandbox use case in {} ...", uc.display()));
    let started = Instant::now();
    let mut live = Live::default();
    if let Err(e) = build(&uc, &mut live) {
        live.stop();
        return fail(&format!("{e} (the sandbox is left in {} to look at)", uc.display()));
    }
    let missing = missing_states(&uc);
    if !missing.is_empty() {
        errln(&format!(
            "ubunye demo: the sandbox lacks {} (see `ubunye leases list --all -d {}`)",
            missing.join(", "),
            uc.display()
        ));
    }
    errln(&format!("ubunye demo: built in {:.1} s.", started.elapsed().as_secs_f64()));
    outln(&format!("Sandbox: {}", uc.display()));
    let code = show(&uc, interactive);
    let n = live.len();
    live.stop();
    outln(&format!(
        "The sandbox stays in {}; its {n} live run(s) were stopped with SIGTERM as the demo ended. Try:\n  ubunye leases list -d {}\n  ubunye leases explain <key> -d {}\n  ubunye top -d {}",
        uc.display(),
        uc.display(),
        uc.display(),
        uc.display()
    ));
    code
}

fn fail(msg: &str) -> i32 {
    errln(&format!("ubunye demo: {msg}"));
    crate::console::exit::REFUSED
}

/// The sandbox folder: `--dir` (new or empty) or a new one in the temp folder.
fn sandbox(dir: Option<&Path>) -> Result<PathBuf, String> {
    let d = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::temp_dir().join(format!("ubunye-demo-{}", ubunye::fsx::hex8())),
    };
    match std::fs::read_dir(&d) {
        Ok(mut rd) => {
            if rd.next().is_some() {
                return Err(format!("{} is not empty: give --dir a new or empty folder", d.display()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&d).map_err(|e| format!("cannot make {}: {e}", d.display()))?;
        }
        Err(e) => return Err(format!("cannot use {}: {e}", d.display())),
    }
    std::fs::create_dir_all(d.join(".ubunye")).map_err(|e| format!("cannot make {}/.ubunye: {e}", d.display()))?;
    std::fs::canonicalize(&d).map_err(|e| format!("{}: {e}", d.display()))
}

/// The steps, in order.
struct Builder<'a> {
    exe: PathBuf,
    uc: &'a Path,
}

impl Builder<'_> {
    fn cmd(&self) -> std::process::Command {
        children::command(&self.exe, self.uc)
    }

    /// `ubunye exec` of `job` (a shell line) on a batch; `want` its exit code.
    fn exec(&self, task: &str, dt: &str, output: &str, job: &str, want: i32) -> Result<(), String> {
        let mut c = self.cmd();
        c.args(["exec", "-q", "-d"]).arg(self.uc).args(["--task", task, "-dt", dt]);
        c.args(output_args(output)).args(["--", "sh", "-c", job]);
        let (code, err) = children::run(c)?;
        if code != want {
            return Err(format!("`ubunye exec` of {task} {dt} ended with {code}, not {want}: {err}"));
        }
        Ok(())
    }

    /// An actor (see [`actor`]) on a batch's append output `name=path`.
    fn actor(&self, what: &str, task: &str, dt: &str, output: &str) -> Result<(), String> {
        let (name, path) = output.split_once('=').unwrap_or((output, output));
        let mut c = self.cmd();
        c.arg(actor::SUBCOMMAND).arg(what).arg(self.uc).args([task, dt, name, path]);
        let (code, err) = children::run(c)?;
        // Killed ones end by SIGKILL (no code); the others exit 0.
        if code > 0 {
            return Err(format!("the {what} run of {task} {dt} failed: {err}"));
        }
        Ok(())
    }

    /// `ubunye leases takeover <key> --yes`, as on-call would.
    fn takeover(&self, task: &str, dt: &str) -> Result<(), String> {
        let key = key_of(task, dt)?;
        let mut c = self.cmd();
        // The holder was killed and reaped by this demo, so it is surely gone:
        // the settle wait (3 s, for a live holder to show itself) is shortened.
        c.env("UBUNYE_TEST_SETTLE", "100ms");
        c.args(["leases", "takeover", &key, "--task", task, "--yes", "-d"]).arg(self.uc);
        let (code, err) = children::run(c)?;
        if code != 0 {
            return Err(format!("`ubunye leases takeover {key}` ended with {code}: {err}"));
        }
        Ok(())
    }

    /// A run that keeps running (`sleep`), heartbeating its lease, until the
    /// demo stops it.
    fn live(&self, live: &mut Live, task: &str, dt: &str, output: &str) -> Result<(), String> {
        let (name, _) = output.split_once('=').unwrap_or((output, output));
        let env = ubunye::exec::env_name("UBUNYE_OUT_", name);
        let job = format!("echo click,1 > \"${env}/part-$UBUNYE_RUN_ID.csv\"; exec sleep 3600");
        let mut c = self.cmd();
        c.args(["exec", "-q", "-d"]).arg(self.uc).args(["--task", task, "-dt", dt]);
        c.args(output_args(output)).args(["--", "sh", "-c", &job]);
        live.spawn(&format!("the live run of {task} {dt}"), c)?;
        Ok(())
    }
}

fn output_args(output: &str) -> [String; 2] {
    match output.strip_prefix('!') {
        Some(o) => ["--overwrite".into(), o.into()],
        None => ["--append".into(), output.into()],
    }
}

fn key_of(task: &str, dt: &str) -> Result<String, String> {
    let vars = cli_variables(Some(dt), None, "DEV", &[]).map_err(|e| e.to_string())?;
    batch_key(task, &vars).map_err(|e| e.to_string())
}

/// Make every state, through the engine.
fn build(uc: &Path, live: &mut Live) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let b = Builder { exe, uc };
    let events = "events=out/events";
    let ingest = |n: &str| format!("echo order,{n} > \"$UBUNYE_OUT_EVENTS/part-{n}-$UBUNYE_RUN_ID.csv\"");
    // Finished: ordinary runs.
    b.exec(INGEST, "2025-01-01", events, &ingest("1"), 0)?;
    b.exec(INGEST, "2025-01-02", events, &ingest("2"), 0)?;
    b.exec(SUMMARY, "2025-01-01", "!totals=out/totals", "echo total,42 > \"$UBUNYE_OUT_TOTALS/totals.csv\"", 0)?;
    // Failed: a command that exits 1.
    b.exec(INGEST, "2025-01-03", events, "echo 'orders.csv: no such file' >&2; exit 1", 1)?;
    // Dead: killed after claiming, between two files moved in.
    b.actor("dead", INGEST, "2025-01-04", events)?;
    // Orphan: a dead run, then a takeover killed once it renamed the lease aside.
    b.actor("dead", INGEST, "2025-01-05", events)?;
    b.actor("takeover-killed", INGEST, "2025-01-05", events)?;
    // Kept: a failed run whose landed file could not be taken back.
    b.actor("kept", INGEST, "2025-01-06", events)?;
    // Pending: a finished batch, then a --rerun killed before it removed the
    // files of the run it replaces.
    b.exec(INGEST, "2025-01-07", events, &ingest("7"), 0)?;
    b.actor("rerun-killed", INGEST, "2025-01-07", events)?;
    // Interrupted: a run killed, then taken over by on-call.
    b.actor("dead", SUMMARY, "2025-01-02", "parts=out/parts")?;
    b.takeover(SUMMARY, "2025-01-02")?;
    // Live: two runs that keep running.
    b.live(live, CLICKS, "2025-01-08", "clicks=out/clicks")?;
    b.live(live, CLICKS, "2025-01-09", "clicks=out/clicks")?;
    wait_live(uc, live, &[key_of(CLICKS, "2025-01-08")?, key_of(CLICKS, "2025-01-09")?])
}

/// Wait until the live runs hold their batches and have written their records.
fn wait_live(uc: &Path, live: &mut Live, keys: &[String]) -> Result<(), String> {
    let sys = crate::console::machine::sys();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = keys.iter().all(|k| {
            state::scan_batch(uc, CLICKS, k, &ScanOptions::default(), &sys)
                .is_ok_and(|(_, b)| b.state == State::Live && !b.records.is_empty())
        });
        if ready {
            return Ok(());
        }
        if let Some(what) = live.ended() {
            return Err(format!("{what} ended at once"));
        }
        if Instant::now() >= until {
            return Err("the live runs did not start within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The states the sandbox should have and does not.
fn missing_states(uc: &Path) -> Vec<&'static str> {
    let Ok(scan) = state::scan(uc, &ScanOptions::default(), &crate::console::machine::sys()) else {
        return vec!["everything"];
    };
    STATES.iter().filter(|s| !scan.batches.iter().any(|b| b.state == **s)).map(|s| s.word()).collect()
}
