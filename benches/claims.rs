//! The claimed-append benchmark, as ratios measured in one run:
//!
//! * `claim_all`: acquire -> writing -> staging -> claim_all(N) -> N x (rename +
//!   landed) -> all_landed -> commit -> release, for N small files already in the
//!   staging folder (writing them is not timed);
//! * `per-file`: the same with one claim() per file before its rename;
//!
//! each against the file system's floor, a bare loop of N renames plus one stat
//! each over the same number of files in the same folder layout, and against the
//! real peer (ubunye-engine 0.8.0, driven by benches/python/peer_claims.py) when
//! `UBUNYE_PEER_PYTHON` names its interpreter. Medians of `--runs` runs, runs
//! interleaved so that both sides see the same machine state.
//!
//! `cargo bench --bench claims -- [--n 12000] [--per-file-n 3000] [--runs 5] [--dir D]`
//! Without `--bench` (as `cargo test` runs it) it does one tiny smoke run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ubunye::layout::TaskPath;
use ubunye::vars::cli_variables;
use ubunye::{LeaseSpec, RunLease, Sys};

/// Trees of finished runs, removed after all runs: removing thousands of files
/// between runs makes the next runs' file creations slow on ext4 (the inode
/// allocator skips recently freed inodes), which would be noise, not the engine.
static GARBAGE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn stage(base: &Path, n: usize) -> (PathBuf, PathBuf, Vec<String>) {
    let root = base.join(format!("uc-{}", ubunye::fsx::hex12()));
    let out = root.join("out/events");
    let staging = out.join(format!("_ubunye-{}", ubunye::fsx::hex12()));
    fs::create_dir_all(&staging).unwrap();
    let job = uuid::Uuid::new_v4();
    let names: Vec<String> = (0..n).map(|i| format!("part-{i:05}-{job}-c000.snappy.parquet")).collect();
    for name in &names {
        fs::write(staging.join(name), b"PAR1\x00\x00PAR1").unwrap();
    }
    // Flush what staging dirtied, so that writeback does not land in a timed loop.
    rustix::fs::sync();
    (root, staging, names)
}

fn spec(root: &Path) -> LeaseSpec {
    LeaseSpec::new(
        root,
        TaskPath::parse("bench/pkg/append").unwrap(),
        cli_variables(Some("2025-01-01"), None, "DEV", &[]).unwrap(),
        uuid::Uuid::new_v4().to_string(),
    )
}

/// The file system's floor: N renames, one stat each.
fn floor(base: &Path, n: usize) -> Duration {
    let (root, staging, names) = stage(base, n);
    let out = staging.parent().unwrap().to_path_buf();
    let probe = out.join("nothing-here");
    let t = Instant::now();
    for name in &names {
        fs::rename(staging.join(name), out.join(name)).unwrap();
        let _ = fs::symlink_metadata(&probe);
    }
    let d = t.elapsed();
    GARBAGE.lock().unwrap().push(root);
    d
}

fn ours(base: &Path, n: usize, per_file: bool) -> Duration {
    let (root, staging, names) = stage(base, n);
    let out = staging.parent().unwrap().to_path_buf();
    let targets: Vec<PathBuf> = names.iter().map(|n| out.join(n)).collect();
    let phases = std::env::var_os("UBUNYE_BENCH_PHASES").is_some();
    let mut marks = vec![("start", Instant::now())];
    let (lease, _) = RunLease::acquire(spec(&root), Sys::from_env()).unwrap();
    lease.writing("events", true, true).unwrap();
    marks.push(("acquire+writing", Instant::now()));
    if per_file {
        for (name, target) in names.iter().zip(&targets) {
            lease.claim("events", target).unwrap();
            fs::rename(staging.join(name), target).unwrap();
            lease.landed(target).unwrap();
        }
        marks.push(("claim+move+landed", Instant::now()));
    } else {
        lease.staging("events", &staging).unwrap();
        marks.push(("staging", Instant::now()));
        lease.claim_all("events", &targets).unwrap();
        marks.push(("claim_all", Instant::now()));
        for (name, target) in names.iter().zip(&targets) {
            fs::rename(staging.join(name), target).unwrap();
            lease.landed(target).unwrap();
        }
        marks.push(("move+landed", Instant::now()));
    }
    lease.all_landed(&targets).unwrap();
    fs::remove_dir(&staging).unwrap();
    marks.push(("all_landed", Instant::now()));
    lease.end(true).unwrap();
    marks.push(("commit+release", Instant::now()));
    let d = marks[marks.len() - 1].1 - marks[0].1;
    if phases {
        let parts: Vec<String> =
            marks.windows(2).map(|w| format!("{} {:.1}ms", w[1].0, (w[1].1 - w[0].1).as_secs_f64() * 1e3)).collect();
        eprintln!("  {}", parts.join(", "));
    }
    let landed = fs::read_dir(&out)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("part-"))
        .count();
    assert_eq!(landed, n);
    GARBAGE.lock().unwrap().push(root);
    d
}

