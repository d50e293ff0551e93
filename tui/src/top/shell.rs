//! What the screens with a key table of their own (the dashboard over a
//! store, the fleet view) share: the turn loop, moving through rows, and
//! the `?` help drawn from the key table, so that each screen keeps only
//! its state, its keys and its drawing.

use std::sync::mpsc::Receiver;

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::{Frame, Terminal, backend::Backend};

use super::event::Event;
use super::keytable::{Binding, Move};

/// A screen the shell runs: it draws itself, and takes a turn's events in,
/// saying when it is done and with what.
pub trait Screen {
    /// What the screen ends with.
    type Out;
    /// Most events taken in one turn; the rest wait for the next.
    const DRAIN: usize = 1000;
    fn draw(&mut self, f: &mut Frame) -> std::io::Result<()>;
    /// One turn's events in; Some when the screen is done.
    fn turn(&mut self, events: Vec<Event>) -> std::io::Result<Option<Self::Out>>;
    /// What it ends with when every sender of events is gone.
    fn closed(&mut self) -> Self::Out;
    /// Called after each frame is drawn.
    fn drawn(&mut self) {}
}

/// Draw, then take events a turn at a time, drawing after each, until the
/// screen is done.
pub fn run<B: Backend, S: Screen>(
    term: &mut Terminal<B>,
    rx: &Receiver<Event>,
    screen: &mut S,
) -> std::io::Result<S::Out> {
    let frame = |term: &mut Terminal<B>, screen: &mut S| -> std::io::Result<()> {
        let mut drew = Ok(());
        term.draw(|f| drew = screen.draw(f)).map_err(|e| std::io::Error::other(e.to_string()))?;
        drew?;
        screen.drawn();
        Ok(())
    };
    frame(term, screen)?;
    loop {
        let Some(events) = drain(rx, S::DRAIN) else { return Ok(screen.closed()) };
        if let Some(out) = screen.turn(events)? {
            return Ok(out);
        }
        frame(term, screen)?;
    }
}

/// Wait for an event, then take what else is there, up to `most`: one
/// turn's events. None when every sender is gone.
pub fn drain(rx: &Receiver<Event>, most: usize) -> Option<Vec<Event>> {
    let mut events = vec![rx.recv().ok()?];
    while events.len() < most {
        match rx.try_recv() {
            Ok(e) => events.push(e),
            Err(_) => break,
        }
    }
    Some(events)
}

/// The row selected after `m` from `selected`, among `len` rows of which a
/// page shows `page`.
pub fn moved(selected: usize, m: Move, len: usize, page: usize) -> usize {
    let last = len.saturating_sub(1);
    match m {
        Move::Up => selected.saturating_sub(1),
        Move::Down => (selected + 1).min(last),
        Move::First => 0,
        Move::Last => last,
        Move::PageUp => selected.saturating_sub(page.max(1)),
        Move::PageDown => (selected + page.max(1)).min(last),
    }
}

/// A box `w` by `h` in the middle of `area` (cut to fit it).
pub fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// The `?` help: for each section (a context and its heading), the keys of
/// `table` bound there that `shown` keeps; then `about`, a line each.
pub fn draw_help<C: PartialEq + Copy, A>(
    f: &mut Frame,
    table: &[Binding<C, A>],
    sections: &[(C, &str)],
    shown: impl Fn(&A) -> bool,
    about: &[&str],
) {
    let mut lines = Vec::new();
    for (ctx, name) in sections {
        lines.push(Line::from(Span::styled(name.to_string(), Style::default().add_modifier(Modifier::BOLD))));
        for b in table.iter().filter(|b| b.ctx == *ctx && shown(&b.act)) {
            lines.push(Line::from(format!("  {:<8} {}", b.shown, b.what)));
        }
    }
    lines.push(Line::from(""));
    lines.extend(about.iter().map(|l| Line::from(l.to_string())));
    let h = (lines.len() as u16 + 2).min(f.area().height);
    let area = centred(f.area(), 76, h);
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" keys ")), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_stay_within_the_rows() {
        assert_eq!(moved(0, Move::Up, 5, 2), 0);
        assert_eq!(moved(4, Move::Down, 5, 2), 4);
        assert_eq!(moved(1, Move::PageDown, 5, 2), 3);
        assert_eq!(moved(3, Move::PageDown, 5, 2), 4);
        assert_eq!(moved(3, Move::PageUp, 5, 10), 0);
        assert_eq!(moved(2, Move::Last, 0, 2), 0);
        assert_eq!(moved(2, Move::First, 5, 2), 0);
    }
}
