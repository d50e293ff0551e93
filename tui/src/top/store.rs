//! `ubunye top -d s3://bucket/prefix`: a use case in an object store as the
//! dashboard's source. The dashboard is the folder's ([`super::app`]); only
//! its reads and repairs differ. A store sends no events, so the batches
//! are read by the library's [`Poller`] (one listing, one HEAD of the
//! bucket for its clock, a GET only of what changed) every `--interval`,
//! and judged by the store's clock at each look, never by this machine's
//! between looks. A batch is read again, explained and doctored by the
//! library's store functions; a repair is `ubunye leases takeover` (or
//! `finish`) in a process of its own. Looking writes nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ubunye::bucket::{Holder, Objects, S3, StoreUrl};
use ubunye::explain::Explanation;
use ubunye::explain::store::Found;
use ubunye::repair::RepairPlan;
use ubunye::state::store::Poller;
use ubunye::state::{Batch, State};
use ubunye::sys::{ClockSource, Now, Sys};

use crate::console::exit;

/// A use case in a store, and the poller that remembers what it read.
#[derive(Clone)]
pub struct Store {
    pub url: StoreUrl,
    pub objects: Arc<dyn Objects>,
    poller: Arc<Mutex<Poller>>,
    /// Repairs run as `ubunye leases takeover` in a process of their own
    /// (the dashboard); false: in this process (tests, where this process
    /// is no `ubunye`).
    pub apart: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("url", &self.url.to_string()).field("apart", &self.apart).finish()
    }
}

/// The store at `dir` opened and asked its time (the bucket is there and the
/// credentials are taken) and whether a run has used the use case, or the
/// exit code and the line that says why not.
pub fn open(dir: &str, interval: Duration) -> Result<Store, (i32, String)> {
    let url = StoreUrl::parse(dir).map_err(|e| (exit::USAGE, format!("-d {dir}: {e}")))?;
    if interval < Duration::from_millis(100) {
        let every = humantime::format_duration(interval);
        return Err((
            exit::USAGE,
            format!("--interval {every} would read the store without pause: give at least 100ms"),
        ));
    }
    let objects: Arc<dyn Objects> = Arc::new(S3::from_env(&url.bucket).map_err(|e| (exit::REFUSED, e.to_string()))?);
    objects.now().map_err(|e| (exit::REFUSED, e.to_string()))?;
    // A prefix no run has used is refused as a folder with no .ubunye/ is.
    ubunye::state::store::used(&*objects, &url).map_err(|e| (exit::USAGE, e.to_string()))?;
    Ok(Store::new(url, objects, true))
}

impl Store {
    pub fn new(url: StoreUrl, objects: Arc<dyn Objects>, apart: bool) -> Store {
        Store { url, objects, poller: Arc::new(Mutex::new(Poller::new())), apart }
    }

    /// Every batch, as `leases list` judges them, and the store's time.
    pub fn look(&self, sys: &Sys) -> Result<(Now, Vec<Batch>), String> {
        let mut poller = self.poller.lock().unwrap_or_else(|e| e.into_inner());
        let (time, batches) = poller.batches(&*self.objects, &self.url, &sys.timing).map_err(|e| e.to_string())?;
        Ok((Now { time, source: ClockSource::Store }, batches))
    }

    /// Batch `task` `key` read again, its row and as the state model holds
    /// it; None when it is gone.
    fn find(
        &self,
        task: &str,
        key: &str,
        sys: &Sys,
    ) -> Result<Option<(ubunye::state::store::StoreBatch, Batch)>, String> {
        let (_, found) = ubunye::explain::store::find(&*self.objects, &self.url, key, Some(task), &sys.timing)
            .map_err(|e| e.to_string())?;
        match found {
            Found::One(row, b) if b.key == key => Ok(Some((row, *b))),
            Found::One(..) | Found::None(_) => Ok(None),
            Found::Several(_) => Err(format!("{task} {key}: more than one batch has that key")),
        }
    }

    /// Batch `task` `key` read again as a look reads it (empty when it is
    /// gone: the model lets it go).
    pub fn fresh(&self, task: &str, key: &str, sys: &Sys) -> Result<Batch, String> {
        Ok(match self.find(task, key, sys)? {
            Some((row, mut b)) => {
                // A look words a damaged lease's note as its row does.
                if b.state == State::Damaged {
                    b.note = row.note;
                }
                b
            }
            None => Batch::new(task, key),
        })
    }

    /// The batch read again and explained: the disk's report, by the
    /// store's clock.
    pub fn explain(&self, task: &str, key: &str, sys: &Sys) -> Result<Explanation, String> {
        let Some((row, read)) = self.find(task, key, sys)? else {
            return Err(format!("{task} {key} is no longer in the store"));
        };
        ubunye::explain::store::explain(&*self.objects, &self.url, &row, &read, &sys.timing).map_err(|e| e.to_string())
    }

    /// Doctor's look, as `ubunye doctor -d s3://...` takes it.
    pub fn doctor(&self, sys: &Sys) -> Result<ubunye::doctor::Look, String> {
        ubunye::doctor::store::look(&*self.objects, &self.url, &sys.timing).map_err(|e| e.to_string())
    }

    /// The repair planned, the engine checking again as it acts: what it
    /// said, or why it refused.
    pub fn repair(&self, plan: &RepairPlan, sys: &Sys) -> Result<String, String> {
        let (ok, text) = if self.apart { self.repair_apart(plan) } else { self.repair_here(plan, sys) };
        if ok { Ok(text) } else { Err(text) }
    }

    /// `ubunye leases takeover --yes` (or `finish`) of one batch, in a
    /// process of its own (its own process group, no terminal): quitting the
    /// dashboard, Ctrl-C or the terminal closing while it runs leave it to
    /// finish, so that no half-done takeover leaves a lease no process
    /// holds; and it audits as the CLI does. Its output is the outcome shown.
    fn repair_apart(&self, plan: &RepairPlan) -> (bool, String) {
        use std::os::unix::process::CommandExt;
        let exe = match std::env::current_exe() {
            Ok(e) => e,
            Err(e) => return (false, format!("cannot start the repair: {e}; nothing was done")),
        };
        let dir = self.url.to_string();
        let out = std::process::Command::new(exe)
            .args(plan.kind.command().split(' ').skip(1))
            .args(["--yes", "-d", &dir, "--task", &plan.task, &plan.key])
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .process_group(0)
            .output();
        match out {
            Ok(o) => {
                let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&o.stderr));
                let text = text.lines().map(|l| l.strip_prefix("ubunye: ").unwrap_or(l)).collect::<Vec<_>>();
                (o.status.success(), text.join("\n"))
            }
            Err(e) => (false, format!("cannot start the repair: {e}; nothing was done")),
        }
    }

    /// The repair as the CLI makes it, in this process (no audit): the
    /// batch read again, then the engine's takeover.
    fn repair_here(&self, plan: &RepairPlan, sys: &Sys) -> (bool, String) {
        let holder = Holder::repair(plan.kind, sys);
        let ended = ubunye::repair::store::execute(
            self.objects.clone(),
            &self.url,
            plan,
            &holder,
            sys.clock.clone(),
            &sys.timing,
        );
        crate::report::store::outcome_text(&self.url, plan, ended)
    }
}