fn peer(python: &str, base: &Path, n: usize, runs: usize, per_file: bool) -> Option<Vec<Duration>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/python/peer_claims.py");
    let out = Command::new(python)
        .arg(script)
        .arg(base)
        .arg(n.to_string())
        .arg(runs.to_string())
        .arg(if per_file { "1" } else { "0" })
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(v["totals_s"].as_array()?.iter().filter_map(|x| x.as_f64()).map(Duration::from_secs_f64).collect())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let get = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (n, per_n, runs) =
        if bench { (get("--n", 12_000), get("--per-file-n", 3_000), get("--runs", 5)) } else { (50, 20, 1) };
    let base = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ubunye-bench"));
    fs::create_dir_all(&base).unwrap();
    let python = std::env::var("UBUNYE_PEER_PYTHON").ok().filter(|_| bench);
    println!("claimed-append benchmark: {runs} run(s) each, in {}", base.display());
    for (label, count, per_file) in [("claim_all", n, false), ("per-file claim", per_n, true)] {
        let (mut o, mut f) = (Vec::new(), Vec::new());
        for i in 0..runs {
            // Alternate which side goes first: the file system's state drifts.
            if i % 2 == 0 {
                f.push(floor(&base, count));
                o.push(ours(&base, count, per_file));
            } else {
                o.push(ours(&base, count, per_file));
                f.push(floor(&base, count));
            }
        }
        let mut per_run: Vec<f64> = o.iter().zip(&f).map(|(a, b)| a.as_secs_f64() / b.as_secs_f64()).collect();
        per_run.sort_by(f64::total_cmp);
        let (lo, lf) = (o.iter().min().copied().unwrap_or_default(), f.iter().min().copied().unwrap_or_default());
        let (mo, mf) = (median(o), median(f));
        // The minimum is the least disturbed run of each side (a VM's disk and
        // neighbours add up to ±30% to single runs); the medians are shown too.
        print!(
            "{label:>15} N={count:>6}: ubunye-rs min {:>6.3}s median {:>6.3}s | floor min {:>6.3}s median {:>6.3}s | ratio of minimums {:>4.2}x, of medians {:>4.2}x",
            lo.as_secs_f64(),
            mo.as_secs_f64(),
            lf.as_secs_f64(),
            mf.as_secs_f64(),
            lo.as_secs_f64() / lf.as_secs_f64(),
            mo.as_secs_f64() / mf.as_secs_f64(),
        );
        let _ = per_run;
        match python.as_deref().and_then(|py| peer(py, &base, count, runs, per_file)) {
            Some(p) => {
                let lp = p.iter().min().copied().unwrap_or_default();
                let mp = median(p);
                println!(
                    " | peer min {:>6.3}s median {:>6.3}s | peer/ubunye-rs {:>5.1}x (minimums), {:>5.1}x (medians)",
                    lp.as_secs_f64(),
                    mp.as_secs_f64(),
                    lp.as_secs_f64() / lo.as_secs_f64(),
                    mp.as_secs_f64() / mo.as_secs_f64()
                );
            }
            None => println!(" | peer: not measured (set UBUNYE_PEER_PYTHON)"),
        }
        for root in GARBAGE.lock().unwrap().drain(..) {
            let _ = fs::remove_dir_all(root);
        }
    }
}
