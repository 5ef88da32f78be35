//! Draws a [`View`] into a ratatui frame: the full dashboard from 80×24 up, one line below
//! that. Pure: it only reads the view, so tests render it into a `TestBackend` buffer.

use loadbench_live::steps::{Steps, HEADING};
use loadbench_live::view::View;
use loadbench_model::human::{duration_ns, duration_us};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Chart, Dataset, Gauge, GraphType, Paragraph, Wrap};
use ratatui::Frame;
use std::time::Duration;

/// The smallest area the full dashboard is drawn in.
pub(crate) const MIN: (u16, u16) = (80, 24);

/// Draws the load's view `v` (none before the first load) and the step table (or a bench's
/// matrix, when given) into the frame.
pub(crate) fn frame(f: &mut Frame<'_>, v: Option<&View>, steps: &Steps, matrix: Option<&[String]>) {
    let area = f.area();
    let Some(v) = v else {
        f.render_widget(Paragraph::new("loadbench: starting..."), area);
        return;
    };
    if area.width < MIN.0 || area.height < MIN.1 {
        f.render_widget(Paragraph::new(one_line(v, steps)), area);
        return;
    }
    // The step table takes up to half of what the charts would have, at least 6 rows.
    // The step table keeps two lines for the newest verdict in full when its row is cut.
    let rows = matrix.map_or(steps.len() + 3, <[String]>::len);
    let table = match matrix.is_none() && steps.is_empty() {
        true => 0,
        false => (rows as u16 + 2).min(((area.height - 12) / 2).max(6)),
    };
    // A flow's or mix's block takes what it needs of the rest, leaving the charts 5 rows;
    // under 3 rows (a border and one line) it is left out.
    let wanted = v.endpoint_lines(usize::MAX).len() as u16 + 2;
    let room = area.height.saturating_sub(12 + 5 + table);
    let per_step = match v.endpoints.is_some() && room >= 3 {
        true => wanted.min(room),
        false => 0,
    };
    let [head, gauge, middle, charts, per_step_area, table_area, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(9),
        Constraint::Min(5),
        Constraint::Length(per_step),
        Constraint::Length(table),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(header(v)), head);
    f.render_widget(progress(v), gauge);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(middle);
    f.render_widget(totals(v), left);
    f.render_widget(latency_now(v, right.width), right);
    let [rates, lat] = Layout::horizontal([Constraint::Fill(1); 2]).areas(charts);
    rate_chart(f, v, rates);
    latency_chart(f, v, lat);
    if per_step > 0 {
        f.render_widget(endpoints_panel(v, per_step_area), per_step_area);
    }
    match matrix {
        Some(lines) => f.render_widget(matrix_panel(lines), table_area),
        None if table > 0 => f.render_widget(step_table(steps, table_area), table_area),
        None => {}
    }
    f.render_widget(Paragraph::new(footer(v)), keys);
}

/// The step table's lines for a box `width` wide inside and `height` high inside: the heading,
/// the last rows that fit, each cut to the width with a visible `…`, and when the newest row
/// is cut, its verdict in full under them, wrapped.
pub(crate) fn step_lines(steps: &Steps, width: usize, height: usize) -> Vec<String> {
    let width = width.max(2);
    let full = steps
        .last_verdict()
        .filter(|_| {
            steps
                .rows()
                .last()
                .is_some_and(|r| r.chars().count() > width)
        })
        .map(|(n, verdict)| wrap(&format!("step {n}: {verdict}"), width))
        .unwrap_or_default();
    let room = height.saturating_sub(1 + full.len());
    let skip = steps.len().saturating_sub(room);
    let mut lines = vec![fit(HEADING, width)];
    lines.extend(steps.rows().skip(skip).map(|r| fit(r, width)));
    lines.extend(full);
    lines
}

/// `text` cut to `width` characters, its end shown as `…` when cut.
fn fit(text: &str, width: usize) -> String {
    match text.chars().count() > width {
        true => text.chars().take(width - 1).chain(['…']).collect(),
        false => text.to_string(),
    }
}

