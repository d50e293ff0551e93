//! Where a task's index is kept, and what tells a file the index knew from
//! one that replaced it: a stamp of its `statx` taken before it was read.
//!
//! A stamp is the file's device, inode, birth time, size, mtime and ctime.
//! Every write, rename, link or mode change sets a file's ctime to the
//! kernel's time, and a file made in place of a removed one is born then; so
//! a file that differs from the one read has a later ctime or birth time,
//! unless both happened in one tick of the clock that stamps them. That is
//! why a file is kept only once it has settled: its ctime older than the
//! time the look began (read before any stat, from the coarse clock the
//! kernel stamps files with) by more than a tick (10 ms; 2 s for a file
//! system that stamps whole seconds, told by a ctime of whole seconds). A
//! file changed later has a ctime no older than that start. Only local file
//! systems are trusted to stamp from that clock (NFS, SMB and FUSE stamp
//! from another machine's or a program's): elsewhere there is no index.
//! The one case left is the clock set back past a kept file's ctime, and a
//! new file given that file's inode, birth time, times and size to the
//! nanosecond.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::Digest;

/// The first line of an index file: its format.
pub(super) const HEADER: &str = "ubunye-index 2";
/// At most this many index files are kept (one per task looked at); the
/// oldest go first.
const KEEP: usize = 256;
/// An index file larger than this is not read (a task of 100,000 batches
/// makes about 30 MB).
const MOST: u64 = 256 << 20;
/// How long a file must have been left alone before its line is kept, by
/// default: longer than the kernel keeps a page written through a shared
/// mapping dirty (`vm.dirty_expire_centisecs`, 30 s, plus the flusher's
/// 5 s), since a write through a mapping moves the file's times only when
/// it faults, the first write after the page was last written back. A test
/// shortens it ([`ScanOptions::index_settle`](crate::state::ScanOptions)).
pub(super) const SETTLE: std::time::Duration = std::time::Duration::from_secs(120);

/// A time as the kernel stamps files: seconds and nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(super) struct Ts(i64, i64);

impl Ts {
    fn of(t: &rustix::fs::StatxTimestamp) -> Ts {
        Ts(t.tv_sec, i64::from(t.tv_nsec))
    }
    /// Earlier by `nanos`.
    fn minus(self, nanos: i64) -> Ts {
        let n = self.1 - nanos;
        Ts(self.0 + n.div_euclid(1_000_000_000), n.rem_euclid(1_000_000_000))
    }
}

/// The kernel's coarse clock, the one it stamps file times from (a file's
/// times are never earlier than it was when the file changed).
pub(super) fn coarse_now() -> Ts {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given, which lives here.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut t) };
    if rc != 0 {
        // No clock: nothing can be told to have settled.
        return Ts(i64::MIN, 0);
    }
    Ts(t.tv_sec, t.tv_nsec)
}

/// A regular file's stamp (its fields in hex, dot-separated: written into
/// the stamp itself, no allocation, since every file of a task is stamped
/// on every look), and whether it has settled by `began`.
pub(super) struct Stamp {
    buf: [u8; 9 * 17],
    len: usize,
    pub(super) settled: bool,
}

impl Stamp {
    pub(super) fn text(&self) -> &str {
        // Only hex digits and dots are ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    fn push(&mut self, x: u64) {
        if self.len > 0 {
            self.buf[self.len] = b'.';
            self.len += 1;
        }
        let digits = (64 - x.leading_zeros()).div_ceil(4).max(1) as usize;
        for i in (0..digits).rev() {
            self.buf[self.len] = b"0123456789abcdef"[(x >> (4 * i) & 0xf) as usize];
            self.len += 1;
        }
    }
}

/// The stamp of the regular file `name` in `dir` (not following a symlink:
/// a symlink, a folder or a file that cannot be stat'ed has none, and is
/// read every time).
pub(super) fn stamp(dir: &crate::fsx::Dir, name: &OsStr, began: Ts, settle: i64) -> Option<Stamp> {
    use rustix::fs::StatxFlags as F;
    let st = dir.statx(name, F::TYPE | F::INO | F::SIZE | F::MTIME | F::CTIME | F::BTIME).ok()?;
    let need = F::TYPE | F::INO | F::SIZE | F::MTIME | F::CTIME;
    let got = F::from_bits_retain(st.stx_mask);
    if !got.contains(need)
        || rustix::fs::FileType::from_raw_mode(st.stx_mode.into()) != rustix::fs::FileType::RegularFile
    {
        return None;
    }
    let born = if got.contains(F::BTIME) { Ts::of(&st.stx_btime) } else { Ts(0, 0) };
    let (m, c) = (Ts::of(&st.stx_mtime), Ts::of(&st.stx_ctime));
    // And a tick of the clock (2 s where ctimes are whole seconds).
    let tick = settle.max(if c.1 == 0 { 2_000_000_000 } else { 10_000_000 });
    let mut out = Stamp { buf: [0; 9 * 17], len: 0, settled: c < began.minus(tick) };
    let dev = u64::from(st.stx_dev_major) << 32 | u64::from(st.stx_dev_minor);
    for x in
        [dev, st.stx_ino, st.stx_size, born.0 as u64, born.1 as u64, m.0 as u64, m.1 as u64, c.0 as u64, c.1 as u64]
    {
        out.push(x);
    }
    Some(out)
}

