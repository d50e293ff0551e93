//! What is drawn over the screen: the popup (every dashboard's) and the
//! use case dashboard's `?` help.

use super::*;
use crate::top::popup::{Phase, Popup};
use crate::top::shell::centred;

/// The popup of any dashboard: its lines scroll (a counter says which show)
/// between the title and the question, which stays in view.
pub fn draw_popup<T>(f: &mut Frame, area: Rect, popup: &mut Popup<T>, p: Paint) {
    let width = area.width.saturating_sub(4).min(100);
    let body = wrap(&popup.lines, width.saturating_sub(4) as usize);
    let close = || Line::from(Span::styled("Esc/Enter close", p.dim()));
    let (colour, footer) = match popup.phase {
        Phase::Asking { yes, .. } => {
            let (no_s, yes_s) = if yes {
                (Style::default(), p.selected().add_modifier(Modifier::BOLD))
            } else {
                (p.selected().add_modifier(Modifier::BOLD), Style::default())
            };
            let question = Line::from(vec![
                Span::styled("Go ahead?  ", p.bold()),
                Span::styled("[ No ]", no_s),
                Span::raw("  "),
                Span::styled("[ Yes ]", yes_s),
                Span::styled("   y yes · n/Esc no · ←/→ Enter", p.dim()),
            ]);
            (Color::Yellow, question)
        }
        Phase::Planning => (Color::Cyan, close()),
        Phase::Running => (Color::Cyan, Line::from(Span::styled("please wait", p.dim()))),
        Phase::Refused => (Color::Red, close()),
        Phase::Done { ok } => (if ok { Color::Green } else { Color::Red }, close()),
    };
    let max_body = area.height.saturating_sub(6) as usize;
    let shown_h = body.len().min(max_body.max(1));
    let rect = centred(area, width, shown_h as u16 + 4);
    let title = Span::styled(format!(" {} ", popup.title), p.bold());
    let mut block = Block::bordered().title(title).border_style(p.fg(colour));
    let [text_area, _, foot] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1), Constraint::Length(1)]).areas(block.inner(rect));
    // The lines in view, and where the text is scrolled to (the state keeps
    // it, the drawing knows how much fits).
    let scroll = &mut popup.scroll;
    scroll.fit(text_area.height as usize, body.len());
    if scroll.more() {
        block = block
            .title_top(Line::from(Span::styled(format!(" {} ", scroll.counter()), p.bold())).right_aligned())
            .title_bottom(Line::from(Span::styled(" ↑↓ PgUp PgDn: more ", p.dim())).right_aligned());
    }
    f.render_widget(Clear, rect);
    f.render_widget(block, rect);
    let lines: Vec<Line> = body.into_iter().skip(scroll.top).take(text_area.height as usize).map(Line::from).collect();
    let pad = Rect { x: text_area.x + 1, width: text_area.width.saturating_sub(2), ..text_area };
    f.render_widget(Paragraph::new(lines), pad);
    let pad = Rect { x: foot.x + 1, width: foot.width.saturating_sub(2), ..foot };
    f.render_widget(Paragraph::new(footer), pad);
}

pub(super) fn draw_help(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    let mut lines: Vec<Line> = Vec::new();
    for ctx in Ctx::ALL {
        for (heading, bindings) in keys::help(ctx, app.read_only) {
            lines.push(Line::from(Span::styled(heading, p.bold())));
            for b in bindings {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {:<10}", b.label), p.fg(Color::Cyan)),
                    Span::raw(b.help.to_string()),
                ]));
            }
        }
    }
    let rect = centred(area, 72, (lines.len() as u16 + 2).min(area.height.saturating_sub(2)));
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
