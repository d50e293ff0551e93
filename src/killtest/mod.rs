//! The verifier of `ubunye killtest`: what a use case's outputs hold,
//! compared by content with a reference run's ([`contents`]); what runs left
//! behind that nobody should find (debris, [`debris`]); and what a command
//! wrote outside the places `ubunye exec` gives it ([`writes`], [`outside`]).
//! It reads only; the harness that runs and kills the command is the front
//! end's.

pub mod contents;
pub mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::beneath::is_staging_name;
use crate::state::{ScanOptions, State};
use crate::sys::Sys;

pub use contents::{Contents, Diff};

/// The file killtest puts in each append output before any run: a file no
/// run wrote, which no run may remove.
pub const FOREIGN: &str = "killtest-foreign.txt";
/// What [`FOREIGN`] holds.
pub const FOREIGN_TEXT: &str = "put here by ubunye killtest before any run; no run may remove it\n";

/// One output of the command, as `--append`/`--overwrite` name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Output {
    /// Its name (`events` in `--append events=out/events`).
    pub name: String,
    /// Its folder, relative to the use case.
    pub rel: PathBuf,
    /// An append output (else an overwrite).
    pub append: bool,
}

/// Put [`FOREIGN`] in every append output of `uc` (making the folders).
pub fn plant_foreign(uc: &Path, outputs: &[Output]) -> io::Result<()> {
    for o in outputs.iter().filter(|o| o.append) {
        let dir = uc.join(&o.rel);
        fs::create_dir_all(&dir)?;
        fs::write(dir.join(FOREIGN), FOREIGN_TEXT)?;
    }
    Ok(())
}

/// Whether a path inside an output (relative to it) is one the comparison
/// leaves out: killtest's own file, and staging folders (debris, counted
/// apart).
fn not_compared(rel: &str) -> bool {
    rel == FOREIGN || Path::new(rel).components().any(|c| c.as_os_str().to_str().is_some_and(is_staging_name))
}

/// Every output's contents, by name.
pub fn read_outputs(uc: &Path, outputs: &[Output]) -> io::Result<BTreeMap<String, Contents>> {
    outputs.iter().map(|o| Ok((o.name.clone(), contents::read(&uc.join(&o.rel), &not_compared)?))).collect()
}

/// How every output of `got` differs from the same output of `reference`.
pub fn compare_outputs(
    reference: &BTreeMap<String, Contents>,
    got: &BTreeMap<String, Contents>,
) -> BTreeMap<String, Diff> {
    let empty = Contents::default();
    reference
        .keys()
        .chain(got.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|n| (n.clone(), contents::compare(reference.get(n).unwrap_or(&empty), got.get(n).unwrap_or(&empty))))
        .collect()
}

/// What the runs left that a finished use case should not hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Debris {
    /// Staging folders, temp files, leases, marks and records left over, one
    /// line each: `<kind>: <path>` (doctor's kinds, and `staging`,
    /// `not-finished`).
    pub leftover: Vec<String>,
    /// Files no run wrote ([`FOREIGN`]) that are gone or changed.
    pub foreign_lost: Vec<String>,
}

