//! Where the files are and what their names mean (FORMAT.md §1–2).

use std::path::{Path, PathBuf};

/// `<usecase>/<package>/<task>`, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct TaskPath(String);

impl TaskPath {
    /// Three non-empty parts joined by `/`; none `.` or `..`.
    pub fn parse(s: &str) -> Result<TaskPath, String> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok = parts.len() == 3
            && parts.iter().all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.contains('\0') && !p.contains('\\'));
        if ok {
            Ok(TaskPath(s.to_string()))
        } else {
            Err(format!(
                "'{s}' is not a task path: write it as <usecase>/<package>/<task>, for example demo/sales/ingest"
            ))
        }
    }
    /// `<u>/<p>/<t>` from the peer's `-u`, `-p` and `-t`, checked as
    /// [`TaskPath::parse`] checks it.
    pub fn from_parts(u: &str, p: &str, t: &str) -> Result<TaskPath, String> {
        TaskPath::parse(&format!("{u}/{p}/{t}"))
    }
    /// The task path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Its three parts: use case, package, task.
    pub fn parts(&self) -> (&str, &str, &str) {
        let mut it = self.0.splitn(3, '/');
        let u = it.next().unwrap_or_default();
        let p = it.next().unwrap_or_default();
        let t = it.next().unwrap_or_default();
        (u, p, t)
    }
}

impl std::fmt::Display for TaskPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `<uc>/.ubunye`
pub fn ubunye_dir(uc: &Path) -> PathBuf {
    uc.join(".ubunye")
}

/// When `path` is a `.ubunye` folder or inside one (a `-d` given one level
/// too deep): the folder that holds that `.ubunye`, the use case meant.
pub fn use_case_above(path: &Path) -> Option<PathBuf> {
    let mut above = PathBuf::new();
    for c in path.components() {
        if c.as_os_str() == ".ubunye" {
            return Some(above);
        }
        above.push(c);
    }
    None
}

/// `<uc>/.ubunye/leases`
pub fn leases_root(uc: &Path) -> PathBuf {
    uc.join(".ubunye").join("leases")
}

/// `<uc>/.ubunye/lineage`: the default lineage folder.
pub fn lineage_root(uc: &Path) -> PathBuf {
    uc.join(".ubunye").join("lineage")
}

/// Whether a run id can be part of a file name (`.done-<id>`, `.taken-<id>`,
/// `<id>.json`).
pub fn run_id_is_safe(id: &str) -> bool {
    !id.contains('/') && !id.contains('\0') && id.len() <= 200
}

/// The names of one batch's files in its task's lease folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeasePaths {
    /// The task's lease folder: `<uc>/.ubunye/leases/<task>`.
    pub dir: PathBuf,
    /// The batch key (16 hex digits).
    pub key: String,
}

impl LeasePaths {
    /// The files of batch `key` of `task` in the use case `uc`.
    pub fn new(uc: &Path, task: &TaskPath, key: &str) -> LeasePaths {
        LeasePaths { dir: leases_root(uc).join(task.as_str()), key: key.to_string() }
    }
    /// `<key>.json`
    pub fn lease(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.key))
    }
    /// `<key>.finished.json`
    pub fn finished(&self) -> PathBuf {
        self.dir.join(format!("{}.finished.json", self.key))
    }
    /// `<key>.done-<run_id>`
    pub fn done(&self, run_id: &str) -> PathBuf {
        self.dir.join(format!("{}.done-{run_id}", self.key))
    }
    /// `<key>.taken-<run_id>` (the suffix is empty for a lease with no run id).
    pub fn taken(&self, run_id: &str) -> PathBuf {
        self.dir.join(format!("{}.taken-{run_id}", self.key))
    }
    /// A fresh `<key>.dead-<8hex>.json`.
    pub fn dead_new(&self) -> PathBuf {
        self.dir.join(format!("{}.dead-{}.json", self.key, crate::fsx::hex8()))
    }
}

/// What a name in a lease folder is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// The lease: `<key>.json`.
    Lease {
        /// The batch key.
        key: String,
    },
    /// The finished note: `<key>.finished.json`.
    Finished {
        /// The batch key.
        key: String,
    },
    /// A done mark, `<key>.done-<run_id>`: that run got to commit.
    Done {
        /// The batch key.
        key: String,
        /// The run id after `done-`.
        run: String,
    },
    /// A takeover tombstone, `<key>.taken-<run_id>`: that run was taken over.
    Taken {
        /// The batch key.
        key: String,
        /// The run id after `taken-` (empty for a lease that named none).
        run: String,
    },
    /// A dead run's lease renamed aside, `<key>.dead-<8hex>.json` (an orphan
    /// when left).
    Dead {
        /// The batch key.
        key: String,
    },
    /// A temp file of a lease, note or dead-lease rewrite.
    Tmp {
        /// The batch key.
        key: String,
    },
    /// A `.clock-<8hex>` probe of the disk's clock, removed at once.
    Clock,
    /// Named after a key (`<key>.<anything else>`), but not a file this
    /// engine or the peer 0.8.0 writes (`<key>.tried`, from ubunye-engine 0.9.1).
    Unknown {
        /// The batch key.
        key: String,
    },
    /// Anything else: a name that is not `<key>.<something>`.
    Other,
}

