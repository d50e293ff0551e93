//! A terminal for the dashboard's end-to-end tests: a private tmux server
//! (its own socket), keys sent, the pane read until it shows what a test
//! waits for (bounded: 15 s).

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    pub fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }
    /// Wait until the pane shows what `ok` wants; fail with the pane after 15 s.
    pub fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            let p = self.pane();
            if ok(&p) {
                return p;
            }
            if Instant::now() > until {
                panic!("timed out waiting for {what}; the pane:\n{p}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

pub fn tmux_present() -> bool {
    Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success())
}

/// tmux must be there; without it a test fails, unless UBUNYE_SKIP_TMUX=1,
/// when it says so and is skipped (false).
pub fn require_tmux(test: &str) -> bool {
    if tmux_present() {
        return true;
    }
    if std::env::var("UBUNYE_SKIP_TMUX").as_deref() == Ok("1") {
        eprintln!("{test}: tmux is not installed and UBUNYE_SKIP_TMUX=1: SKIPPED");
        return false;
    }
    panic!("{test}: tmux is not installed: this test needs it (.ci/run installs it), or set UBUNYE_SKIP_TMUX=1");
}
