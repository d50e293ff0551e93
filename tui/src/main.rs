//! The `ubunye` binary: its command line (`ubunye_tui::cli`), which runs the
//! engine (the `ubunye` library), the dashboard and the demo.
#![deny(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    std::process::exit(ubunye_tui::cli::run(std::env::args_os()));
}
