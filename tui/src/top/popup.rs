//! The two-phase repair: a popup that lists exactly what the repair will do
//! (the steps of the library's plan) or why none applies, answered No unless
//! the user says yes; then the repair itself, through the library, and its
//! outcome or refusal.

use ubunye::explain;
use ubunye::repair::{self, Kind, RepairOutcome, RepairPlan};
use ubunye::state;

use crate::top::model::Source;

/// What the popup shows.
#[derive(Clone, Debug)]
pub enum Popup {
    /// The plan, and the question. `yes` is the highlighted answer: false
    /// until moved. With tagged batches, `more` holds the plans of the
    /// others, and `skipped` the tagged batches no repair applies to, and why.
    Confirm { plan: Box<RepairPlan>, yes: bool, scroll: Scroll, more: Vec<RepairPlan>, skipped: Vec<String> },
    /// No repair applies: the one-line reason.
    Refused { kind: Kind, title: String, reason: String },
    /// The repair is under way.
    Running { kind: Kind, title: String },
    /// What the repair did, or why it refused.
    Done { kind: Kind, title: String, ok: bool, text: String, scroll: Scroll },
}

/// Where a popup's text is scrolled to, and how much of it the last drawing
/// showed (the text is wrapped to the popup's width, known when drawn).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scroll {
    /// The first line shown.
    pub top: usize,
    /// Lines shown; 0 until drawn.
    pub page: usize,
    /// Lines in all; 0 until drawn.
    pub len: usize,
}

impl Scroll {
    /// The first line shown when at the end (unknown until drawn: no limit).
    fn end(&self) -> usize {
        if self.len == 0 { usize::MAX } else { self.len.saturating_sub(self.page) }
    }

    /// Move by `lines` (negative: up), never past the end.
    pub fn by(&mut self, lines: isize) {
        self.top = self.top.saturating_add_signed(lines).min(self.end());
    }

    /// Move a page (`pages` of them; negative: up).
    pub fn by_pages(&mut self, pages: isize) {
        let page = self.page.max(1) as isize;
        self.by(pages.saturating_mul(page));
    }

    pub fn to_top(&mut self) {
        self.top = 0;
    }

    pub fn to_end(&mut self) {
        self.top = self.end();
    }

    /// What the drawing had room for: `page` of `len` lines. The first line
    /// shown moves up if it was past the end.
    pub fn fit(&mut self, page: usize, len: usize) {
        self.page = page;
        self.len = len;
        self.top = self.top.min(self.end());
    }

    /// There is more than is shown.
    pub fn more(&self) -> bool {
        self.len > self.page
    }

    /// `1-18/19`: the lines shown and how many there are.
    pub fn counter(&self) -> String {
        format!("{}-{}/{}", self.top + 1, (self.top + self.page).min(self.len), self.len)
    }
}

/// The popup's title: `take over demo/sales/ingest 7d106ca7`.
pub fn title(kind: Kind, task: &str, key: &str) -> String {
    let verb = match kind {
        Kind::Takeover => "Take over",
        Kind::Finish => "Finish",
    };
    format!("{verb} {task} {}", &key[..key.len().min(8)])
}

/// Phase one: read the batch again (as the model files it: the same batch a
/// full scan and `leases explain` give), explain it, and ask the library
/// whether the repair applies.
pub fn plan(model: &mut crate::top::model::Model, kind: Kind, task: &str, key: &str) -> Popup {
    let t = title(kind, task, key);
    match model.fresh(&(task.to_string(), key.to_string())) {
        Err(reason) => Popup::Refused { kind, title: t, reason },
        Ok(batch) => {
            let e = explain::explain(&model.scan, batch);
            match repair::check(kind, &e) {
                Ok(plan) => Popup::Confirm {
                    plan: Box::new(plan),
                    yes: false,
                    scroll: Scroll::default(),
                    more: Vec::new(),
                    skipped: Vec::new(),
                },
                Err(reason) => Popup::Refused { kind, title: t, reason },
            }
        }
    }
}

/// Phase one for tagged batches: each read again and checked, one popup
/// for all (the first plan, the others, and those skipped with why).
pub fn plan_many(model: &mut crate::top::model::Model, kind: Kind, ids: &[(String, String)]) -> Popup {
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for (task, key) in ids {
        match plan(model, kind, task, key) {
            Popup::Confirm { plan, .. } => plans.push(*plan),
            Popup::Refused { reason, .. } => skipped.push(reason),
            _ => {}
        }
    }
    if plans.is_empty() {
        let verb = if kind == Kind::Takeover { "Take over" } else { "Finish" };
        let title = format!("{verb} {} tagged batch(es)", ids.len());
        return Popup::Refused { kind, title, reason: format!("none of them needs it: {}", skipped.join("; ")) };
    }
    let first = plans.remove(0);
    Popup::Confirm { plan: Box::new(first), yes: false, scroll: Scroll::default(), more: plans, skipped }
}

/// What a repair did.
#[derive(Debug)]
pub struct RepairDone {
    pub plan: RepairPlan,
    pub outcome: Result<RepairOutcome, String>,
    /// The audit line could not be written.
    pub audit_error: Option<String>,
}

/// Phase two, after a yes: read the batch again, let the engine re-check and
/// act (its own acquire and release), and leave the audit line. Blocks for the
/// takeover's settle wait: run it off the UI thread.
pub fn carry_out(src: &Source, plan: RepairPlan) -> RepairDone {
    // The batch as `leases takeover` reads it before acting: its task read,
    // the disk's clock read with a probe (a repair may write).
    let opts = state::ScanOptions { clock: state::ClockRead::Probe, ..src.opts.clone() };
    let outcome = state::scan_one(&src.uc, &plan.task, &plan.key, &opts, &src.sys)
        .map_err(|e| e.to_string())
        .and_then(|(_, current)| current.ok_or_else(|| format!("{} {}: its files went", plan.task, plan.key)))
        .and_then(|current| {
            repair::execute(&src.uc, &plan, &current, src.opts.lineage_dir.clone(), src.sys.clone())
                .map_err(|e| e.to_string())
        });
    let root = std::fs::canonicalize(&src.uc).unwrap_or_else(|_| src.uc.clone());
    let audit_error = repair::audit(&root, &plan, &outcome, &src.sys)
        .err()
        .map(|e| format!("could not write the audit line to {}: {e}", root.join(".ubunye/repairs.jsonl").display()));
    RepairDone { plan, outcome, audit_error }
}

/// The outcome in words, as `ubunye leases takeover` prints it.
pub fn outcome_text(done: &RepairDone) -> (bool, String) {
    let mut out = String::new();
    let ok = match &done.outcome {
        Ok(o) => {
            out.push_str(&crate::report::repair_outcome(o));
            true
        }
        Err(e) => {
            out.push_str(&format!("Refused: {e}\n"));
            false
        }
    };
    if let Some(a) = &done.audit_error {
        out.push_str(&format!("{a}\n"));
    }
    (ok, out)
}
