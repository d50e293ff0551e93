//! The in-memory world of the object-store protocol tests: a store that
//! keeps S3's rules on a fake clock, one batch's place in it, and the runs
//! that race for it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use ubunye::bucket::{Acquire, Holder, LandError, Lease, Memory, Objects, Place, Planned, StoreUrl, acquire, plan};
use ubunye::layout::TaskPath;
use ubunye::sys::{Hook, Timing};
use ubunye_testkit::{FakeClock, fast_timing};

pub const T0: u64 = 1_780_000_000;

/// How long a landing whose request failed reads its lease again: a store
/// in memory answers at once, or fails only where a test says.
pub const OUTAGE: Duration = Duration::from_millis(300);

pub struct World {
    pub clock: Arc<FakeClock>,
    pub mem: Arc<Memory>,
    pub place: Place,
    pub timing: Timing,
}

pub fn world() -> World {
    let clock = FakeClock::at(UNIX_EPOCH + Duration::from_secs(T0));
    let mem = Arc::new(Memory::new("bkt", clock.clone()));
    // A use case runs have used: something is under its .ubunye/ (here a
    // folder marker, which nothing reads), whatever a test leaves in it.
    mem.put("uc/.ubunye/lineage/", Vec::new()).unwrap();
    let place = Place {
        uc: StoreUrl::parse("s3://bkt/uc").unwrap(),
        task: TaskPath::parse("demo/sales/ingest").unwrap(),
        key: "0123456789abcdef".into(),
    };
    // Leases written here live as long as the disk's (their `ttl_s` is the
    // 900 s timeout), so that a step of a test is the timeout's; the tests
    // of a lease's own lifetime set theirs.
    let timing = fast_timing();
    let timing = Timing { store_ttl: timing.heartbeat_timeout, ..timing };
    World { clock, mem, place, timing }
}

pub fn out() -> StoreUrl {
    StoreUrl::parse("s3://bkt/lake/ev").unwrap()
}

pub fn holder(run: &str) -> Holder {
    Holder { run_id: run.into(), host: "h".into(), pid: 1, rerun: false, actor: None }
}

impl World {
    /// The waits a landing gets: the world's, its wait for a store that
    /// stopped answering [`OUTAGE`].
    pub fn landing_timing(&self) -> Timing {
        Timing { store_outage: OUTAGE, ..self.timing }
    }
    pub fn objects(&self) -> Arc<dyn Objects> {
        self.mem.clone()
    }
    pub fn take(&self, run: &str) -> Acquire {
        acquire(self.objects(), &self.place, &holder(run), self.clock.clone(), &self.timing).expect("no store error")
    }
    pub fn held(&self, run: &str) -> Arc<Lease> {
        match self.take(run) {
            Acquire::Held(l, _) => l,
            Acquire::Refused(r) => panic!("{run} was refused: {r:?}"),
            Acquire::Recovered { recovered: r, .. } => panic!("{run} completed a dead run's commit: {r:?}"),
        }
    }
    pub fn past_timeout(&self) {
        self.clock.advance(self.timing.heartbeat_timeout + Duration::from_secs(2));
    }
    pub fn lease_body(&self) -> Option<String> {
        self.mem.get(&self.place.lease_key()).unwrap().map(|g| String::from_utf8(g.body).unwrap())
    }
    /// A staging folder with `n` files, planned into `s3://bkt/lake/ev`.
    pub fn files(&self, dir: &Path, run: &str, n: usize) -> Vec<ubunye::bucket::Planned> {
        std::fs::create_dir_all(dir).unwrap();
        for i in 0..n {
            std::fs::write(dir.join(format!("part-{i}.csv")), format!("row {i} of {run}\n")).unwrap();
        }
        plan("ev", dir, &StoreUrl::parse("s3://bkt/lake/ev").unwrap(), run).unwrap()
    }
    pub fn visible(&self) -> Vec<String> {
        self.mem.list("lake/").unwrap().into_iter().map(|l| l.key).collect()
    }
}

/// Three runs' ids (full uuids, as runs make them).
pub const A: &str = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
pub const B: &str = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
pub const C: &str = "cccccccc-cccc-4ccc-8ccc-cccccccccccc";