/// `text` in lines of at most `width` characters, broken at spaces where it can be.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let fits = line.chars().count() + 1 + word.chars().count() <= width;
        if !line.is_empty() && !fits {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > width {
            let rest: String = line.chars().skip(width).collect();
            lines.push(line.chars().take(width).collect());
            line = rest;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The last steps that fit, under the heading.
fn step_table(steps: &Steps, area: Rect) -> Paragraph<'static> {
    let (width, height) = (area.width.saturating_sub(2), area.height.saturating_sub(2));
    let lines: Vec<Line> = step_lines(steps, usize::from(width), usize::from(height))
        .into_iter()
        .map(Line::from)
        .collect();
    Paragraph::new(lines).block(Block::bordered().title(" find-max steps "))
}

/// A flow's line and its steps (or a mix's requests), each cut to the box's width.
fn endpoints_panel(v: &View, area: Rect) -> Paragraph<'static> {
    let (width, height) = (area.width.saturating_sub(2), area.height.saturating_sub(2));
    let lines: Vec<Line> = v
        .endpoint_lines(usize::from(height))
        .iter()
        .map(|l| Line::from(fit(l, usize::from(width).max(2))))
        .collect();
    let title = v.endpoints.as_ref().map_or(String::new(), |e| e.title());
    Paragraph::new(lines).block(Block::bordered().title(format!(" {title} ")))
}

/// The bench matrix and the running targets' resources, wrapped rather than cut.
fn matrix_panel(lines: &[String]) -> Paragraph<'static> {
    let lines: Vec<Line> = lines.iter().map(|l| Line::from(l.clone())).collect();
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(Block::bordered().title(" bench matrix "))
}

/// `loadbench run  http://…  closed model, 2 connections`; in a bench the target's name and
/// the step instead: `loadbench bench web: up, closed c=2, round 1 of 2 (step 1 of 4)`.
pub(crate) fn header(v: &View) -> String {
    let h = &v.heading;
    match h.step {
        Some(_) => h.text(),
        None => format!("loadbench {}  {}  {}", v.command, h.target, v.model),
    }
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

fn progress(v: &View) -> Gauge<'static> {
    let label = if v.stopping {
        "stopping: keeping every result so far".to_string()
    } else if v.warming_up() {
        format!("warming up, {} left", secs(v.warmup - v.elapsed))
    } else {
        match v.stop {
            loadbench_plan::Stop::Duration(d) => format!(
                "elapsed {} of {}, remaining {}",
                secs(v.measured()),
                secs(d),
                secs(v.remaining().unwrap_or_default())
            ),
            loadbench_plan::Stop::Requests(n) => format!(
                "elapsed {}, {} of {n} requests",
                secs(v.measured()),
                v.now.requests + v.now.errors.total()
            ),
        }
    };
    Gauge::default()
        .ratio(v.ratio())
        .label(label)
        .gauge_style(Style::default().fg(Color::Cyan).bg(Color::Black))
}

/// The counters: totals, the last second, errors by class, status codes, connections.
pub(crate) fn totals_lines(v: &View) -> Vec<String> {
    let n = &v.now;
    let mut lines = vec![format!("requests {}  sent {}", n.requests, n.sent)];
    match v.last() {
        Some(p) => {
            let failed = match p.failed {
                0 => String::new(),
                n => format!(", {n} failed"),
            };
            lines.push(format!(
                "second {}: {} completed{failed}, {} sent",
                p.second, p.requests, p.sent
            ));
            if let Some(t) = v.target(p.second) {
                lines.push(format!("second {}: {t} due by the schedule", p.second));
            }
        }
        None => lines.push("second -: none closed yet".to_string()),
    }
    lines.push(errors_line(v));
    let codes: Vec<String> = n
        .status
        .0
        .iter()
        .map(|(c, k)| format!("{c}: {k}"))
        .collect();
    // A gRPC load: its calls by grpc-status, and the HTTP statuses only when not all 200.
    let only_200 = n.status.0.keys().all(|&c| c == 200);
    if n.grpc.is_empty() || !only_200 {
        lines.push(format!("status {}", or_none(&codes.join("  "))));
    }
    if let Some(calls) = n.grpc.text() {
        lines.push(format!("gRPC {calls}"));
    }
    let connects = match v.last() {
        Some(p) if p.connects > 0 => format!(", {} connects in second {}", p.connects, p.second),
        _ => String::new(),
    };
    lines.push(format!("open connections {}{connects}", n.open_connections));
    if v.target(0).is_some() {
        lines.push(format!(
            "pool full {}  schedule lag {}",
            duration_us(n.pool_full_us as f64),
            duration_us(n.lag_us as f64)
        ));
    }
    lines
}

