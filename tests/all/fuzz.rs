//! Property tests at fuzzing counts: the lease, note and record parsers, the key
//! canonicaliser, the liveness judge and the state classifier over random trees
//! never panic or hang; a damaged file is a refusal (`unreadable`) naming it,
//! never free or dead.
//!
//! `UBUNYE_FUZZ_CASES` sets the number of cases per target (CI: the default,
//! 300; `scripts/fuzz 1000000` for the recorded run). The state target runs a
//! hundredth as many (each case writes a tree of files).

use crate::common;

use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use ubunye::documents::{LeaseDoc, Parsed, parse_doc};
use ubunye::vars::PyValue;

/// Print how many cases a target ran, and check it ran them all.
fn report(target: &str, ran: &AtomicU64, wanted: u32) {
    let ran = ran.load(Ordering::Relaxed);
    eprintln!("fuzz {target}: {ran} cases, no panic, no property broken");
    assert!(ran >= u64::from(wanted), "{target} ran {ran} of {wanted} cases");
}

fn cases() -> u32 {
    std::env::var("UBUNYE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

fn config(n: u32) -> ProptestConfig {
    ProptestConfig { cases: n.max(1), failure_persistence: None, ..ProptestConfig::default() }
}

/// Bytes that look like a lease: a real one mutated, or JSON-ish noise.
fn lease_like() -> impl Strategy<Value = Vec<u8>> {
    let real = br#"{"run_id": "a7ee7676-3983", "task": "demo/sales/ingest", "pid": 25043, "pid_started": "120249", "host": "vm|pid:[4026531836]", "started_at": "2026-11-29T10:33:10Z", "heartbeat": 1795948390.36, "outputs": {"events": {"appends": true, "exact": true, "state": "writing", "claimed": ["out/events/a"], "staging": "out/events/_ubunye-0123456789ab"}}, "replaces": {"events": ["out/events/b"]}, "committed": true, "kept": true}"#.to_vec();
    let tokens = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\\",
        "\\u",
        "d800",
        "NaN",
        "Infinity",
        "-",
        "1e400",
        "null",
        "true",
        "\"pid\"",
        "\"run_id\"",
        "\"outputs\"",
        "\"claimed\"",
        "\"../x\"",
        "\u{ff}",
        " ",
        "0",
        "99999999999999999999",
    ]);
    prop_oneof![
        (Just(real.clone()), prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6)).prop_map(
            |(mut r, edits)| {
                for (i, b) in edits {
                    let at = i.index(r.len());
                    r[at] = b;
                }
                r
            }
        ),
        (Just(real), any::<prop::sample::Index>()).prop_map(|(r, i)| r[..i.index(r.len())].to_vec()),
        prop::collection::vec(tokens, 0..40).prop_map(|t| t.concat().into_bytes()),
        prop::collection::vec(any::<u8>(), 0..200),
    ]
}

fn py_value() -> impl Strategy<Value = PyValue> {
    let leaf = prop_oneof![
        Just(PyValue::None),
        any::<bool>().prop_map(PyValue::Bool),
        any::<i64>().prop_map(|i| PyValue::Int(i.to_string())),
        "[0-9]{1,40}".prop_map(PyValue::Int),
        any::<f64>().prop_map(PyValue::Float),
        ".{0,12}".prop_map(PyValue::Str),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(PyValue::List),
            prop::collection::vec((inner.clone(), inner), 0..5).prop_map(PyValue::Dict),
        ]
    })
}

#[test]
fn lease_note_and_record_parsers_never_panic() {
    let ran = AtomicU64::new(0);
    proptest!(config(cases()), |(bytes in lease_like())| {
        ran.fetch_add(1, Ordering::Relaxed);
        match parse_doc(&bytes) {
            Ok(Parsed::Doc(m)) => {
                let d = LeaseDoc(m);
                let _ = (d.pid(), d.notes(), d.replaces(), d.paths(), d.run_id(), d.run_short(), d.to_json(), d.kept(), d.committed());
                let _ = ubunye::documents::finished_note(&d, "a/b/c", "t");
                let f = ubunye::documents::Finished { doc: d.0.clone() };
                let _ = (f.outputs(), f.has_outputs(), f.finished_at());
            }
            Ok(Parsed::NotADoc) => {
                // The peer's {}: only text that Python would not read as an object.
                if let Ok(s) = std::str::from_utf8(&bytes) {
                    prop_assert_ne!(ubunye::pyparse::python_accepts(s), Some(true));
                }
            }
            Err(_) => {}
        }
        let _ = ubunye::lineage::status_of(&bytes);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = ubunye::pyparse::sanitize(s);
        }
    });
    report("lease_note_and_record_parsers_never_panic", &ran, cases());
}

