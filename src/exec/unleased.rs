//! `UBUNYE_RUN_LEASE=off`: the same staging and publication, no lease, no
//! claims (so nothing that landed can be taken back, as the peer without leases).

use std::fs;
use std::path::PathBuf;

use super::publish::{Prepared, old_copy_of};
use super::{Event, ExecEnd, ExecSpec, Lineage, child, child_env, failed_note, outputs, record_spec};
use crate::beneath::Beneath;
use crate::error::{Error, Result};
use crate::lineage::RunRecord;
use crate::sys::Sys;

pub(super) fn run(
    spec: &ExecSpec,
    key: &str,
    sys: Sys,
    events: &mut dyn FnMut(Event),
    ends: &super::RecordEnd,
) -> Result<ExecEnd> {
    let beneath =
        Beneath::new(&spec.usecase_dir).map_err(|e| Error::io("open the use-case folder", &spec.usecase_dir, e))?;
    let mut prepared = Vec::new();
    for out in &spec.outputs {
        let staging = if out.append {
            out.path.join(format!("_ubunye-{}", crate::fsx::hex12()))
        } else {
            outputs::overwrite_staging(&out.path)
        };
        let make = if out.append {
            fs::create_dir_all(&out.path)
        } else {
            out.path.parent().map_or(Ok(()), fs::create_dir_all)
        };
        make.and_then(|_| fs::create_dir(&staging)).map_err(|e| Error::io("create the staging folder", &staging, e))?;
        prepared.push(Prepared { out, staging, append: None });
    }
    let cleanup = |prepared: &[Prepared<'_>]| {
        for p in prepared {
            outputs::remove_unleased(&beneath, &p.staging);
        }
    };
    let mut record = match &spec.lineage {
        Lineage::Off => None,
        Lineage::Dir(dir) => RunRecord::start(dir, &record_spec(spec), sys.clock.now(), sys.timing.busy_for).ok(),
    };
    events(Event::Started { run_id: spec.run_id.clone(), key: key.to_string() });
    let end = match child::run(&spec.command, &child_env(spec, key, &prepared), super::child_options(spec, &sys)) {
        Ok(child::Ran::Ended(end)) => end,
        Ok(child::Ran::NotStarted(why, e)) => {
            cleanup(&prepared);
            let message = super::not_started_text(spec, &e);
            ends.finish(&mut record, "error", Some(format!("CommandFailed: {message}")), sys.clock.now());
            return Err(Error::NotStarted { why, message });
        }
        Err(e) => {
            cleanup(&prepared);
            return Err(Error::io("start", PathBuf::from(&spec.command[0]), e));
        }
    };
    if end.left_behind > 0 {
        events(Event::LeftBehind { processes: end.left_behind, unstopped: end.unstopped });
    }
    if !end.success() {
        cleanup(&prepared);
        ends.finish(&mut record, "error", Some(failed_note(spec, &end)), sys.clock.now());
        return Ok(ExecEnd::CommandFailed { child: end, kept: false });
    }
    // As a leased run: every check before the first move, overwrites last.
    let mut listings = Vec::new();
    for p in prepared.iter().filter(|p| p.out.append) {
        let listing = crate::append::list(&p.out.path, &p.staging)?;
        if let Some(rel) = listing.clash() {
            cleanup(&prepared);
            return Err(Error::io(
                "land",
                p.out.path.join(rel),
                std::io::Error::new(std::io::ErrorKind::AlreadyExists, "already exists in the output"),
            ));
        }
        listings.push(p);
    }
    for p in prepared.iter().filter(|p| !p.out.append) {
        outputs::check_publishable(&p.staging, &p.out.path)?;
    }
    for p in listings {
        let n = outputs::land_unleased(&beneath, &p.staging, &p.out.path)?;
        events(Event::Landed { output: p.out.name.clone(), files: n });
    }
    let mut old = Vec::new();
    for p in prepared.iter().filter(|p| !p.out.append) {
        let how = outputs::swap_in(&p.staging, &p.out.path, sys.knobs.exchange, |_| Ok(()), || {})?;
        old.extend(old_copy_of(how, &p.staging));
        events(Event::Swapped { output: p.out.name.clone(), how });
    }
    for o in old {
        outputs::remove_unleased(&beneath, &o);
    }
    ends.finish(&mut record, "success", None, sys.clock.now());
    Ok(ExecEnd::Done { run_id: spec.run_id.clone(), key: key.to_string(), commit: None, kept: false })
}
