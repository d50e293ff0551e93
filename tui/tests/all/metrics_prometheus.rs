//! A real Prometheus (Debian's `prometheus`, started here on 127.0.0.1 and
//! stopped by its pid) scrapes `ubunye metrics --listen` and evaluates the
//! rules of docs/alerts.md (each `for:` set to 0s, so as not to wait five
//! minutes): `UbunyeRunStalled` fires while an `ubunye exec` holder is
//! stopped with SIGSTOP, and clears once it is resumed.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common;
use common::prom::{alert_rules, free_port, get, tool};
use common::*;

/// A child killed and reaped when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(rustix::process::Pid::from_child(&self.0), rustix::process::Signal::CONT);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether Prometheus says `UbunyeRunStalled` is firing for this use case.
fn firing(prom: SocketAddr, uc: &str) -> Result<bool, String> {
    let (code, body) = get(prom, "/api/v1/alerts", Duration::from_secs(2))?;
    if code != 200 {
        return Err(format!("{code}: {body}"));
    }
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    Ok(v["data"]["alerts"].as_array().into_iter().flatten().any(|a| {
        a["labels"]["alertname"] == "UbunyeRunStalled" && a["labels"]["use_case"] == uc && a["state"] == "firing"
    }))
}

/// Wait, at most `limit`, until `ok` holds (checked every 250 ms).
fn until(limit: Duration, what: &str, mut ok: impl FnMut() -> Result<bool, String>) {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < limit {
        match ok() {
            Ok(true) => return,
            Ok(false) => last = "not yet".into(),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("{what} within {limit:?}: {last}");
}

fn stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('T'))
}

fn config(dir: &Path, target: SocketAddr) -> std::path::PathBuf {
    let rules = dir.join("rules.yml");
    let fast: String = alert_rules()
        .lines()
        .map(|l| if l.trim_start().starts_with("for:") { "        for: 0s".to_string() } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&rules, fast).unwrap();
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: ubunye\n    static_configs:\n      - targets: ['{target}']\n",
            rules.display()
        ),
    )
    .unwrap();
    cfg
}

#[test]
fn the_stalled_run_alert_fires_and_clears() {
    let Some(prometheus) = tool("prometheus") else { return };
    let (d, uc) = empty_use_case();
    let real = std::fs::canonicalize(&uc).unwrap().to_string_lossy().into_owned();
    // The holder: a real `ubunye exec` run, its heartbeat every 200 ms.
    let started = d.path().join("started");
    let holder = Command::new(bin())
        .env("UBUNYE_TEST_HEARTBEAT_EVERY", "200ms")
        .args(["exec", "-q", "-d"])
        .arg(&uc)
        .args(["--task", "demo/sales/ingest", "-dt", "2025-01-02", "--append", "events=out/events", "--"])
        .args(["sh", "-c", &format!("touch {}; sleep 120", started.display())])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let holder = Reaped(holder);
    until(Duration::from_secs(10), "the command started", || Ok(started.exists()));
    // The exporter, read every 500 ms.
    let target: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let _exporter = Reaped(
        Command::new(bin())
            .args(["metrics", "-d"])
            .arg(&uc)
            .args(["--listen", &target.to_string(), "--interval", "500ms"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let web: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let cfg = config(d.path(), target);
    let _prom = Reaped(
        Command::new(prometheus)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", d.path().join("tsdb").display()))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    until(Duration::from_secs(30), "Prometheus answered", || {
        get(web, "/-/ready", Duration::from_secs(2)).map(|r| r.0 == 200)
    });
    // A live holder: no alert.
    until(Duration::from_secs(30), "the use case was scraped", || {
        let (_, body) = get(web, "/api/v1/query?query=ubunye_use_case_up", Duration::from_secs(2))?;
        Ok(body.contains(&real) && body.contains("\"1\""))
    });
    assert!(!firing(web, &real).unwrap(), "a live holder is no alert");
    // Stopped: its heartbeat stops, its process lives. Its lease last
    // written ten minutes ago, as a long stop leaves it.
    let pid = rustix::process::Pid::from_child(&holder.0);
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    until(Duration::from_secs(10), "exec stopped", || Ok(stopped(holder.0.id())));
    let lease = uc.join(".ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json");
    set_mtime(&lease, SystemTime::now() - Duration::from_secs(600));
    until(Duration::from_secs(60), "UbunyeRunStalled fired", || firing(web, &real));
    // Resumed: its heartbeat writes the lease again, and the alert clears.
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    until(Duration::from_secs(60), "UbunyeRunStalled cleared", || firing(web, &real).map(|f| !f));
}
