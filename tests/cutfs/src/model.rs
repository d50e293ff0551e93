//! The file system as data: every inode as it is now, and as much of it as
//! a sync made durable. A power cut ([`Tree::cut`]) keeps only the durable
//! part: the entries of each folder as of its last `fsync`, the bytes of
//! each file as of its last `fsync` or `fdatasync` (a file whose entry
//! survived but whose bytes were never synced comes back empty). Nothing is
//! durable for being renamed, linked or closed: the strictest reading of
//! POSIX, as ALICE and LazyFS take it (ext4 is kinder; other file systems
//! are not).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

/// What an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

/// What a sync made durable of an inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Durable {
    pub data: Vec<u8>,
    pub mtime: SystemTime,
    pub perm: u16,
    pub entries: BTreeMap<OsString, u64>,
}

/// One inode.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: Kind,
    pub perm: u16,
    /// A file's bytes; a symlink's target.
    pub data: Vec<u8>,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    /// A folder's entries.
    pub entries: BTreeMap<OsString, u64>,
    pub nlink: u32,
    pub parent: u64,
    /// None until its first sync.
    pub durable: Option<Durable>,
}

/// Why an operation failed, as errno.
pub type Errno = i32;

/// The inode of the root folder.
pub const ROOT: u64 = 1;

/// The whole tree.
#[derive(Clone, Debug)]
pub struct Tree {
    pub nodes: BTreeMap<u64, Node>,
    next: u64,
    /// Syncs seen (fsync, fdatasync, fsync of a folder).
    pub syncs: u64,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree::new()
    }
}

impl Tree {
    /// An empty root folder, durable.
    pub fn new() -> Tree {
        let now = SystemTime::now();
        let mut root = Node::new(Kind::Dir, 0o755, now, ROOT);
        root.nlink = 2;
        root.durable = Some(root.snapshot());
        Tree { nodes: BTreeMap::from([(ROOT, root)]), next: ROOT + 1, syncs: 0 }
    }

    pub fn get(&self, ino: u64) -> Result<&Node, Errno> {
        self.nodes.get(&ino).ok_or(libc::ENOENT)
    }

