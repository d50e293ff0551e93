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

/// One batch named on the command line: what `explain`, `takeover` and
/// `finish` take.
#[derive(Args, Debug, Clone)]
pub struct BatchArg {
    /// A batch key, a unique prefix of one, or the path of a lease-folder file.
    pub batch: String,
    #[command(flatten)]
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