/// A text field that can be kept: no tab or line break, and not "-" or "=".
pub(super) fn plain(s: &str) -> bool {
    s != "-" && s != "=" && !s.contains(['\t', '\n', '\r'])
}

/// Where a task's index is kept, and the line that opens it (it names the
/// task's folders, so that two tasks whose names hash alike never share one).
pub(super) struct Store {
    file: PathBuf,
    pub(super) header: String,
}

impl Store {
    /// None when the folder is inside the use case, its records' folder or
    /// either of the task's folders (looking never writes there; checked
    /// before anything is made, with each path resolved as far as it exists),
    /// when either of the task's folders is on a file system whose stamps do
    /// not tell every change (one this machine's kernel does not stamp, or
    /// tmpfs), or when it cannot be made.
    pub(super) fn at(
        index_dir: &Path,
        root: &Path,
        lineage: &Path,
        leases: &Path,
        records: &Path,
        host: &str,
    ) -> Option<Store> {
        // tmpfs never writes a page back, so a write through a shared
        // mapping may never move a file's times there.
        let trusted = |d: &Path| {
            !d.exists()
                || crate::sys::local_file_system(d)
                    .is_some_and(|fs| !matches!(fs, "vfat" | "exfat" | "ntfs3" | "tmpfs" | "ramfs"))
        };
        if !trusted(leases) || !trusted(records) {
            return None;
        }
        // The task's folders too: either may be a symlink to elsewhere.
        let within: Vec<PathBuf> =
            [root, lineage, leases, records].iter().map(|p| resolved(p)).collect::<Option<_>>()?;
        let inside = |d: &Path| within.iter().any(|w| d.starts_with(w));
        if inside(&resolved(index_dir)?) {
            return None;
        }
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(index_dir).ok()?;
        let dir = fs::canonicalize(index_dir).ok()?;
        if inside(&dir) {
            return None;
        }
        let (l, r) = (leases.to_string_lossy(), records.to_string_lossy());
        if !plain(&l) || !plain(&r) || !plain(host) {
            return None;
        }
        // Whether a file can be read depends on who reads it: each reader
        // (user, groups, host) keeps an index of its own.
        let header = format!("{HEADER}\t{l}\t{r}\t{}\t{host}", reader());

        let id = sha2::Sha256::digest(header.as_bytes());
        let id: String = id.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Some(Store { file: dir.join(format!("{id}.tsv")), header })
    }

    /// The index file's text: only a regular file (no symlink followed, a
    /// FIFO not waited on), this user's and writable by no one else, of at
    /// most [`MOST`] bytes.
    pub(super) fn load(&self) -> Option<String> {
        use rustix::fs::{Mode, OFlags};
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let f = fs::File::from(rustix::fs::open(&self.file, flags, Mode::empty()).ok()?);
        let m = f.metadata().ok()?;
        let euid = rustix::process::geteuid().as_raw();
        if !m.is_file() || m.len() > MOST || m.uid() != euid || m.mode() & 0o022 != 0 {
            return None;
        }
        let mut text = String::new();
        f.take(MOST).read_to_string(&mut text).ok()?;
        Some(text)
    }

    /// Write it whole (a temp file renamed: two looks at once leave one or
    /// the other, each whole), then let at most [`KEEP`] stay. Only files
    /// named as this module names them are ever removed. A failure costs the
    /// next look its speed, nothing else.
    pub(super) fn save(&self, text: &str) {
        let tmp = crate::fsx::tmp_path(&self.file);
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if written.and_then(|()| fs::rename(&tmp, &self.file)).is_err() {
            let _ = fs::remove_file(&tmp);
            return;
        }
        let Some(dir) = self.file.parent() else { return };
        let Ok(rd) = fs::read_dir(dir) else { return };
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut all: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(mtime) = e.metadata().ok().and_then(|m| m.modified().ok()) else { continue };
            match ours(&name.to_string_lossy()) {
                Some(true) => all.push((mtime, e.path())),
                // A temp file a killed look left behind.
                Some(false) if mtime < hour_ago => {
                    let _ = fs::remove_file(e.path());
                }
                _ => {}
            }
        }
        if all.len() > KEEP {
            all.sort();
            for (_, p) in &all[..all.len() - KEEP] {
                let _ = fs::remove_file(p);
            }
        }
    }
}

/// Who reads: the effective user and group and every supplementary group.
fn reader() -> String {
    let mut groups: Vec<u32> = rustix::process::getgroups().unwrap_or_default().iter().map(|g| g.as_raw()).collect();
    groups.sort_unstable();
    groups.dedup();
    let groups: Vec<String> = groups.iter().map(u32::to_string).collect();
    format!(
        "uid={} gid={} groups={}",
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
        groups.join(",")
    )
}

