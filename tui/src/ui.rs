//! Drawing: the header (use case, counts per state, watch mode, last change),
//! the body (batch table and explain pane, run records, or doctor findings),
//! the status bar and the footer of keys; the repair popup and the help
//! overlay on top. Reads the [`App`]; the only state it writes is where the
//! lists are scrolled to and how much room they had.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table};
use ubunye::state::{Batch, Flag, State};
use ubunye::timefmt;

use crate::app::{App, Level, View};
use crate::keys::{self, Ctx};
use crate::popup::Popup;

/// The glyph and colour of a state: the same glyphs and meaning as
/// `ubunye leases list` (its colours, in ratatui's names).
pub fn glyph(s: State) -> (&'static str, Color) {
    let colour = match s {
        State::Unreadable => Color::LightMagenta,
        State::Dead | State::Orphan => Color::LightRed,
        State::Pending | State::HandedBack | State::Kept => Color::LightYellow,
        State::Live => Color::LightGreen,
        State::Interrupted => Color::Yellow,
        State::Failed => Color::Red,
        State::Finished => Color::DarkGray,
    };
    (s.glyph(), colour)
}

/// Styles, with no colour at all under NO_COLOR.
#[derive(Clone, Copy)]
struct Paint {
    colour: bool,
}

impl Paint {
    fn fg(self, c: Color) -> Style {
        if self.colour { Style::default().fg(c) } else { Style::default() }
    }
    fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }
    fn dim(self) -> Style {
        if self.colour { Style::default().fg(Color::DarkGray) } else { Style::default() }
    }
    fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    fn level(self, l: Level) -> Style {
        match l {
            Level::Info => Style::default(),
            Level::Warn => self.fg(Color::LightYellow),
            Level::Error => self.fg(Color::LightRed).add_modifier(Modifier::BOLD),
        }
    }
}

/// Cut `s` to `w` columns, with an ellipsis when cut.
pub fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// Where the value of a `  label     value` line starts: continuation lines
/// go under it.
fn hanging(line: &str) -> Option<usize> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent == 0 {
        return None;
    }
    let rest = &line[indent..];
    let label = rest.find(' ')?;
    let after = &rest[label..];
    let gap = after.len() - after.trim_start_matches(' ').len();
    (gap >= 2 && gap < after.len()).then(|| indent + label + gap)
}

