//! `ubunye top` on a synthetic use case of 100,000 batches (100 tasks of 1,000:
//! a finished note and a success record each; 1,000 of them also hold a lease,
//! half from this host with gone pids, half from another host, fresh):
//!
//! * first full frame: watch + scan + model + draw on a TestBackend (120x40),
//!   as `top` starts, three times;
//! * change -> frame: a lease written (the engine's temp file and rename) or
//!   removed, until the frame drawn after it shows the batch's new state, with
//!   notify and with poll (--interval 1s, UBUNYE_BENCH_INTERVAL_MS); a run record written and removed,
//!   with notify (filed by a read of its task);
//! * idle CPU over 30 s with no change (getrusage: every thread of the
//!   process, the 1 s re-judgement of the 1,000 leases and its frame included);
//! * peak memory (ru_maxrss).
//!
//! `cargo bench -p ubunye-tui --bench top` (the use case is generated once
//! into the target folder; UBUNYE_BENCH_BATCHES, UBUNYE_BENCH_IDLE_SECS and
//! UBUNYE_BENCH_SAMPLES change the sizes; UBUNYE_BENCH_MEMORY_DIR measures
//! the memory of one dashboard on another use case, such as
//! `benches/python/state_scan.py`'s with the peer's real run records;
//! UBUNYE_BENCH_ONLY_IDLE=1 measures the idle CPU alone,
//! UBUNYE_BENCH_ONLY_RECORDS=1 the run record -> frame alone,
//! UBUNYE_BENCH_ONLY_CHANGES=1 the lease change -> frame with notify,
//! UBUNYE_BENCH_ONLY_POLL=1 the same polling). Without
//! `--bench` (as `cargo test` runs it) it does a small smoke run.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ubunye::key::batch_key;
use ubunye::layout::lineage_root;
use ubunye::state::{ScanOptions, State};
use ubunye::sys::Sys;
use ubunye::vars::cli_variables;
use ubunye_tui::top::app::App;
use ubunye_tui::top::event::Event;
use ubunye_tui::top::model::{Id, Model, Source};
use ubunye_tui::top::runtime::Loop;
use ubunye_tui::top::watch::{Requested, Watch};

const TASKS: usize = 100;

struct Size {
    batches: usize,
    leases: usize,
    samples: usize,
    idle: Duration,
    poll_samples: usize,
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn ts(t: SystemTime) -> String {
    ubunye::timefmt::utc_z(t)
}

/// Write the use case, unless a previous run left the same one.
fn generate(uc: &Path, batches: usize, leases: usize) -> Vec<Id> {
    let marker = uc.join(format!(".generated-{batches}-{leases}"));
    let per_task = batches / TASKS;
    let ids: Vec<Id> = (0..TASKS)
        .flat_map(|t| {
            let task = format!("bench/p{}/t{t:03}", t / 10);
            (0..per_task).map(move |i| (task.clone(), i))
        })
        .map(|(task, i)| {
            let dt = format!("d{i:05}");
            let vars = cli_variables(Some(&dt), None, "DEV", &[]).unwrap();
            let key = batch_key(&task, &vars).unwrap();
            (task, key)
        })
        .collect();
    if marker.exists() {
        return ids;
    }
    let t = Instant::now();
    let _ = fs::remove_dir_all(uc);
    let host = Sys::from_env().host;
    let now = SystemTime::now();
    let then = now - Duration::from_secs(86_400);
    for (n, (task, key)) in ids.iter().enumerate() {
        let i = n % per_task;
        let dt = format!("d{i:05}");
        let dir = uc.join(".ubunye/leases").join(task);
        let rec_dir = lineage_root(uc).join(task);
        if i == 0 {
            fs::create_dir_all(&dir).unwrap();
            fs::create_dir_all(&rec_dir).unwrap();
        }
        let run = format!("{:08x}-0000-4000-8000-{:012x}", n, n);
        let note = format!(
            "{{\n  \"run_id\": \"{run}\",\n  \"task\": \"{task}\",\n  \"finished_at\": \"{}\",\n  \"outputs\": {{\n    \"events\": {{\n      \"claimed\": [\n        \"out/events/part-00000-{run}.csv\"\n      ]\n    }}\n  }}\n}}",
            ts(then)
        );
        fs::write(dir.join(format!("{key}.finished.json")), note).unwrap();
        let record = format!(
            "{{\"run_id\": \"{run}\", \"task_path\": \"{task}\", \"started_at\": \"{}\", \"ended_at\": \"{}\", \"status\": \"success\", \"error\": null, \"backend\": \"exec\", \"variables\": {{\"dt\": \"{dt}\", \"mode\": \"DEV\"}}, \"outputs\": [{{\"name\": \"events\", \"location\": \"{}\"}}]}}",
            ubunye::timefmt::iso_micros(then),
            ubunye::timefmt::iso_micros(then + Duration::from_secs(3)),
            uc.join("out/events").display()
        );
        fs::write(rec_dir.join(format!("{run}.json")), record).unwrap();
        // Every 100th batch is held by a newer run: a lease.
        if n % (batches / leases.max(1)).max(1) == 0 && n / (batches / leases.max(1)).max(1) < leases {
            let lrun = format!("{:08x}-1111-4000-8000-{:012x}", n, n);
            let (pid, h) = if n % 2 == 0 { (4_000_000 + n, host.as_str()) } else { (1234, "other|pid:[1]") };
            let lease = format!(
                "{{\"run_id\": \"{lrun}\", \"task\": \"{task}\", \"pid\": {pid}, \"pid_started\": \"1\", \"host\": \"{h}\", \"started_at\": \"{}\", \"heartbeat\": {}, \"outputs\": {{}}}}",
                ts(now),
                ubunye::timefmt::epoch_secs(now)
            );
            fs::write(dir.join(format!("{key}.json")), lease).unwrap();
        }
    }
    fs::write(&marker, "").unwrap();
    println!("generated {batches} batches ({leases} leases) in {:.1} s", t.elapsed().as_secs_f64());
    ids
}

fn cpu_and_rss() -> (Duration, u64) {
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given, which outlives the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss as u64)
}

