//! The kill test itself: the sandbox, the reference run, the kill rounds,
//! the clean passes, and what the verifier finds.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Serialize;
use ubunye::killtest::{self, Debris, Diff, writes::Listing};
use ubunye::state::{ScanOptions, State};

use super::plan::Plan;
use super::procs::{self, Interrupted, Stop};
pub use super::sandbox::{Sandbox, sandbox};

/// How each run is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// Under `ubunye exec` (what is being proven).
    Exec,
    /// The command alone, writing in place (`--bare`: what a kill does to it
    /// unguarded).
    Bare,
}

/// One row of the report: what one check found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// What was checked.
    pub check: String,
    /// Each output's differences from the reference (by content).
    pub outputs: std::collections::BTreeMap<String, Diff>,
    /// Runs begun again after a kill (None: not known, without run records).
    pub redone: Option<usize>,
    /// What was left behind.
    pub debris: Debris,
    /// `--compare`'s verdict: None when not given (JSON: null, `"same"`, or why not).
    #[serde(serialize_with = "compare_json")]
    pub compare: Option<Result<(), String>>,
}

fn compare_json<S: serde::Serializer>(c: &Option<Result<(), String>>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        None => s.serialize_none(),
        Some(Ok(())) => s.serialize_str("same"),
        Some(Err(why)) => s.serialize_str(why),
    }
}

impl Row {
    /// Sum of a column over the outputs.
    pub fn sum(&self, f: fn(&Diff) -> usize) -> usize {
        self.outputs.values().map(f).sum()
    }
}

/// Everything a killtest found.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    /// Rounds run.
    pub rounds: usize,
    /// Kills that landed while `ubunye exec` (or the bare command) ran.
    pub kills: usize,
    /// Takeovers run, and how many of them were killed.
    pub takeovers: usize,
    /// Takeovers killed.
    pub takeover_kills: usize,
    /// Rounds run with `--rerun` (every batch was finished).
    pub rerun_rounds: usize,
    /// The reference run's time, all batches.
    pub reference_secs: f64,
    /// The rows: after the kills and a clean pass; after a --rerun of every batch.
    pub rows: Vec<Row>,
    /// Files the command wrote outside its outputs in the reference run.
    pub outside: Vec<String>,
    /// Of those, the ones inside an output folder (written in place), with
    /// the output's name.
    #[serde(skip)]
    pub outside_in: Vec<(String, String)>,
    /// Files of the real use case's outputs that changed while killtest ran.
    pub real_changed: Vec<String>,
    /// A run that ended in a way it must not (not killed).
    pub errors: Vec<String>,
    /// Processes that left a run's session and outlived it (killed by
    /// killtest, as their subreaper).
    pub escaped: Vec<String>,
    /// Outputs the reference run left empty: nothing was written beneath
    /// their $UBUNYE_OUT_<NAME>, so nothing about them can be checked.
    pub empty_outputs: Vec<String>,
}

/// What one run of a batch is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Resume,
    Rerun,
}

/// The runner: how to start each kind of run in a use case.
pub struct Runner<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// Exec or bare.
    pub how: How,
    /// This program (to run `ubunye exec`, `ubunye leases takeover`).
    pub bin: PathBuf,
    /// The sandbox's top (for the settle marker).
    pub sandbox: PathBuf,
}