/// Wrap text to `w` columns at spaces (a word longer than a line is cut),
/// keeping the spaces inside a line; continuation lines go under the value of
/// a `label   value` line, else two columns in.
pub fn wrap(lines: &[String], w: usize) -> Vec<String> {
    let w = w.max(8);
    let mut out = Vec::new();
    for line in lines {
        if line.chars().count() <= w {
            out.push(line.clone());
            continue;
        }
        let indent = line.chars().take_while(|c| *c == ' ').count();
        let hang = hanging(line).unwrap_or(indent + 2).min(w / 2);
        let cont = " ".repeat(hang);
        // (spaces before, word)
        let mut tokens: Vec<(usize, Vec<char>)> = Vec::new();
        let mut spaces = 0;
        let mut word: Vec<char> = Vec::new();
        for c in line.chars() {
            if c == ' ' {
                if !word.is_empty() {
                    tokens.push((spaces, std::mem::take(&mut word)));
                    spaces = 0;
                }
                spaces += 1;
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            tokens.push((spaces, word));
        }
        let mut cur = String::new();
        let mut cur_n = 0;
        let mut at_start = true;
        let mut first = true;
        for (sp, mut word) in tokens {
            loop {
                let gap = if at_start && !first { 0 } else { sp.min(w / 2) };
                if cur_n + gap + word.len() <= w {
                    cur.push_str(&" ".repeat(gap));
                    cur.extend(word.iter());
                    cur_n += gap + word.len();
                    at_start = false;
                    break;
                }
                if !at_start {
                    out.push(std::mem::replace(&mut cur, cont.clone()));
                    cur_n = hang;
                    at_start = true;
                    first = false;
                    continue;
                }
                // A word longer than a whole line: cut it.
                let room = w.saturating_sub(cur_n + gap).max(1).min(word.len());
                cur.push_str(&" ".repeat(gap));
                cur.extend(word[..room].iter());
                out.push(std::mem::replace(&mut cur, cont.clone()));
                cur_n = hang;
                first = false;
                word.drain(..room);
                if word.is_empty() {
                    break;
                }
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur);
        }
    }
    out
}

/// Draw everything.
pub fn draw(f: &mut Frame, app: &mut App) {
    app.prepare();
    let area = f.area();
    let p = Paint { colour: app.colour };
    if area.width < 40 || area.height < 10 {
        let msg = "ubunye top: the terminal is too small (40x10 at least)";
        f.render_widget(Paragraph::new(msg).wrap(ratatui::widgets::Wrap { trim: true }), area);
        return;
    }
    let [header, body, status, footer] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    draw_header(f, app, header, p);
    match app.view {
        View::Batches => draw_batches(f, app, body, p),
        View::Runs => draw_runs(f, app, body, p),
        View::Doctor => draw_doctor(f, app, body, p),
    }
    draw_status(f, app, status, p);
    draw_footer(f, app, footer, p);
    if app.popup.is_some() {
        draw_popup(f, app, area, p);
    }
    if app.help {
        draw_help(f, app, area, p);
    }
}

fn draw_header(f: &mut Frame, app: &App, area: Rect, p: Paint) {
    let w = area.width as usize;
    let changed = app
        .model
        .last_change
        .map(|t| {
            let s = timefmt::rfc3339(t);
            format!("changed {}Z", s.get(11..19).unwrap_or(&s))
        })
        .unwrap_or_else(|| "no change yet".into());
    let right = format!("watch {} · {changed}", app.status.watch);
    let root = app.model.scan.root.display().to_string();
    let room = w.saturating_sub(right.chars().count() + 14);
    let left = format!("ubunye top · {}", fit_left(&root, room));
    let gap = w.saturating_sub(left.chars().count() + right.chars().count());
    let line1 =
        Line::from(vec![Span::styled(left, p.bold()), Span::raw(" ".repeat(gap)), Span::styled(right, p.dim())]);
    // Counts, then the views.
    let tabs: Vec<Span> = View::ALL
        .iter()
        .flat_map(|v| {
            let style = if *v == app.view { p.selected().add_modifier(Modifier::BOLD) } else { p.dim() };
            [Span::raw(" "), Span::styled(format!(" {} ", v.title()), style)]
        })
        .collect();
    let tabs_w: usize = tabs.iter().map(|s| s.content.chars().count()).sum();
    let states: Vec<(State, usize)> =
        State::ALL.iter().zip(app.counts).filter(|(_, n)| *n > 0).map(|(s, n)| (*s, n)).collect();
    let long: usize = states.iter().map(|(s, n)| 4 + n.to_string().len() + s.word().len()).sum();
    let short: usize = states.iter().map(|(_, n)| 2 + n.to_string().len()).sum();
    // Words when they fit; the view tabs when they fit too (always off the
    // batch view, where they are the only sign of the view).
    let (words, show_tabs) = if long + tabs_w <= w {
        (true, true)
    } else if app.view == View::Batches && long <= w {
        (true, false)
    } else {
        (false, short + tabs_w <= w)
    };
    let mut spans: Vec<Span> = Vec::new();
    for (s, n) in &states {
        let (g, c) = glyph(*s);
        let text = if words { format!("{g} {n} {}  ", s.word()) } else { format!("{g}{n} ") };
        spans.push(Span::styled(text, p.fg(c)));
    }
    if states.is_empty() {
        spans.push(Span::styled("no batches yet", p.dim()));
    }
    if show_tabs {
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        spans.push(Span::raw(" ".repeat(w.saturating_sub(used + tabs_w))));
        spans.extend(tabs);
    }
    f.render_widget(Paragraph::new(Text::from(vec![line1, Line::from(spans)])), area);
}

/// Keep the end of a path: `…/demo/uc`.
fn fit_left(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let tail: String = s.chars().skip(n - (w - 1)).collect();
    format!("…{tail}")
}

/// One column of the batch table.
struct Col {
    title: &'static str,
    width: usize,
    cell: fn(&Batch) -> String,
}

fn holder(b: &Batch) -> String {
    b.lease
        .as_ref()
        .map(|l| {
            let host = l.holder.host.as_deref().map(|h| h.split('|').next().unwrap_or(h)).unwrap_or("?");
            format!("{}@{host}", l.holder.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()))
        })
        .unwrap_or_default()
}

fn age(b: &Batch) -> String {
    let a = b
        .lease
        .as_ref()
        .and_then(|l| l.holder.judgement.as_ref())
        .and_then(|j| j.age)
        .map(|a| timefmt::age(a.age))
        .unwrap_or_default();
    if b.flags.contains(&Flag::Stalled) { format!("{a} stalled") } else { a }
}

