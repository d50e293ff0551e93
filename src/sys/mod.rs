//! What the engine asks of the machine: the time, the process table and this
//! host's name. Each is behind a small trait so that states which depend on time
//! and pids can be tested without sleeping or spawning. The disk's clock, read
//! without writing for inspection, is `diskclock.rs`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

mod diskclock;
mod env;
pub mod sandbox;

pub(crate) use diskclock::local_file_system;
pub use env::{EXEC_LOG_MAX, Knobs};

/// Where a reading of "now" came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockSource {
    /// The disk's own time: the mtime of a probe file just created on the
    /// lease folder's disk (a run), or of an unnamed `O_TMPFILE` file there
    /// (inspection, on a network file system that offers it).
    Disk,
    /// This machine's clock, because the use case is on a local file system,
    /// whose file times this machine's kernel stamps: the disk's clock itself.
    LocalFileSystem,
    /// This machine's clock, because the disk's could not be read (a network
    /// file system, looked at without writing; or a probe that failed).
    Local,
    /// An object store's clock (the `Date` of its answer), which stamps its
    /// objects' `Last-Modified`.
    Store,
}

impl ClockSource {
    /// Whether this is the clock that stamps the lease files' times (the only
    /// one an age can be measured against without guessing the skew).
    pub fn is_disks(self) -> bool {
        matches!(self, ClockSource::Disk | ClockSource::LocalFileSystem | ClockSource::Store)
    }
}

/// "Now" as some clock tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// The time.
    pub time: SystemTime,
    /// Which clock told it.
    pub source: ClockSource,
}

/// The clocks the engine reads.
pub trait Clock: Send + Sync {
    /// This process's wall clock (what goes into `started_at`, `heartbeat`, notes).
    fn now(&self) -> SystemTime;
    /// The time by the disk that holds `dir`, so that no two hosts' clocks are
    /// compared: the mtime of a `.clock-<8hex>` probe created there and removed at
    /// once. Falls back to [`Clock::now`] when the probe cannot be written.
    /// For runs and repairs only: inspection uses [`Clock::disk_now_looking`].
    fn disk_now(&self, dir: &Path) -> Now;
    /// The time by the disk that holds `dir`, read without writing anything
    /// in it (`diskclock.rs`): what `leases list`, `explain`, `doctor`,
    /// dry runs and `top` use, since looking never changes a use case.
    fn disk_now_looking(&self, dir: &Path) -> Now;
}

/// What `kill(pid, 0)` says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PidProbe {
    /// A process has that pid.
    Exists,
    /// No process has that pid.
    Gone,
    /// A process has that pid but belongs to someone else: it counts as existing.
    Denied,
}

/// The process table of this host.
pub trait ProcessTable: Send + Sync {
    /// Whether a process has this pid (never signals it).
    fn probe(&self, pid: i32) -> PidProbe;
    /// The process's start token: field 22 of `/proc/<pid>/stat` (start time in
    /// clock ticks since boot) as a decimal string, or None when it cannot be read.
    fn start_token(&self, pid: i32) -> Option<String>;
    /// The process state letter from `/proc/<pid>/stat` (R, S, D, T, t, Z, ...).
    fn state(&self, pid: i32) -> Option<char>;
}

/// The waits and limits of the protocol. [`Timing::peer`] holds ubunye-engine
/// 0.8.0's values; tests shorten the waits, never the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// A lease untouched for longer than this (strictly) belongs to a dead run,
    /// when its process cannot be checked: 900 s.
    pub heartbeat_timeout: Duration,
    /// How often a live run rewrites its lease: 30 s.
    pub heartbeat_every: Duration,
    /// How long a takeover holds the lease before taking anything back: 3 s.
    pub settle: Duration,
    /// How long a lease file operation retries "permission denied": 2 s.
    pub busy_for: Duration,
    /// A live holder whose lease is older than this has missed three beats: 90 s.
    pub stalled_after: Duration,
    /// Takeover tombstones older than this are removed by the next acquire: 7 days.
    pub tombstone_expiry: Duration,
    /// An mtime further than this ahead of the disk clock is not trusted (see
    /// `liveness`): 60 s.
    pub future_tolerance: Duration,
    /// How long what `ubunye exec`'s command left running gets between
    /// SIGTERM and SIGKILL: 2 s (`UBUNYE_EXEC_GRACE`).
    pub exec_grace: Duration,
    /// How long SIGKILL is sent to what is still below `ubunye exec` before it
    /// gives up (and the run does not land): 10 s.
    pub kill_for: Duration,
    /// The lifetime a run against a store writes in its lease (`ttl_s`):
    /// 120 s (`ubunye exec --lease-ttl`). A store has no peer to agree with,
    /// and its conditional writes fence a run that outlives its lease; on a
    /// disk the peer's `heartbeat_timeout` binds both engines.
    pub store_ttl: Duration,
    /// How long a run against a store whose request failed mid-landing reads
    /// its lease again, waiting for the store to answer, before it says what
    /// may be left visible: 60 s.
    pub store_outage: Duration,
}

