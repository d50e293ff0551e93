//! `ubunye metrics --listen`: `/metrics` over HTTP. The use cases are read
//! on a thread of their own every `--interval` (never more often, however
//! often it is scraped); a scrape is answered at once with the last reading,
//! so its time and memory are one copy of that text.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::MetricsArgs;
use crate::cli::{exit, say_err};

pub fn serve(a: &MetricsArgs, addr: SocketAddr) -> i32 {
    let server = match tiny_http::Server::http(addr) {
        Ok(s) => s,
        Err(e) => {
            say_err(&format!("--listen {addr}: cannot listen there ({e}); give a free port, or stop what holds it"));
            return exit::USAGE;
        }
    };
    let bound = server.server_addr().to_ip().unwrap_or(addr);
    let latest = Arc::new(Mutex::new(Arc::new(super::gather(a))));
    crate::console::print::errln(&format!(
        "ubunye metrics: serving http://{bound}/metrics, read again every {}",
        humantime::format_duration(a.interval)
    ));
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
        let content_type = tiny_http::Header::from_bytes("Content-Type", a.format().content_type()).ok();
        for request in server.incoming_requests() {
            let path = request.url().split('?').next().unwrap_or("");
            let response = match (request.method(), path) {
                (tiny_http::Method::Get | tiny_http::Method::Head, "/metrics") => {
                    let text = latest.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    let r = tiny_http::Response::from_data(text.as_bytes().to_vec());
                    match &content_type {
                        Some(h) => r.with_header(h.clone()),
                        None => r,
                    }
                }
                (_, "/") => tiny_http::Response::from_string("ubunye metrics: see /metrics\n"),
                _ => tiny_http::Response::from_string("not found: the metrics are at /metrics\n").with_status_code(404),
            };
            let _ = request.respond(response);
        }
    });
    exit::OK
}
