//! The one place the front end reads the engine's settings from the
//! environment: [`sys`], called where a command starts.

use ubunye::sys::Sys;

/// The real machine with this process's settings (`ubunye::sys::Sys::from_env`).
/// Test settings (shortened waits, a pinned host identity, a forced slow path)
/// count only in a build with debug assertions: `cargo test`'s, or the
/// `knobs` profile the scripts build. A release binary ignores them.
pub fn sys() -> Sys {
    Sys::from_env()
}

/// [`sys`] for a command that writes the use case `uc`: inside a killtest
/// sandbox, a takeover's settle is short (`ubunye::sys::sandbox`).
pub fn sys_for(uc: &std::path::Path) -> Sys {
    let mut s = sys();
    let var = std::env::var_os(ubunye::sys::sandbox::VAR);
    if let Some(settle) = ubunye::sys::sandbox::settle_for(uc, var.as_deref()) {
        s.timing.settle = settle;
    }
    s
}