impl World {
    /// Run A holds the lease, with `n` files staged to land.
    pub fn landing(&self, n: usize) -> (Arc<Lease>, tempfile::TempDir, Vec<Planned>) {
        let a = self.held(A);
        let d = tempfile::tempdir().unwrap();
        let files = self.files(d.path(), A, n);
        (a, d, files)
    }
    /// Land `files` under `lease` into `s3://bkt/lake/ev`.
    pub fn land(&self, lease: &Lease, files: &[Planned]) -> Result<ubunye::bucket::Landed, LandError> {
        ubunye::bucket::land(
            &*self.mem,
            lease,
            &[("ev".into(), out())],
            files,
            &Hook::default(),
            &self.landing_timing(),
        )
    }
    /// Land `files` under `lease`, the run killed (a panic, caught) at `step`.
    pub fn killed_at(&self, lease: &Lease, files: &[Planned], step: ubunye::sys::Step) {
        let hook = Hook(Some(Arc::new(move |s| {
            if s == step {
                panic!("killed at {s:?}");
            }
        })));
        let run = std::panic::AssertUnwindSafe(|| {
            let _ =
                ubunye::bucket::land(&*self.mem, lease, &[("ev".into(), out())], files, &hook, &self.landing_timing());
        });
        assert!(std::panic::catch_unwind(run).is_err(), "the run was not killed at {step:?}");
    }
    /// The timeout passes, and run B takes the lease over: its lease and
    /// what it recovered.
    pub fn take_over(&self) -> (Arc<Lease>, ubunye::protocol::Recovery) {
        self.past_timeout();
        match self.take(B) {
            Acquire::Held(b, Some(rec)) => (b, rec),
            _ => panic!("no takeover"),
        }
    }
}

/// A run record's body as a run writes it: of `run`, saying `status`, with
/// `vars` (the batch's variables).
pub fn record_body(run: &str, status: &str, vars: &serde_json::Map<String, serde_json::Value>) -> Vec<u8> {
    use serde_json::Value;
    serde_json::json!({
        "run_id": run, "task": "demo/sales/ingest", "status": status, "backend": "exec",
        "started_at": "2026-01-01T00:00:00.000000+00:00",
        "ended_at": if status == "running" { Value::Null } else { "2026-01-01T00:01:00.000000+00:00".into() },
        "error": Value::Null, "variables": vars, "outputs": []
    })
    .to_string()
    .into_bytes()
}

impl World {
    /// Run A committed and wrote its note, then died before it released;
    /// its lease is left as it was before its done mark (left beside its
    /// note, or put back by a restore), so a taker knows it finished only
    /// by the note, which names it. Returns the note's bytes.
    pub fn noted_but_lease_not_done(&self) -> Vec<u8> {
        let (a, _d, files) = self.landing(2);
        let before_done = Arc::new(std::sync::Mutex::new(None));
        let keep = before_done.clone();
        let hook = Hook(Some(Arc::new({
            let mem = self.mem.clone();
            let key = self.place.lease_key();
            move |s| {
                if s == ubunye::sys::Step::Completed {
                    *keep.lock().unwrap() = mem.get(&key).unwrap().map(|g| g.body);
                }
            }
        })));
        ubunye::bucket::land(&*self.mem, &a, &[("ev".into(), out())], &files, &hook, &self.landing_timing()).unwrap();
        let lease = before_done.lock().unwrap().take().expect("the lease before its done mark");
        assert!(!String::from_utf8_lossy(&lease).contains("\"done\""), "not the lease before its done mark");
        self.mem.put(&self.place.lease_key(), lease).unwrap();
        self.mem.get(&self.place.note_key()).unwrap().expect("A's note").body
    }
}

impl World {
    /// Its batch, as `leases list` gives it.
    pub fn one(&self) -> ubunye::state::store::StoreBatch {
        let (_, rows) = ubunye::state::store::look(&*self.mem, &self.place.uc, &self.timing).unwrap();
        rows.into_iter().find(|b| b.key == self.place.key).expect("the batch is listed")
    }

    /// The batch `b` as `leases explain` finds and explains it (its row the
    /// list's).
    pub fn explained(&self, b: &ubunye::state::store::StoreBatch) -> ubunye::explain::Explanation {
        let (_, found) =
            ubunye::explain::store::find(&*self.mem, &self.place.uc, &b.key, Some(&b.task), &self.timing).unwrap();
        let ubunye::explain::store::Found::One(row, read) = found else { panic!("{} is not found", b.key) };
        assert_eq!(&row, b, "explain's row is the list's");
        ubunye::explain::store::explain(&*self.mem, &self.place.uc, &row, &read, &self.timing).unwrap()
    }
}
