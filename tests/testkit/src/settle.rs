//! A run that only looked dead: it writes its lease again while a takeover
//! holds the renamed lease through its settle.

use std::fs;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A thread that watches the lease folder `dir` for up to `watch_for`; once a
/// takeover has renamed the lease to `<key>.dead-<hex>.json`, it waits
/// `after`, then puts `text` back at `lease` in one rename, as a live run's
/// save does. It returns whether it saw the rename.
pub fn write_back_when_renamed(
    dir: PathBuf,
    lease: PathBuf,
    text: String,
    after: Duration,
    watch_for: Duration,
) -> JoinHandle<bool> {
    std::thread::spawn(move || {
        let until = Instant::now() + watch_for;
        while Instant::now() < until {
            let renamed =
                fs::read_dir(&dir).unwrap().flatten().any(|e| e.file_name().to_string_lossy().contains(".dead-"));
            if renamed {
                std::thread::sleep(after);
                let tmp = dir.join("zz.tmp");
                fs::write(&tmp, &text).unwrap();
                fs::rename(&tmp, &lease).unwrap();
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    })
}
