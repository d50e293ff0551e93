//! The object-store benchmark, as ratios measured in one run,
//! against S3-compatible servers on 127.0.0.1 (SeaweedFS and moto, started
//! here and stopped by their pid; `scripts/s3-env` installs them):
//!
//! * `land N`: a run's whole landing of N small files in a bucket: the
//!   lease taken (conditional create), the keys and then the upload ids saved
//!   (conditional updates), one multipart upload per file (start, one part,
//!   completion with `If-None-Match`), the done mark, the finished note, the
//!   release (conditional delete); against the floor, one plain put per file
//!   of the same files, the same number in flight (16); and against the
//!   fenced floor, the least a landing that a paused holder cannot cross
//!   needs: one multipart upload per file (start, part, complete), no lease;
//! * `lease`: acquire + one heartbeat save + release of one batch, in ms;
//! * `list L`: `leases list` over L leases under 100 tasks (a list, then a
//!   GET of every lease, 16 in flight) against the floor: the same list and
//!   GETs made with `object_store` directly.
//!
//! `cargo bench --bench store -- [--n 1000,12000] [--leases 100000] [--runs 3] [--server seaweedfs|moto|both]`
//! (`scripts/bench-store` runs it so). Without `--bench` (as `cargo test`
//! runs it) it does one tiny run on moto, or says SKIPPED without servers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use ubunye::bucket::{Acquire, Holder, Objects, Place, S3, StoreUrl, acquire, land, plan};
use ubunye::layout::TaskPath;
use ubunye::state::store::look;
use ubunye::sys::{Clock, Hook, SystemClock, Timing};
use ubunye_testkit::s3::{BUCKET, Kind, Server, servers_bin};

const IN_FLIGHT: usize = 16;

fn raw(server: &Server) -> Arc<AmazonS3> {
    Arc::new(server.client(10))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// N small files (about 60 bytes each, as a partitioned job's parts) in a
/// fresh staging folder; writing them is not timed.
fn stage(n: usize) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for i in 0..n {
        std::fs::write(d.path().join(format!("part-{i:05}.csv")), format!("id,value\n{i},{}\n", i * 7)).unwrap();
    }
    d
}

/// The floor: one plain put per file, reading each once, 16 in flight.
fn floor(rt: &tokio::runtime::Runtime, s3: &Arc<AmazonS3>, dir: &std::path::Path, n: usize, round: usize) -> Duration {
    let t = Instant::now();
    rt.block_on(async {
        futures_util::stream::iter((0..n).map(|i| {
            let s3 = s3.clone();
            let file = dir.join(format!("part-{i:05}.csv"));
            async move {
                let body = tokio::fs::read(&file).await.unwrap();
                s3.put(&Path::from(format!("floor/{round}/part-{i:05}.csv")), PutPayload::from(body)).await
            }
        }))
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    });
    t.elapsed()
}

/// The fenced floor: the least a landing that a paused holder cannot cross
/// needs, one multipart upload per file (start, one part, complete; each
/// file's three in a row, 16 files in flight), with `object_store` directly
/// and no lease at all.
fn fenced_floor(
    rt: &tokio::runtime::Runtime,
    s3: &Arc<AmazonS3>,
    dir: &std::path::Path,
    n: usize,
    round: usize,
) -> Duration {
    use object_store::multipart::MultipartStore;
    let t = Instant::now();
    rt.block_on(async {
        futures_util::stream::iter((0..n).map(|i| {
            let s3 = s3.clone();
            let file = dir.join(format!("part-{i:05}.csv"));
            async move {
                let body = tokio::fs::read(&file).await.unwrap();
                let path = Path::from(format!("fenced/{round}/part-{i:05}.csv"));
                let id = s3.create_multipart(&path).await?;
                let part = s3.put_part(&path, &id, 0, PutPayload::from(body)).await?;
                s3.complete_multipart(&path, &id, vec![part]).await
            }
        }))
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    });
    t.elapsed()
}

