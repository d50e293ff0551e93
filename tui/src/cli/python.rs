//! Living beside the Python engine, whose package installs a `ubunye` command
//! too (`ubunye run`, its own `doctor`, ...). Whichever comes first on PATH
//! answers; `ubunye run` asked of this one says where the other is.

use std::path::PathBuf;

use super::{exit, say_err};

/// Another `ubunye` on PATH than this program: the Python engine's, most
/// likely (a venv's `bin/ubunye`).
fn other_ubunye() -> Option<PathBuf> {
    let me = std::env::current_exe().ok().and_then(|p| std::fs::canonicalize(p).ok());
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("ubunye"))
        .filter(|p| ubunye::exec::child::resolve_command(p.as_os_str()).is_some())
        .find(|p| std::fs::canonicalize(p).ok() != me)
}

/// `ubunye run ...` (whatever follows): the Python engine's command, answered
/// in one line, exit 2.
pub fn run() -> i32 {
    let how = match other_ubunye() {
        Some(p) => format!("call the Python engine's own: {} run ... (found on PATH)", p.display()),
        None => "call the Python engine's own from its venv, <venv>/bin/ubunye run ..., or alias it: alias ubunye-py=<venv>/bin/ubunye".to_string(),
    };
    say_err(&format!(
        "`run` is the Python engine's command (ubunye-engine); this `ubunye` is ubunye-rs, which has no `run`: {how}"
    ));
    exit::USAGE
}
