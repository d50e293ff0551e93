//! `ubunye top`: the dashboard. It renders the library's state model and calls
//! its repair functions; it holds no lease logic.

use ubunye::cli::{Dashboard, DemoArgs, TopArgs};

/// The ratatui dashboard.
pub struct Top;

impl Dashboard for Top {
    fn top(&self, _opts: &TopArgs) -> i32 {
        eprintln!("ubunye: top is not built yet");
        1
    }
    fn demo(&self, _opts: &DemoArgs) -> i32 {
        eprintln!("ubunye: demo is not built yet");
        1
    }
}
