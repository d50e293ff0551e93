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
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the command was asked for `--json`: then an error is also one
/// JSON object on stdout ([`end_json`]).
static JSON: AtomicBool = AtomicBool::new(false);
/// Whether anything was written on stdout.
static WROTE: AtomicBool = AtomicBool::new(false);
/// The first line said on stderr that is not a warning: the error.
static SAID: Mutex<Option<String>> = Mutex::new(None);

/// Errors are also JSON on stdout from now on (the command has `--json`).
pub fn json_errors() {
    JSON.store(true, Ordering::Relaxed);
}

/// Something was written on stdout by a writer of its own (a listing
/// streamed as it is read).
pub fn wrote_stdout() {
    WROTE.store(true, Ordering::Relaxed);
}

/// The error said otherwise than by [`say_err`] (clap's own message).
pub fn note_error(msg: &str) {
    SAID.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| msg.to_string());
}

/// At the end of a `--json` command that exits `code`: when it failed and
/// wrote nothing on stdout, the error as one JSON object there (docs/json.md,
/// "Errors"), so a script that parses stdout always gets JSON.
pub fn end_json(code: i32) {
    if !JSON.load(Ordering::Relaxed) || code == 0 || WROTE.load(Ordering::Relaxed) {
        return;
    }
    let message = SAID.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_default();
    let kind = match code {
        1 => "refused",
        2 => "usage",
        126 => "cannot-execute",
        127 => "not-found",
        _ => "failed",
    };
    print_json(&serde_json::json!({"error": {"kind": kind, "exit_code": code, "message": message}}));
}

/// Write to stdout as it is, flushed; a closed pipe is not an error.
pub fn out(text: &str) {
    WROTE.store(true, Ordering::Relaxed);
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

/// [`out`] with a newline.
pub fn outln(text: &str) {
    out(&format!("{text}\n"));
}

/// One line to stderr, prefixed with the program's name: `ubunye: {msg}`.
pub fn say_err(msg: &str) {
    if JSON.load(Ordering::Relaxed) && !msg.starts_with("warning") {
        SAID.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| msg.to_string());
    }
    errln(&format!("ubunye: {msg}"));
}

/// One line to stderr (for a prefix of its own, `ubunye demo: `), made
/// [`printable`]: what an error quotes (a file's name, a note, an object's
/// key) is never written to the terminal raw.
pub fn errln(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(format!("{}\n", printable(text.to_string())).as_bytes()).and_then(|()| e.flush());
}

/// `text` with every control character but a newline (C0 and C1, the
/// 8-bit CSI among them) and every bidirectional override made a space:
/// what the reports quote from the files they read (a note, a record's
/// error, a file's name) cannot move the cursor, retitle the window, clear
/// the screen or reorder the line of the terminal that shows it.
pub fn printable(text: String) -> String {
    use super::table::drives_terminal;
    if !text.chars().any(drives_terminal) {
        return text;
    }
    text.chars().map(|c| if drives_terminal(c) { ' ' } else { c }).collect()
}

/// A JSON document on stdout, pretty-printed, written as it is serialized (a
/// list of 100,000 batches is never built twice in memory).
pub fn print_json<T: serde::Serialize>(value: &T) {
    WROTE.store(true, Ordering::Relaxed);
    let mut o = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if serde_json::to_writer_pretty(&mut o, value).is_ok() {
        let _ = writeln!(o);
    }
    let _ = o.flush();
}
