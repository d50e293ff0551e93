//! Every lease and orphan in the peer's fixtures judged exactly as FORMAT.md §6
//! says the peer would, with mtimes restored from each MANIFEST.json and the host
//! pinned through the injected trait: once as the capture host (the same-host pid
//! rule; the recorded pids are gone, except the live fixture's, which the fake
//! process table keeps alive), once as another host (the 900 s age rule, at the
//! capture time and 16 minutes later).

use crate::common;

use std::fs;
use std::time::Duration;

use common::*;
use ubunye::documents::{LeaseDoc, parse_doc};
use ubunye::layout::{Entry, classify};
use ubunye::liveness::{FileTimes, judge};

#[test]
fn every_lease_and_orphan_is_judged_as_the_peer_would() {
    let mut leases_seen = 0;
    let mut orphans_seen = 0;
    for name in FIXTURES {
        let (_d, uc, m) = fixture(name);
        let dir = uc.join(".ubunye/leases/demo/sales");
        for f in files(&dir) {
            let path = dir.join(&f);
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let entry = classify(&file);
            let doc = LeaseDoc::from_parsed(parse_doc(&fs::read(&path).unwrap()).unwrap());
            match entry {
                Entry::Dead { .. } => {
                    // An orphan is never judged: its claims are taken back by
                    // whoever holds the batch next (§7.2).
                    orphans_seen += 1;
                    assert!(doc.claim_count() > 0, "{name}/{f}: the orphan lists the dead run's claims");
                }
                Entry::Lease { .. } => {
                    leases_seen += 1;
                    let rel = format!(".ubunye/leases/demo/sales/{f}");
                    let mtime = m.mtime(&rel);
                    let times = Some(FileTimes { mtime, ctime: mtime });
                    let manifest = m.json["leases"].as_array().unwrap().iter().find(|l| l["path"] == rel).unwrap();
                    let pid = manifest["pid"].as_i64().unwrap() as i32;
                    // Same host: dead unless its process runs. The live fixture's
                    // process ran at capture: keep it running, same start token.
                    let (sys, _, procs) = fake_sys(FIXTURE_HOST, m.captured_at());
                    let alive_at_capture = manifest["pid_alive_at_capture"].as_bool().unwrap();
                    if alive_at_capture {
                        procs.add(pid, manifest["pid_started"].as_str());
                    }
                    let now = || ubunye::sys::Now { time: m.captured_at(), source: ubunye::sys::ClockSource::Disk };
                    let j = judge(&doc, times, &mut { now }, &sys, true).unwrap();
                    assert!(j.same_host, "{name}/{f}");
                    assert_eq!(j.dead, !alive_at_capture, "{name}/{f}: same host, pid {pid}");
                    // The same process, reused by another (a different start token): dead.
                    if alive_at_capture {
                        procs.add(pid, Some("1"));
                        assert!(judge(&doc, times, &mut { now }, &sys, false).unwrap().dead, "{name}/{f}: reused pid");
                    }
                    // Another host: by age only.
                    let (sys, _, _) = fake_sys(ELSEWHERE, m.captured_at());
                    let age = m.captured_at().duration_since(mtime).unwrap();
                    let j = judge(&doc, times, &mut { now }, &sys, true).unwrap();
                    assert!(!j.same_host);
                    assert_eq!(
                        j.dead,
                        age > Duration::from_secs(900),
                        "{name}/{f}: another host at capture (age {age:?})"
                    );
                    let later = m.captured_at() + Duration::from_secs(16 * 60);
                    let j = judge(
                        &doc,
                        times,
                        &mut || ubunye::sys::Now { time: later, source: ubunye::sys::ClockSource::Disk },
                        &sys,
                        false,
                    )
                    .unwrap();
                    assert!(j.dead, "{name}/{f}: another host, 16 minutes after capture");
                    let almost = mtime + Duration::from_secs(900);
                    let j = judge(
                        &doc,
                        times,
                        &mut || ubunye::sys::Now { time: almost, source: ubunye::sys::ClockSource::Disk },
                        &sys,
                        false,
                    )
                    .unwrap();
                    assert!(!j.dead, "{name}/{f}: exactly 900 s is not dead (strictly greater)");
                }
                _ => {}
            }
        }
    }
    // live, dead-killed, taken-over, takeover-refused-in-use, dead-before-commit,
    // rerun-pending, rerun-pending-kept, kept, dead-spark-staged hold a lease;
    // orphan holds the one orphan.
    assert_eq!((leases_seen, orphans_seen), (9, 1));
}
