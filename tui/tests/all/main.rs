//! The `ubunye` binary's integration tests, one module for each former test
//! file, linked into one binary: each of ~40 binaries linked the library with
//! object_store, rustls and aws-lc, so a clean test build spent most of its
//! time linking. The long runs are in tui/tests/slow. The snapshots live in
//! tui/tests/all/snapshots, named by module path where a test keeps insta's
//! prefix (`all__leases__list-kept.snap`). One module: `cargo test -p
//! ubunye-tui --test all leases::`.

#[path = "../common/mod.rs"]
mod common;

mod cli_exit;
mod cli_fail_if_any;
mod cli_filters;
mod cli_help;
mod cli_install;
mod cli_key;
mod cli_output;
mod demo;
mod exec;
mod exec_reap;
mod exec_runs;
mod exec_usage;
mod leases;
mod looking;
mod metrics;
mod metrics_prometheus;
mod path_safety;
mod readme;
mod repair;
mod secrets_peer;
mod top;
mod top_colour;
mod top_fleet;
mod top_keys;
mod top_model;
mod top_store;
mod top_store_edges;
mod top_watch;
mod verdicts;
