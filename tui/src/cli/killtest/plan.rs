//! From `ubunye killtest`'s arguments to a plan: the exec invocation it
//! wraps (checked as `ubunye exec` checks it, against the real use case,
//! which is never written), the batches, and the sandbox's places.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ubunye::exec::{ExecSpec, Lineage};
use ubunye::killtest::Output;

use crate::cli::ExecArgs;

/// One batch: its variables as exec's flags, and its key.
#[derive(Clone, Debug)]
pub struct Batch {
    /// `-dt`, `-dtf`, `-m`, `--var` as given to exec.
    pub flags: Vec<OsString>,
    /// The variables (for a bare run's environment).
    pub variables: ubunye::vars::Variables,
    /// Its key.
    pub key: String,
    /// How the report names it (`dt=2025-01-01`).
    pub label: String,
}

/// Everything a killtest needs to know before it starts.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The real use case (never written), absolute.
    pub real_uc: PathBuf,
    /// The task.
    pub task: String,
    /// Its outputs, relative to the use case.
    pub outputs: Vec<Output>,
    /// The run records' folder relative to the use case; None with --no-lineage.
    pub lineage: Option<PathBuf>,
    /// The batches, in the order each round runs them.
    pub batches: Vec<Batch>,
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// Paths (relative to the use case) copied into each sandbox.
    pub copies: Vec<PathBuf>,
}

fn usage<T>(why: impl Into<String>) -> Result<T, String> {
    Err(why.into())
}