fn claims(b: &Batch) -> String {
    if b.lease.is_some() || !b.orphans.is_empty() { b.claim_count().to_string() } else { String::new() }
}

/// The columns that fit in `w`, widest content first to go: RUN, CLAIMS,
/// PID@HOST are dropped on narrow screens (the detail pane has them).
fn columns(app: &App, visible: &[usize], w: usize) -> Vec<Col> {
    let batches = app.model.batches();
    let longest = |f: fn(&Batch) -> String, cap: usize, min: usize| {
        visible.iter().filter_map(|&i| batches.get(i)).map(|b| f(b).chars().count()).max().unwrap_or(0).clamp(min, cap)
    };
    let vars = |b: &Batch| b.variables_text().unwrap_or_else(|| b.key.clone());
    let run = |b: &Batch| b.run_id.as_deref().map(ubunye::doc::short).unwrap_or_default();
    let task = |b: &Batch| b.task.clone();
    let state_w =
        2 + visible.iter().filter_map(|&i| batches.get(i)).map(|b| b.state.word().len()).max().unwrap_or(5).max(5);
    let mut cols = vec![
        Col { title: "STATE", width: state_w, cell: |b| format!("{} {}", glyph(b.state).0, b.state.word()) },
        Col { title: "TASK", width: longest(task, 28, 4), cell: task },
        Col { title: "VARIABLES / KEY", width: longest(vars, 30, 15), cell: vars },
        Col { title: "RUN", width: 8, cell: run },
        Col { title: "PID@HOST", width: longest(holder, 18, 8), cell: holder },
        Col { title: "AGE", width: longest(age, 14, 3), cell: age },
        Col { title: "CLAIMS", width: 6, cell: claims },
        Col { title: "NOTE", width: 0, cell: |b| b.note.clone() },
    ];
    let need = |cols: &[Col]| cols.iter().map(|c| c.width + 1).sum::<usize>() + 20;
    for drop in ["RUN", "CLAIMS", "PID@HOST"] {
        if need(&cols) <= w {
            break;
        }
        cols.retain(|c| c.title != drop);
    }
    // Still too wide: narrow the task and the variables, never below 12.
    while need(&cols) > w {
        let widest = cols
            .iter_mut()
            .filter(|c| matches!(c.title, "TASK" | "VARIABLES / KEY") && c.width > 12)
            .max_by_key(|c| c.width);
        match widest {
            Some(c) => c.width -= 1,
            None => break,
        }
    }
    let used: usize = cols.iter().filter(|c| c.title != "NOTE").map(|c| c.width + 1).sum();
    if let Some(note) = cols.iter_mut().find(|c| c.title == "NOTE") {
        note.width = w.saturating_sub(used).max(4);
    }
    cols
}

fn draw_batches(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    if app.detail.open {
        draw_detail(f, app, area, p, true);
        return;
    }
    let rows = app.rows.len();
    let want = (rows + 1).max(4) as u16;
    let table_h = want.min(area.height.saturating_mul(11) / 20).max(4).min(area.height);
    let [top, bottom] = Layout::vertical([Constraint::Length(table_h), Constraint::Min(0)]).areas(area);
    draw_table(f, app, top, p);
    if bottom.height >= 3 {
        draw_detail(f, app, bottom, p, false);
    }
}

/// Scroll a list so that the selected row shows.
fn window(selected: usize, offset: &mut usize, height: usize, len: usize) -> std::ops::Range<usize> {
    if height == 0 {
        return 0..0;
    }
    if selected < *offset {
        *offset = selected;
    }
    if selected >= *offset + height {
        *offset = selected + 1 - height;
    }
    if *offset + height > len {
        *offset = len.saturating_sub(height);
    }
    *offset..(*offset + height).min(len)
}

