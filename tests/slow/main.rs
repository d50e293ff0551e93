//! The library's slow integration tests: the runs SIGKILLed at every step
//! (kill, exec_kill), the contract against real S3 servers (s3_contract) and
//! the long random walks (explain_index, path_safety), each 14 s or more alone
//! but exec_kill. Kept out of tests/all so that `cargo test --test all` is
//! quick; `scripts/test` runs both.

#[path = "../common/mod.rs"]
mod common;

mod exec_kill;
mod explain_index;
mod kill;
mod path_safety;
mod s3_contract;
