//! Bounded tables, laid out by comfy-table: `runs`, explain's history and
//! doctor's use cases. Which columns a narrow terminal leaves out, shrinks or
//! abbreviates is the table's own [`Fit`] (the same steps as the streaming
//! [`table`](super::table) renderer `leases list` keeps for a million rows);
//! comfy-table then lays the rest out to the width: every column but the last
//! at its width, the last one cut with `…` ([`Last::Cut`]) or wrapped inside
//! its cell ([`Last::Wrap`], for an error that must be read whole). Piped (no
//! width), nothing is cut or wrapped. The look is the streaming renderer's:
//! no borders, one space before the first column, two between columns, no
//! spaces at the end of a line.

use comfy_table::{Attribute, Cell, CellAlignment, Color, ColumnConstraint, ContentArrangement, Row, Table, Width};
use unicode_width::UnicodeWidthStr;

use super::table::{Fit, Line, abbreviate, layout, one_line};

/// What the last column does with text wider than the room left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Last {
    /// Cut to one line, ending in `…`.
    Cut,
    /// Wrapped onto more lines inside its column.
    Wrap,
}

/// The table as text, a `\n` after each line. `width` is the terminal's
/// (None: piped, nothing cut); `indent` spaces go before each line (the
/// first column's own space included).
pub fn render(header: &[&str], rows: &[Line], width: Option<usize>, fit: &Fit, last: Last, indent: usize) -> String {
    // A cell is one line: a newline or a tab in it (an error message) would
    // break the table.
    let rows: Vec<Line> = rows
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l.cells.iter_mut().for_each(one_line);
            l
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for l in &rows {
        for (w, c) in widths.iter_mut().zip(&l.cells) {
            *w = (*w).max(c.width());
        }
    }
    let room = width.map(|w| w.saturating_sub(indent.saturating_sub(1)));
    let (mut shown, abbrev) = match room {
        Some(w) => layout(header, &mut widths, w, fit, &|i: usize| rows[i].clone(), rows.len()),
        None => (vec![true; header.len()], vec![false; header.len()]),
    };
    // No room left for the last column: it is left out, not shown as a lone
    // `…` past the edge.
    let kept: Vec<usize> = (0..header.len()).filter(|i| shown[*i]).collect();
    if let (Some(w), Some((&last_col, before))) = (room, kept.split_last()) {
        let used = 1 + before.iter().map(|i| widths[*i] + 2).sum::<usize>();
        if used + 1 >= w {
            shown[last_col] = false;
        }
    }
    let columns: Vec<usize> = (0..header.len()).filter(|i| shown[*i]).collect();
    let cell = |n: usize, text: &str| -> String { if abbrev[n] { abbreviate(text) } else { text.to_string() } };

    let mut t = Table::new();
    t.load_style(comfy_table::presets::NOTHING).force_no_tty().set_truncation_indicator("…");
    // A header is one line whatever the last column does (comfy-table
    // wraps a header as it wraps a cell).
    let mut head = Row::from(columns.iter().map(|n| Cell::new(header[*n])));
    head.max_height(1);
    t.set_header(head);
    let colour = rows.iter().any(|l| l.colour.is_some());
    if colour {
        t.enforce_styling();
    }
    for l in &rows {
        let mut row = Row::from(columns.iter().map(|n| {
            let text = cell(*n, l.cells.get(*n).map(String::as_str).unwrap_or(""));
            match l.colour {
                Some((at, code)) if at == *n => styled(Cell::new(text), code),
                _ => Cell::new(text),
            }
        }));
        if last == Last::Cut {
            row.max_height(1);
        }
        t.add_row(row);
    }
    for c in t.column_iter_mut() {
        c.set_padding((1, 1));
        c.set_cell_alignment(CellAlignment::Left);
    }
    match room {
        Some(w) => {
            t.set_content_arrangement(ContentArrangement::Dynamic).set_width(w.min(u16::MAX as usize) as u16);
            // Every column but the last at the width its steps left it: an id
            // or a time is never broken; the last takes what is left.
            for (i, n) in columns.iter().enumerate().take(columns.len().saturating_sub(1)) {
                if let Some(c) = t.column_mut(i) {
                    c.set_constraint(ColumnConstraint::Absolute(Width::Fixed((widths[*n] + 2) as u16)));
                }
            }
        }
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    let pad = " ".repeat(indent.saturating_sub(1));
    let mut out = String::new();
    if columns.is_empty() {
        return out;
    }
    for line in t.lines() {
        out.push_str(&pad);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A cell in one of the tones' SGR codes (`1;31`, `33`, ...; see
/// [`super::table::sgr`]).
fn styled(mut c: Cell, code: &str) -> Cell {
    for part in code.split(';') {
        c = match part {
            "1" => c.add_attribute(Attribute::Bold),
            "31" => c.fg(Color::DarkRed),
            "32" => c.fg(Color::DarkGreen),
            "33" => c.fg(Color::DarkYellow),
            "35" => c.fg(Color::DarkMagenta),
            "36" => c.fg(Color::DarkCyan),
            _ => c,
        };
    }
    c
}

#[cfg(test)]
mod tests {
    use super::super::table::Step;
    use super::*;

    fn lines(rows: &[[&str; 3]]) -> Vec<Line> {
        rows.iter().map(|r| Line { cells: r.iter().map(|s| s.to_string()).collect(), colour: None }).collect()
    }

    #[test]
    fn piped_a_table_is_aligned_and_nothing_is_cut() {
        let rows = lines(&[["✖ dead", "x", "a long note"], ["● live", "日本", "n"]]);
        assert_eq!(
            render(&["A", "BB", "NOTE"], &rows, None, &Fit::NONE, Last::Cut, 1),
            " A       BB    NOTE\n ✖ dead  x     a long note\n ● live  日本  n\n"
        );
    }

    #[test]
    fn the_last_column_is_cut_or_wrapped_and_no_line_is_wider_than_the_terminal() {
        let rows = lines(&[["✖ dead", "def33561", "the process 7868 is gone from this host"]]);
        let cut = render(&["STATE", "RUN", "NOTE"], &rows, Some(30), &Fit::NONE, Last::Cut, 1);
        assert_eq!(cut.lines().count(), 2, "{cut}");
        assert!(cut.lines().nth(1).unwrap().ends_with('…'), "{cut}");
        assert!(cut.contains(" def33561 "), "an id is never cut: {cut}");
        let wrapped = render(&["STATE", "RUN", "NOTE"], &rows, Some(30), &Fit::NONE, Last::Wrap, 3);
        assert!(wrapped.lines().count() > 2, "{wrapped}");
        assert!(!wrapped.contains('…'), "{wrapped}");
        for w in [cut, wrapped] {
            assert!(w.lines().all(|l| l.width() <= 30 && !l.ends_with(' ')), "{w}");
        }
        // The wrapped lines stay in the last column.
        let w = render(&["STATE", "RUN", "NOTE"], &rows, Some(30), &Fit::NONE, Last::Wrap, 3);
        let at = w.lines().next().unwrap().find("NOTE").unwrap();
        assert!(w.lines().skip(2).all(|l| l[..at].trim().is_empty()), "{w}");
    }

    #[test]
    fn a_header_is_one_line_when_its_column_is_narrower() {
        let rows = lines(&[["/a/long/use/case/path", "4", "x"]]);
        let t = render(&["USE CASE", "FINDINGS", "E"], &rows[..], Some(28), &Fit::NONE, Last::Cut, 1);
        // The last column's header cut, not wrapped onto a second line.
        assert_eq!(t.lines().count(), 2, "{t}");
        let one = vec![Line { cells: vec!["/a/long/use/case/path".into(), "4".into()], colour: None }];
        let t = render(&["USE CASE", "FINDINGS"], &one, Some(28), &Fit::NONE, Last::Wrap, 1);
        assert_eq!(t.lines().count(), 2, "{t}");
    }

    #[test]
    fn the_steps_leave_columns_out_in_their_order() {
        const FIT: Fit = Fit { steps: &[Step::Drop("RUN"), Step::Abbrev("TASK")], last_min: 10 };
        let rows = lines(&[["demo/sales/ingest", "def33561", "process 7868 gone"]]);
        let head = ["TASK", "RUN", "NOTE"];
        assert_eq!(
            render(&head, &rows, Some(80), &FIT, Last::Cut, 1),
            " TASK               RUN       NOTE\n demo/sales/ingest  def33561  process 7868 gone\n"
        );
        // RUN goes first; still too narrow, TASK is abbreviated.
        assert_eq!(
            render(&head, &rows, Some(30), &FIT, Last::Cut, 1),
            " TASK               NOTE\n demo/sales/ingest  process…\n"
        );
        assert_eq!(
            render(&head, &rows, Some(29), &FIT, Last::Cut, 1),
            " TASK        NOTE\n d/s/ingest  process 786…\n"
        );
    }

    #[test]
    fn a_coloured_cell_carries_its_code_and_its_width_is_the_texts() {
        let rows = vec![Line { cells: vec!["a".into(), "ok".into(), "x".into()], colour: Some((1, "1;31")) }];
        let t = render(&["A", "STATUS", "E"], &rows, None, &Fit::NONE, Last::Cut, 1);
        assert!(t.contains("\x1b[") && t.contains("ok"), "{t:?}");
        let plain: String = t
            .split('\x1b')
            .enumerate()
            .map(|(i, p)| if i == 0 { p } else { p.split_once('m').map_or("", |x| x.1) })
            .collect();
        assert_eq!(plain, " A  STATUS  E\n a  ok      x\n");
    }
}
