//! The one place the front end reads the engine's settings from the
//! environment: [`sys`], called where a command starts.

use std::sync::Once;

use ubunye::sys::Sys;

/// The real machine with this process's settings (`ubunye::sys::Sys::from_env`).
/// A release build says on stderr, once, which test settings (shortened waits,
/// a pinned host identity, a forced slow path) it honours, so that none is
/// ever in effect unseen; test builds stay quiet.
pub fn sys() -> Sys {
    let sys = Sys::from_env();
    if !cfg!(debug_assertions) && !sys.knobs.test_settings.is_empty() {
        static SAID: Once = Once::new();
        SAID.call_once(|| {
            super::print::errln(&announcement(&sys.knobs.test_settings));
        });
    }
    sys
}

/// The line a release build prints when test settings are honoured.
pub fn announcement(settings: &[String]) -> String {
    format!(
        "ubunye: test setting(s) in effect: {} (they shorten waits, pin the host's identity or force a slower path; unset them outside tests)",
        settings.join(" ")
    )
}
