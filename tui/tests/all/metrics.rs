//! `ubunye metrics`: what it counts is what `leases list` says,
//! labels stay bounded, the text passes `promtool check metrics`, the rules of
//! docs/alerts.md pass `promtool check rules`, a textfile is written whole,
//! and bad input is one line and exit 2.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::prom::{alert_rules, free_port, get, tool};
use common::*;

type Sample = (String, BTreeMap<String, String>, f64);

/// The samples of an exposition: `name{k="v",...} value`.
fn samples(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}').unwrap()),
            None => (series, ""),
        };
        let mut map = BTreeMap::new();
        for pair in labels.split("\",").filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once("=\"").unwrap();
            map.insert(k.to_string(), v.trim_end_matches('"').to_string());
        }
        out.push((name.to_string(), map, value.parse().unwrap()));
    }
    out
}

fn value(s: &[Sample], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    s.iter()
        .find(|(n, l, _)| n == name && want.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v)))
        .map(|x| x.2)
}

fn run(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(bin()).current_dir(cwd).args(args).output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap_or(-1), s(&o.stdout), s(&o.stderr))
}

fn fleet() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    for (name, at) in [("dead-killed", "a"), ("kept", "team/b"), ("rerun-pending", "team/c"), ("orphan", "d")] {
        copy_tree(&fixture_dir(name).join("uc"), &root.join(at));
    }
    (d, root)
}

#[test]
fn the_counts_are_the_listings_verdicts() {
    let (_d, root) = fleet();
    let (code, text, err) = run(&root, &["metrics", "--find", ".", "-d", "nowhere"]);
    assert_eq!(code, 0, "{err}");
    let s = samples(&text);
    for uc in ["a", "team/b", "team/c", "d"] {
        let real = std::fs::canonicalize(root.join(uc)).unwrap();
        let real = real.to_str().unwrap();
        let (_, list, _) = run(&root, &["leases", "list", "--all", "--json", "-d", uc]);
        let list: serde_json::Value = serde_json::from_str(&list).unwrap();
        let mut want: BTreeMap<(String, String), f64> = BTreeMap::new();
        for b in list["batches"].as_array().unwrap() {
            let k = (b["task"].as_str().unwrap().to_string(), b["state"].as_str().unwrap().to_string());
            *want.entry(k).or_default() += 1.0;
        }
        for ((task, state), n) in &want {
            let got = value(&s, "ubunye_batches", &[("use_case", real), ("task", task), ("state", state)]);
            assert_eq!(got, Some(*n), "{uc} {task} {state}\n{text}");
        }
        let total: f64 = s.iter().filter(|(n, l, _)| n == "ubunye_batches" && l["use_case"] == real).map(|x| x.2).sum();
        assert_eq!(total, want.values().sum::<f64>(), "{uc}: no batch counted twice, none left out");
        assert_eq!(value(&s, "ubunye_use_case_up", &[("use_case", real)]), Some(1.0));
    }
    // A use case that cannot be read is a metric (labelled as named, made
    // absolute), and the others are read.
    let nowhere = root.join("nowhere");
    let nowhere = nowhere.to_str().unwrap();
    assert_eq!(value(&s, "ubunye_use_case_up", &[("use_case", nowhere)]), Some(0.0), "{text}");
    assert_eq!(value(&s, "ubunye_scan_errors", &[("use_case", nowhere)]), Some(1.0), "{text}");
    // The fixtures judged from here (their holders' pids are not ours): the
    // orphan, the pending removal and the kept lease have their ages.
    let uc_c = std::fs::canonicalize(root.join("team/c")).unwrap();
    let (_, list_c, _) = run(&root, &["leases", "list", "--json", "-d", "team/c"]);
    if list_c.contains("\"pending\"") {
        assert!(
            value(&s, "ubunye_oldest_lease_age_seconds", &[("use_case", uc_c.to_str().unwrap()), ("state", "pending")])
                .is_some(),
            "{text}"
        );
    }
    let uc_d = std::fs::canonicalize(root.join("d")).unwrap();
    assert!(
        value(&s, "ubunye_oldest_lease_age_seconds", &[("use_case", uc_d.to_str().unwrap()), ("state", "orphan")])
            .is_some(),
        "{text}"
    );
    // Bounded labels: no key or run id unless --per-batch.
    assert!(s.iter().all(|(_, l, _)| !l.contains_key("key") && !l.contains_key("run_id")), "{text}");
    let (_, per, _) = run(&root, &["metrics", "-d", "team/b", "--per-batch"]);
    assert!(
        samples(&per).iter().any(|(n, l, _)| n == "ubunye_lease_heartbeat_age_seconds" && l.contains_key("key")),
        "{per}"
    );
    // OpenMetrics ends with # EOF; the default does not.
    let (_, om, _) = run(&root, &["metrics", "-d", "a", "--openmetrics"]);
    assert!(om.ends_with("# EOF\n") && !text.contains("# EOF"), "{om}");
}

