//! Saving a lease: every save a temp file renamed over the lease, only while the
//! lease is this run's; and per-file claims written in place where the file
//! system makes a one-page write all or nothing (docs/differences.md row 7).

use std::fs;
use std::path::Path;

use super::{Shared, State, Tail, Window};
use crate::error::{Error, Result};
use crate::fsx;
use crate::pyjson;
use crate::sys::Step;

/// File systems where a write within one page reaches the page cache whole or
/// not at all, even when the writer is killed (they write through the kernel's
/// generic_perform_write, which checks for a fatal signal only between pages),
/// and where readers on other hosts cannot see a stale copy: ext2/3/4, XFS, tmpfs.
pub(super) fn in_place_ok(dir: &Path, allowed: bool) -> bool {
    if !allowed {
        return false;
    }
    // f_type is i64 here, another integer type on other targets.
    #[allow(clippy::useless_conversion)]
    match rustix::fs::statfs(dir) {
        Ok(st) => matches!(i64::from(st.f_type), 0xEF53 | 0x5846_5342 | 0x0102_1994),
        Err(_) => false,
    }
}

/// The unit a write in place must stay within: a page is written whole or
/// not at all when a process is killed; a power cut can tear a page at a
/// sector, so that durability asks for one 512-byte sector (the unit a disk
/// writes whole).
fn unit() -> u64 {
    match crate::durable::mode() {
        crate::durable::Durability::Power => 512,
        crate::durable::Durability::Process => 4096,
    }
}

impl Shared {
    /// Write the lease, only while it is this run's. The caller holds the state
    /// lock. Ok(false): not saved (not ours, refused, or taken over meanwhile).
    pub(super) fn save(&self, st: &mut State) -> Result<bool> {
        self.save_reserving(st, None)
    }

    /// [`Shared::save`]; with `reserve`, whitespace is left inside that output's
    /// `claimed` list (as much as the lease already weighs, at least 8 KiB), so
    /// that the next claims are written in place instead of rewriting the lease.
    pub(super) fn save_reserving(&self, st: &mut State, reserve: Option<&str>) -> Result<bool> {
        st.tail = None;
        if self.owner() != Some(true) {
            return Ok(false);
        }
        let path = self.lease_path();
        let (mut text, mark) = match reserve.filter(|_| self.in_place) {
            Some(out) => pyjson::dumps_map_marking(&st.doc.0, pyjson::Style::COMPACT, &["outputs", out, "claimed"]),
            None => (st.doc.to_json(), None),
        };
        let mut window = None;
        if let (Some(out), Some(at)) = (reserve, mark) {
            let pad = text.len().max(8192);
            text.insert_str(at, &" ".repeat(pad));
            let empty = text.as_bytes()[at - 1] == b'[';
            window = Some((out.to_string(), at as u64, (at + pad) as u64, empty));
        }
        match fsx::write_atomic_keep(&path, text.as_bytes(), self.busy()) {
            Ok(Some(file)) => {
                self.sys.hook.at(Step::Saved);
                if let (true, Ok(meta)) = (self.in_place, file.metadata()) {
                    use std::os::unix::fs::MetadataExt;
                    let window = window.map(|(output, at, end, empty)| Window { output, at, end, empty });
                    st.tail = Some(Tail { ino: meta.ino(), dev: meta.dev(), len: text.len() as u64, file, window });
                }
                Ok(!self.tombstoned())
            }
            Ok(None) => Ok(false),
            Err(e) => Err(Error::io("rewrite the lease", path, e)),
        }
    }

    /// Whether the lease file is still the one `tail` was written into.
    fn tail_is_current(&self, tail: &Tail) -> bool {
        use std::os::unix::fs::MetadataExt;
        !self.tombstoned()
            && fs::symlink_metadata(self.lease_path()).is_ok_and(|m| m.ino() == tail.ino && m.dev() == tail.dev)
    }

    /// Per-file claims without rewriting the lease: write `items` (the claims'
    /// JSON strings) into the whitespace reserved in `output`'s `claimed` list, in
    /// one `pwrite` that stays within one page, so a kill leaves the lease with
    /// or without the new claims, never torn. Only while the lease file is still
    /// the one this run wrote (same inode, no takeover mark), checked before and
    /// after the write. None: the window does not apply (the caller saves in
    /// full); Some(false): the lease is no longer this run's.
    pub(super) fn append_claims(&self, st: &mut State, output: &str, items: &[String]) -> Option<Result<bool>> {
        let tail = st.tail.as_mut()?;
        let w = tail.window.as_ref().filter(|w| w.output == output)?;
        let mut bytes = String::new();
        for (i, item) in items.iter().enumerate() {
            if !(i == 0 && w.empty) {
                bytes.push_str(", ");
            }
            bytes.push_str(item);
        }
        let len = bytes.len() as u64;
        let mut off = w.at;
        let unit = unit();
        if off / unit != (off + len - 1) / unit {
            off = (off / unit + 1) * unit;
        }
        if len > unit || off + len > w.end {
            return None;
        }
        let r = self.write_in_place(tail, bytes.as_bytes(), off)?;
        if let Some(w) = tail.window.as_mut() {
            w.at = off + len;
            w.empty = false;
        }
        Some(r)
    }

    /// A new top-level field (the doc must not have it yet) written in place at
    /// the end of the lease file, as `json.dumps` would place it: the final `}`
    /// becomes `, "<key>": <value>}`, in one write within one page.
    pub(super) fn append_field(&self, st: &mut State, key: &str, value: &str) -> Option<Result<bool>> {
        let tail = st.tail.as_mut()?;
        let mut bytes = String::from(", ");
        pyjson::write_str(&mut bytes, key, true);
        bytes.push_str(": ");
        bytes.push_str(value);
        bytes.push('}');
        let off = tail.len.checked_sub(1)?;
        let len = bytes.len() as u64;
        if off / unit() != (off + len - 1) / unit() {
            return None;
        }
        let r = self.write_in_place(tail, bytes.as_bytes(), off)?;
        tail.len = off + len;
        Some(r)
    }

    /// One write into the lease file this run last wrote, only while it is still
    /// the lease (checked before and after).
    fn write_in_place(&self, tail: &Tail, bytes: &[u8], off: u64) -> Option<Result<bool>> {
        if !self.tail_is_current(tail) {
            return Some(Ok(false));
        }
        use std::os::unix::fs::FileExt;
        tail.file.write_all_at(bytes, off).ok()?;
        // On the disk before the claimed files move: a power cut never leaves
        // moved files that the lease on the disk does not claim.
        if let Err(e) = crate::durable::file(&tail.file, &self.lease_path()) {
            return Some(Err(Error::io("sync the lease", self.lease_path(), e)));
        }
        self.sys.hook.at(Step::Saved);
        Some(Ok(self.tail_is_current(tail)))
    }
}
