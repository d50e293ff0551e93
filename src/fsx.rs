//! The few file operations the protocol is built from: a patient read, an atomic
//! replace, and an exclusive create that never leaves an empty file.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The first 8 hex digits of a fresh uuid4, as the peer names temp files, probes
/// and `.dead-` copies.
pub fn hex8() -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(8);
    s
}

/// The first 12 hex digits of a fresh uuid4 (staging folder names).
pub fn hex12() -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(12);
    s
}

/// Python's `PermissionError`: EACCES or EPERM. On Windows these pass in
/// milliseconds (a file being replaced); the peer retries them for 2 s everywhere.
pub fn is_busy(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

fn patient<T>(busy_for: Duration, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let deadline = Instant::now() + busy_for;
    loop {
        match op() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            other => return other,
        }
    }
}

/// Open a file to read it, refusing anything but a regular file (after
/// symlinks): a FIFO, a socket or a device where a lease, note or record should
/// be would block a read for ever or return endless bytes. The open itself
/// does not block (O_NONBLOCK, which a regular file ignores).
pub fn open_regular(path: &Path) -> io::Result<fs::File> {
    open_checked(path).map(|(f, _)| f)
}

/// [`open_regular`], and the file's metadata.
fn open_checked(path: &Path) -> io::Result<(fs::File, fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(path)?;
    let m = f.metadata()?;
    check_regular(&m)?;
    Ok((f, m))
}

/// All of a regular file's bytes ([`open_regular`]).
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let (f, m) = open_checked(path)?;
    let mut out = Vec::new();
    read_all(f, &m, &mut out)?;
    Ok(out)
}

/// All of an open file's bytes into `buf`, sized by its metadata: one byte
/// more than its size, so the read that finds the end is the second. Read by
/// hand, since `read_to_end` asks the size again (another statx and an lseek
/// a file).
fn read_all(mut f: fs::File, m: &fs::Metadata, buf: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Read;
    let mut n = 0;
    buf.clear();
    buf.resize((m.len() as usize).min(1 << 24) + 1, 0);
    loop {
        if n == buf.len() {
            buf.resize(2 * n, 0);
        }
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(n);
    Ok(())
}

/// A folder opened once, whose files are read by name: a scan of a folder of
/// 10,000 records opens each relative to it (no walk of the whole path per
/// file) and reads it into a buffer the caller keeps (no allocation per file).
/// What a file may be is as [`open_regular`] says.
pub struct Dir {
    fd: std::os::fd::OwnedFd,
}

impl Dir {
    /// Open a folder (symlinks followed).
    pub fn open(path: &Path) -> io::Result<Dir> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Dir { fd })
    }

    /// Read the regular file `name` in this folder into `buf` (emptied first),
    /// and give its metadata.
    pub fn read_into(&self, name: &std::ffi::OsStr, buf: &mut Vec<u8>) -> io::Result<fs::Metadata> {
        use rustix::fs::{Mode, OFlags};
        let fd =
            rustix::fs::openat(&self.fd, name, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty())?;
        let f = fs::File::from(fd);
        let m = f.metadata()?;
        check_regular(&m)?;
        read_all(f, &m, buf)?;
        Ok(m)
    }
}

impl Dir {
    /// The `statx` of `name` in this folder, not following a symlink.
    pub fn statx(&self, name: &std::ffi::OsStr, mask: rustix::fs::StatxFlags) -> io::Result<rustix::fs::Statx> {
        Ok(rustix::fs::statx(&self.fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW, mask)?)
    }
}

fn check_regular(m: &fs::Metadata) -> io::Result<()> {
    let kind = m.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() { "a folder" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(io::Error::other(format!("{what}, where a file should be")));
    }
    Ok(())
}

