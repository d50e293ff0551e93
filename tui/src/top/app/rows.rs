//! The rows on screen: filtered and sorted from the model, the selection kept
//! on the same batch, the detail pane refreshed.

use super::*;

impl App {
    pub fn set_filter(&mut self, text: &str) {
        self.filter = Filter::parse(text);
        self.runs_generation = None;
        // Sorted afresh, whatever changed.
        self.sorted_by = None;
        self.rebuild();
    }

    /// Filter and sort the batch table again, keeping the selected batch
    /// selected, and count the states.
    pub fn rebuild(&mut self) {
        let model = &self.model;
        let n = model.len();
        let mut counts = [0usize; ubunye::state::State::ALL.len()];
        for i in 0..n {
            counts[model.state_of(i).rank()] += 1;
        }
        self.counts = counts;
        let changes = self.model.take_changes();
        let by = Some((self.filter.text.clone(), self.sort, self.reversed));
        // Nothing added, removed or moved, every batch put in place still in
        // its state, the same order asked for, no filter: the rows stand
        // (a million rows sorted again was most of a change's time to the
        // screen). Severity orders by state, task and key; task by the last two.
        let model = &self.model;
        let stand = !changes.reshaped
            && self.sorted_by == by
            && self.filter.is_empty()
            && self.rows.len() == n
            && (self.sort == SortBy::Task
                || self.sort == SortBy::Severity && changes.touched.iter().all(|&(i, s)| model.state_of(i) == s));
        self.sorted_by = by;
        if !stand {
            self.sort_rows();
        }
        self.place_selection();
    }

    /// Filter and sort every batch.
    fn sort_rows(&mut self) {
        let model = &self.model;
        let n = model.len();
        let at = |i: usize| model.row(i).expect("a position of the model");
        // The rows in their last order, then any new position: after a
        // change of a few batches they are nearly sorted, which the sort
        // goes through in one pass (a million rows sorted afresh took most
        // of a change's time to the screen).
        // Built in the last rows' own vector (a million positions each: a
        // rescan's peak memory), put back in their order first.
        let mut rows = std::mem::take(&mut self.rows);
        if self.reversed {
            rows.reverse();
        }
        let mut seen = vec![false; n];
        rows.retain(|&i| i < n && !std::mem::replace(&mut seen[i], true));
        rows.extend((0..n).filter(|&i| !seen[i]));
        drop(seen);
        if !self.filter.is_empty() {
            rows.retain(|&i| self.filter.matches(at(i)));
        }
        let ranks = model.task_ranks();
        let task = |i: usize| ranks.get(model.task_of(i) as usize).copied().unwrap_or(0);
        order::sort(at, n, &mut rows, self.sort, task, ranks.len());
        if self.reversed {
            rows.reverse();
        }
        self.rows = rows;
    }

    /// Keep the selected batch selected (its row found again), and the
    /// detail pane on it.
    fn place_selection(&mut self) {
        // Where the selected batch is, then where its row is (no batch read
        // for each row).
        let found = self
            .selected_id
            .as_ref()
            .filter(|_| self.moved)
            .and_then(|id| self.model.position_of(id))
            .and_then(|at| self.rows.iter().position(|&i| i == at));
        match found {
            Some(pos) => self.selected[0] = pos,
            None => {
                if !self.moved {
                    self.selected[0] = 0;
                }
                self.selected[0] = self.selected[0].min(self.rows.len().saturating_sub(1));
                self.selected_id = self.selected_batch().map(|b| b.id());
            }
        }
        if self.rows.is_empty() {
            self.detail.open = false;
        }
        self.refresh_detail(false);
    }

    /// Explain the selected batch again if it changed (or `force`).
    pub fn refresh_detail(&mut self, force: bool) {
        let Some(id) = self.selected_batch().map(|b| b.id()) else {
            self.detail.id = None;
            self.detail.lines.clear();
            return;
        };
        let same = self.detail.id.as_ref() == Some(&id);
        if same && !force && self.detail.generation == self.model.generation {
            return;
        }
        if self.detail.log {
            self.detail.lines = self.log_lines(&id);
            self.detail.id = Some(id);
            self.detail.generation = self.model.generation;
            return;
        }
        if self.model.src.store.is_some() {
            // Read from the store off the UI thread ([`Effect::Explain`]);
            // what was shown stays until it is back.
            if !same {
                self.detail.lines = vec![format!("reading {} {} from the store…", id.0, id.1)];
                self.detail.scroll = 0;
            }
            let seen = self.model.batch(&id).map(|b| documents_of(&b));
            if !same || force || (self.detail.generation != self.model.generation && seen != self.detail.seen) {
                self.detail.wanted = Some(id.clone());
            }
            self.detail.seen = seen;
            self.detail.id = Some(id);
            self.detail.generation = self.model.generation;
            return;
        }
        // A finished batch is kept light: read whole again to be explained.
        self.detail.lines = match self.model.whole(&id) {
            Ok(Some(b)) => {
                let e = ubunye::explain::explain(&self.model.scan, b);
                crate::report::explanation(&e, None).lines().map(str::to_string).collect()
            }
            Ok(None) => Vec::new(),
            Err(e) => vec![format!("cannot read the batch again: {e}")],
        };
        if !same {
            self.detail.scroll = 0;
        }
        self.detail.scroll = self.detail.scroll.min(self.detail.lines.len().max(self.detail_rows).saturating_sub(1));
        self.detail.id = Some(id);
        self.detail.generation = self.model.generation;
    }

