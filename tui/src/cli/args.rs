//! The argument groups several commands share, defined once: the use-case
//! folder, the run records' folder, a batch's variables.

use std::path::PathBuf;

use clap::Args;

/// The use-case folder.
#[derive(Args, Debug, Clone)]
pub struct DirArg {
    /// The use-case folder (the Python engine's `ubunye run -d`), or
    /// s3://bucket/prefix for a use case in an object store.
    #[arg(short = 'd', long = "usecase-dir", visible_alias = "dir", value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

/// Where the run records are.
#[derive(Args, Debug, Clone, Default)]
pub struct LineageArg {
    /// Where run records are, if not <DIR>/.ubunye/lineage (the Python engine's --lineage-dir).
    #[arg(long, value_name = "DIR")]
    pub lineage_dir: Option<PathBuf>,
}

impl Default for DirArg {
    fn default() -> DirArg {
        DirArg { dir: PathBuf::from(".") }
    }
}

/// One batch named on the command line: what `explain`, `takeover` and
/// `finish` take.
#[derive(Args, Debug, Clone)]
pub struct BatchArg {
    /// A batch key, a unique prefix of one, the path of a lease-folder file,
    /// or `<usecase>:<key>` as the listings of several use cases print it.
    pub batch: String,
    #[command(flatten)]
    pub ucs: UseCasesArg,
    /// The one use case, once [`BatchArg::settle`] has read `ucs` and
    /// `<usecase>:<key>`.
    #[arg(skip)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// The task, when a prefix names batches of several tasks.
    #[arg(long, value_name = "U/P/T")]
    pub task: Option<String>,
}

/// The variables of a batch as the peer's CLI takes them.
#[derive(Args, Debug, Clone, Default)]
pub struct VarArgs {
    /// The data timestamp (`-dt` works too, as in the Python engine).
    #[arg(long = "dt", visible_alias = "data-timestamp", value_name = "X")]
    pub dt: Option<String>,
    /// The data timestamp format (`-dtf` works too). It is part of the batch.
    #[arg(long = "dtf", visible_alias = "data-timestamp-format", value_name = "F")]
    pub dtf: Option<String>,
    /// The run mode. Case matters: DEV, dev and PROD are three batches.
    #[arg(short = 'm', long = "mode", value_name = "MODE", default_value = "DEV")]
    pub mode: String,
    /// A variable, `name=value` (repeatable). The value is kept exactly.
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
}

impl VarArgs {
    /// The variables, as the peer's `build_variables`.
    pub fn variables(&self) -> Result<ubunye::vars::Variables, String> {
        ubunye::vars::cli_variables(self.dt.as_deref(), self.dtf.as_deref(), &self.mode, &self.vars)
            .map_err(|e| e.to_string())
    }
}

/// The filters on a batch's variables a listing takes: `--dt` and `--var`.
#[derive(Args, Debug, Clone, Default)]
pub struct VarFilterArgs {
    /// Only batches of this data timestamp (`-dt` works too), or of a range
    /// of them, both ends included: `2025-01-04`, `2025-01-01..2025-01-31`,
    /// `2025-01-01..` (compared as text, as ISO dates sort).
    #[arg(long = "dt", value_name = "DATE|A..B")]
    pub dt: Option<String>,
    /// Only batches whose variable has this value, `name=value`
    /// (repeatable: all must match).
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
}

impl VarFilterArgs {
    /// The filter, or the line that says what is wrong with it.
    pub fn filter(&self) -> Result<ubunye::state::VarFilter, String> {
        ubunye::state::VarFilter::parse(self.dt.as_deref(), &self.vars)
    }
}

/// The use cases a listing reads: `-d` (repeatable) and `--find`.
#[derive(Args, Debug, Clone, Default)]
pub struct UseCasesArg {
    /// A use-case folder (the Python engine's `ubunye run -d`), or
    /// s3://bucket/prefix for a use case in an object store. Repeat it for
    /// several use cases; default: the current folder.
    #[arg(short = 'd', long = "usecase-dir", visible_alias = "dir", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Every use case below this folder (a folder holding .ubunye/leases or
    /// .ubunye/lineage): never below a use case it found, never into hidden
    /// folders, symlinks followed only inside ROOT. Repeatable; with -d, both.
    #[arg(long, value_name = "ROOT")]
    pub find: Vec<PathBuf>,
    /// How many folders below --find's ROOT to look.
    #[arg(long, value_name = "N", default_value_t = ubunye::fleet::DEFAULT_DEPTH, requires = "find")]
    pub depth: usize,
}

impl UseCasesArg {
    /// One use case named the way every command always took it: a single
    /// `-d` (or none), no `--find`. Listings then print as they always did;
    /// otherwise their rows carry their use case.
    pub fn single(&self) -> Option<&std::path::Path> {
        match (self.dirs.as_slice(), self.find.is_empty()) {
            ([], true) => Some(std::path::Path::new(".")),
            ([d], true) => Some(d),
            _ => None,
        }
    }

