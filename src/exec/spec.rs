//! What `ubunye exec` will run ([`ExecSpec`]), and checking an invocation
//! before anything is written: every problem found here is a usage error
//! (exit 2), and nothing (no lease, no record, no folder) exists yet when it
//! is reported.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::child;
use crate::beneath::{is_staging_name, normpath, realpath_lenient};
use crate::error::Error;
use crate::error::Unstartable;
use crate::layout::TaskPath;
use crate::vars::{PyValue, Variables};

/// One output of the command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Output {
    /// The output's name (`NAME` of `--append NAME=PATH`).
    pub name: String,
    /// Absolute, normalised.
    pub path: PathBuf,
    /// `--append` (true) or `--overwrite` (false).
    pub append: bool,
    /// `UBUNYE_OUT_<NAME>`.
    pub env: String,
}

/// Where the run record goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lineage {
    /// `<dir>/<task>/<run_id>.json`. Given to [`ExecSpec::check`] relative to the use-case
    /// folder (or absolute); in an [`ExecSpec`], absolute.
    Dir(PathBuf),
    /// No record (the lease looks for dead runs' records in `<uc>/.ubunye/lineage`).
    Off,
}

/// A checked `ubunye exec` invocation.
#[derive(Clone, Debug)]
pub struct ExecSpec {
    /// The use-case folder (`-d`), absolute and normalised (symlinks kept).
    pub usecase_dir: PathBuf,
    /// The task (`--task`): `<usecase>/<package>/<task>`.
    pub task: TaskPath,
    /// The batch's variables, which its key hashes.
    pub variables: Variables,
    /// Its outputs (`--append`, `--overwrite`), sorted by name.
    pub outputs: Vec<Output>,
    /// `--rerun`: a finished batch's files are replaced once this run succeeds.
    pub rerun: bool,
    /// `--resume`: a finished batch is skipped (exit 0), not refused.
    pub resume: bool,
    /// Where the run record goes (`--lineage-dir`), or none (`--no-lineage`).
    pub lineage: Lineage,
    /// The command and its arguments, as given after `--`; never empty.
    pub command: Vec<OsString>,
    /// This run's id: a fresh uuid4.
    pub run_id: String,
    /// This program, to start as the command's group keeper (`sentinel.rs`);
    /// None: no keeper.
    pub keeper: Option<PathBuf>,
    /// `--timeout`: its maximum runtime; past it, it is stopped and the run
    /// fails (nothing lands).
    pub timeout: Option<std::time::Duration>,
    /// How large its log beside the run record may grow before it is
    /// rotated; None: no log.
    pub log_max: Option<u64>,
}

/// The environment name for an output or a variable: upper case, anything not
/// alphanumeric as `_`.
pub fn env_name(prefix: &str, name: &str) -> String {
    let mut out = String::from(prefix);
    out.extend(name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }));
    out
}

/// The longest name a folder on this disk takes (`NAME_MAX`), read from the
/// nearest folder of `p` that exists; 255 when it cannot be read.
fn name_max(p: &Path) -> usize {
    let mut at = p.to_path_buf();
    loop {
        if let Ok(st) = rustix::fs::statvfs(&at) {
            return usize::try_from(st.f_namemax).unwrap_or(255).clamp(14, 4096);
        }
        if !at.pop() {
            return 255;
        }
    }
}

/// `PATH_MAX` on Linux, the longest path a system call takes.
const PATH_MAX: usize = 4096;

/// The longest staging name `ubunye exec` puts beside an overwrite output:
/// `.<name>.ubunye-<12hex>.old`, 25 bytes more than the output's name.
const OVERWRITE_EXTRA: usize = 25;

/// Refuse a path whose parts or whole are longer than the disk takes. `extra`:
/// bytes a name made from the last part adds to it.
fn check_lengths(what: &str, p: &Path, extra_last: usize, extra_path: usize) -> Result<(), String> {
    let max = name_max(p);
    let parts: Vec<&std::ffi::OsStr> =
        p.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    for (i, part) in parts.iter().enumerate() {
        let extra = if i + 1 == parts.len() { extra_last } else { 0 };
        let len = part.as_encoded_bytes().len();
        if len + extra > max {
            return Err(format!(
                "{what}: the name '{}' is {len} bytes long{}; this disk takes names of at most {max} bytes. Give a shorter name.",
                part.to_string_lossy(),
                if extra > 0 { format!(" and Ubunye's staging folder beside it adds {extra}") } else { String::new() },
            ));
        }
    }
    let len = p.as_os_str().as_encoded_bytes().len() + extra_path;
    if len >= PATH_MAX {
        return Err(format!(
            "{what}: the path {} is too long ({len} bytes with Ubunye's staging folder; the limit is {PATH_MAX}).",
            p.display()
        ));
    }
    Ok(())
}

