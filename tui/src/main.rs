//! The `ubunye` binary: the library's CLI with the dashboard plugged in.
#![deny(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    // `ubunye demo` re-executes this binary to drive the engine into the states
    // it shows (and kill itself at a protocol step): that runs before the CLI.
    ubunye_tui::demo::actor::run_if_asked();
    std::process::exit(ubunye::cli::run(std::env::args_os(), &ubunye_tui::Top));
}