impl Runner<'_> {
    fn exec(&self, uc: &Path, b: &super::plan::Batch, mode: Mode) -> Command {
        let p = self.plan;
        match self.how {
            How::Exec => {
                let mut c = Command::new(&self.bin);
                c.env(ubunye::sys::sandbox::VAR, &self.sandbox).arg("exec").arg("-q").arg("-d").arg(uc);
                c.args(["--task", &p.task]).args(&b.flags);
                for o in &p.outputs {
                    let flag = if o.append { "--append" } else { "--overwrite" };
                    let mut v = OsString::from(format!("{}=", o.name));
                    v.push(o.rel.as_os_str());
                    c.arg(flag).arg(v);
                }
                match &p.lineage {
                    Some(l) => c.arg("--lineage-dir").arg(l),
                    None => c.arg("--no-lineage"),
                };
                c.arg(if mode == Mode::Resume { "--resume" } else { "--rerun" });
                c.arg("--").args(&p.command);
                c
            }
            How::Bare => {
                let mut c = Command::new(&p.command[0]);
                c.args(&p.command[1..]);
                c.env("UBUNYE_RUN_ID", uuid::Uuid::new_v4().to_string())
                    .env("UBUNYE_BATCH_KEY", &b.key)
                    .env("UBUNYE_TASK", &p.task)
                    .env("UBUNYE_USECASE_DIR", uc)
                    .envs(ubunye::exec::variables_env(&b.variables));
                for o in &p.outputs {
                    let _ = std::fs::create_dir_all(uc.join(&o.rel));
                    c.env(ubunye::exec::env_name("UBUNYE_OUT_", &o.name), uc.join(&o.rel));
                }
                c
            }
        }
    }

    fn takeover(&self, uc: &Path, key: &str) -> Command {
        let mut c = Command::new(&self.bin);
        c.env(ubunye::sys::sandbox::VAR, &self.sandbox).args(["leases", "takeover", key, "--yes", "-d"]).arg(uc);
        if let Some(l) = &self.plan.lineage {
            c.arg("--lineage-dir").arg(l);
        }
        c
    }
}

fn scan_opts(plan: &Plan, uc: &Path) -> ScanOptions {
    ScanOptions { lineage_dir: plan.lineage.as_ref().map(|l| uc.join(l)), ..ScanOptions::default() }
}

/// One clean run of every batch; `Err` names the first that failed.
fn pass(
    r: &Runner<'_>,
    uc: &Path,
    mode: Mode,
    stop: &Stop,
    escaped: &mut Vec<String>,
) -> Result<Result<Duration, String>, Interrupted> {
    let mut took = Duration::ZERO;
    for b in &r.plan.batches {
        let e = procs::run(r.exec(uc, b, mode), None, stop)?;
        escaped.extend(e.escaped.iter().cloned());
        took += e.took;
        if !e.status.success() {
            let how = e.status.code().map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited {c}"));
            let said: Vec<&str> = e.stderr.lines().rev().take(2).collect::<Vec<_>>().into_iter().rev().collect();
            let said = if said.is_empty() { "(said nothing)".to_string() } else { said.join(" / ") };
            return Ok(Err(format!("batch {} {how}: {said}", b.label)));
        }
    }
    Ok(Ok(took))
}

/// A small, seedable generator (splitmix64): the same seed, the same rounds.
pub struct Rng(u64);

impl Rng {
    /// From a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    /// A moment uniform in `0..d`.
    pub fn within(&mut self, d: Duration) -> Duration {
        Duration::from_micros(self.below(d.as_micros().max(1) as u64))
    }
}

/// Where the run is, for the progress bar.
pub trait Progress {
    /// A new phase.
    fn phase(&self, what: &str);
    /// One kill round done.
    fn round(&self);
}

/// What a killtest is asked to do.
pub struct Ask<'a> {
    /// Kill rounds.
    pub kills: usize,
    /// The seed.
    pub seed: u64,
    /// `--compare CMD`.
    pub compare: Option<&'a str>,
}

/// Keys of the batches of `uc` with a lease or orphan left for a takeover.
fn leases_left(plan: &Plan, uc: &Path, sys: &ubunye::Sys) -> (Vec<String>, bool) {
    let Ok(scan) = ubunye::state::scan(uc, &scan_opts(plan, uc), sys) else { return (Vec::new(), false) };
    let ours = |k: &str| plan.batches.iter().any(|b| b.key == k);
    let left = scan
        .batches
        .iter()
        .filter(|b| {
            ours(&b.key)
                && matches!(b.state, State::Dead | State::Orphan | State::Pending | State::HandedBack | State::Kept)
        })
        .map(|b| b.key.clone())
        .collect();
    let all_finished =
        plan.batches.iter().all(|p| scan.batches.iter().any(|b| b.key == p.key && b.state == State::Finished));
    (left, all_finished)
}

fn compare_cmd(cmd: &str, plan: &Plan, sb: &Sandbox, stop: &Stop) -> Result<Result<(), String>, Interrupted> {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).env("UBUNYE_REFERENCE", &sb.reference).env("UBUNYE_RESULT", &sb.killed);
    for o in &plan.outputs {
        c.env(ubunye::exec::env_name("UBUNYE_REF_OUT_", &o.name), sb.reference.join(&o.rel));
        c.env(ubunye::exec::env_name("UBUNYE_OUT_", &o.name), sb.killed.join(&o.rel));
    }
    let e = procs::run(c, None, stop)?;
    Ok(if e.status.success() {
        Ok(())
    } else {
        let code = e.status.code().map_or("a signal".to_string(), |c| c.to_string());
        Err(format!("--compare exited {code}: {}", e.stderr.lines().last().unwrap_or("(said nothing)")))
    })
}

