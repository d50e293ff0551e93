//! The library's integration tests, one module for each former test file,
//! linked into one binary: every test binary links the library with
//! object_store, rustls and aws-lc, so two dozen of them spent most of a clean
//! test build linking. The long runs (real SIGKILLs, the S3 servers, the big
//! random walks) are in tests/slow. One module: `cargo test --test all engine::`.

#[path = "../common/mod.rs"]
mod common;

mod bucket_agreement;
mod bucket_explain_edges;
mod bucket_listing;
mod bucket_poll;
mod bucket_protocol;
mod bucket_recovery;
mod bucket_rerun;
mod bucket_state;
mod docs_name_tests;
mod engine;
mod fixture_conformance;
mod fuzz;
mod key_vectors;
mod landing;
mod liveness;
mod lost_run;
mod module_graph;
mod peer_repairs;
mod state;
mod tally;
mod tally_edges;
mod verdict_edges;
