//! The terminal while the dashboard is up: raw mode, the alternate screen and a hidden cursor,
//! all undone when the [`Screen`] is dropped (normal end, error, early exit) and by a panic
//! hook (a panic anywhere in the process), so the user's shell is never left broken.

use crossterm::cursor::{Hide, Show};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::Stderr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// True while the terminal is in the dashboard's state (raw, alternate screen).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The dashboard's terminal, on stderr.
pub(crate) struct Screen {
    pub terminal: Terminal<CrosstermBackend<Stderr>>,
}

impl Screen {
    /// Enters raw mode and the alternate screen; on failure the terminal is left as it was.
    pub(crate) fn enter() -> std::io::Result<Screen> {
        install_panic_hook();
        ACTIVE.store(true, Ordering::SeqCst);
        let entered = enable_raw_mode()
            .and_then(|()| crossterm::execute!(std::io::stderr(), EnterAlternateScreen, Hide))
            .and_then(|()| Terminal::new(CrosstermBackend::new(std::io::stderr())));
        match entered {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Whether the screen is still the dashboard's (false once restored, e.g. by a panic).
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Leaves the alternate screen, shows the cursor and ends raw mode, once.
pub(crate) fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = crossterm::execute!(std::io::stderr(), LeaveAlternateScreen, Show);
        let _ = disable_raw_mode();
    }
}

/// A panic restores the terminal before the panic message is printed.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
