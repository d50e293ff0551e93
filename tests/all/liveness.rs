//! The liveness rules (FORMAT.md §6) as a table: each case a lease document,
//! its file times and a made-up process table, judged by `liveness::judge`
//! (here, not in `src/liveness.rs`'s unit tests: the fakes it uses are the
//! testkit's, not the library's).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ubunye::documents::{LeaseDoc, parse_doc};
use ubunye::liveness::{FileTimes, judge};
use ubunye::sys::{ClockSource, Now, Sys, Timing};
use ubunye_testkit::{FakeClock, FakeProc, FakeProcs};

const HOST: &str = ubunye_testkit::FIXTURE_HOST;
const ME: i32 = 777;

fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_948_390)
}

fn sys(procs: Arc<FakeProcs>) -> Sys {
    Sys {
        clock: FakeClock::at(t0()),
        procs,
        host: HOST.into(),
        pid: ME,
        timing: Timing::peer(),
        knobs: Default::default(),
        hook: Default::default(),
    }
}

fn lease(json: &str) -> LeaseDoc {
    LeaseDoc::from_parsed(parse_doc(json.as_bytes()).unwrap())
}

fn at(secs_ago: i64) -> FileTimes {
    let t = if secs_ago >= 0 {
        t0() - Duration::from_secs(secs_ago as u64)
    } else {
        t0() + Duration::from_secs((-secs_ago) as u64)
    };
    FileTimes { mtime: t, ctime: t }
}

fn now() -> Now {
    Now { time: t0(), source: ClockSource::Disk }
}