    /// A store's batch explained: shown if it is still the one selected.
    pub(super) fn explained(&mut self, id: Id, lines: Result<Vec<String>, String>) {
        self.detail.asked = false;
        if self.detail.id.as_ref() == Some(&id) && !self.detail.log {
            // A batch that could not be read is read again at the next look,
            // whether its documents changed or not.
            if lines.is_err() {
                self.detail.seen = None;
            }
            self.detail.lines = lines.unwrap_or_else(|e| vec![e]);
        }
    }

    /// The log of the batch's run (its lease's, or its newest record's):
    /// the last 2,000 lines of `<lineage>/<task>/<run>.log`, or what to do
    /// when there is none.
    fn log_lines(&self, id: &Id) -> Vec<String> {
        let run = self.model.batch(id).and_then(|b| b.run_id.clone());
        if self.model.src.store.is_some() {
            return vec![
                "A store keeps no log of a run: its output went where `ubunye exec`'s stdout and stderr went.".into(),
            ];
        }
        let Some(run) = run.filter(|r| ubunye::layout::run_id_is_safe(r)) else {
            return vec!["No run of this batch is known, so no log.".into()];
        };
        let path = self.model.scan.lineage_dir.join(&id.0).join(format!("{run}.log"));
        match ubunye::exec::tee::tail(&path, 2000) {
            Some(lines) if lines.is_empty() => vec![format!("{} is empty.", path.display())],
            Some(mut lines) => {
                lines.insert(0, format!("{} (l: back to the report)", path.display()));
                lines
            }
            None => vec![
                format!("Run {} has no log ({}).", ubunye::documents::short(&run), path.display()),
                "`ubunye exec` keeps the command's output beside its record when it has no terminal (a scheduler, cron).".into(),
            ],
        }
    }

    /// Bring the runs view's data up to date before drawing it (doctor's
    /// findings come from a look off the UI thread: [`Effect::Examine`]).
    pub fn prepare(&mut self) {
        match self.view {
            View::Batches => {}
            View::Runs if self.runs_generation != Some(self.model.generation) => {
                let model = &self.model;
                // Each record's start read once, beside it, then sorted
                // (newest first; a stable sort keeps the batches' order).
                let mut runs: Vec<(Option<String>, usize, usize)> = (0..model.len())
                    .filter_map(|i| model.row(i).map(|b| (i, b)))
                    .filter(|(_, b)| self.filter.is_empty() || self.filter.matches(*b))
                    .flat_map(|(bi, b)| {
                        b.records().enumerate().map(move |(ri, r)| (r.started_at().map(|s| s.into_owned()), bi, ri))
                    })
                    .collect();
                runs.sort_by(|a, b| b.0.cmp(&a.0));
                self.runs = runs.into_iter().map(|(_, b, r)| (b, r)).collect();
                self.runs_generation = Some(self.model.generation);
                self.selected[1] = self.selected[1].min(self.runs.len().saturating_sub(1));
            }
            View::History if self.history_generation != Some(self.model.generation) => {
                self.history = self.days();
                self.history_generation = Some(self.model.generation);
                self.selected[3] = self.selected[3].min(self.history.len().saturating_sub(1));
            }
            View::Runs | View::Doctor | View::History => {}
        }
    }

    /// The history view's task's batches by date, from what the model holds
    /// (a batch's variables as its one line).
    fn days(&self) -> Vec<ubunye::state::days::Day> {
        use ubunye::state::days::{Dated, DayBatch, by_date_of};
        let Some(task) = &self.history_task else { return Vec::new() };
        let model = &self.model;
        let dated = (0..model.len())
            .filter_map(|i| model.row(i))
            .filter(|b| b.task() == task)
            .filter_map(|b| {
                let vars = b.vars()?;
                let value = |k: &str| {
                    vars.split(' ')
                        .find_map(|kv| kv.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
                        .map(str::to_string)
                };
                let dt = value("dt")?;
                let others: Vec<&str> = vars.split(' ').filter(|kv| !kv.starts_with("dt=")).collect();
                Some(Dated {
                    dtf: value("dtf"),
                    batch: DayBatch {
                        task: b.task().to_string(),
                        key: b.key().to_string(),
                        state: b.state(),
                        others: others.join(" "),
                        run_id: b.run_id().map(|r| r.into_owned()),
                        note: b.note().into_owned(),
                    },
                    dt,
                })
            })
            .collect();
        by_date_of(dated, None, None)
    }

    /// Held updates (shown in the status bar while frozen).
    pub fn held(&self) -> usize {
        self.held.count()
    }

    /// Set the watch mode shown in the status bar.
    pub fn set_watch(&mut self, mode: &str) {
        self.status.watch = mode.to_string();
    }
}

/// What a batch's documents say, for telling whether a look changed it: its
/// state, lease, note and records (not the ages a look moves on).
fn documents_of(b: &ubunye::state::Batch) -> String {
    let records: Vec<(&str, Option<&str>)> =
        b.records.iter().map(|r| (r.run_id.as_str(), r.status.as_deref())).collect();
    format!(
        "{:?} {:?} {} {:?} {:?}",
        b.state,
        b.run_id,
        b.lease.as_ref().map(|l| l.doc.to_json()).unwrap_or_default(),
        b.finished.as_ref().map(|f| &f.run_id),
        records
    )
}