    fn get_mut(&mut self, ino: u64) -> Result<&mut Node, Errno> {
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)
    }

    fn dir(&self, ino: u64) -> Result<&Node, Errno> {
        let n = self.get(ino)?;
        if n.kind != Kind::Dir {
            return Err(libc::ENOTDIR);
        }
        Ok(n)
    }

    /// The inode `name` names in folder `parent`.
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<u64, Errno> {
        self.dir(parent)?.entries.get(name).copied().ok_or(libc::ENOENT)
    }

    /// Make a new inode named `name` in `parent`.
    pub fn make(&mut self, parent: u64, name: &OsStr, kind: Kind, perm: u16, data: Vec<u8>) -> Result<u64, Errno> {
        if self.dir(parent)?.entries.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let now = SystemTime::now();
        let ino = self.next;
        self.next += 1;
        let mut node = Node::new(kind, perm, now, parent);
        node.data = data;
        node.nlink = if kind == Kind::Dir { 2 } else { 1 };
        self.nodes.insert(ino, node);
        let p = self.get_mut(parent)?;
        p.entries.insert(name.to_os_string(), ino);
        p.mtime = now;
        if kind == Kind::Dir {
            p.nlink += 1;
        }
        Ok(ino)
    }

    /// A hard link to file `ino` as `name` in `parent`.
    pub fn link(&mut self, ino: u64, parent: u64, name: &OsStr) -> Result<(), Errno> {
        if self.get(ino)?.kind == Kind::Dir {
            return Err(libc::EPERM);
        }
        if self.dir(parent)?.entries.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let now = SystemTime::now();
        self.get_mut(ino)?.nlink += 1;
        let p = self.get_mut(parent)?;
        p.entries.insert(name.to_os_string(), ino);
        p.mtime = now;
        Ok(())
    }

    /// Remove the entry `name` of `parent`: a file (`dir` false) or an empty
    /// folder (`dir` true).
    pub fn remove(&mut self, parent: u64, name: &OsStr, dir: bool) -> Result<(), Errno> {
        let ino = self.lookup(parent, name)?;
        let node = self.get(ino)?;
        match (dir, node.kind == Kind::Dir) {
            (true, false) => return Err(libc::ENOTDIR),
            (false, true) => return Err(libc::EISDIR),
            (true, true) if !node.entries.is_empty() => return Err(libc::ENOTEMPTY),
            _ => {}
        }
        let now = SystemTime::now();
        let p = self.get_mut(parent)?;
        p.entries.remove(name);
        p.mtime = now;
        if dir {
            p.nlink -= 1;
        }
        let n = self.get_mut(ino)?;
        n.nlink = n.nlink.saturating_sub(if dir { 2 } else { 1 });
        n.ctime = now;
        Ok(())
    }

    /// Rename `name` in `parent` to `newname` in `newparent`; `noreplace`:
    /// refuse if the new name exists; `exchange`: swap the two.
    pub fn rename(
        &mut self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        noreplace: bool,
        exchange: bool,
    ) -> Result<(), Errno> {
        let ino = self.lookup(parent, name)?;
        let target = self.dir(newparent)?.entries.get(newname).copied();
        if self.get(ino)?.kind == Kind::Dir && self.is_within(newparent, ino) {
            return Err(libc::EINVAL);
        }
        let now = SystemTime::now();
        if exchange {
            let Some(other) = target else { return Err(libc::ENOENT) };
            self.get_mut(parent)?.entries.insert(name.to_os_string(), other);
            self.get_mut(newparent)?.entries.insert(newname.to_os_string(), ino);
            for (i, p) in [(ino, newparent), (other, parent)] {
                self.get_mut(i)?.parent = p;
            }
            self.touch_dirs(parent, newparent, now)?;
            return Ok(());
        }
        if let Some(t) = target {
            if t == ino {
                return Ok(());
            }
            if noreplace {
                return Err(libc::EEXIST);
            }
            let (src_dir, dst) = (self.get(ino)?.kind == Kind::Dir, self.get(t)?);
            match (src_dir, dst.kind == Kind::Dir) {
                (true, false) => return Err(libc::ENOTDIR),
                (false, true) => return Err(libc::EISDIR),
                (true, true) if !dst.entries.is_empty() => return Err(libc::ENOTEMPTY),
                _ => {}
            }
            self.remove(newparent, newname, src_dir)?;
        }
        self.get_mut(parent)?.entries.remove(name);
        self.get_mut(newparent)?.entries.insert(newname.to_os_string(), ino);
        if self.get(ino)?.kind == Kind::Dir && parent != newparent {
            self.get_mut(parent)?.nlink -= 1;
            self.get_mut(newparent)?.nlink += 1;
        }
        let n = self.get_mut(ino)?;
        n.parent = newparent;
        n.ctime = now;
        self.touch_dirs(parent, newparent, now)
    }

    fn touch_dirs(&mut self, a: u64, b: u64, now: SystemTime) -> Result<(), Errno> {
        self.get_mut(a)?.mtime = now;
        self.get_mut(b)?.mtime = now;
        Ok(())
    }

    /// Whether folder `ino` is `dir` or below it.
    fn is_within(&self, mut ino: u64, dir: u64) -> bool {
        for _ in 0..10_000 {
            if ino == dir {
                return true;
            }
            if ino == ROOT {
                return false;
            }
            match self.nodes.get(&ino) {
                Some(n) => ino = n.parent,
                None => return false,
            }
        }
        false
    }

    /// Write `data` at `offset` of file `ino`.
    pub fn write(&mut self, ino: u64, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        let n = self.get_mut(ino)?;
        if n.kind != Kind::File {
            return Err(libc::EISDIR);
        }
        let at = usize::try_from(offset).map_err(|_| libc::EFBIG)?;
        if n.data.len() < at + data.len() {
            n.data.resize(at + data.len(), 0);
        }
        n.data[at..at + data.len()].copy_from_slice(data);
        let now = SystemTime::now();
        n.mtime = now;
        n.ctime = now;
        Ok(data.len())
    }

    /// Set a file's size, its permissions, or its times.
    pub fn set(
        &mut self,
        ino: u64,
        size: Option<u64>,
        perm: Option<u16>,
        mtime: Option<SystemTime>,
    ) -> Result<(), Errno> {
        let n = self.get_mut(ino)?;
        if let Some(s) = size {
            if n.kind != Kind::File {
                return Err(libc::EISDIR);
            }
            n.data.resize(usize::try_from(s).map_err(|_| libc::EFBIG)?, 0);
            n.mtime = SystemTime::now();
        }
        if let Some(p) = perm {
            n.perm = p;
        }
        if let Some(t) = mtime {
            n.mtime = t;
        }
        n.ctime = SystemTime::now();
        Ok(())
    }

    /// `fsync` or `fdatasync` of a file, `fsync` of a folder: what it is now
    /// becomes durable (a folder's entries; a file's bytes and times).
    pub fn sync(&mut self, ino: u64) -> Result<(), Errno> {
        let n = self.get_mut(ino)?;
        n.durable = Some(n.snapshot());
        self.syncs += 1;
        Ok(())
    }

    /// Everything durable as it is now (the test's setup: a disk that was
    /// written and synced before the runs start).
    pub fn sync_all(&mut self) {
        for n in self.nodes.values_mut() {
            n.durable = Some(n.snapshot());
        }
    }

    /// Write back some of what is not synced yet, as the kernel's page cache
    /// does when it pleases, in any order: each inode whose state is not
    /// durable becomes durable as it is now if `pick` says so (a file's
    /// bytes, a folder's entries; one inode at a time, not one write).
    pub fn write_back(&mut self, pick: &mut dyn FnMut() -> bool) -> usize {
        let mut n = 0;
        for node in self.nodes.values_mut() {
            let now = node.snapshot();
            if node.durable.as_ref() != Some(&now) && pick() {
                node.durable = Some(now);
                n += 1;
            }
        }
        n
    }

    /// The power cut: what the disk holds when the machine comes back. Only
    /// what a durable entry reaches from the root is there, with its durable
    /// bytes (none, for a file never synced).
    pub fn cut(&self) -> Tree {
        let mut nodes = BTreeMap::new();
        let mut todo = vec![(ROOT, ROOT)];
        let mut links: BTreeMap<u64, u32> = BTreeMap::new();
        while let Some((ino, parent)) = todo.pop() {
            *links.entry(ino).or_default() += 1;
            if nodes.contains_key(&ino) {
                continue;
            }
            let Some(n) = self.nodes.get(&ino) else { continue };
            let d = n.durable.clone().unwrap_or(Durable {
                data: Vec::new(),
                mtime: n.ctime,
                perm: n.perm,
                entries: BTreeMap::new(),
            });
            if n.kind == Kind::Dir {
                for child in d.entries.values() {
                    todo.push((*child, ino));
                }
            }
            let mut back = Node::new(n.kind, d.perm, d.mtime, parent);
            back.data = if n.kind == Kind::Symlink { n.data.clone() } else { d.data.clone() };
            back.entries = if n.kind == Kind::Dir { d.entries.clone() } else { BTreeMap::new() };
            back.durable = Some(d);
            nodes.insert(ino, back);
        }
        // A folder entry can name an inode only one folder keeps a durable
        // entry for twice over (hard links): count them again.
        for (ino, n) in nodes.iter_mut() {
            n.nlink = match n.kind {
                Kind::Dir => 2,
                _ => links.get(ino).copied().unwrap_or(1),
            };
        }
        let subdirs: Vec<u64> = nodes.values().filter(|n| n.kind == Kind::Dir).map(|n| n.parent).collect();
        for p in subdirs {
            if let Some(n) = nodes.get_mut(&p) {
                n.nlink += 1;
            }
        }
        if let Some(root) = nodes.get_mut(&ROOT) {
            root.nlink -= 1;
        }
        Tree { next: self.next, nodes, syncs: 0 }
    }
}

