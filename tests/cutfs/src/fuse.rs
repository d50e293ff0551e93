//! The [`Tree`] served over FUSE (the `fuser` crate). Every request is
//! answered from the tree under one lock; `fsync`, `fdatasync` and the
//! `fsync` of a folder make what they name durable. Once the power is cut
//! ([`Control::cut_now`], or the sync [`Control::cut_at`] names arrives,
//! before it takes effect), every request is answered EIO: nothing done after
//! the cut can reach the disk.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::model::{Kind, Node, Tree};

/// The switch and the counters the test holds while the tree is served.
#[derive(Debug, Default)]
pub struct Control {
    dead: AtomicBool,
    /// Cut the power when this sync (counted from 1 since the mount)
    /// arrives; 0: never.
    cut_at: AtomicU64,
    syncs: AtomicU64,
    /// Answer every sync EINVAL, as some FUSE and network mounts do.
    refuse: AtomicBool,
}

impl Control {
    /// Cut the power now.
    pub fn cut_now(&self) {
        self.dead.store(true, Ordering::SeqCst);
    }
    /// Cut the power when the `n`th sync since the mount arrives (it does
    /// not take effect).
    pub fn cut_at(&self, n: u64) {
        self.cut_at.store(n, Ordering::SeqCst);
    }
    /// Refuse every sync from now on (EINVAL), durably nothing.
    pub fn refuse_syncs(&self) {
        self.refuse.store(true, Ordering::SeqCst);
    }
    pub fn is_cut(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }
    /// Syncs that took effect since the mount.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::SeqCst)
    }
}

/// The file system a mount serves.
pub struct CutFs {
    pub tree: Arc<Mutex<Tree>>,
    pub ctl: Arc<Control>,
}

const TTL: Duration = Duration::from_millis(100);

fn e(code: i32) -> Errno {
    Errno::from_i32(code)
}

fn attr(ino: u64, n: &Node) -> FileAttr {
    let kind = match n.kind {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
    };
    let size = if n.kind == Kind::Dir { 4096 } else { n.data.len() as u64 };
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: n.mtime,
        mtime: n.mtime,
        ctime: n.ctime,
        crtime: n.ctime,
        kind,
        perm: n.perm,
        nlink: n.nlink,
        uid: owner_uid(),
        gid: owner_gid(),
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn owner_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

fn owner_gid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}

impl CutFs {
    /// Run `f` on the tree, unless the power is cut.
    fn with<T>(&self, f: impl FnOnce(&mut Tree) -> Result<T, i32>) -> Result<T, Errno> {
        if self.ctl.is_cut() {
            return Err(e(libc::EIO));
        }
        let mut t = self.tree.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut t).map_err(e)
    }

    fn entry(&self, ino: u64, reply: ReplyEntry) {
        match self.with(|t| t.get(ino).map(|n| attr(ino, n))) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(er) => reply.error(er),
        }
    }

    fn sync(&self, ino: u64, reply: ReplyEmpty) {
        if self.ctl.is_cut() {
            return reply.error(e(libc::EIO));
        }
        if self.ctl.refuse.load(Ordering::SeqCst) {
            return reply.error(e(libc::EINVAL));
        }
        let n = self.ctl.syncs.load(Ordering::SeqCst) + 1;
        let at = self.ctl.cut_at.load(Ordering::SeqCst);
        if at != 0 && n >= at {
            // The power goes before this sync reaches the disk.
            self.ctl.cut_now();
            return reply.error(e(libc::EIO));
        }
        match self.with(|t| t.sync(ino)) {
            Ok(()) => {
                self.ctl.syncs.fetch_add(1, Ordering::SeqCst);
                reply.ok()
            }
            Err(er) => reply.error(er),
        }
    }
}

fn time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(s) => s,
        TimeOrNow::Now => SystemTime::now(),
    }
}

