//! The batch table: its columns, fitted to the width, and the rows in view.

use super::*;

/// One column of the batch table.
struct Col {
    title: &'static str,
    width: usize,
    /// The batch's text in this column.
    cell: fn(BatchRef) -> String,
}

fn holder(b: BatchRef) -> String {
    b.lease()
        .map(|l| {
            let host = l.holder.host.as_deref().map(|h| h.split('|').next().unwrap_or(h)).unwrap_or("?");
            format!("{}@{host}", l.holder.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()))
        })
        .unwrap_or_default()
}

fn age(b: BatchRef) -> String {
    let a = b
        .lease()
        .and_then(|l| l.holder.judgement.as_ref())
        .and_then(|j| j.age)
        .map(|a| timefmt::age(a.age))
        .unwrap_or_default();
    if b.flags().contains(&Flag::Stalled) { format!("{a} stalled") } else { a }
}

fn claims(b: BatchRef) -> String {
    if b.lease().is_some() || !b.orphans().is_empty() { b.claim_count().to_string() } else { String::new() }
}

/// The columns that fit in `w`, as `leases list` fits its table: who holds
/// the batch, its run and claims go first (the detail pane has them), then
/// the age; the task narrows, then goes; the variables narrow last. The one
/// sorted by is never dropped. No column is wider than its share, so nothing
/// is cut but with `…` (a variable cut silently reads as another batch).
fn columns(app: &App, visible: &[usize], w: usize) -> Vec<Col> {
    let model = &app.model;
    let shown = || visible.iter().filter_map(|&i| model.row(i));
    let longest = |f: fn(BatchRef) -> String, cap: usize, min: usize| {
        shown().map(|b| f(b).chars().count()).max().unwrap_or(0).clamp(min, cap)
    };
    let vars = |b: BatchRef| b.vars().unwrap_or_default().to_string();
    let key = |b: BatchRef| b.key().get(..8).unwrap_or(b.key()).to_string();
    let run = |b: BatchRef| b.run_id().as_deref().map(ubunye::documents::short).unwrap_or_default();
    let task = |b: BatchRef| b.task().to_string();
    let state_w =
        2 + shown().map(|b| b.state().word().len()).max().unwrap_or(5).max(5) + usize::from(!app.tagged.is_empty());
    let mut cols = vec![
        Col { title: "STATE", width: state_w, cell: |b| format!("{} {}", b.state().glyph(), b.state().word()) },
        Col { title: "KEY", width: 8, cell: key },
        Col { title: "TASK", width: longest(task, 28, 4), cell: task },
        Col { title: "VARIABLES", width: longest(vars, 30, 9), cell: vars },
        Col { title: "RUN", width: 8, cell: run },
        Col { title: "PID@HOST", width: longest(holder, 18, 8), cell: holder },
        Col { title: "AGE", width: longest(age, 14, 3), cell: age },
        Col { title: "CLAIMS", width: 6, cell: claims },
        Col { title: "NOTE", width: 0, cell: |b| b.note().into_owned() },
    ];
    let sorted = app.sort.column();
    if let Some(c) = cols.iter_mut().find(|c| c.title == sorted) {
        c.width = c.width.max(c.title.chars().count() + 2);
    }
    // The note says why the batch is in its state: it keeps 24 columns while
    // the holder's columns can give way, fewer as the task and variables do.
    let need = |cols: &[Col], note: usize| {
        cols.iter().filter(|c| c.title != "NOTE").map(|c| c.width + 1).sum::<usize>() + note
    };
    let narrow = |cols: &mut Vec<Col>, title: &str, min: usize| {
        if let Some(c) = cols.iter_mut().find(|c| c.title == title) {
            c.width = c.width.min(min.max(c.title.chars().count()));
        }
    };
    let steps = [
        ("RUN", 24),
        ("CLAIMS", 24),
        ("PID@HOST", 24),
        ("AGE", 20),
        ("task<14", 16),
        ("TASK", 16),
        ("vars<14", 12),
        ("KEY", 12),
    ];
    for (step, note) in steps {
        if need(&cols, note) <= w {
            continue;
        }
        match step {
            "task<14" => narrow(&mut cols, "TASK", 14),
            "vars<14" => narrow(&mut cols, "VARIABLES", 14),
            drop if drop != sorted => cols.retain(|c| c.title != drop),
            _ => {}
        }
    }
    let used: usize = cols.iter().filter(|c| c.title != "NOTE").map(|c| c.width + 1).sum();
    if used + 1 > w {
        // Narrower than every column's least: the state and what room is
        // left, each cut with `…`.
        cols.retain(|c| c.title == "STATE" || c.title == "VARIABLES");
        let state = cols[0].width.min(w);
        if let Some(v) = cols.get_mut(1) {
            v.width = w.saturating_sub(state + 1);
        }
        cols[0].width = state;
        return cols;
    }
    if let Some(note) = cols.iter_mut().find(|c| c.title == "NOTE") {
        note.width = w.saturating_sub(used);
    }
    cols.retain(|c| c.width > 0);
    cols
}

pub(super) fn draw_batches(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
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
pub(super) fn window(selected: usize, offset: &mut usize, height: usize, len: usize) -> std::ops::Range<usize> {
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
    let sorted = app.sort.column();
    let header = Row::new(cols.iter().map(|c| {
        if c.title == sorted { Cell::from(format!("{} {}", c.title, app.sort_arrow())) } else { Cell::from(c.title) }
    }))
    .style(p.bold());
    let mut rows = Vec::with_capacity(visible.len());
    for (n, &i) in visible.iter().enumerate() {
        let Some(b) = app.model.row(i) else { continue };
        let cells: Vec<Cell> = cols
            .iter()
            .map(|c| {
                let cell = (c.cell)(b);
                // A tagged batch is marked where the eye starts: `+` before its state.
                let cell = if c.title == "STATE" && app.tagged.contains(&b.id()) { format!("+{cell}") } else { cell };
                let text = fit(&cell, c.width);
                if c.title == "STATE" { Cell::from(Span::styled(text, p.state(b.state()))) } else { Cell::from(text) }
            })
            .collect();
        let mut row = Row::new(cells);
        if app.tagged.contains(&b.id()) {
            row = row.style(p.bold().add_modifier(Modifier::UNDERLINED));
        }
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
            f.render_widget(Paragraph::new(why), r);
        }
        return;
    }
    f.render_widget(table, area);
}
