//! The demo's child processes (this binary again: `ubunye exec`, `ubunye
//! leases takeover`, or an actor). None may outlive the demo: each is started
//! with `PR_SET_PDEATHSIG` (SIGTERM: `ubunye exec` then stops its command and
//! cleans up), and the live ones are stopped when the demo ends.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Set on every child (and so inherited by their commands), naming the
/// sandbox: how a test finds them.
pub const TAG: &str = "UBUNYE_DEMO_SANDBOX";

/// A child of this binary in the sandbox, with its output captured.
pub fn command(exe: &Path, sandbox: &Path) -> Command {
    let mut c = Command::new(exe);
    c.env(TAG, sandbox)
        .env_remove("UBUNYE_RUN_LEASE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    ubunye::sys::die_with_parent(&mut c, rustix::process::Signal::TERM);
    c
}

/// Run a child to its end: its exit code and what it said on stderr.
pub fn run(mut c: Command) -> Result<(i32, String), String> {
    let out = c.output().map_err(|e| format!("cannot start {:?}: {e}", c.get_program()))?;
    Ok((out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).trim().to_string()))
}

/// The children that keep running (the live runs), stopped on drop.
#[derive(Default)]
pub struct Live {
    children: Vec<(String, Child)>,
}

impl Live {
    /// Start a child that keeps running; its output goes nowhere.
    pub fn spawn(&mut self, what: &str, mut c: Command) -> Result<u32, String> {
        c.stdout(Stdio::null()).stderr(Stdio::null());
        let child = c.spawn().map_err(|e| format!("cannot start {what}: {e}"))?;
        let pid = child.id();
        self.children.push((what.to_string(), child));
        Ok(pid)
    }

    /// The first child that has ended already, if one has.
    pub fn ended(&mut self) -> Option<String> {
        self.children.iter_mut().find_map(|(what, c)| c.try_wait().ok().flatten().map(|_| what.clone()))
    }

    /// Stop every child: SIGTERM (`ubunye exec` passes it on to its command,
    /// takes back what it wrote and marks its record), then SIGKILL after 5 s.
    pub fn stop(&mut self) {
        for (_, c) in &self.children {
            if let Some(pid) = rustix::process::Pid::from_raw(c.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
        let until = Instant::now() + Duration::from_secs(5);
        for (_, c) in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() >= until => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        self.children.clear();
    }

    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop();
    }
}
