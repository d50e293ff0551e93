//! The `ubunye` command line. Parsing and rendering only: every decision is the
//! engine's (the `ubunye` library); `top` and `demo` are this crate's.

use std::ffi::OsString;

use clap::{Args, Parser, Subcommand};

mod args;
pub(crate) mod doctor;
pub(crate) mod exec;
mod generate;
mod key;
pub(crate) mod killtest;
pub(crate) mod leases;
pub(crate) mod metrics;
mod python;
pub(crate) mod runs;
mod runs_show;
mod store;
pub(crate) use crate::console::table;

pub(crate) use crate::console::print::{out, outln, print_json, say_err};
pub use crate::console::{colour, exit, print, usecase};
pub use args::{BatchArg, DirArg, LineageArg, UseCasesArg, VarArgs, VarFilterArgs};
pub(crate) use exec::{ExecArgs, task_of as exec_task_of};

/// `ubunye demo` options.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "The sandbox holds two live runs, a dead run with claims, an orphan, a kept lease, a pending --rerun removal, finished batches and interrupted and failed run records, all made by the engine itself. Point the other commands at the path it prints."
)]
pub struct DemoArgs {
    /// Where to build the sandbox (default: a new folder under the temp folder).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    /// Build the sandbox and print `leases list --all` instead of opening `top`.
    #[arg(long)]
    pub no_top: bool,
}

/// `ubunye`: safe batch reruns (leases, claims, finished notes) compatible with
/// ubunye-engine 0.8.0, and the tools to see and repair run state.
#[derive(Parser, Debug)]
#[command(
    name = "ubunye",
    version,
    about = "See and repair the leases and runs of Ubunye batches (list, explain, takeover, runs, doctor, top), and run any program as a batch (exec)",
    long_about = None,
    propagate_version = true
)]
#[command(after_help = "Every command that reads a use case takes -d DIR (default: the current
folder) and --json for scripts (docs/json.md). list, runs, doctor, metrics
and top take -d more than once, or --find ROOT for every use case below a
folder; explain, takeover and finish take <usecase>:<key> as they print it.

Exit codes:
  0    done; doctor: nothing found
  1    refused: a live holder, a repair that does not apply, a finished
       batch, declined at the prompt, a lost lease, an unreadable file, a
       store that cannot be used (no bucket, credentials or answer);
       doctor: findings
  2    usage: bad flags; a -d that does not exist, is a file or is not a
       use case; a batch id that is empty, shorter than 4 hex digits,
       names no batch or several
  exec also ends with 124 (past --timeout), 126 (the command cannot be
  executed), 127 (it is not found) or the command's own code: see
  `ubunye exec --help`.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When to colour: auto (on a terminal, unless NO_COLOR; CLICOLOR_FORCE
    /// forces it), always or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value = "auto")]
    pub color: colour::ColorChoice,
}

// Each variant's one line is its `about` (what `ubunye --help` lists), given
// as an attribute, not a doc comment: a doc comment here would also set the
// subcommand's `long_about` and hide the long text of its Args struct.
#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(about = "Print the batch key of a task and its variables, as the Python engine computes it")]
    Key(key::KeyArgs),
    #[command(about = "Run any program as a batch under a lease (claimed appends, swapped overwrites)")]
    Exec(exec::ExecArgs),
    #[command(about = "Prove a job safe to rerun: kill it at random moments, check what is left")]
    Killtest(crate::cli::killtest::KilltestArgs),
    #[command(about = "See and repair the leases of a use case: list, explain, takeover, finish")]
    Leases(leases::LeasesArgs),
    #[command(about = "The run records of a use case, newest first")]
    Runs(runs::RunsArgs),
    #[command(about = "What the engine leaves for people: stray staging, temp files, old marks...")]
    Doctor(doctor::DoctorArgs),
    #[command(about = "The state of use cases as Prometheus metrics: printed, a textfile, or /metrics")]
    Metrics(metrics::MetricsArgs),
    #[command(about = "Watch the leases and run records of a use case live (the dashboard)")]
    Top(TopArgs),
    #[command(about = "Build a sandbox use case with every kind of state, and open `top` on it")]
    Demo(DemoArgs),
    #[command(about = "Print a shell's completion script (bash, zsh, fish)")]
    Completions(generate::CompletionsArgs),
    #[command(about = "Print the man page (roff)")]
    Man(generate::ManArgs),
}