fn place(batch: &str) -> Place {
    Place {
        uc: StoreUrl::parse(&format!("s3://{BUCKET}/uc")).unwrap(),
        task: TaskPath::parse("bench/store/append").unwrap(),
        key: format!("{:0>16}", batch),
    }
}

/// Ours: a run's whole landing of the same files.
fn ours(objects: &Arc<S3>, dir: &std::path::Path, round: usize, timing: &Timing) -> Duration {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let run = uuid::Uuid::new_v4().to_string();
    let holder = Holder { run_id: run.clone(), host: "bench".into(), pid: 1, rerun: false, actor: None };
    let out = StoreUrl::parse(&format!("s3://{BUCKET}/lake/{round}")).unwrap();
    let files = plan("ev", dir, &out, &run).unwrap();
    let t = Instant::now();
    let Ok(Acquire::Held(lease, _)) = acquire(objects.clone(), &place(&format!("{round:x}")), &holder, clock, timing)
    else {
        panic!("the bench batch was not free")
    };
    land(&**objects, &lease, &[("ev".into(), out)], &files, &Hook::default(), timing).unwrap();
    assert!(lease.release().unwrap());
    t.elapsed()
}

fn lease_cycle(objects: &Arc<S3>, i: usize, timing: &Timing) -> Duration {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let holder =
        Holder { run_id: uuid::Uuid::new_v4().to_string(), host: "bench".into(), pid: 1, rerun: false, actor: None };
    let t = Instant::now();
    let Ok(Acquire::Held(lease, _)) = acquire(objects.clone(), &place(&format!("c{i:x}")), &holder, clock, timing)
    else {
        panic!("not free")
    };
    lease.save(|_| {}).unwrap();
    assert!(lease.release().unwrap());
    t.elapsed()
}

/// L leases (a run's lease, ~300 bytes) under 100 tasks, put 64 in flight.
fn build_leases(rt: &tokio::runtime::Runtime, s3: &Arc<AmazonS3>, l: usize) {
    rt.block_on(async {
        futures_util::stream::iter((0..l).map(|i| {
            let s3 = s3.clone();
            async move {
                let key = format!("big/.ubunye/leases/demo/pkg{:02}/task/{i:016x}.json", i % 100);
                let body = format!(
                    "{{\"run_id\": \"{}\", \"task\": \"demo/pkg{:02}/task\", \"pid\": 1, \"pid_started\": null, \"host\": \"h\", \"started_at\": \"2026-12-01T00:00:00.000000+00:00\", \"heartbeat\": 1780000000.0, \"outputs\": {{}}, \"store\": \"s3\", \"saves\": 1}}",
                    uuid::Uuid::new_v4(),
                    i % 100
                );
                s3.put(&Path::from(key), PutPayload::from(body)).await
            }
        }))
        .buffer_unordered(64)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    });
}

