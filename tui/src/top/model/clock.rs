//! The disk's "now" for the dashboard, read without writing, at most every
//! 15 s per disk: between reads, its distance from this machine's clock is
//! assumed to hold. A task's lease folder may be on another disk than the
//! use case's (a symlink onto a file server), so each disk has its own.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use ubunye::sys::{Now, Sys};

/// How often the disk's clock is read again.
const READ_EVERY: Duration = Duration::from_secs(15);

/// One disk's clock as last read.
#[derive(Clone, Copy, Debug)]
struct Reading {
    /// Disk clock minus this machine's clock, in nanoseconds.
    offset: i128,
    source: ubunye::sys::ClockSource,
    at: Instant,
}

/// The clocks of the disks the use case's folders are on, by device.
#[derive(Debug, Default)]
pub struct Clocks {
    by_disk: HashMap<u64, Reading>,
}

impl Clocks {
    /// The disk's now for the folder `dir` (read again when due).
    pub fn now(&mut self, sys: &Sys, dir: &Path) -> Now {
        let local = sys.clock.now();
        let dev = std::fs::metadata(dir).map(|m| m.dev()).unwrap_or(u64::MAX);
        match self.by_disk.get(&dev) {
            Some(r) if r.at.elapsed() < READ_EVERY => Now { time: shift(local, r.offset), source: r.source },
            _ => {
                let disk = sys.clock.disk_now_looking(dir);
                self.by_disk.insert(
                    dev,
                    Reading { offset: nanos_between(local, disk.time), source: disk.source, at: Instant::now() },
                );
                disk
            }
        }
    }
}

fn nanos_between(from: SystemTime, to: SystemTime) -> i128 {
    match to.duration_since(from) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

fn shift(t: SystemTime, nanos: i128) -> SystemTime {
    let d = Duration::from_nanos(nanos.unsigned_abs().min(u64::MAX as u128) as u64);
    if nanos >= 0 { t.checked_add(d).unwrap_or(t) } else { t.checked_sub(d).unwrap_or(t) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_trip() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let later = t + Duration::from_millis(1500);
        assert_eq!(shift(t, nanos_between(t, later)), later);
        assert_eq!(shift(later, nanos_between(later, t)), t);
    }
}
