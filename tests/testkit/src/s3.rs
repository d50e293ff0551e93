//! S3-compatible servers for the object-store tests: SeaweedFS
//! (`weed mini`) and moto's server, started on 127.0.0.1 only, on ports
//! nothing else holds, with one bucket; stopped by their pid when dropped
//! (SIGTERM, then SIGKILL after a bounded wait). Every wait here is bounded
//! in count and time.
//!
//! The servers come from `scripts/s3-env` (a cached virtual environment):
//! `UBUNYE_S3_BIN` names the folder that holds `weed` and `moto_server`
//! (`scripts/test` sets it). Without it a test says SKIPPED on stderr and
//! passes, unless `UBUNYE_REQUIRE_S3=1` (CI), when it fails.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SeaweedFS 4.48, one `weed mini` process.
    SeaweedFs,
    /// moto's server (moto 5.2.5), one Python process.
    Moto,
}

impl Kind {
    /// Both, in the order the tests run them.
    pub const ALL: [Kind; 2] = [Kind::SeaweedFs, Kind::Moto];

    /// The server's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::SeaweedFs => "seaweedfs",
            Kind::Moto => "moto",
        }
    }
}

/// The access key both servers accept.
pub const ACCESS_KEY: &str = "ubunye-test";
/// Its secret.
pub const SECRET_KEY: &str = "ubunye-test-secret";
/// The bucket each server is started with.
pub const BUCKET: &str = "ubunye-test";

/// A running server; stopped (by its pid) when dropped.
pub struct Server {
    /// Which one.
    pub kind: Kind,
    /// `http://127.0.0.1:<port>`: its S3 endpoint.
    pub endpoint: String,
    child: Child,
    /// How it was started: to start it again on the same ports and data.
    bin: PathBuf,
    ports: Vec<u16>,
    _dir: tempfile::TempDir,
}

/// The folder of the servers' commands, or None (and a SKIPPED line) when
/// they are not set up; a panic when CI requires them.
pub fn servers_bin(test: &str) -> Option<PathBuf> {
    match std::env::var_os("UBUNYE_S3_BIN").map(PathBuf::from) {
        Some(d) if d.join("weed").is_file() && d.join("moto_server").is_file() && d.join("python").is_file() => Some(d),
        other => {
            let why = match other {
                Some(d) => format!("UBUNYE_S3_BIN={} holds no weed and moto_server", d.display()),
                None => "UBUNYE_S3_BIN is not set (scripts/test sets it up with scripts/s3-env)".into(),
            };
            if std::env::var_os("UBUNYE_REQUIRE_S3").is_some_and(|v| v == "1") {
                panic!("{test}: the S3 servers are required here (UBUNYE_REQUIRE_S3=1): {why}");
            }
            eprintln!("SKIPPED: {test}: no S3 servers: {why}");
            None
        }
    }
}

/// `n` ports on 127.0.0.1 that were free a moment ago, each with the port
/// 10,000 above it free too (SeaweedFS puts each gRPC port there).
fn free_ports(n: usize) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::new();
    let mut held = Vec::new();
    for _ in 0..500 {
        if out.len() == n {
            break;
        }
        let Ok(l) = TcpListener::bind("127.0.0.1:0") else { continue };
        let Ok(port) = l.local_addr().map(|a| a.port()) else { continue };
        if port > 55_000 || out.contains(&port) || out.contains(&(port + 10_000)) {
            continue;
        }
        if let Ok(g) = TcpListener::bind(("127.0.0.1", port + 10_000)) {
            out.push(port);
            held.push(l);
            held.push(g);
        }
    }
    assert_eq!(out.len(), n, "could not find {n} free ports on 127.0.0.1");
    out
}