/// A script's interpreter must exist: the kernel refuses to start a script
/// whose `#!` line names a missing program, and that is known before anything
/// is written.
fn check_interpreter(cmd: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let Ok(n) = std::fs::File::open(cmd).and_then(|mut f| f.read(&mut head)) else {
        return Ok(());
    };
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return Ok(());
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let interp = text.split([' ', '\t']).find(|s| !s.is_empty()).unwrap_or_default();
    if interp.is_empty() {
        return Err(format!("cannot start '{}': its first line (#!) names no interpreter", cmd.display()));
    }
    // The kernel takes the interpreter as a path (relative to the current
    // folder when it has no `/`), never from PATH.
    let path = if interp.contains('/') { PathBuf::from(interp) } else { Path::new(".").join(interp) };
    if child::find_command(path.as_os_str()).is_err() {
        return Err(format!(
            "cannot start '{}': its first line names the interpreter {interp}, which is not a program that exists (a #! line needs the interpreter's full path)",
            cmd.display()
        ));
    }
    Ok(())
}

/// Variables whose environment names are the same (`dt` and `DT` are two
/// variables of the batch, and one `UBUNYE_VAR_DT`): the command would see one
/// value while the batch is keyed by both.
fn check_variable_names(variables: &Variables) -> Result<(), String> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for (k, v) in variables {
        if matches!(v, PyValue::None) {
            continue;
        }
        let env = env_name("UBUNYE_VAR_", k);
        if let Some((_, other)) = seen.iter().find(|(e, _)| *e == env) {
            return Err(format!(
                "the variables '{other}' and '{k}' would both reach the command as {env}: give variables names that differ in more than case or punctuation"
            ));
        }
        seen.push((env, k));
    }
    Ok(())
}