fn draw_table(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let height = (area.height as usize).saturating_sub(1);
    app.page = height.max(1);
    let range = window(app.selected[0], &mut app.offset[0], height, app.rows.len());
    let visible: Vec<usize> = app.rows[range.clone()].to_vec();
    let cols = columns(app, &visible, area.width as usize);
    let batches = app.model.batches();
    let header = Row::new(cols.iter().map(|c| Cell::from(c.title))).style(p.bold());
    let mut rows = Vec::with_capacity(visible.len());
    for (n, &i) in visible.iter().enumerate() {
        let Some(b) = batches.get(i) else { continue };
        let cells: Vec<Cell> = cols
            .iter()
            .map(|c| {
                let text = fit(&(c.cell)(b), c.width);
                if c.title == "STATE" {
                    Cell::from(Span::styled(text, p.fg(glyph(b.state).1)))
                } else {
                    Cell::from(text)
                }
            })
            .collect();
        let mut row = Row::new(cells);
        if range.start + n == app.selected[0] {
            row = row.style(p.selected());
        }
        rows.push(row);
    }
    let widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.width as u16)).collect();
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    if app.rows.is_empty() {
        let why = if app.loading.is_some() {
            "Reading the use case…".to_string()
        } else if app.filter.is_empty() {
            "No batches in this use case yet.".to_string()
        } else {
            format!("No batch matches the filter \"{}\" (Esc clears it).", app.filter.text)
        };
        f.render_widget(table, area);
        if area.height > 1 {
            let r = Rect { y: area.y + 1, height: 1, ..area };
            f.render_widget(Paragraph::new(Span::styled(why, p.dim())), r);
        }
        return;
    }
    f.render_widget(table, area);
}

fn draw_detail(f: &mut Frame, app: &mut App, area: Rect, p: Paint, full: bool) {
    let title = match &app.detail.id {
        Some((task, key)) => format!(" {task} {} · explain ", &key[..key.len().min(8)]),
        None => " explain ".into(),
    };
    let hint = if full { " Esc back · ↑↓ PgUp PgDn scroll " } else { " Enter: full report " };
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, p.bold()))
        .title_bottom(Line::from(Span::styled(hint, p.dim())).right_aligned());
    let inner = block.inner(area);
    let lines = wrap(&app.detail.lines, inner.width as usize);
    let height = inner.height as usize;
    app.detail_page = height.max(1);
    let max_scroll = lines.len().saturating_sub(height);
    if app.detail.scroll > max_scroll {
        app.detail.scroll = max_scroll;
    }
    let shown: Vec<Line> = lines
        .iter()
        .skip(app.detail.scroll)
        .take(height)
        .map(|l| {
            if !l.starts_with(' ') && !l.is_empty() && l.chars().next().is_some_and(|c| c.is_uppercase()) {
                Line::from(Span::styled(l.clone(), p.bold()))
            } else {
                Line::from(l.clone())
            }
        })
        .collect();
    f.render_widget(block, area);
    f.render_widget(Paragraph::new(shown), inner);
    if lines.len() > height && height > 0 {
        let more =
            format!(" {}-{}/{} ", app.detail.scroll + 1, (app.detail.scroll + height).min(lines.len()), lines.len());
        let w = more.chars().count() as u16;
        if area.width > w + 2 {
            let r = Rect { x: area.x + area.width - w - 1, y: area.y, width: w, height: 1 };
            f.render_widget(Paragraph::new(Span::styled(more, p.dim())), r);
        }
    }
}

fn vars_text(v: &serde_json::Map<String, serde_json::Value>) -> String {
    v.iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
        .collect::<Vec<_>>()
        .join(" ")
}

fn record_time(s: Option<&str>) -> String {
    s.map(|t| t.get(..19).unwrap_or(t).replace('T', " ")).unwrap_or_default()
}

