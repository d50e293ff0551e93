//! The command's log: what it writes on stdout and stderr goes where it
//! always went (exec's own stdout and stderr) and also, as it arrives, into
//! `<lineage>/<task>/<run>.log` beside the run record, outside every output.
//! A paged engineer reads it with `ubunye runs show` and the dashboard.
//!
//! Bounded: past `max` bytes the log is rotated (`<run>.log` renamed to
//! `<run>.log.1`, one older generation kept) and begun again. A write that
//! fails never fails the run: the log stops, and the failure is said once.
//!
//! Only for a command with no terminal (a scheduler, cron, a service): one
//! started from a terminal writes to it directly, as any command does, since
//! a pipe in between would change how it buffers and whether it colours.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Where the log goes and how large it may grow.
#[derive(Clone, Debug)]
pub struct LogSpec {
    /// `<lineage>/<task>/<run>.log`.
    pub path: PathBuf,
    /// Rotated past this many bytes.
    pub max: u64,
    /// Values written as `***` in the log, as the run record masks them:
    /// those of the batch's variables whose names look secret. A value cut
    /// by the boundary of two reads of the pipe is not seen.
    pub secrets: Vec<String>,
}

/// The log of one run, shared by the two streams' readers. Made at the
/// first byte: a command that says nothing leaves no log.
struct Log {
    spec: LogSpec,
    file: Option<File>,
    /// Whether it was opened (or tried to be).
    opened: bool,
    size: u64,
    /// The first write that failed, said once when the run ends.
    failed: Option<String>,
}

impl Log {
    fn open(spec: LogSpec) -> Log {
        Log { spec, file: None, opened: false, size: 0, failed: None }
    }

    fn make(&mut self) {
        self.opened = true;
        let path = &self.spec.path;
        let opened = path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| OpenOptions::new().create(true).append(true).open(path));
        match opened {
            Ok(f) => {
                self.size = f.metadata().map(|m| m.len()).unwrap_or(0);
                self.file = Some(f);
            }
            Err(e) => self.failed = Some(format!("{}: {e}", path.display())),
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if !self.opened {
            self.make();
        }
        let masked;
        let mut bytes = match mask(bytes, &self.spec.secrets) {
            Some(m) => {
                masked = m;
                &masked[..]
            }
            None => bytes,
        };
        // Never past the bound: what does not fit goes into the next log.
        while !bytes.is_empty() {
            if self.file.is_none() {
                return;
            }
            let room = self.spec.max.saturating_sub(self.size);
            if room == 0 {
                self.rotate();
                continue;
            }
            let (now, rest) = bytes.split_at(bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX)));
            let Some(f) = self.file.as_mut() else { return };
            match f.write_all(now) {
                Ok(()) => self.size += now.len() as u64,
                Err(e) => {
                    self.failed.get_or_insert_with(|| format!("{}: {e}", self.spec.path.display()));
                    self.file = None;
                }
            }
            bytes = rest;
        }
    }

    /// `<run>.log` becomes `<run>.log.1` (the older one dropped), and a new
    /// log is begun.
    fn rotate(&mut self) {
        self.file = None;
        let old = rotated(&self.spec.path);
        let renamed = std::fs::rename(&self.spec.path, &old);
        let reopened =
            renamed.and_then(|()| OpenOptions::new().create(true).write(true).truncate(true).open(&self.spec.path));
        match reopened {
            Ok(f) => {
                self.file = Some(f);
                self.size = 0;
            }
            Err(e) => {
                self.failed.get_or_insert_with(|| format!("{}: {e}", self.spec.path.display()));
            }
        }
    }
}

/// `bytes` with each secret written as `***`; None when none is in it.
fn mask(bytes: &[u8], secrets: &[String]) -> Option<Vec<u8>> {
    let secrets: Vec<&[u8]> = secrets.iter().map(|s| s.as_bytes()).filter(|s| !s.is_empty()).collect();
    if !secrets.iter().any(|s| bytes.windows(s.len()).any(|w| w == *s)) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    'scan: while at < bytes.len() {
        for s in &secrets {
            if bytes[at..].starts_with(s) {
                out.extend_from_slice(crate::secrets::REDACTED.as_bytes());
                at += s.len();
                continue 'scan;
            }
        }
        out.push(bytes[at]);
        at += 1;
    }
    Some(out)
}

/// The last `n` lines of a log, those of its older generation
/// (`<run>.log.1`) first when the log holds fewer (it was just rotated);
/// None when there is neither. Control characters are shown as `�` (a log
/// is not to drive the terminal).
pub fn tail(path: &Path, n: usize) -> Option<Vec<String>> {
    let newer = tail_of(path, n);
    let have = newer.as_ref().map_or(0, Vec::len);
    if have >= n {
        return newer;
    }
    match tail_of(&rotated(path), n - have) {
        Some(mut older) => {
            older.extend(newer.unwrap_or_default());
            Some(older)
        }
        None => newer,
    }
}

