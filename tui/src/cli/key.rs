//! `ubunye key`: the batch key of a task and its variables.

use clap::Args;

use super::{VarArgs, exit, say_err};
use ubunye::key;
use ubunye::layout::TaskPath;

/// Print the batch key of a task and its variables.
///
/// The key is what names the lease, the finished note and the takeover marks of
/// a batch: the first 16 hex digits of the SHA-256 of the task and its variables,
/// exactly as ubunye-engine 0.8.0 computes it.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  ubunye key --task demo/sales/ingest -dt 2025-01-01\n  ubunye key --task demo/sales/ingest --json \\\n    --vars-json '{\"dt\": \"2025-01-01\", \"n\": 3}'"
)]
pub struct KeyArgs {
    /// The task, as <usecase>/<package>/<task>.
    #[arg(long, value_name = "U/P/T")]
    pub task: String,
    #[command(flatten)]
    pub vars: VarArgs,
    /// The variables as one JSON object instead (the Python API form: any JSON
    /// values; null values are dropped).
    #[arg(long, value_name = "OBJECT", conflicts_with_all = ["dt", "dtf", "vars"])]
    pub vars_json: Option<String>,
    /// Print {"key", "hashed", "names_a_batch"} as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &KeyArgs) -> i32 {
    let task = match TaskPath::parse(&a.task) {
        Ok(t) => t,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    let vars = match &a.vars_json {
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => ubunye::vars::variables_from_json(&v).map_err(|e| e.to_string()),
            Err(e) => Err(format!("--vars-json is not JSON: {e}")),
        },
        None => a.vars.variables(),
    };
    let vars = match vars {
        Ok(v) => v,
        Err(e) => {
            say_err(&e);
            return exit::USAGE;
        }
    };
    let (hashed, k) = match key::canonical_text(task.as_str(), &vars)
        .and_then(|h| key::batch_key(task.as_str(), &vars).map(|k| (h, k)))
    {
        Ok(x) => x,
        Err(e) => {
            say_err(&e.to_string());
            return exit::USAGE;
        }
    };
    if a.json {
        let out = serde_json::json!({"key": k, "hashed": hashed, "names_a_batch": key::names_a_batch(&vars)});
        super::outln(&out.to_string());
    } else {
        super::outln(&k);
    }
    exit::OK
}