impl Command {
    /// The use-case folder a command reads (exec makes its own, and checks
    /// it itself).
    /// Only for one use case (a single `-d`): several are each checked
    /// as they are read, and one that cannot be is a row of the listing.
    fn use_case_dir(&self) -> Option<&std::path::Path> {
        match self {
            Command::Leases(l) => match &l.command {
                leases::LeasesCommand::List(a) => a.ucs.single(),
                leases::LeasesCommand::Explain(a) => a.which.ucs.single(),
                leases::LeasesCommand::Takeover(a) | leases::LeasesCommand::Finish(a) => Some(&a.which.dir.dir),
                leases::LeasesCommand::History(a) => Some(&a.dir.dir),
            },
            // A record's path, or `<usecase>:<run>`, names its own use case.
            Command::Runs(a) => match &a.show {
                Some(runs::RunsCommand::Show(s)) if s.run.contains('/') || args::split_query(&s.run).is_some() => None,
                Some(runs::RunsCommand::Show(s)) => Some(&s.dir.dir),
                None => a.ucs.single(),
            },
            Command::Doctor(a) => a.ucs.single(),
            Command::Top(a) => a.ucs.single(),
            _ => None,
        }
    }

    /// `<usecase>:<key>` and the use-case flags of the commands that name
    /// one batch, read once (see [`BatchArg::settle`]).
    fn settle(&mut self) -> Result<(), String> {
        match self {
            Command::Leases(l) => match &mut l.command {
                leases::LeasesCommand::Explain(a) => a.which.settle(true),
                leases::LeasesCommand::Takeover(a) | leases::LeasesCommand::Finish(a) => a.which.settle(false),
                leases::LeasesCommand::List(_) | leases::LeasesCommand::History(_) => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// Watch the leases and run records of a use case live (`ubunye top`).
///
/// The table `leases list --all` prints once, kept up to date: file-system
/// events where they arrive, polling where they do not (NFS; --watch poll),
/// and a new judgement every second, since "dead" depends on time passing.
/// Enter shows a batch's whole report (`leases explain`); t takes a dead batch
/// over and f finishes a pending one, each after showing exactly what it will
/// do (default No); ? lists every key; q quits. Looking changes nothing.
///
/// With `-d s3://bucket/prefix` it watches a use case in an object store: it
/// lists the leases every --interval and reads again only what changed; the
/// store's own clock judges them (as `leases list` does).
///
/// With -d given more than once, or --find ROOT, it shows the fleet: one row
/// per use case, its batches counted by state (as `ubunye metrics` counts
/// them), kept up to date every --interval (a task whose folder changed is
/// read again, held leases are judged again; all is read whole every 10
/// minutes); Enter opens the dashboard of the one chosen, q there comes
/// back; /uc:TEXT filters the use cases.
#[derive(Args, Debug, Clone)]
pub struct TopArgs {
    #[command(flatten)]
    pub ucs: UseCasesArg,
    /// How to notice changes: `notify` (file-system events), `poll` (every
    /// --interval, stat the folders and the leases and read again only what
    /// changed; a whole rescan every 600 polls), or `auto` (notify, falling
    /// back to poll where events do not arrive, as on NFS).
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = ["auto", "notify", "poll"])]
    pub watch: String,
    /// How often to look for changes in poll mode (e.g. 2s, 500ms); over
    /// many use cases, how often to count them again.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = humantime::parse_duration)]
    pub interval: std::time::Duration,
    /// Watch only: no repair keys (t, f are not offered and do nothing but
    /// say so), for people who watch but must not act.
    #[arg(long)]
    pub read_only: bool,
}

/// The whole command line as clap builds it: the help, the completions and
/// the man page all come from this one definition.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    // `--version` names this implementation, whatever the subcommand: the
    // Python engine's command is `ubunye` too.
    fn named(c: clap::Command) -> clap::Command {
        c.display_name("ubunye-rs").mut_subcommands(named)
    }
    named(Cli::command())
}

/// The peer spells some options with one dash and several letters (`-dt`,
/// `-dtf`); clap takes them as `--dt`/`--dtf`. Rewrites them, up to a `--`.
pub fn normalize_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut passthrough = false;
    for a in args {
        if passthrough {
            out.push(a);
            continue;
        }
        if a == "--" {
            passthrough = true;
            out.push(a);
            continue;
        }
        let s = a.to_string_lossy();
        let fixed = ["-dtf", "-dt"].iter().find_map(|flag| {
            if s == *flag {
                Some(OsString::from(format!("-{flag}")))
            } else {
                s.strip_prefix(&format!("{flag}=")).map(|v| OsString::from(format!("-{flag}={v}")))
            }
        });
        out.push(fixed.unwrap_or(a));
    }
    out
}

