//! The fake clock and process table: they stand in for the machine behind
//! `ubunye::sys`'s public `Clock` and `ProcessTable` traits, so that states
//! which depend on time and pids are tested without sleeping or spawning.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ubunye::sys::{Clock, ClockSource, Now, PidProbe, ProcessTable};

/// A clock that stands still until told to move; the disk clock reads the same.
#[derive(Debug)]
pub struct FakeClock {
    now: Mutex<SystemTime>,
}

impl FakeClock {
    pub fn at(time: SystemTime) -> Arc<FakeClock> {
        Arc::new(FakeClock { now: Mutex::new(time) })
    }
    pub fn set(&self, time: SystemTime) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) = time;
    }
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn disk_now(&self, _dir: &Path) -> Now {
        Now { time: self.now(), source: ClockSource::Disk }
    }
    fn disk_now_looking(&self, _dir: &Path) -> Now {
        Now { time: self.now(), source: ClockSource::Disk }
    }
}

/// A process table made up by a test: pid -> (start token, state letter).
#[derive(Debug, Default)]
pub struct FakeProcs {
    table: Mutex<HashMap<i32, FakeProc>>,
}

/// One made-up process.
#[derive(Clone, Debug)]
pub struct FakeProc {
    pub token: Option<String>,
    pub state: char,
    pub denied: bool,
}

impl FakeProcs {
    pub fn new() -> Arc<FakeProcs> {
        Arc::new(FakeProcs::default())
    }
    /// A running process with this start token (None: the token cannot be read).
    pub fn add(&self, pid: i32, token: Option<&str>) {
        self.put(pid, FakeProc { token: token.map(str::to_string), state: 'S', denied: false });
    }
    pub fn put(&self, pid: i32, p: FakeProc) {
        self.table.lock().unwrap_or_else(|e| e.into_inner()).insert(pid, p);
    }
    pub fn remove(&self, pid: i32) {
        self.table.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid);
    }
    fn get(&self, pid: i32) -> Option<FakeProc> {
        self.table.lock().unwrap_or_else(|e| e.into_inner()).get(&pid).cloned()
    }
}

impl ProcessTable for FakeProcs {
    fn probe(&self, pid: i32) -> PidProbe {
        match self.get(pid) {
            None => PidProbe::Gone,
            Some(p) if p.denied => PidProbe::Denied,
            Some(_) => PidProbe::Exists,
        }
    }
    fn start_token(&self, pid: i32) -> Option<String> {
        self.get(pid).and_then(|p| p.token)
    }
    fn state(&self, pid: i32) -> Option<char> {
        self.get(pid).map(|p| p.state)
    }
}
