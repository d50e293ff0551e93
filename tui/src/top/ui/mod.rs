//! Drawing: the header (use case, counts per state, watch mode, last change),
//! the body (batch table and explain pane, run records, or doctor findings),
//! the status bar and the footer of keys; the repair popup and the help
//! overlay on top. Reads the [`App`]; the only state it writes is where the
//! lists and the popup are scrolled to and how much room they had.

mod overlay;
mod paint;
mod table;
mod views;

pub use paint::{Paint, record_style, state_style};

use overlay::draw_help;
pub use overlay::draw_popup;
use table::{draw_batches, window};
use views::{draw_detail, draw_doctor, draw_runs};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table};
use ubunye::state::{Flag, State};
use ubunye::timefmt;

use crate::top::app::{App, Level, View};
use crate::top::keys::{self, Ctx};
use crate::top::model::BatchRef;

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
        View::History => views::draw_history(f, app, body, p),
    }
    draw_status(f, app, status, p);
    draw_footer(f, app, footer, p);
    if let Some(popup) = &mut app.popup {
        draw_popup(f, area, popup, p);
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
        let g = s.glyph();
        let text = if words { format!("{g} {n} {}  ", s.word()) } else { format!("{g}{n} ") };
        spans.push(Span::styled(text, p.state(*s)));
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
    if app.view == View::Batches && (app.sort != crate::top::app::SortBy::Severity || app.reversed) {
        right.push(format!("sort {} {}", app.sort.word(), app.sort_arrow()));
    }
    if !app.filter.is_empty() && !app.editing && app.view != View::Doctor {
        right.push(format!("filter \"{}\"", fit(&app.filter.text, 20)));
    }
    let (pos, len) = match app.view {
        View::Batches => (app.selected[0], app.rows.len()),
        View::Runs => (app.selected[1], app.runs.len()),
        View::Doctor => (app.selected[2], app.findings.len()),
        View::History => (app.selected[3], app.history.len()),
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
        Span::styled(right, if app.frozen { p.fg(Color::Cyan).add_modifier(Modifier::BOLD) } else { p.dim() }),
    ]);
    f.render_widget(Paragraph::new(line), area);
}

fn draw_footer(f: &mut Frame, app: &App, area: Rect, p: Paint) {
    let w = area.width as usize;
    let ctx = app.ctx();
    let keys: Vec<(String, &str)> = match app.popup.as_ref().and_then(|p| p.notice_footer()) {
        Some(keys) if ctx == Ctx::Popup => keys.iter().map(|(k, w)| (k.to_string(), *w)).collect(),
        _ => keys::footer(ctx, app.view, app.read_only),
    };
    // Help and quit always show: the rest as room allows, in table order.
    let always = |k: &(String, &str)| matches!(k.1, "help" | "quit");
    let width = |k: &(String, &str)| k.0.chars().count() + k.1.chars().count() + 3;
    let mut room = w.saturating_sub(keys.iter().filter(|k| always(k)).map(width).sum());
    let mut shown = Vec::new();
    for k in &keys {
        if always(k) {
            shown.push(k);
        } else if width(k) <= room {
            room -= width(k);
            shown.push(k);
        }
    }
    let mut spans = Vec::new();
    for (label, word) in shown {
        spans.push(Span::styled(label.clone(), p.bold().add_modifier(Modifier::REVERSED)));
        spans.push(Span::raw(format!(" {word}  ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
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
