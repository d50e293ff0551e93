//! The `ubunye` binary's front end: the command line ([`cli`]), `ubunye
//! top`, the dashboard, and `ubunye demo`, the sandbox to try it on. It
//! renders the library's state model and calls its repair functions; it holds
//! no lease logic.
//!
//! * [`cli`]: parsing and rendering, one file per command;
//! * [`top`]: the dashboard (its state, loop, reads and drawing);
//! * [`demo`]: the sandbox builder and its actors;
//! * [`report`]: the engine's reports as text, for the CLI and the dashboard;
//! * [`console`]: printing, colour, the `-d` check and the exit codes, which
//!   all of them share.
//!
//! The arrows point one way: `cli` → `top`, `demo`, `report`, `console`;
//! `top` and `demo` → `report`, `console`; nothing points back at `cli`.

// Every line printed goes through `console::print` (a closed pipe must not panic).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

/// mimalloc for every program built with this crate: glibc's allocator was
/// about 28 % of a million-batch list's samples (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod cli;
pub mod console;
pub mod demo;
pub mod report;
pub mod top;