/// Whether `a` and `b` are the same folder or one holds the other.
fn nested(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl ExecSpec {
    /// Check an invocation, before anything is written: a problem with it is
    /// [`Error::Usage`] (exit 2); a command that cannot be started is
    /// [`Error::NotStarted`] (127 no such program, 126 one that cannot be
    /// executed), told only once the invocation is otherwise right. `lineage`: as
    /// given (relative to the use-case folder, or absolute); the spec holds it
    /// absolute.
    #[allow(clippy::too_many_arguments)]
    pub fn check(
        usecase_dir: &Path,
        task: TaskPath,
        variables: Variables,
        appends: &[String],
        overwrites: &[String],
        rerun: bool,
        resume: bool,
        lineage: Lineage,
        command: Vec<OsString>,
    ) -> Result<ExecSpec, Error> {
        let spec = check_usage(usecase_dir, task, variables, appends, overwrites, rerun, resume, lineage, command)
            .map_err(Error::Usage)?;
        let cmd = spec.command[0].to_string_lossy().into_owned();
        let not_started = |why: Unstartable, message: String| Error::NotStarted { why, message };
        match child::find_command(&spec.command[0]) {
            Ok(program) => check_interpreter(&program).map_err(|m| not_started(Unstartable::NotExecutable, m))?,
            Err(why @ Unstartable::NotFound) => {
                return Err(not_started(
                    why,
                    format!(
                        "cannot start '{cmd}': no such program (give a path, or a program on PATH); nothing was written"
                    ),
                ));
            }
            Err(why @ Unstartable::NotExecutable) => {
                return Err(not_started(
                    why,
                    format!(
                        "cannot start '{cmd}': it is there but cannot be executed (a folder, or a file without execute permission: chmod +x it, or name its interpreter, as in `sh {cmd}`); nothing was written"
                    ),
                ));
            }
        }
        Ok(spec)
    }
}

/// The checks of [`ExecSpec::check`] that are about the invocation itself.
#[allow(clippy::too_many_arguments)]
fn check_usage(
    usecase_dir: &Path,
    task: TaskPath,
    variables: Variables,
    appends: &[String],
    overwrites: &[String],
    rerun: bool,
    resume: bool,
    lineage: Lineage,
    command: Vec<OsString>,
) -> Result<ExecSpec, String> {
    if command.is_empty() {
        return Err("give the command after --, for example: ubunye exec --task demo/sales/ingest -dt 2025-01-01 -- ./ingest.sh".into());
    }
    match std::fs::metadata(usecase_dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "the use-case folder {} is a file, not a folder (point -d at a folder)",
                usecase_dir.display()
            ));
        }
        Err(_) => return Err(format!("the use-case folder {} does not exist (point -d at it)", usecase_dir.display())),
    }
    let cwd = std::env::current_dir().map_err(|e| format!("the current folder cannot be read: {e}"))?;
    let uc = normpath(&cwd.join(usecase_dir));
    let uc_real = std::fs::canonicalize(&uc).map_err(|e| format!("{}: {e}", uc.display()))?;
    if let Some(above) = crate::layout::use_case_above(&uc_real).filter(|_| !uc_real.join(".ubunye").is_dir()) {
        return Err(format!(
            "the use-case folder {} is Ubunye's own .ubunye/ folder (or inside it): point -d at the folder that holds it, -d {}",
            usecase_dir.display(),
            above.display()
        ));
    }
    check_variable_names(&variables)?;
    // The lease folder and the run record: the task's parts name folders.
    let run_id = uuid::Uuid::new_v4().to_string();
    let lease_file = crate::layout::leases_root(&uc_real).join(task.as_str()).join("0123456789abcdef.finished.json");
    check_lengths(&format!("the task {task}"), &lease_file, 0, 64)?;
    // The lineage folder, absolute once: relative to the use-case folder as
    // given (the peer's `<uc>/<--lineage-dir>`), never to it twice.
    let lineage = match lineage {
        Lineage::Off => Lineage::Off,
        Lineage::Dir(d) => {
            let abs = cwd.join(usecase_dir).join(d);
            check_lengths(
                &format!("the run record of {task}"),
                &abs.join(task.as_str()).join(format!("{run_id}.json")),
                0,
                16,
            )?;
            Lineage::Dir(abs)
        }
    };
    let lineage_real = match &lineage {
        Lineage::Dir(d) => Some(realpath_lenient(d)),
        Lineage::Off => None,
    };
    let ubunye_real = uc_real.join(".ubunye");
    let mut outputs: Vec<Output> = Vec::new();
    let mut reals: Vec<PathBuf> = Vec::new();
    for (items, append) in [(appends, true), (overwrites, false)] {
        let flag = if append { "--append" } else { "--overwrite" };
        for item in items {
            let Some((name, path)) = item.split_once('=') else {
                return Err(format!("{flag} expects NAME=PATH, got '{item}'. Example: {flag} events=out/events"));
            };
            let name = name.trim();
            if name.is_empty() || path.is_empty() {
                return Err(format!("{flag} expects NAME=PATH, got '{item}'"));
            }
            let full = normpath(&uc.join(path));
            let env = env_name("UBUNYE_OUT_", name);
            if outputs.iter().any(|o| o.name == name || o.env == env) {
                return Err(format!("the output name '{name}' is given twice"));
            }
            let real = realpath_lenient(&full);
            if full == uc || real == uc_real {
                return Err(format!("{flag} {item}: the output cannot be the use-case folder itself"));
            }
            if !real.starts_with(&uc_real) {
                return Err(format!(
                    "{flag} {item}: {} is outside the use-case folder {} (through '..', an absolute path or a symlink); Ubunye only writes and takes back outputs beneath it",
                    real.display(),
                    uc_real.display()
                ));
            }
            if real.starts_with(&ubunye_real) || full.starts_with(uc.join(".ubunye")) {
                return Err(format!(
                    "{flag} {item}: an output cannot be inside .ubunye/, where the leases and run records are"
                ));
            }
            if let Some(lr) = lineage_real.as_ref().filter(|lr| nested(&real, lr)) {
                return Err(format!(
                    "{flag} {item}: the output and the run-record folder {} are the same folder or one is inside the other",
                    lr.display()
                ));
            }
            let staging_part = full
                .strip_prefix(&uc)
                .ok()
                .into_iter()
                .chain(real.strip_prefix(&uc_real).ok())
                .flat_map(|rel| rel.components())
                .find(|c| c.as_os_str().to_str().is_some_and(is_staging_name));
            if let Some(part) = staging_part {
                return Err(format!(
                    "{flag} {item}: '{}' is a staging folder's name (a run's folder, removed with everything in it when that run ends); give another path",
                    part.as_os_str().to_string_lossy()
                ));
            }
            if let Some(o) = outputs.iter().zip(&reals).find(|(o, r)| nested(&o.path, &full) || nested(r, &real)) {
                return Err(format!(
                    "outputs '{}' and '{name}' are the same folder or one is inside the other ({})",
                    o.0.name,
                    real.display()
                ));
            }
            match std::fs::symlink_metadata(&full) {
                Ok(m) if m.file_type().is_symlink() && !full.exists() => {
                    return Err(format!("{flag} {item}: {} is a symlink to nothing; give a folder", full.display()));
                }
                Ok(m) if !append && m.file_type().is_symlink() => {
                    return Err(format!(
                        "{flag} {item}: {} is a symlink; an overwrite replaces the folder itself, so give the folder it points to ({})",
                        full.display(),
                        real.display()
                    ));
                }
                Ok(_) if full.exists() && !full.is_dir() => {
                    return Err(format!(
                        "{flag} {item}: {} exists and is not a folder (an output is a folder of files)",
                        full.display()
                    ));
                }
                _ => {}
            }
            let (extra_last, extra_path) = if append { (0, 24) } else { (OVERWRITE_EXTRA, OVERWRITE_EXTRA) };
            check_lengths(&format!("{flag} {item}"), &full, extra_last, extra_path)?;
            check_lengths(&format!("{flag} {item}"), &real, extra_last, extra_path)?;
            outputs.push(Output { name: name.to_string(), path: full, append, env });
            reals.push(real);
        }
    }
    outputs.sort_by(|a, b| a.name.cmp(&b.name));
    // The keeper is this very binary (`ubunye __group-keeper`).
    let keeper = std::env::current_exe().ok();
    Ok(ExecSpec {
        usecase_dir: uc,
        task,
        variables,
        outputs,
        rerun,
        resume,
        lineage,
        command,
        run_id,
        keeper,
        timeout: None,
        log_max: Some(crate::sys::EXEC_LOG_MAX),
    })
}