fn draw_runs(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let height = (area.height as usize).saturating_sub(1);
    app.page = height.max(1);
    let range = window(app.selected[1], &mut app.offset[1], height, app.runs.len());
    let batches = app.model.batches();
    let w = area.width as usize;
    // Narrow screens: a shorter start time and no duration.
    let wide = w >= 100;
    let started_w = if wide { 19 } else { 14 };
    let secs_w = if wide { 6 } else { 0 };
    let header = Row::new(["STARTED", "STATUS", "TASK", "RUN", "VARIABLES", if wide { "SECS" } else { "" }, "ERROR"])
        .style(p.bold());
    let shown = &app.runs[range.clone()];
    let longest = |f: &dyn Fn(&Batch, usize) -> usize| {
        shown.iter().filter_map(|&(bi, ri)| batches.get(bi).map(|b| f(b, ri))).max().unwrap_or(4)
    };
    let fixed = started_w + 11 + 8 + secs_w + 7;
    let flexible = w.saturating_sub(fixed + 10);
    let task_w = longest(&|b, _| b.task.chars().count()).clamp(4, 24).min(flexible / 2);
    let vars_w = longest(&|b, ri| {
        let v = b.records.get(ri).and_then(|r| r.variables.as_ref()).or(b.variables.as_ref());
        v.map(|v| vars_text(v).chars().count()).unwrap_or(0)
    })
    .clamp(9, 30)
    .min(flexible.saturating_sub(task_w));
    let err_w = w.saturating_sub(fixed + task_w + vars_w).max(4);
    let mut rows = Vec::new();
    for (n, &(bi, ri)) in app.runs[range.clone()].iter().enumerate() {
        let Some(b) = batches.get(bi) else { continue };
        let Some(r) = b.records.get(ri) else { continue };
        let status = r.status.clone().unwrap_or_else(|| "(none)".into());
        let colour = match status.as_str() {
            "success" => Color::LightGreen,
            "running" => Color::LightCyan,
            "interrupted" => Color::LightYellow,
            _ => Color::LightRed,
        };
        let secs =
            match (r.started_at.as_deref().and_then(timefmt::parse), r.ended_at.as_deref().and_then(timefmt::parse)) {
                (Some(s), Some(e)) => {
                    e.duration_since(s).map(|d| format!("{:.1}", d.as_secs_f64())).unwrap_or_default()
                }
                _ => String::new(),
            };
        // A full scan leaves the variables with the batch, not its records.
        let vars = r.variables.as_ref().or(b.variables.as_ref()).map(vars_text).unwrap_or_default();
        let started = record_time(r.started_at.as_deref());
        let started = if wide { started } else { started.get(5..).unwrap_or(&started).to_string() };
        let mut row = Row::new(vec![
            Cell::from(started),
            Cell::from(Span::styled(fit(&status, 11), p.fg(colour))),
            Cell::from(fit(&b.task, task_w)),
            Cell::from(ubunye::doc::short(&r.run_id)),
            Cell::from(fit(&vars, vars_w)),
            Cell::from(secs),
            Cell::from(fit(r.error.as_deref().unwrap_or(""), err_w)),
        ]);
        if range.start + n == app.selected[1] {
            row = row.style(p.selected());
        }
        rows.push(row);
    }
    let widths = [
        Constraint::Length(started_w as u16),
        Constraint::Length(11),
        Constraint::Length(task_w as u16),
        Constraint::Length(8),
        Constraint::Length(vars_w as u16),
        Constraint::Length(secs_w as u16),
        Constraint::Min(4),
    ];
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), area);
    if app.runs.is_empty() && area.height > 1 {
        let r = Rect { y: area.y + 1, height: 1, ..area };
        f.render_widget(Paragraph::new(Span::styled("No run records.", p.dim())), r);
    }
}

fn draw_doctor(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let w = area.width as usize;
    let root = app.model.scan.root.clone();
    if app.findings.is_empty() {
        let text = format!("Clean: nothing to look at ({} batch(es) looked at).", app.model.batches().len());
        f.render_widget(Paragraph::new(Span::styled(text, p.dim())), area);
        return;
    }
    // Two lines a finding: what and where; then the detail.
    let height = (area.height as usize / 2).max(1);
    app.page = height;
    let range = window(app.selected[2], &mut app.offset[2], height, app.findings.len());
    let mut lines = Vec::new();
    for (n, fnd) in app.findings[range.clone()].iter().enumerate() {
        let path = fnd
            .path
            .strip_prefix(&root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| fnd.path.display().to_string());
        let at = match (&fnd.task, &fnd.key) {
            (Some(t), Some(k)) => format!("  [{t} {}]", &k[..k.len().min(8)]),
            _ => String::new(),
        };
        let sel = range.start + n == app.selected[2];
        let first = fit(&format!("{:<18} {path}{at}", fnd.kind), w);
        let style = if sel { p.selected() } else { p.fg(Color::LightYellow) };
        lines.push(Line::from(Span::styled(first, style)));
        lines.push(Line::from(Span::styled(fit(&format!("{:<18} {}", "", fnd.detail), w), p.dim())));
    }
    f.render_widget(Paragraph::new(lines), area);
}

