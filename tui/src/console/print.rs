//! Every line the `ubunye` binary prints goes through here, the CLI's and the
//! dashboard crate's alike (`top`, `demo`).
//!
//! `print!`, `println!` and `eprintln!` panic when the other end of the pipe
//! is gone (`ubunye demo --no-top | head -1` ended with exit 101). These
//! functions drop what cannot be written instead: a reader that stopped
//! reading wants no more. SIGPIPE is left ignored, as Rust sets it, on
//! purpose: `ubunye exec` must not die mid-protocol (a lease held, files half
//! landed) because whoever read its stderr went away. Clippy's `print_stdout`
//! and `print_stderr` lints (denied at both crates' roots) keep it that way.

use std::io::Write;

/// Write to stdout as it is, flushed; a closed pipe is not an error.
pub fn out(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

/// [`out`] with a newline.
pub fn outln(text: &str) {
    out(&format!("{text}\n"));
}

/// One line to stderr, prefixed with the program's name: `ubunye: {msg}`.
pub fn say_err(msg: &str) {
    errln(&format!("ubunye: {msg}"));
}

/// One line to stderr as it is (for a prefix of its own, `ubunye demo: `).
pub fn errln(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(format!("{text}\n").as_bytes()).and_then(|()| e.flush());
}

/// A JSON document on stdout, pretty-printed, written as it is serialized (a
/// list of 100,000 batches is never built twice in memory).
pub fn print_json<T: serde::Serialize>(value: &T) {
    let mut o = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if serde_json::to_writer_pretty(&mut o, value).is_ok() {
        let _ = writeln!(o);
    }
    let _ = o.flush();
}
