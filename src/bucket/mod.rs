//! The protocol over an object store: a batch's lease, claims, finished
//! note and run record in a bucket that runs share, with nothing else
//! shared. The documents are the peer's JSON, under the same layout as
//! on disk (`<prefix>/.ubunye/leases/<task>/<key>.json`, `.finished.json`,
//! `lineage/<task>/<run>.json`); docs/object-storage.md maps it against ADR
//! 008.
//!
//! What it rests on, each checked at the start of a run (`probe.rs`) and by
//! the contract tests against real servers: a conditional create has one
//! winner; a conditional update or delete on a stale ETag is refused; a
//! multipart upload is invisible until completed and cannot be completed
//! once aborted. The lease's age is told by the store's clock alone.
//!
//! - `url.rs`: `s3://bucket/prefix`, and the names the client sends as given.
//! - `objects.rs`: the operations the protocol needs ([`Objects`]); `s3/`
//!   over S3 (`answers.rs` reads its replies), `memory.rs` in memory for tests.
//! - `place.rs`: a batch's place (its lease's, note's and records' keys).
//! - `lease.rs`: take, save, take over, release; `claims.rs`: what a lease
//!   claims, read strictly; `staging.rs`: a run's local folder, swept once
//!   its run is dead; `recover.rs`: a dead run's lease recovered;
//!   `append.rs`: claimed uploads; `unwind.rs`: how a landing ends short of
//!   a commit (`LandError`), and a landing whose request failed (the lease
//!   read again, what was made visible taken back);
//!   `probe.rs`: the check at a run's start.
//! - `run.rs`: `ubunye exec` against a store; `repair.rs`: `leases takeover`;
//!   `audit.rs`: an object per repair under `.ubunye/repairs/`.
//! - `look.rs` (`leases list`, `top`), `inspect.rs` (`explain`), `doctor.rs`,
//!   `census.rs` (`metrics`, the fleet view),
//!   `records.rs` (`runs`): they only read; `judge.rs` puts what they read
//!   into the disk's state model, so a store's batch has the same states.

mod append;
mod audit;
mod census;
mod claims;
mod doctor;
mod inspect;
mod judge;
mod lease;
mod look;
mod memory;
mod objects;
mod place;
mod probe;
mod records;
mod recover;
mod repair;
mod run;
mod s3;
mod staging;
mod unwind;
mod url;

pub use append::{Landed, Planned, land, plan};
pub use audit::{audit, repairs_of};
pub use census::census;
pub use claims::claim_key;
pub use claims::{Replacing, store_replaces};
pub use doctor::doctor;
pub use inspect::{Found, explain, find};
pub use judge::StoreBatch;
pub use lease::{Acquire, BucketError, Holder, Lease, Refused, acquire, age_of};
pub use look::{Polled, Poller, batches, look};
pub use memory::Memory;
pub use objects::{ErrorKind, Got, Listed, Objects, StoreError, Upload, Written};
pub use place::Place;
pub use probe::probe;
pub use records::records;
pub use repair::{TakeoverEnd, takeover};
pub use run::{BucketEnd, BucketRun, run};
pub use s3::S3;
pub use staging::{Staging, base_in as staging_base_in};
pub use unwind::{LandError, Unreachable};
pub use url::{StoreUrl, is_store_url, plain_key};