/// Whether `s` is a batch key: 16 lowercase hex digits.
pub fn is_key(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What [`classify`] says of a name, borrowed from it: a scan of a folder of
/// 10,000 names copies only the few it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// [`Entry::Lease`].
    Lease,
    /// [`Entry::Finished`].
    Finished,
    /// [`Entry::Done`].
    Done,
    /// [`Entry::Taken`].
    Taken,
    /// [`Entry::Dead`].
    Dead,
    /// [`Entry::Tmp`].
    Tmp,
    /// [`Entry::Clock`].
    Clock,
    /// [`Entry::Unknown`].
    Unknown,
    /// [`Entry::Other`].
    Other,
}

/// A lease-folder name's kind, its key and its run (`""` where it has none).
pub fn kind_of(name: &str) -> (Kind, &str, &str) {
    if name.starts_with(".clock-") {
        return (Kind::Clock, "", "");
    }
    let Some((key, rest)) = name.split_at_checked(16) else {
        return (Kind::Other, "", "");
    };
    if !is_key(key) || !rest.starts_with('.') {
        return (Kind::Other, "", "");
    }
    let rest = &rest[1..];
    if rest == "json" {
        return (Kind::Lease, key, "");
    }
    if rest == "finished.json" {
        return (Kind::Finished, key, "");
    }
    if let Some(run) = rest.strip_prefix("done-") {
        return (Kind::Done, key, run);
    }
    if let Some(run) = rest.strip_prefix("taken-") {
        return (Kind::Taken, key, run);
    }
    if rest.ends_with(".tmp") {
        return (Kind::Tmp, key, "");
    }
    if rest.starts_with("dead-") && rest.ends_with(".json") {
        return (Kind::Dead, key, "");
    }
    (Kind::Unknown, key, "")
}

/// Classify a file name found in a task's lease folder.
pub fn classify(name: &str) -> Entry {
    let (kind, key, run) = kind_of(name);
    let key = key.to_string();
    match kind {
        Kind::Lease => Entry::Lease { key },
        Kind::Finished => Entry::Finished { key },
        Kind::Done => Entry::Done { key, run: run.to_string() },
        Kind::Taken => Entry::Taken { key, run: run.to_string() },
        Kind::Dead => Entry::Dead { key },
        Kind::Tmp => Entry::Tmp { key },
        Kind::Clock => Entry::Clock,
        Kind::Unknown => Entry::Unknown { key },
        Kind::Other => Entry::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_paths() {
        assert!(TaskPath::parse("demo/sales/ingest").is_ok());
        for bad in ["demo/sales", "demo/sales/ingest/x", "/sales/ingest", "demo/../x", "demo/sales/", ""] {
            assert!(TaskPath::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(TaskPath::parse("a/b/c").unwrap().parts(), ("a", "b", "c"));
    }

    #[test]
    fn names() {
        let k = "39bc42311894ddba";
        let cases = [
            (format!("{k}.json"), Entry::Lease { key: k.into() }),
            (format!("{k}.finished.json"), Entry::Finished { key: k.into() }),
            (format!("{k}.done-b56ec931-bb32"), Entry::Done { key: k.into(), run: "b56ec931-bb32".into() }),
            (format!("{k}.taken-"), Entry::Taken { key: k.into(), run: String::new() }),
            (format!("{k}.dead-cf0bcc83.json"), Entry::Dead { key: k.into() }),
            (format!("{k}.0123abcd.tmp"), Entry::Tmp { key: k.into() }),
            (format!("{k}.finished.0123abcd.tmp"), Entry::Tmp { key: k.into() }),
            (format!("{k}.dead-cf0bcc83.0123abcd.tmp"), Entry::Tmp { key: k.into() }),
            (".clock-0123abcd".into(), Entry::Clock),
            (format!("{k}.tried"), Entry::Unknown { key: k.into() }),
            ("README".into(), Entry::Other),
            ("39BC42311894DDBA.json".into(), Entry::Other),
        ];
        for (name, want) in cases {
            assert_eq!(classify(&name), want, "{name}");
        }
    }
}
