//! The engine's settings from the environment, read once where a program
//! starts ([`super::Sys::from_env`]) and nowhere else, so that nothing deep in
//! the engine changes with a variable it happens to read.
//!
//! Two kinds: settings a user may give (`UBUNYE_RUN_LEASE` as the peer reads
//! it, `UBUNYE_EXEC_GRACE`), and test settings (`UBUNYE_TEST_*`,
//! `UBUNYE_NO_IN_PLACE`) that shorten waits, pin the host's identity or force
//! a rarer path, so that suites stay fast and every path is tried. Test
//! settings are honoured only by a build with debug assertions (what `cargo
//! test` builds, and the `knobs` profile the scripts use): a release binary
//! never changes its waits or its identity because of a variable. Each one
//! honoured is named in [`Knobs::test_settings`].

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
    /// `UBUNYE_TEST_STOP_AT`: the step at which the process stops itself.
    pub stop_at: Option<String>,
    /// Where `leases explain` may keep its index of a task's files, outside
    /// every use case: `UBUNYE_CACHE_DIR`, else `$XDG_CACHE_HOME/ubunye`,
    /// else `$HOME/.cache/ubunye`. `UBUNYE_CACHE_DIR` set empty: nowhere
    /// (every explain reads its batch's task whole).
    pub cache_dir: Option<std::path::PathBuf>,
    /// How large `ubunye exec`'s log of a command may grow before it is
    /// rotated (`UBUNYE_EXEC_LOG_MAX`: bytes, or with a unit, `10MiB`,
    /// `512KiB`); None: no log (`UBUNYE_EXEC_LOG=off`).
    pub exec_log_max: Option<u64>,
}

/// The default bound of a command's log: 10 MiB, then rotated.
pub const EXEC_LOG_MAX: u64 = 10 << 20;

/// `10MiB`, `512KiB`, `1GiB`, `4096` (bytes): a size, or None.
fn size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n.parse().ok()?;
    let times: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(times).filter(|s| *s > 0)
}

impl Default for Knobs {
    /// Production: leases on, every fast path allowed, no test setting.
    fn default() -> Self {
        Knobs {
            leases: true,
            exchange: true,
            in_place: true,
            test_settings: Vec::new(),
            stop_at: None,
            cache_dir: None,
            exec_log_max: Some(EXEC_LOG_MAX),
        }
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
/// a test); the test settings only when `tests` (a build with debug
/// assertions). A value that does not parse is ignored, as before.
pub(super) fn read(var: impl Fn(&str) -> Option<OsString>, tests: bool) -> FromEnv {
    let text = |name: &str| var(name).map(|v| v.to_string_lossy().trim().to_string());
    let mut knobs = Knobs::default();
    let mut timing = Timing::peer();

    // As the peer: `.strip().lower()`, Python's whitespace.
    if let Some(v) = var("UBUNYE_RUN_LEASE") {
        let v = v.to_string_lossy().trim_matches(crate::pyparse::py_space).to_lowercase();
        knobs.leases = !matches!(v.as_str(), "off" | "0" | "false");
    }
    let wait = |name: &str| text(name).and_then(|v| humantime::parse_duration(&v).ok().map(|d| (d, v)));
    if let Some((d, _)) = wait("UBUNYE_EXEC_GRACE") {
        timing.exec_grace = d;
    }
    knobs.cache_dir = cache_dir(&var);
    if let Some(m) = text("UBUNYE_EXEC_LOG_MAX").as_deref().and_then(size) {
        knobs.exec_log_max = Some(m);
    }
    if text("UBUNYE_EXEC_LOG").is_some_and(|v| matches!(v.to_lowercase().as_str(), "off" | "0" | "false")) {
        knobs.exec_log_max = None;
    }
    if !tests {
        return FromEnv { timing, knobs, host: None };
    }
    let waits: [(&str, Field); 6] = [
        ("UBUNYE_TEST_TIMEOUT", |t| &mut t.heartbeat_timeout),
        ("UBUNYE_TEST_SETTLE", |t| &mut t.settle),
        ("UBUNYE_TEST_HEARTBEAT_EVERY", |t| &mut t.heartbeat_every),
        ("UBUNYE_TEST_BUSY_FOR", |t| &mut t.busy_for),
        ("UBUNYE_TEST_KILL_FOR", |t| &mut t.kill_for),
        ("UBUNYE_TEST_STORE_OUTAGE", |t| &mut t.store_outage),
    ];
    for (name, field) in waits {
        if let Some((d, v)) = wait(name) {
            *field(&mut timing) = d;
            note(&mut knobs, name, &v);
        }
    }
    // A short timeout for the tests is the store's lease lifetime too.
    timing.store_ttl = timing.store_ttl.min(timing.heartbeat_timeout);
    // Any value but the empty one, spaces included (as before).
    if let Some(v) = var("UBUNYE_TEST_NO_EXCHANGE").filter(|v| !v.is_empty()) {
        knobs.exchange = false;
        note(&mut knobs, "UBUNYE_TEST_NO_EXCHANGE", &v.to_string_lossy());
    }
    if let Some(v) = text("UBUNYE_NO_IN_PLACE") {
        knobs.in_place = false;
        note(&mut knobs, "UBUNYE_NO_IN_PLACE", &v);
    }
    // A step (kebab-case, as `Step` serialises) at which the process stops
    // itself with SIGSTOP: the zombie tests pause a holder there.
    if let Some(v) = text("UBUNYE_TEST_STOP_AT").filter(|v| !v.is_empty()) {
        note(&mut knobs, "UBUNYE_TEST_STOP_AT", &v);
        knobs.stop_at = Some(v);
    }
    // Not UTF-8: not a host identity this engine could write; ignored.
    let host = var("UBUNYE_TEST_HOST").and_then(|v| v.into_string().ok());
    if let Some(h) = &host {
        note(&mut knobs, "UBUNYE_TEST_HOST", h);
    }
    FromEnv { timing, knobs, host }
}

/// [`Knobs::cache_dir`]: only an absolute folder (the XDG rule), so that
/// where it lands never depends on the current folder.
fn cache_dir(var: &impl Fn(&str) -> Option<OsString>) -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let abs = |v: OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(v) = var("UBUNYE_CACHE_DIR") {
        return abs(v);
    }
    match var("XDG_CACHE_HOME").and_then(abs) {
        Some(x) => Some(x.join("ubunye")),
        None => var("HOME").and_then(abs).map(|h| h.join(".cache/ubunye")),
    }
}

fn note(knobs: &mut Knobs, name: &str, value: &str) {
    knobs.test_settings.push(format!("{name}={value}"));
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn sizes_read_as_bytes() {
        assert_eq!(super::size("10MiB"), Some(10 << 20));
        assert_eq!(super::size("512k"), Some(512 << 10));
        assert_eq!(super::size("4096"), Some(4096));
        assert_eq!(super::size("0"), None);
        assert_eq!(super::size("ten"), None);
        assert_eq!(super::size("1TB"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, OsString)], tests: bool) -> FromEnv {
        let pairs: Vec<(String, OsString)> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        read(move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()), tests)
    }