struct Case {
    name: &'static str,
    doc: String,
    times: Option<FileTimes>,
    procs: Vec<(i32, Option<&'static str>, bool)>,
    dead: bool,
    why: &'static str,
    stalled: bool,
}

fn same(pid: i64, token: &str, extra: &str) -> String {
    format!(
        r#"{{"run_id": "r", "pid": {pid}, "pid_started": {token}, "host": "{HOST}", "heartbeat": 1795948390.0{extra}}}"#
    )
}

#[test]
fn table() {
    let other =
        r#"{"run_id": "r", "pid": 1, "pid_started": "5", "host": "elsewhere|pid:[1]", "heartbeat": 1795948390.0}"#;
    let cases = vec![
        Case {
            name: "same host, process gone",
            doc: same(4242, "\"100\"", ""),
            times: Some(at(5)),
            procs: vec![],
            dead: true,
            why: "process-gone",
            stalled: false,
        },
        Case {
            name: "same host, alive, token matches",
            doc: same(4242, "\"100\"", ""),
            times: Some(at(5)),
            procs: vec![(4242, Some("100"), false)],
            dead: false,
            why: "process-alive",
            stalled: false,
        },
        Case {
            name: "same host, alive, old lease: stalled, never dead",
            doc: same(4242, "\"100\"", ""),
            times: Some(at(3600)),
            procs: vec![(4242, Some("100"), false)],
            dead: false,
            why: "process-alive",
            stalled: true,
        },
        Case {
            name: "same host, reused pid",
            doc: same(4242, "\"100\"", ""),
            times: Some(at(5)),
            procs: vec![(4242, Some("999"), false)],
            dead: true,
            why: "pid-reused",
            stalled: false,
        },
        Case {
            name: "same host, no token recorded",
            doc: same(4242, "null", ""),
            times: Some(at(5)),
            procs: vec![(4242, Some("999"), false)],
            dead: false,
            why: "process-alive",
            stalled: false,
        },
        Case {
            name: "same host, token unreadable, fresh",
            doc: same(4242, "\"100\"", ""),
            times: Some(at(60)),
            procs: vec![(4242, None, true)],
            dead: false,
            why: "fresh",
            stalled: false,
        },
        Case {
            name: "same host, token unreadable, stale",
            doc: same(4242, "\"100\"", ""),
            times: Some(at(901)),
            procs: vec![(4242, None, true)],
            dead: true,
            why: "stale",
            stalled: false,
        },
        Case {
            name: "same host, permission denied counts as existing",
            doc: same(4242, "null", ""),
            times: Some(at(5)),
            procs: vec![(4242, Some("1"), true)],
            dead: false,
            why: "process-alive",
            stalled: false,
        },
        Case {
            name: "same host, pid 0",
            doc: same(0, "null", ""),
            times: Some(at(5)),
            procs: vec![],
            dead: true,
            why: "process-gone",
            stalled: false,
        },
        Case {
            name: "same host, negative pid",
            doc: same(-3, "null", ""),
            times: Some(at(5)),
            procs: vec![],
            dead: true,
            why: "process-gone",
            stalled: false,
        },
        Case {
            name: "same host, kept by this very process",
            doc: same(ME as i64, "\"1\"", r#", "kept": true"#),
            times: Some(at(5)),
            procs: vec![(ME, Some("1"), false)],
            dead: true,
            why: "own-kept-lease",
            stalled: false,
        },
        Case {
            name: "same host, kept by another live process",
            doc: same(4242, "\"100\"", r#", "kept": true"#),
            times: Some(at(5)),
            procs: vec![(4242, Some("100"), false)],
            dead: false,
            why: "process-alive",
            stalled: false,
        },
        Case {
            name: "empty pid_started string is a mismatch",
            doc: same(4242, "\"\"", ""),
            times: Some(at(5)),
            procs: vec![(4242, Some("100"), false)],
            dead: true,
            why: "pid-reused",
            stalled: false,
        },
        Case {
            name: "other host 14 minutes",
            doc: other.into(),
            times: Some(at(14 * 60)),
            procs: vec![],
            dead: false,
            why: "fresh",
            stalled: true,
        },
        Case {
            name: "other host exactly 15 minutes is alive",
            doc: other.into(),
            times: Some(at(900)),
            procs: vec![],
            dead: false,
            why: "fresh",
            stalled: true,
        },
        Case {
            name: "other host 16 minutes",
            doc: other.into(),
            times: Some(at(16 * 60)),
            procs: vec![],
            dead: true,
            why: "stale",
            stalled: false,
        },
        Case {
            name: "other host fresh",
            doc: other.into(),
            times: Some(at(10)),
            procs: vec![],
            dead: false,
            why: "fresh",
            stalled: false,
        },
        Case {
            name: "empty lease young",
            doc: "".into(),
            times: Some(at(30)),
            procs: vec![],
            dead: false,
            why: "fresh",
            stalled: false,
        },
        Case {
            name: "empty lease old",
            doc: "".into(),
            times: Some(at(20 * 60)),
            procs: vec![],
            dead: true,
            why: "stale",
            stalled: false,
        },
        Case {
            name: "no stat: never dead",
            doc: other.into(),
            times: None,
            procs: vec![],
            dead: false,
            why: "no-stat",
            stalled: false,
        },
        Case {
            name: "future mtime does not keep a dead lease alive: ctime decides",
            doc: other.into(),
            times: Some(FileTimes {
                mtime: t0() + Duration::from_secs(10 * 86_400),
                ctime: t0() - Duration::from_secs(20 * 60),
            }),
            procs: vec![],
            dead: true,
            why: "stale",
            stalled: false,
        },
        Case {
            name: "disk clock set back a month: not dead by age (shown as clock-behind)",
            doc: other.into(),
            times: Some(FileTimes {
                mtime: t0() + Duration::from_secs(30 * 86_400),
                ctime: t0() + Duration::from_secs(30 * 86_400),
            }),
            procs: vec![],
            dead: false,
            why: "fresh",
            stalled: false,
        },
        Case {
            name: "far-past mtime does not make a live lease dead: ctime decides",
            doc: other.into(),
            times: Some(FileTimes { mtime: UNIX_EPOCH, ctime: t0() - Duration::from_secs(10) }),
            procs: vec![],
            dead: false,
            why: "fresh",
            stalled: false,
        },
    ];
    for c in cases {
        let procs = FakeProcs::new();
        for (pid, token, denied) in &c.procs {
            procs.put(*pid, FakeProc { token: token.map(str::to_string), state: 'S', denied: *denied });
        }
        let s = sys(procs);
        let doc = if c.doc.is_empty() { LeaseDoc::default() } else { lease(&c.doc) };
        let j = judge(&doc, c.times, &mut now, &s, true).unwrap();
        let why = serde_json::to_value(&j).unwrap()["reason"].as_str().unwrap().to_string();
        assert_eq!((j.dead, why.as_str(), j.stalled), (c.dead, c.why, c.stalled), "{}", c.name);
    }
}

#[test]
fn age_is_read_only_when_needed() {
    let procs = FakeProcs::new();
    let s = sys(procs);
    let mut calls = 0;
    let mut counting = || {
        calls += 1;
        now()
    };
    let doc = lease(&same(4242, "null", ""));
    let j = judge(&doc, Some(at(5)), &mut counting, &s, false).unwrap();
    assert!(j.dead && j.age.is_none());
    assert_eq!(calls, 0, "the same-host verdict needs no clock probe");
}

#[test]
fn damaged_pid_is_refused_not_judged() {
    let s = sys(FakeProcs::new());
    for doc in [
        same(0, "null", "").replace("\"pid\": 0", "\"pid\": \"x\""),
        same(0, "null", "").replace("\"pid\": 0", "\"pid\": 99999999999"),
    ] {
        assert!(judge(&lease(&doc), Some(at(5)), &mut now, &s, false).is_err(), "{doc}");
    }
}