/// The listing floor: the same list and a GET of every object, 16 in flight.
fn list_floor(rt: &tokio::runtime::Runtime, s3: &Arc<AmazonS3>) -> (Duration, usize) {
    let t = Instant::now();
    let n = rt.block_on(async {
        let metas: Vec<_> = s3.list(Some(&Path::from("big/.ubunye/leases"))).try_collect().await.unwrap();
        let bodies: Vec<_> = futures_util::stream::iter(metas.into_iter().map(|m| {
            let s3 = s3.clone();
            async move { s3.get(&m.location).await.unwrap().bytes().await }
        }))
        .buffered(IN_FLIGHT)
        .try_collect()
        .await
        .unwrap();
        bodies.len()
    });
    (t.elapsed(), n)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench(kind: Kind, bin: &std::path::Path, ns: &[usize], leases: usize, runs: usize) {
    let server = Server::start(kind, bin);
    let objects = Arc::new(S3::from_vars(BUCKET, &server.vars()).unwrap());
    let t0 = Instant::now();
    while objects.now().is_err() || objects.put("ready", b"1".to_vec()).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the bucket took no write");
        std::thread::sleep(Duration::from_millis(300));
    }
    let s3 = raw(&server);
    let rt = runtime();
    let timing = Timing::peer();
    println!("\n{} at {}", kind.name(), server.endpoint);
    let cycles: Vec<Duration> = (0..20).map(|i| lease_cycle(&objects, i, &timing)).collect();
    println!("  lease: acquire + one heartbeat + release: {:.1} ms (median of 20)", median(cycles).as_secs_f64() * 1e3);
    let mut round = 0;
    for &n in ns {
        let dir = stage(n);
        let (mut o, mut f, mut m) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..runs {
            round += 1;
            // Turn about which side goes first.
            match i % 3 {
                0 => {
                    f.push(floor(&rt, &s3, dir.path(), n, round));
                    m.push(fenced_floor(&rt, &s3, dir.path(), n, round));
                    o.push(ours(&objects, dir.path(), round, &timing));
                }
                1 => {
                    o.push(ours(&objects, dir.path(), round, &timing));
                    f.push(floor(&rt, &s3, dir.path(), n, round));
                    m.push(fenced_floor(&rt, &s3, dir.path(), n, round));
                }
                _ => {
                    m.push(fenced_floor(&rt, &s3, dir.path(), n, round));
                    o.push(ours(&objects, dir.path(), round, &timing));
                    f.push(floor(&rt, &s3, dir.path(), n, round));
                }
            }
        }
        let (o, f, m) = (median(o), median(f), median(m));
        println!(
            "  land {n:>6} files: ours {:>7.3} s, plain puts {:>7.3} s, ratio {:.2}x; multipart floor {:>7.3} s, ratio {:.2}x (median of {runs})",
            o.as_secs_f64(),
            f.as_secs_f64(),
            o.as_secs_f64() / f.as_secs_f64(),
            m.as_secs_f64(),
            o.as_secs_f64() / m.as_secs_f64()
        );
    }
    if leases > 0 {
        let t = Instant::now();
        build_leases(&rt, &s3, leases);
        println!("  ({leases} leases put in {:.1} s)", t.elapsed().as_secs_f64());
        let uc = StoreUrl::parse(&format!("s3://{BUCKET}/big")).unwrap();
        let (mut o, mut f) = (Vec::new(), Vec::new());
        let mut seen = 0;
        for i in 0..runs {
            let mut ours_once = || {
                let t = Instant::now();
                let (_, batches) = look(&*objects, &uc, &timing).unwrap();
                seen = batches.len();
                t.elapsed()
            };
            if i % 2 == 0 {
                f.push(list_floor(&rt, &s3).0);
                o.push(ours_once());
            } else {
                o.push(ours_once());
                f.push(list_floor(&rt, &s3).0);
            }
        }
        assert_eq!(seen, leases, "the listing saw every lease");
        let (o, f) = (median(o), median(f));
        println!(
            "  list {leases:>6} leases: ours {:>7.3} s, list + GETs {:>7.3} s, ratio {:.2}x (median of {runs})",
            o.as_secs_f64(),
            f.as_secs_f64(),
            o.as_secs_f64() / f.as_secs_f64()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let is_bench = args.iter().any(|a| a == "--bench");
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let Some(bin) = servers_bin("bench store") else { return };
    let (ns, leases, runs, servers): (Vec<usize>, usize, usize, Vec<Kind>) = if is_bench {
        let ns = value("--n").unwrap_or("1000,12000".into()).split(',').map(|s| s.parse().unwrap()).collect();
        let leases = value("--leases").map_or(100_000, |v| v.parse().unwrap());
        let runs = value("--runs").map_or(3, |v| v.parse().unwrap());
        let servers = match value("--server").as_deref() {
            Some("seaweedfs") => vec![Kind::SeaweedFs],
            Some("moto") => vec![Kind::Moto],
            _ => Kind::ALL.to_vec(),
        };
        (ns, leases, runs, servers)
    } else {
        (vec![20], 50, 1, vec![Kind::Moto])
    };
    println!("object-store benchmark: {runs} run(s) each, {IN_FLIGHT} requests in flight on both sides");
    for kind in servers {
        bench(kind, &bin, &ns, leases, runs);
    }
}
