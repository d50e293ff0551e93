//! The one setting a release build takes from `ubunye killtest`: inside a
//! killtest sandbox, a takeover's settle wait is short. The settle (3 s, the
//! peer's `TAKEOVER_SETTLE`) gives a holder judged dead the time to show that
//! it lives. In a sandbox no such holder can exist: killtest stops every
//! process of a killed round (SIGKILL to its whole session, waited for)
//! before it starts the next one. Honoured only for a use case inside the
//! folder `UBUNYE_KILLTEST_SANDBOX` names, and only if that folder holds the
//! marker killtest writes there ([`MARKER`]).

use std::path::Path;
use std::time::Duration;

/// The environment variable killtest sets for the runs it starts.
pub const VAR: &str = "UBUNYE_KILLTEST_SANDBOX";
/// The file killtest writes at the top of its sandbox.
pub const MARKER: &str = ".ubunye-killtest";
/// The settle inside a sandbox.
pub const SETTLE: Duration = Duration::from_millis(20);

/// The settle wait for a run on `uc`, when `sandbox` (the value of [`VAR`])
/// names a killtest sandbox that holds `uc`.
pub fn settle_for(uc: &Path, sandbox: Option<&std::ffi::OsStr>) -> Option<Duration> {
    let sandbox = std::fs::canonicalize(sandbox?).ok()?;
    let uc = std::fs::canonicalize(uc).ok()?;
    (uc.starts_with(&sandbox) && sandbox.join(MARKER).is_file()).then_some(SETTLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_use_case_inside_a_marked_sandbox_gets_the_short_settle() {
        let d = tempfile::tempdir().unwrap();
        let (sb, other) = (d.path().join("sb"), d.path().join("other"));
        std::fs::create_dir_all(sb.join("uc")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(settle_for(&sb.join("uc"), Some(sb.as_os_str())), None, "no marker");
        std::fs::write(sb.join(MARKER), "").unwrap();
        assert_eq!(settle_for(&sb.join("uc"), Some(sb.as_os_str())), Some(SETTLE));
        assert_eq!(settle_for(&other, Some(sb.as_os_str())), None, "outside the sandbox");
        assert_eq!(settle_for(&sb.join("uc"), None), None);
    }
}
