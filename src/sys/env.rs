//! The engine's settings from the environment, read once where a program
//! starts ([`super::Sys::from_env`]) and nowhere else, so that nothing deep in
//! the engine changes with a variable it happens to read.
//!
//! Two kinds: settings a user may give (`UBUNYE_RUN_LEASE` as the peer reads
//! it, `UBUNYE_EXEC_GRACE`), and test settings (`UBUNYE_TEST_*`,
//! `UBUNYE_NO_IN_PLACE`) that shorten waits, pin the host's identity or force
//! a rarer path, so that suites stay fast and every path is tried. Each test
//! setting honoured is named in [`Knobs::test_settings`], for the front end to
//! announce.

use std::ffi::OsString;
use std::time::Duration;

use super::Timing;

/// The switches the engine takes from its surroundings (the waits are in
/// [`Timing`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knobs {
    /// Whether runs take leases: `UBUNYE_RUN_LEASE` set to `off`, `0` or
    /// `false` (trimmed, any case) turns them off, as the peer reads it.
    pub leases: bool,
    /// Whether `ubunye exec` may publish an overwrite with `RENAME_EXCHANGE`;
    /// off with `UBUNYE_TEST_NO_EXCHANGE` (tests of the two-rename path).
    pub exchange: bool,
    /// Whether a lease may be rewritten in place on file systems that allow
    /// it; off with `UBUNYE_NO_IN_PLACE` (tests of the temp-and-rename path).
    pub in_place: bool,
    /// The test settings honoured, as `NAME=value`: empty in production.
    pub test_settings: Vec<String>,
}

impl Default for Knobs {
    /// Production: leases on, every fast path allowed, no test setting.
    fn default() -> Self {
        Knobs { leases: true, exchange: true, in_place: true, test_settings: Vec::new() }
    }
}

/// One of [`Timing`]'s waits.
type Field = fn(&mut Timing) -> &mut Duration;

/// Everything read from the environment.
pub(super) struct FromEnv {
    pub timing: Timing,
    pub knobs: Knobs,
    /// `UBUNYE_TEST_HOST`: the host identity to use instead of this one's.
    pub host: Option<String>,
}

/// Read the settings through `var` (the process's environment, or a table in
/// a test). A value that does not parse is ignored, as before.
pub(super) fn read(var: impl Fn(&str) -> Option<OsString>) -> FromEnv {
    let text = |name: &str| var(name).map(|v| v.to_string_lossy().trim().to_string());
    let mut knobs = Knobs::default();
    let mut timing = Timing::peer();

    if let Some(v) = text("UBUNYE_RUN_LEASE") {
        knobs.leases = !matches!(v.to_lowercase().as_str(), "off" | "0" | "false");
    }
    let wait = |name: &str| text(name).and_then(|v| humantime::parse_duration(&v).ok().map(|d| (d, v)));
    if let Some((d, _)) = wait("UBUNYE_EXEC_GRACE") {
        timing.exec_grace = d;
    }
    let waits: [(&str, Field); 4] = [
        ("UBUNYE_TEST_SETTLE", |t| &mut t.settle),
        ("UBUNYE_TEST_HEARTBEAT_EVERY", |t| &mut t.heartbeat_every),
        ("UBUNYE_TEST_BUSY_FOR", |t| &mut t.busy_for),
        ("UBUNYE_TEST_KILL_FOR", |t| &mut t.kill_for),
    ];
    for (name, field) in waits {
        if let Some((d, v)) = wait(name) {
            *field(&mut timing) = d;
            note(&mut knobs, name, &v);
        }
    }
    if let Some(v) = text("UBUNYE_TEST_NO_EXCHANGE").filter(|v| !v.is_empty()) {
        knobs.exchange = false;
        note(&mut knobs, "UBUNYE_TEST_NO_EXCHANGE", &v);
    }
    if let Some(v) = text("UBUNYE_NO_IN_PLACE") {
        knobs.in_place = false;
        note(&mut knobs, "UBUNYE_NO_IN_PLACE", &v);
    }
    let host = var("UBUNYE_TEST_HOST").map(|v| v.to_string_lossy().into_owned());
    if let Some(h) = &host {
        note(&mut knobs, "UBUNYE_TEST_HOST", h);
    }
    FromEnv { timing, knobs, host }
}

fn note(knobs: &mut Knobs, name: &str, value: &str) {
    knobs.test_settings.push(format!("{name}={value}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> FromEnv {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        read(move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v)))
    }

    #[test]
    fn nothing_set_is_production() {
        let e = with(&[]);
        assert_eq!(e.timing, Timing::peer());
        assert_eq!(e.knobs, Knobs::default());
        assert_eq!(e.host, None);
    }

    #[test]
    fn test_settings_shorten_waits_and_are_named() {
        let e = with(&[
            ("UBUNYE_TEST_SETTLE", " 50ms "),
            ("UBUNYE_TEST_KILL_FOR", "0s"),
            ("UBUNYE_TEST_BUSY_FOR", "not a duration"),
            ("UBUNYE_TEST_HOST", "elsewhere|pid:[1]"),
            ("UBUNYE_TEST_NO_EXCHANGE", "1"),
        ]);
        assert_eq!(e.timing.settle, Duration::from_millis(50));
        assert_eq!(e.timing.kill_for, Duration::ZERO);
        assert_eq!(e.timing.busy_for, Timing::peer().busy_for, "a value that does not parse is ignored");
        assert_eq!(e.timing.heartbeat_timeout, Timing::peer().heartbeat_timeout, "rules never change");
        assert!(!e.knobs.exchange);
        assert!(e.knobs.in_place);
        assert_eq!(e.host.as_deref(), Some("elsewhere|pid:[1]"));
        assert_eq!(
            e.knobs.test_settings,
            [
                "UBUNYE_TEST_SETTLE=50ms",
                "UBUNYE_TEST_KILL_FOR=0s",
                "UBUNYE_TEST_NO_EXCHANGE=1",
                "UBUNYE_TEST_HOST=elsewhere|pid:[1]"
            ]
        );
    }

    #[test]
    fn user_settings_are_not_test_settings() {
        let e = with(&[("UBUNYE_RUN_LEASE", " OFF "), ("UBUNYE_EXEC_GRACE", "200ms")]);
        assert!(!e.knobs.leases);
        assert_eq!(e.timing.exec_grace, Duration::from_millis(200));
        assert!(e.knobs.test_settings.is_empty());
        for on in ["", "on", "1", "yes"] {
            assert!(with(&[("UBUNYE_RUN_LEASE", on)]).knobs.leases, "{on:?}");
        }
    }
}
