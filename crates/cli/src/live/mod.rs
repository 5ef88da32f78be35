//! The terminal dashboard of `loadbench run` and `loadbench find-max` (on by default when
//! stderr is a terminal; off with `--no-live` or `--quiet`, and whenever stderr is not a
//! terminal, where the plain progress line stays). It runs on its own thread, reads the
//! engine's per-worker pulses ([`Live::pulse`]) four times a second and never touches the hot
//! path. It stays open across the loads of a find-max search, with the step table growing
//! under them. Keys: `q` or Ctrl-C raise the stop flag, so the run stops and keeps every
//! result (as Ctrl-C does without the dashboard); Ctrl-C once stopping exits at once. The step
//! lines are printed to stderr once it has closed, and the summary after them, as before.

mod draw;
mod term;
pub(crate) mod web;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use loadbench_live::heading::Heading;
use loadbench_live::{matrix, steps, view::View};
use loadbench_model::FindMaxStep;
use loadbench_plan::Plan;
use loadbench_runner::Live;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the dashboard redraws.
const REFRESH: Duration = Duration::from_millis(250);
/// How long it waits for a key at a time, so it notices the end of the run quickly.
const KEY_WAIT: Duration = Duration::from_millis(50);
/// The exit code of a run ended by a second Ctrl-C (as the signal handler's).
const EXIT_AT_ONCE: i32 = 130;

/// What the observer hands the drawing thread.
#[derive(Default)]
struct Shared {
    /// The load running (with its counters) or, between loads, the last one's view.
    load: Mutex<Option<Load>>,
    /// The find-max step table.
    steps: Mutex<steps::Steps>,
    /// The bench matrix.
    matrix: Mutex<Option<matrix::Matrix>>,
    /// Lines for stderr held back while the dashboard covers it (a bench's round lines).
    held: Mutex<Vec<String>>,
    done: AtomicBool,
}

struct Load {
    live: Option<Arc<Live>>,
    stop: Arc<AtomicBool>,
    view: View,
    started: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An open dashboard; [`Dashboard::finish`] closes it.
pub(crate) struct Dashboard {
    command: &'static str,
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Opens the dashboard of `command` (`run`, `find-max`).
    pub(crate) fn open(command: &'static str) -> Dashboard {
        let shared = Arc::new(Shared::default());
        let handle = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                if let Ok(screen) = term::Screen::enter() {
                    watch(screen, &shared);
                }
            })
        };
        Dashboard {
            command,
            shared,
            handle: Some(handle),
        }
    }

    /// A load starts: its counters are shown from now on, under `heading` when given (a
    /// bench's target name and step) instead of the command and the URL.
    pub(crate) fn load_started(&self, live: &Arc<Live>, plan: &Plan, heading: Option<Heading>) {
        let mut view = View::new(self.command, plan);
        if let Some(h) = heading {
            view.heading = h;
        }
        *lock(&self.shared.load) = Some(Load {
            stop: live.stop_flag(),
            live: Some(Arc::clone(live)),
            view,
            started: Instant::now(),
        });
    }

    /// The load has ended: its last numbers stay on the screen.
    pub(crate) fn load_finished(&self) {
        if let Some(load) = lock(&self.shared.load).as_mut() {
            if let Some(live) = load.live.take() {
                load.view
                    .update(live.pulse(load.view.series.len()), load.started.elapsed());
            }
        }
    }

    /// A find-max step was judged, or its recovery wait has ended.
    pub(crate) fn step(&self, step: &FindMaxStep) {
        lock(&self.shared.steps).record(step);
    }

    /// A bench's matrix is shown under the load from now on.
    pub(crate) fn set_matrix(&self, matrix: matrix::Matrix) {
        *lock(&self.shared.matrix) = Some(matrix);
    }

    /// `done` steps of the bench have finished.
    pub(crate) fn matrix_finished(&self, done: usize) {
        if let Some(m) = lock(&self.shared.matrix).as_mut() {
            m.finished(done);
        }
    }

    /// A line for stderr, printed once the dashboard has closed.
    pub(crate) fn hold(&self, line: String) {
        lock(&self.shared.held).push(line);
    }

    /// Closes the dashboard, restores the terminal and prints the lines it held back.
    pub(crate) fn finish(mut self) {
        self.shared.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        for line in lock(&self.shared.steps).plain_lines() {
            eprintln!("{line}");
        }
        for line in lock(&self.shared.held).iter() {
            eprintln!("{line}");
        }
    }
}

/// Draws at [`REFRESH`] and handles keys until done.
fn watch(mut screen: term::Screen, shared: &Shared) {
    while term::active() {
        let drawn = {
            let mut load = lock(&shared.load);
            if let Some(l) = load.as_mut() {
                refresh(l);
            }
            let steps = lock(&shared.steps);
            let matrix = lock(&shared.matrix).as_ref().map(matrix::Matrix::lines);
            let view = load.as_ref().map(|l| &l.view);
            screen
                .terminal
                .draw(|f| draw::frame(f, view, &steps, matrix.as_deref()))
        };
        if drawn.is_err() {
            return;
        }
        let next = Instant::now() + REFRESH;
        while Instant::now() < next {
            if shared.done.load(Ordering::Relaxed) {
                return;
            }
            let stop = lock(&shared.load).as_ref().map(|l| Arc::clone(&l.stop));
            keys(stop.as_deref());
        }
    }
}

/// A running load's latest pulse into its view.
fn refresh(l: &mut Load) {
    if let Some(live) = &l.live {
        l.view
            .update(live.pulse(l.view.series.len()), l.started.elapsed());
    }
    l.view.stopping = l.stop.load(Ordering::Relaxed);
}

/// Waits up to [`KEY_WAIT`] for keys and acts on them (before the first load, when there is
/// no stop flag yet, Ctrl-C exits at once).
fn keys(stop: Option<&AtomicBool>) {
    while event::poll(KEY_WAIT).unwrap_or(false) {
        let Ok(Event::Key(key)) = event::read() else {
            continue;
        };
        let stopping = stop.is_none_or(|s| s.load(Ordering::Relaxed));
        match action(key, stopping) {
            Action::Stop => {
                if let Some(s) = stop {
                    s.store(true, Ordering::Relaxed);
                }
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