impl Timing {
    /// ubunye-engine 0.8.0's values.
    pub const fn peer() -> Timing {
        Timing {
            heartbeat_timeout: Duration::from_secs(900),
            heartbeat_every: Duration::from_secs(30),
            settle: Duration::from_secs(3),
            busy_for: Duration::from_secs(2),
            stalled_after: Duration::from_secs(90),
            tombstone_expiry: Duration::from_secs(7 * 24 * 3600),
            future_tolerance: Duration::from_secs(60),
            exec_grace: Duration::from_secs(2),
            kill_for: Duration::from_secs(10),
            store_ttl: Duration::from_secs(120),
            store_outage: Duration::from_secs(60),
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::peer()
    }
}

/// A point in the protocol where a test may stop the process (the kill tests
/// SIGKILL the engine at each one). Production runs have no hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// A lease's content is in its temp file, not yet linked to the lease name.
    LeaseTempWritten,
    /// This run's lease was created.
    Created,
    /// A dead run's lease was renamed to `.dead-<8hex>.json`.
    DeadRenamed,
    /// During a takeover, this run's lease was created beside the dead one.
    TakeoverCreated,
    /// The settle wait is over.
    Settled,
    /// The takeover mark (tombstone) was written.
    Tombstoned,
    /// One claimed (or replaced) file was removed.
    FileRemoved,
    /// A dead run's record was marked interrupted.
    RecordMarked,
    /// A dead run (or orphan) was recovered; its `.dead-` file not yet removed.
    Recovered,
    /// The lease was saved (every save: writing, claims, staging, commit...).
    Saved,
    /// One claimed file was moved into its output (reported by the writer).
    Moved,
    /// `ubunye exec` without an exchange: an overwrite's old output was renamed
    /// aside (`<staging>.old`), the new one not yet renamed in.
    MovedAside,
    /// `ubunye exec` published one overwrite output (its old copy kept until commit).
    Swapped,
    /// The done mark was written.
    DoneMarked,
    /// `committed: true` was saved.
    CommittedSaved,
    /// The finished note was written.
    Noted,
    /// Outputs were cleared after the note; replaced files not yet removed.
    OutputsCleared,
    /// The lease was removed (release).
    Released,
    /// In a store: every key to land was saved in the lease; no upload started yet.
    KeysClaimed,
    /// In a store: every upload was started and saved in the lease; no part sent yet.
    UploadsClaimed,
    /// In a store: every part was sent; no upload completed yet.
    PartsSent,
    /// In a store: every upload was completed; the lease not yet marked done.
    Completed,
}

/// The test hook: called at each [`Step`].
#[derive(Clone, Default)]
pub struct Hook(pub Option<Arc<dyn Fn(Step) + Send + Sync>>);

impl Hook {
    /// Call the hook at `step` (nothing happens without one).
    pub fn at(&self, step: Step) {
        if let Some(f) = &self.0 {
            f(step)
        }
    }
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Hook(set)" } else { "Hook(none)" })
    }
}

/// Everything the engine needs from its surroundings, shared by a lease and its
/// heartbeat thread.
#[derive(Clone)]
pub struct Sys {
    /// The wall clock, and the disk's.
    pub clock: Arc<dyn Clock>,
    /// This host's process table.
    pub procs: Arc<dyn ProcessTable>,
    /// This host as a pid means anything: `hostname|<pid namespace link>`.
    pub host: String,
    /// This process's pid.
    pub pid: i32,
    /// The protocol's waits and limits: the peer's, unless a test shortened them.
    pub timing: Timing,
    /// The switches read from the environment where the program started.
    pub knobs: Knobs,
    /// Test hook (kill points); none in production.
    pub hook: Hook,
}

impl std::fmt::Debug for Sys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sys")
            .field("host", &self.host)
            .field("pid", &self.pid)
            .field("timing", &self.timing)
            .field("knobs", &self.knobs)
            .finish_non_exhaustive()
    }
}

impl Sys {
    /// The real machine, with the settings of this process's environment
    /// (`env.rs`), read here once: call it where the program starts and pass
    /// the `Sys` down. Test settings count only in a build with debug
    /// assertions; those honoured are in `knobs.test_settings`.
    pub fn from_env() -> Sys {
        let e = env::read(|name| std::env::var_os(name), cfg!(debug_assertions));
        let hook = match e.knobs.stop_at.clone() {
            None => Hook::default(),
            Some(at) => Hook(Some(Arc::new(move |step: Step| {
                if serde_json::to_value(step).ok().and_then(|v| v.as_str().map(|s| s == at)) == Some(true) {
                    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::STOP);
                }
            }))),
        };
        Sys {
            clock: Arc::new(SystemClock),
            procs: Arc::new(ProcFs),
            // Tests pin the host so that verdicts do not depend on the machine.
            host: e.host.unwrap_or_else(host_string),
            pid: std::process::id() as i32,
            timing: e.timing,
            knobs: e.knobs,
            hook,
        }
    }

    /// This process's own start token.
    pub fn own_start_token(&self) -> Option<String> {
        self.procs.start_token(self.pid)
    }
}