/// The exec arguments after killtest's `--`, parsed as `ubunye exec` parses
/// them.
pub fn exec_args(rest: &[OsString]) -> Result<ExecArgs, String> {
    if rest.is_empty() {
        return usage(
            "give ubunye exec's arguments after --, for example: ubunye killtest -- -d uc --task demo/sales/ingest -dt 2025-01-01 --append events=out/events -- ./ingest.sh",
        );
    }
    let argv: Vec<OsString> = ["ubunye", "exec"].into_iter().map(OsString::from).chain(rest.iter().cloned()).collect();
    use clap::FromArgMatches;
    let m = crate::cli::command()
        .try_get_matches_from(crate::cli::normalize_args(argv))
        .map_err(|e| format!("the exec arguments after --: {}", first_line(&e.to_string())))?;
    match crate::cli::Cli::from_arg_matches(&m).map_err(|e| first_line(&e.to_string()))?.command {
        crate::cli::Command::Exec(e) => Ok(e),
        _ => usage("the arguments after -- are ubunye exec's"),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string()
}

/// One `--batches` item: `name=value` pairs joined by `;`, each `dt`, `dtf`,
/// `mode`/`m` or any other variable (`--var`).
fn batch_flags(base: &crate::cli::VarArgs, item: &str) -> Result<crate::cli::VarArgs, String> {
    let mut v = base.clone();
    for pair in item.split(';').filter(|p| !p.trim().is_empty()) {
        let Some((k, val)) = pair.split_once('=') else {
            return usage(format!(
                "--batches: '{pair}' is not name=value (example: --batches dt=2025-01-01,dt=2025-01-02; several variables of one batch joined by ';')"
            ));
        };
        match k.trim() {
            "dt" => v.dt = Some(val.into()),
            "dtf" => v.dtf = Some(val.into()),
            "m" | "mode" => v.mode = val.into(),
            other => {
                v.vars.retain(|x| x.split_once('=').map(|(n, _)| n) != Some(other));
                v.vars.push(format!("{other}={val}"));
            }
        }
    }
    Ok(v)
}

fn var_flags(v: &crate::cli::VarArgs) -> Vec<OsString> {
    let mut f: Vec<OsString> = Vec::new();
    if let Some(dt) = &v.dt {
        f.extend(["--dt".into(), dt.into()]);
    }
    if let Some(dtf) = &v.dtf {
        f.extend(["--dtf".into(), dtf.into()]);
    }
    f.extend(["--mode".into(), v.mode.clone().into()]);
    for x in &v.vars {
        f.extend(["--var".into(), x.into()]);
    }
    f
}

/// Check everything, as exec would, before anything is written. `Err`: one
/// line for exit 2.
pub fn plan(e: &ExecArgs, batches: &[String], copies: &[PathBuf]) -> Result<Plan, String> {
    if e.rerun || e.resume {
        return usage("drop --rerun and --resume from the exec arguments: killtest runs --resume and --rerun itself");
    }
    let dir = &e.dir.dir;
    if dir.to_str().is_some_and(ubunye::bucket::is_store_url) {
        return usage(
            "killtest runs on a local use case; a use case in a store is tested by tui/tests/slow/store_killtest.rs",
        );
    }
    if e.appends.is_empty() && e.overwrites.is_empty() {
        return usage(
            "name the command's outputs (--append NAME=PATH, --overwrite NAME=PATH): killtest checks what they hold",
        );
    }
    let task = crate::cli::exec_task_of(e)?;
    let lineage = if e.no_lineage {
        Lineage::Off
    } else {
        Lineage::Dir(e.lineage_dir.clone().unwrap_or_else(|| PathBuf::from(".ubunye/lineage")))
    };
    let base_vars = e.vars.variables()?;
    let spec = ExecSpec::check(
        dir,
        task.clone(),
        base_vars,
        &e.appends,
        &e.overwrites,
        false,
        true,
        lineage,
        e.command.clone(),
    )
    .map_err(|err| err.to_string())?;
    let uc = spec.usecase_dir.clone();
    if rustix::fs::access(&uc, rustix::fs::Access::WRITE_OK).is_err() {
        return usage(format!(
            "the use case {} is not writable: ubunye exec could not run there either (killtest itself writes only its sandbox)",
            uc.display()
        ));
    }
    let rel = |p: &Path, what: &str| -> Result<PathBuf, String> {
        p.strip_prefix(&uc).map(Path::to_path_buf).map_err(|_| {
            format!(
                "{what} {} is outside the use case {}: killtest keeps every write in its sandbox",
                p.display(),
                uc.display()
            )
        })
    };
    let outputs = spec
        .outputs
        .iter()
        .map(|o| Ok(Output { name: o.name.clone(), rel: rel(&o.path, "the output")?, append: o.append }))
        .collect::<Result<Vec<_>, String>>()?;
    let lineage = match &spec.lineage {
        Lineage::Off => None,
        Lineage::Dir(d) => Some(rel(&ubunye::beneath::normpath(d), "--lineage-dir")?),
    };
    // The batches: the exec arguments' own, or each --batches item over them.
    let items: Vec<&str> = batches.iter().flat_map(|b| b.split(',')).map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut planned: Vec<Batch> = Vec::new();
    let mut each = |v: crate::cli::VarArgs, label: String| -> Result<(), String> {
        let variables = v.variables()?;
        let key = ubunye::key::batch_key(task.as_str(), &variables).map_err(|e| e.to_string())?;
        if let Some(b) = planned.iter().find(|b| b.key == key) {
            return usage(format!("--batches: '{label}' is the same batch as '{}' (key {key})", b.label));
        }
        planned.push(Batch { flags: var_flags(&v), variables, key, label });
        Ok(())
    };
    if items.is_empty() {
        let label = e.vars.dt.as_ref().map(|dt| format!("dt={dt}"));
        let key = e.vars.variables().ok().and_then(|v| ubunye::key::batch_key(task.as_str(), &v).ok());
        each(e.vars.clone(), label.or(key).unwrap_or_default())?;
    } else {
        for item in items {
            each(batch_flags(&e.vars, item)?, item.to_string())?;
        }
    }
    let mut rels = Vec::new();
    for c in copies {
        let full = ubunye::beneath::normpath(&std::env::current_dir().map_err(|e| e.to_string())?.join(c));
        let r = full.strip_prefix(&uc).map(Path::to_path_buf).map_err(|_| {
            format!(
                "--copy {}: not inside the use case {} (a sandbox holds a copy of the use case only)",
                c.display(),
                uc.display()
            )
        })?;
        if r.as_os_str().is_empty() || r.starts_with(".ubunye") {
            return usage(format!(
                "--copy {}: copy files or folders of the use case, not the use case itself or its .ubunye/",
                c.display()
            ));
        }
        if std::fs::symlink_metadata(&full).is_err() {
            return usage(format!("--copy {}: no such file or folder", c.display()));
        }
        if let Some(bad) = not_plain(&full) {
            return usage(format!(
                "--copy {}: {} is a symlink or a special file; killtest copies plain files and folders only (a link could lead back into the real use case): copy what it points to",
                c.display(),
                bad.display()
            ));
        }
        if outputs.iter().any(|o| r.starts_with(&o.rel) || o.rel.starts_with(&r)) {
            return usage(format!(
                "--copy {}: it is or holds an output; outputs start empty in the sandbox",
                c.display()
            ));
        }
        rels.push(r);
    }
    Ok(Plan {
        real_uc: uc,
        task: task.as_str().to_string(),
        outputs,
        lineage,
        batches: planned,
        command: e.command.clone(),
        copies: rels,
    })
}

/// The first path below `p` (or `p`) that is neither a plain file nor a
/// folder: a symlink, a FIFO, a socket, a device.
fn not_plain(p: &Path) -> Option<PathBuf> {
    let m = std::fs::symlink_metadata(p).ok()?;
    if m.is_dir() {
        let rd = std::fs::read_dir(p).ok()?;
        rd.flatten().find_map(|e| not_plain(&e.path()))
    } else if m.is_file() {
        None
    } else {
        Some(p.to_path_buf())
    }
}