    /// Every use case named, each with what stops it being read (a store
    /// among many: it is read alone).
    pub fn resolve(&self) -> Vec<crate::console::fleet::UseCase> {
        crate::console::fleet::resolve(&self.dirs, &self.find, self.depth, false)
    }

    /// Every use case named, stores among them, each with what stops it
    /// being counted: what the metrics and the fleet view count.
    pub fn resolve_counted(&self) -> Vec<crate::console::fleet::UseCase> {
        crate::console::fleet::resolve(&self.dirs, &self.find, self.depth, true)
    }

    /// As a [`DirArg`], for the code that reads one use case.
    pub fn one(&self) -> Option<DirArg> {
        self.single().map(|d| DirArg { dir: d.to_path_buf() })
    }
}

impl BatchArg {
    /// Read `<usecase>:<key>` and the use-case flags into `dir` and `batch`:
    /// one use case (or, with `many`, as many as `ucs` names). The line that
    /// says what is wrong when the batch is named twice, or in several use
    /// cases where one is needed.
    pub fn settle(&mut self, many: bool) -> Result<(), String> {
        if let Some((uc, key)) = split_query(&self.batch) {
            if !self.ucs.dirs.is_empty() || !self.ucs.find.is_empty() {
                return Err(format!(
                    "'{}' names its use case already: give either -d/--find or <usecase>:<key>, not both",
                    self.batch
                ));
            }
            self.ucs.dirs = vec![uc.to_path_buf()];
            self.batch = key.to_string();
        }
        // The path of a lease-folder file names its use case: the folder
        // that holds its `.ubunye` (the path as written, then with symlinks
        // followed), so a path `doctor` or `leases list` printed is enough.
        if self.batch.contains('/')
            && !self.batch.contains("://")
            && self.ucs.dirs.is_empty()
            && self.ucs.find.is_empty()
        {
            let p = std::path::Path::new(&self.batch);
            let uc = ubunye::layout::use_case_above(p)
                .or_else(|| std::fs::canonicalize(p).ok().and_then(|c| ubunye::layout::use_case_above(&c)));
            if let Some(uc) = uc {
                self.ucs.dirs = vec![if uc.as_os_str().is_empty() { std::path::PathBuf::from(".") } else { uc }];
            }
        }
        match self.ucs.one() {
            Some(d) => self.dir = d,
            None if many => {}
            None => {
                return Err("a repair names one batch of one use case: give -d once, or <usecase>:<key> as `leases list` prints it with several use cases".into());
            }
        }
        Ok(())
    }
}

/// A batch named as the listings print it across use cases:
/// `<usecase>:<key>`: the use-case folder and the key (or its first hex
/// digits). None when `query` is not of that form (a key, a prefix, a path
/// without a `:` before hex digits at its end).
pub fn split_query(query: &str) -> Option<(&std::path::Path, &str)> {
    let (uc, key) = query.rsplit_once(':')?;
    let hex = !key.is_empty() && key.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && !uc.is_empty()).then(|| (std::path::Path::new(uc), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usecase_key_form() {
        assert_eq!(split_query("teams/a/uc:7d10"), Some((std::path::Path::new("teams/a/uc"), "7d10")));
        assert_eq!(split_query("c:/x:ab"), Some((std::path::Path::new("c:/x"), "ab")));
        for q in ["7d10", "uc:", ":7d10", "uc/.ubunye/leases/t/x.json", "uc:7g"] {
            assert_eq!(split_query(q), None, "{q}");
        }
    }
}
