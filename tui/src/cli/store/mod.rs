//! A use case in an object store (`-d s3://bucket/prefix`): the store
//! opened from its URL, or refused in one line, for every command that
//! takes one; and `ubunye exec` against it (the engine's run is
//! `ubunye::exec::store`; this renders it). Its batches are listed,
//! explained and repaired by `leases` (`leases/store.rs` for explain and the
//! repairs), its runs and findings by `runs` and `doctor`.

use std::sync::Arc;

use ubunye::bucket::{self, Objects, Refused, S3, StoreUrl};
use ubunye::exec::store::{BucketEnd, BucketRun};

use crate::report::store::refusal;
use crate::report::took_over;
use ubunye::documents::short;

use super::exec::ExecArgs;
use super::{exit, say_err};

/// The store for a use case URL: one line and exit 2 for a URL that does not
/// parse, exit 1 for a store that cannot be reached as configured.
pub(crate) fn open(dir: &str) -> Result<(StoreUrl, Arc<dyn Objects>), i32> {
    open_quiet(dir).map_err(|(code, why)| {
        say_err(&why);
        code
    })
}

/// Why `--lineage-dir` is refused with a use case in a store: its run
/// records are in the store, beside its leases.
pub(crate) fn no_lineage_dir(url: &str) -> String {
    format!("-d {url}: --lineage-dir names a folder; a store's run records are under {url}/.ubunye/lineage")
}

/// What a reading of a store that failed ends with: 2, as a folder that is
/// not a use case, when nothing is under its `.ubunye/` (a prefix
/// mistyped); 1 for a store that cannot be reached or read. The line that
/// says why goes with it.
pub(crate) fn failed(e: bucket::StoreError) -> (i32, String) {
    let code = if e.kind == bucket::ErrorKind::NotAUseCase { exit::USAGE } else { exit::REFUSED };
    (code, e.to_string())
}

/// [`open`], its refusal returned: the exit code and the line that says why.
pub(crate) fn open_quiet(dir: &str) -> Result<(StoreUrl, Arc<dyn Objects>), (i32, String)> {
    let uc = StoreUrl::parse(dir).map_err(|e| (exit::USAGE, format!("-d {dir}: {e}")))?;
    let s3 = S3::from_env(&uc.bucket).map_err(|e| (exit::REFUSED, e.to_string()))?;
    Ok((uc, Arc::new(s3)))
}

/// The outputs of `--append NAME=URL`, each in the use case's bucket and
/// outside its `.ubunye/`.
fn appends(a: &ExecArgs, uc: &StoreUrl) -> Result<Vec<(String, StoreUrl)>, String> {
    let mut out: Vec<(String, StoreUrl)> = Vec::new();
    for spec in &a.appends {
        let Some((name, url)) = spec.split_once('=') else {
            return Err(format!("--append {spec}: give NAME=s3://bucket/prefix"));
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("--append {spec}: the name '{name}' must be letters, digits, '_' or '-'"));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("--append {spec}: the output '{name}' is named twice"));
        }
        let u = StoreUrl::parse(url).map_err(|e| format!("--append {spec}: {url} {e}"))?;
        if u.bucket != uc.bucket {
            return Err(format!(
                "--append {spec}: outputs must be in the use case's bucket ({}), so that one client holds the lease and the files",
                uc.bucket
            ));
        }
        let state = StoreUrl { bucket: uc.bucket.clone(), prefix: uc.key(".ubunye") };
        if u.prefix.is_empty() || state.holds(&u.prefix) || u.holds(&state.prefix) {
            return Err(format!(
                "--append {spec}: an output must be a prefix of its own, neither the bucket's top nor inside or above the use case's {state}"
            ));
        }
        if let Some((_, other)) = out.iter().find(|(_, o)| o.holds(&u.prefix) || u.holds(&o.prefix)) {
            return Err(format!(
                "--append {spec}: it overlaps the output {other}; give each output a prefix of its own"
            ));
        }
        out.push((name.to_string(), u));
    }
    Ok(out)
}

/// The `-d` of a command, when it names a use case in a store.
pub fn store_dir(d: &super::DirArg) -> Option<&str> {
    d.dir.to_str().filter(|d| bucket::is_store_url(d))
}

/// The one `-d` of a listing, when it names a use case in a store.
pub fn store_path(d: &std::path::Path) -> Option<&str> {
    d.to_str().filter(|d| bucket::is_store_url(d))
}

