//! `ubunye top`'s colours stay readable on light and dark themes: every
//! screen's text is in the terminal's own colour or one of its red, green,
//! yellow, magenta and cyan (never colour 8, DarkGray, which is the
//! background itself on some dark themes, nor a bright colour, white or
//! black); dead and failed are told apart by colour; and without colour the
//! same words and glyphs say it all.

use crate::common;
use common::dash::*;

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ubunye::state::State;
use ubunye_tui::top::app::App;

const READABLE: [Color; 6] = [Color::Reset, Color::Red, Color::Green, Color::Yellow, Color::Magenta, Color::Cyan];

/// Every cell with text on it is in a readable colour, on the theme's own
/// background.
fn all_readable(name: &str, buf: &Buffer) {
    let w = buf.area.width as usize;
    for (i, c) in buf.content.iter().enumerate() {
        if c.symbol().trim().is_empty() {
            continue;
        }
        let (x, y) = (i % w, i / w);
        assert!(READABLE.contains(&c.fg), "{name}: {:?} at {x},{y} is in {:?}\n{}", c.symbol(), c.fg, text(buf));
        assert_eq!(c.bg, Color::Reset, "{name}: {:?} at {x},{y}", c.symbol());
    }
}

/// A colour's hue: the bright and the plain red are one red.
fn hue(c: Color) -> Color {
    match c {
        Color::LightRed => Color::Red,
        Color::LightGreen => Color::Green,
        Color::LightYellow => Color::Yellow,
        Color::LightBlue => Color::Blue,
        Color::LightMagenta => Color::Magenta,
        Color::LightCyan => Color::Cyan,
        Color::Indexed(n @ 9..=14) => Color::Indexed(n - 8),
        other => other,
    }
}

/// The batch table's STATE cell of the first row whose glyph is `glyph`.
fn state_cell(buf: &Buffer, glyph: &str) -> (Color, Modifier) {
    let w = buf.area.width as usize;
    let header = (0..buf.area.height as usize)
        .find(|&y| buf.content[y * w..(y + 1) * w].iter().map(|c| c.symbol()).collect::<String>().starts_with("STATE"))
        .expect("the batch table");
    let c = buf.content[(header + 1) * w..].iter().find(|c| c.symbol() == glyph).expect("the glyph in the table");
    (c.fg, c.modifier)
}

/// The screens worth looking at, drawn in colour, by name.
fn screens(name: &str, a: &mut App) -> Vec<(String, Buffer)> {
    a.colour = true;
    let mut out = vec![(name.to_string(), draw(a, 80, 24)), (format!("{name} 100x30"), draw(a, 100, 30))];
    for (keys, what) in [("Enter", "detail"), ("Esc t", "popup"), ("Esc 2", "runs"), ("?", "help")] {
        press(a, keys);
        out.push((format!("{name} {what}"), draw(a, 80, 24)));
    }
    press(a, "Esc 1 F / type:x");
    out.push((format!("{name} frozen, filtering"), draw(a, 80, 24)));
    out
}

#[test]
fn every_screen_is_in_readable_colours() {
    let cases: &[(&str, Duration)] = &[
        ("dead-killed", LATER),
        ("orphan", LATER),
        ("rerun-pending", LATER),
        ("takeover-refused-in-use", LATER),
        ("kept", LATER),
        ("live", Duration::from_secs(5)),
        ("finished", LATER),
    ];
    for (fx, after) in cases {
        let (_d, _uc, mut a) = open(fx, *after);
        for (name, buf) in screens(fx, &mut a) {
            all_readable(&name, &buf);
        }
    }
    let (_d, mut a) = failed_run();
    for (name, buf) in screens("failed", &mut a) {
        all_readable(&name, &buf);
    }
    // An unreadable lease, and the doctor view that names it.
    let (_d, mut a) = unreadable_lease();
    assert_eq!(selected_state(&a), Some(State::Unreadable));
    for (name, buf) in screens("unreadable", &mut a) {
        all_readable(&name, &buf);
    }
    press(&mut a, "Esc Esc F 3");
    let examined = ubunye_tui::top::workers::examine(&a.model.src);
    a.handle(examined);
    all_readable("doctor", &draw(&mut a, 80, 24));
}

#[test]
fn dead_and_failed_are_told_apart_by_colour() {
    let (_d, _uc, mut dead) = open("dead-killed", LATER);
    dead.colour = true;
    let (dead_fg, dead_mod) = state_cell(&draw(&mut dead, 80, 24), "✖");
    let (_d, mut failed) = failed_run();
    failed.colour = true;
    let (failed_fg, _) = state_cell(&draw(&mut failed, 80, 24), "✗");
    assert_ne!(hue(dead_fg), hue(failed_fg), "dead and failed in one colour: {dead_fg:?}, {failed_fg:?}");
    assert!(dead_mod.contains(Modifier::BOLD), "dead is the one to act on: bold");
    // Finished, the most common row, is in the theme's own colour.
    let (fin_fg, _) = state_cell(&draw(&mut dead, 80, 24), "✓");
    assert_eq!(fin_fg, Color::Reset);
}

#[test]
fn without_colour_the_words_and_glyphs_are_the_same() {
    for (fx, want) in [("dead-killed", State::Dead), ("kept", State::Kept), ("finished", State::Finished)] {
        let (_d, _uc, mut a) = open(fx, LATER);
        let plain = draw(&mut a, 80, 24);
        assert!(plain.content.iter().all(|c| c.fg == Color::Reset && c.bg == Color::Reset), "{fx}");
        assert!(plain.content.iter().all(|c| !c.modifier.contains(Modifier::DIM)), "{fx}: faint without colour");
        let s = text(&plain);
        assert!(s.contains(&format!("{} {}", want.glyph(), want.word())), "{fx}:\n{s}");
        a.colour = true;
        assert_eq!(text(&draw(&mut a, 80, 24)), s, "{fx}: colour changes no word");
    }
}
