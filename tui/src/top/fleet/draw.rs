//! Drawing the fleet view: the header (every use case added up, how they
//! are read), one row per use case, the selected one's tasks below, the
//! footer of keys (from [`KEYS`]) and the `?` help on top. It writes nothing.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ubunye::census::Census;
use ubunye::state::State;
use ubunye::timefmt::age;

use super::app::{Ctx, FleetApp, KEYS, Totals, footer};
use crate::top::ui::{fit, state_style};

/// The states the table gives a column: the ones an on-call engineer acts
/// on. The detail pane below names every state.
const SHOWN: [State; 4] = [State::Live, State::Dead, State::Kept, State::Unreadable];

/// Draw the whole screen.
pub fn draw(f: &mut Frame, app: &FleetApp, colour: bool) {
    let paint = |s: Style| if colour { s } else { Style::default() };
    let [head, body, detail, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length((f.area().height / 3).max(5)),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let t = app.totals();
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let unread = app.members.iter().filter(|m| m.census.as_ref().is_some_and(|c| c.error.is_some())).count();
    let unread = if unread > 0 { format!(" ({unread} cannot be read)") } else { String::new() };
    let mut spans = vec![Span::styled(
        format!("ubunye top  {} use cases{unread}  {} batches", app.members.len(), t.batches()),
        bold,
    )];
    // Only the counts that are not zero: the line fits 80 columns, and what
    // is there is what needs looking at.
    for s in [State::Dead, State::Kept, State::Unreadable, State::Live].into_iter().filter(|s| t.count(*s) > 0) {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(format!("{} {}", t.count(s), s.word()), paint(state_style(s))));
    }
    if t.stalled > 0 {
        spans.push(Span::raw(format!("  {} stalled", t.stalled)));
    }
    let read = match app.rounds {
        0 => "reading every use case…".to_string(),
        _ => format!(
            "looked at every {} (the last look: {:.1} s, {} s ago); read whole every {} min",
            humantime::format_duration(app.every),
            app.took.as_secs_f64(),
            app.since,
            super::FULL_EVERY.as_secs() / 60
        ),
    };
    let filter = if app.typing || !app.filter.is_empty() { format!("/{}  ", app.filter) } else { String::new() };
    let second = match &app.message {
        Some(m) => format!("{filter}{m}"),
        None => format!("{filter}{read}"),
    };
    f.render_widget(Paragraph::new(vec![Line::from(spans), Line::from(fit(&second, head.width as usize))]), head);

    let rows = app.rows();
    let lines: Vec<Row> =
        rows.iter().map(|&i| row(&app.members[i].name, app.members[i].census.as_ref(), &paint)).collect();
    let mut header = vec!["USE CASE", "BATCHES", "OPEN"];
    header.extend(SHOWN.iter().map(|s| s.word()));
    header.extend(["stalled", "OLDEST", "DOCTOR"]);
    let header: Vec<String> = header.iter().map(|h| h.to_uppercase()).collect();
    let mut widths = vec![Constraint::Min(16), Constraint::Length(8), Constraint::Length(7)];
    widths.extend(SHOWN.iter().map(|s| Constraint::Length(s.word().len().max(5) as u16)));
    widths.extend([Constraint::Length(7), Constraint::Length(7), Constraint::Length(6)]);
    let table = Table::new(lines, widths)
        .header(Row::new(header).style(bold))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .block(Block::default().borders(Borders::TOP));
    let mut state = TableState::default().with_selected((!rows.is_empty()).then_some(app.selected));
    f.render_stateful_widget(table, body, &mut state);
    if rows.is_empty() {
        let area = Rect { y: body.y + 2, height: 1, ..body };
        f.render_widget(Paragraph::new("no use case matches the filter (Esc clears it)"), area);
    }

    let lines = match app.chosen() {
        Some(i) => details(app.members[i].census.as_ref(), detail.width as usize),
        None => Vec::new(),
    };
    let title = app.chosen().map(|i| format!(" {} ", app.members[i].name)).unwrap_or_default();
    f.render_widget(
        Paragraph::new(lines.into_iter().map(Line::from).collect::<Vec<_>>())
            .block(Block::default().borders(Borders::TOP).title(title)),
        detail,
    );
    let keys: Vec<String> = footer(app.ctx()).iter().map(|(k, w)| format!("{k} {w}")).collect();
    f.render_widget(Paragraph::new(fit(&keys.join("  "), foot.width as usize)), foot);
    if app.help {
        draw_help(f);
    }
}

