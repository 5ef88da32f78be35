//! The per-step (a flow) or per-request (a mix) block of both live views: each step's or
//! request's label, from the plan (`login: POST /login`, `GET /items`), its responses, its
//! rate, its failures (a flow's failed checks and missing captures included), and a flow's
//! iterations (completed per second, broken, started). The counts come from the engine's
//! pulses ([`Pulse::endpoints`], [`Pulse::flow`]); rates are over the measured time so far.
//! Latency per step and status codes per step are in the final report only.

use loadbench_engine::Pulse;
use loadbench_model::human::rate;
use loadbench_plan::Plan;
use std::time::Duration;

/// The labels of a run's steps or requests, from its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The flow's name; `None` for a mix.
    pub flow: Option<String>,
    /// Each step's or request's label, by index.
    pub labels: Vec<String>,
}

/// One step or request as the live views show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `login: POST /login`, or `GET /items` in a mix.
    pub label: String,
    /// Complete responses so far.
    pub requests: u64,
    /// Complete responses per second of the measured time so far.
    pub per_sec: f64,
    /// Requests that failed so far (every class).
    pub errors: u64,
}

/// The widest label the terminal table gives room to before cutting it.
const LABEL_WIDTH: usize = 36;

impl Endpoints {
    /// The labels of `plan`'s flow steps or mix requests; `None` for a single-request load
    /// (no per-request block).
    pub fn of(plan: &Plan) -> Option<Endpoints> {
        let flow = plan.flow.as_ref();
        if plan.mix.len() < 2 && flow.is_none() {
            return None;
        }
        let labels = plan
            .mix
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let request = format!("{} {}", e.request.method, loadbench_model::url_path(&e.url));
                match flow.and_then(|f| f.steps.get(i)) {
                    Some(step) => format!("{}: {request}", step.name),
                    None => request,
                }
            })
            .collect();
        Some(Endpoints {
            flow: flow.map(|f| f.name.clone()),
            labels,
        })
    }

    /// `per step (flow login)` or `per request (mix)`.
    pub fn title(&self) -> String {
        match &self.flow {
            Some(name) => format!("per step (flow {name})"),
            None => "per request (mix)".to_string(),
        }
    }

    /// The word heading the label column.
    pub fn unit(&self) -> &'static str {
        match self.flow {
            Some(_) => "step",
            None => "request",
        }
    }

    /// Each step or request with its counts in `now`, rates over `measured`.
    pub fn rows(&self, now: &Pulse, measured: Duration) -> Vec<Row> {
        self.labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let (requests, errors) = now.endpoints.get(i).copied().unwrap_or_default();
                Row {
                    label: label.clone(),
                    requests,
                    per_sec: per_sec(requests, measured),
                    errors,
                }
            })
            .collect()
    }

    /// `flow login: 120 iterations completed (40.00/s), 3 broken, 125 started`; `None` for
    /// a mix.
    pub fn flow_line(&self, now: &Pulse, measured: Duration) -> Option<String> {
        let name = self.flow.as_ref()?;
        let f = now.flow.unwrap_or_default();
        Some(format!(
            "flow {name}: {} iterations completed ({}/s), {} broken, {} started",
            f.completed,
            rate(per_sec(f.completed, measured)),
            f.broken,
            f.started
        ))
    }

    /// The terminal table: the flow line (for a flow), the heading, then a line per step or
    /// request, at most `height` lines in all; when they do not fit, the last line says how
    /// many more there are.
    pub fn lines(&self, now: &Pulse, measured: Duration, height: usize) -> Vec<String> {
        let rows = self.rows(now, measured);
        let width = rows
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(self.unit().len(), LABEL_WIDTH);
        let mut lines: Vec<String> = self.flow_line(now, measured).into_iter().collect();
        lines.push(format!(
            "{:<width$}  {:>9}  {:>10}  {:>7}",
            self.unit(),
            "requests",
            "req/s",
            "errors"
        ));
        let room = height.saturating_sub(lines.len());
        let shown = match rows.len() > room {
            true => room.saturating_sub(1),
            false => rows.len(),
        };
        for r in &rows[..shown] {
            lines.push(format!(
                "{:<width$}  {:>9}  {:>10}  {:>7}",
                cut(&r.label, width),
                r.requests,
                format!("{}/s", rate(r.per_sec)),
                r.errors
            ));
        }
        if shown < rows.len() && room > 0 {
            lines.push(format!(
                "+{} more {}s (all in the report)",
                rows.len() - shown,
                self.unit()
            ));
        }
        lines.truncate(height);
        lines
    }
}

