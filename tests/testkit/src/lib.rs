//! The test helpers that the tests of both crates (`ubunye` in `tests/`,
//! `ubunye-tui` in `tui/tests/`) share, one copy each: the fake
//! clock and process table, the peer's fixtures copied with their mtimes
//! restored, a `Sys` pinned to a host and a time, pictures of a folder to
//! compare before and after, a run that only looked dead, a seeded random
//! number generator, and S3-compatible servers on 127.0.0.1 (`s3`). A dev-dependency of both crates; never published.
//!
//! What only one crate's tests use stays in its own `tests/common`.

mod fakes;
mod fixtures;
mod picture;
mod rng;
pub mod s3;
mod settle;
mod sys;

pub use fakes::{FakeClock, FakeProc, FakeProcs};
pub use fixtures::{
    FIXTURES, Manifest, TASK, copy_tree, fixture, fixture_dir, fixture_in, key_of, root, set_mtime, task,
    try_set_mtime, vars,
};
pub use picture::{entries, files, normalize, normalize_json, record_ids, rewrite, same_snapshot, snapshot, tree};
pub use rng::Rng;
pub use settle::write_back_when_renamed;
pub use sys::{ELSEWHERE, FIXTURE_HOST, fake_sys, fast_timing};
