//! The `ubunye` binary: the library's CLI with the dashboard plugged in.

fn main() {
    std::process::exit(ubunye::cli::run(std::env::args_os(), &ubunye_tui::Top));
}
