//! ubunye: the lease/claim engine of ADR 008, byte-compatible with
//! ubunye-engine 0.8.0, and the state model the on-call tools are built on.
//!
//! The engine never prints: every operation returns a typed outcome or an
//! [`error::Error`], and the front end (the `ubunye` binary's CLI and
//! dashboard, in `tui/`) renders them. This crate has no command-line parser
//! and no terminal code.

// The engine prints nothing: the front end (tui/) renders what it returns.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]
// Every public item says in one line what it is.
#![warn(missing_docs)]

pub mod append;
pub mod beneath;
pub mod bucket;
pub mod census;
pub mod doctor;
pub mod documents;
pub mod durable;
pub mod error;
pub mod exec;
pub mod explain;
pub mod fleet;
pub mod fsx;
pub mod key;
pub mod killtest;
pub mod layout;
pub mod lease;
pub mod lineage;
pub mod liveness;
pub mod protocol;
pub mod pyjson;
pub mod pyparse;
pub mod reap;
pub mod repair;
pub mod secrets;
pub mod state;
pub mod suggest;
pub mod sys;
pub mod tally;
pub mod timefmt;
pub mod vars;

pub use error::{Error, Refusal, RefusalKind, Result};
pub use lease::{Acquired, LeaseSpec, RunLease};
pub use sys::{Sys, Timing};
