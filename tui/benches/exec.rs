//! The overhead of `ubunye exec` over running its command bare, as ratios
//! measured in one run:
//!
//! * `true`: the fixed overhead (lease, record, commit, release), with and
//!   without a run record;
//! * a command writing N files (1,000 and 12,000): exec lands them from its
//!   staging folder (claim all in one save, one rename and one check each); the
//!   landing time, exec minus the bare command minus the fixed overhead, is
//!   compared with the file system's floor, a bare loop renaming as many files.
//!
//! `cargo bench -p ubunye-tui --bench exec -- [--runs 15]`. Without `--bench`
//! (as `cargo test` runs it) it does one tiny smoke run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn min(v: &[Duration]) -> Duration {
    v.iter().min().copied().unwrap_or_default()
}

/// The command: write `n` small files into `dir` (or $UBUNYE_OUT_EVENTS).
fn write_files(n: usize, dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    let tag = std::process::id();
    for i in 0..n {
        fs::write(dir.join(format!("part-{i:05}-{tag}.txt")), b"x").unwrap();
    }
}

fn time(mut c: Command) -> Duration {
    let t = Instant::now();
    let st = c.status().unwrap();
    let d = t.elapsed();
    assert!(st.success(), "{c:?}");
    d
}

fn me() -> PathBuf {
    std::env::current_exe().unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--write") {
        let n: usize = args[i + 1].parse().unwrap();
        let dir =
            std::env::var_os("UBUNYE_OUT_EVENTS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(&args[i + 2]));
        write_files(n, &dir);
        return;
    }
    let bench = args.iter().any(|a| a == "--bench");
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench { 15 } else { 1 });
    let sizes: Vec<usize> = if bench { vec![1_000, 12_000] } else { vec![20] };
    let ubunye = PathBuf::from(env!("CARGO_BIN_EXE_ubunye"));
    let base = std::env::temp_dir().join(format!("ubunye-bench-exec-{}", std::process::id()));
    fs::create_dir_all(&base).unwrap();
    let uc = base.join("uc");
    fs::create_dir_all(&uc).unwrap();
    let mut k = 0u64;
    let mut exec = |extra: &[&str], cmd: &[&str]| {
        k += 1;
        let mut c = Command::new(&ubunye);
        c.args(["exec", "-q", "-d"])
            .arg(&uc)
            .args(["--task", "bench/pkg/task", "--var", &format!("n={k}")])
            .args(extra)
            .arg("--")
            .args(cmd);
        c
    };
    println!("ubunye exec overhead, {runs} run(s) each (medians; minimums in brackets)");
    // 1. `true`.
    let (mut bare, mut leased, mut unrecorded) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        bare.push(time(Command::new("true")));
        leased.push(time(exec(&[], &["true"])));
        unrecorded.push(time(exec(&["--no-lineage"], &["true"])));
    }
    let (b, l, u) = (median(bare.clone()), median(leased.clone()), median(unrecorded.clone()));
    let fixed = l.saturating_sub(b);
    println!(
        "  true:        bare {:>6.2} ms [{:.2}]  exec {:>6.2} ms [{:.2}]  exec --no-lineage {:>6.2} ms [{:.2}]  => fixed overhead {:.2} ms ({:.2} ms without a record)",
        b.as_secs_f64() * 1e3,
        min(&bare).as_secs_f64() * 1e3,
        l.as_secs_f64() * 1e3,
        min(&leased).as_secs_f64() * 1e3,
        u.as_secs_f64() * 1e3,
        min(&unrecorded).as_secs_f64() * 1e3,
        fixed.as_secs_f64() * 1e3,
        u.saturating_sub(b).as_secs_f64() * 1e3
    );
    // 2. N files: the landing phase (as exec times it, UBUNYE_EXEC_TIMINGS)
    // against a bare loop renaming as many files, staged the same way.
    for n in sizes {
        let (mut land, mut floor) = (Vec::new(), Vec::new());
        let count: usize = if n > 5_000 { runs.div_ceil(3) } else { runs };
        for r in 0..count {
            let name = format!("events=out-{n}-{r}");
            let mut c =
                exec(&["--no-lineage", "--append", &name], &[me().to_str().unwrap(), "--write", &n.to_string()]);
            c.env("UBUNYE_EXEC_TIMINGS", "1").arg("-q");
            let out = c.output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let err = String::from_utf8_lossy(&out.stderr);
            let ms: f64 = err
                .lines()
                .find_map(|l| l.strip_prefix("ubunye: timing land ")?.strip_suffix(" ms")?.parse().ok())
                .expect("a land timing");
            land.push(Duration::from_secs_f64(ms / 1e3));
            let st = base.join(format!("floor-{n}-{r}"));
            let dst = base.join(format!("floor-out-{n}-{r}"));
            write_files(n, &st);
            fs::create_dir_all(&dst).unwrap();
            let names: Vec<_> = fs::read_dir(&st).unwrap().map(|e| e.unwrap().file_name()).collect();
            // The floor renames through handles on both folders, as exec does:
            // one renameat and one fstatat per file, no path walked from the root.
            use rustix::fs::{AtFlags, Mode, OFlags};
            let open = |p: &Path| rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
            let (from, to) = (open(&st), open(&dst));
            rustix::fs::sync();
            let t = Instant::now();
            for name in &names {
                rustix::fs::renameat(&from, name.as_os_str(), &to, name.as_os_str()).unwrap();
                let _ = rustix::fs::statat(&to, "nothing-here", AtFlags::SYMLINK_NOFOLLOW);
            }
            floor.push(t.elapsed());
        }
        let (ml, mf) = (median(land.clone()), median(floor.clone()));
        println!(
            "  {n:>6} files landed: {:>7.1} ms [{:.1}]  rename floor {:>7.1} ms [{:.1}]  => {:.2}x (medians), {:.2}x (minimums)",
            ml.as_secs_f64() * 1e3,
            min(&land).as_secs_f64() * 1e3,
            mf.as_secs_f64() * 1e3,
            min(&floor).as_secs_f64() * 1e3,
            ml.as_secs_f64() / mf.as_secs_f64(),
            min(&land).as_secs_f64() / min(&floor).as_secs_f64()
        );
    }
    let _ = fs::remove_dir_all(&base);
}
