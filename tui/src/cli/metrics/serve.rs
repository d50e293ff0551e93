//! `ubunye metrics --listen`: `/metrics` over HTTP. The use cases are read
//! on a thread of their own every `--interval` (never more often, however
//! often it is scraped); a scrape is answered with the last reading, so its
//! memory is one copy of that text.
//!
//! Every scrape is bounded: each connection has a thread of its own (a small
//! stack; at most [`MAX_OPEN`] at once, more are closed at once), answers one
//! request and closes; a request's head must come within [`HEAD_TIME`] and
//! [`HEAD_MAX`] bytes, and the answer must be taken within [`SEND_TIME`]. A
//! client that never sends, or stops reading, holds its own thread for
//! seconds, never another scrape.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::MetricsArgs;
use crate::cli::{exit, say_err};

/// How many connections are answered at once; more are closed at once.
const MAX_OPEN: usize = 128;
/// Each connection's thread's stack.
const STACK: usize = 128 * 1024;
/// The most a request's head may take, in time and in bytes.
const HEAD_TIME: Duration = Duration::from_secs(2);
const HEAD_MAX: usize = 8 * 1024;
/// The most the answer may take to be sent.
const SEND_TIME: Duration = Duration::from_secs(5);

type Latest = Arc<Mutex<Arc<String>>>;

pub fn serve(a: &MetricsArgs, addr: SocketAddr) -> i32 {
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            say_err(&format!("--listen {addr}: cannot listen there ({e}); give a free port, or stop what holds it"));
            return exit::USAGE;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    let mut gatherer = super::Gatherer::new(a);
    let latest: Latest = Arc::new(Mutex::new(Arc::new(gatherer.gather(a))));
    crate::console::print::errln(&format!(
        "ubunye metrics: serving http://{bound}/metrics, read again every {}",
        humantime::format_duration(a.interval)
    ));
    let content_type = a.format().content_type();
    std::thread::scope(|s| {
        let reader = latest.clone();
        s.spawn(move || {
            let mut last = Instant::now();
            loop {
                // At a fixed rate: the next reading starts an interval after
                // the last one started (at once when it took longer).
                std::thread::sleep(a.interval.saturating_sub(last.elapsed()));
                last = Instant::now();
                let text = Arc::new(gatherer.gather(a));
                *reader.lock().unwrap_or_else(|p| p.into_inner()) = text;
            }
        });
        let open = Arc::new(AtomicUsize::new(0));
        for conn in listener.incoming() {
            let c = match conn {
                Ok(c) => c,
                // Out of file descriptors, say: wait a little, do not spin.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            if open.load(Ordering::Relaxed) >= MAX_OPEN {
                continue;
            }
            let held = Held::take(&open);
            let latest = latest.clone();
            // A thread that cannot be made: the connection is closed.
            let _ = std::thread::Builder::new().name("metrics-http".into()).stack_size(STACK).spawn(move || {
                let _held = held;
                answer(c, &latest, content_type);
            });
        }
    });
    exit::OK
}

/// One open connection, counted while it lives.
struct Held(Arc<AtomicUsize>);

impl Held {
    fn take(open: &Arc<AtomicUsize>) -> Held {
        open.fetch_add(1, Ordering::Relaxed);
        Held(open.clone())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Read one request's head, answer it, close.
fn answer(mut c: TcpStream, latest: &Latest, content_type: &str) {
    let until = Instant::now() + HEAD_TIME;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let end = |h: &[u8]| h.windows(4).any(|w| w == b"\r\n\r\n") || h.windows(2).any(|w| w == b"\n\n");
    loop {
        // Empty lines before the request line are passed over (RFC 9112 2.2).
        let start = head.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(head.len());
        if end(&head[start..]) {
            head.drain(..start);
            break;
        }
        if head.len() > HEAD_MAX {
            return send(c, 431, "text/plain", b"the request's head is too long\n", false);
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || c.set_read_timeout(Some(left)).is_err() {
            return;
        }
        let room = (HEAD_MAX + 1 - head.len()).min(buf.len());
        match c.read(&mut buf[..room]) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    // The absolute form (`GET http://host/metrics`, through a proxy) names
    // the same path.
    let target = match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    };
    let path = target.split('?').next().unwrap_or("");
    let body_too = method != "HEAD";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let text = latest.lock().unwrap_or_else(|p| p.into_inner()).clone();
            send(c, 200, content_type, text.as_bytes(), body_too)
        }
        ("GET" | "HEAD", "/") => send(c, 200, "text/plain", b"ubunye metrics: see /metrics\n", body_too),
        ("GET" | "HEAD", _) => send(c, 404, "text/plain", b"not found: the metrics are at /metrics\n", body_too),
        _ => send(c, 405, "text/plain", b"only GET and HEAD are answered\n", true),
    }
}

/// Send the answer within [`SEND_TIME`], however slowly it is read.
fn send(mut c: TcpStream, status: u16, content_type: &str, body: &[u8], body_too: bool) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let allow = if status == 405 { "Allow: GET, HEAD\r\n" } else { "" };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    );
    let until = Instant::now() + SEND_TIME;
    let body = if body_too { body } else { &[] };
    for mut part in [head.as_bytes(), body] {
        // A write at a time, each given what is left of the time.
        while !part.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || c.set_write_timeout(Some(left)).is_err() {
                return;
            }
            match c.write(part) {
                Ok(0) | Err(_) => return,
                Ok(n) => part = &part[n..],
            }
        }
    }
    let _ = c.flush();
    let _ = c.shutdown(std::net::Shutdown::Write);
}
