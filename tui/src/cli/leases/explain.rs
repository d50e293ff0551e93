//! `ubunye leases explain`: the triage report of one batch.

use clap::Args;

use super::{Purpose, explained};
use crate::cli::{BatchArg, exit, say_err};

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye leases explain 7d106ca7 -d uc\n  ubunye leases explain \\\n    uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json"
)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub which: BatchArg,
    /// The report as JSON (schema: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &ExplainArgs) -> i32 {
    let e = match explained(&a.which, Purpose::Look, &crate::console::machine::sys()) {
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