/// Run the CLI with these arguments (the first is the program name). Returns the
/// exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = normalize_args(args);
    // With --json (before a `--` that starts a command's own arguments), an
    // error is also one JSON object on stdout.
    if args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--json") {
        crate::console::print::json_errors();
    }
    let code = run_parsed(args);
    crate::console::print::end_json(code);
    code
}

fn run_parsed(args: Vec<OsString>) -> i32 {
    use clap::FromArgMatches;
    // Words that are not part of the definitions (so no help, completion or
    // man page offers them): the Python engine's `run`, answered in one line,
    // the keeper `ubunye exec` starts, and the demo's actors (`ubunye demo`
    // re-executes this binary to drive the engine into the states it shows).
    match args.get(1).and_then(|a| a.to_str()) {
        Some("run") => return python::run(),
        Some(ubunye::exec::sentinel::SUBCOMMAND) => return group_keeper(&args[2..]),
        Some(crate::demo::actor::SUBCOMMAND) => {
            let rest: Vec<String> = args[2..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
            let Some((what, rest)) = rest.split_first() else {
                say_err("__demo-actor needs the actor's name.");
                return exit::USAGE;
            };
            return crate::demo::actor::run(what, rest);
        }
        _ => {}
    }
    let parsed = command().try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m));
    let mut cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { exit::OK };
            let _ = e.print();
            if code != exit::OK {
                // The error's first line, for the JSON object (the rest is
                // clap's usage and tip).
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or_default();
                crate::console::print::note_error(first.strip_prefix("error: ").unwrap_or(first));
            }
            return code;
        }
    };
    if let Err(why) = cli.command.settle() {
        say_err(&why);
        return exit::USAGE;
    }
    if let Some(dir) = cli.command.use_case_dir() {
        // A use case in a store: its URL is checked by the command itself.
        let in_store = dir.to_str().is_some_and(ubunye::bucket::is_store_url);
        if !in_store && let Err(why) = usecase::check(dir) {
            say_err(&why);
            return exit::USAGE;
        }
    }
    // The commands that write a use case: a durability they cannot give is
    // refused before anything is done.
    let writes = matches!(&cli.command, Command::Exec(_))
        || matches!(&cli.command, Command::Leases(l) if matches!(l.command, leases::LeasesCommand::Takeover(_) | leases::LeasesCommand::Finish(_)));
    if writes
        && let Some(Err(e)) = std::env::var("UBUNYE_DURABILITY").ok().map(|v| ubunye::durable::Durability::parse(&v))
    {
        say_err(&e);
        return exit::USAGE;
    }
    let code = dispatch(&cli);
    // Never a durability the disk did not give: said once, at the end.
    if let Some(w) = ubunye::durable::weakened() {
        say_err(&format!("warning: {w}: this run is safe if a process is killed, not if the machine loses power"));
    }
    code
}

