//! The terminal dashboard of `loadbench run` (on by default when stderr is a terminal; off
//! with `--no-live` or `--quiet`, and whenever stderr is not a terminal, where the plain
//! progress line stays). It runs on its own thread, reads the engine's per-worker pulses
//! ([`Live::pulse`]) four times a second and never touches the hot path. Keys: `q` or Ctrl-C
//! stops the run and keeps every result (as Ctrl-C does without the dashboard); Ctrl-C once
//! stopping exits at once. The summary prints after the dashboard has closed.

mod draw;
mod term;
mod view;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use loadbench_plan::Plan;
use loadbench_runner::Live;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use view::View;

/// How often the dashboard redraws.
const REFRESH: Duration = Duration::from_millis(250);
/// How long it waits for a key at a time, so it notices the end of the run quickly.
const KEY_WAIT: Duration = Duration::from_millis(50);
/// The exit code of a run ended by a second Ctrl-C (as the signal handler's).
const EXIT_AT_ONCE: i32 = 130;

/// A running dashboard; [`Dashboard::finish`] closes it.
pub(crate) struct Dashboard {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Opens the dashboard for the load `live` counts.
    pub(crate) fn start(live: Arc<Live>, plan: &Plan) -> Dashboard {
        let done = Arc::new(AtomicBool::new(false));
        let view = View::new(plan);
        let handle = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                if let Ok(screen) = term::Screen::enter() {
                    watch(screen, &live, view, &done);
                }
            })
        };
        Dashboard {
            done,
            handle: Some(handle),
        }
    }

    /// Closes the dashboard and restores the terminal.
    pub(crate) fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Draws at [`REFRESH`] and handles keys until `done`.
fn watch(mut screen: term::Screen, live: &Live, mut view: View, done: &AtomicBool) {
    let start = Instant::now();
    while term::active() {
        view.update(live.pulse(view.series.len()), start.elapsed());
        if screen.terminal.draw(|f| draw::frame(f, &view)).is_err() {
            return;
        }
        let next = Instant::now() + REFRESH;
        while Instant::now() < next {
            if done.load(Ordering::Relaxed) {
                return;
            }
            keys(live, &mut view);
        }
    }
}

/// Waits up to [`KEY_WAIT`] for keys and acts on them.
fn keys(live: &Live, view: &mut View) {
    while event::poll(KEY_WAIT).unwrap_or(false) {
        let Ok(Event::Key(key)) = event::read() else {
            continue;
        };
        match action(key, view.stopping) {
            Action::Stop => {
                live.stop();
                view.stopping = true;
            }
            Action::Exit => {
                term::restore();
                std::process::exit(EXIT_AT_ONCE);
            }
            Action::None => {}
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Action {
    None,
    Stop,
    Exit,
}

/// `q` or Ctrl-C stops; Ctrl-C while stopping exits.
fn action(key: KeyEvent, stopping: bool) -> Action {
    if key.kind != KeyEventKind::Press {
        return Action::None;
    }
    let ctrl_c = key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
    match (key.code, ctrl_c) {
        (_, true) if stopping => Action::Exit,
        (_, true) | (KeyCode::Char('q'), _) => Action::Stop,
        _ => Action::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_and_ctrl_c_stop_and_a_second_ctrl_c_exits() {
        let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        let c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::NONE);
        assert_eq!(action(q, false), Action::Stop);
        assert_eq!(action(ctrl_c, false), Action::Stop);
        assert_eq!(action(ctrl_c, true), Action::Exit);
        assert_eq!(action(q, true), Action::Stop, "q again only stops");
        assert_eq!(action(c, false), Action::None);
    }
}