/// Whether `name` is an index file this module names (`<32 hex>.tsv`:
/// Some(true)), or its temp file (`<32 hex>.<8 hex>.tmp`: Some(false)).
fn ours(name: &str) -> Option<bool> {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(id) = name.strip_suffix(".tsv") {
        return hex(id, 32).then_some(true);
    }
    let (id, rest) = name.strip_suffix(".tmp")?.split_once('.')?;
    (hex(id, 32) && hex(rest, 8)).then_some(false)
}

/// `path` with its longest existing head resolved (symlinks followed) and
/// the rest as written: where it would be made. Not
/// [`crate::beneath::realpath_lenient`]: that one is Python's, and folds
/// `..` by the text before it resolves (`link/..` is not where the kernel
/// goes), and gives a relative path none of which exists back as it is.
fn resolved(path: &Path) -> Option<PathBuf> {
    let path = std::path::absolute(path).ok()?;
    let mut head = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = fs::canonicalize(head) {
            return Some(rest.iter().rev().fold(real, |p: PathBuf, n| p.join(n)));
        }
        rest.push(head.file_name()?.to_os_string());
        head = head.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_its_own_names_are_its_files() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(ours(&format!("{id}.tsv")), Some(true));
        assert_eq!(ours(&format!("{id}.deadbeef.tmp")), Some(false));
        for other in ["notes.tsv", "x.tsv", &format!("{id}x.tsv"), &format!("{id}.tmp"), "a.deadbeef.tmp"] {
            assert_eq!(ours(other), None, "{other}");
        }
    }

    #[test]
    fn a_file_changed_now_has_not_settled_and_one_changed_earlier_has() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "x").unwrap();
        let dir = crate::fsx::Dir::open(d.path()).unwrap();
        let now = coarse_now();
        assert!(!stamp(&dir, OsStr::new("f"), now, 0).unwrap().settled);
        let later = Ts(now.0 + 3, 0);
        assert!(stamp(&dir, OsStr::new("f"), later, 0).unwrap().settled);
        assert!(!stamp(&dir, OsStr::new("f"), later, SETTLE.as_nanos() as i64).unwrap().settled, "not by default");
        assert!(stamp(&dir, OsStr::new("missing"), later, 0).is_none());
        std::os::unix::fs::symlink("f", d.path().join("l")).unwrap();
        assert!(stamp(&dir, OsStr::new("l"), later, 0).is_none(), "a symlink has no stamp");
    }

    #[test]
    fn only_a_regular_file_of_this_users_is_loaded() {
        let d = tempfile::tempdir().unwrap();
        let at = |name: &str| Store { file: d.path().join(name), header: String::new() };
        std::fs::write(d.path().join("good"), "x").unwrap();
        std::fs::set_permissions(d.path().join("good"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_eq!(at("good").load().as_deref(), Some("x"));
        // A FIFO is not waited on, a symlink not followed (to /dev/zero: endless).
        rustix::fs::mknodat(rustix::fs::CWD, d.path().join("fifo"), rustix::fs::FileType::Fifo, 0o600.into(), 0)
            .unwrap();
        assert_eq!(at("fifo").load(), None);
        std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
        assert_eq!(at("zero").load(), None);
        std::os::unix::fs::symlink("good", d.path().join("link")).unwrap();
        assert_eq!(at("link").load(), None);
        // Writable by others: anyone could plant a line.
        std::fs::write(d.path().join("open"), "x").unwrap();
        std::fs::set_permissions(d.path().join("open"), std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
        assert_eq!(at("open").load(), None);
        assert_eq!(at("missing").load(), None);
    }

    #[test]
    fn each_reader_has_an_index_of_its_own() {
        let d = tempfile::tempdir().unwrap();
        let (uc, lin) = (d.path().join("uc"), d.path().join("uc/.ubunye/lineage"));
        let (l, r) = (d.path().join("uc/.ubunye/leases/t"), lin.join("t"));
        let one = Store::at(&d.path().join("cache"), &uc, &lin, &l, &r, "a|1").unwrap();
        let other = Store::at(&d.path().join("cache"), &uc, &lin, &l, &r, "b|1").unwrap();
        assert_ne!(one.file, other.file);
        assert!(one.header.contains(&reader()), "{}", one.header);
        // The index folder inside a task's folder given through a symlink.
        std::fs::create_dir_all(d.path().join("elsewhere")).unwrap();
        std::fs::create_dir_all(d.path().join("uc/.ubunye/leases")).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), &l).unwrap();
        assert!(Store::at(&d.path().join("elsewhere/index"), &uc, &lin, &l, &r, "a|1").is_none());
        assert!(!d.path().join("elsewhere/index").exists());
    }

    #[test]
    fn a_stamp_is_its_fields_in_hex() {
        let mut s = Stamp { buf: [0; 9 * 17], len: 0, settled: false };
        for x in [0, 0xfe00000000, u64::MAX, 10] {
            s.push(x);
        }
        assert_eq!(s.text(), "0.fe00000000.ffffffffffffffff.a");
    }

    #[test]
    fn a_time_less_a_tick_borrows_from_its_seconds() {
        assert_eq!(Ts(10, 5_000_000).minus(10_000_000), Ts(9, 995_000_000));
        assert_eq!(Ts(10, 0).minus(2_000_000_000), Ts(8, 0));
    }
}