impl Tree {
    /// Every path in the tree (for a test's failure message), `durable`: as
    /// a power cut would leave it.
    pub fn paths(&self, durable: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![(ROOT, String::new())];
        while let Some((ino, at)) = todo.pop() {
            let Some(n) = self.nodes.get(&ino) else { continue };
            let entries = if durable {
                n.durable.as_ref().map(|d| d.entries.clone()).unwrap_or_default()
            } else {
                n.entries.clone()
            };
            for (name, child) in entries {
                let p = format!("{at}/{}", name.to_string_lossy());
                out.push(p.clone());
                if out.len() < 100_000 {
                    todo.push((child, p));
                }
            }
        }
        out.sort();
        out
    }
}

impl Node {
    fn new(kind: Kind, perm: u16, now: SystemTime, parent: u64) -> Node {
        Node {
            kind,
            perm,
            data: Vec::new(),
            mtime: now,
            ctime: now,
            entries: BTreeMap::new(),
            nlink: 1,
            parent,
            durable: None,
        }
    }

    fn snapshot(&self) -> Durable {
        Durable { data: self.data.clone(), mtime: self.mtime, perm: self.perm, entries: self.entries.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    #[test]
    fn what_was_not_synced_is_lost_and_what_was_is_kept() {
        let mut t = Tree::new();
        let d = t.make(ROOT, os("d"), Kind::Dir, 0o755, vec![]).unwrap();
        t.sync(ROOT).unwrap();
        // A file whose entry is synced but whose bytes are not: empty.
        let a = t.make(d, os("a"), Kind::File, 0o644, vec![]).unwrap();
        t.write(a, 0, b"hello").unwrap();
        t.sync(d).unwrap();
        // A file whose bytes are synced but whose entry is not: gone.
        let b = t.make(d, os("b"), Kind::File, 0o644, vec![]).unwrap();
        t.write(b, 0, b"world").unwrap();
        t.sync(b).unwrap();
        let back = t.cut();
        let d2 = back.lookup(ROOT, os("d")).unwrap();
        let a2 = back.lookup(d2, os("a")).unwrap();
        assert_eq!(back.get(a2).unwrap().data, b"");
        assert_eq!(back.lookup(d2, os("b")), Err(libc::ENOENT));
        // A rename not synced: the old name is back.
        let mut t = back;
        t.write(a2, 0, b"x").unwrap();
        t.sync(a2).unwrap();
        t.rename(d2, os("a"), ROOT, os("moved"), false, false).unwrap();
        t.sync(ROOT).unwrap();
        let back = t.cut();
        let d3 = back.lookup(ROOT, os("d")).unwrap();
        assert_eq!(back.get(back.lookup(d3, os("a")).unwrap()).unwrap().data, b"x");
        // The new name's folder was synced: both names reach the inode.
        assert_eq!(back.lookup(ROOT, os("moved")).unwrap(), back.lookup(d3, os("a")).unwrap());
    }

    #[test]
    fn a_write_back_makes_some_inodes_durable_and_not_others() {
        let mut t = Tree::new();
        let a = t.make(ROOT, os("a"), Kind::File, 0o644, vec![]).unwrap();
        t.write(a, 0, b"data").unwrap();
        // The folder's entry is written back, the file's bytes are not: the
        // zero-length file of a crash.
        let mut picks = [true, false].into_iter();
        assert_eq!(t.write_back(&mut || picks.next().unwrap()), 1);
        let back = t.cut();
        assert_eq!(back.get(back.lookup(ROOT, os("a")).unwrap()).unwrap().data, b"");
    }

    #[test]
    fn rename_keeps_posix_rules() {
        let mut t = Tree::new();
        let d = t.make(ROOT, os("d"), Kind::Dir, 0o755, vec![]).unwrap();
        t.make(d, os("x"), Kind::File, 0o644, vec![]).unwrap();
        t.make(ROOT, os("f"), Kind::File, 0o644, vec![]).unwrap();
        assert_eq!(t.rename(ROOT, os("f"), d, os("x"), true, false), Err(libc::EEXIST));
        assert_eq!(t.rename(ROOT, os("d"), d, os("sub"), false, false), Err(libc::EINVAL));
        assert_eq!(t.remove(ROOT, os("d"), true), Err(libc::ENOTEMPTY));
        t.rename(ROOT, os("f"), d, os("x"), false, false).unwrap();
        assert_eq!(t.lookup(ROOT, os("f")), Err(libc::ENOENT));
    }
}
