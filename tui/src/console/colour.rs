//! Whether to colour: one rule for every surface that colours (`leases
//! list`, `runs`, the dashboard), decided once per run of the binary.
//!
//! In order: `--color always|never`; then `NO_COLOR` set and not empty:
//! never (https://no-color.org); then `CLICOLOR_FORCE` set and not `0`:
//! always; else only when stdout is a terminal.

use std::ffi::OsStr;

/// `--color`: `auto` (the rule above), `always`, `never`. (The variants have
/// no doc comments: clap would list each one in every command's `--help`.)
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// The decision, from the environment of this process.
pub fn decide(choice: ColorChoice, stdout_is_terminal: bool) -> bool {
    decide_with(
        choice,
        stdout_is_terminal,
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("CLICOLOR_FORCE").as_deref(),
    )
}

/// The rule itself.
pub fn decide_with(
    choice: ColorChoice,
    stdout_is_terminal: bool,
    no_color: Option<&OsStr>,
    clicolor_force: Option<&OsStr>,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if no_color.is_some_and(|v| !v.is_empty()) => false,
        ColorChoice::Auto if clicolor_force.is_some_and(|v| v != "0") => true,
        ColorChoice::Auto => stdout_is_terminal,
    }
}

#[cfg(test)]
mod tests {
    use super::ColorChoice::*;
    use super::*;

    #[test]
    fn the_rule_in_order() {
        let s = |v: &'static str| Some(OsStr::new(v));
        for (choice, tty, no, force, want) in [
            (Auto, true, None, None, true),
            (Auto, false, None, None, false),
            (Auto, true, s("1"), None, false),
            (Auto, true, s(""), None, true),
            (Auto, false, None, s("1"), true),
            (Auto, false, None, s("0"), false),
            (Auto, false, s("1"), s("1"), false),
            (Always, false, s("1"), None, true),
            (Never, true, None, s("1"), false),
        ] {
            assert_eq!(decide_with(choice, tty, no, force), want, "{choice:?} tty={tty} {no:?} {force:?}");
        }
    }
}
