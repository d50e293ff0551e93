//! Publishing what the command wrote, once it succeeded, in an order that a
//! failure or a kill at any point can undo:
//!
//! 1. everything that can fail while nothing is visible yet: every append's
//!    staging folder listed through handles and checked for name clashes, every
//!    overwrite's folders checked, every append's files claimed, and every
//!    overwrite's new folder recorded in the lease (its identity);
//! 2. the appends land (each file moved in, checked against the takeover mark);
//! 3. the overwrites are swapped in, last. Their old copies stay (at the staging
//!    name, or `<staging>.old`) until the run commits.
//!
//! A failure anywhere is rolled back by the lease: claimed files are taken back
//! and swapped outputs put back ([`crate::beneath::Beneath::undo_swap`]); a kill
//! is rolled back the same way by whoever takes the run over.

use std::fs;
use std::path::PathBuf;

use super::outputs::{self, Swap};
use super::{Event, Output};
use crate::append::{Landing, StagedAppend};
use crate::error::{Error, Refusal, RefusalKind, Result};
use crate::lease::RunLease;
use crate::sys::Step;

/// An output with its staging folder made and named in the lease.
pub(super) struct Prepared<'a> {
    pub out: &'a Output,
    pub staging: PathBuf,
    pub append: Option<StagedAppend>,
}

/// Note an output in the lease, and name its staging folder there before it exists.
pub(super) fn prepare<'a>(lease: &RunLease, out: &'a Output) -> Result<Prepared<'a>> {
    lease.writing(&out.name, out.append, true)?;
    if out.append {
        let st = StagedAppend::begin(lease, &out.name, &out.path)?;
        return Ok(Prepared { out, staging: st.staging.clone(), append: Some(st) });
    }
    let staging = outputs::overwrite_staging(&out.path);
    lease.staging(&out.name, &staging)?;
    if let Some(parent) = out.path.parent() {
        crate::durable::create_dir_all(parent).map_err(|e| Error::io("create the output's folder", parent, e))?;
    }
    fs::create_dir(&staging).map_err(|e| Error::io("create the staging folder", &staging, e))?;
    Ok(Prepared { out, staging, append: None })
}

fn lost(lease: &RunLease, output: &str) -> Error {
    Refusal::new(
        RefusalKind::Lost,
        format!(
            "Run {} no longer holds the lease on {}; its overwrite of {output} is not published.",
            crate::documents::short(lease.run_id()),
            lease.task(),
        ),
    )
    .into()
}

/// Land the appends and swap the overwrites in (see the module docs). On an
/// error the caller ends the lease as failed, which undoes what was done.
pub(super) fn publish(
    lease: &RunLease,
    prepared: &[Prepared<'_>],
    exchange: bool,
    events: &mut dyn FnMut(Event),
) -> Result<()> {
    // The write-back of what the command wrote starts now, beside the
    // claims and the renames, so that the landing's own sync is left little
    // to do; that sync, before the done mark, is what makes it durable.
    let early = crate::durable::start_early(
        prepared.iter().filter(|p| p.append.is_some()).map(|p| p.out.path.clone()).collect(),
    );
    let done = publish_all(lease, prepared, exchange, events);
    let early = early.map(|h| h.join().unwrap_or(Ok(())));
    match (done, early) {
        (Err(e), _) => Err(e),
        (Ok(()), Some(Err(e))) => {
            let at = prepared.iter().find(|p| p.append.is_some()).map(|p| p.out.path.clone()).unwrap_or_default();
            Err(Error::io("sync the landed files", at, e))
        }
        (Ok(()), _) => Ok(()),
    }
}

fn publish_all(
    lease: &RunLease,
    prepared: &[Prepared<'_>],
    exchange: bool,
    events: &mut dyn FnMut(Event),
) -> Result<()> {
    // 1. Nothing visible changes here.
    let mut landings: Vec<(&Prepared<'_>, Landing<'_>)> = Vec::new();
    for p in prepared {
        if let Some(st) = &p.append {
            landings.push((p, st.prepare(lease)?));
        }
    }
    let mut swaps = Vec::new();
    for p in prepared.iter().filter(|p| !p.out.append) {
        swaps.push((p.out.name.clone(), outputs::check_publishable(&p.staging, &p.out.path)?));
    }
    for (_, landing) in &mut landings {
        landing.claim(lease)?;
    }
    lease.note_swaps(&swaps)?;
    // 2. The appends.
    for (p, landing) in landings {
        let landed = landing.move_in(lease)?;
        events(Event::Landed { output: p.out.name.clone(), files: landed.files });
    }
    // 3. The overwrites, last; their old copies go at commit.
    for p in prepared.iter().filter(|p| !p.out.append) {
        if !lease.still_owned() {
            return Err(lost(lease, &p.out.name));
        }
        // Only a swap this run made (wholly, or the old output moved aside) is
        // put back by its own rollback: one whose exchange failed is not its own.
        let how = outputs::swap_in(
            &p.staging,
            &p.out.path,
            exchange,
            |old| lease.note_old_copy(&p.out.name, old),
            || {
                lease.swap_made(&p.out.name);
                lease.step(Step::MovedAside)
            },
        )?;
        lease.swap_made(&p.out.name);
        lease.step(Step::Swapped);
        events(Event::Swapped { output: p.out.name.clone(), how });
    }
    Ok(())
}

/// Whether an overwrite left its old copy to remove (for the unleased path).
pub(super) fn old_copy_of(how: Swap, staging: &std::path::Path) -> Option<PathBuf> {
    match how {
        Swap::First => None,
        Swap::Exchanged => Some(staging.to_path_buf()),
        Swap::TwoRenames => Some(outputs::old_copy(staging)),
    }
}
