//! The test helpers that the tests of both crates (`ubunye` in `tests/`,
//! `ubunye-tui` in `tui/tests/`) share, one copy each (issue 12): the fake
//! clock and process table. A dev-dependency of both crates; never published.

mod fakes;

pub use fakes::{FakeClock, FakeProc, FakeProcs};
