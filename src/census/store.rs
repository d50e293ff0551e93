//! A use case in a store counted as `ubunye metrics` counts a folder
//! ([`Census`]): its batches judged by a [`Poller`], doctor's findings with
//! them.

use std::time::Instant;

use super::Census;
use crate::bucket::{Objects, StoreUrl};
use crate::doctor::store::findings;
use crate::state::State;
use crate::state::store::Poller;
use crate::sys::Timing;

/// The use case under `uc` counted once, as [`Poller::census`] counts it.
pub fn count(objects: &dyn Objects, uc: &StoreUrl, timing: &Timing, label: &str, per_batch: bool) -> Census {
    Poller::new().census(objects, uc, timing, label, per_batch)
}

impl Poller {
    /// The use case counted as `ubunye metrics` counts one on disk
    /// ([`Census`]), labelled `label`, reading only what changed; doctor's
    /// findings with it. A store that does not answer is a census with its
    /// error.
    pub fn census(
        &mut self,
        objects: &dyn Objects,
        uc: &StoreUrl,
        timing: &Timing,
        label: &str,
        per_batch: bool,
    ) -> Census {
        let started = Instant::now();
        let counted = self.poll(objects, uc, timing).and_then(|r| {
            let mut c = Census { use_case: label.to_string(), ..Census::default() };
            for j in &r.judged {
                c.add(&j.batch, r.now, per_batch);
            }
            c.scan_errors = c.tasks.values().map(|t| t.states[State::Unreadable.rank()]).sum();
            c.scan_errors += r.problems.len() as u64;
            let problems = r.problems.iter().map(crate::doctor::problem);
            for f in problems.chain(findings(objects, uc, &r.judged)?) {
                *c.findings.entry(f.kind).or_default() += 1;
            }
            Ok(c)
        });
        let mut c = counted.unwrap_or_else(|e| Census {
            use_case: label.to_string(),
            error: Some(e.to_string()),
            scan_errors: 1,
            ..Census::default()
        });
        c.duration = started.elapsed();
        c
    }
}