/// `n` per second of `measured` (0 before any measured time).
fn per_sec(n: u64, measured: Duration) -> f64 {
    let s = measured.as_secs_f64();
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// `text` cut to `width` characters, its end shown as `…` when cut.
fn cut(text: &str, width: usize) -> String {
    match text.chars().count() > width {
        true => text
            .chars()
            .take(width.saturating_sub(1))
            .chain(['…'])
            .collect(),
        false => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_engine::FlowPulse;
    use loadbench_plan::{EndpointSpec, FlowSpec, LoadSpec, RequestSpec, StepSpec};

    fn step(name: &str, method: &str, path: &str) -> StepSpec {
        StepSpec::new(name, method, path)
    }

    fn flow_plan() -> Plan {
        let spec = LoadSpec {
            flow: Some(FlowSpec {
                name: "login".into(),
                source: "--flow login.toml".into(),
                steps: vec![step("login", "POST", "/login"), step("me", "GET", "/me")],
            }),
            ..LoadSpec::closed("http://127.0.0.1:9/", 2, Duration::from_secs(3))
        };
        Plan::resolve(&spec).unwrap()
    }

    fn pulse(endpoints: Vec<(u64, u64)>, flow: Option<FlowPulse>) -> Pulse {
        Pulse {
            endpoints,
            flow,
            ..Pulse::default()
        }
    }

    #[test]
    fn a_flow_names_its_steps_and_counts_its_iterations() {
        let e = Endpoints::of(&flow_plan()).unwrap();
        assert_eq!(e.title(), "per step (flow login)");
        assert_eq!(e.labels, ["login: POST /login", "me: GET /me"]);
        let now = pulse(
            vec![(40, 2), (38, 1)],
            Some(FlowPulse {
                started: 41,
                completed: 37,
                broken: 3,
            }),
        );
        let rows = e.rows(&now, Duration::from_secs(2));
        assert_eq!(
            (rows[0].requests, rows[0].errors, rows[0].per_sec),
            (40, 2, 20.0)
        );
        let lines = e.lines(&now, Duration::from_secs(2), 10);
        assert_eq!(
            lines[0],
            "flow login: 37 iterations completed (18.50/s), 3 broken, 41 started"
        );
        assert!(lines[1].starts_with("step  ") && lines[1].ends_with(" errors"));
        assert!(lines[2].starts_with("login: POST /login "), "{lines:#?}");
        assert!(lines[2].ends_with("  20.00/s        2"), "{lines:#?}");
        assert!(lines[3].starts_with("me: GET /me "), "{lines:#?}");
        assert_eq!(lines.len(), 4);
        let before = e.lines(&Pulse::default(), Duration::ZERO, 10);
        assert!(before[0].contains(": 0 iterations completed (0.00/s), 0 broken"));
        assert!(before[2].ends_with("  0.00/s        0"), "{before:#?}");
    }

    #[test]
    fn a_mix_has_requests_a_single_request_has_no_block_and_a_short_box_says_what_is_left() {
        let one = LoadSpec::closed("http://127.0.0.1:9/", 2, Duration::from_secs(3));
        assert_eq!(Endpoints::of(&Plan::resolve(&one).unwrap()), None);
        let request = |m: &str, path: &str| EndpointSpec {
            url: format!("http://127.0.0.1:9{path}"),
            request: RequestSpec {
                method: m.into(),
                ..RequestSpec::default()
            },
            weight: 1,
        };
        let spec = LoadSpec {
            mix: vec![
                request("GET", "/a?x=1"),
                request("POST", "/b"),
                request("GET", "/c"),
            ],
            ..one
        };
        let e = Endpoints::of(&Plan::resolve(&spec).unwrap()).unwrap();
        assert_eq!(e.title(), "per request (mix)");
        assert_eq!(e.labels, ["GET /a?x=1", "POST /b", "GET /c"]);
        let now = pulse(vec![(5, 0), (3, 1), (2, 0)], None);
        assert_eq!(e.flow_line(&now, Duration::from_secs(1)), None);
        let lines = e.lines(&now, Duration::from_secs(1), 3);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[0].starts_with("request "), "{lines:#?}");
        assert!(lines[1].starts_with("GET /a?x=1 "), "{lines:#?}");
        assert_eq!(lines[2], "+2 more requests (all in the report)");
        let long = Endpoints {
            flow: None,
            labels: vec!["x".repeat(50), "y".into()],
        };
        let lines = long.lines(&Pulse::default(), Duration::ZERO, 5);
        assert!(lines.iter().all(|l| l.chars().count() <= 70), "{lines:#?}");
        assert!(lines[1].contains('…'), "{lines:#?}");
    }
}
