//! The detail pane (the explain report) and the runs and doctor views.

use super::*;

pub(super) fn draw_detail(f: &mut Frame, app: &mut App, area: Rect, p: Paint, full: bool) {
    let what = if app.detail.log { "log" } else { "explain" };
    let title = match &app.detail.id {
        Some((task, key)) => format!(" {task} {} · {what} ", &key[..key.len().min(8)]),
        None => format!(" {what} "),
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
    app.detail_rows = lines.len();
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

fn record_time(s: Option<&str>) -> String {
    s.map(|t| t.get(..19).unwrap_or(t).replace('T', " ")).unwrap_or_default()
}

pub(super) fn draw_runs(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let height = (area.height as usize).saturating_sub(1);
    app.page = height.max(1);
    let range = window(app.selected[1], &mut app.offset[1], height, app.runs.len());
    let w = area.width as usize;
    // Narrow screens: a shorter start time and no duration.
    let wide = w >= 100;
    let started_w = if wide { 19 } else { 14 };
    let secs_w = if wide { 6 } else { 0 };
    let header = Row::new(["STARTED", "STATUS", "TASK", "RUN", "VARIABLES", if wide { "SECS" } else { "" }, "ERROR"])
        .style(p.bold());
    let shown = &app.runs[range.clone()];
    let model = &app.model;
    // A record's own variables, else (a scan keeps them with the batch) its batch's.
    let vars = |b: BatchRef, ri: usize| -> String {
        match b.record(ri).and_then(|r| r.variables()) {
            Some(v) => ubunye::state::variables_text(v),
            None => b.vars().unwrap_or_default().to_string(),
        }
    };
    let longest = |f: &dyn Fn(BatchRef, usize) -> usize| {
        shown.iter().filter_map(|&(bi, ri)| model.row(bi).map(|b| f(b, ri))).max().unwrap_or(4)
    };
    let fixed = started_w + 11 + 8 + secs_w + 7;
    let flexible = w.saturating_sub(fixed + 10);
    let task_w = longest(&|b, _| b.task().chars().count()).clamp(4, 24).min(flexible / 2);
    let vars_w = longest(&|b, ri| vars(b, ri).chars().count()).clamp(9, 30).min(flexible.saturating_sub(task_w));
    let err_w = w.saturating_sub(fixed + task_w + vars_w).max(4);
    let mut rows = Vec::new();
    for (n, &(bi, ri)) in app.runs[range.clone()].iter().enumerate() {
        let Some(b) = model.row(bi) else { continue };
        let Some(r) = b.record(ri) else { continue };
        let status = r.status().map_or_else(|| "(none)".to_string(), |s| s.into_owned());
        let style = p.record(r.status().as_deref());
        let secs = match (
            r.started_at().as_deref().and_then(timefmt::parse),
            r.ended_at().as_deref().and_then(timefmt::parse),
        ) {
            (Some(s), Some(e)) => e.duration_since(s).map(|d| format!("{:.1}", d.as_secs_f64())).unwrap_or_default(),
            _ => String::new(),
        };
        let vars = vars(b, ri);
        let started = record_time(r.started_at().as_deref());
        let started = if wide { started } else { started.get(5..).unwrap_or(&started).to_string() };
        let mut row = Row::new(vec![
            Cell::from(started),
            Cell::from(Span::styled(fit(&status, 11), style)),
            Cell::from(fit(b.task(), task_w)),
            Cell::from(ubunye::documents::short(&r.run_id())),
            Cell::from(fit(&vars, vars_w)),
            Cell::from(secs),
            Cell::from(fit(r.error().as_deref().unwrap_or(""), err_w)),
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
        f.render_widget(Paragraph::new("No run records."), r);
    }
}

pub(super) fn draw_doctor(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let w = area.width as usize;
    let root = app.model.scan.root.clone();
    if app.findings.is_empty() && app.examining {
        f.render_widget(Paragraph::new(Span::styled("Looking at the use case…", p.dim())), area);
        return;
    }
    if app.findings.is_empty() {
        let text = format!("Clean: nothing to look at ({} batch(es) looked at).", app.looked_at);
        f.render_widget(Paragraph::new(text), area);
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
        let style = if sel { p.selected() } else { p.fg(Color::Yellow) };
        lines.push(Line::from(Span::styled(first, style)));
        lines.push(Line::from(fit(&format!("{:<18} {}", "", fnd.detail), w)));
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// One task's batches by date: a line a day, the days with no batch as
/// gaps, each batch's state in its colour.
pub(super) fn draw_history(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let height = (area.height as usize).saturating_sub(2);
    app.page = height.max(1);
    let task = app.history_task.clone().unwrap_or_default();
    let gaps = app.history.iter().filter(|d| d.batch.is_none()).count();
    let head = format!("{task} by date: {} batch(es), {gaps} day(s) with none", app.history.len() - gaps);
    f.render_widget(Paragraph::new(Span::styled(fit(&head, area.width as usize), p.bold())), area);
    let area = Rect { y: area.y + 1, height: area.height.saturating_sub(1), ..area };
    if app.history.is_empty() {
        let why = "No batch of this task has a dt variable: nothing to order by date.";
        f.render_widget(Paragraph::new(why), area);
        return;
    }
    let range = window(app.selected[3], &mut app.offset[3], height, app.history.len());
    let w = area.width as usize;
    let dt_w = app.history.iter().map(|d| d.dt.chars().count()).max().unwrap_or(10).min(20);
    let state_w = 14;
    let others_w = app
        .history
        .iter()
        .filter_map(|d| d.batch.as_ref())
        .map(|b| b.others.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    // At least as wide as its header: `mode=DEV` alone must not cut it.
    let others_w = if others_w > 0 { others_w.max("VARIABLES".len()) } else { 0 };
    let fixed = dt_w + 1 + state_w + 1 + 8 + 1;
    let others_w = if w >= fixed + others_w + 20 { others_w } else { 0 };
    let note_w = w.saturating_sub(fixed + others_w + usize::from(others_w > 0)).max(4);
    let header = Row::new(["DT", "STATE", "KEY", if others_w > 0 { "VARIABLES" } else { "" }, "NOTE"]).style(p.bold());
    let mut rows = Vec::new();
    for (n, d) in app.history[range.clone()].iter().enumerate() {
        let mut row = match &d.batch {
            Some(b) => Row::new(vec![
                Cell::from(fit(&d.dt, dt_w)),
                Cell::from(Span::styled(
                    fit(&format!("{} {}", b.state.glyph(), b.state.word()), state_w),
                    p.state(b.state),
                )),
                Cell::from(b.key.get(..8).unwrap_or(&b.key).to_string()),
                Cell::from(fit(&b.others, others_w)),
                Cell::from(fit(&b.note, note_w)),
            ]),
            None => Row::new(vec![
                Cell::from(fit(&d.dt, dt_w)),
                Cell::from(Span::styled("· no batch", p.dim())),
                Cell::from(""),
                Cell::from(""),
                Cell::from(""),
            ]),
        };
        if range.start + n == app.selected[3] {
            row = row.style(p.selected());
        }
        rows.push(row);
    }
    let widths = [
        Constraint::Length(dt_w as u16),
        Constraint::Length(state_w as u16),
        Constraint::Length(8),
        Constraint::Length(others_w as u16),
        Constraint::Length(note_w as u16),
    ];
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), area);
}
