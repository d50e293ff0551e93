//! Plain aligned tables, the one renderer of every table the CLI prints
//! (`leases list`, `runs`), printed as they are laid out: two passes over the
//! rows (widths, then lines), so a listing of 100,000 rows holds no table in
//! memory. Cells are never wrapped or cut but the last, and that one only on
//! a terminal; a line never ends in spaces.

use std::io::Write;

use unicode_width::UnicodeWidthStr;

/// A column's cells for one row, and an optional ANSI colour for one cell.
#[derive(Clone)]
pub struct Line {
    pub cells: Vec<String>,
    /// Which cell, and its SGR code (`31` red, `32` green, ...).
    pub colour: Option<(usize, &'static str)>,
}

/// Print `header` and the lines `rows` gives (called twice: it must give the
/// same lines each time). Columns are separated by two spaces; the last column
/// is not padded, and is cut to the terminal's width when `width` is given.
pub fn print<F>(
    out: &mut impl Write,
    header: &[&str],
    rows: usize,
    line: F,
    width: Option<usize>,
) -> std::io::Result<()>
where
    F: Fn(usize) -> Line,
{
    // A cell is one line: a newline or a tab in it (an error message) would
    // break the table.
    let line = |i: usize| {
        let mut l = line(i);
        for c in l.cells.iter_mut().filter(|c| c.contains(char::is_control)) {
            *c = c.chars().map(|ch| if ch.is_control() { ' ' } else { ch }).collect();
        }
        l
    };
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for i in 0..rows {
        for (w, c) in widths.iter_mut().zip(&line(i).cells) {
            *w = (*w).max(c.width());
        }
    }
    let write_line = |out: &mut dyn Write, cells: &[&str], colour: Option<(usize, &str)>| -> std::io::Result<()> {
        let mut text = String::from(" ");
        let mut used = 1;
        for (n, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let last = n + 1 == cells.len();
            let shown: String = match (last, width) {
                (true, Some(max)) if used + c.width() > max => cut(c, max.saturating_sub(used)),
                _ => c.to_string(),
            };
            match colour {
                Some((at, code)) if at == n => text.push_str(&format!("\x1b[{code}m{shown}\x1b[0m")),
                _ => text.push_str(&shown),
            }
            if !last {
                let pad = w - c.width() + 2;
                text.extend(std::iter::repeat_n(' ', pad));
                used += w + 2;
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    write_line(out, header, None)?;
    for i in 0..rows {
        let l = line(i);
        let cells: Vec<&str> = l.cells.iter().map(String::as_str).collect();
        write_line(out, &cells, l.colour)?;
    }
    Ok(())
}

/// The text cut to `max` columns, ending in `…` when it was cut.
fn cut(text: &str, max: usize) -> String {
    if text.width() <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push('…');
    out
}

/// The terminal's width when stdout is one.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    rustix::termios::tcgetwinsize(std::io::stdout()).ok().map(|w| w.ws_col as usize).filter(|w| *w > 20)
}

/// The glyph and colour (an SGR code) of a state.
pub fn glyph_colour(s: ubunye::state::State) -> (&'static str, Option<&'static str>) {
    (s.glyph(), sgr(s.tone()))
}

/// The SGR code of a tone: the terminal's named colours only (never faint
/// text or colour 8, unreadable on many dark themes), as the dashboard;
/// None for the terminal's own colour.
pub fn sgr(t: ubunye::state::Tone) -> Option<&'static str> {
    use ubunye::state::Tone;
    Some(match t {
        Tone::Repair => "1;31",
        Tone::Look => "1;33",
        Tone::Attend => "33",
        Tone::Running => "32",
        Tone::Redo => "36",
        Tone::Failed => "35",
        Tone::Done => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(rows: &[[&str; 3]], width: Option<usize>) -> String {
        let mut out = Vec::new();
        let line = |i: usize| Line { cells: rows[i].iter().map(|s| s.to_string()).collect(), colour: None };
        print(&mut out, &["A", "BB", "NOTE"], rows.len(), line, width).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn columns_align_by_display_width_and_the_last_is_cut_only_on_a_terminal() {
        let rows = [["✖ dead", "x", "a long note"], ["● live", "日本", "n"]];
        assert_eq!(render(&rows, None), " A       BB    NOTE\n ✖ dead  x     a long note\n ● live  日本  n\n");
        assert_eq!(render(&rows, Some(20)), " A       BB    NOTE\n ✖ dead  x     a lo…\n ● live  日本  n\n");
    }

    #[test]
    fn one_cell_is_coloured_and_an_empty_last_cell_leaves_no_spaces() {
        let mut out = Vec::new();
        let line = |_: usize| Line { cells: vec!["a".into(), "ok".into(), String::new()], colour: Some((1, "32")) };
        print(&mut out, &["A", "STATUS", "E"], 1, line, None).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), " A  STATUS  E\n a  \x1b[32mok\x1b[0m\n");
    }

    /// Readable on light and dark themes, as the dashboard: the terminal's
    /// named colours only, never faint text (`2`), colour 8 or the bright
    /// colours; dead and failed told apart.
    #[test]
    fn state_colours_are_named_colours_only() {
        for s in ubunye::state::State::ALL {
            if let (_, Some(code)) = glyph_colour(s) {
                for part in code.split(';') {
                    assert!(matches!(part, "1" | "31" | "32" | "33" | "35" | "36"), "{s:?}: {code}");
                }
            }
        }
        assert_ne!(glyph_colour(ubunye::state::State::Dead).1, glyph_colour(ubunye::state::State::Failed).1);
        assert_eq!(glyph_colour(ubunye::state::State::Finished).1, None);
    }
}