fn or_none(s: &str) -> &str {
    if s.is_empty() {
        "none yet"
    } else {
        s
    }
}

fn errors_line(v: &View) -> String {
    let e = &v.now.errors;
    let classes: Vec<String> =
        e.0.iter()
            .filter(|(_, &k)| k > 0)
            .map(|(kind, k)| format!("{} {k}", kind.describe()))
            .collect();
    match classes.is_empty() {
        true => "errors 0".to_string(),
        false => format!("errors {} ({})", e.total(), classes.join(", ")),
    }
}

fn totals(v: &View) -> Paragraph<'static> {
    let lines: Vec<Line> = totals_lines(v).into_iter().map(Line::from).collect();
    Paragraph::new(lines).block(Block::bordered().title(" counts "))
}

/// The last closed second's percentiles and its distribution as bars.
pub(crate) fn latency_lines(v: &View, width: u16) -> Vec<String> {
    let Some(p) = v.last() else {
        return vec!["no second closed yet".to_string()];
    };
    let p90 = v.p90_us.last().copied().unwrap_or_default();
    let mut lines = vec![format!(
        "p50 {}  p90 {}  p99 {}",
        duration_us(p.p50_us),
        duration_us(p90),
        duration_us(p.p99_us)
    )];
    let most = v.distribution.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let room = usize::from(width.saturating_sub(24)).max(1);
    for &(upper, n) in &v.distribution {
        let bar = "#".repeat((n as usize * room).div_ceil(most as usize));
        lines.push(format!("<={:>8} {bar} {n}", duration_ns(upper as f64)));
    }
    lines
}

fn latency_now(v: &View, width: u16) -> Paragraph<'static> {
    let title = v.last().map_or(" latency ".to_string(), |p| {
        format!(" latency, second {} ", p.second)
    });
    let lines: Vec<Line> = latency_lines(v, width)
        .into_iter()
        .map(Line::from)
        .collect();
    Paragraph::new(lines).block(Block::bordered().title(title))
}

/// `(second, value)` points of one line of a chart.
fn points(v: &View, f: impl Fn(usize) -> Option<f64>) -> Vec<(f64, f64)> {
    (0..v.series.len())
        .filter_map(|i| Some((f64::from(v.series[i].second), f(i)?)))
        .collect()
}

fn rate_chart(f: &mut Frame<'_>, v: &View, area: Rect) {
    let done = points(v, |i| Some(v.series[i].requests as f64));
    let sent = points(v, |i| Some(v.series[i].sent as f64));
    let target = points(v, |i| v.target(v.series[i].second).map(|t| t as f64));
    let mut lines = vec![("done", done, Color::Green), ("sent", sent, Color::Blue)];
    if !target.is_empty() {
        lines.push(("target", target, Color::Yellow));
    }
    chart(f, v, area, " req/s ", lines, |y| format!("{y:.0}"));
}