fn draw_status(f: &mut Frame, app: &App, area: Rect, p: Paint) {
    let w = area.width as usize;
    let mut right: Vec<String> = Vec::new();
    if app.frozen {
        right.push(format!("FROZEN ({} held)", app.held()));
    }
    match app.loading {
        Some(n) => right.push(format!("reading… {n} batches so far")),
        None if app.scanning => right.push("scanning…".into()),
        None => {}
    }
    if app.view == View::Batches && app.sort != crate::app::SortBy::Severity {
        right.push(format!("sort {}", app.sort.word()));
    }
    if !app.filter.is_empty() && !app.editing {
        right.push(format!("filter \"{}\"", fit(&app.filter.text, 20)));
    }
    let (pos, len) = match app.view {
        View::Batches => (app.selected[0], app.rows.len()),
        View::Runs => (app.selected[1], app.runs.len()),
        View::Doctor => (app.selected[2], app.findings.len()),
    };
    right.push(if len == 0 { "0/0".into() } else { format!("{}/{len}", pos + 1) });
    let right = right.join(" · ");
    let room = w.saturating_sub(right.chars().count() + 1);
    let (left, style) = if app.editing {
        (format!("/{}█", app.filter.text), Style::default())
    } else if let Some((level, text, _)) = &app.status.message {
        (text.clone(), p.level(*level))
    } else if let Some(h) = &app.status.hint {
        (h.clone(), p.level(Level::Warn))
    } else if let Some(pr) = &app.status.problems {
        (pr.clone(), p.level(Level::Error))
    } else {
        (String::new(), Style::default())
    };
    let left = fit(&left, room);
    let gap = w.saturating_sub(left.chars().count() + right.chars().count());
    let line = Line::from(vec![
        Span::styled(left, style),
        Span::raw(" ".repeat(gap)),
        Span::styled(right, if app.frozen { p.fg(Color::LightCyan).add_modifier(Modifier::BOLD) } else { p.dim() }),
    ]);
    f.render_widget(Paragraph::new(line), area);
}