/// `ubunye exec -d s3://...`.
pub fn exec(a: &ExecArgs, dir: &str) -> i32 {
    let usage = |m: &str| {
        say_err(m);
        exit::USAGE
    };
    if a.timeout.is_some_and(|t| t.is_zero()) {
        return usage("--timeout 0s would stop the command at once: give its maximum runtime (30s, 2h)");
    }
    if a.lease_ttl.is_some_and(|t| t < std::time::Duration::from_secs(1) || t > std::time::Duration::from_secs(86_400))
    {
        return usage(
            "--lease-ttl must be between a second and a day (2m is the default): a lease is saved six times in it, and a killed run blocks its batch for that long",
        );
    }
    let task = match super::exec::task_of(a) {
        Ok(t) => t,
        Err(e) => return usage(&e),
    };
    // The task names keys of the lease, the note and the record.
    if let Err(why) = bucket::plain_key(task.as_str()) {
        return usage(&format!("the task '{task}' {why}"));
    }
    let vars = match a.vars.variables() {
        Ok(v) => v,
        Err(e) => return usage(&e.to_string()),
    };
    if !a.overwrites.is_empty()
        && let Err(why) = ubunye::protocol::Capabilities::STORE.overwrite(&format!("-d {dir}"))
    {
        return usage(&why);
    }
    if a.lineage_dir.is_some() {
        return usage(&no_lineage_dir(dir));
    }
    if a.command.is_empty() {
        return usage(
            "give the command after --, for example: ubunye exec -d s3://bucket/uc --task demo/sales/ingest -dt 2025-01-01 --append events=s3://bucket/lake/events -- ./ingest.sh",
        );
    }
    let uc = match StoreUrl::parse(dir) {
        Ok(u) => u,
        Err(e) => return usage(&format!("-d {dir}: {e}")),
    };
    let outs = match appends(a, &uc) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
    let key = match ubunye::key::batch_key(task.as_str(), &vars) {
        Ok(k) => k,
        Err(e) => return usage(&e.to_string()),
    };
    if let Err(why) = ubunye::exec::child::find_command(&a.command[0]) {
        let what = match why {
            ubunye::error::Unstartable::NotFound => "no such program (give a path, or a program on PATH)",
            ubunye::error::Unstartable::NotExecutable => {
                "it is there but cannot be executed (chmod +x it, or name its interpreter, as in `sh CMD`)"
            }
        };
        say_err(&format!("cannot start '{}': {what}; nothing was written", a.command[0].to_string_lossy()));
        return why.exit_code();
    }
    let (uc, objects) = match open(dir) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let spec = BucketRun {
        uc,
        task,
        variables: vars,
        key,
        appends: outs,
        resume: a.resume,
        rerun: a.rerun,
        lineage: !a.no_lineage,
        command: a.command.clone(),
        run_id: uuid::Uuid::new_v4().to_string(),
        keeper: std::env::current_exe().ok(),
        timeout: a.timeout,
    };
    let mut sys = crate::console::machine::sys();
    if let Some(ttl) = a.lease_ttl {
        sys.timing.store_ttl = ttl;
    }
    let refused_code = a.refused_exit;
    let head = format!("{} {}", spec.task, spec.key);
    match ubunye::exec::store::run(&spec, objects, &sys) {
        Err(e) => {
            say_err(&e.to_string());
            exit::REFUSED
        }
        Ok(BucketEnd::Done { landed, recovered, unreleased, unrecorded }) => {
            if let Some(r) = recovered.filter(|_| !a.quiet) {
                say_err(&took_over(&r, "its lease"));
            }
            if !a.quiet {
                let files: Vec<String> = landed.iter().map(|(o, n)| format!("{o} +{n} file(s)")).collect();
                let tail = if files.is_empty() { String::new() } else { format!(": {}", files.join(", ")) };
                say_err(&format!("{head} done (run {}){tail}", short(&spec.run_id)));
            }
            // Said even with --quiet: the next run is refused until the lease is dead.
            if let Some(why) = unreleased {
                say_err(&format!(
                    "warning: {head} is finished, but its lease could not be handed back ({why}): a run of the batch is refused until the lease is dead, then finds the finished note; `ubunye leases takeover` hands it back sooner"
                ));
            }
            if let Some(why) = unrecorded {
                say_err(&format!("warning: {head} is finished (its note says so), but {why}"));
            }
            exit::OK
        }
        Ok(BucketEnd::Skipped { run_id }) => {
            if !a.quiet {
                say_err(&format!("[SKIP] {head}: run {} finished it (--resume)", short(&run_id)));
            }
            exit::OK
        }
        Ok(BucketEnd::Recovered { recovered, refused, resume }) => {
            if !a.quiet || !resume {
                say_err(&took_over(&recovered, "its lease"));
            }
            if let (Refused::Finished { run_id }, true) = (&refused, resume) {
                if !a.quiet {
                    say_err(&format!("[SKIP] {head}: run {} finished it (--resume)", short(run_id)));
                }
                return exit::OK;
            }
            say_err(&refusal(&head, &refused));
            refused_code
        }
        Ok(BucketEnd::Refused(r)) => {
            say_err(&refusal(&head, &r));
            refused_code
        }
        Ok(BucketEnd::Lost { why }) => {
            say_err(&format!(
                "{head}: this run lost its lease ({why}); nothing more of it was made visible, and its taker takes back what it had"
            ));
            refused_code
        }
        Ok(BucketEnd::Failed { code, note, recovered }) => {
            if let Some(r) = recovered.filter(|_| !a.quiet) {
                say_err(&took_over(&r, "its lease"));
            }
            say_err(&format!("{head}: {note}"));
            code
        }
        Ok(BucketEnd::NotStarted { code, note }) => {
            say_err(&note);
            code
        }
    }
}
