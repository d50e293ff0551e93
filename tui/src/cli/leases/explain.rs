//! `ubunye leases explain`: the triage report of one batch.

use clap::Args;

use super::{Purpose, explained};
use crate::cli::{BatchArg, exit, say_err};

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye leases explain 7d106ca7 -d uc\n  ubunye leases explain \\\n    uc/.ubunye/leases/demo/sales/ingest/7d106ca76674f2a1.json\n\nA batch's run records are filed as `leases list` files them, which depends on every file of its task. To answer at once in a task of thousands of batches, explain keeps an index of each task's files outside the use case (in $UBUNYE_CACHE_DIR, else $XDG_CACHE_HOME/ubunye, else ~/.cache/ubunye: its index/ folder). A file's line is used only while the file is the one that was read (its inode, birth time, size, mtime and ctime unchanged), and only on a local file system; the batch's own files and records are always read again. It never writes inside the use case. UBUNYE_CACHE_DIR= (empty) turns it off."
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
        crate::cli::out(&crate::report::explanation(&e, crate::console::table::terminal_width()));
    }
    exit::OK
}