/// Resident memory now, in KiB.
fn rss_now() -> u64 {
    status_kib("VmRSS:")
}

/// A figure of `/proc/self/status` in KiB (VmRSS, VmHWM).
fn status_kib(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn source(uc: &Path) -> Source {
    Source::disk(uc.to_path_buf(), ScanOptions::default(), Sys::from_env())
}

/// `top`'s start, timed: the first frame (watching, the dashboard up, rows
/// streaming in), and the frame that shows every batch.
struct Start {
    first: Duration,
    complete: Duration,
    rss_complete: u64,
}

/// What the frame callback looks for: a batch in a state, since when.
/// What the next frame must show: a batch in a state, or a batch whose
/// history holds (or no longer holds) a run's record.
#[derive(Clone)]
enum Want {
    State(State),
    Record(String, bool),
}

type Wanted = Arc<Mutex<Option<(Id, Want, Instant)>>>;

/// Whole reads of the use case the loop has finished (the first read and
/// each rescan).
static READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Run the dashboard's loop on a TestBackend in its own thread, started as
/// `top` starts it (watch, then read a task at a time); returns once every
/// batch is in, with the times that took.
fn start_loop(uc: &Path, mode: &str, wanted: Wanted, seen: Sender<Duration>) -> (Sender<Event>, Start) {
    let (tx, rx): (Sender<Event>, Receiver<Event>) = mpsc::channel();
    let (ready_tx, ready) = mpsc::channel();
    let (uc, loop_tx, mode) = (uc.to_path_buf(), tx.clone(), mode.to_string());
    let t0 = Instant::now();
    std::thread::spawn(move || {
        let root = fs::canonicalize(&uc).unwrap();
        let src = source(&uc);
        let lineage = lineage_root(&root);
        let every = Duration::from_millis(env_num("UBUNYE_BENCH_INTERVAL_MS", 1000) as u64);
        let watch = Watch::start(Requested::parse(&mode), every, &root, &lineage, loop_tx.clone());
        let empty = ubunye_tui::top::empty(&root, &lineage, &src.sys);
        let mut app = App::new(Model::new(src.clone(), empty), true, &watch.mode);
        app.start_loading();
        ubunye_tui::top::workers::read(&src, loop_tx.clone()).unwrap();
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let tick = loop_tx.clone();
        std::thread::spawn(move || {
            while tick.send(Event::Tick).is_ok() {
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        let mut first = None;
        let mut sent = false;
        let mut scanning = true;
        let on_frame = Box::new(move |app: &App| {
            if scanning && !app.scanning {
                READS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            scanning = app.scanning;
            let first = *first.get_or_insert_with(|| t0.elapsed());
            if !sent && app.loading.is_none() {
                sent = true;
                let _ = ready_tx.send(Start { first, complete: t0.elapsed(), rss_complete: rss_now() });
            }
            let mut w = wanted.lock().unwrap();
            if let Some((id, want, since)) = w.as_ref() {
                let shows = app.model.get(id).is_some_and(|b| match want {
                    Want::State(state) => b.state() == *state,
                    Want::Record(run, there) => b.records().any(|r| *r.run_id() == **run) == *there,
                });
                if shows {
                    let _ = seen.send(since.elapsed());
                    *w = None;
                }
            }
        });
        let l = Loop {
            term: &mut term,
            app: &mut app,
            rx,
            tx: loop_tx,
            watch: Some(watch),
            clipboard: None,
            on_frame: Some(on_frame),
        };
        let _ = l.run();
    });
    let start = ready.recv_timeout(Duration::from_secs(300)).expect("the dashboard read the use case");
    (tx, start)
}

fn quit(tx: &Sender<Event>) {
    let _ = tx.send(Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE)));
    std::thread::sleep(Duration::from_millis(300));
}

/// Write a live lease (this process, this host) for a batch, as the engine
/// writes: a temp file, then a rename.
fn write_lease(uc: &Path, id: &Id) {
    let sys = Sys::from_env();
    let dir = uc.join(".ubunye/leases").join(&id.0);
    let token = sys.own_start_token().unwrap_or_default();
    let body = format!(
        "{{\"run_id\": \"bench-{}\", \"task\": \"{}\", \"pid\": {}, \"pid_started\": \"{token}\", \"host\": \"{}\", \"started_at\": \"{}\", \"heartbeat\": {}, \"outputs\": {{}}}}",
        id.1,
        id.0,
        sys.pid,
        sys.host,
        ts(SystemTime::now()),
        ubunye::timefmt::epoch_secs(SystemTime::now())
    );
    let tmp = dir.join(format!("{}.bench.tmp", id.1));
    fs::write(&tmp, body).unwrap();
    fs::rename(&tmp, dir.join(format!("{}.json", id.1))).unwrap();
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

/// Lease written / removed, `samples` times each: the latencies.
fn change_to_frame(uc: &Path, ids: &[Id], mode: &str, samples: usize) -> Vec<Duration> {
    let wanted: Wanted = Arc::new(Mutex::new(None));
    let (seen_tx, seen) = mpsc::channel();
    let (tx, _) = start_loop(uc, mode, wanted.clone(), seen_tx);
    let mut out = Vec::new();
    // Batches that hold no lease: every 100th has one; take the ones after.
    let step = (ids.len() / samples.max(1)).max(2);
    for s in 0..samples {
        let id = &ids[(s * step + 1) % ids.len()];
        for held in [true, false] {
            let state = if held { State::Live } else { State::Finished };
            *wanted.lock().unwrap() = Some((id.clone(), Want::State(state), Instant::now()));
            if held {
                write_lease(uc, id);
            } else {
                let _ = fs::remove_file(uc.join(".ubunye/leases").join(&id.0).join(format!("{}.json", id.1)));
            }
            wait_for_frame(&seen, id, &mut out);
        }
    }
    quit(&tx);
    out
}

/// The latency the frame callback reports for the change just made to `id`
/// (said when none comes within 30 s), then a pause for the debouncer.
fn wait_for_frame(seen: &Receiver<Duration>, id: &Id, out: &mut Vec<Duration>) {
    match seen.recv_timeout(Duration::from_secs(30)) {
        Ok(d) => out.push(d),
        Err(_) => println!("  no frame showed {} {} within 30 s", id.0, id.1),
    }
    std::thread::sleep(Duration::from_millis(150));
}

/// A run record written (a rerun without a lease, still running: the batch
/// turns `interrupted`) and removed (`finished` again), `samples` times each:
/// the latencies. A record is filed by a read of its whole task, off the UI
/// thread.
fn record_to_frame(uc: &Path, ids: &[Id], samples: usize) -> Vec<Duration> {
    let wanted: Wanted = Arc::new(Mutex::new(None));
    let (seen_tx, seen) = mpsc::channel();
    let (tx, _) = start_loop(uc, "notify", wanted.clone(), seen_tx);
    let per_task = ids.len() / TASKS;
    let step = (ids.len() / samples.max(1)).max(2);
    let mut out = Vec::new();
    for s in 0..samples {
        let n = (s * step + 3) % ids.len();
        let id = &ids[n];
        let run = format!("bench-record-{s:04}");
        let path = lineage_root(uc).join(&id.0).join(format!("{run}.json"));
        for write in [true, false] {
            // A later run's record beside a finished note: the batch stays
            // finished (the note stands), its history gains the record.
            *wanted.lock().unwrap() = Some((id.clone(), Want::Record(run.clone(), write), Instant::now()));
            if write {
                let record = format!(
                    "{{\"run_id\": \"{run}\", \"task_path\": \"{}\", \"started_at\": \"{}\", \"ended_at\": null, \"status\": \"running\", \"error\": null, \"backend\": \"exec\", \"variables\": {{\"dt\": \"d{:05}\", \"mode\": \"DEV\"}}, \"outputs\": []}}",
                    id.0,
                    ubunye::timefmt::iso_micros(SystemTime::now()),
                    n % per_task
                );
                let tmp = path.with_extension("bench.tmp");
                fs::write(&tmp, record).unwrap();
                fs::rename(&tmp, &path).unwrap();
            } else {
                let _ = fs::remove_file(&path);
            }
            wait_for_frame(&seen, id, &mut out);
        }
    }
    quit(&tx);
    out
}

fn idle_cpu(uc: &Path, idle: Duration) -> f64 {
    let wanted: Wanted = Arc::new(Mutex::new(None));
    let (seen_tx, _seen) = mpsc::channel();
    let (tx, _) = start_loop(uc, "notify", wanted, seen_tx);
    // Threads of the loops before (a scan under way when they quit) end first.
    std::thread::sleep(Duration::from_secs(3));
    let (c0, _) = cpu_and_rss();
    let t0 = Instant::now();
    std::thread::sleep(idle);
    let (c1, _) = cpu_and_rss();
    let wall = t0.elapsed();
    quit(&tx);
    (c1 - c0).as_secs_f64() / wall.as_secs_f64() * 100.0
}

/// One dashboard in this process (started by [`memory`]): the first read,
/// then `rescans` whole rescans (as a poll's backstop makes them); prints its resident memory and
/// its peak.
fn memory_child(uc: &Path, rescans: usize) {
    let (wanted, (seen_tx, _seen)) = (Arc::new(Mutex::new(None)), mpsc::channel());
    let (tx, st) = start_loop(uc, "poll", wanted, seen_tx);
    let after_first = st.rss_complete;
    let until = Instant::now() + Duration::from_secs(600);
    // A poll reads only what changed: the whole rescans (a poll's backstop)
    // are asked for, one after the other.
    let mut asked = 0;
    while READS.load(std::sync::atomic::Ordering::SeqCst) < 1 + rescans && Instant::now() < until {
        let read = READS.load(std::sync::atomic::Ordering::SeqCst);
        if read > asked {
            asked = read;
            let _ = tx.send(Event::Poll);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let done = READS.load(std::sync::atomic::Ordering::SeqCst).saturating_sub(1);
    println!(
        "one top process, poll mode: resident {} MB with every row in, {} MB after {done} rescans; peak (VmHWM) {} MB",
        after_first / 1024,
        rss_now() / 1024,
        status_kib("VmHWM:") / 1024
    );
    quit(&tx);
}

/// The memory of one dashboard alone: this bench again in a process of its
/// own (the starts above share this one, and the allocator keeps what they
/// freed).
fn memory(rescans: usize) {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(std::env::args().skip(1))
        .env("UBUNYE_BENCH_MEMORY_CHILD", rescans.to_string())
        .output()
        .unwrap();
    print!(
        "{}",
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("one top"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    println!();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Run records written and removed, each until its frame: printed.
fn records(uc: &Path, ids: &[Id], samples: usize) {
    let label = format!("record -> frame, notify (filed alone, in a task of {} batches)", ids.len() / TASKS);
    spread(&label, record_to_frame(uc, ids, samples));
}

/// Leases changed, each until its frame, polling: printed.
fn polled(uc: &Path, ids: &[Id], samples: usize) {
    let label = format!("change -> frame, poll every {} ms", env_num("UBUNYE_BENCH_INTERVAL_MS", 1000));
    spread(&label, change_to_frame(uc, ids, "poll", samples));
}

/// How long the changes took to show: the median, the 95th percentile and
/// the longest.
fn spread(label: &str, mut took: Vec<Duration>) {
    println!(
        "{label}: p50 {}, p95 {}, max {} ({} changes)",
        ms(pct(&mut took, 0.5)),
        ms(pct(&mut took, 0.95)),
        ms(pct(&mut took, 1.0)),
        took.len()
    );
}

fn main() {
    let real = std::env::args().any(|a| a == "--bench");
    let size = if real {
        Size {
            batches: env_num("UBUNYE_BENCH_BATCHES", 100_000),
            leases: 1_000,
            samples: env_num("UBUNYE_BENCH_SAMPLES", 20),
            idle: Duration::from_secs(env_num("UBUNYE_BENCH_IDLE_SECS", 30) as u64),
            poll_samples: env_num("UBUNYE_BENCH_POLL_SAMPLES", 20),
        }
    } else {
        Size { batches: 2_000, leases: 20, samples: 2, idle: Duration::from_secs(1), poll_samples: 1 }
    };
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-top");
    let uc = base.join(format!("uc-{}", size.batches));
    let ids = generate(&uc, size.batches, size.leases);
    if let Some(rescans) = std::env::var("UBUNYE_BENCH_MEMORY_CHILD").ok().and_then(|v| v.parse().ok()) {
        memory_child(&std::env::var_os("UBUNYE_BENCH_MEMORY_DIR").map_or(uc, PathBuf::from), rescans);
        return;
    }

    if std::env::var_os("UBUNYE_BENCH_ONLY_POLL").is_some() {
        polled(&uc, &ids, size.poll_samples);
        return;
    }
    if std::env::var_os("UBUNYE_BENCH_ONLY_CHANGES").is_some() {
        spread("change -> frame, notify", change_to_frame(&uc, &ids, "notify", size.samples));
        return;
    }
    if std::env::var_os("UBUNYE_BENCH_ONLY_RECORDS").is_some() {
        records(&uc, &ids, size.samples);
        return;
    }
    if std::env::var_os("UBUNYE_BENCH_ONLY_IDLE").is_some() {
        let cpu = idle_cpu(&uc, size.idle);
        println!(
            "idle CPU over {} s (notify, 1 s re-judgement of {} leases, {} batches): {cpu:.2}% of one core",
            size.idle.as_secs(),
            size.leases,
            size.batches
        );
        return;
    }
    println!(
        "ubunye top on {} batches ({} leases), {} cores",
        size.batches,
        size.leases,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for i in 0..3 {
        let (wanted, (seen_tx, _seen)) = (Arc::new(Mutex::new(None)), mpsc::channel());
        let (tx, st) = start_loop(&uc, "notify", wanted, seen_tx);
        quit(&tx);
        let (_, peak) = cpu_and_rss();
        println!(
            "start #{}: first frame {} (watching, rows streaming in); every batch on screen {}; resident then {} MB (peak so far {} MB)",
            i + 1,
            ms(st.first),
            ms(st.complete),
            st.rss_complete / 1024,
            peak / 1024
        );
    }
    memory(if real { env_num("UBUNYE_BENCH_RESCANS", 3) } else { 1 });
    if std::env::var_os("UBUNYE_BENCH_ONLY_FIRST").is_some() {
        return;
    }
    spread("change -> frame, notify", change_to_frame(&uc, &ids, "notify", size.samples));
    records(&uc, &ids, size.samples);
    polled(&uc, &ids, size.poll_samples);
    let cpu = idle_cpu(&uc, size.idle);
    println!(
        "idle CPU over {} s (notify, 1 s re-judgement of {} leases): {cpu:.2}% of one core",
        size.idle.as_secs(),
        size.leases
    );
    let (_, rss) = cpu_and_rss();
    println!("peak memory (ru_maxrss): {:.0} MB", rss as f64 / 1024.0);
}