/// A file's bytes, or None when it does not exist. A file that exists but cannot
/// be read (after retrying "permission denied" for `busy_for`) is an error, never
/// taken for a missing one.
pub fn read_patient(path: &Path, busy_for: Duration) -> io::Result<Option<Vec<u8>>> {
    match patient(busy_for, || read_regular(path)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The first `n` bytes of a file (and whether that is all of it), or None when
/// it does not exist; "permission denied" is retried as in [`read_patient`].
pub fn read_head_patient(path: &Path, n: usize, busy_for: Duration) -> io::Result<Option<(Vec<u8>, bool)>> {
    use std::io::Read;
    let read = || -> io::Result<(Vec<u8>, bool)> {
        let mut f = open_regular(path)?;
        let mut buf = vec![0u8; n + 1];
        let mut got = 0;
        while got < buf.len() {
            match f.read(&mut buf[got..])? {
                0 => break,
                k => got += k,
            }
        }
        let whole = got <= n;
        buf.truncate(got.min(n));
        Ok((buf, whole))
    };
    match patient(busy_for, read) {
        Ok(x) => Ok(Some(x)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The temp name for an atomic rewrite of `path`: `<stem>.<8hex>.tmp` beside it
/// (Python's `Path.stem`: `39bc….json` -> `39bc….<8hex>.tmp`).
pub fn tmp_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!("{stem}.{}.tmp", hex8()))
}

/// A new file holding `bytes`, on the disk before its name is used
/// (`durable::file`).
fn write_new_file(path: &Path, bytes: &[u8]) -> io::Result<fs::File> {
    let mut f = fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(bytes)?;
    crate::durable::file(&f, path)?;
    Ok(f)
}

/// Replace `path` with `bytes` in one rename, through `<stem>.<8hex>.tmp`.
/// Returns Ok(false), with the temp file removed, when the rename is still refused
/// with "permission denied" after `busy_for` (a reader holding the file on
/// Windows-like file systems). Any other failure is an error; the temp file is
/// removed on every path out except a kill.
///
/// The bytes reach the disk before the rename, and the rename before this
/// returns (`durable`): a power cut leaves the old file or the new one.
pub fn write_atomic(path: &Path, bytes: &[u8], busy_for: Duration) -> io::Result<bool> {
    write_atomic_then(path, bytes, busy_for, true)
}

/// [`write_atomic`] for a file no later step waits for (a run record): its
/// bytes on the disk before the rename (never a name with no bytes), the
/// rename left to the kernel (after a power cut the old file or the new).
pub fn write_atomic_lazy(path: &Path, bytes: &[u8], busy_for: Duration) -> io::Result<bool> {
    write_atomic_then(path, bytes, busy_for, false)
}

fn write_atomic_then(path: &Path, bytes: &[u8], busy_for: Duration, sync_dir: bool) -> io::Result<bool> {
    let tmp = tmp_path(path);
    if let Err(e) = write_new_file(&tmp, bytes) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    match patient(busy_for, || fs::rename(&tmp, path)) {
        Ok(()) if !sync_dir => Ok(true),
        Ok(()) => crate::durable::parent(path).map(|()| true),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            if is_busy(&e) { Ok(false) } else { Err(e) }
        }
    }
}

/// [`write_atomic`], keeping the written file open: Ok(Some(file)) is now the
/// file at `path` (until something replaces it). Ok(None): refused as busy.
pub fn write_atomic_keep(path: &Path, bytes: &[u8], busy_for: Duration) -> io::Result<Option<fs::File>> {
    let tmp = tmp_path(path);
    let f = match write_new_file(&tmp, bytes) {
        Ok(f) => f,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    };
    match patient(busy_for, || fs::rename(&tmp, path)) {
        Ok(()) => crate::durable::parent(path).map(|()| Some(f)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            if is_busy(&e) { Ok(None) } else { Err(e) }
        }
    }
}

/// Create `path` holding `bytes`, only if no file has that name: Ok(false) when
/// one does. The content is written to a file with no name first and then linked
/// to the name, so the name never appears empty or half-written (the peer's
/// `O_EXCL` create can leave a 0-byte lease when killed between the create and
/// the write). The file is made with `O_TMPFILE` where the disk has it (ext4, xfs,
/// btrfs, tmpfs), so a kill before the link leaves nothing; elsewhere (NFS, FUSE)
/// it is a temp file `<stem>.<8hex>.tmp`, which a kill can leave behind. Where
/// hard links are refused (some network and FUSE file systems) it falls back to
/// `O_EXCL`.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    create_new_with(path, bytes, || {})
}

/// [`create_new`], calling `between` after the content is written and before
/// it is linked to the name (a kill point for tests).
pub fn create_new_with(path: &Path, bytes: &[u8], between: impl FnOnce()) -> io::Result<bool> {
    let linked = match write_unnamed(path, bytes)? {
        Some(f) => {
            between();
            let fd = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&f));
            rustix::fs::linkat(rustix::fs::CWD, fd.as_str(), rustix::fs::CWD, path, rustix::fs::AtFlags::SYMLINK_FOLLOW)
                .map_err(io::Error::from)
        }
        None => {
            let tmp = tmp_path(path);
            if let Err(e) = write_new_file(&tmp, bytes) {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
            between();
            let linked = fs::hard_link(&tmp, path);
            let _ = fs::remove_file(&tmp);
            linked
        }
    };
    match linked {
        // The link and the temp name's removal on the disk, in one sync; a
        // lease that cannot be made durable is not left behind: its run gives
        // up, and it would be a lease nobody holds.
        Ok(()) => match crate::durable::parent(path) {
            Ok(()) => Ok(true),
            Err(e) => {
                let _ = fs::remove_file(path);
                Err(e)
            }
        },
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) if links_unsupported(&e) => create_exclusive(path, bytes),
        Err(e) => Err(e),
    }
}

