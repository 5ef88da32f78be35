//! Live progress on stderr while a run goes on: elapsed of total, current req/s, errors.
//! Only when stderr is a terminal and `--quiet` is not given; it reads the engine's published
//! counters and never touches the hot path. [`Bar`] is the runner's [`Observer`] for the CLI:
//! a bar per load, and for find-max a line per finished step; or, for `run` and `find-max`
//! on a terminal, the dashboard of [`crate::live`] instead.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadbench_live::heading::Heading;
use loadbench_live::metrics::Metrics;
use loadbench_live::remote_write::RemoteWrite;
use loadbench_model::FindMaxStep;
use loadbench_plan::{Plan, Stop};
use loadbench_runner::{Control, Live, Observer};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The CLI's observer: a progress bar while each load runs (unless quiet), and a line per
/// finished find-max step (unless quiet); or, when asked for and stderr is a terminal, the
/// dashboard, open from the first load until [`Bar::finish`].
#[derive(Default)]
pub(crate) struct Bar {
    shown: Shown,
    running: Mutex<Option<Progress>>,
    dashboard: Mutex<Option<crate::live::Dashboard>>,
}

/// What the CLI shows while a load runs.
#[derive(Default, Clone)]
pub(crate) struct Shown {
    /// Nothing (`--quiet`).
    quiet: bool,
    /// The dashboard of this command instead of the bar when stderr is a terminal (not
    /// `--no-live`).
    live: Option<&'static str>,
    /// The live web page (`--live-web`), fed beside whatever stderr shows.
    web: Option<Arc<loadbench_live::web::LiveWeb>>,
    /// The live series (`--metrics-listen`, `--prometheus-remote-write`), fed beside whatever
    /// stderr shows.
    metrics: Option<Arc<Metrics>>,
    /// Their pusher (`--prometheus-remote-write`), ended with the command's loads.
    push: Option<Arc<RemoteWrite>>,
}

impl Shown {
    /// The dashboard of `command` when `live` and stderr is a terminal, else the bar (nothing when `quiet`).
    pub(crate) fn live(quiet: bool, live: bool, command: &'static str) -> Shown {
        Shown {
            quiet,
            live: live.then_some(command),
            web: None,
            metrics: None,
            push: None,
        }
    }

    /// Nothing on stderr (`--quiet`).
    pub(crate) fn quiet(&self) -> bool {
        self.quiet
    }

    /// The same, feeding the live web page `web` too.
    pub(crate) fn with_web(self, web: Option<Arc<loadbench_live::web::LiveWeb>>) -> Shown {
        Shown { web, ..self }
    }

    /// The same, feeding the live series `metrics` too (pushed by `push`, if given).
    pub(crate) fn with_metrics(
        self,
        metrics: Option<Arc<Metrics>>,
        push: Option<Arc<RemoteWrite>>,
    ) -> Shown {
        Shown {
            metrics,
            push,
            ..self
        }
    }

    /// The live series, if they are served.
    pub(crate) fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.metrics.as_ref()
    }
}

impl Bar {
    pub(crate) fn new(shown: Shown) -> Bar {
        Bar {
            shown,
            ..Bar::default()
        }
    }

    fn quiet(&self) -> bool {
        self.shown.quiet
    }

    /// The dashboard, opened on first use, when it is to be shown.
    fn dashboard(&self) -> Option<MutexGuard<'_, Option<crate::live::Dashboard>>> {
        let command = self.shown.live.filter(|_| !self.quiet())?;
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let mut d = self
            .dashboard
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        d.get_or_insert_with(|| crate::live::Dashboard::open(command));
        Some(d)
    }

    /// Runs `f` on the dashboard (opening it) when one is to be shown; false when none is.
    pub(crate) fn on_dashboard(&self, f: impl FnOnce(&crate::live::Dashboard)) -> bool {
        match self.dashboard() {
            Some(d) => {
                if let Some(d) = d.as_ref() {
                    f(d);
                }
                true
            }
            None => false,
        }
    }

    /// The dashboard if it is open.
    fn open_dashboard(&self) -> MutexGuard<'_, Option<crate::live::Dashboard>> {
        self.dashboard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The live series, if they are served.
    pub(crate) fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.shown.metrics()
    }

    /// Closes the dashboard, if one was opened (printing the step lines it held back); the
    /// live series say the command is done.
    pub(crate) fn finish(self) {
        if let Some(m) = self.shown.metrics() {
            m.finish();
        }
        if let Some(push) = &self.shown.push {
            let counts = push.finish();
            if let Some(line) = counts.lost_line(push.url()) {
                eprintln!("{line}");
            }
        }
        if let Some(d) = self
            .dashboard
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            d.finish();
        }
    }
}