fn draw_footer(f: &mut Frame, app: &App, area: Rect, p: Paint) {
    let w = area.width as usize;
    let ctx = app.ctx();
    let keys: Vec<(&str, &str)> = match &app.popup {
        Some(Popup::Refused { .. } | Popup::Done { .. }) if ctx == Ctx::Popup => vec![("Enter/Esc", "close")],
        Some(Popup::Running { .. }) if ctx == Ctx::Popup => vec![],
        _ => keys::footer(ctx),
    };
    // Help and quit always show: the rest as room allows, in table order.
    let always = |k: &(&str, &str)| matches!(k.1, "help" | "quit");
    let width = |k: &(&str, &str)| k.0.chars().count() + k.1.chars().count() + 3;
    let mut room = w.saturating_sub(keys.iter().filter(|k| always(k)).map(width).sum());
    let mut shown = Vec::new();
    for k in &keys {
        if always(k) {
            shown.push(*k);
        } else if width(k) <= room {
            room -= width(k);
            shown.push(*k);
        }
    }
    let mut spans = Vec::new();
    for (label, word) in shown {
        spans.push(Span::styled(label.to_string(), p.bold().add_modifier(Modifier::REVERSED)));
        spans.push(Span::raw(format!(" {word}  ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A box in the middle of `area`.
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width.saturating_sub(2)).max(10.min(area.width));
    let h = height.min(area.height.saturating_sub(2)).max(3.min(area.height));
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

fn draw_popup(f: &mut Frame, app: &App, area: Rect, p: Paint) {
    let Some(popup) = &app.popup else { return };
    let width = area.width.saturating_sub(4).min(100);
    let inner_w = width.saturating_sub(4) as usize;
    let (title, colour, mut body, scroll, buttons): (String, Color, Vec<String>, u16, Option<bool>) = match popup {
        Popup::Confirm { plan, yes, scroll } => {
            let mut body = vec![
                format!("{} {} ({}):", plan.task, &plan.key[..8.min(plan.key.len())], plan.state.word()),
            ];
            body.extend(plan.steps.iter().cloned());
            body.push(String::new());
            body.push(format!(
                "The same as `{} {}`; audited in .ubunye/repairs.jsonl.",
                plan.kind.command(),
                &plan.key[..8.min(plan.key.len())]
            ));
            (crate::popup::title(plan.kind, &plan.task, &plan.key), Color::LightYellow, body, *scroll, Some(*yes))
        }
        Popup::Refused { title, reason, .. } => {
            (title.clone(), Color::LightRed, vec!["Nothing to do here, and nothing was done:".into(), String::new(), reason.clone()], 0, None)
        }
        Popup::Running { title, .. } => (
            title.clone(),
            Color::LightCyan,
            vec!["Repairing through the engine: it holds the batch and waits its settle time (3 s by default) before it takes anything back…".into()],
            0,
            None,
        ),
        Popup::Done { title, ok, text, scroll, .. } => (
            title.clone(),
            if *ok { Color::LightGreen } else { Color::LightRed },
            text.lines().map(str::to_string).collect(),
            *scroll,
            None,
        ),
    };
    body = wrap(&body, inner_w);
    let footer: Line = match (popup, buttons) {
        (_, Some(yes)) => {
            let (no_s, yes_s) = if yes {
                (Style::default(), p.selected().add_modifier(Modifier::BOLD))
            } else {
                (p.selected().add_modifier(Modifier::BOLD), Style::default())
            };
            Line::from(vec![
                Span::styled("Go ahead?  ", p.bold()),
                Span::styled("[ No ]", no_s),
                Span::raw("  "),
                Span::styled("[ Yes ]", yes_s),
                Span::styled("   y yes · n/Esc no · ←/→ Enter", p.dim()),
            ])
        }
        (Popup::Running { .. }, _) => Line::from(Span::styled("please wait", p.dim())),
        _ => Line::from(Span::styled("Esc/Enter close", p.dim())),
    };
    let max_body = area.height.saturating_sub(6) as usize;
    let shown_h = body.len().min(max_body.max(1));
    let scroll = (scroll as usize).min(body.len().saturating_sub(shown_h));
    let rect = centered(area, width, shown_h as u16 + 4);
    let block = Block::bordered().title(Span::styled(format!(" {title} "), p.bold())).border_style(p.fg(colour));
    let inner = block.inner(rect);
    f.render_widget(Clear, rect);
    f.render_widget(block, rect);
    let [text_area, _, foot] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1), Constraint::Length(1)]).areas(inner);
    let lines: Vec<Line> =
        body.iter().skip(scroll).take(text_area.height as usize).map(|l| Line::from(l.clone())).collect();
    let pad = Rect { x: text_area.x + 1, width: text_area.width.saturating_sub(2), ..text_area };
    f.render_widget(Paragraph::new(lines), pad);
    let pad = Rect { x: foot.x + 1, width: foot.width.saturating_sub(2), ..foot };
    f.render_widget(Paragraph::new(footer), pad);
}

fn draw_help(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let mut lines: Vec<Line> = Vec::new();
    for ctx in [Ctx::Main, Ctx::Detail, Ctx::Filter, Ctx::Popup, Ctx::Help] {
        lines.push(Line::from(Span::styled(ctx.title(), p.bold())));
        for b in keys::of(ctx) {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<10}", b.label), p.fg(Color::LightCyan)),
                Span::raw(b.help.to_string()),
            ]));
        }
    }
    let rect = centered(area, 72, lines.len() as u16 + 2);
    let inner_h = rect.height.saturating_sub(2) as usize;
    let max = lines.len().saturating_sub(inner_h);
    app.help_scroll = app.help_scroll.min(max);
    let title = if max > 0 {
        format!(" Keys {}-{}/{} · ↑↓ scroll · Esc closes ", app.help_scroll + 1, app.help_scroll + inner_h, lines.len())
    } else {
        " Keys · Esc closes ".to_string()
    };
    let block = Block::bordered().title(Span::styled(title, p.bold()));
    let inner = block.inner(rect);
    f.render_widget(Clear, rect);
    f.render_widget(block, rect);
    let shown: Vec<Line> = lines.into_iter().skip(app.help_scroll).collect();
    let pad = Rect { x: inner.x + 1, width: inner.width.saturating_sub(1), ..inner };
    f.render_widget(Paragraph::new(shown), pad);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_columns_and_hangs_under_the_value() {
        let lines = vec!["  verdict   dead: its lease has not been written for 20m".to_string()];
        assert_eq!(
            wrap(&lines, 30),
            ["  verdict   dead: its lease", "            has not been", "            written for 20m"]
        );
        let long = vec!["x".repeat(20)];
        assert_eq!(wrap(&long, 8), ["xxxxxxxx", "  xxxxxx", "  xxxxxx"]);
        assert_eq!(hanging("  run       abc"), Some(12));
        assert_eq!(hanging("  rename its lease"), None);
    }

    #[test]
    fn fit_cuts_with_an_ellipsis() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit_left("/a/b/c/d", 5), "…/c/d");
    }
}
