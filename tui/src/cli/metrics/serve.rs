//! `ubunye metrics --listen`: `/metrics` over HTTP. The use cases are read
//! on a thread of their own every `--interval` (never more often, however
//! often it is scraped); a scrape is answered with the last reading, so its
//! memory is one copy of that text.
//!
//! Every scrape is bounded: a few workers answer one request per connection
//! (then close it), a request's head must come within [`HEAD_TIME`] and
//! [`HEAD_MAX`] bytes, and the answer must be taken within [`SEND_TIME`];
//! connections beyond what the workers and a short queue hold are closed at
//! once. A client that stops reading, or never sends, holds one worker for
//! seconds, never the server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::MetricsArgs;
use crate::cli::{exit, say_err};

/// How many connections are answered at once, and how many more wait.
const WORKERS: usize = 8;
const QUEUE: usize = 32;
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
    let latest: Latest = Arc::new(Mutex::new(Arc::new(super::gather(a))));
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
                let text = Arc::new(super::gather(a));
                *reader.lock().unwrap_or_else(|p| p.into_inner()) = text;
            }
        });
        let (tx, rx) = sync_channel::<TcpStream>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..WORKERS {
            let (rx, latest) = (rx.clone(), latest.clone());
            s.spawn(move || work(&rx, &latest, content_type));
        }
        for conn in listener.incoming() {
            match conn {
                // More than the workers and the queue hold: closed at once.
                Ok(c) => {
                    if let Err(TrySendError::Disconnected(_)) = tx.try_send(c) {
                        return;
                    }
                }
                // Out of file descriptors, say: wait a little, do not spin.
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    });
    exit::OK
}

fn work(rx: &Mutex<Receiver<TcpStream>>, latest: &Latest, content_type: &str) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        match next {
            Ok(c) => answer(c, latest, content_type),
            Err(_) => return,
        }
    }
}

/// Read one request's head, answer it, close.
fn answer(mut c: TcpStream, latest: &Latest, content_type: &str) {
    let until = Instant::now() + HEAD_TIME;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let end = |h: &[u8]| h.windows(4).any(|w| w == b"\r\n\r\n") || h.windows(2).any(|w| w == b"\n\n");
    while !end(&head) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || c.set_read_timeout(Some(left)).is_err() {
            return;
        }
        if head.len() > HEAD_MAX {
            return send(c, 431, "text/plain", b"the request's head is too long\n", false);
        }
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
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
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
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
