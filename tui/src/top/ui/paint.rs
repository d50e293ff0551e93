//! Colours by meaning, readable on light and dark themes: only the
//! terminal's own red, green, yellow, magenta and cyan (the themes pick them
//! to be read on their background), bold, and its faint attribute (drawn from
//! the theme's own foreground). Never colour 8 ("dark grey": the background
//! itself on some dark themes), the bright colours (bright yellow, green and
//! cyan on a light background), black or white. Under NO_COLOR no colour and
//! no faintness at all: the glyphs and words carry the meaning, as they
//! always do.

use ratatui::style::{Color, Modifier, Style};
use ubunye::state::{State, Tone};

use crate::top::app::Level;

/// Bold in this colour.
const fn strong(c: Color) -> Style {
    Style::new().fg(c).add_modifier(Modifier::BOLD)
}

/// The style of a state, by what it asks of the user (the library's one
/// table, [`State::tone`]). The header's counts, the table's STATE cells and
/// the run records' statuses take their colours from it.
pub const fn state_style(s: State) -> Style {
    tone_style(s.tone())
}

const fn tone_style(t: Tone) -> Style {
    match t {
        Tone::Repair => strong(Color::Red),
        Tone::Look => strong(Color::Yellow),
        Tone::Attend => Style::new().fg(Color::Yellow),
        Tone::Running => Style::new().fg(Color::Green),
        Tone::Redo => Style::new().fg(Color::Cyan),
        Tone::Failed => Style::new().fg(Color::Magenta),
        Tone::Done => Style::new(),
    }
}

/// The style of a run record's status: that of the state it leaves.
pub fn record_style(status: Option<&str>) -> Style {
    tone_style(Tone::of_record(status))
}

/// Styles, with no colour at all under NO_COLOR.
#[derive(Clone, Copy)]
pub struct Paint {
    pub colour: bool,
}

impl Paint {
    pub fn fg(self, c: Color) -> Style {
        if self.colour { Style::default().fg(c) } else { Style::default() }
    }
    pub fn state(self, s: State) -> Style {
        if self.colour { state_style(s) } else { Style::default() }
    }
    pub fn record(self, status: Option<&str>) -> Style {
        if self.colour { record_style(status) } else { Style::default() }
    }
    pub fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }
    /// Less important text: faint, in the theme's own colour.
    pub fn dim(self) -> Style {
        if self.colour { Style::default().add_modifier(Modifier::DIM) } else { Style::default() }
    }
    pub fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    pub fn level(self, l: Level) -> Style {
        match l {
            Level::Info => Style::default(),
            Level::Warn => self.fg(Color::Yellow),
            Level::Error => self.fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_and_failed_differ_in_colour_and_no_state_is_grey_or_bright() {
        assert_ne!(state_style(State::Dead).fg, state_style(State::Failed).fg);
        assert_ne!(state_style(State::Unreadable).fg, state_style(State::Failed).fg);
        let readable =
            [None, Some(Color::Red), Some(Color::Green), Some(Color::Yellow), Some(Color::Magenta), Some(Color::Cyan)];
        for s in State::ALL {
            assert!(readable.contains(&state_style(s).fg), "{s:?}: {:?}", state_style(s).fg);
        }
        assert_eq!(record_style(Some("error")), state_style(State::Failed));
        assert_eq!(record_style(None), state_style(State::Unreadable));
    }
}