fn latency_chart(f: &mut Frame<'_>, v: &View, area: Rect) {
    let ms = |us: f64| us / 1000.0;
    let lines = vec![
        (
            "p50",
            points(v, |i| Some(ms(v.series[i].p50_us))),
            Color::Green,
        ),
        ("p90", points(v, |i| Some(ms(v.p90_us[i]))), Color::Yellow),
        (
            "p99",
            points(v, |i| Some(ms(v.series[i].p99_us))),
            Color::Red,
        ),
    ];
    chart(f, v, area, " latency ms ", lines, |y| format!("{y:.2}"));
}

type Line3 = (&'static str, Vec<(f64, f64)>, Color);

fn chart(
    f: &mut Frame<'_>,
    v: &View,
    area: Rect,
    title: &str,
    lines: Vec<Line3>,
    fmt: fn(f64) -> String,
) {
    let top = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.1;
    let right = v
        .series
        .last()
        .map_or(10.0, |p| f64::from(p.second + 1))
        .max(10.0);
    let sets: Vec<Dataset> = lines
        .iter()
        .map(|(name, pts, color)| {
            Dataset::default()
                .name(*name)
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(*color))
                .data(pts)
        })
        .collect();
    let chart = Chart::new(sets)
        .block(Block::bordered().title(title.to_string()))
        .x_axis(
            Axis::default()
                .bounds([0.0, right])
                .labels(["0s".to_string(), format!("{right:.0}s")]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(["0".to_string(), fmt(top)]),
        );
    f.render_widget(chart, area);
}

fn footer(v: &View) -> &'static str {
    match v.stopping {
        false => "q or Ctrl-C: stop and keep the results",
        true => "stopping... Ctrl-C again: exit at once",
    }
}

