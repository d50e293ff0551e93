//! The engine's reports as text, for the command line and the dashboard
//! alike: the library returns typed outcomes, and this renders them.

mod explain;
mod repair;
pub mod store;

pub use explain::render as explanation;

/// `text` with every control character but a newline (C0 and C1, the
/// 8-bit CSI among them) and every bidirectional override made a space:
/// what the reports quote from the files they read (a note, a record's
/// error, a file's name) cannot move the cursor, retitle the window, clear
/// the screen or reorder the line of the terminal that shows it.
pub(crate) fn printable(text: String) -> String {
    use crate::console::table::drives_terminal;
    if !text.chars().any(drives_terminal) {
        return text;
    }
    text.chars().map(|c| if drives_terminal(c) { ' ' } else { c }).collect()
}
pub use repair::{outcome as repair_outcome, plan as repair_plan, took_over};
