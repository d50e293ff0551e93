//! The `ubunye` binary's front end: the command line ([`cli`]), `ubunye
//! top`, the dashboard, and `ubunye demo`, the sandbox to try it on. It
//! renders the library's state model and calls its repair functions; it holds
//! no lease logic.
//!
//! * [`app`]: the state and its update; [`event`]: the loop and its one event
//!   enum; [`keys`]: the one table of keys; [`ui`]: drawing; [`popup`]: the
//!   two-phase repair; [`model`]: the data, kept up to date from file events;
//!   [`watch`]: notify or poll; [`term`]: the terminal, restored on every exit;
//!   [`filter`]: the `/` filter; [`view`]: the three views; [`demo`]: the
//!   sandbox builder and its actors.

// Every line printed goes through `cli::print` (a closed pipe must not panic).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod app;
pub mod cli;
pub mod demo;
pub mod event;
pub mod filter;
pub mod index;
pub mod keys;
pub mod model;
pub mod popup;
pub mod report;
pub mod term;
pub mod top;
pub mod ui;
pub mod view;
pub mod watch;