impl Filesystem for CutFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.with(|t| t.lookup(parent.0, name)) {
            Ok(ino) => self.entry(ino, reply),
            Err(er) => reply.error(er),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.with(|t| t.get(ino.0).map(|n| attr(ino.0, n))) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(er) => reply.error(er),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let perm = mode.map(|m| (m & 0o7777) as u16);
        match self.with(|t| {
            t.set(ino.0, size, perm, mtime.map(time))?;
            t.get(ino.0).map(|n| attr(ino.0, n))
        }) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(er) => reply.error(er),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.with(|t| t.get(ino.0).map(|n| n.data.clone())) {
            Ok(d) => reply.data(&d),
            Err(er) => reply.error(er),
        }
    }

    fn mkdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let perm = (mode & !umask & 0o7777) as u16;
        match self.with(|t| t.make(parent.0, name, Kind::Dir, perm, Vec::new())) {
            Ok(ino) => self.entry(ino, reply),
            Err(er) => reply.error(er),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.with(|t| t.remove(parent.0, name, false)) {
            Ok(()) => reply.ok(),
            Err(er) => reply.error(er),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.with(|t| t.remove(parent.0, name, true)) {
            Ok(()) => reply.ok(),
            Err(er) => reply.error(er),
        }
    }

    fn symlink(&self, _req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let data = target.as_os_str().as_encoded_bytes().to_vec();
        match self.with(|t| t.make(parent.0, link_name, Kind::Symlink, 0o777, data)) {
            Ok(ino) => self.entry(ino, reply),
            Err(er) => reply.error(er),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        let exchange = flags.contains(RenameFlags::RENAME_EXCHANGE);
        if flags.contains(RenameFlags::RENAME_WHITEOUT) {
            return reply.error(e(libc::EINVAL));
        }
        match self.with(|t| t.rename(parent.0, name, newparent.0, newname, noreplace, exchange)) {
            Ok(()) => reply.ok(),
            Err(er) => reply.error(er),
        }
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        match self.with(|t| t.link(ino.0, newparent.0, newname)) {
            Ok(()) => self.entry(ino.0, reply),
            Err(er) => reply.error(er),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let trunc = flags.0 & libc::O_TRUNC != 0;
        match self.with(|t| {
            t.get(ino.0)?;
            if trunc {
                t.set(ino.0, Some(0), None, None)?;
            }
            Ok(())
        }) {
            Ok(()) => reply.opened(FileHandle(ino.0), FopenFlags::empty()),
            Err(er) => reply.error(er),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.with(|t| {
            let n = t.get(ino.0)?;
            let from = (offset as usize).min(n.data.len());
            let to = (from + size as usize).min(n.data.len());
            Ok(n.data[from..to].to_vec())
        }) {
            Ok(d) => reply.data(&d),
            Err(er) => reply.error(er),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.with(|t| t.write(ino.0, offset, data)) {
            Ok(n) => reply.written(n as u32),
            Err(er) => reply.error(er),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        if self.ctl.is_cut() { reply.error(e(libc::EIO)) } else { reply.ok() }
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.sync(ino.0, reply);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.with(|t| t.get(ino.0).map(|_| ())) {
            Ok(()) => reply.opened(FileHandle(ino.0), FopenFlags::empty()),
            Err(er) => reply.error(er),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let listed = self.with(|t| {
            let n = t.get(ino.0)?;
            if n.kind != Kind::Dir {
                return Err(libc::ENOTDIR);
            }
            let mut out = vec![(ino.0, FileType::Directory, ".".into()), (n.parent, FileType::Directory, "..".into())];
            for (name, child) in &n.entries {
                let kind = match t.get(*child).map(|c| c.kind) {
                    Ok(Kind::Dir) => FileType::Directory,
                    Ok(Kind::Symlink) => FileType::Symlink,
                    _ => FileType::RegularFile,
                };
                out.push((*child, kind, name.clone()));
            }
            Ok(out)
        });
        match listed {
            Ok(entries) => {
                for (i, (child, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(child), (i + 1) as u64, kind, name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(er) => reply.error(er),
        }
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.sync(ino.0, reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(1 << 20, 1 << 19, 1 << 19, 1 << 16, 1 << 15, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        match self.with(|t| t.get(ino.0).map(|_| ())) {
            Ok(()) => reply.ok(),
            Err(er) => reply.error(er),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let perm = (mode & !umask & 0o7777) as u16;
        match self.with(|t| {
            let ino = t.make(parent.0, name, Kind::File, perm, Vec::new())?;
            t.get(ino).map(|n| (ino, attr(ino, n)))
        }) {
            Ok((ino, a)) => reply.created(&TTL, &a, Generation(0), FileHandle(ino), FopenFlags::empty()),
            Err(er) => reply.error(er),
        }
    }
}
