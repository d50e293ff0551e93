//! What the object-store protocol rests on, held against real
//! S3-compatible servers on 127.0.0.1 (SeaweedFS and moto, `scripts/s3-env`),
//! through the crate the engine uses for buckets (`object_store`, feature
//! `aws`). If a server (or a new version of one) stops doing any of this, the
//! lease in a bucket is not safe on it, and this test says which promise broke:
//!
//! - a conditional create (`If-None-Match: *`) has exactly one winner among
//!   8 racers, in each of 8 rounds: how a lease is taken;
//! - a conditional update (`If-Match: <etag>`) has exactly one winner among
//!   8 racers holding the same ETag, and a stale ETag is refused: how a
//!   holder saves, and how a takeover takes a dead lease;
//! - the ETag is the content's: the same body twice gives the same ETag, so
//!   every save must change the body (the lease carries a counter);
//! - a multipart upload is invisible until completed, and once aborted its
//!   parts and its completion are refused: the fence a paused holder cannot
//!   cross with its data.

use std::sync::Arc;

use object_store::aws::AmazonS3;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{Error, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use ubunye_testkit::s3::{Kind, Server, servers_bin};

const RACERS: usize = 8;
/// Rounds per race. SeaweedFS takes 2.5-3.5 s a round when 8 conditional
/// writes meet on one key (one client, a few ms, when they do not): 8 rounds
/// keep this test near a minute. The engine's own race test
/// (tui/tests/slow/store.rs) runs 25.
const ROUNDS: usize = 8;

fn client(server: &Server) -> Arc<AmazonS3> {
    // No retries: a refusal must come back as it is, once (the engine's own
    // retries are bounded and idempotent).
    Arc::new(server.client(0))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().expect("a tokio runtime")
}

/// Wait (at most 100 tries, 30 s) until the bucket takes a write: weed makes
/// its bucket a moment after it answers.
async fn ready(s3: &AmazonS3, kind: Kind) {
    let start = std::time::Instant::now();
    for _ in 0..100 {
        if s3.put(&Path::from("probe/ready"), PutPayload::from_static(b"ready")).await.is_ok() {
            return;
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    panic!("{}: the bucket took no write within 30 s", kind.name());
}

fn is_refusal(e: &Error) -> bool {
    matches!(e, Error::AlreadyExists { .. } | Error::Precondition { .. })
}

/// Race `RACERS` puts of `key` in `mode` (each racer's body its own); how
/// many succeeded. Every loser must be refused, nothing else.
async fn race(s3: &Arc<AmazonS3>, key: &Path, mode: PutMode, kind: Kind, round: usize) -> usize {
    let mut racers = tokio::task::JoinSet::new();
    for r in 0..RACERS {
        let (s3, key, mode) = (s3.clone(), key.clone(), mode.clone());
        racers.spawn(async move {
            let body = PutPayload::from(format!("{{\"run_id\": \"racer-{r}\", \"round\": {round}}}"));
            s3.put_opts(&key, body, PutOptions::from(mode)).await
        });
    }
    let mut won = 0;
    while let Some(done) = racers.join_next().await {
        match done.expect("a racer") {
            Ok(_) => won += 1,
            Err(e) => assert!(is_refusal(&e), "{}: round {round}: a loser got {e}", kind.name()),
        }
    }
    won
}

async fn create_races(s3: Arc<AmazonS3>, kind: Kind) {
    for round in 0..ROUNDS {
        let key = Path::from(format!("leases/create/{round}.json"));
        let won = race(&s3, &key, PutMode::Create, kind, round).await;
        assert_eq!(won, 1, "{}: round {round}: {won} racers created the same lease", kind.name());
    }
}

async fn update_races(s3: Arc<AmazonS3>, kind: Kind) {
    for round in 0..ROUNDS {
        let key = Path::from(format!("leases/update/{round}.json"));
        let first = s3.put(&key, PutPayload::from(format!("{{\"save\": 0, \"round\": {round}}}"))).await.unwrap();
        let seen = UpdateVersion::from(first);
        let won = race(&s3, &key, PutMode::Update(seen.clone()), kind, round).await;
        assert_eq!(won, 1, "{}: round {round}: {won} racers updated from the same ETag", kind.name());
        // The ETag every racer held is stale now.
        let late = s3.put_opts(&key, PutPayload::from_static(b"{}"), PutOptions::from(PutMode::Update(seen))).await;
        assert!(late.as_ref().is_err_and(is_refusal), "{}: a stale ETag was taken: {late:?}", kind.name());
    }
}

async fn etag_is_the_content(s3: &AmazonS3, kind: Kind) {
    let key = Path::from("leases/etag.json");
    let a = s3.put(&key, PutPayload::from_static(b"{\"save\": 1}")).await.unwrap();
    let b = s3.put(&key, PutPayload::from_static(b"{\"save\": 2}")).await.unwrap();
    let a2 = s3.put(&key, PutPayload::from_static(b"{\"save\": 1}")).await.unwrap();
    assert!(a.e_tag.is_some(), "{}: a put gives no ETag", kind.name());
    assert_ne!(a.e_tag, b.e_tag, "{}", kind.name());
    assert_eq!(
        a.e_tag,
        a2.e_tag,
        "{}: the same body twice gave two ETags; if this changes, the lease's save counter is still right, but say so in docs",
        kind.name()
    );
    let head = s3.head(&key).await.unwrap();
    assert_eq!(head.e_tag, a2.e_tag, "{}: head gives the ETag of the last put", kind.name());
}

async fn multipart_is_a_fence(s3: &AmazonS3, kind: Kind) {
    let key = Path::from("lake/events/part-run1.parquet");
    let id = s3.create_multipart(&key).await.unwrap();
    let part = s3.put_part(&key, &id, 0, PutPayload::from(vec![7u8; 1024])).await.unwrap();
    let hidden = s3.head(&key).await;
    assert!(
        matches!(hidden, Err(Error::NotFound { .. })),
        "{}: an upload not completed is visible: {hidden:?}",
        kind.name()
    );
    let listed = s3.list_with_delimiter(Some(&Path::from("lake/events"))).await.unwrap();
    assert!(listed.objects.is_empty(), "{}: an upload not completed is listed: {:?}", kind.name(), listed.objects);
    // A takeover aborts it: the holder's later part and completion fail.
    s3.abort_multipart(&key, &id).await.unwrap();
    let late_part = s3.put_part(&key, &id, 1, PutPayload::from(vec![8u8; 1024])).await;
    assert!(late_part.is_err(), "{}: a part of an aborted upload was taken", kind.name());
    let late = s3.complete_multipart(&key, &id, vec![part]).await;
    assert!(late.is_err(), "{}: an aborted upload was completed: {late:?}", kind.name());
    let after = s3.head(&key).await;
    assert!(
        matches!(after, Err(Error::NotFound { .. })),
        "{}: an aborted upload became visible: {after:?}",
        kind.name()
    );
    // And one that is completed is visible whole, in one step.
    let id = s3.create_multipart(&key).await.unwrap();
    let part = s3.put_part(&key, &id, 0, PutPayload::from(vec![9u8; 2048])).await.unwrap();
    s3.complete_multipart(&key, &id, vec![part]).await.unwrap();
    assert_eq!(s3.head(&key).await.unwrap().size, 2048, "{}", kind.name());
}

#[test]
fn conditional_writes_and_multipart_uploads_hold_on_both_servers() {
    let Some(bin) = servers_bin("conditional_writes_and_multipart_uploads_hold_on_both_servers") else { return };
    for kind in Kind::ALL {
        let t = std::time::Instant::now();
        let server = Server::start(kind, &bin);
        let s3 = client(&server);
        let mut took = vec![("start", t.elapsed())];
        runtime().block_on(async {
            let lap = |what: &'static str, took: &mut Vec<(&'static str, std::time::Duration)>| {
                took.push((what, t.elapsed()));
            };
            ready(&s3, kind).await;
            lap("ready", &mut took);
            create_races(s3.clone(), kind).await;
            lap("create races", &mut took);
            update_races(s3.clone(), kind).await;
            lap("update races", &mut took);
            etag_is_the_content(&s3, kind).await;
            multipart_is_a_fence(&s3, kind).await;
            lap("etag, multipart", &mut took);
        });
        let pid = server.pid();
        drop(server);
        took.push(("stopped", t.elapsed()));
        let laps: Vec<String> = took.iter().map(|(w, d)| format!("{w} {:.1} s", d.as_secs_f64())).collect();
        eprintln!("{} (pid {pid}): every promise held; {}", kind.name(), laps.join(", "));
    }
}