/// One use case's row: its figures, or why it cannot be read.
fn row<'a>(name: &str, c: Option<&Census>, paint: &dyn Fn(Style) -> Style) -> Row<'a> {
    let mut cells = vec![Cell::from(name.to_string())];
    match c {
        None => cells.push(Cell::from("reading…")),
        // Its figures are not known: none is shown, and below it says why.
        Some(c) if c.error.is_some() => {
            let st = paint(state_style(State::Unreadable));
            cells[0] = Cell::from(format!("{} {name}: cannot be read", State::Unreadable.glyph())).style(st);
            cells.extend((0..SHOWN.len() + 5).map(|_| Cell::from("-")));
        }
        Some(c) => {
            let t = Totals::of(c);
            cells.push(Cell::from(t.batches().to_string()));
            cells.push(Cell::from(t.open().to_string()));
            for s in SHOWN {
                let n = t.count(s);
                let cell = Cell::from(n.to_string());
                cells.push(if n > 0 { cell.style(paint(state_style(s))) } else { cell });
            }
            cells.push(Cell::from(t.stalled.to_string()));
            cells.push(Cell::from(t.oldest.map(age).unwrap_or_default()));
            cells.push(Cell::from(t.findings.to_string()));
        }
    }
    Row::new(cells)
}

/// The selected use case: its error, or each task's batches by state, the
/// oldest lease of each waiting state and doctor's findings.
fn details(c: Option<&Census>, w: usize) -> Vec<String> {
    let Some(c) = c else { return vec!["reading…".into()] };
    if let Some(e) = &c.error {
        return vec![fit(&format!("cannot be read: {e}"), w)];
    }
    let mut out = Vec::new();
    let waiting: Vec<String> = c.oldest.iter().map(|(s, d)| format!("{} {}", s.word(), age(*d))).collect();
    let findings: Vec<String> = c.findings.iter().map(|(k, n)| format!("{n} {k}")).collect();
    out.push(fit(
        &format!(
            "{}  oldest waiting: {}  doctor: {}  read in {:.2} s",
            c.use_case,
            if waiting.is_empty() { "none".into() } else { waiting.join(", ") },
            if findings.is_empty() { "nothing found".into() } else { findings.join(", ") },
            c.duration.as_secs_f64()
        ),
        w,
    ));
    if c.tasks.is_empty() {
        out.push("no batch yet".into());
    }
    for (task, t) in &c.tasks {
        let counts: Vec<String> = State::ALL
            .iter()
            .filter(|s| t.states[s.rank()] > 0)
            .map(|s| format!("{} {}", t.states[s.rank()], s.word()))
            .collect();
        out.push(fit(&format!("{task}  {}", counts.join(", ")), w));
    }
    out
}

fn draw_help(f: &mut Frame) {
    let sections: Vec<(Ctx, &str)> = Ctx::ALL.iter().map(|c| (*c, c.title())).collect();
    let about = [
        "Each use case is counted as `ubunye metrics` counts it, then kept up to date:",
        "a task whose folder changed is read again, held leases judged again.",
        "DOCTOR is as of the last whole read (every 10 minutes, or r).",
        "Enter opens one's dashboard, as `ubunye top -d` opens it. Looking changes",
        "nothing.",
    ];
    crate::top::shell::draw_help(f, KEYS, &sections, |_| true, &about);
}
