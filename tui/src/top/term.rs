//! The terminal: entered once, and restored on every way out (a guard's Drop,
//! a panic hook, SIGTERM/SIGHUP/SIGINT); the threads that turn keys, resizes,
//! the clock and signals into [`Event`]s; the clipboard (OSC 52) and NO_COLOR.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use crossterm::event::{self as ct, DisableMouseCapture};
use ratatui::DefaultTerminal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::top::event::Event;

/// Whether colours are wanted on this terminal with no `--color` given: the
/// CLI's one rule (`crate::console::colour`); `ubunye top` gets the decision
/// from `--color` in its `TopArgs`.
pub fn colour() -> bool {
    crate::console::colour::decide(crate::console::colour::ColorChoice::Auto, true)
}

/// Put the terminal back as it was: no raw mode, the main screen, the cursor
/// shown, no mouse capture. Safe to call more than once.
pub fn restore() {
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(out, DisableMouseCapture, crossterm::cursor::Show);
    let _ = ratatui::try_restore();
    let _ = out.flush();
}

/// Restores the terminal when dropped, however the dashboard ends.
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// The threads [`feed`] started; dropping it stops them. The key reader is
/// waited for, so that no key meant for what comes next is taken, but only
/// a moment: on a terminal that went away (its window closed) crossterm's
/// read never returns, and waiting for it would keep the process alive, a
/// core busy, for ever. The terminal stays as it is: the fleet view hands it
/// to a use case's dashboard and back.
pub struct Feed {
    stop: Arc<AtomicBool>,
    signals: Option<signal_hook::iterator::Handle>,
    input_done: Option<std::sync::mpsc::Receiver<()>>,
}

/// Sends once, when dropped.
struct Done(std::sync::mpsc::Sender<()>);

impl Drop for Done {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// How long a dropped [`Feed`] waits for its key reader: more than one of
/// its polls.
const INPUT_STOPS: Duration = Duration::from_millis(500);

impl Drop for Feed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.signals.take() {
            h.close();
        }
        if let Some(done) = self.input_done.take() {
            let _ = done.recv_timeout(INPUT_STOPS);
        }
    }
}

/// Enter the dashboard's terminal: alternate screen, raw mode, panic hook;
/// or, the terminal put back, the line that says why not.
pub fn enter() -> Result<(DefaultTerminal, Guard), String> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    let term = ratatui::try_init().map_err(|e| {
        restore();
        format!("cannot use the terminal: {e}")
    })?;
    let guard = Guard;
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    Ok((term, guard))
}

/// Start the threads that feed the loop: keys and resizes, the 1 s tick, and
/// signals. They end when the [`Feed`] is dropped or the loop's channel
/// closes.
pub fn feed(tx: &Sender<Event>) -> std::io::Result<Feed> {
    let (done_tx, done) = std::sync::mpsc::channel();
    let mut feed = Feed { stop: Arc::new(AtomicBool::new(false)), signals: None, input_done: Some(done) };
    let (keys_tx, stop) = (tx.clone(), feed.stop.clone());
    std::thread::Builder::new().name("top-input".into()).spawn(move || {
        // Told when this thread ends, however it ends.
        let _done = Done(done_tx);
        while !stop.load(Ordering::Relaxed) {
            match ct::poll(Duration::from_millis(250)) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(_) => break,
            }
            let ev = match ct::read() {
                Ok(ct::Event::Key(k)) => Event::Key(k),
                Ok(ct::Event::Resize(w, h)) => Event::Resize(w, h),
                Ok(_) => continue,
                Err(_) => break,
            };
            if keys_tx.send(ev).is_err() {
                break;
            }
        }
    })?;
    let (tick_tx, stop) = (tx.clone(), feed.stop.clone());
    std::thread::Builder::new().name("top-tick".into()).spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(1));
            if tick_tx.send(Event::Tick).is_err() {
                break;
            }
        }
    })?;
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT])?;
    feed.signals = Some(signals.handle());
    let (sig_tx, stop) = (tx.clone(), feed.stop.clone());
    std::thread::Builder::new().name("top-signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let _ = sig_tx.send(Event::Signal(sig));
            // The loop quits at once unless it is stuck: then restore and go.
            for _ in 0..30 {
                std::thread::sleep(Duration::from_millis(100));
                if stop.load(Ordering::Relaxed) {
                    return;
                }
            }
            restore();
            std::process::exit(128 + sig);
        }
    })?;
    Ok(feed)
}

/// The OSC 52 sequence that puts `text` on the terminal's clipboard.
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc() {
        for (plain, coded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
        assert_eq!(osc52("7d106ca76674f2a1"), "\x1b]52;c;N2QxMDZjYTc2Njc0ZjJhMQ==\x07");
    }
}
