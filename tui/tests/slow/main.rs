//! The `ubunye` binary's slow integration tests: the runs it kills (killtest,
//! killtest_cmd, store_killtest), the power cut (powercut, FUSE), the real
//! peer (interop) and S3 servers (store), the tmux smoke test (top_tmux) and
//! the long random walks (agreement, cli_fleet, damage): each 10 s or more
//! alone but killtest and top_tmux. Kept out of tui/tests/all so that `cargo
//! test -p ubunye-tui --test all` is quick; `scripts/test` runs both.

#[path = "../common/mod.rs"]
mod common;

mod agreement;
mod cli_fleet;
mod damage;
mod interop;
mod killtest;
mod killtest_cmd;
mod powercut;
mod store;
mod store_killtest;
mod top_tmux;
