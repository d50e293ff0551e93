//! A `Sys` made up for a test: a pinned host, a fake clock, a fake process
//! table and short waits.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ubunye::sys::{Hook, Sys, Timing};

use crate::fakes::{FakeClock, FakeProcs};

/// The host the peer's fixtures were captured on: judged from it, a fixture's
/// lease falls under the same-host pid rule.
pub const FIXTURE_HOST: &str = "vm|pid:[4026531836]";

/// Another host than the fixtures': from it, every lease is judged by its age.
pub const ELSEWHERE: &str = "elsewhere|pid:[1]";

/// The peer's rules with short waits: settle and busy retry 20 ms, and no
/// heartbeat within a test.
pub fn fast_timing() -> Timing {
    Timing {
        settle: Duration::from_millis(20),
        busy_for: Duration::from_millis(20),
        heartbeat_every: Duration::from_secs(3600),
        ..Timing::peer()
    }
}

/// A Sys on `host` at time `now`, with an empty process table (every recorded
/// pid is gone) and [`fast_timing`]. This process's real pid is kept.
pub fn fake_sys(host: &str, now: SystemTime) -> (Sys, Arc<FakeClock>, Arc<FakeProcs>) {
    let clock = FakeClock::at(now);
    let procs = FakeProcs::new();
    let sys = Sys {
        clock: clock.clone(),
        procs: procs.clone(),
        host: host.into(),
        pid: std::process::id() as i32,
        timing: fast_timing(),
        knobs: Default::default(),
        hook: Hook::default(),
    };
    (sys, clock, procs)
}
