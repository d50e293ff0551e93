//! `ubunye completions SHELL` and `ubunye man`: generated from the clap
//! definitions (`super::command()`), so they cannot drift from the binary.

use clap::{Args, ValueEnum};

use super::{exit, out, say_err};

/// The shells completions are made for.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Print a shell's completion script for `ubunye`.
///
/// Generated from the same definitions as the binary's own parsing, so every
/// subcommand and option the binary takes completes, and no other.
#[derive(Args, Debug)]
#[command(after_help = "Install (one of):
  ubunye completions bash > ~/.local/share/bash-completion/completions/ubunye
  ubunye completions zsh > ~/.zfunc/_ubunye
  ubunye completions fish > ~/.config/fish/completions/ubunye.fish")]
pub struct CompletionsArgs {
    /// bash, zsh or fish.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Print the man page of `ubunye` (roff), or of one of its subcommands.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ubunye man | man -l -
  ubunye man leases list > ubunye-leases-list.1")]
pub struct ManArgs {
    /// A subcommand (`exec`, `leases list`, ...): its own page.
    #[arg(value_name = "SUBCOMMAND")]
    pub path: Vec<String>,
}

pub fn completions(a: &CompletionsArgs) -> i32 {
    let shell = match a.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    // Into memory first: clap_complete panics when its writer fails (a
    // closed pipe), and `out` does not.
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "ubunye", &mut buf);
    out(&String::from_utf8_lossy(&buf));
    exit::OK
}

pub fn man(a: &ManArgs) -> i32 {
    // Built, so each subcommand knows its whole usage (`ubunye leases list`).
    let mut cmd = super::command();
    cmd.build();
    let mut name = String::from("ubunye");
    for word in &a.path {
        let Some(sub) = cmd.get_subcommands().find(|s| s.get_name() == word && !s.is_hide_set()).cloned() else {
            let known: Vec<&str> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name()).collect();
            say_err(&format!("`{name}` has no subcommand '{word}' (it has: {})", known.join(", ")));
            return exit::USAGE;
        };
        name = format!("{name}-{word}");
        cmd = sub;
    }
    let mut buf = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd.display_name(name))
        .source(concat!("ubunye-rs ", env!("CARGO_PKG_VERSION")))
        .render(&mut buf)
    {
        say_err(&format!("cannot render the man page: {e}"));
        return exit::REFUSED;
    }
    out(&String::from_utf8_lossy(&buf));
    exit::OK
}
