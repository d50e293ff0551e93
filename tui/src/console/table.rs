//! Plain aligned tables, the one renderer of every table the CLI prints
//! (`leases list`, `runs`), printed as they are laid out: two passes over the
//! rows (widths, then lines), so a listing of 100,000 rows holds no table in
//! memory. A line never ends in spaces.
//!
//! On a terminal (or with `COLUMNS` set) a table fits its width: each table
//! says, in order, which columns go first and which shrink, and to what
//! ([`Fit`]), so that what matters most at 60 or 80 columns (the state, the
//! id to paste, the variables, the note) stays readable; the last column
//! takes what is left. A cut cell ends in `…`. Piped, nothing is cut.

use std::io::Write;

use unicode_width::UnicodeWidthStr;

/// A column's cells for one row, and an optional ANSI colour for one cell.
#[derive(Clone)]
pub struct Line {
    pub cells: Vec<String>,
    /// Which cell, and its SGR code (`31` red, `32` green, ...).
    pub colour: Option<(usize, &'static str)>,
}

/// One step a table takes, in order, until it fits the width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Leave the column (by its header) out.
    Drop(&'static str),
    /// Cut the column's cells to at most this many columns.
    Shrink(&'static str, usize),
    /// Write a path's folders by their first letter (`demo/sales/ingest`
    /// as `d/s/ingest`): the name that tells tasks apart stays whole.
    Abbrev(&'static str),
}

/// How a table fits a width: the steps, and the least the last column needs
/// before the next step is taken.
#[derive(Clone, Copy, Debug)]
pub struct Fit {
    pub steps: &'static [Step],
    pub last_min: usize,
}

impl Fit {
    /// Nothing dropped or shrunk: only the last column is cut.
    pub const NONE: Fit = Fit { steps: &[], last_min: 0 };
}

/// Print `header` and the lines `rows` gives (called twice: it must give the
/// same lines each time). Columns are separated by two spaces; the last column
/// is not padded. With `width`, the table is fitted to it as `fit` says.
pub fn print<F>(
    out: &mut impl Write,
    header: &[&str],
    rows: usize,
    line: F,
    width: Option<usize>,
    fit: &Fit,
) -> std::io::Result<()>
where
    F: Fn(usize) -> Line,
{
    // A cell is one line: a newline or a tab in it (an error message) would
    // break the table.
    let line = |i: usize| {
        let mut l = line(i);
        for c in l.cells.iter_mut() {
            one_line(c);
        }
        l
    };
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for i in 0..rows {
        for (w, c) in widths.iter_mut().zip(&line(i).cells) {
            *w = (*w).max(c.width());
        }
    }
    let (shown, abbrev) = match width {
        Some(w) => layout(header, &mut widths, w, fit, &line, rows),
        None => (vec![true; header.len()], vec![false; header.len()]),
    };
    let write_line = |out: &mut dyn Write, cells: &[&str], colour: Option<(usize, &str)>| -> std::io::Result<()> {
        let mut text = String::from(" ");
        let mut used = 1;
        let last_shown = shown.iter().rposition(|s| *s).unwrap_or(0);
        for (n, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if !shown.get(n).copied().unwrap_or(true) {
                continue;
            }
            let last = n == last_shown;
            // No room left for the last column: it is left out, not
            // shown as a lone `…` past the edge.
            if last && width.is_some_and(|max| used + 1 >= max) {
                break;
            }
            let abbreviated;
            let c = match abbrev.get(n) {
                Some(true) => {
                    abbreviated = abbreviate(c);
                    abbreviated.as_str()
                }
                _ => *c,
            };
            let cell: String = match (last, width) {
                (true, Some(max)) => cut(c, max.saturating_sub(used)),
                (true, None) => c.to_string(),
                (false, _) => cut(c, *w),
            };
            match colour {
                Some((at, code)) if at == n => text.push_str(&format!("\x1b[{code}m{cell}\x1b[0m")),
                _ => text.push_str(&cell),
            }
            if last {
                break;
            }
            let pad = w.saturating_sub(cell.width()) + 2;
            text.extend(std::iter::repeat_n(' ', pad));
            used += w + 2;
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

/// Take `fit`'s steps until the columns but the last, and the last's
/// least, fit in `width`: which columns are shown and which abbreviated
/// (`widths` shrunk in place).
pub(crate) fn layout<F>(
    header: &[&str],
    widths: &mut [usize],
    width: usize,
    fit: &Fit,
    line: &F,
    rows: usize,
) -> (Vec<bool>, Vec<bool>)
where
    F: Fn(usize) -> Line,
{
    let mut shown = vec![true; header.len()];
    let mut abbrev = vec![false; header.len()];
    let need = |shown: &[bool], widths: &[usize]| -> usize {
        let cols: Vec<usize> = widths.iter().zip(shown).filter(|(_, s)| **s).map(|(w, _)| *w).collect();
        let (_, before) = cols.split_last().unwrap_or((&0, &[]));
        1 + before.iter().map(|w| w + 2).sum::<usize>() + fit.last_min
    };
    let at = |name: &str| header.iter().position(|h| *h == name);
    for step in fit.steps {
        if need(&shown, widths) <= width {
            break;
        }
        match *step {
            Step::Drop(name) => at(name).into_iter().for_each(|i| shown[i] = false),
            Step::Shrink(name, to) => {
                if let Some(i) = at(name) {
                    widths[i] = widths[i].min(to.max(header[i].width()));
                }
            }
            Step::Abbrev(name) => {
                if let Some(i) = at(name) {
                    abbrev[i] = true;
                    let cells = (0..rows).filter_map(|r| line(r).cells.get(i).map(|c| abbreviate(c).width()));
                    widths[i] = cells.fold(header[i].width(), usize::max).min(widths[i]);
                }
            }
        }
    }
    (shown, abbrev)
}

/// A character that moves the cursor, retitles the window, clears the
/// screen or reorders a line (a control character, C0 or C1, the 8-bit CSI
/// among them, and the bidirectional overrides): never printed as read.
pub(crate) fn drives_terminal(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A cell as one line: a newline or a tab in it (an error message) would
/// break the table, and an escape or a bidirectional override would drive
/// the terminal.
pub(crate) fn one_line(cell: &mut String) {
    let odd = |c: char| c.is_control() || drives_terminal(c);
    if cell.contains(odd) {
        *cell = cell.chars().map(|ch| if odd(ch) { ' ' } else { ch }).collect();
    }
}

/// `demo/sales/ingest` -> `d/s/ingest`: each folder by its first letter.
pub(crate) fn abbreviate(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((folders, name)) => {
            let mut out: String = folders.split('/').filter_map(|f| f.chars().next()).flat_map(|c| [c, '/']).collect();
            out.push_str(name);
            out
        }
        None => path.to_string(),
    }
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

/// The width a table is fitted to: `COLUMNS` when it is set (as `ls` reads
/// it; a shell sets it without exporting it, so a pipe is not cut), else the
/// terminal's when stdout is one; None (nothing cut) otherwise.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if let Some(w) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()) {
        return Some(w.max(20));
    }
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
        print(&mut out, &["A", "BB", "NOTE"], rows.len(), line, width, &Fit::NONE).unwrap();
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
        print(&mut out, &["A", "STATUS", "E"], 1, line, None, &Fit::NONE).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), " A  STATUS  E\n a  \x1b[32mok\x1b[0m\n");
    }

    #[test]
    fn a_table_drops_and_shrinks_columns_in_its_order_until_it_fits() {
        const FIT: Fit = Fit { steps: &[Step::Drop("RUN"), Step::Shrink("TASK", 6)], last_min: 6 };
        let head = ["STATE", "TASK", "RUN", "NOTE"];
        let rows = [["✖ dead", "demo/sales/ingest", "def33561", "process 7868 gone"]];
        let render = |width| {
            let mut out = Vec::new();
            let line = |i: usize| Line { cells: rows[i].iter().map(|s| s.to_string()).collect(), colour: None };
            print(&mut out, &head, 1, line, Some(width), &FIT).unwrap();
            String::from_utf8(out).unwrap()
        };
        // Wide enough: nothing taken.
        assert_eq!(
            render(80),
            " STATE   TASK               RUN       NOTE\n ✖ dead  demo/sales/ingest  def33561  process 7868 gone\n"
        );
        // RUN goes first, then TASK shrinks; the note takes what is left.
        assert_eq!(render(40), " STATE   TASK               NOTE\n ✖ dead  demo/sales/ingest  process 786…\n");
        assert_eq!(render(26), " STATE   TASK    NOTE\n ✖ dead  demo/…  process …\n");
        for w in [20, 26, 40, 80] {
            assert!(render(w).lines().all(|l| l.width() <= w), "{w}: {}", render(w));
        }
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
