//! Keys: what each key does to the dashboard, by what is open (help, filter,
//! popup, detail, a view).

use super::*;

impl App {
    pub(super) fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        // Keys act on what is on the screen: the runs and findings up to date.
        self.prepare();
        let ctx = self.ctx();
        let action = keys::lookup(ctx, self.view, &k);
        if ctx == Ctx::Filter && action.is_none() {
            if let KeyCode::Char(c) = k.code
                && !k.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                let mut text = self.filter.text.clone();
                text.push(c);
                self.set_filter(&text);
            }
            return Vec::new();
        }
        let Some(action) = action else {
            // Bound in another view: say where, rather than nothing at all.
            if let Some(b) = keys::elsewhere(ctx, self.view, &k) {
                let views: Vec<&str> = b.views.iter().map(|v| v.title()).collect();
                self.say(Level::Info, format!("{} works in {} only: {}", b.label, views.join(" and "), b.help));
            }
            return Vec::new();
        };
        match ctx {
            Ctx::Help => self.help_key(action),
            Ctx::Popup => self.popup_key(action),
            Ctx::Filter => self.filter_key(action),
            Ctx::Detail => self.detail_key(action),
            Ctx::Main => self.main_key(action),
        }
    }

    fn help_key(&mut self, a: Action) -> Vec<Effect> {
        let page = self.page.max(1);
        match a {
            Action::Quit => return vec![Effect::Quit(0)],
            Action::Up => self.help_scroll = self.help_scroll.saturating_sub(1),
            Action::Down => self.help_scroll += 1,
            Action::PageUp => self.help_scroll = self.help_scroll.saturating_sub(page),
            Action::PageDown => self.help_scroll += page,
            _ => {
                self.help = false;
                self.help_scroll = 0;
            }
        }
        Vec::new()
    }

    fn filter_key(&mut self, a: Action) -> Vec<Effect> {
        match a {
            Action::Confirm => self.editing = false,
            Action::Clear => {
                self.editing = false;
                self.set_filter("");
            }
            Action::Backspace => {
                let mut text = self.filter.text.clone();
                text.pop();
                self.set_filter(&text);
            }
            Action::Quit => return vec![Effect::Quit(0)],
            _ => {}
        }
        Vec::new()
    }

    fn popup_key(&mut self, a: Action) -> Vec<Effect> {
        let Some(p) = self.popup.as_mut() else { return Vec::new() };
        match a {
            Action::Popup(press) => match p.press(press) {
                Answer::Yes(r) => {
                    self.popup = Some(repair::running(&r));
                    if r.more.is_empty() {
                        return vec![Effect::Repair(r.plan)];
                    }
                    return vec![Effect::RepairMany(std::iter::once(*r.plan).chain(r.more).collect())];
                }
                Answer::No => {
                    self.popup = None;
                    self.say(Level::Info, "Nothing was done.");
                }
                Answer::Close => self.popup = None,
                Answer::Open => {}
            },
            // A store's repair runs in a process of its own, which finishes
            // it whatever the dashboard does.
            Action::Quit if matches!(p.phase, Phase::Running) && self.model.src.store.is_none() => {
                self.say(Level::Warn, "a repair is under way: it ends in a moment");
            }
            Action::Quit => {
                self.popup = None;
                return vec![Effect::Quit(0)];
            }
            _ => {}
        }
        Vec::new()
    }

    fn detail_key(&mut self, a: Action) -> Vec<Effect> {
        // Counted in lines as drawn (wrapped to the pane), not as written.
        let rows = self.detail_rows.max(self.detail.lines.len());
        let last = rows.saturating_sub(1);
        let page = self.detail_page.max(1);
        match a {
            Action::Up => self.detail.scroll = self.detail.scroll.saturating_sub(1),
            Action::Down => self.detail.scroll = (self.detail.scroll + 1).min(last),
            Action::PageUp => self.detail.scroll = self.detail.scroll.saturating_sub(page),
            Action::PageDown => self.detail.scroll = (self.detail.scroll + page).min(last),
            Action::First => self.detail.scroll = 0,
            Action::Last => self.detail.scroll = rows.saturating_sub(page),
            Action::Close => self.detail.open = false,
            _ => return self.main_key(a),
        }
        Vec::new()
    }

    fn main_key(&mut self, a: Action) -> Vec<Effect> {
        match a {
            Action::Up => self.move_by(-1),
            Action::Down => self.move_by(1),
            Action::PageUp => self.move_by(-(self.page.max(1) as isize)),
            Action::PageDown => self.move_by(self.page.max(1) as isize),
            Action::First => self.move_by(isize::MIN / 2),
            Action::Last => self.move_by(isize::MAX / 2),
            Action::Detail => self.open_detail(),
            Action::Filter => self.editing = true,
            Action::Sort => {
                self.sort = self.sort.next();
                // Each column starts in its own order (oldest first, A first).
                self.reversed = false;
                self.rebuild();
                self.say(Level::Info, format!("sorted by {} {} (S reverses)", self.sort.word(), self.sort_arrow()));
            }
            Action::Reverse => {
                self.reversed = !self.reversed;
                self.rebuild();
                self.say(Level::Info, format!("sorted by {} {}", self.sort.word(), self.sort_arrow()));
            }
            Action::Tag if !self.read_only => {
                if let Some(id) = self.selected_batch().map(|b| b.id()) {
                    if !self.tagged.remove(&id) {
                        self.tagged.insert(id);
                    }
                    let n = self.tagged.len();
                    self.say(Level::Info, format!("{n} tagged: t or f acts on all of them, Esc clears the tags"));
                    self.move_by(1);
                }
            }
            Action::Close if !self.tagged.is_empty() => {
                self.tagged.clear();
                self.say(Level::Info, "tags cleared");
            }
            Action::Takeover | Action::Finish | Action::Tag if self.read_only => {
                self.say(Level::Info, "read-only: this dashboard does not repair (started with --read-only)");
            }
            Action::Takeover => return self.open_repair(Kind::Takeover),
            Action::Finish => return self.open_repair(Kind::Finish),
            Action::Copy => {
                if let Some(b) = self.selected_batch() {
                    let key = b.key().to_string();
                    self.say(Level::Info, format!("copied {key} to the clipboard (OSC 52)"));
                    return vec![Effect::Copy(key)];
                }
            }
            Action::Log => {
                if self.selected_batch().is_none() {
                    self.say(Level::Info, "no batch selected");
                } else {
                    self.detail.log = !(self.detail.log && self.detail.open);
                    self.detail.open = true;
                    self.refresh_detail(true);
                    // The log opens at its end; the report at its top.
                    self.detail.scroll = if self.detail.log { usize::MAX / 2 } else { 0 };
                }
            }
            Action::Freeze => return self.toggle_freeze(),
            Action::Rescan => {
                self.say(Level::Info, "rescanning");
                return self.want_full_scan();
            }
            Action::Help => self.help = true,
            Action::NextView => {
                let i = (self.view.index() + 1) % View::ALL.len();
                self.switch(View::ALL[i]);
            }
            Action::ViewBatches => self.switch(View::Batches),
            Action::ViewRuns => self.switch(View::Runs),
            Action::ViewDoctor => self.switch(View::Doctor),
            Action::ViewHistory => {
                // The task of the batch selected in the batch view.
                let task = self.selected_batch().map(|b| b.task().to_string());
                if task.is_some() && task != self.history_task {
                    self.history_task = task;
                    self.history_generation = None;
                    self.selected[3] = 0;
                    self.offset[3] = 0;
                }
                if self.history_task.is_none() {
                    self.say(Level::Info, "select a batch first: its task's history is shown");
                } else {
                    self.switch(View::History);
                }
            }
            Action::Close if !self.filter.is_empty() => self.set_filter(""),
            Action::Quit => return vec![Effect::Quit(0)],
            _ => {}
        }
        Vec::new()
    }

    fn switch(&mut self, v: View) {
        self.view = v;
        self.detail.open = false;
        if v == View::Doctor {
            // Fresh findings when the view is opened.
            self.findings_generation = None;
        }
    }

    fn toggle_freeze(&mut self) -> Vec<Effect> {
        self.frozen = !self.frozen;
        if self.frozen {
            self.say(Level::Info, "frozen: updates are held until F is pressed again");
            return Vec::new();
        }
        let held = std::mem::take(&mut self.held);
        let n = held.count();
        let mut effects = Vec::new();
        if held.full {
            effects.extend(self.want_full_scan());
        }
        if !held.paths.is_empty() {
            effects.extend(self.on_change(held.paths));
        }
        self.model.tick();
        self.rebuild();
        self.say(Level::Info, format!("resumed: {n} held update(s) applied"));
        effects
    }

    fn open_detail(&mut self) {
        match self.view {
            View::Batches => {
                if let Some(b) = self.selected_batch() {
                    self.selected_id = Some(b.id());
                    self.moved = true;
                    self.detail.open = true;
                    self.detail.scroll = 0;
                    if self.detail.log {
                        self.detail.log = false;
                        self.refresh_detail(true);
                    }
                }
            }
            View::Runs => {
                let id = self.runs.get(self.selected[1]).and_then(|&(bi, _)| self.model.row(bi)).map(|b| b.id());
                self.jump_to(id);
            }
            View::Doctor => {
                let id = self
                    .findings
                    .get(self.selected[2])
                    .and_then(|f| Some((f.task.clone()?, f.key.clone()?)))
                    .filter(|id| self.model.get(id).is_some());
                self.jump_to(id);
            }
            View::History => {
                let id = self
                    .history
                    .get(self.selected[3])
                    .and_then(|d| d.batch.as_ref())
                    .map(|b| (b.task.clone(), b.key.clone()))
                    .filter(|id| self.model.get(id).is_some());
                match id {
                    Some(id) => self.jump_to(Some(id)),
                    None => self.say(Level::Info, "no batch that day: nothing ran it"),
                }
            }
        }
    }

    /// Show a batch in the batch view, with its detail open.
    fn jump_to(&mut self, id: Option<Id>) {
        let Some(id) = id else {
            self.say(Level::Info, "no batch to show for this line");
            return;
        };
        if !self.model.position_of(&id).is_some_and(|at| self.rows.contains(&at)) {
            self.set_filter("");
        }
        self.selected_id = Some(id);
        self.moved = true;
        self.view = View::Batches;
        self.rebuild();
        self.detail.open = true;
        self.detail.scroll = 0;
    }

    /// The key table binds the repairs in the batch view only. With tagged
    /// batches, the repair is of all of them. A store's batches are read
    /// again over the network: their plan is made off the screen's thread.
    fn open_repair(&mut self, kind: Kind) -> Vec<Effect> {
        let ids: Vec<Id> = if self.tagged.is_empty() {
            let Some(b) = self.selected_batch() else {
                self.say(Level::Info, "no batch selected");
                return Vec::new();
            };
            let id = b.id();
            // The selection stays on this batch whatever it becomes.
            self.moved = true;
            self.selected_id = Some(id.clone());
            vec![id]
        } else {
            self.tagged.iter().cloned().collect()
        };
        if self.model.src.store.is_some() {
            self.popup = Some(repair::planning(kind, &ids));
            self.planning = Some((kind, ids.clone()));
            return vec![Effect::Plan { kind, ids }];
        }
        self.popup = Some(match &ids[..] {
            [(task, key)] => repair::plan(&mut self.model, kind, task, key),
            _ => repair::plan_many(&mut self.model, kind, &ids),
        });
        Vec::new()
    }

    fn move_by(&mut self, delta: isize) {
        let v = self.view.index();
        let len = match self.view {
            View::Batches => self.rows.len(),
            View::Runs => self.runs.len(),
            View::Doctor => self.findings.len(),
            View::History => self.history.len(),
        };
        if len == 0 {
            self.selected[v] = 0;
            return;
        }
        let cur = self.selected[v] as isize;
        self.selected[v] = (cur.saturating_add(delta)).clamp(0, len as isize - 1) as usize;
        if self.view == View::Batches {
            self.moved = true;
            self.selected_id = self.selected_batch().map(|b| b.id());
            self.refresh_detail(false);
        }
    }
}