fn dispatch(cli: &Cli) -> i32 {
    use std::io::IsTerminal;
    let colour = colour::decide(cli.color, std::io::stdout().is_terminal());
    match &cli.command {
        Command::Key(a) => key::run(a),
        Command::Killtest(a) => crate::cli::killtest::run(a),
        Command::Exec(a) => match store::store_dir(&a.dir) {
            Some(dir) => store::exec(a, dir),
            None => exec::run(a),
        },
        Command::Leases(l) => {
            use leases::LeasesCommand as L;
            match &l.command {
                L::Explain(a) => match a.which.ucs.single().and_then(store::store_path) {
                    Some(dir) => leases::store::explain(a, dir),
                    None => leases::run(l, colour),
                },
                L::Takeover(a) | L::Finish(a) => match store::store_dir(&a.which.dir) {
                    Some(dir) => {
                        let kind = if matches!(l.command, L::Finish(_)) {
                            leases::repair::Kind::Finish
                        } else {
                            leases::repair::Kind::Takeover
                        };
                        leases::store::repair(a, kind, dir)
                    }
                    None => leases::run(l, colour),
                },
                // A store's batches are listed, and told by date, by the same
                // rows as a folder's.
                L::History(_) | L::List(_) => leases::run(l, colour),
            }
        }
        Command::Runs(a) => runs::run(a, colour),
        Command::Doctor(a) => doctor::run(a),
        Command::Top(a) => match a.ucs.single() {
            Some(d) if d.to_str().is_some_and(ubunye::bucket::is_store_url) => {
                if a.watch == "notify" {
                    say_err("a store sends no events: `top -d s3://...` polls every --interval; drop --watch notify");
                    return exit::USAGE;
                }
                crate::top::run(&crate::top::Options {
                    dir: d.to_path_buf(),
                    watch: a.watch.clone(),
                    interval: a.interval,
                    colour,
                    read_only: a.read_only,
                })
            }
            Some(d) => crate::top::run(&crate::top::Options {
                dir: d.to_path_buf(),
                watch: a.watch.clone(),
                interval: a.interval,
                colour,
                read_only: a.read_only,
            }),
            None => crate::top::fleet::run(&crate::top::fleet::Options {
                ucs: a.ucs.resolve_counted(),
                watch: a.watch.clone(),
                interval: a.interval,
                colour,
                read_only: a.read_only,
            }),
        },
        Command::Demo(a) => {
            let opts = crate::demo::Options { dir: a.dir.clone(), no_top: a.no_top };
            // What the demo shows its sandbox with: the dashboard on a
            // terminal, else the list (the demo knows no command of its own).
            crate::demo::run(&opts, &|uc: &std::path::Path, interactive: bool| {
                if interactive {
                    let dir = uc.to_path_buf();
                    let interval = std::time::Duration::from_secs(2);
                    crate::top::run(&crate::top::Options {
                        dir,
                        watch: "auto".into(),
                        interval,
                        colour,
                        read_only: false,
                    })
                } else {
                    let colour = if colour { "always" } else { "never" };
                    let argv = ["ubunye", "--color", colour, "leases", "list", "--all", "-d"].map(OsString::from);
                    run(argv.into_iter().chain([uc.as_os_str().to_os_string()]))
                }
            })
        }
        Command::Metrics(a) => metrics::run(a),
        Command::Completions(a) => generate::completions(a),
        Command::Man(a) => generate::man(a),
    }
}

/// How many of a reading's problems are said one a line on stderr before
/// the rest are counted: a bucket or folder with thousands of stray files
/// must not push the table it reads off the screen.
pub(crate) const PROBLEMS_SAID: usize = 20;

/// What a reading could not read or found out of place, on stderr, a line
/// each (made printable, as every line on stderr is); past
/// [`PROBLEMS_SAID`], one line counts the rest, which `--json` lists.
pub(crate) fn say_problems<'a>(problems: impl IntoIterator<Item = &'a ubunye::state::UnreadableFile>) {
    let mut more = 0usize;
    for (i, p) in problems.into_iter().enumerate() {
        if i < PROBLEMS_SAID {
            say_err(&format!("{}: {}", p.path.display(), p.why));
        } else {
            more += 1;
        }
    }
    if more > 0 {
        say_err(&format!(
            "... and {more} more files that cannot be read or are out of place; `--json` (its \"problems\") lists every one"
        ));
    }
}

/// `ubunye __group-keeper <pid>`, as `ubunye exec` starts it (`exec/sentinel.rs`).
fn group_keeper(rest: &[OsString]) -> i32 {
    let parent = match rest {
        [p] if ubunye::exec::sentinel::may_keep() => p.to_string_lossy(),
        _ => {
            say_err("__group-keeper is started by `ubunye exec` only; it does nothing here.");
            return exit::USAGE;
        }
    };
    ubunye::exec::sentinel::keep(&parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_spellings_are_rewritten_before_the_command_only() {
        let args: Vec<OsString> =
            ["ubunye", "exec", "-dt", "2025-01-01", "-dtf=%Y", "--", "-dt", "x"].iter().map(OsString::from).collect();
        let got: Vec<String> = normalize_args(args).iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(got, ["ubunye", "exec", "--dt", "2025-01-01", "--dtf=%Y", "--", "-dt", "x"]);
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
