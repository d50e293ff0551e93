//! The `ubunye` binary: its command line (`ubunye_tui::cli`), which runs the
//! engine (the `ubunye` library), the dashboard and the demo.
#![deny(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    // A write past `ulimit -f` fails with EFBIG and is reported, as in
    // Python (which ignores SIGXFSZ too), instead of killing the process
    // half-way (`leases list --json` spills to a temporary file).
    // SAFETY: setting a signal's disposition to ignore, before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    std::process::exit(ubunye_tui::cli::run(std::env::args_os()));
}
