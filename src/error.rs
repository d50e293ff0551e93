//! The engine's errors. A refusal is not a crash: it carries one message naming
//! what holds the batch, the file concerned and what to do, and the CLI prints it
//! as one line with exit code 1.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What kind of refusal, for scripts and for the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalKind {
    /// Another live run holds the batch (the peer's `RunLeaseHeld`).
    Held,
    /// A run judged dead wrote its lease again during the settle: it is alive.
    LookedDead,
    /// The lease changed hands during a takeover, or others keep taking it.
    Contended,
    /// A lease, orphan, note or record exists but cannot be read or is damaged.
    Unreadable,
    /// A dead run's files (or the batch note) cannot be removed or written yet.
    InUse,
    /// A path in a lease or note is outside the use-case folder (stricter than
    /// the peer: nothing is removed).
    Outside,
    /// The batch was finished by an earlier run (the peer's `BatchFinished`).
    Finished,
    /// This run's lease was taken over (the peer's `RunLeaseLost`).
    Lost,
}

/// A refusal: the peer's message, context lines and hint.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    /// What kind of refusal, for scripts and for the exit code.
    pub kind: RefusalKind,
    /// The one sentence that says what was refused and why (the peer's words
    /// where it has them).
    pub message: String,
    /// Labelled facts: ("Lease", path), ("Finished", path), ("File", path).
    pub context: Vec<(String, String)>,
    /// What to do about it, when something can be done.
    pub hint: Option<String>,
}

impl Refusal {
    /// A refusal of this kind with this message, and no facts or hint yet.
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal { kind, message: message.into(), context: Vec::new(), hint: None }
    }
    /// Add a labelled fact (`File`, `Lease`, ...) to its context.
    pub fn with(mut self, label: &str, value: impl fmt::Display) -> Refusal {
        self.context.push((label.to_string(), value.to_string()));
        self
    }
    /// Say what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> Refusal {
        self.hint = Some(hint.into());
        self
    }
    /// The whole refusal on one line: message, then the hint.
    pub fn one_line(&self) -> String {
        match &self.hint {
            Some(h) => format!("{} {}", self.message, h),
            None => self.message.clone(),
        }
    }
    /// The peer's multi-line rendering (message, context, hint).
    pub fn multi_line(&self) -> String {
        let mut out = self.message.clone();
        if !self.context.is_empty() {
            out.push('\n');
            let w = self.context.iter().map(|(k, _)| k.len() + 1).max().unwrap_or(0);
            for (k, v) in &self.context {
                out.push_str(&format!("\n  {:<w$} {v}", format!("{k}:")));
            }
        }
        if let Some(h) = &self.hint {
            out.push_str(&format!("\n  Hint: {h}"));
        }
        out
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.one_line())
    }
}

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The run is refused, or stopped because it lost its lease. Nothing of
    /// another run's was touched.
    #[error("{0}")]
    Refused(Box<Refusal>),
    /// A file operation failed in a way the protocol does not expect.
    #[error("could not {what} {}: {source}", path.display())]
    Io {
        /// What was being done, in the words that follow "could not":
        /// `write the run record in`.
        what: &'static str,
        /// The file or folder it was done to.
        path: PathBuf,
        /// The error the system gave.
        #[source]
        source: io::Error,
    },
    /// The caller asked for something that does not make sense.
    #[error("{0}")]
    Usage(String),
    /// `ubunye exec`'s command cannot be started: no such program (127), or
    /// one that cannot be executed (126). The message names it.
    #[error("{message}")]
    NotStarted {
        /// No such program (127), or one that cannot be executed (126).
        why: Unstartable,
        /// The one line that names the command and says why.
        message: String,
    },
}

/// Why a command cannot be started, told apart as `env` and `timeout` tell
/// it: exit 127 when there is no such program, 126 when there is one that
/// cannot be executed (not executable, a folder, a script whose `#!`
/// interpreter is missing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unstartable {
    /// No such program (exit 127).
    NotFound,
    /// There is one, but it cannot be executed (exit 126).
    NotExecutable,
}

impl Unstartable {
    /// The exit code `ubunye exec` ends with.
    pub fn exit_code(self) -> i32 {
        match self {
            Unstartable::NotFound => 127,
            Unstartable::NotExecutable => 126,
        }
    }

    /// What a failed start (execve's errno) says about the program; None for
    /// an error that is not about it (no memory, too many processes).
    pub fn of_spawn_error(e: &std::io::Error) -> Option<Unstartable> {
        match e.raw_os_error()? {
            libc::ENOENT | libc::ENOTDIR => Some(Unstartable::NotFound),
            libc::EACCES | libc::ENOEXEC | libc::EPERM | libc::EISDIR | libc::ETXTBSY => {
                Some(Unstartable::NotExecutable)
            }
            _ => None,
        }
    }
}

impl Error {
    /// An [`Error::Io`]: `could not <what> <path>: <source>`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io { what, path: path.into(), source }
    }
    /// The refusal, when this is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Error::Refused(r) => Some(r),
            _ => None,
        }
    }
    /// The refusal's kind, when this is one.
    pub fn kind(&self) -> Option<RefusalKind> {
        self.refusal().map(|r| r.kind)
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Error {
        Error::Refused(Box::new(r))
    }
}

/// The engine's result: its error is [`Error`] unless another is named.
pub type Result<T, E = Error> = std::result::Result<T, E>;
