//! The history's trend page (`loadbench history html`, docs/history.md): one self-contained
//! HTML page with, per series (a target × load over runs, oldest first), the charts of req/s
//! and p99 with each run's 95% confidence interval, p50 and the error share, and a table of the
//! runs. Pure: series in, HTML out; the charts are the report's own SVG charts.

use crate::charts;
use crate::markup::html;
use loadbench_model::human::{self as units, MISSING};

/// One run's figures in a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// How the page names the run, e.g. `#12`.
    pub label: String,
    /// When it started (RFC 3339).
    pub time: String,
    /// The git commit it was filed under.
    pub commit: Option<String>,
    /// Completed requests per second.
    pub requests_per_sec: Option<f64>,
    /// The 95% confidence interval of req/s.
    pub rps_ci: Option<(f64, f64)>,
    /// Median latency, µs.
    pub p50_us: Option<f64>,
    /// 99th-percentile latency, µs.
    pub p99_us: Option<f64>,
    /// The 95% confidence interval of p99, µs.
    pub p99_ci: Option<(f64, f64)>,
    /// Failed requests plus non-2xx/3xx responses over all attempts (0–1).
    pub error_ratio: Option<f64>,
}

/// A target × load and its runs, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The URL, or a bench cell's target name.
    pub target: String,
    /// The load (a bench cell: `load level`).
    pub load: String,
    /// Its runs, oldest first.
    pub runs: Vec<Run>,
}

/// The whole page.
pub fn page(series: &[Series]) -> String {
    let mut body = String::from("<h1>loadbench history: trends</h1>\n");
    if series.is_empty() {
        body += "<p>No run matches.</p>\n";
    }
    body += "<p>Each series is one target × load, its runs oldest first. Whiskers: the run's 95% confidence interval (a run: of the mean of its per-second values, Student's t over its whole seconds; a bench cell: across rounds), drawn where the run has one.</p>\n";
    for (i, s) in series.iter().enumerate() {
        let charts = charts::trend_charts(s, &format!("trend-{}", i + 1));
        let title = format!("{} × {}", s.target, s.load);
        let mut inner = format!("<p>{} runs</p>\n", s.runs.len());
        inner += &html::figures(&charts);
        inner += &table(s);
        body += &html::section(&format!("series-{}", i + 1), &title, &inner);
    }
    body += &html::footer(env!("CARGO_PKG_VERSION"));
    html::document("loadbench history", &body)
}

fn table(s: &Series) -> String {
    let head: Vec<String> = [
        "run",
        "time",
        "commit",
        "req/s",
        "95% CI",
        "p50",
        "p99",
        "p99 95% CI",
        "errors",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let opt = |v: Option<String>| v.unwrap_or_else(|| MISSING.to_string());
    let range = |ci: Option<(f64, f64)>, f: fn(f64) -> String| {
        opt(ci.map(|(lo, hi)| format!("{}–{}", f(lo.max(0.0)), f(hi))))
    };
    let rows: Vec<html::Row> = s
        .runs
        .iter()
        .map(|r| {
            html::row(vec![
                r.label.clone(),
                r.time.clone(),
                opt(r.commit.as_ref().map(|c| c.chars().take(10).collect())),
                opt(r.requests_per_sec.map(units::rate)),
                range(r.rps_ci, units::rate),
                opt(r.p50_us.map(units::duration_us)),
                opt(r.p99_us.map(units::duration_us)),
                range(r.p99_ci, units::duration_us),
                opt(r.error_ratio.map(units::percent)),
            ])
        })
        .collect();
    html::table("trend", &head, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(i: u32, ci: bool) -> Run {
        let v = f64::from(i);
        Run {
            label: format!("#{i}"),
            time: format!("2026-11-28T00:00:0{i}Z"),
            commit: Some("0123456789abcdef".into()),
            requests_per_sec: Some(1000.0 + v),
            rps_ci: ci.then_some((990.0 + v, 1010.0 + v)),
            p50_us: Some(100.0 + v),
            p99_us: Some(900.0 + v),
            p99_ci: ci.then_some((880.0 + v, 920.0 + v)),
            error_ratio: Some(0.0),
        }
    }

    /// The `<figure>` of chart `name` in `page`.
    fn figure<'a>(page: &'a str, name: &str) -> &'a str {
        let start = page.find(&format!("id=\"chart-{name}\"")).expect(name);
        let end = page[start..].find("</figure>").unwrap() + start;
        &page[start..end]
    }

    #[test]
    fn each_series_has_four_charts_with_a_dot_per_run() {
        let s = Series {
            target: "http://127.0.0.1:8080/".into(),
            load: "closed c=2".into(),
            runs: (1..=5).map(|i| run(i, i % 2 == 0)).collect(),
        };
        let page = page(&[
            s.clone(),
            Series {
                runs: s.runs[..2].to_vec(),
                ..s
            },
        ]);
        for (n, runs) in [(1, 5), (2, 2)] {
            for chart in ["rps", "p50", "p99", "errors"] {
                let f = figure(&page, &format!("trend-{n}-{chart}"));
                let wide = &f[..f.find("<div class=\"compact\">").unwrap()];
                // One dot per run, and one in the legend's swatch.
                assert_eq!(wide.matches("<circle").count(), runs + 1, "{n} {chart}");
            }
        }
        assert!(page.contains("<th scope=\"row\">#5</th>"));
        assert!(page.contains("0123456789<"), "commits shortened");
        assert!(!page.contains("<script"));
    }

    #[test]
    fn a_run_with_an_interval_gets_a_whisker_with_two_caps() {
        let series = |ci: bool| Series {
            target: "t".into(),
            load: "closed c=2".into(),
            runs: (1..=4).map(|i| run(i, ci && i % 2 == 0)).collect(),
        };
        let lines = |page: &str, chart: &str| {
            let f = figure(page, chart);
            f[..f.find("<div class=\"compact\">").unwrap()]
                .matches("<polyline")
                .count()
        };
        let (with, without) = (page(&[series(true)]), page(&[series(false)]));
        for chart in ["trend-1-rps", "trend-1-p99"] {
            // Two runs with an interval: a stroke and two caps each.
            assert_eq!(lines(&with, chart), lines(&without, chart) + 6, "{chart}");
        }
        assert_eq!(lines(&with, "trend-1-p50"), lines(&without, "trend-1-p50"));
        assert!(with.contains("Requests per second, 95% CI"));
        assert!(!without.contains("Requests per second, 95% CI"));
    }
}
