//! What every part of the front end does the same way: print a line (a
//! closed pipe is not an error), decide on colour, check the `-d` folder,
//! and the exit codes. It depends on nothing else in this crate.

pub mod colour;
pub mod fleet;
pub mod grid;
pub mod machine;
pub mod print;
pub mod table;
pub mod usecase;

/// The exit codes: one table, in `ubunye --help` and docs/json.md.
pub mod exit {
    /// Done (or a resumed skip, or a doctor that found nothing).
    pub const OK: i32 = 0;
    /// Refused (a live holder, a repair that does not apply, a finished
    /// batch, declined at the prompt, a lost lease, an unreadable file, a
    /// store that cannot be used), or doctor's findings.
    pub const REFUSED: i32 = 1;
    /// Usage: bad flags, a `-d` that is not a use case, a batch id shorter
    /// than 4 hex digits or that names no batch or several.
    pub const USAGE: i32 = 2;
    /// `exec`: the command ran past `--timeout` and was stopped (as
    /// coreutils' `timeout` exits).
    pub const TIMED_OUT: i32 = 124;
}
