//! The power-cut file system mounted for real: what a sync made durable
//! survives a cut, what it did not is lost, and nothing done after the cut
//! lands. Needs FUSE (`/dev/fuse`, `fusermount3`); without it: SKIPPED,
//! unless UBUNYE_REQUIRE_FUSE=1 (CI), when it fails.

use std::fs;
use std::io::Write;

use ubunye_cutfs::{Disk, fuse_or_skip};

#[test]
fn a_cut_keeps_what_was_synced_and_only_that() {
    if !fuse_or_skip("cutfs::mount") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let at = d.path().join("mnt");
    fs::create_dir(&at).unwrap();
    let disk = Disk::new();
    let m = disk.mount(&at).unwrap();
    fs::create_dir(at.join("dir")).unwrap();
    fs::File::open(&at).unwrap().sync_all().unwrap();
    let mut f = fs::File::create(at.join("dir/synced")).unwrap();
    f.write_all(b"kept").unwrap();
    f.sync_all().unwrap();
    fs::File::open(at.join("dir")).unwrap().sync_all().unwrap();
    let mut g = fs::File::create(at.join("dir/entry-only")).unwrap();
    g.write_all(b"bytes lost").unwrap();
    fs::File::open(at.join("dir")).unwrap().sync_all().unwrap();
    fs::write(at.join("dir/unsynced"), b"lost").unwrap();
    fs::rename(at.join("dir/synced"), at.join("dir/renamed")).unwrap();
    assert_eq!(m.ctl.syncs(), 4);
    m.cut();
    assert!(fs::write(at.join("dir/after"), b"x").is_err(), "a write after the cut was taken");
    drop((f, g));
    m.unmount().unwrap();
    disk.power_back();
    let m = disk.mount(&at).unwrap();
    let mut names: Vec<String> =
        fs::read_dir(at.join("dir")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["entry-only", "synced"], "neither the new file nor the rename was synced");
    assert_eq!(fs::read(at.join("dir/synced")).unwrap(), b"kept");
    assert_eq!(fs::read(at.join("dir/entry-only")).unwrap(), b"", "its bytes were never synced");
    m.unmount().unwrap();
}