/// The last `n` lines of one file, its last 256 KiB read at most (a line
/// cut by where the read began is left out); None when it is not there.
fn tail_of(path: &Path, n: usize) -> Option<Vec<String>> {
    use std::io::{Seek, SeekFrom};
    const TAIL_BYTES: u64 = 256 * 1024;
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut bytes = Vec::new();
    f.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    let start = lines.len().saturating_sub(n);
    Some(
        lines[start..]
            .iter()
            .map(|l| l.chars().map(|c| if c.is_control() && c != '\t' { '\u{fffd}' } else { c }).collect())
            .collect(),
    )
}

/// The older generation of a log: `<run>.log.1`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(".1");
    PathBuf::from(p)
}

/// The readers of the command's two pipes.
pub struct Tee {
    log: Arc<Mutex<Log>>,
    readers: Vec<JoinHandle<()>>,
}

impl Tee {
    /// Copy `out` to this process's stdout and `err` to its stderr, each
    /// also into the log, until each pipe is closed.
    pub fn start(
        spec: LogSpec,
        out: Option<impl Read + Send + 'static>,
        err: Option<impl Read + Send + 'static>,
    ) -> Tee {
        let log = Arc::new(Mutex::new(Log::open(spec)));
        let mut readers = Vec::new();
        if let Some(out) = out {
            let log = log.clone();
            readers.push(std::thread::spawn(move || copy(out, std::io::stdout(), &log)));
        }
        if let Some(err) = err {
            let log = log.clone();
            readers.push(std::thread::spawn(move || copy(err, std::io::stderr(), &log)));
        }
        Tee { log, readers }
    }

    /// Wait for both pipes to close, at most `wait` (a process the command
    /// left that could not be stopped may hold one open): the write that
    /// failed, if one did.
    pub fn finish(self, wait: std::time::Duration) -> Option<String> {
        let until = std::time::Instant::now() + wait;
        for r in self.readers {
            while !r.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = log.file.as_mut() {
            let _ = f.flush();
        }
        log.failed.clone()
    }
}

/// Copy one pipe to where it always went and into the log. A reader that
/// went away (exec's stdout closed) does not stop the copy: the log and the
/// command still get everything.
fn copy(mut from: impl Read, mut to: impl Write, log: &Mutex<Log>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let _ = to.write_all(&buf[..n]).and_then(|()| to.flush());
        log.lock().unwrap_or_else(|e| e.into_inner()).write(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_rotated_past_its_bound_and_keeps_one_older_generation() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t/run.log");
        let mut log = Log::open(LogSpec { path: path.clone(), max: 10, secrets: vec!["hunter2".into()] });
        for chunk in [&b"12345\n"[..], b"67890\n", b"abcde\n", b"fghij\n"] {
            log.write(chunk);
        }
        // Never past 10 bytes, one older generation kept.
        assert_eq!(std::fs::read(&path).unwrap(), b"hij\n");
        assert_eq!(std::fs::read(rotated(&path)).unwrap(), b"0\nabcde\nfg");
        assert!(log.failed.is_none());
        // A chunk larger than the bound is spread over logs, none larger.
        log.write(&[b'x'; 25]);
        assert!(std::fs::metadata(&path).unwrap().len() <= 10);
        // A secret variable's value is masked.
        let path = d.path().join("t/masked.log");
        let mut log = Log::open(LogSpec { path: path.clone(), max: 1 << 20, secrets: vec!["hunter2".into()] });
        log.write(b"token=hunter2 ok\n");
        assert_eq!(std::fs::read(&path).unwrap(), b"token=*** ok\n");
    }

    #[test]
    fn a_tail_just_after_a_rotation_reads_on_into_the_older_generation() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("run.log");
        assert_eq!(tail(&path, 3), None);
        std::fs::write(rotated(&path), "a\nb\nc\nd\n").unwrap();
        // Rotated, the new log not made yet: the older one's end.
        assert_eq!(tail(&path, 2).unwrap(), ["c", "d"]);
        std::fs::write(&path, "e\n").unwrap();
        assert_eq!(tail(&path, 3).unwrap(), ["c", "d", "e"]);
        assert_eq!(tail(&path, 1).unwrap(), ["e"]);
    }

    #[test]
    fn a_log_that_cannot_be_written_says_so_once_and_the_copy_goes_on() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("file"), "").unwrap();
        let spec = LogSpec { path: d.path().join("file/run.log"), max: 1 << 20, secrets: Vec::new() };
        let tee = Tee::start(spec, Some(&b"out\n"[..]), Some(&b"err\n"[..]));
        let failed = tee.finish(std::time::Duration::from_secs(5));
        assert!(failed.is_some_and(|f| f.contains("run.log")));
    }
}
