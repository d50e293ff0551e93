//! The engine's reports as text, for the command line and the dashboard
//! alike: the library returns typed outcomes, and this renders them.

mod explain;
mod repair;
pub mod store;

pub use explain::render as explanation;

/// `text` with every control character but a newline made a space: what
/// the reports quote from the files they read (a note, a record's error, a
/// path) cannot move the cursor, retitle the window or clear the screen of
/// the terminal that shows it.
pub(crate) fn printable(text: String) -> String {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return text;
    }
    text.chars().map(|c| if c.is_control() && c != '\n' { ' ' } else { c }).collect()
}
pub use repair::{outcome as repair_outcome, plan as repair_plan, took_over};