impl Bar {
    /// A load starts under `heading` (a bench's target name and step; the command and the URL
    /// when none is given).
    pub(crate) fn load_started_as(&self, live: &Arc<Live>, plan: &Plan, heading: Option<Heading>) {
        if let Some(web) = &self.shown.web {
            web.load_started(live, plan, heading.clone());
        }
        if let Some(m) = &self.shown.metrics {
            m.load_started(live, plan);
        }
        if let Some(d) = self.dashboard() {
            if let Some(d) = d.as_ref() {
                d.load_started(live, plan, heading);
            }
            return;
        }
        let goal = match plan.stop {
            Stop::Duration(d) => Goal::Duration(d),
            Stop::Requests(n) => Goal::Requests(n),
        };
        let p = Progress::start(Arc::clone(live), goal, plan.warmup, self.quiet());
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(p);
    }
}

impl Observer for Bar {
    fn load_started(&self, live: &Arc<Live>, plan: &Plan) {
        self.load_started_as(live, plan, None);
    }

    fn load_finished(&self) {
        if let Some(web) = &self.shown.web {
            web.load_finished();
        }
        if let Some(m) = &self.shown.metrics {
            m.load_finished();
        }
        if let Some(d) = self.open_dashboard().as_ref() {
            d.load_finished();
        }
        let p = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(p) = p {
            p.finish();
        }
    }

    fn step_finished(&self, step: &FindMaxStep) {
        if let Some(d) = self.open_dashboard().as_ref() {
            return d.step(step);
        }
        if !self.quiet() {
            eprintln!("{}", loadbench_report::find_max_step_line(step));
        }
    }

    fn recovery_finished(&self, step: &FindMaxStep) {
        if let Some(d) = self.open_dashboard().as_ref() {
            return d.step(step);
        }
        if let (false, Some(text)) = (self.quiet(), loadbench_report::find_max_recovery_line(step))
        {
            eprintln!("{text}");
        }
    }
}

/// Runs `f` under the process's stop flag (Ctrl-C, SIGTERM), showing what `shown` asks for.
pub(crate) fn controlled_as<T>(
    shown: Shown,
    f: impl FnOnce(Control<'_>) -> T,
) -> anyhow::Result<T> {
    let stop = crate::signals::stop_flag()?;
    let bar = Bar::new(shown);
    let out = f(Control {
        stop: &stop,
        observer: &bar,
    });
    bar.finish();
    Ok(out)
}

struct Progress {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// What the bar shows as its total.
#[derive(Debug, Clone, Copy)]
enum Goal {
    Duration(Duration),
    Requests(u64),
}

impl Progress {
    fn start(live: Arc<Live>, goal: Goal, warmup: Duration, quiet: bool) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        let handle = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let done = Arc::clone(&done);
            std::thread::spawn(move || draw(&live, goal, warmup, &done))
        });
        Progress { done, handle }
    }

    fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn draw(live: &Live, goal: Goal, warmup: Duration, done: &AtomicBool) {
    let (len, unit) = match goal {
        Goal::Duration(d) => (d.as_secs().max(1), "s"),
        Goal::Requests(n) => (n, " req"),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(5));
    let style = format!("{{spinner}} [{{bar:30}}] {{pos}}/{{len}}{unit}  {{msg}}");
    bar.set_style(
        ProgressStyle::with_template(&style).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let (mut last_n, mut last_t) = (0u64, start);
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        let now = Instant::now();
        let (n, errors) = live.snapshot();
        let rate = (n.saturating_sub(last_n)) as f64 / now.duration_since(last_t).as_secs_f64();
        (last_n, last_t) = (n, now);
        let elapsed = now.duration_since(start);
        if elapsed < warmup {
            bar.set_message(format!(
                "warming up ({:.0}s left)",
                (warmup - elapsed).as_secs_f64()
            ));
            continue;
        }
        bar.set_position(match goal {
            Goal::Duration(_) => (elapsed - warmup).as_secs(),
            Goal::Requests(_) => n + errors,
        });
        bar.set_message(format!(
            "{rate:.0} req/s, {}",
            loadbench_model::human::counted(errors, "error")
        ));
    }
    bar.finish_and_clear();
}
