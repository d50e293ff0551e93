//! The `ubunye` binary: its command line (`ubunye_tui::cli`), which runs the
//! engine (the `ubunye` library), the dashboard and the demo.
#![deny(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    // `ubunye demo` re-executes this binary to drive the engine into the states
    // it shows (and kill itself at a protocol step): that runs before the CLI.
    ubunye_tui::demo::actor::run_if_asked();
    std::process::exit(ubunye_tui::cli::run(std::env::args_os()));
}
