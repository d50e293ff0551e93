//! `ubunye leases explain`: the triage report of one batch.

use clap::Args;

use super::{Purpose, explained};
use crate::cli::{DirArg, LineageArg, exit, say_err};

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye leases explain 7d106ca7 -d uc\n  ubunye leases explain \\\n    uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json"
)]
pub struct ExplainArgs {
    /// A batch key, a unique prefix of one, or the path of a lease-folder file.
    pub batch: String,
    #[command(flatten)]
    pub dir: DirArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// The task, when a prefix names batches of several tasks.
    #[arg(long, value_name = "U/P/T")]
    pub task: Option<String>,
    /// The report as JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &ExplainArgs) -> i32 {
    let e = match explained(
        &a.dir,
        &a.lineage,
        &a.batch,
        a.task.as_deref(),
        Purpose::Look,
        &crate::console::machine::sys(),
    ) {
        Ok((_, e)) => e,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    if a.json {
        crate::cli::print_json(&e);
    } else {
        crate::cli::out(&crate::report::explanation(&e));
    }
    exit::OK
}
