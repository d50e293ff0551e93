//! Same repairs as the peer: this engine's run over each captured dead state
//! leaves the same files, and the same JSON fields up to run ids and times, as
//! the real ubunye-engine 0.8.0 left in the matching `*-recovered` fixture.

use crate::common;

use common::*;
use ubunye::RefusalKind;

fn peer_file_name() -> String {
    format!("part-00000-{}-c000.snappy.parquet", uuid::Uuid::new_v4())
}

/// Run this engine over `dead` as the peer's next `ubunye run` did, and compare
/// with `recovered`.
fn same_as_peer(dead: &str, recovered: &str, dt: &str, expect: Option<RefusalKind>) {
    let (_d, uc, m) = fixture(dead);
    let before = record_ids(&uc);
    let (sys, _, _) = fake_sys(FIXTURE_HOST, m.captured_at());
    let name = peer_file_name();
    let result = append_run_per_file(&uc, sys, dt, false, &[(name.as_str(), "data")]);
    match (&result, expect) {
        (Ok(_), None) => {}
        (Err(e), Some(k)) => assert_eq!(e.kind(), Some(k), "{dead}: {e}"),
        (r, want) => {
            panic!("{dead}: got {:?}, wanted refusal {want:?}", r.as_ref().map(|_| ()).map_err(|e| e.to_string()))
        }
    }
    let (_p, peer_uc, _) = fixture(recovered);
    // Records are compared only for runs that existed before (the taker's own
    // record is the run's business, not the repair's).
    let tops = [".ubunye", "out"];
    same_snapshot(
        &snapshot(&uc, &tops, &before),
        &snapshot(&peer_uc, &tops, &before),
        &format!("{dead} -> {recovered}"),
    );
}

#[test]
fn dead_killed_is_taken_over_as_the_peer_did() {
    same_as_peer("dead-killed", "taken-over-done", "2025-01-02", None);
}

#[test]
fn orphan_is_adopted_as_the_peer_did() {
    same_as_peer("orphan", "orphan-adopted", "2025-01-02", None);
}

#[test]
fn rerun_pending_is_finished_as_the_peer_did() {
    same_as_peer("rerun-pending", "rerun-pending-recovered", "2025-01-01", Some(RefusalKind::Finished));
}

#[test]
fn kept_is_recovered_as_the_peer_did() {
    same_as_peer("kept", "kept-recovered", "2025-01-02", None);
}

#[test]
fn dead_before_commit_is_finished_as_the_peer_did() {
    same_as_peer("dead-before-commit", "dead-before-commit-recovered", "2025-01-02", Some(RefusalKind::Finished));
}

#[test]
fn dead_spark_staged_is_taken_over_as_the_peer_did() {
    same_as_peer("dead-spark-staged", "dead-spark-staged-taken-over", "2025-01-03", None);
}