    fn with(pairs: &[(&str, &str)]) -> FromEnv {
        let pairs: Vec<(&str, OsString)> = pairs.iter().map(|(k, v)| (*k, OsString::from(v))).collect();
        table(&pairs, true)
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
        // Python's strip() also takes \x1c..\x1f: read as the peer reads it.
        assert!(!with(&[("UBUNYE_RUN_LEASE", "off\u{1f}")]).knobs.leases);
    }

    #[test]
    fn the_cache_folder_is_absolute_and_can_be_turned_off() {
        let at = |pairs: &[(&str, &str)]| with(pairs).knobs.cache_dir.map(|p| p.display().to_string());
        assert_eq!(at(&[("HOME", "/home/u")]).as_deref(), Some("/home/u/.cache/ubunye"));
        assert_eq!(at(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")]).as_deref(), Some("/c/ubunye"));
        // A relative XDG_CACHE_HOME is ignored, as the XDG rules ask.
        assert_eq!(at(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "c")]).as_deref(), Some("/home/u/.cache/ubunye"));
        assert_eq!(at(&[("HOME", "/home/u"), ("UBUNYE_CACHE_DIR", "/x")]).as_deref(), Some("/x"));
        assert_eq!(at(&[("HOME", "/home/u"), ("UBUNYE_CACHE_DIR", "")]), None, "set empty: no index");
        assert_eq!(at(&[]), None);
        assert!(with(&[("HOME", "/h")]).knobs.test_settings.is_empty(), "a user setting");
    }

    #[test]
    fn a_release_build_honours_no_test_setting() {
        let pairs: Vec<(&str, OsString)> = [
            ("UBUNYE_TEST_SETTLE", "50ms"),
            ("UBUNYE_TEST_HOST", "elsewhere|pid:[1]"),
            ("UBUNYE_TEST_NO_EXCHANGE", "1"),
            ("UBUNYE_NO_IN_PLACE", "1"),
            ("UBUNYE_EXEC_GRACE", "200ms"),
            ("UBUNYE_RUN_LEASE", "off"),
        ]
        .iter()
        .map(|(k, v)| (*k, OsString::from(v)))
        .collect();
        let e = table(&pairs, false);
        assert_eq!(e.timing.settle, Timing::peer().settle);
        assert_eq!(e.host, None);
        assert!(e.knobs.exchange && e.knobs.in_place);
        assert!(e.knobs.test_settings.is_empty());
        // The user's settings still are.
        assert_eq!(e.timing.exec_grace, Duration::from_millis(200));
        assert!(!e.knobs.leases);
    }

    #[test]
    fn odd_values_are_read_as_before() {
        use std::os::unix::ffi::OsStringExt;
        // A blank value still forces the two-rename path.
        assert!(!with(&[("UBUNYE_TEST_NO_EXCHANGE", " ")]).knobs.exchange);
        assert!(with(&[("UBUNYE_TEST_NO_EXCHANGE", "")]).knobs.exchange);
        // A host that is not UTF-8 is ignored, not mangled.
        let e = table(&[("UBUNYE_TEST_HOST", OsString::from_vec(b"pinned\xff".to_vec()))], true);
        assert_eq!(e.host, None);
    }
}
