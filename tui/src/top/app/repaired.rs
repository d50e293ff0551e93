//! A repair is back: its outcome shown, and the batches it touched read
//! again.

use super::*;

impl App {
    pub(super) fn on_repaired_many(&mut self, done: Vec<RepairDone>) -> Vec<Effect> {
        let kind = done.first().map(|d| d.plan.kind).unwrap_or(Kind::Takeover);
        let mut all_ok = true;
        let mut text = String::new();
        for d in &done {
            let (ok, t) = repair::outcome_text(d);
            all_ok &= ok;
            let key = &d.plan.key[..8.min(d.plan.key.len())];
            text.push_str(&format!("{} {key}: {}\n", d.plan.task, if ok { "done" } else { "refused" }));
            text.push_str(&t);
            text.push('\n');
        }
        let verb = if kind == Kind::Takeover { "Took over" } else { "Finished" };
        let title = format!("{verb} {} tagged batch(es)", done.len());
        self.popup = Some(repair::done(title, all_ok, &text));
        self.tagged.clear();
        self.read_again(done.iter().map(|d| (d.plan.task.clone(), d.plan.key.clone())).collect())
    }

    pub(super) fn on_repaired(&mut self, done: RepairDone) -> Vec<Effect> {
        let (ok, text) = repair::outcome_text(&done);
        let t = repair::title(done.plan.kind, &done.plan.task, &done.plan.key);
        self.popup = Some(repair::done(t, ok, &text));
        self.read_again(vec![(done.plan.task, done.plan.key)])
    }

    /// The batches a repair touched, read again at once. A store's come
    /// with a look, asked for now: it reads only what changed, and off the
    /// UI thread.
    fn read_again(&mut self, ids: Vec<Id>) -> Vec<Effect> {
        if self.model.src.store.is_some() {
            return self.want_full_scan();
        }
        let now = self.model.now();
        let mut read = false;
        for id in &ids {
            match self.model.reread(id, now) {
                Ok(()) => read = true,
                Err(e) => self.say(Level::Error, format!("cannot read: {e}")),
            }
        }
        if read {
            self.model.last_change = Some(self.model.src.sys.clock.now());
            self.model.generation += 1;
        }
        self.rebuild();
        self.refresh_detail(true);
        Vec::new()
    }
}