impl Server {
    /// Start `kind` from the commands in `bin`, and wait (at most 60 s) until
    /// it answers S3 requests for its bucket.
    pub fn start(kind: Kind, bin: &std::path::Path) -> Server {
        let dir = tempfile::tempdir().expect("a temp folder for the server");
        let ports = match kind {
            Kind::SeaweedFs => free_ports(5),
            Kind::Moto => free_ports(1),
        };
        if kind == Kind::SeaweedFs {
            let identities = format!(
                r#"{{"identities":[{{"name":"ubunye","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            );
            std::fs::write(dir.path().join("s3.json"), identities).expect("write the identities");
            std::fs::create_dir_all(dir.path().join("data")).expect("data folder");
            std::fs::create_dir_all(dir.path().join("log")).expect("log folder");
        }
        let port = if kind == Kind::SeaweedFs { ports[3] } else { ports[0] };
        let child = spawn(command(kind, bin, dir.path(), &ports), dir.path());
        let mut server = Server {
            kind,
            endpoint: format!("http://127.0.0.1:{port}"),
            child,
            bin: bin.to_path_buf(),
            ports,
            _dir: dir,
        };
        server.wait_ready();
        server
    }

    /// SIGKILL it (a crash: nothing flushed that it had not flushed), wait
    /// for it to be gone, and return at once: the store does not answer.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start it again after [`Server::crash`], on the same ports and the
    /// same data (SeaweedFS keeps it on disk; moto's is gone), and wait until
    /// it answers.
    pub fn restart(&mut self) {
        let dir = self._dir.path().to_path_buf();
        // The killed process's sockets are left behind.
        for sock in ["s3.sock", "filer.sock"] {
            let _ = std::fs::remove_file(dir.join(sock));
        }
        let mut tries = 0;
        loop {
            tries += 1;
            self.child = spawn(command(self.kind, &self.bin, &dir, &self.ports), &dir);
            // A port the killed process held may not be free again yet.
            std::thread::sleep(Duration::from_millis(500));
            match self.child.try_wait() {
                Ok(Some(_)) if tries < 10 => continue,
                _ => break,
            }
        }
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let kind = self.kind;
        let port: u16 = self.endpoint.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let start = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited before it was ready ({status}): {}", kind.name(), self.log_tail());
            }
            // moto has no bucket until one is made; weed makes its own at
            // start, and refuses unsigned requests (the test's client then
            // waits, bounded, for the bucket).
            let ready = match kind {
                Kind::Moto => http(addr, "PUT", &format!("/{BUCKET}")).is_some_and(|c| c == 200),
                Kind::SeaweedFs => http(addr, "HEAD", &format!("/{BUCKET}")).is_some(),
            };
            if ready {
                break;
            }
            assert!(
                tries < 300 && start.elapsed() < Duration::from_secs(60),
                "{} was not ready within 60 s: {}",
                kind.name(),
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The end of what the server printed, for a failure message.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self._dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// The environment a client of this server is given (`AWS_*`, as
    /// `object_store` reads them).
    pub fn vars(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ("AWS_REGION", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// An `object_store` client of its bucket, with at most `retries`
    /// retries (0: a refusal comes back as it is, once).
    pub fn client(&self, retries: usize) -> object_store::aws::AmazonS3 {
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_bucket_name(BUCKET)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_retry(object_store::RetryConfig { max_retries: retries, ..Default::default() })
            .build()
            .expect("an S3 client for the test server")
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// The command that starts `kind` in `dir` on `ports`.
fn command(kind: Kind, bin: &std::path::Path, dir: &std::path::Path, ports: &[u16]) -> Command {
    match kind {
        Kind::SeaweedFs => {
            let (master, volume, filer, s3, admin) = (ports[0], ports[1], ports[2], ports[3], ports[4]);
            let mut c = Command::new(bin.join("weed"));
            c.arg(format!("-logdir={}", dir.join("log").display()))
                .arg("mini")
                .arg(format!("-dir={}", dir.join("data").display()))
                .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
                .arg(format!("-master.port={master}"))
                .arg(format!("-volume.port={volume}"))
                .arg(format!("-filer.port={filer}"))
                .arg(format!("-s3.port={s3}"))
                .arg(format!("-admin.port={admin}"))
                .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
                .arg(format!("-s3.config={}", dir.join("s3.json").display()))
                // Its sockets in its own folder, not left in /tmp.
                .arg(format!("-s3.localSocket={}", dir.join("s3.sock").display()))
                .arg(format!("-filer.localSocket={}", dir.join("filer.sock").display()))
                .arg(format!("-bucket={BUCKET}"))
                .args(["-admin.ui=false", "-webdav=false", "-master.telemetry=false"])
                .current_dir(dir);
            c
        }
        Kind::Moto => {
            // moto checks If-None-Match and If-Match, then writes, in two
            // steps its threads can interleave: under load two racers both
            // won a conditional create (a CI-like run, moto_races round 6).
            // S3 does each atomically; so does moto here, its requests on
            // a key taken one at a time.
            let mut c = Command::new(bin.join("python"));
            c.args(["-c", MOTO_ATOMIC, "-H", "127.0.0.1", "-p", &ports[0].to_string()]).current_dir(dir);
            c
        }
    }
}

fn spawn(mut c: Command, dir: &std::path::Path) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("server.log")).expect("server log");
    let err = log.try_clone().expect("server log");
    c.stdin(Stdio::null()).stdout(log).stderr(err).spawn().expect("start the S3 server")
}

/// One bare HTTP/1.1 request (unsigned: moto takes it, weed answers 403);
/// its status code, or None when nothing answered within 2 s.
fn http(addr: SocketAddr, method: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head).ok()?;
    let text = std::str::from_utf8(&head[..n]).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// moto's server with each request on a key handled under one lock.
const MOTO_ATOMIC: &str = "import sys, threading
from moto.s3.responses import S3Response
_lock = threading.Lock()
_key_response = S3Response._key_response
def _one_at_a_time(self, *args, **kwargs):
    with _lock:
        return _key_response(self, *args, **kwargs)
S3Response._key_response = _one_at_a_time
from moto.server import main
sys.exit(main(sys.argv[1:]))
";

impl Drop for Server {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        // weed takes about 4 s to stop on SIGTERM: wait up to 10 s, then kill.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