fn row(
    check: &str,
    r: &Runner<'_>,
    sb: &Sandbox,
    reference: &std::collections::BTreeMap<String, killtest::Contents>,
    kills: usize,
    ask: &Ask<'_>,
    stop: &Stop,
) -> Result<Result<Row, String>, Interrupted> {
    let plan = r.plan;
    let uc = &sb.killed;
    let got = match killtest::read_outputs(uc, &plan.outputs) {
        Ok(g) => g,
        Err(e) => return Ok(Err(format!("the outputs of {} cannot be read: {e}", uc.display()))),
    };
    let sys = crate::console::machine::sys();
    let keys: Vec<(String, String)> = match r.how {
        How::Exec => plan.batches.iter().map(|b| (plan.task.clone(), b.key.clone())).collect(),
        How::Bare => Vec::new(),
    };
    let lineage = plan.lineage.as_ref().map(|l| uc.join(l));
    let debris = match killtest::debris(uc, &plan.outputs, lineage, &keys, &sys) {
        Ok(d) => d,
        Err(e) => return Ok(Err(format!("the sandbox {} cannot be scanned: {e}", uc.display()))),
    };
    let redone = match (r.how, &plan.lineage) {
        (How::Bare, _) => Some(kills),
        (How::Exec, None) => None,
        (How::Exec, Some(_)) => ubunye::state::scan(uc, &scan_opts(plan, uc), &sys).ok().map(|s| {
            s.batches
                .iter()
                .filter(|b| keys.iter().any(|(_, k)| *k == b.key))
                .flat_map(|b| &b.records)
                .filter(|rec| rec.status.as_deref() != Some("success"))
                .count()
        }),
    };
    let compare = match ask.compare {
        Some(cmd) => Some(compare_cmd(cmd, plan, sb, stop)?),
        None => None,
    };
    Ok(Ok(Row { check: check.into(), outputs: killtest::compare_outputs(reference, &got), redone, debris, compare }))
}

fn listing(root: &Path, plan: &Plan) -> Result<Listing, String> {
    let lineage = plan.lineage.clone();
    let skip = move |rel: &str, _: bool| rel == ".ubunye" || lineage.as_ref().is_some_and(|l| Path::new(rel) == l);
    Listing::take(root, &skip, 1_000_000).map_err(|e| e.to_string())
}

/// The real outputs' listings: what must not change.
fn real_listings(plan: &Plan) -> Vec<(PathBuf, Option<Listing>)> {
    plan.outputs
        .iter()
        .map(|o| (o.rel.clone(), Listing::take(&plan.real_uc.join(&o.rel), &|_, _| false, 200_000).ok()))
        .collect()
}