/// A file with no name in the folder of `path`, holding `bytes`, on the disk
/// (`O_TMPFILE`; it is linked through `/proc/self/fd`, which needs no privilege).
/// None where the kernel or the file system has no `O_TMPFILE`, or /proc is not
/// mounted: the caller then writes a named temp file, which reports any error
/// the folder itself gives.
fn write_unnamed(path: &Path, bytes: &[u8]) -> io::Result<Option<fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir()) {
        return Ok(None);
    }
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => p,
        None => Path::new("."),
    };
    let Ok(mut f) = fs::OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).open(dir) else {
        return Ok(None);
    };
    f.write_all(bytes)?;
    crate::durable::file(&f, path)?;
    Ok(Some(f))
}

fn links_unsupported(e: &io::Error) -> bool {
    use rustix::io::Errno;
    let Some(code) = e.raw_os_error() else {
        return false;
    };
    let errno = Errno::from_raw_os_error(code);
    [Errno::PERM, Errno::NOTSUP, Errno::OPNOTSUPP, Errno::MLINK, Errno::NOSYS, Errno::XDEV].contains(&errno)
}

/// The peer's create: `O_CREAT|O_EXCL`, then the content.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    match fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut f) => {
            f.write_all(bytes)?;
            crate::durable::file(&f, path)?;
            crate::durable::parent(path)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// A small file holding `bytes` (a takeover mark), replaced if there, on
/// the disk with its name before this returns.
pub fn write_mark(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
    f.write_all(bytes)?;
    crate::durable::file(&f, path)?;
    crate::durable::parent(path)
}

/// Remove a file; a missing one is fine.
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether a path exists as anything (a dangling symlink counts). Errors other than
/// "not found" count as existing: never assume absence.
pub fn exists(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(_) => true,
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_a_folder_is_refused_at_once_never_read() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("lease.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        // Blocking here would hang the test: the open must not wait for a writer.
        let e = read_patient(&fifo, Duration::ZERO).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(read_head_patient(&fifo, 16, Duration::ZERO).is_err());
        assert!(read_regular(d.path()).unwrap_err().to_string().contains("a folder"));
        fs::write(d.path().join("ok.json"), b"{}").unwrap();
        assert_eq!(read_patient(&d.path().join("ok.json"), Duration::ZERO).unwrap().unwrap(), b"{}");
    }

    #[test]
    fn tmp_names_follow_python_stem() {
        let t = tmp_path(Path::new("/x/39bc42311894ddba.json"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("39bc42311894ddba.") && name.ends_with(".tmp"), "{name}");
        assert_eq!(name.len(), "39bc42311894ddba.".len() + 8 + 4);
        let t = tmp_path(Path::new("/x/39bc42311894ddba.finished.json"));
        assert!(t.file_name().unwrap().to_str().unwrap().starts_with("39bc42311894ddba.finished."));
    }

    #[test]
    fn create_new_is_exclusive_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k.json");
        assert!(create_new(&p, b"{\"a\": 1}").unwrap());
        assert!(!create_new(&p, b"other").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"{\"a\": 1}");
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("k.json")]);
    }

    /// Whether the folder's disk makes files with no name (`O_TMPFILE`).
    fn has_tmpfile(dir: &Path) -> bool {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).open(dir).is_ok()
    }

    #[test]
    fn a_create_stopped_before_its_link_leaves_no_name_where_the_disk_has_o_tmpfile() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k.json");
        let mut seen = Vec::new();
        assert!(
            create_new_with(&p, b"{\"a\": 1}", || {
                seen = fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            })
            .unwrap()
        );
        if has_tmpfile(d.path()) {
            // A kill here (the lease-temp-written step) leaves the folder as it was.
            assert!(seen.is_empty(), "{seen:?}");
        } else {
            eprintln!("NOTE: {} has no O_TMPFILE; the named temp file is used there", d.path().display());
            assert_eq!(seen.len(), 1, "{seen:?}");
        }
        assert_eq!(fs::read(&p).unwrap(), b"{\"a\": 1}");
        assert!(!create_new_with(&p, b"other", || {}).unwrap());
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k.json");
        fs::write(&p, "old").unwrap();
        assert!(write_atomic(&p, b"new", Duration::ZERO).unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn read_patient_tells_missing_from_unreadable() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_patient(&d.path().join("none"), Duration::ZERO).unwrap(), None);
        // A folder where a file should be: it exists and cannot be read.
        fs::create_dir(d.path().join("dir.json")).unwrap();
        assert!(read_patient(&d.path().join("dir.json"), Duration::ZERO).is_err());
    }
}
