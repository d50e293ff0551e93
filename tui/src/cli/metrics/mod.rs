//! `ubunye metrics`: the state of one use case or many as Prometheus
//! metrics, printed, written for node_exporter's textfile collector, or
//! served on `/metrics`. It only looks: nothing inside a use case changes.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::{LineageArg, UseCasesArg, exit, say_err};
use ubunye::census;
use ubunye::state::ScanOptions;

mod exposition;
mod serve;

pub use exposition::Format;

/// The state of use cases as Prometheus metrics.
///
/// Per use case and task, the number of batches in each state and with each
/// flag (`stalled`: the process alive, its heartbeat stopped); the oldest
/// heartbeat among each task's held leases; the age of the oldest dead, kept,
/// pending and orphaned lease; doctor's findings by kind; whether each use
/// case could be read, and the scan's own time and errors. Labels are the use
/// case, task, state, flag and kind: never a run id or a batch key, unless
/// --per-batch. docs/alerts.md has alerting rules for it.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ubunye metrics -d uc                                   # print once
  ubunye metrics --find /data --textfile /var/lib/node/ubunye.prom   # cron
  ubunye metrics --find /data --listen 127.0.0.1:9464 --interval 30s

Exit codes: 0 done (a use case that cannot be read is ubunye_use_case_up 0 and
ubunye_scan_errors, not an error); 2 bad flags, a textfile that cannot be
written, an address that cannot be listened on.")]
pub struct MetricsArgs {
    #[command(flatten)]
    pub ucs: UseCasesArg,
    #[command(flatten)]
    pub lineage: LineageArg,
    /// OpenMetrics text (ends with `# EOF`) instead of the Prometheus text format.
    #[arg(long)]
    pub openmetrics: bool,
    /// Write the metrics to this file for node_exporter's textfile collector
    /// (a `.prom` file): written beside it, then renamed over it, so that
    /// the collector never reads half a file.
    #[arg(long, value_name = "PATH", conflicts_with = "listen")]
    pub textfile: Option<PathBuf>,
    /// Serve the metrics on http://ADDR/metrics, read again every
    /// --interval (never more often). Loopback addresses only (127.0.0.1:9464,
    /// [::1]:9464) unless --listen-any: the metrics name your folders and tasks.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Allow --listen on an address other hosts can reach (0.0.0.0:9464).
    #[arg(long, requires = "listen")]
    pub listen_any: bool,
    /// With --listen: how often the use cases are read again.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// Also a series for each held lease, labelled with its batch key and
    /// run id: as many series as leases, which a big fleet's Prometheus may
    /// not want.
    #[arg(long)]
    pub per_batch: bool,
}

impl MetricsArgs {
    fn format(&self) -> Format {
        if self.openmetrics { Format::OpenMetrics } else { Format::Prometheus }
    }
}

/// Read every use case named and render them.
pub(crate) fn gather(a: &MetricsArgs) -> String {
    Gatherer::new(a).gather(a)
}

/// The use cases named, read again at each [`Gatherer::gather`]: a folder
/// whole, a store by a poller of its own that reads only what changed since
/// the last reading (`--listen` reads every `--interval`).
pub(crate) struct Gatherer {
    ucs: Vec<crate::console::fleet::UseCase>,
    stores: Vec<Option<crate::console::fleet::StorePoll>>,
}

impl Gatherer {
    pub(crate) fn new(a: &MetricsArgs) -> Gatherer {
        let ucs = a.ucs.resolve_counted();
        let stores = ucs.iter().map(crate::console::fleet::StorePoll::of).collect();
        Gatherer { ucs, stores }
    }

    pub(crate) fn gather(&mut self, a: &MetricsArgs) -> String {
        let sys = crate::console::machine::sys();
        let opts = ScanOptions { lineage_dir: a.lineage.lineage_dir.clone(), ..ScanOptions::default() };
        let censuses: Vec<census::Census> = self
            .ucs
            .iter()
            .zip(&mut self.stores)
            .map(|(uc, store)| match store {
                Some(p) => p.census(&sys, a.per_batch),
                None => crate::console::fleet::count(uc, &opts, &sys, a.per_batch),
            })
            .collect();
        exposition::render(&censuses, a.format(), a.per_batch)
    }
}

pub fn run(a: &MetricsArgs) -> i32 {
    if let Some(addr) = a.listen {
        if !addr.ip().is_loopback() && !a.listen_any {
            say_err(&format!(
                "--listen {addr}: not a loopback address, so other hosts could read the metrics (they name your folders and tasks); add --listen-any to mean it"
            ));
            return exit::USAGE;
        }
        if a.interval < Duration::from_millis(100) {
            say_err(&format!(
                "--interval {} would read the use cases without pause: give how often to read them again, at least 100ms (e.g. 30s)",
                humantime::format_duration(a.interval)
            ));
            return exit::USAGE;
        }
        return serve::serve(a, addr);
    }
    let text = gather(a);
    match &a.textfile {
        Some(path) => match write_textfile(path, &text) {
            Ok(()) => exit::OK,
            Err(why) => {
                say_err(&why);
                exit::USAGE
            }
        },
        // Where the text goes must hold it: a full disk is not a success
        // (a reader that went away is: `| head`).
        None => {
            let mut o = std::io::stdout().lock();
            match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    say_err(&format!("cannot write the metrics to stdout ({e}); nothing else was changed"));
                    exit::USAGE
                }
                _ => exit::OK,
            }
        }
    }
}

/// Write `text` to `path` as node_exporter asks: into a temporary file in
/// the same folder, then renamed over `path`.
fn write_textfile(path: &Path, text: &str) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let cannot = |e: std::io::Error| {
        format!("--textfile {}: cannot write it ({e}); give a path in a folder you can write", path.display())
    };
    let mut tmp =
        tempfile::Builder::new().prefix(".ubunye-metrics-").suffix(".tmp").tempfile_in(dir).map_err(cannot)?;
    tmp.write_all(text.as_bytes()).map_err(cannot)?;
    tmp.as_file().sync_all().map_err(cannot)?;
    // Readable by the collector, whoever runs it (a temporary file is 0600).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644)).map_err(cannot)?;
    tmp.persist(path).map_err(|e| cannot(e.error))?;
    Ok(())
}