#[test]
fn the_key_canonicaliser_never_panics() {
    let ran = AtomicU64::new(0);
    proptest!(config(cases()), |(vars in prop::collection::vec((".{0,8}", py_value()), 0..6))| {
        ran.fetch_add(1, Ordering::Relaxed);
        let vars: ubunye::vars::Variables = vars;
        // Refusing a value (Err) is fine; a key made must look like one.
        if let Ok(text) = ubunye::key::canonical_text("demo/sales/ingest", &vars) {
            let prefix = "{\"task\": \"demo/sales/ingest\", \"variables\": {";
            prop_assert!(text.starts_with(prefix), "{}", text);
            prop_assert!(text.is_ascii(), "ensure_ascii");
            let k = ubunye::key::batch_key("demo/sales/ingest", &vars).unwrap();
            prop_assert!(ubunye::layout::is_key(&k));
        }
        let _ = ubunye::key::names_a_batch(&vars);
    });
    report("the_key_canonicaliser_never_panics", &ran, cases());
}

#[test]
fn the_judge_never_panics_and_never_judges_damage() {
    let t0 = UNIX_EPOCH + Duration::from_secs(1_795_948_390);
    let ran = AtomicU64::new(0);
    proptest!(config(cases()), |(bytes in lease_like(), m in -4_000_000i64..4_000_000, c in -4_000_000i64..4_000_000, alive in any::<bool>(), same in any::<bool>())| {
        ran.fetch_add(1, Ordering::Relaxed);
        let (mut sys, _, procs) = common::fake_sys(common::FIXTURE_HOST, t0);
        if !same {
            sys.host = "elsewhere".into();
        }
        if alive {
            procs.add(25043, Some("120249"));
        }
        let at = |s: i64| if s >= 0 { t0 + Duration::from_secs(s as u64) } else { t0 - Duration::from_secs((-s) as u64) };
        let times = ubunye::liveness::FileTimes { mtime: at(m), ctime: at(c) };
        let now = || ubunye::sys::Now { time: t0, source: ubunye::sys::ClockSource::Disk };
        if let Ok(p) = parse_doc(&bytes) {
            let d = LeaseDoc::from_parsed(p);
            let _ = ubunye::liveness::judge(&d, Some(times), &mut { now }, &sys, true);
            let _ = ubunye::liveness::judge(&d, None, &mut { now }, &sys, false);
        }
    });
    report("the_judge_never_panics_and_never_judges_damage", &ran, cases());
}

/// Random use-case trees: leases, orphans, notes, marks, temp files and records
/// with random (often damaged) contents. The scan never panics; a lease or
/// orphan that cannot be read, or a note with no lease beside it, makes its
/// batch `unreadable`, never dead or free;
/// explain and the repair check never panic on any batch.
#[test]
fn the_state_classifier_over_random_trees() {
    let n = (cases() / 100).max(20);
    let ran = AtomicU64::new(0);
    proptest!(config(n), |(files in prop::collection::vec((0usize..6, 0usize..3, lease_like()), 1..8), records in prop::collection::vec((0usize..3, lease_like()), 0..4))| {
        ran.fetch_add(1, Ordering::Relaxed);
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".ubunye/leases/demo/sales/ingest");
        let rec = d.path().join(".ubunye/lineage/demo/sales/ingest");
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(&rec).unwrap();
        let keys = ["39bc42311894ddba", "7d106ca76674f2a1", "540a6418b2f41334"];
        // The same name twice: the last write is what is there.
        let mut last: std::collections::BTreeMap<String, (usize, &str, &Vec<u8>)> = Default::default();
        for (kind, k, bytes) in &files {
            let key = keys[*k];
            let name = match kind {
                0 => format!("{key}.json"),
                1 => format!("{key}.dead-0badc0de.json"),
                2 => format!("{key}.finished.json"),
                3 => format!("{key}.done-a7ee7676-3983"),
                4 => format!("{key}.taken-a7ee7676-3983"),
                _ => format!("{key}.0badc0de.tmp"),
            };
            last.insert(name, (*kind, key, bytes));
        }
        // A lease or a dead run's lease that cannot be read always decides;
        // a finished note only when no lease is beside it (the lease's run
        // decides first, as classify's `blocks` says).
        let leased = |key: &str| last.contains_key(&format!("{key}.json"));
        let mut damaged: Vec<String> = Vec::new();
        for (name, (kind, key, bytes)) in &last {
            fs::write(dir.join(name), bytes).unwrap();
            let decides = *kind <= 1 || (*kind == 2 && !leased(key));
            if decides && parse_doc(bytes).is_err() {
                damaged.push(key.to_string());
            }
        }
        for (i, (run, bytes)) in records.iter().enumerate() {
            fs::write(rec.join(format!("run-{run}-{i}.json")), bytes).unwrap();
        }
        let (sys, _, _) = common::fake_sys(common::FIXTURE_HOST, SystemTime::now());
        let s = ubunye::state::scan(d.path(), &ubunye::state::ScanOptions::default(), &sys).unwrap();
        for key in damaged {
            let b = s.batches.iter().find(|b| b.key == key).unwrap();
            prop_assert_eq!(b.state, ubunye::state::State::Unreadable, "{} with a damaged file: {}", key, b.note);
        }
        for b in &s.batches {
            let e = ubunye::explain::explain(&s, b.clone());
            let _ = ubunye::repair::check(ubunye::repair::Kind::Takeover, &e);
        }
        let _ = ubunye::doctor::examine(&s);
    });
    report("the_state_classifier_over_random_trees", &ran, n);
}