/// Look at `uc` after its last run: every batch in `keys` (task, key) must be
/// finished with no lease; nothing doctor would report may be there; no
/// staging folder may be left in or beside an output; every [`FOREIGN`] file
/// must be as it was put. Reads only.
pub fn debris(
    uc: &Path,
    outputs: &[Output],
    lineage_dir: Option<PathBuf>,
    keys: &[(String, String)],
    sys: &Sys,
) -> Result<Debris, String> {
    let mut d = Debris::default();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let opts = ScanOptions { lineage_dir, ..ScanOptions::default() };
    // A bare command's use case (no batch asked for) may have no state at all.
    let scan = if keys.is_empty() && !uc.join(".ubunye").exists() {
        None
    } else {
        Some(crate::state::scan(uc, &opts, sys).map_err(|e| e.to_string())?)
    };
    let no_batches = Vec::new();
    let batches = scan.as_ref().map_or(&no_batches, |s| &s.batches);
    for (task, key) in keys {
        match batches.iter().find(|b| &b.task == task && &b.key == key) {
            Some(b) if b.state == State::Finished => {}
            Some(b) => d.leftover.push(format!("not-finished: batch {key} of {task} is {}", b.state.word())),
            None => d.leftover.push(format!("not-finished: batch {key} of {task} has no note and no record")),
        }
    }
    for b in batches {
        for r in b.records.iter().filter(|r| r.status.as_deref() == Some("running")) {
            if seen.insert(r.path.clone()) {
                d.leftover.push(format!("running-record: {}", r.path.display()));
            }
        }
    }
    for f in scan.as_ref().map(crate::doctor::examine).unwrap_or_default() {
        if f.kind != "old-tombstone" && seen.insert(f.path.clone()) {
            d.leftover.push(format!("{}: {}", f.kind, f.path.display()));
        }
    }
    for o in outputs {
        let dir = uc.join(&o.rel);
        // In an output (at any depth), and beside it (an overwrite's new
        // folder and old copy).
        let mut places = vec![dir.clone()];
        places.extend(dir.parent().map(Path::to_path_buf));
        while let Some(p) = places.pop() {
            let Ok(rd) = fs::read_dir(&p) else { continue };
            for e in rd.flatten() {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                if is_staging_name(&name) {
                    if seen.insert(path.clone()) {
                        d.leftover.push(format!("staging: {}", path.display()));
                    }
                } else if path.starts_with(&dir) && !is_dir && name.ends_with(".tmp") {
                    if seen.insert(path.clone()) {
                        d.leftover.push(format!("temp-file: {}", path.display()));
                    }
                } else if path.starts_with(&dir) && is_dir {
                    places.push(path);
                }
            }
        }
        if o.append && fs::read_to_string(dir.join(FOREIGN)).ok().as_deref() != Some(FOREIGN_TEXT) {
            d.foreign_lost.push(dir.join(FOREIGN).display().to_string());
        }
    }
    Ok(d)
}

/// Whether the engine itself explains a changed file (relative to the use
/// case): its own state (`.ubunye/`, the run records' folder `lineage`), an
/// overwrite output's contents (swapped in whole), a file a finished note
/// lists as claimed, an output's `_SUCCESS` marker.
pub fn engine_wrote(rel: &str, outputs: &[Output], lineage: Option<&Path>, claimed: &BTreeSet<String>) -> bool {
    let p = Path::new(rel);
    p.starts_with(".ubunye")
        || lineage.is_some_and(|l| p.starts_with(l))
        || claimed.contains(rel)
        || outputs.iter().any(|o| (!o.append && p.starts_with(&o.rel)) || p == o.rel.join("_SUCCESS"))
}

/// The files the finished notes of `uc` list as claimed (relative to it).
pub fn claimed_files(uc: &Path, lineage_dir: Option<PathBuf>, sys: &Sys) -> Result<BTreeSet<String>, String> {
    let opts = ScanOptions { lineage_dir, ..ScanOptions::default() };
    let scan = crate::state::scan(uc, &opts, sys).map_err(|e| e.to_string())?;
    Ok(scan
        .batches
        .iter()
        .filter_map(|b| b.finished.as_ref())
        .flat_map(|f| f.outputs.iter().flat_map(|(_, files, _)| files.iter().cloned()))
        .collect())
}

/// The files changed between two listings of a use case that the engine
/// does not explain ([`engine_wrote`]): what the command wrote outside its
/// outputs' staging, which a kill leaves behind.
pub fn outside(
    before: &writes::Listing,
    after: &writes::Listing,
    outputs: &[Output],
    lineage: Option<&Path>,
    claimed: &BTreeSet<String>,
) -> Vec<String> {
    before.changed(after).into_iter().filter(|rel| !engine_wrote(rel, outputs, lineage, claimed)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_explains_its_state_its_claims_and_overwrites_only() {
        let outs = [
            Output { name: "events".into(), rel: "out/events".into(), append: true },
            Output { name: "totals".into(), rel: "out/totals".into(), append: false },
        ];
        let claimed: BTreeSet<String> = ["out/events/part-1".to_string()].into();
        let ok = |r: &str| engine_wrote(r, &outs, Some(Path::new("runs")), &claimed);
        assert!(ok(".ubunye/leases/x.json") && ok("runs/t/r.json") && ok("out/events/part-1"));
        assert!(ok("out/totals/any/thing") && ok("out/events/_SUCCESS"));
        assert!(
            !ok("out/events/part-2") && !ok("out/eventsx/a") && !ok("notes.txt") && !ok("out/events/dt=1/_SUCCESS")
        );
    }

    #[test]
    fn staging_and_killtests_own_file_are_not_compared() {
        assert!(not_compared(FOREIGN) && not_compared("dt=1/_ubunye-0123456789ab/part"));
        assert!(!not_compared("dt=1/part") && !not_compared("sub/killtest-foreign.txt"));
    }
}