/// Run the whole killtest. `Err(Ok(why))`: it could not start (exit 2);
/// `Err(Err(Interrupted))`: stopped by the user.
pub fn run(
    r: &Runner<'_>,
    sb: &Sandbox,
    ask: &Ask<'_>,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<Outcome, Result<String, Interrupted>> {
    let plan = r.plan;
    let mut out = Outcome::default();
    let real_before = real_listings(plan);
    // The reference: every batch once, uninterrupted.
    progress.phase("the reference run");
    let before = listing(&sb.reference, plan).map_err(Ok)?;
    let took = pass(r, &sb.reference, Mode::Resume, stop, &mut out.escaped).map_err(Err)?.map_err(|why| {
        Ok(format!("the reference run failed: {why}; a job must succeed uninterrupted before a kill test means anything (the sandbox is {})", sb.root.display()))
    })?;
    out.reference_secs = took.as_secs_f64();
    let after = listing(&sb.reference, plan).map_err(Ok)?;
    let sys = crate::console::machine::sys();
    out.outside = match r.how {
        How::Exec => {
            let lineage = plan.lineage.as_ref().map(|l| sb.reference.join(l));
            let claimed = killtest::claimed_files(&sb.reference, lineage, &sys).map_err(Ok)?;
            killtest::outside(&before, &after, &plan.outputs, plan.lineage.as_deref(), &claimed)
        }
        How::Bare => before
            .changed(&after)
            .into_iter()
            .filter(|p| !plan.outputs.iter().any(|o| Path::new(p).starts_with(&o.rel)))
            .collect(),
    };
    out.outside_in = out
        .outside
        .iter()
        .filter_map(|p| {
            plan.outputs.iter().find(|o| Path::new(p).starts_with(&o.rel)).map(|o| (p.clone(), o.name.clone()))
        })
        .collect();
    let reference = killtest::read_outputs(&sb.reference, &plan.outputs)
        .map_err(|e| Ok(format!("the reference run's outputs cannot be read: {e}")))?;
    // Empty but for exec's own `_SUCCESS` marker.
    out.empty_outputs =
        reference.iter().filter(|(_, c)| c.files.keys().all(|p| p == "_SUCCESS")).map(|(n, _)| n.clone()).collect();
    // The kill rounds.
    let mut rng = Rng::new(ask.seed);
    let budget = took.max(Duration::from_millis(1));
    for round in 1..=ask.kills {
        progress.phase(&format!("kill round {round} of {}", ask.kills));
        out.rounds += 1;
        let (left, all_finished) = match r.how {
            How::Exec => leases_left(plan, &sb.killed, &sys),
            How::Bare => (Vec::new(), false),
        };
        if !left.is_empty() && rng.below(3) == 0 {
            let key = &left[rng.below(left.len() as u64) as usize];
            let kill_at = (rng.below(2) == 0).then(|| rng.within(Duration::from_millis(60)));
            let e = procs::run(r.takeover(&sb.killed, key), kill_at, stop).map_err(Err)?;
            out.escaped.extend(e.escaped.iter().cloned());
            out.takeovers += 1;
            if e.killed {
                out.takeover_kills += 1;
            } else if !matches!(e.status.code(), Some(0 | 1)) {
                out.errors.push(format!("round {round}: leases takeover {key} ended with {}: {}", e.status, e.stderr));
            }
            progress.round();
            continue;
        }
        let mode = if all_finished { Mode::Rerun } else { Mode::Resume };
        if mode == Mode::Rerun {
            out.rerun_rounds += 1;
        }
        let at = rng.within(budget);
        let mut spent = Duration::ZERO;
        for b in &plan.batches {
            let Some(left) = at.checked_sub(spent) else { break };
            let e = procs::run(r.exec(&sb.killed, b, mode), Some(left), stop).map_err(Err)?;
            out.escaped.extend(e.escaped.iter().cloned());
            spent += e.took;
            if e.killed {
                out.kills += 1;
                break;
            }
            if !e.status.success() {
                out.errors.push(format!(
                    "round {round}: batch {} ended with {}: {}",
                    b.label,
                    e.status,
                    e.stderr.lines().last().unwrap_or("")
                ));
            }
        }
        progress.round();
    }
    // One clean pass, then a rerun of every batch.
    let checks = match r.how {
        How::Exec => {
            [("kills, then one clean --resume pass", Mode::Resume), ("then a --rerun of every batch", Mode::Rerun)]
        }
        How::Bare => [("kills, then one clean run", Mode::Resume), ("then one more run of every batch", Mode::Rerun)],
    };
    for (check, mode) in checks {
        progress.phase(check);
        if let Err(why) = pass(r, &sb.killed, mode, stop, &mut out.escaped).map_err(Err)? {
            out.errors.push(format!("{check}: {why}"));
        }
        match row(check, r, sb, &reference, out.kills, ask, stop).map_err(Err)? {
            // Runs begun again are the kill rounds' figure: the first row's.
            Ok(row) if !out.rows.is_empty() => out.rows.push(Row { redone: None, ..row }),
            Ok(row) => out.rows.push(row),
            Err(why) => out.errors.push(why),
        }
    }
    for (rel, before) in real_before {
        let Some(before) = before else { continue };
        if let Ok(after) = Listing::take(&plan.real_uc.join(&rel), &|_, _| false, 200_000) {
            out.real_changed.extend(before.changed(&after).into_iter().map(|p| rel.join(p).display().to_string()));
        }
    }
    Ok(out)
}
