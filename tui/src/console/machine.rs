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