#[test]
fn promtool_passes_the_text_and_the_rules() {
    let Some(promtool) = tool("promtool") else { return };
    let (_d, root) = fleet();
    // Names a label must escape: a quote, a backslash, a newline (unescaped,
    // one such folder would break the text of every use case).
    for odd in ["team/q\"uote", "team/back\\slash", "team/new\nline"] {
        copy_tree(&fixture_dir("kept").join("uc"), &root.join(odd));
    }
    let (_, text, _) = run(&root, &["metrics", "--find", ".", "--per-batch"]);
    let up = text.lines().filter(|l| l.starts_with("ubunye_use_case_up{") && l.ends_with(" 1")).count();
    assert_eq!(up, 7, "every use case is its own series:\n{text}");
    let mut p = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = p.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && said.trim().is_empty(), "promtool check metrics: {said}\n{text}");
    let rules = root.join("rules.yml");
    std::fs::write(&rules, alert_rules()).unwrap();
    let o = Command::new(&promtool).args(["check", "rules"]).arg(&rules).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "promtool check rules: {said}");
    assert!(said.contains("SUCCESS: 5 rules found"), "{said}");
}

#[test]
fn a_textfile_is_written_whole_and_bad_input_is_one_line() {
    let (_d, root) = fleet();
    let out = root.join("prom/ubunye.prom");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, "old\n").unwrap();
    let (code, _, err) = run(&root, &["metrics", "-d", "a", "--textfile", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (_, printed, _) = run(&root, &["metrics", "-d", "a"]);
    let written = std::fs::read_to_string(&out).unwrap();
    // The same series, and the same counts (times and ages move on from
    // one run to the next).
    let names = |t: &str| {
        samples(t)
            .into_iter()
            .map(|(n, l, v)| (if n.ends_with("_seconds") { 0.0 } else { v }, n, l))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&written), names(&printed));
    let left: Vec<_> = std::fs::read_dir(out.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["ubunye.prom"], "no temporary file is left");
    // A folder that is not there, a path that is a folder: one line, exit 2.
    for bad in [root.join("nope/x.prom"), root.join("prom")] {
        let (code, out, err) = run(&root, &["metrics", "-d", "a", "--textfile", bad.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--textfile"), "{err}");
    }
    // Listening: not on a reachable address without --listen-any; not on a
    // port in use.
    let (code, _, err) = run(&root, &["metrics", "-d", "a", "--listen", "0.0.0.0:9464"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--listen-any") && err.lines().count() == 1, "{err}");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let (code, _, err) = run(&root, &["metrics", "-d", "a", "--listen", &addr]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&addr) && err.lines().count() == 1, "{err}");
}

#[test]
fn listen_serves_metrics_and_nothing_else() {
    let (_d, root) = fleet();
    let port = free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut server = Command::new(bin())
        .current_dir(&root)
        .args(["metrics", "-d", "a", "--listen", &addr.to_string(), "--interval", "200ms"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut got = Err(String::new());
    for _ in 0..100 {
        got = get(addr, "/metrics", Duration::from_secs(2));
        if got.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let missing = get(addr, "/nothing", Duration::from_secs(2));
    server.kill().unwrap();
    server.wait().unwrap();
    let (code, body) = got.unwrap();
    assert_eq!(code, 200);
    assert!(samples(&body).iter().any(|(n, _, _)| n == "ubunye_batches"), "{body}");
    assert_eq!(missing.unwrap().0, 404);
}

/// The same series whether the use case can be read or not, so that an alert
/// sees it go to 0; and a root with no use case below it is not all clear.
#[test]
fn a_use_case_that_goes_keeps_its_label_and_an_empty_root_is_an_error() {
    let (_d, root) = fleet();
    let (_, up, _) = run(&root, &["metrics", "-d", "a", "-d", "team/b"]);
    std::fs::rename(root.join("a"), root.join("gone")).unwrap();
    let (code, down, err) = run(&root, &["metrics", "-d", "a", "-d", "team/b"]);
    assert_eq!(code, 0, "{err}");
    let a = root.join("a");
    let a = a.to_str().unwrap();
    assert_eq!(value(&samples(&up), "ubunye_use_case_up", &[("use_case", a)]), Some(1.0), "{up}");
    assert_eq!(value(&samples(&down), "ubunye_use_case_up", &[("use_case", a)]), Some(0.0), "{down}");
    // However it is typed (a trailing slash must not make a second series).
    let b = root.join("team/b");
    for typed in ["team/b/", "./team/../team/b", "team//b"] {
        let (_, text, _) = run(&root, &["metrics", "-d", typed, "-d", "a"]);
        let ups: Vec<_> = samples(&text).into_iter().filter(|(n, _, _)| n == "ubunye_use_case_up").collect();
        assert!(ups.iter().any(|(_, l, _)| l["use_case"] == b.to_str().unwrap()), "{typed}: {text}");
    }
    std::fs::create_dir_all(root.join("empty/mount")).unwrap();
    let (code, text, err) = run(&root, &["metrics", "--find", "empty"]);
    assert_eq!(code, 0, "{err}");
    let empty = root.join("empty");
    assert_eq!(value(&samples(&text), "ubunye_use_case_up", &[("use_case", empty.to_str().unwrap())]), Some(0.0));
    let (code, out, _) = run(&root, &["leases", "list", "--find", "empty", "--state", "unreadable", "--fail-if-any"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no use case within"), "{out}");
}

/// Output that cannot be written is not a success.
#[test]
fn metrics_to_a_full_disk_is_one_line_and_exit_2() {
    let (_d, root) = fleet();
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = Command::new(bin()).current_dir(&root).args(["metrics", "-d", "a"]).stdout(full).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write the metrics") && err.lines().count() == 1, "{err}");
}

/// Clients that never send, or never read what they asked for, hold a worker
/// for seconds at most and never the server (one such client would stall
/// every scrape).
#[test]
fn a_stuck_client_does_not_hold_up_a_scrape() {
    use std::io::Write;
    let (_d, root) = fleet();
    let port = free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut server = Command::new(bin())
        .current_dir(&root)
        .args(["metrics", "--find", ".", "--per-batch", "--listen", &addr.to_string(), "--interval", "1s"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut up = false;
    for _ in 0..100 {
        if get(addr, "/metrics", Duration::from_secs(2)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Forty that connect and say nothing (five times a pool of eight
    // workers); one that asks two thousand times on one connection and reads
    // nothing.
    let silent: Vec<_> = (0..40).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    let mut greedy = std::net::TcpStream::connect(addr).unwrap();
    let asks = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000);
    greedy.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = greedy.write_all(asks.as_bytes());
    let started = std::time::Instant::now();
    let got = get(addr, "/metrics", Duration::from_secs(3));
    let took = started.elapsed();
    // A head that never ends is cut off in time, and a method not answered
    // is said so.
    let slow = std::time::Instant::now();
    let mut never = std::net::TcpStream::connect(addr).unwrap();
    never.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    never.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 16];
    let closed = std::io::Read::read(&mut never, &mut buf).map(|n| n == 0).unwrap_or(false);
    let cut = slow.elapsed();
    let mut post = std::net::TcpStream::connect(addr).unwrap();
    post.write_all(b"POST /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut said = String::new();
    post.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = std::io::Read::read_to_string(&mut post, &mut said);
    // What HTTP allows besides: an empty line first, the absolute form; a
    // head past 8 KiB is refused.
    let ask = |raw: &[u8]| {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let _ = s.write_all(raw);
        let mut said = String::new();
        let _ = std::io::Read::read_to_string(&mut s, &mut said);
        said
    };
    let blank = ask(b"\r\nGET /metrics HTTP/1.1\r\n\r\n");
    let proxy = ask(b"GET http://127.0.0.1/metrics?x=1 HTTP/1.1\r\n\r\n");
    let long = ask(format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(9000)).as_bytes());
    server.kill().unwrap();
    server.wait().unwrap();
    drop(silent);
    assert!(up, "the server came up");
    assert!(blank.starts_with("HTTP/1.1 200") && proxy.starts_with("HTTP/1.1 200"), "{blank}\n{proxy}");
    assert!(long.starts_with("HTTP/1.1 431"), "{long}");
    let (code, body) = got.unwrap_or_else(|e| panic!("the scrape beside stuck clients failed after {took:?}: {e}"));
    assert_eq!(code, 200);
    assert!(body.contains("ubunye_use_case_up"), "{body}");
    assert!(took < Duration::from_secs(1), "the scrape waited {took:?}");
    assert!(closed && cut < Duration::from_secs(4), "a head that never ends: closed {closed} after {cut:?}");
    assert!(said.starts_with("HTTP/1.1 405") && said.contains("Allow: GET, HEAD"), "{said}");
}
