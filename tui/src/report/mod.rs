//! The engine's reports as text, for the command line and the dashboard
//! alike: the library returns typed outcomes, and this renders them.

mod explain;
mod repair;
pub mod store;

pub use explain::render as explanation;

pub(crate) use crate::console::print::printable;
pub use repair::{outcome as repair_outcome, plan as repair_plan, took_over};
