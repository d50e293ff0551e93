//! Prometheus's tools for the metrics tests: promtool and the server, from
//! Debian's `prometheus` package (.ci/run installs it), and a bounded HTTP
//! GET on 127.0.0.1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

/// A program on PATH; None, with a SKIPPED line, when it is not there; a
/// failure instead under `UBUNYE_REQUIRE_PROMETHEUS=1` (CI).
pub fn tool(name: &str) -> Option<PathBuf> {
    let found =
        std::env::var_os("PATH").iter().flat_map(std::env::split_paths).map(|d| d.join(name)).find(|p| p.is_file());
    if found.is_none() {
        if std::env::var("UBUNYE_REQUIRE_PROMETHEUS").is_ok_and(|v| v == "1") {
            panic!("UBUNYE_REQUIRE_PROMETHEUS=1 but {name} is not on PATH: apt-get install prometheus");
        }
        eprintln!("SKIPPED: {name} is not on PATH (Debian's prometheus package has it)");
    }
    found
}

/// The body of `GET path` at `addr`, or why not; at most `timeout` in all.
pub fn get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n").map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.take(64 << 20).read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no HTTP head in {text:?}"))?;
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| head.to_string())?;
    Ok((code, body.to_string()))
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The YAML block of docs/alerts.md: the alerting rules.
pub fn alert_rules() -> String {
    let doc = std::fs::read_to_string(ubunye_testkit::root().join("docs/alerts.md")).unwrap();
    let start = doc.find("```yaml\n").expect("docs/alerts.md has a ```yaml block") + "```yaml\n".len();
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len].to_string()
}
