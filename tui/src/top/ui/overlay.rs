//! What is drawn over the screen: the repair popup and the `?` help.

use super::*;

/// A box in the middle of `area`.
pub(super) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width.saturating_sub(2)).max(10.min(area.width));
    let h = height.min(area.height.saturating_sub(2)).max(3.min(area.height));
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// The repair popup: its text scrolls (a counter says which lines show)
/// between the title and the question, which stays in view.
pub(super) fn draw_popup(f: &mut Frame, app: &mut App, area: Rect, p: Paint) {
    if app.popup.is_none() {
        return;
    }
    let width = area.width.saturating_sub(4).min(100);
    let inner_w = width.saturating_sub(4) as usize;
    let root = app.model.scan.root.clone();
    let Some(popup) = &mut app.popup else { return };
    let (title, colour, body, buttons) = match &*popup {
        Popup::Confirm { plan, yes, more, skipped, .. } => {
            let mut body = Vec::new();
            for p in std::iter::once(&**plan).chain(more) {
                body.push(format!("{} {} ({}):", p.task, &p.key[..8.min(p.key.len())], p.state.word()));
                body.extend(p.steps.iter().cloned());
                body.push(String::new());
            }
            for s in skipped {
                body.push(format!("skip: {s}"));
            }
            if !skipped.is_empty() {
                body.push(String::new());
            }
            let title = if more.is_empty() {
                body.push(format!("The same as `{} {}`.", plan.kind.command(), ubunye::suggest::batch(&root, &plan.key)));
                body.push("It is audited in .ubunye/repairs.jsonl.".into());
                crate::top::popup::title(plan.kind, &plan.task, &plan.key)
            } else {
                body.push(format!(
                    "{} batches, each read again and re-checked by the engine as its turn comes, each audited in .ubunye/repairs.jsonl.",
                    more.len() + 1
                ));
                let verb = if plan.kind == ubunye::repair::Kind::Takeover { "Take over" } else { "Finish" };
                format!("{verb} {} tagged batches", more.len() + 1)
            };
            (title, Color::Yellow, body, Some(*yes))
        }
        Popup::Refused { title, reason, .. } => (
            title.clone(),
            Color::Red,
            vec!["Nothing to do here, and nothing was done:".into(), String::new(), reason.clone()],
            None,
        ),
        Popup::Running { title, .. } => (
            title.clone(),
            Color::Cyan,
            vec!["Repairing through the engine: it holds the batch and waits its settle time (3 s by default) before it takes anything back…".into()],
            None,
        ),
        Popup::Done { title, ok, text, .. } => (
            title.clone(),
            if *ok { Color::Green } else { Color::Red },
            text.lines().map(str::to_string).collect(),
            None,
        ),
    };
    let body = wrap(&body, inner_w);
    let footer: Line = match (&*popup, buttons) {
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
    let rect = centered(area, width, shown_h as u16 + 4);
    let mut block = Block::bordered().title(Span::styled(format!(" {title} "), p.bold())).border_style(p.fg(colour));
    let [text_area, _, foot] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1), Constraint::Length(1)]).areas(block.inner(rect));
    // The lines in view, and where the text is scrolled to (the state keeps
    // it, the drawing knows how much fits).
    let mut top = 0;
    if let Popup::Confirm { scroll, .. } | Popup::Done { scroll, .. } = popup {
        scroll.fit(text_area.height as usize, body.len());
        top = scroll.top;
        if scroll.more() {
            block = block
                .title_top(Line::from(Span::styled(format!(" {} ", scroll.counter()), p.bold())).right_aligned())
                .title_bottom(Line::from(Span::styled(" ↑↓ PgUp PgDn: more ", p.dim())).right_aligned());
        }
    }
    f.render_widget(Clear, rect);
    f.render_widget(block, rect);
    let lines: Vec<Line> =
        body.iter().skip(top).take(text_area.height as usize).map(|l| Line::from(l.clone())).collect();
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
