//! Drawing the dashboard over a store: the header (the use case, counts per
//! state, how it is read), the table, the detail pane, the footer of keys
//! (from [`KEYS`]); the takeover popup and the help on top. It writes only
//! how many rows a page holds.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ubunye::documents::short;
use ubunye::state::State;

use super::app::{Ctx, Detail, KEYS, StoreApp, footer};
use crate::top::ui::{Paint, draw_popup, fit, state_style, wrap};

/// Draw the whole screen.
pub fn draw(f: &mut Frame, app: &mut StoreApp, colour: bool) {
    let paint = |s: Style| if colour { s } else { Style::default() };
    let detail_h = if app.detail.is_some() { (f.area().height / 2).max(6) } else { 0 };
    let [head, body, detail, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(detail_h),
        Constraint::Length(1),
    ])
    .areas(f.area());
    // Header: the use case, the counts, how it is read.
    let count = |v: State| app.batches.iter().filter(|b| b.state == v).count();
    let mut spans =
        vec![Span::styled(format!("ubunye top  {}", app.uc), Style::default().add_modifier(Modifier::BOLD))];
    // The states a lease gives are always counted; those a run record
    // gives, when a batch has one.
    let always = [State::Unreadable, State::Dead, State::Live, State::Finished];
    for v in State::ALL.into_iter().filter(|v| always.contains(v) || count(*v) > 0) {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(format!("{} {}", count(v), v.word()), paint(state_style(v))));
    }
    let how = match (&app.error, app.looks) {
        (Some(e), _) => format!("cannot read the store: {e}"),
        (None, 0) => "reading the store…".to_string(),
        (None, _) => format!(
            "poll {}; store clock {}; read {}",
            humantime::format_duration(app.every),
            app.now.map(ubunye::timefmt::rfc3339).unwrap_or_default(),
            app.last_read
        ),
    };
    let shown = app.rows().len();
    let filter = if app.typing || !app.filter.is_empty() { format!("  /{}", app.filter) } else { String::new() };
    let second = format!("{shown} shown{}{filter}  {how}", if app.all { "" } else { " (a: finished too)" });
    f.render_widget(Paragraph::new(vec![Line::from(spans), Line::from(fit(&second, head.width as usize))]), head);
    // The table.
    let rows = app.rows();
    let page = body.height.saturating_sub(3) as usize;
    let lines: Vec<Row> = rows
        .iter()
        .map(|b| {
            let st = b.state;
            Row::new(vec![
                Cell::from(format!("{} {}", st.glyph(), b.state.word())).style(paint(state_style(st))),
                Cell::from(b.task.clone()),
                Cell::from(b.key.clone()),
                Cell::from(b.run_id.as_deref().map(short).unwrap_or_default().to_string()),
                Cell::from(
                    b.age_secs.map(|s| ubunye::timefmt::age(std::time::Duration::from_secs(s))).unwrap_or_default(),
                ),
                Cell::from(claims(b)),
                Cell::from(b.note.clone()),
            ])
        })
        .collect();
    let empty = rows.is_empty();
    let selected = app.selected;
    drop(rows);
    app.page = page.max(1);
    let table = Table::new(
        lines,
        [
            Constraint::Length(13),
            Constraint::Min(14),
            Constraint::Length(16),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(6),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(["STATE", "TASK", "KEY", "RUN", "AGE", "CLAIMS", "NOTE"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(Block::default().borders(Borders::TOP));
    let mut state = TableState::default().with_selected((!empty).then_some(selected));
    f.render_stateful_widget(table, body, &mut state);
    if empty && app.looks > 0 {
        let why = if app.batches.is_empty() {
            "no batch in this use case yet"
        } else {
            "no batch matches (a: finished ones, /: the filter)"
        };
        let area = Rect { y: body.y + 2, height: 1, ..body };
        f.render_widget(Paragraph::new(why), area);
    }
    if let Some(d) = &app.detail {
        let lines = match d {
            Detail::Loading { task, key } => vec![format!("reading {task} {key} from the store…")],
            Detail::Ready { lines, .. } => lines.clone(),
        };
        let text: Vec<Line> =
            wrap(&lines, detail.width.saturating_sub(2) as usize).into_iter().map(Line::from).collect();
        f.render_widget(
            Paragraph::new(text).block(Block::default().borders(Borders::TOP).title(" explain (Enter closes) ")),
            detail,
        );
    }
    let keys = match app.popup.as_ref().and_then(|p| p.notice_footer()) {
        Some(keys) if app.ctx() == Ctx::Popup => keys.to_vec(),
        _ => footer(app.ctx(), app.read_only),
    };
    let keys: Vec<String> = keys.iter().map(|(k, w)| format!("{k} {w}")).collect();
    f.render_widget(Paragraph::new(fit(&keys.join("  "), foot.width as usize)), foot);
    let area = f.area();
    if let Some(p) = &mut app.popup {
        draw_popup(f, area, p, Paint { colour });
    }
    if app.help {
        draw_help(f, app.read_only);
    }
}

/// A lease's claims; none shown for a batch no lease holds or a lease
/// that cannot be read (not zero: unknown).
pub fn claims(b: &ubunye::bucket::StoreBatch) -> String {
    if b.has_lease() && b.state != State::Unreadable { b.claims.to_string() } else { String::new() }
}

fn draw_help(f: &mut Frame, read_only: bool) {
    let mut sections = vec![(Ctx::Main, "Table"), (Ctx::Filter, "Filter (after /)")];
    // Read-only, no takeover is planned: the one popup is a refusal, which
    // says how it closes.
    if !read_only {
        sections.push((Ctx::Popup, "Takeover popup"));
    }
    sections.push((Ctx::Help, "This help"));
    let about = [
        "A store sends no events: the leases are listed every interval, and only",
        "what changed (ETag or time) is read again. Looking changes nothing.",
    ];
    crate::top::shell::draw_help(f, KEYS, &sections, |a| super::app::shown(*a, read_only), &about);
}
