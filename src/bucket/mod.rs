//! An object store and the lease protocol over it: a batch's lease,
//! claims, finished note and run record in a bucket that runs share, with
//! nothing else shared. The documents are the peer's JSON, under the same
//! layout as on disk (`<prefix>/.ubunye/leases/<task>/<key>.json`,
//! `.finished.json`, `lineage/<task>/<run>.json`); docs/object-storage.md
//! maps it against ADR 008.
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
//!   claims, read strictly; `recover.rs`: a dead run's lease recovered;
//!   `append.rs`: claimed uploads; `unwind.rs`: how a landing ends short of
//!   a commit (`LandError`), and a landing whose request failed (the lease
//!   read again, what was made visible taken back);
//!   `probe.rs`: the check at a run's start.
//! - `audit.rs`: an object per repair under `.ubunye/repairs/`.
//!
//! It is the store, as `crate::lease` is the disk: what runs and reads over
//! it sits with the disk's in the module of each concept, and imports this
//! one (`crate::exec::store`: `ubunye exec`; `crate::state::store`: list,
//! the dashboard's Poller, runs; `crate::explain::store`,
//! `crate::doctor::store`, `crate::census::store`, `crate::repair::store`).

mod append;
mod audit;
mod claims;
mod lease;
mod memory;
mod objects;
mod place;
mod probe;
mod recover;
mod s3;
mod unwind;
mod url;

pub use append::{Landed, Planned, land, plan};
pub use audit::{audit, repairs_of};
pub use claims::{Replacing, store_replaces};
pub use claims::{claim_key, is_run_uuid};
pub use lease::{Acquire, BucketError, Holder, Lease, Refused, acquire, age_of};
pub(crate) use lease::{lifetime_of, read_doc, stalled_after};
pub use memory::Memory;
pub use objects::{ErrorKind, Got, Listed, Objects, StoreError, Upload, Written};
pub use place::Place;
pub use probe::probe;
pub(crate) use recover::common_prefix;
pub use s3::S3;
pub use unwind::{LandError, Unreachable};
pub use url::{StoreUrl, is_store_url, plain_key};