/// `<hostname>|<readlink /proc/self/ns/pid>`, e.g. `vm|pid:[4026531836]`, as the
/// peer builds it; the bare hostname when the link cannot be read. Containers that
/// share a hostname but not a pid namespace are different hosts.
pub fn host_string() -> String {
    let uname = rustix::system::uname();
    let name = uname.nodename().to_string_lossy().into_owned();
    match std::fs::read_link("/proc/self/ns/pid") {
        Ok(link) => format!("{name}|{}", link.to_string_lossy()),
        Err(_) => name,
    }
}

/// The wall clock, and the probe file for the disk's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn disk_now(&self, dir: &Path) -> Now {
        let probe = dir.join(format!(".clock-{}", crate::fsx::hex8()));
        let read = std::fs::File::create(&probe).and_then(|f| f.metadata()?.modified());
        let _ = std::fs::remove_file(&probe);
        match read {
            Ok(time) => Now { time, source: ClockSource::Disk },
            Err(_) => Now { time: SystemTime::now(), source: ClockSource::Local },
        }
    }

    fn disk_now_looking(&self, dir: &Path) -> Now {
        diskclock::looking_now(dir)
    }
}

/// The Linux process table, read through `kill(pid, 0)` and `/proc`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcFs;

impl ProcessTable for ProcFs {
    fn probe(&self, pid: i32) -> PidProbe {
        if pid <= 0 {
            return PidProbe::Gone;
        }
        let Some(pid) = rustix::process::Pid::from_raw(pid) else {
            return PidProbe::Gone;
        };
        match rustix::process::test_kill_process(pid) {
            Ok(()) => PidProbe::Exists,
            Err(e) if e == rustix::io::Errno::SRCH => PidProbe::Gone,
            Err(_) => PidProbe::Denied,
        }
    }

    fn start_token(&self, pid: i32) -> Option<String> {
        stat_fields(pid).and_then(|f| f.get(19).map(|s| s.to_string()))
    }

    fn state(&self, pid: i32) -> Option<char> {
        stat_fields(pid).and_then(|f| f.first().and_then(|s| s.chars().next()))
    }
}

/// The fields of `/proc/<pid>/stat` after the command name (field 3 onwards).
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    if pid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// This process's session id. 0 when the session's leader lives outside our
/// pid namespace (a container started from a shell, as CI runners are): the
/// kernel cannot name it here. rustix's `getsid` asserts a positive id, so the
/// plain call is made instead.
pub fn own_session() -> i32 {
    // SAFETY: getsid(0) reads this process's session id; it has no side effects.
    unsafe { libc::getsid(0) }
}

/// This process's process group id; 0 when the group's leader lives outside
/// our pid namespace (see [`own_session`]).
pub fn own_process_group() -> i32 {
    // SAFETY: getpgrp reads this process's group id; it has no side effects.
    unsafe { libc::getpgrp() }
}

/// Have `cmd`'s process sent `signal` when this process dies, and refuse to
/// start it if this process is already gone (the signal would then never come).
/// The parent is this process as it is now: call it on the thread that spawns,
/// since the kernel ties the signal to the spawning thread.
pub fn die_with_parent(cmd: &mut std::process::Command, signal: rustix::process::Signal) {
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec the closure makes only async-signal-safe
    // calls (prctl, getppid) and allocates nothing: its errors are bare OS error
    // codes, which `io::Error` holds without a heap allocation. Other threads
    // (the heartbeat) may hold the allocator's lock in the forked child.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(signal))
                .map_err(|e| std::io::Error::from_raw_os_error(e.raw_os_error()))?;
            if rustix::process::getppid() != Some(parent) {
                // The parent died before the line above took effect.
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_seen_with_a_start_token() {
        let procs = ProcFs;
        let me = std::process::id() as i32;
        assert_eq!(procs.probe(me), PidProbe::Exists);
        let token = procs.start_token(me).expect("own start token");
        assert!(token.chars().all(|c| c.is_ascii_digit()), "{token}");
        assert!(matches!(procs.state(me), Some('R' | 'S')));
    }

    #[test]
    fn impossible_pids_are_gone() {
        assert_eq!(ProcFs.probe(0), PidProbe::Gone);
        assert_eq!(ProcFs.probe(-5), PidProbe::Gone);
        assert_eq!(ProcFs.start_token(-5), None);
    }

    #[test]
    fn host_string_has_the_pid_namespace() {
        let h = host_string();
        assert!(h.contains("|pid:["), "{h}");
    }

    #[test]
    fn disk_clock_probe_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemClock.disk_now(dir.path());
        assert_eq!(now.source, ClockSource::Disk);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let missing = SystemClock.disk_now(&dir.path().join("nope"));
        assert_eq!(missing.source, ClockSource::Local);
    }

    #[test]
    fn the_peers_waits_are_the_defaults() {
        let t = Timing::default();
        assert_eq!(t.heartbeat_timeout, Duration::from_secs(900));
        assert_eq!(t.settle, Duration::from_secs(3));
    }
}