/// The view in one line, for terminals under 80×24.
pub(crate) fn one_line(v: &View, steps: &Steps) -> String {
    let rate = v.last().map_or(0, |p| p.requests);
    let p99 = v.last().map_or("-".to_string(), |p| duration_us(p.p99_us));
    let state = if v.stopping { "stopping" } else { "q: stop" };
    let step = match steps.len() {
        0 => String::new(),
        n => format!("step {} ", n + 1),
    };
    format!(
        "{step}{} {} req {rate} req/s {} err p99 {p99} {state}",
        secs(v.measured()),
        v.now.requests,
        v.now.errors.total()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_engine::Pulse;
    use loadbench_model::{ErrorKind, Histo, SecondCounts, SeriesPoint};
    use loadbench_plan::{LoadSpec, Plan};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn view(spec: &LoadSpec) -> View {
        let mut v = View::new("run", &Plan::resolve(spec).unwrap());
        let mut h = Histo::per_second();
        (1..=100).for_each(|ms| h.record_ns(ms * 1_000_000));
        let counts = SecondCounts {
            requests: 100,
            sent: 101,
            ..Default::default()
        };
        let mut pulse = Pulse {
            requests: 150,
            sent: 153,
            open_connections: 8,
            series: vec![SeriesPoint::new(0, counts, &h)],
            ..Default::default()
        };
        pulse.status.add(200, 149);
        pulse.status.add(503, 1);
        pulse.errors.add(ErrorKind::Reset, 2);
        v.update(pulse, Duration::from_millis(1500));
        v
    }

    fn render(v: &View, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| frame(f, Some(v), &Steps::default(), None))
            .unwrap();
        let buf = t.backend().buffer();
        let cells: Vec<&str> = buf.content().iter().map(|c| c.symbol()).collect();
        cells
            .chunks(usize::from(w))
            .map(|r| r.concat() + "\n")
            .collect()
    }

    fn closed() -> LoadSpec {
        LoadSpec::closed("http://127.0.0.1:9/", 8, Duration::from_secs(10))
    }

    #[test]
    fn full_dashboard_at_80x24_shows_every_part() {
        let screen = render(&view(&closed()), 80, 24);
        for part in [
            "requests 150  sent 153",
            "second 0: 100 completed, 101 sent",
            "errors 2 (connection reset 2)",
            "status 200: 149  503: 1",
            "open connections 8",
            "elapsed 1s of 10s, remaining 9s",
            "latency, second 0",
            "p50 ",
            " req/s ",
            " latency ms ",
            "q or Ctrl-C: stop",
        ] {
            assert!(screen.contains(part), "{part:?} missing:\n{screen}");
        }
        assert!(
            !screen.contains("pool full"),
            "closed model: no pool\n{screen}"
        );
    }

    /// A gRPC load shows its calls by grpc-status (the HTTP statuses only when not all 200),
    /// and a second's failed answers.
    #[test]
    fn a_grpc_load_shows_its_calls_by_status_and_the_failed_answers() {
        let mut v = view(&closed());
        v.series[0].failed = 4;
        let mut grpc = Pulse::default();
        grpc.status.add(200, 150);
        let mut codes = [0u64; 18];
        (codes[0], codes[14]) = (146, 4);
        grpc.grpc = loadbench_model::GrpcStats::from_counts(&codes, 0, Some(4));
        v.now = grpc;
        let lines = totals_lines(&v);
        assert!(
            lines.contains(&"gRPC OK 146, UNAVAILABLE 4".to_string()),
            "{lines:?}"
        );
        assert!(lines.contains(&"second 0: 100 completed, 4 failed, 101 sent".to_string()));
        assert!(!lines.iter().any(|l| l.starts_with("status")), "{lines:?}");
        v.now.status.add(503, 2);
        let lines = totals_lines(&v);
        assert!(
            lines.contains(&"status 200: 150  503: 2".to_string()),
            "{lines:?}"
        );
        let screen = render(&v, 80, 24);
        assert!(screen.contains("gRPC OK 146, UNAVAILABLE 4"), "{screen}");
    }

    #[test]
    fn open_model_shows_target_pool_and_lag() {
        let spec = LoadSpec::open("http://127.0.0.1:9/", 100.0, Duration::from_secs(5), 10);
        let mut v = view(&spec);
        v.series[0].connects = 7;
        let screen = render(&v, 100, 30);
        assert!(
            screen.contains("second 0: 100 completed, 101 sent"),
            "{screen}"
        );
        assert!(
            screen.contains("second 0: 100 due by the schedule"),
            "{screen}"
        );
        assert!(
            screen.contains("open connections 8, 7 connects in second 0"),
            "{screen}"
        );
        assert!(screen.contains("pool full 0"), "{screen}");
        assert!(screen.contains("schedule lag"), "{screen}");
    }

    #[test]
    fn below_80x24_one_line() {
        let v = view(&closed());
        let screen = render(&v, 79, 24);
        assert_eq!(
            screen.lines().next().unwrap().trim_end(),
            one_line(&v, &Steps::default())
        );
        assert!(screen.lines().skip(1).all(|l| l.trim().is_empty()));
        assert!(
            one_line(&v, &Steps::default()).starts_with("1s 150 req 100 req/s 2 err p99 "),
            "{}",
            one_line(&v, &Steps::default())
        );
        let screen = render(&v, 120, 10);
        assert!(
            screen.starts_with(&one_line(&v, &Steps::default())),
            "{screen}"
        );
    }

    #[test]
    fn find_max_step_table_under_the_charts() {
        let mut steps = Steps::default();
        let text = include_str!("../../tests/fixtures/find-max.json");
        for s in loadbench_model::FindMaxResult::from_json(text)
            .unwrap()
            .steps
        {
            steps.record(&s);
        }
        let mut v = view(&closed());
        v.command = "find-max";
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| frame(f, Some(&v), &steps, None)).unwrap();
        let cells: Vec<&str> = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        let screen: String = cells.chunks(80).map(|r| r.concat() + "\n").collect();
        assert!(screen.contains("loadbench find-max"), "{screen}");
        assert!(screen.contains(" find-max steps "), "{screen}");
        assert!(screen.contains(HEADING), "{screen}");
        assert!(screen.contains("   4 "), "the latest step shows: {screen}");
        assert!(screen.contains("requests 150"), "{screen}");
        assert!(one_line(&v, &steps).starts_with("step 5 "));
    }

    #[test]
    fn a_bench_load_is_headed_by_its_target_name_and_step() {
        let mut v = view(&closed());
        v.command = "bench";
        v.heading = loadbench_live::heading::Heading {
            command: "bench web".into(),
            target: "up".into(),
            step: Some("closed c=50, round 1 of 2 (step 1 of 4)".into()),
        };
        let screen = render(&v, 100, 30);
        let first = screen.lines().next().unwrap().trim_end();
        assert_eq!(
            first,
            "loadbench bench web: up, closed c=50, round 1 of 2 (step 1 of 4)"
        );
        assert!(!first.contains("127.0.0.1"), "{first}");
    }

    #[test]
    fn a_long_verdict_is_cut_with_an_ellipsis_and_shown_in_full_below() {
        let mut steps = Steps::default();
        let text = include_str!("../../tests/fixtures/find-max.json");
        let mut all = loadbench_model::FindMaxResult::from_json(text)
            .unwrap()
            .steps;
        all[3].detail = "p99 12.40ms above the SLO's 10ms and 3.10% of requests failed, \
                         well past the 1% the SLO allows"
            .into();
        for s in &all {
            steps.record(s);
        }
        let lines = step_lines(&steps, 78, 10);
        assert!(lines.iter().all(|l| l.chars().count() <= 78), "{lines:#?}");
        let cut = &lines[4];
        assert!(cut.starts_with("   4 ") && cut.ends_with('…'), "{lines:#?}");
        let full: String = lines[5..].join(" ");
        assert!(
            full.starts_with("step 4: FAIL ") && full.ends_with("the SLO allows"),
            "{lines:#?}"
        );
        assert!(!lines[1].ends_with('…'), "a short row stays whole");
        // Three rows of room: the newest rows and its full verdict, never the oldest.
        let lines = step_lines(&steps, 78, 5);
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(lines[2].starts_with("   4 "), "{lines:#?}");
        assert_eq!(wrap("aaa bbb ccccccc", 5), ["aaa", "bbb", "ccccc", "cc"]);
    }

    #[test]
    fn a_flow_shows_its_steps_and_iterations_under_the_charts() {
        use loadbench_plan::{FlowSpec, StepSpec};
        let step = StepSpec::new;
        let spec = LoadSpec {
            flow: Some(FlowSpec {
                name: "login".into(),
                source: "--flow login.toml".into(),
                steps: vec![
                    step("login", "POST", "/login"),
                    step("me", "GET", "/me"),
                    step("me-again", "GET", "/me"),
                ],
            }),
            ..closed()
        };
        let mut v = view(&spec);
        v.now.endpoints = vec![(60, 0), (55, 4), (51, 0)];
        v.now.flow = Some(loadbench_engine::FlowPulse {
            started: 62,
            completed: 51,
            broken: 4,
        });
        let screen = render(&v, 80, 24);
        for part in [
            " per step (flow login) ",
            "flow login: 51 iterations completed (",
            "), 4 broken, 62 started",
            "login: POST /login",
            "me: GET /me",
            "me-again: GET /me",
            "requests 150  sent 153",
            " req/s ",
            "q or Ctrl-C: stop",
        ] {
            assert!(screen.contains(part), "{part:?} missing:\n{screen}");
        }
        let me = screen.lines().find(|l| l.contains("me: GET /me")).unwrap();
        assert!(
            me.trim_end()
                .trim_end_matches('│')
                .trim_end()
                .ends_with(" 4"),
            "{me}"
        );
        let plain = render(&view(&closed()), 80, 24);
        assert!(!plain.contains("per step") && !plain.contains("per request"));
    }

    #[test]
    fn distribution_bars_count_every_response() {
        let v = view(&closed());
        let lines = latency_lines(&v, 40);
        let total: u64 = lines[1..]
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 100);
    }
}
