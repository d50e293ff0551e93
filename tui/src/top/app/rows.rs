//! The rows on screen: filtered and sorted from the model, the selection kept
//! on the same batch, the detail pane refreshed.

use super::*;

impl App {
    pub fn set_filter(&mut self, text: &str) {
        self.filter = Filter::parse(text);
        self.runs_generation = None;
        self.rebuild();
    }

    /// Filter and sort the batch table again, keeping the selected batch
    /// selected, and count the states.
    pub fn rebuild(&mut self) {
        let batches = self.model.batches();
        let mut counts = [0usize; 10];
        for b in batches {
            if let Some(i) = State::ALL.iter().position(|s| *s == b.state) {
                counts[i] += 1;
            }
        }
        self.counts = counts;
        let mut rows: Vec<usize> = if self.filter.is_empty() {
            (0..batches.len()).collect()
        } else {
            (0..batches.len()).filter(|&i| self.filter.matches(&batches[i], self.model.vars(i))).collect()
        };
        let ranks = self.model.task_ranks();
        let task = |i: usize| ranks.get(self.model.task_of(i) as usize).copied().unwrap_or(0);
        order::sort(batches, &mut rows, self.sort, task, ranks.len());
        if self.reversed {
            rows.reverse();
        }
        self.rows = rows;
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
                self.selected_id = self.selected_batch().map(|b| (b.task.clone(), b.key.clone()));
            }
        }
        if self.rows.is_empty() {
            self.detail.open = false;
        }
        self.refresh_detail(false);
    }

    /// Explain the selected batch again if it changed (or `force`).
    pub fn refresh_detail(&mut self, force: bool) {
        let Some(id) = self.selected_batch().map(|b| (b.task.clone(), b.key.clone())) else {
            self.detail.id = None;
            self.detail.lines.clear();
            return;
        };
        let same = self.detail.id.as_ref() == Some(&id);
        if same && !force && self.detail.generation == self.model.generation {
            return;
        }
        // A finished batch is kept light: read whole again to be explained.
        self.detail.lines = match self.model.whole(&id) {
            Ok(Some(b)) => {
                let e = ubunye::explain::explain(&self.model.scan, b, &self.model.src.uc);
                crate::report::explanation(&e).lines().map(str::to_string).collect()
            }
            Ok(None) => Vec::new(),
            Err(e) => vec![format!("cannot read the batch again: {e}")],
        };
        if !same {
            self.detail.scroll = 0;
        }
        self.detail.scroll = self.detail.scroll.min(self.detail.lines.len().saturating_sub(1));
        self.detail.id = Some(id);
        self.detail.generation = self.model.generation;
    }

    /// Bring the runs view's data up to date before drawing it (doctor's
    /// findings come from a look off the UI thread: [`Effect::Examine`]).
    pub fn prepare(&mut self) {
        match self.view {
            View::Batches => {}
            View::Runs if self.runs_generation != Some(self.model.generation) => {
                let batches = self.model.batches();
                let mut runs: Vec<(usize, usize)> = batches
                    .iter()
                    .enumerate()
                    .filter(|&(i, b)| self.filter.is_empty() || self.filter.matches(b, self.model.vars(i)))
                    .flat_map(|(bi, b)| (0..b.records.len()).map(move |ri| (bi, ri)))
                    .collect();
                runs.sort_by(|&(a, ar), &(b, br)| {
                    batches[b].records[br].started_at.cmp(&batches[a].records[ar].started_at)
                });
                self.runs = runs;
                self.runs_generation = Some(self.model.generation);
                self.selected[1] = self.selected[1].min(self.runs.len().saturating_sub(1));
            }
            View::Runs | View::Doctor => {}
        }
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
