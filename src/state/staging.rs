//! Staging folders as people need them described: where an output is, what
//! staging folders are in and beside it, and how much each holds. Read only,
//! to report: nothing here decides what is removed (a takeover removes only
//! the staging folders a lease names, ADR 008).

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::beneath::{is_staging_name, normpath};

/// How much a folder holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FolderSize {
    /// Files under it (a symlink counts as one).
    pub files: u64,
    /// Their sizes added up, in bytes.
    pub bytes: u64,
    /// False when the walk stopped at its bound ([`MEASURE_AT_MOST`] entries)
    /// or met a folder it could not list: then the figures are at least these.
    pub complete: bool,
}

/// A walk stops after this many entries: a report must answer at once.
pub const MEASURE_AT_MOST: u64 = 100_000;

impl FolderSize {
    /// `3 files, 1.2 KiB`, `empty`, or `at least 100000 files, ...`.
    pub fn text(&self) -> String {
        if self.files == 0 && self.complete {
            return "empty".into();
        }
        let least = if self.complete { "" } else { "at least " };
        format!("{least}{} file(s), {}", self.files, size_text(self.bytes))
    }
}

/// `512 B`, `1.2 KiB`, `3.4 MiB`.
pub fn size_text(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else if n < 1024 * 1024 * 1024 {
        format!("{:.1} MiB", n as f64 / 1048576.0)
    } else {
        format!("{:.1} GiB", n as f64 / 1073741824.0)
    }
}

/// Count the files (and their bytes) under `dir`, without following symlinks
/// (a link counts as a file). None when `dir` is not a folder.
pub fn measure(dir: &Path) -> Option<FolderSize> {
    if !fs::symlink_metadata(dir).ok()?.is_dir() {
        return None;
    }
    let mut size = FolderSize { complete: true, ..FolderSize::default() };
    let mut todo = vec![dir.to_path_buf()];
    let mut seen = 0u64;
    while let Some(d) = todo.pop() {
        let Ok(rd) = fs::read_dir(&d) else {
            size.complete = false;
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > MEASURE_AT_MOST {
                size.complete = false;
                return Some(size);
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(e.path()),
                _ => {
                    size.files += 1;
                    size.bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
        }
    }
    Some(size)
}

/// A staging folder found in or beside an output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StagingFolder {
    /// The folder.
    #[serde(serialize_with = "super::lossy_path")]
    pub path: PathBuf,
    /// What it holds; None when it is not a folder (a file or a symlink so named).
    pub size: Option<FolderSize>,
}

/// The staging folders Ubunye names in (`_ubunye-<12hex>`) and beside
/// (`.<name>.ubunye-<12hex>`, and `….old`) the output folder `output`.
pub fn around(output: &Path) -> Vec<StagingFolder> {
    let mut found = Vec::new();
    let mut look = |dir: &Path, keep: &dyn Fn(&str) -> bool| {
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if is_staging_name(&name) && keep(&name) {
                    found.push(e.path());
                }
            }
        }
    };
    look(output, &|n| n.starts_with("_ubunye-"));
    if let (Some(parent), Some(name)) = (output.parent(), output.file_name()) {
        let prefix = format!(".{}.ubunye-", name.to_string_lossy());
        look(parent, &|n| n.starts_with(&prefix));
    }
    found.sort();
    found.into_iter().map(|path| StagingFolder { size: measure(&path), path }).collect()
}

/// At most this many notes, then records, are read to find an output's
/// folder: a report must answer at once in a task of 100,000 batches, where
/// the output may never have been claimed.
pub const FOLDER_LOOKS: usize = 64;

/// Where the output named `output` of a task is, as the task's own files say:
/// the folder of a file a finished note claimed for it, else a run record's
/// location for it that is inside the use case. Reads up to
/// [`FOLDER_LOOKS`] of the task's notes (and records, if no note helps)
/// until one answers. None when none of them says.
pub fn output_folder(root: &Path, leases_dir: &Path, records_dir: &Path, output: &str) -> Option<PathBuf> {
    let files = |dir: &Path, keep: &dyn Fn(&str) -> bool| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.file_name().is_some_and(|n| keep(&n.to_string_lossy())))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    for note in files(leases_dir, &|n| n.ends_with(".finished.json")).into_iter().take(FOLDER_LOOKS) {
        let Ok(bytes) = crate::fsx::read_regular(&note) else { continue };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else { continue };
        let claims = v["outputs"][output]["claimed"].as_array().cloned().unwrap_or_default();
        if let Some(c) = claims.iter().find_map(|c| c.as_str())
            && let Some(folder) = claim_output(root, c)
        {
            return Some(folder);
        }
    }
    for rec in files(records_dir, &|n| n.ends_with(".json")).into_iter().take(FOLDER_LOOKS) {
        let Ok(bytes) = crate::fsx::read_regular(&rec) else { continue };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else { continue };
        let outs = v["outputs"].as_array().cloned().unwrap_or_default();
        let at = outs.iter().find(|o| o["name"] == output).and_then(|o| o["location"].as_str()).map(PathBuf::from);
        if let Some(at) = at.map(|p| normpath(&p)).filter(|p| p.starts_with(root)) {
            return Some(at);
        }
    }
    None
}

/// The output folder of a claimed file: its folder above any `name=value`
/// partition folders.
fn claim_output(root: &Path, claim: &str) -> Option<PathBuf> {
    let full = normpath(&root.join(claim));
    let mut d = full.parent()?.to_path_buf();
    while d.file_name().is_some_and(|n| n.to_string_lossy().contains('=')) {
        d.pop();
    }
    d.starts_with(root).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_staging_around_an_output() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out/events");
        fs::create_dir_all(out.join("_ubunye-0123456789ab/p=1")).unwrap();
        fs::write(out.join("_ubunye-0123456789ab/p=1/a"), b"abc").unwrap();
        fs::create_dir_all(d.path().join("out/.events.ubunye-abcdef012345")).unwrap();
        fs::create_dir_all(d.path().join("out/.other.ubunye-abcdef012345")).unwrap();
        fs::create_dir_all(out.join("_ubunye-nothex")).unwrap();
        let found = around(&out);
        let names: Vec<String> =
            found.iter().map(|s| s.path.strip_prefix(d.path()).unwrap().display().to_string()).collect();
        assert_eq!(names, ["out/.events.ubunye-abcdef012345", "out/events/_ubunye-0123456789ab"]);
        assert_eq!(found[0].size.unwrap().text(), "empty");
        assert_eq!(found[1].size.unwrap().text(), "1 file(s), 3 B");
        assert_eq!(measure(&out.join("missing")), None);
    }
}
