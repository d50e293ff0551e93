//! Reads of the use case: the first, the rescans, and the read of the tasks
//! whose files changed that follows every change; one at a time, the rest
//! waiting (docs/design.md, "The dashboard's model stays small, and equal to
//! a full scan").

use super::*;

impl App {
    /// Start with nothing read: the batches arrive a task at a time
    /// ([`Event::Part`]), then [`Event::Loaded`]. Changes seen meanwhile are
    /// applied again at the end.
    pub fn start_loading(&mut self) {
        self.loading = Some(0);
        self.begin_read(None);
    }

    /// A read starts: of the whole use case (None), or of these tasks.
    pub(super) fn begin_read(&mut self, tasks: Option<BTreeSet<String>>) {
        self.scanning = true;
        self.dropped = false;
        self.during_scan.clear();
        if tasks.is_none() {
            self.pending.clear();
        }
        self.model.begin_read(tasks);
    }

    /// A read is over (of the whole use case, or of some tasks): the batches
    /// of what it read that it did not find again go, the changes seen
    /// meanwhile are applied again, and the next read waiting is asked for.
    pub(super) fn on_loaded(&mut self, head: Result<ubunye::state::ScanHead, String>) -> Vec<Effect> {
        let first = self.loading.take().is_some();
        self.scanning = false;
        let complete = !std::mem::take(&mut self.dropped);
        let mut effects = vec![Effect::Rewatch];
        if self.frozen && !first {
            // Nothing on screen changes while frozen: nothing goes, the rows
            // stay; the rescan is done again when the freeze ends.
            self.held.full = true;
            self.held.paths.append(&mut self.during_scan);
            return effects;
        }
        match head {
            Ok(h) => {
                self.model.loaded(h, complete);
                self.note_problems();
                // Reads that failed before: the disk answers again.
                let retry = std::mem::take(&mut self.retry);
                self.pending.extend(retry);
                if !first && matches!(&self.status.message, Some((Level::Error, _, _))) {
                    self.status.message = None;
                }
            }
            Err(e) if first => self.say(Level::Error, format!("cannot read the use case: {e}")),
            Err(e) => {
                // A read of some tasks that failed is asked again at the next
                // tick (not at once: the folder may be gone for good).
                if let Some(tasks) = self.model.reading() {
                    self.retry.extend(tasks.iter().cloned());
                }
                self.say(Level::Error, format!("showing what was last read: {e}"))
            }
        }
        let again = std::mem::take(&mut self.during_scan);
        if self.frozen {
            self.held.paths.extend(again);
        } else if !again.is_empty() {
            let applied = self.model.apply(&again);
            self.scan_again |= applied.full;
            self.pending.extend(applied.tasks);
        }
        self.rebuild();
        if std::mem::take(&mut self.scan_again) {
            effects.extend(self.want_full_scan());
        } else if !self.pending.is_empty() && !self.frozen {
            let tasks = std::mem::take(&mut self.pending);
            effects.extend(self.want_tasks(tasks));
        }
        effects
    }

    pub(super) fn on_change(&mut self, paths: Vec<PathBuf>) -> Vec<Effect> {
        if self.frozen {
            self.held.paths.extend(paths);
            if self.held.paths.len() > crate::top::model::BURST {
                self.held.paths.clear();
                self.held.full = true;
            }
            return Vec::new();
        }
        if self.scanning {
            self.during_scan.extend(paths.iter().cloned());
        }
        let applied = self.model.apply(&paths);
        if let Some(e) = applied.errors.first() {
            self.say(Level::Error, format!("cannot read: {e}"));
        }
        if applied.changed {
            self.rebuild();
        }
        if applied.full { self.want_full_scan() } else { self.want_tasks(applied.tasks) }
    }

    /// Read these tasks again whole (off the UI thread), or once the read
    /// under way is over.
    pub(super) fn want_tasks(&mut self, tasks: BTreeSet<String>) -> Vec<Effect> {
        if tasks.is_empty() {
            return Vec::new();
        }
        if self.scanning {
            self.pending.extend(tasks);
            return Vec::new();
        }
        self.begin_read(Some(tasks.clone()));
        vec![Effect::ReadTasks(tasks.into_iter().collect())]
    }

    pub(super) fn want_full_scan(&mut self) -> Vec<Effect> {
        if self.frozen {
            self.held.full = true;
            return Vec::new();
        }
        if self.scanning {
            self.scan_again = true;
            return Vec::new();
        }
        self.begin_read(None);
        vec![Effect::FullScan]
    }
}