/// Replace `secret` in `arg` where it stands as a token of its own: the whole
/// argument, or between characters that are not letters or digits
/// (`--pwd=k9Z`, `Bearer k9Z`), never inside a longer word.
fn mask_token(arg: &str, secret: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut last = 0;
    for (at, _) in arg.match_indices(secret) {
        if at < last {
            continue;
        }
        let before = arg[..at].chars().next_back();
        let after = arg[at + secret.len()..].chars().next();
        let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if edge(before) && edge(after) {
            out.push_str(&arg[last..at]);
            out.push_str(crate::secrets::REDACTED);
            last = at + secret.len();
        }
    }
    out.push_str(&arg[last..]);
    out
}

/// The command line as recorded: values of secret-looking variables masked as
/// `***`, as the peer masks them in records. A value of 4 characters or more is
/// masked wherever it appears; a shorter one where it stands as a token.
pub fn recorded_command(spec: &ExecSpec) -> Vec<String> {
    masked_command(&spec.variables, &spec.command)
}

/// [`recorded_command`] of any command line and variables.
pub fn masked_command(variables: &Variables, command: &[OsString]) -> Vec<String> {
    let mut secrets: Vec<String> = variables
        .iter()
        .filter(|(k, _)| crate::secrets::looks_secret(k))
        .filter_map(|(_, v)| match v {
            PyValue::Str(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        })
        .collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    command
        .iter()
        .map(|a| {
            let mut s = a.to_string_lossy().into_owned();
            for secret in &secrets {
                s = if secret.chars().count() >= 4 {
                    s.replace(secret.as_str(), crate::secrets::REDACTED)
                } else {
                    mask_token(&s, secret)
                };
            }
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_secrets_are_masked_as_tokens() {
        assert_eq!(mask_token("k9Z", "k9Z"), "***");
        assert_eq!(mask_token("--pwd=k9Z", "k9Z"), "--pwd=***");
        assert_eq!(mask_token("Bearer k9Z", "k9Z"), "Bearer ***");
        assert_eq!(mask_token("k9Z,k9Z", "k9Z"), "***,***");
        assert_eq!(mask_token("xk9Z k9Zx", "k9Z"), "xk9Z k9Zx", "inside a longer word: left");
        assert_eq!(mask_token("a=1", "1"), "a=***");
    }

    #[test]
    fn variable_names_that_meet_in_the_environment_are_refused() {
        let s = |k: &str, v: &str| (k.to_string(), PyValue::Str(v.to_string()));
        assert!(check_variable_names(&vec![s("dt", "1"), s("region", "x")]).is_ok());
        assert!(check_variable_names(&vec![s("dt", "1"), s("DT", "2")]).unwrap_err().contains("UBUNYE_VAR_DT"));
        assert!(check_variable_names(&vec![s("é", "1"), s("ü", "2")]).is_err());
        assert!(check_variable_names(&vec![("dtf".into(), PyValue::None), s("DTF", "2")]).is_ok());
    }
}
