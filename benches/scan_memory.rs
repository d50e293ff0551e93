//! Where the memory of a scanned use case goes, batch by batch: what `ubunye
//! top` and `ubunye doctor`'s whole-scan callers hold. It counts the bytes the
//! allocator hands out (a counting global allocator), scans the use case, then
//! drops one part of every batch after another and prints what each held.
//!
//! ```text
//! cargo build --release && python3 benches/python/state_scan.py   # builds /tmp/ubunye-bench-100k once
//! cargo bench --bench scan_memory -- --dir /tmp/ubunye-bench-100k/uc
//! ```
//!
//! Without `--dir` (as `cargo test` runs it) it scans a copy of the peer's
//! `finished` fixture and checks that the parts add up.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ubunye::state::{Batch, Scan};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only the
// sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on unchanged.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from System.alloc with this layout (we pass every call on).
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: as dealloc: `p` and `l` are the system allocator's own.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_add(new, Ordering::Relaxed);
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

type Part = (&'static str, fn(&mut Batch));

const PARTS: &[Part] = &[
    ("finished note: claimed files", |b| {
        if let Some(f) = b.finished.as_mut() {
            f.outputs = Vec::new();
        }
    }),
    ("finished note: the rest", |b| b.finished = None),
    ("records: output locations", |b| b.records.iter_mut().for_each(|r| r.locations = Vec::new())),
    ("records: paths", |b| b.records.iter_mut().for_each(|r| r.path = PathBuf::new())),
    ("records: status, times, backend, error", |b| {
        b.records
            .iter_mut()
            .for_each(|r| (r.status, r.started_at, r.ended_at, r.backend, r.error) = (None, None, None, None, None))
    }),
    ("records: the rest", |b| b.records = Vec::new()),
    ("variables", |b| b.variables = None),
    ("lease, orphans, marks, problems", |b| {
        b.lease = None;
        b.orphans = Vec::new();
        b.done_marks = Vec::new();
        b.tombstones = Vec::new();
        b.unreadable = Vec::new();
        b.temp_files = Vec::new();
        b.flags = Vec::new();
    }),
    ("note", |b| b.note = String::new()),
    ("run id", |b| b.run_id = None),
    ("task and key", |b| (b.task, b.key) = (String::new(), String::new())),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.iter().position(|a| a == "--dir").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let _keep;
    let uc = match dir {
        Some(d) => d,
        None => {
            let t = tempfile::tempdir().unwrap();
            let uc = t.path().join("uc");
            copy(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/peer/finished/uc"), &uc);
            _keep = t;
            uc
        }
    };
    let sys = ubunye::Sys::from_env();
    let before = live();
    let mut scan: Scan = ubunye::state::scan(&uc, &Default::default(), &sys).unwrap();
    let n = scan.batches.len().max(1);
    let total = live() - before;
    println!("{}: {} batches, {} bytes held, {} a batch", uc.display(), scan.batches.len(), total, total / n);
    println!("{:<42} {:>8}", "part", "bytes a batch");
    let mut last = live();
    let mut parts = 0;
    for (name, drop) in PARTS {
        scan.batches.iter_mut().for_each(drop);
        let now = live();
        parts += last.saturating_sub(now);
        println!("{name:<42} {:>8}", last.saturating_sub(now) / n);
        last = now;
    }
    let vec = scan.batches.capacity() * std::mem::size_of::<Batch>();
    println!(
        "{:<42} {:>8}",
        format!("the batch itself ({} bytes, Vec capacity)", std::mem::size_of::<Batch>()),
        vec / n
    );
    assert!(parts + vec <= total + 4096, "the parts ({parts} + {vec}) cannot hold more than the whole ({total})");
    assert!(parts > 0, "the batches hold something");
}
