//! The HTML report as a person sees it: pages rendered from deterministic results are opened in
//! headless Chromium (Debian's `chromium`, installed by `.ci/run`), and a small script added to
//! the test's copy of each page reports from inside the browser what was drawn: every chart an
//! SVG of real size with its data points, the tables, no horizontal overflow at laptop or phone
//! width, no script error, no blocked or attempted fetch. Chromium's own console log is checked
//! too, and screenshots are kept under the target directory for a person to look at.
//!
//! Without Chromium the tests skip with a message, unless `CI` is set: CI installs it.

use loadbench_model::{
    BenchResult, ErrorKind, FailReason, FindMaxResult, FindMaxStep, Histo, HostInfo, Latency,
    LoadShape, RateSegment, ResultKind, RunConfig, RunResult, SearchParams, SearchPhase,
    SecondCounts, Series, SeriesPoint, Slo, SloCondition, SloOp, SloStat, SloValue, Stats,
    StopReason, Verdict, SCHEMA_VERSION,
};
use loadbench_report::html;
use loadbench_report::{render_to_string, Format, RenderOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Page widths, CSS pixels.
const LAPTOP: u32 = 1200;
const PHONE: u32 = 400;
/// Tall enough that no page needs a vertical scrollbar inside the probe's frame.
const FRAME_HEIGHT: u32 = 12_000;
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// Chromium

struct Chromium {
    path: PathBuf,
}

/// What one headless Chromium run printed.
struct BrowserOutput {
    stdout: String,
    stderr: String,
}

impl Chromium {
    /// The browser, or `None` (with a message) when it is not installed outside CI.
    fn find() -> Option<Chromium> {
        let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
        if let Some(path) = candidates.iter().map(PathBuf::from).find(|p| p.exists()) {
            return Some(Chromium { path });
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed, but CI is set: .ci/run installs Debian's chromium"
        );
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        None
    }

    /// Runs headless Chromium with a fresh profile on `page`, with `extra` flags.
    fn run(&self, page: &Path, window: (u32, u32), extra: &[String]) -> BrowserOutput {
        let profile = scratch_dir("profile");
        let mut cmd = Command::new(&self.path);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={},{}", window.0, window.1))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let out = wait_with_timeout(cmd.spawn().expect("start chromium"));
        let _ = std::fs::remove_dir_all(&profile);
        out
    }
}

/// Waits for the browser, killing it (by its own pid) if it hangs.
fn wait_with_timeout(mut child: std::process::Child) -> BrowserOutput {
    use std::io::Read;
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).map(|_| s)
    });
    let start = Instant::now();
    while child.try_wait().expect("wait for chromium").is_none() {
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {BROWSER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    BrowserOutput {
        stdout: out.join().unwrap().unwrap_or_default(),
        stderr: err.join().unwrap().unwrap_or_default(),
    }
}

/// Where the pages, chart files and screenshots of this test run are kept.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A new empty directory under the target directory.
fn scratch_dir(what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("html_browser_scratch")
        .join(format!("{what}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// The checks that run inside the page

/// Gathers, inside the browser, what a person would see, and writes it into the DOM as JSON.
/// Only the test's copy of a page carries it (the real page runs no script at all).
const PROBE: &str = r#"<script>
(function () {
  var out = { charts: [], tables: [], errors: window.__errors || [] };
  document.querySelectorAll('figure.chart').forEach(function (f) {
    // The drawing this window shows: the wide one on a laptop, the compact one on a phone.
    var svg = Array.prototype.find.call(f.querySelectorAll('svg'), function (s) {
      return s.getClientRects().length > 0;
    });
    var c = { name: f.dataset.chart, svg: !!svg, width: 0, height: 0, polylines: 0,
              max_points: 0, circles: 0, rects: 0, texts: 0, inside: 0 };
    if (svg) {
      var box = svg.getBoundingClientRect();
      c.width = box.width; c.height = box.height;
      var vb = svg.viewBox.baseVal;
      svg.querySelectorAll('polyline').forEach(function (p) {
        c.polylines++;
        c.max_points = Math.max(c.max_points, p.points.numberOfItems);
        for (var i = 0; i < p.points.numberOfItems; i++) {
          var pt = p.points.getItem(i);
          if (pt.x >= 0 && pt.x <= vb.width && pt.y >= 0 && pt.y <= vb.height) c.inside++;
        }
      });
      c.circles = svg.querySelectorAll('circle').length;
      c.rects = svg.querySelectorAll('rect').length;
      c.texts = Array.prototype.filter.call(svg.querySelectorAll('text'), function (t) {
        return t.getComputedTextLength() > 0;
      }).length;
      // The title: the text that reads as the chart's label, and whether it lies inside the
      // drawing as shown (not clipped on either side).
      var label = svg.getAttribute('aria-label');
      var title = Array.prototype.find.call(svg.querySelectorAll('text'), function (t) {
        return t.textContent.trim() === label;
      });
      if (title) {
        var tb = title.getBoundingClientRect();
        c.title_inside = tb.width > 0 && tb.left >= box.left - 0.5 && tb.right <= box.right + 0.5;
        // Other labels drawn over the title (a legend, an axis label), by their boxes.
        c.title_overlaps = Array.prototype.filter.call(svg.querySelectorAll('text'), function (t) {
          if (t === title || t.getComputedTextLength() === 0) return false;
          var ob = t.getBoundingClientRect();
          return ob.left < tb.right - 0.5 && ob.right > tb.left + 0.5 &&
                 ob.top < tb.bottom - 0.5 && ob.bottom > tb.top + 0.5;
        }).map(function (t) { return t.textContent.trim(); });
      }
    }
    out.charts.push(c);
  });
  document.querySelectorAll('table').forEach(function (t) {
    var wrap = t.parentElement, wb = wrap.getBoundingClientRect();
    // Header cells a reader can see without scrolling: inside the table's container.
    var heads = Array.prototype.map.call(t.querySelectorAll('thead th'), function (h) {
      var hb = h.getBoundingClientRect();
      return { text: h.textContent.trim(),
               visible: hb.width > 0 && hb.left >= wb.left - 0.5 && hb.right <= wb.right + 0.5,
               // Where it ends within the container's scrolled content: reachable by scrolling
               // when it is at most the container's scroll width.
               end: hb.right - wb.left + wrap.scrollLeft };
    });
    out.tables.push({ cls: t.className, rows: t.rows.length,
                      width: t.getBoundingClientRect().width,
                      scroll_width: wrap.scrollWidth, client_width: wrap.clientWidth,
                      wrap_left: wb.left, wrap_right: wb.right,
                      wrap_overflow_x: getComputedStyle(wrap).overflowX,
                      headers: heads });
  });
  // Table cells whose text has more lines than words (a value squeezed to a narrow column
  // reads one character per line), and the tallest cell in lines.
  out.cells = { max_lines: 0, broken: [] };
  document.querySelectorAll('td, th').forEach(function (cell) {
    // The text's own height (a cell is as tall as its row): its lines, by their boxes.
    var cs = getComputedStyle(cell), box = cell.getBoundingClientRect();
    var line = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.5;
    var range = document.createRange();
    range.selectNodeContents(cell);
    var lines = Math.max(1, Math.round(range.getBoundingClientRect().height / line));
    var text = cell.textContent.trim();
    out.cells.max_lines = Math.max(out.cells.max_lines, lines);
    // More lines than words, each of a few characters: a value was broken inside, squeezed
    // (a long URL broken into lines of 30 characters is not; a range breaks after its dash).
    var words = text.split(/[\s\u2013\/]+/).filter(function (w) { return w.length > 0; }).length;
    if (lines >= 2 && lines > words && text.length / lines < 8) {
      out.cells.broken.push({ text: text, lines: lines, width: box.width });
    }
  });
  // Where the why section and its first finding lie on the page (from the top of the page).
  var why = document.getElementById('why');
  if (why) {
    var first = why.querySelector('li');
    out.why = { top: why.getBoundingClientRect().top,
                first_bottom: first ? first.getBoundingClientRect().bottom : null };
  }
  out.alerts = Array.prototype.map.call(document.querySelectorAll('.alert'),
                                        function (a) { return a.className; });
  out.text = document.body.innerText;
  out.viewport = window.innerWidth;
  out.page_width = document.documentElement.scrollWidth;
  // Of the content: the frame's viewport is taller than any page.
  out.page_height = Math.ceil(document.body.getBoundingClientRect().bottom);
  out.resources = performance.getEntriesByType('resource').map(function (e) { return e.name; });
  var pre = document.createElement('pre');
  pre.id = 'browser-checks';
  pre.textContent = JSON.stringify(out);
  // Inside the probe's frame, the findings go to the frame's parent, the page that is dumped.
  (window.parent !== window ? parent.document : document).body.appendChild(pre);
})();
</script>
"#;

/// Catches script errors and blocked loads from the very start of the page.
const CATCHER: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push('error: ' + e.message); });
document.addEventListener('securitypolicyviolation', function (e) {
  window.__errors.push('blocked: ' + e.violatedDirective + ' ' + e.blockedURI);
});
</script>
"#;

/// The test's copy of a page: the same HTML, plus the probe, and a policy that lets the probe
/// (and only inline scripts) run; everything else stays forbidden.
fn probed(page: &str) -> String {
    let policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
    assert!(
        page.contains(policy),
        "the page's Content-Security-Policy changed"
    );
    page.replacen(policy, &format!("{policy}; script-src 'unsafe-inline'"), 1)
        .replacen("<head>\n", &format!("<head>\n{CATCHER}"), 1)
        .replacen("</body>", &format!("{PROBE}</body>"), 1)
}

/// The probed page inside a frame `width` pixels wide (same-origin `srcdoc`), so that the page
/// lays out at that width: a headless window is never narrower than 500 pixels.
fn harness(name: &str, page: &str, width: u32) -> PathBuf {
    let srcdoc = probed(page)
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let html = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>probe</title></head>\n<body style=\"margin:0\"><iframe style=\"width:{width}px;height:{FRAME_HEIGHT}px;border:0\" srcdoc=\"{srcdoc}\"></iframe></body></html>\n"
    );
    let path = artifacts().join(format!("{name}-{width}.probe.html"));
    std::fs::write(&path, html).unwrap();
    path
}

/// What the probe found in the page laid out `width` pixels wide.
fn inspect(chromium: &Chromium, name: &str, page: &str, width: u32) -> Value {
    let path = harness(name, page, width);
    let out = chromium.run(&path, (LAPTOP + 80, 1000), &["--dump-dom".to_string()]);
    console_is_clean(&out.stderr);
    let start = out
        .stdout
        .find("<pre id=\"browser-checks\">")
        .unwrap_or_else(|| {
            panic!(
                "the probe did not run; stdout:\n{}\nstderr:\n{}",
                out.stdout, out.stderr
            )
        });
    let json = &out.stdout[start + "<pre id=\"browser-checks\">".len()..];
    let json = &json[..json.find("</pre>").unwrap()];
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("probe output {json}: {e}"))
}

/// Chromium logs every console message of the page (errors, CSP refusals) as `CONSOLE`.
fn console_is_clean(stderr: &str) {
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
}

/// A full-page screenshot at a window width; returns its path.
fn screenshot(chromium: &Chromium, page: &Path, width: u32, height: u32, name: &str) -> PathBuf {
    let path = artifacts().join(name);
    let _ = std::fs::remove_file(&path);
    let arg = format!("--screenshot={}", path.display());
    let out = chromium.run(page, (width, height), &[arg]);
    assert!(
        path.exists(),
        "no screenshot at {}; stderr:\n{}",
        path.display(),
        out.stderr
    );
    eprintln!("screenshot: {}", path.display());
    path
}

/// Writes the page, as rendered, into the artifacts; returns its path.
fn save(name: &str, page: &str) -> PathBuf {
    let path = artifacts().join(format!("{name}.html"));
    std::fs::write(&path, page).unwrap();
    path
}

/// The checks every page must pass at a width; returns the probe's findings.
fn check_page(
    chromium: &Chromium,
    (name, page): (&str, &str),
    width: u32,
    charts: &[(&str, u64)],
) -> Value {
    let v = inspect(chromium, name, page, width);
    let errors = v["errors"].as_array().unwrap();
    assert!(errors.is_empty(), "errors in the page: {errors:?}");
    assert_eq!(
        v["resources"].as_array().unwrap().len(),
        0,
        "the page fetched something"
    );
    let viewport = v["viewport"].as_f64().unwrap();
    assert_eq!(viewport, f64::from(width), "laid out at the wrong width");
    let page_width = v["page_width"].as_f64().unwrap();
    assert!(
        page_width <= viewport,
        "the page is wider ({page_width}) than the window ({viewport}): something does not wrap or scroll"
    );
    let drawn = v["charts"].as_array().unwrap();
    assert_eq!(drawn.len(), charts.len(), "{drawn:?}");
    for (c, &(name, min_points)) in drawn.iter().zip(charts) {
        assert_eq!(c["name"], name);
        assert_eq!(c["svg"], true, "{name} has no SVG");
        assert!(c["width"].as_f64().unwrap() > 200.0, "{name}: {c}");
        assert!(c["height"].as_f64().unwrap() > 100.0, "{name}: {c}");
        assert!(
            c["texts"].as_u64().unwrap() >= 8,
            "{name}: labels not rendered: {c}"
        );
        assert!(
            c["max_points"].as_u64().unwrap() >= min_points,
            "{name}: too few points: {c}"
        );
        assert!(
            c["inside"].as_u64().unwrap() >= min_points,
            "{name}: points off the drawing: {c}"
        );
    }
    v
}

/// `n` SVG chart files, and a PNG of each (Chromium needs fonts, so they are installed here):
/// a PNG file with the SVG's size doubled, not blank.
fn assert_chart_files(files: &[PathBuf], n: usize) {
    let with = |ext: &str| -> Vec<&PathBuf> {
        files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect()
    };
    assert_eq!(with("svg").len(), n, "{files:?}");
    let pngs = with("png");
    assert_eq!(pngs.len(), n, "{files:?}");
    for png in pngs {
        let bytes = std::fs::read(png).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{}", png.display());
        let size = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!((size(16), size(20)), (1600, 840), "{}", png.display());
        assert!(bytes.len() > 20_000, "{} looks blank", png.display());
    }
}

fn table_rows(v: &Value, class: &str) -> u64 {
    let tables = v["tables"].as_array().unwrap();
    let t = tables.iter().find(|t| t["cls"] == class);
    t.unwrap_or_else(|| panic!("no table {class} in {tables:?}"))["rows"]
        .as_u64()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Deterministic results

/// Uniform numbers in [0, 1) from a fixed LCG.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn host() -> HostInfo {
    HostInfo {
        hostname: "bench-1".into(),
        os: "Debian GNU/Linux 12 (bookworm)".into(),
        arch: "x86_64".into(),
        kernel: "6.1.0".into(),
        cpu_model: "AMD EPYC 7B13".into(),
        cores: 2,
        host_cores: 2,
    }
}

fn open_config(rate: f64, seconds: u64) -> RunConfig {
    RunConfig {
        url: "http://127.0.0.1:8080/api/items?page=2&size=50".into(),
        address: "127.0.0.1:8080".into(),
        method: "GET".into(),
        headers: vec!["Accept: application/json".into()],
        body_bytes: 0,
        connections: 1_000,
        threads: 2,
        send_window_us: Some(1000),
        duration_ms: Some(seconds * 1_000),
        requests: None,
        warmup_ms: 2_000,
        keepalive: true,
        timeout_ms: 2_000,
        connect_timeout_ms: 1_000,
        source_addrs: vec![],
        tls: None,
        unix_socket: None,
        connect_to: vec![],
        http2_streams: None,
        pipeline: 1,
        ws_match: None,
        percentiles: vec![50.0, 90.0, 99.0, 99.9, 99.99],
        load: LoadShape::Open {
            schedule: vec![RateSegment {
                duration_ms: seconds * 1_000,
                from_rate: rate,
                to_rate: rate,
            }],
            max_connections: 1_000,
        },
        values: None,
    }
}

/// A 30 s open-model run at 1000 req/s with a stall from second 19 to 22: late sends, errors,
/// 503s and a latency tail that service time does not show.
fn open_run() -> RunResult {
    let mut rng = Lcg(7);
    let mut s = Stats {
        elapsed_us: 30_000_000,
        scheduled: Some(30_000),
        ..Stats::default()
    };
    let mut points = Vec::new();
    for second in 0..30u32 {
        let stalled = (19..=22).contains(&second);
        let errors = if stalled { 25 } else { 0 };
        let sent = if stalled { 940 } else { 1_000 };
        let mut hist = Histo::new();
        for _ in 0..sent - errors {
            let service = 1_500_000 + (rng.next().powi(4) * 9e6) as u64;
            let lag = if stalled {
                (rng.next() * 180e6) as u64
            } else {
                (rng.next() * 40e3) as u64
            };
            hist.record_ns(service + lag);
            s.service.hist.record_ns(service);
            s.send_lag.hist.record_ns(lag);
            s.first_byte.hist.record_ns(service * 9 / 10);
        }
        s.latency.hist.merge(&hist);
        let counts = SecondCounts {
            requests: sent - errors,
            errors,
            sent,
            bytes_read: (sent - errors) * 230,
            bytes_written: sent * 90,
            failed: 0,
        };
        let mut p = SeriesPoint::new(second, counts, &hist);
        p.target = Some(1_000);
        s.requests += counts.requests;
        s.sent += sent;
        s.bytes_read += counts.bytes_read;
        s.bytes_written += counts.bytes_written;
        points.push(p);
    }
    for _ in 0..40 {
        s.connect
            .hist
            .record_ns(60_000 + (rng.next() * 200e3) as u64);
    }
    s.connections_opened = 40;
    s.sent_late = 3_120;
    s.errors.add(ErrorKind::ReadTimeout, 70);
    s.errors.add(ErrorKind::Reset, 30);
    s.status.add(200, s.requests - 12);
    s.status.add(503, 12);
    s.series = Series(points);
    finalized_run(
        open_config(1_000.0, 30),
        s,
        ["2026-11-22T10:00:02Z", "2026-11-22T10:00:32Z"],
    )
}

/// A run result of the test host with `config` and `stats`, started and ended at `times`, its
/// summary computed.
fn finalized_run(config: RunConfig, stats: Stats, times: [&str; 2]) -> RunResult {
    let mut r = RunResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::Run,
        loadbench_version: "0.1.0".into(),
        host: host(),
        config,
        started_at: times[0].into(),
        ended_at: times[1].into(),
        interrupted: false,
        shards: None,
        summary: None,
        stats,
        evidence: None,
        why: Default::default(),
        gates: None,
        remote_write: None,
    };
    r.finalize();
    r
}

/// One find-max step against a target whose capacity is about 3400 req/s.
fn step(n: u32, phase: SearchPhase, rate: f64, slo: &Slo) -> FindMaxStep {
    let mut rng = Lcg(u64::from(n));
    let load = rate / 3_400.0;
    let mut latency = Latency::default();
    let samples = (rate as u64).min(5_000);
    for _ in 0..samples {
        let queueing = if load < 1.0 {
            1.0 / (1.0 - load)
        } else {
            400.0
        };
        let ns = 800_000.0 + rng.next().powi(6) * 4e6 * queueing + rng.next() * 2e5;
        latency.hist.record_ns(ns as u64);
    }
    let achieved = if load > 1.0 {
        rate * 0.97
    } else {
        rate * 0.999
    };
    let stats = Stats {
        elapsed_us: 10_000_000,
        requests: samples,
        sent: samples,
        latency,
        ..Stats::default()
    };
    let run = finalized_run(
        open_config(rate, 10),
        stats,
        ["2026-11-22T10:00:00Z", "2026-11-22T10:00:10Z"],
    );
    let hist = &run.stats.latency.hist;
    let (slo_values, broken) = judge(slo, hist);
    let pass = broken.is_empty();
    FindMaxStep {
        step: n,
        phase,
        target_rate: rate,
        achieved_rate: rate * 0.999,
        completed_rate: achieved,
        p50_us: SloStat::Percentile { percentile: 50.0 }.measure_us(hist),
        p99_us: SloStat::Percentile { percentile: 99.0 }.measure_us(hist),
        slo_values,
        error_share: 0.0,
        generator_cpu_share: Some(0.2 + 0.15 * load.min(1.0)),
        verdict: if pass { Verdict::Pass } else { Verdict::Fail },
        reason: (!pass).then_some(FailReason::Slo),
        detail: broken.join("; "),
        recovery: None,
        run,
    }
}

/// Each SLO condition measured on `hist`, and the broken ones as the step's detail words them
/// (`p99 23.4ms >= 20ms`).
fn judge(slo: &Slo, hist: &Histo) -> (Vec<SloValue>, Vec<String>) {
    let slo_values: Vec<SloValue> = slo
        .conditions
        .iter()
        .map(|c| {
            let value = c.stat.measure_us(hist);
            SloValue {
                condition: c.text.clone(),
                value_us: value,
                ok: value.is_some_and(|v| c.holds(v)),
            }
        })
        .collect();
    let broken: Vec<String> = slo
        .conditions
        .iter()
        .zip(&slo_values)
        .filter(|(_, v)| !v.ok)
        .map(|(c, v)| {
            let value = v.value_us.unwrap_or(0.0) / 1e3;
            format!("{} {value:.1}ms >= {}ms", c.stat.label(), c.limit_us / 1e3)
        })
        .collect();
    (slo_values, broken)
}

/// The SLO of the find-max search: `p99<20ms,p99.9<50ms`.
fn find_max_slo() -> Slo {
    Slo {
        text: "p99<20ms,p99.9<50ms".into(),
        conditions: vec![
            SloCondition {
                text: "p99<20ms".into(),
                stat: SloStat::Percentile { percentile: 99.0 },
                op: SloOp::Lt,
                limit_us: 20_000.0,
            },
            SloCondition {
                text: "p99.9<50ms".into(),
                stat: SloStat::Percentile { percentile: 99.9 },
                op: SloOp::Lt,
                limit_us: 50_000.0,
            },
        ],
    }
}

fn find_max() -> FindMaxResult {
    let slo = find_max_slo();
    let rates = [
        (SearchPhase::Exponential, 500.0),
        (SearchPhase::Exponential, 1_000.0),
        (SearchPhase::Exponential, 2_000.0),
        (SearchPhase::Exponential, 4_000.0),
        (SearchPhase::Bisect, 3_000.0),
        (SearchPhase::Bisect, 3_500.0),
        (SearchPhase::Bisect, 3_250.0),
    ];
    let steps: Vec<FindMaxStep> = rates
        .iter()
        .enumerate()
        .map(|(i, &(phase, rate))| step(i as u32 + 1, phase, rate, &slo))
        .collect();
    let max_rate = steps
        .iter()
        .filter(|s| s.verdict == Verdict::Pass)
        .map(|s| s.target_rate)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let lowest_fail = steps
        .iter()
        .filter(|s| s.verdict == Verdict::Fail)
        .map(|s| s.target_rate)
        .fold(f64::INFINITY, f64::min);
    let precision_reached = max_rate.map(|max| (lowest_fail - max) / max);
    FindMaxResult {
        schema_version: SCHEMA_VERSION,
        kind: ResultKind::FindMax,
        loadbench_version: "0.1.0".into(),
        host: host(),
        url: "http://127.0.0.1:8080/api/items?page=2&size=50".into(),
        slo,
        max_error_share: 0.001,
        search: SearchParams {
            start_rate: 500.0,
            max_rate: 100_000.0,
            precision: 0.1,
            max_steps: 7,
            step_duration_ms: 10_000,
            warmup_ms: 2_000,
            threads: 2,
            recovery_timeout_ms: 60_000,
        },
        started_at: "2026-11-22T10:00:00Z".into(),
        ended_at: "2026-11-22T10:01:30Z".into(),
        interrupted: false,
        steps,
        max_rate,
        precision_reached,
        stop_reason: Some(StopReason::MaxSteps),
        baseline_us: None,
        no_rate: None,
        remote_write: None,
    }
}

// ---------------------------------------------------------------------------------------------
// The tests

/// Spectrum samples, one point per second for 30 s, one per second again.
const RUN_CHARTS: [(&str, u64); 3] = [
    ("latency-spectrum", 200),
    ("rate-over-time", 30),
    ("latency-over-time", 30),
];

#[test]
fn run_page_renders_every_chart_and_table_at_laptop_and_phone_width() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let result = open_run();
    let page = render_to_string(Format::Html, &result, &RenderOptions::default());
    let path = save("run", &page);
    let files = html::write_chart_files(&result, &artifacts()).unwrap();
    assert_chart_files(&files, 3);
    for (width, shot) in [(LAPTOP, "run-laptop.png"), (PHONE, "run-phone.png")] {
        let v = check_page(&chromium, ("run", &page), width, &RUN_CHARTS);
        assert_eq!(
            table_rows(&v, "percentiles"),
            1 + 7,
            "header + the default percentiles"
        );
        assert_eq!(table_rows(&v, "phases"), 1 + 5);
        assert!(table_rows(&v, "kv") >= 10);
        let alerts: Vec<&str> = v["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            alerts.contains(&"alert error") && alerts.contains(&"alert warn"),
            "{alerts:?}"
        );
        let height = v["page_height"].as_f64().unwrap() as u32;
        screenshot(&chromium, &path, width, height, shot);
    }
}

/// A run whose "why" section names an overflowing accept queue with its fix.
fn run_with_why() -> RunResult {
    let mut r = open_run();
    let finding = loadbench_model::Finding {
        kind: loadbench_model::FindingKind::AcceptQueueOverflow,
        strength: 0.9,
        text:
            "accept queue overflowed 12,400 times (backlog 128, queue peak 129): connects waited \
               for SYN retries (1 s, then 3 s); the slowest connect took 3.0 s"
                .into(),
        fix: Some("raise the server's listen backlog and net.core.somaxconn".into()),
        figures: [("backlog".to_string(), 128.0)].into_iter().collect(),
    };
    r.why = loadbench_model::Why::new(vec![finding], vec!["listen queues".into()]);
    r
}

#[test]
fn the_why_section_reads_in_the_browser_at_laptop_and_phone_width() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let page = render_to_string(Format::Html, &run_with_why(), &RenderOptions::default());
    let path = save("run-why", &page);
    for (width, shot) in [(LAPTOP, "run-why-laptop.png"), (PHONE, "run-why-phone.png")] {
        let v = check_page(&chromium, ("run-why", &page), width, &RUN_CHARTS);
        let text = v["text"].as_str().unwrap();
        assert!(text.contains("Why\n"), "{text}");
        assert!(
            text.contains("accept queue overflowed 12,400 times (backlog 128, queue peak 129)"),
            "{text}"
        );
        assert!(text.contains("— raise the server's listen backlog and net.core.somaxconn"));
        let height = v["page_height"].as_f64().unwrap() as u32;
        screenshot(&chromium, &path, width, height, shot);
    }
}

/// 32 connections for 4 s against a server that serves 8 at once, 50 ms per request: 8 of
/// them completed 80 requests each, 24 waited the whole run.
fn starved_run() -> RunResult {
    let mut r = open_run();
    r.config.load = LoadShape::Closed {
        connections: r.config.connections,
    };
    r.config.connections = 32;
    let mut s = Stats {
        elapsed_us: 4_000_000,
        requests: 640,
        abandoned: 32,
        ..Stats::default()
    };
    for _ in 0..640 {
        s.latency.hist.record_ns(50_400_000);
        s.service.hist.record_ns(50_400_000);
    }
    s.status.add(200, 640);
    s.latency_censored = s.latency.clone();
    for conn in 0..32 {
        let (completed, age_us) = if conn < 8 {
            (80, 20_000)
        } else {
            (0, 4_000_000)
        };
        s.per_connection.add(completed, Some(age_us));
        s.latency_censored.hist.record_ns(age_us * 1_000);
    }
    r.stats = s;
    r.finalize();
    r
}

#[test]
fn starved_connections_show_in_the_browser_with_the_censored_lower_bound() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let page = render_to_string(Format::Html, &starved_run(), &RenderOptions::default());
    save("starved", &page);
    let v = inspect(&chromium, "starved", &page, LAPTOP);
    let shown = v["text"].as_str().unwrap();
    assert!(
        shown.contains("24 of 32 connections got no response in 4.00s")
            && shown.contains("serves at most 8 connections at once"),
        "{shown}"
    );
    assert!(shown.contains("Incl. in flight (lower bound)"), "{shown}");
    assert!(
        shown.contains("including the 32 requests still in flight"),
        "{shown}"
    );
    // p99 of completed requests is 50 ms; with the 24 starved ones at 4 s it reads in seconds.
    let p99 = shown
        .lines()
        .find(|l| l.starts_with("99%\t"))
        .unwrap_or_else(|| panic!("no 99% row: {shown}"));
    assert!(p99.contains("50.") && p99.contains("≥ 4.00s"), "{p99:?}");
    let alerts: Vec<&str> = v["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(alerts.contains(&"alert error"), "{alerts:?}");
}

#[test]
fn saved_v1_result_renders_in_the_browser() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/tests/fixtures/result-v2.json");
    let result = RunResult::from_json(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let page = render_to_string(Format::Html, &result, &RenderOptions::default());
    save("result-v1", &page);
    // One second of series: one point per per-second chart.
    let v = check_page(
        &chromium,
        ("result-v1", &page),
        LAPTOP,
        &[
            ("latency-spectrum", 200),
            ("rate-over-time", 1),
            ("latency-over-time", 1),
        ],
    );
    assert!(table_rows(&v, "counts") >= 2);
}

#[test]
fn find_max_page_renders_steps_and_charts_with_the_slo_lines() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let result = find_max();
    let page = html::render_find_max(&result, &RenderOptions::default());
    assert!(page.contains("SLO p99&lt;20ms"), "the SLO line is labelled");
    let path = save("find-max", &page);
    let files = html::write_find_max_chart_files(&result, &artifacts()).unwrap();
    assert_chart_files(&files, 2);
    let charts = [("find-max-rate", 7), ("find-max-latency", 7)];
    for (width, shot) in [
        (LAPTOP, "find-max-laptop.png"),
        (PHONE, "find-max-phone.png"),
    ] {
        let v = check_page(&chromium, ("find-max", &page), width, &charts);
        assert_eq!(table_rows(&v, "steps"), 1 + 7);
        let height = v["page_height"].as_f64().unwrap() as u32;
        screenshot(&chromium, &path, width, height, shot);
    }
}

/// The bench fixture the CLI tests use (crates/cli/tests/fixtures/bench-base.json, written from
/// the report crate's fixture): 3 targets, a closed load at 2 levels, 3 rounds, one of them
/// generator-bound, and the resource series of the whole run.
fn bench() -> BenchResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures/bench-base.json");
    BenchResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every chart's title lies inside its drawing as shown (none clipped at either side).
fn titles_fit(v: &Value, width: u32) {
    for c in v["charts"].as_array().unwrap() {
        assert_eq!(
            c["title_inside"], true,
            "at {width}px a chart title is clipped: {c}"
        );
    }
}

/// The bench summary table shows every column without a horizontal scroll.
fn summary_table_fits(v: &Value, width: u32) {
    let tables = v["tables"].as_array().unwrap();
    let t = tables.iter().find(|t| t["cls"] == "bench").unwrap();
    let (scroll, client) = (
        t["scroll_width"].as_f64().unwrap(),
        t["client_width"].as_f64().unwrap(),
    );
    assert!(
        scroll <= client,
        "at {width}px the summary table scrolls ({scroll} > {client}): {t}"
    );
    let heads = t["headers"].as_array().unwrap();
    assert!(heads.len() >= 10, "{t}");
    for h in heads {
        assert_eq!(
            h["visible"], true,
            "at {width}px a column header is hidden: {h}"
        );
    }
}

#[test]
fn bench_page_fits_a_laptop_without_scrolling_and_titles_fit_a_phone() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let page = html::render_bench(&bench());
    let v = inspect(&chromium, "bench-fit", &page, 1280);
    summary_table_fits(&v, 1280);
    titles_fit(&v, 1280);
    titles_fit(&inspect(&chromium, "bench-fit", &page, PHONE), PHONE);
}

#[test]
fn bench_page_renders_the_summary_and_every_chart_at_laptop_and_phone_width() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let result = bench();
    let page = html::render_bench(&result);
    let path = save("bench", &page);
    let files = html::write_bench_chart_files(&result, &artifacts()).unwrap();
    assert_chart_files(&files, 5);
    // Bars carry their figures as rectangles, and their confidence intervals as 2-point strokes;
    // the resource charts have a point per sample (216).
    let charts = [
        ("bench-rps-closed", 2),
        ("bench-latency-closed-1", 4),
        ("bench-latency-closed-2", 4),
        ("bench-cpu", 216),
        ("bench-rss", 216),
    ];
    for (width, shot) in [(LAPTOP, "bench-laptop.png"), (PHONE, "bench-phone.png")] {
        let v = check_page(&chromium, ("bench", &page), width, &charts);
        assert_eq!(
            table_rows(&v, "bench"),
            1 + 6,
            "header + 3 targets × 2 levels"
        );
        assert!(table_rows(&v, "kv") >= 6);
        let drawn = v["charts"].as_array().unwrap();
        // Background, plot area and one bar per target × level at least.
        assert!(drawn[0]["rects"].as_u64().unwrap() >= 6, "{}", drawn[0]);
        for resource in &drawn[3..] {
            // 18 shaded steps behind the lines.
            assert!(resource["rects"].as_u64().unwrap() >= 18, "{resource}");
        }
        let alerts: Vec<&str> = v["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            alerts.contains(&"alert error") && alerts.contains(&"alert warn"),
            "{alerts:?}"
        );
        let height = v["page_height"].as_f64().unwrap() as u32;
        screenshot(&chromium, &path, width, height, shot);
    }
}

/// At phone width every table fits the window: it is as narrow as the page, or wider and then
/// scrolls sideways inside its own box, which itself lies within the window.
fn tables_fit(v: &Value, width: u32) {
    let tables = v["tables"].as_array().unwrap();
    assert!(!tables.is_empty());
    for t in tables {
        let (left, right) = (
            t["wrap_left"].as_f64().unwrap(),
            t["wrap_right"].as_f64().unwrap(),
        );
        assert!(
            left >= -0.5 && right <= f64::from(width) + 0.5,
            "at {width}px a table's box sticks out of the window: {t}"
        );
        let (scroll, client) = (
            t["scroll_width"].as_f64().unwrap(),
            t["client_width"].as_f64().unwrap(),
        );
        let own_scroll = matches!(t["wrap_overflow_x"].as_str(), Some("auto" | "scroll"));
        assert!(
            scroll <= client || own_scroll,
            "at {width}px a table is wider than its box and the box does not scroll: {t}"
        );
    }
}

/// Every chart's title is clear of the chart's other labels.
fn titles_clear(v: &Value, width: u32) {
    for c in v["charts"].as_array().unwrap() {
        let overlaps = c["title_overlaps"].as_array();
        assert!(
            overlaps.is_some_and(Vec::is_empty),
            "at {width}px a label overlaps a chart title: {c}"
        );
    }
}

/// Issue 16 point 1, on a phone: at 400 px the run, find-max and bench pages (3 targets) never
/// scroll sideways as a whole, every table fits or scrolls in its own box, and no chart title
/// is clipped or overlapped.
#[test]
fn every_page_stays_readable_on_a_400px_phone() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let opts = RenderOptions::default();
    let pages = [
        (
            "phone-run",
            render_to_string(Format::Html, &open_run(), &opts),
        ),
        ("phone-find-max", html::render_find_max(&find_max(), &opts)),
        ("phone-bench", html::render_bench(&bench())),
    ];
    for (name, page) in &pages {
        let v = inspect(&chromium, name, page, PHONE);
        assert_eq!(v["viewport"].as_f64(), Some(f64::from(PHONE)), "{name}");
        let page_width = v["page_width"].as_f64().unwrap();
        assert!(
            page_width <= f64::from(PHONE),
            "{name}: the page scrolls sideways ({page_width}px)"
        );
        tables_fit(&v, PHONE);
        titles_fit(&v, PHONE);
        titles_clear(&v, PHONE);
    }
}

/// A real sweep (crates/cli/tests/fixtures/bench-pool.json): the reference backend with 20
/// slots of 100 ms over 5 to 80 connections, with its queueing view.
fn bench_pool() -> BenchResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures/bench-pool.json");
    BenchResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_sweep_shows_its_queueing_table_findings_and_fit_chart_in_the_browser() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let result = bench_pool();
    let a = result.queueing_of(0, "backend").unwrap();
    let page = html::render_bench(&result);
    let path = save("bench-pool", &page);
    // The fit's curve is dashed (short strokes); the measured levels are dots.
    let mut charts = vec![("bench-rps-sweep", 1), ("bench-usl-sweep", 2)];
    let latency: Vec<String> = (1..=5)
        .map(|l| format!("bench-latency-sweep-{l}"))
        .collect();
    charts.extend(latency.iter().map(|n| (n.as_str(), 4)));
    charts.extend([("bench-cpu", 5), ("bench-rss", 5)]);
    for (width, shot) in [
        (LAPTOP, "bench-pool-laptop.png"),
        (PHONE, "bench-pool-phone.png"),
    ] {
        let v = check_page(&chromium, ("bench-pool", &page), width, &charts);
        assert_eq!(table_rows(&v, "queueing"), 1 + a.levels.len() as u64);
        let usl = &v["charts"][1];
        assert!(
            usl["circles"].as_u64().unwrap() >= a.levels.len() as u64,
            "{usl}"
        );
        assert!(
            usl["polylines"].as_u64().unwrap() >= 10,
            "a dashed curve: {usl}"
        );
        tables_fit(&v, width);
        let height = v["page_height"].as_f64().unwrap() as u32;
        screenshot(&chromium, &path, width, height, shot);
    }
    assert!(a.findings.len() >= 2, "{a:?}");
}

/// The bench fixture as a busy host and an 8-connection server would leave it: every round
/// starved (24 of 32 connections got no response), its why naming the connection limit, and a
/// busy host found in every step.
fn bench_busy_and_starved() -> BenchResult {
    use loadbench_model::{Finding, FindingKind, PerConnection, Why};
    let mut r = bench();
    let finding = |kind, strength, text: &str, fix: &str| Finding {
        kind,
        strength,
        text: text.to_string(),
        fix: Some(fix.to_string()),
        figures: Default::default(),
    };
    for round in &mut r.rounds {
        if let Some(run) = round.result.as_mut() {
            let elapsed = run.stats.elapsed_us;
            let mut c = PerConnection::default();
            (0..8).for_each(|_| c.add(80, Some(10)));
            (0..24).for_each(|_| c.add(0, Some(elapsed)));
            run.stats.per_connection = c;
        }
        round.why = Why::new(
            vec![
                finding(
                    FindingKind::BusyHost,
                    0.95,
                    "other processes used 1.90 of the host's 2 cores: every figure is unreliable",
                    "run on a quiet host",
                ),
                finding(
                    FindingKind::ConnectionLimit,
                    0.9,
                    "the target serves about 8 connections at once: 24 of 32 got no response in 10.00s while 8 were served, and by Little's law 160 req/s × 50.00ms mean = 8.0 requests in service",
                    "raise the target's connection or worker limit to the 32 connections it gets, or send at most 8 at once: the others only wait",
                ),
            ],
            vec![],
        );
    }
    r.recompute();
    r
}

#[test]
fn at_1280_by_800_the_why_section_shows_first_the_busy_host_once_and_the_summary_never_scrolls() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let r = bench_busy_and_starved();
    let page = html::render_bench(&r);
    let v = inspect(&chromium, "bench-why-first", &page, 1280);
    // The first finding of the why section lies within the first 800 pixels: seen on opening.
    let why = &v["why"];
    let bottom = why["first_bottom"]
        .as_f64()
        .expect("a finding in the why section");
    assert!(
        bottom <= 800.0,
        "the why section's first finding ends at {bottom}px: {why}"
    );
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains("the target serves about 8 connections at once"),
        "{text}"
    );
    // The busy host is said once, at the top, however many steps found it.
    assert_eq!(text.matches("other processes used").count(), 1, "{text}");
    assert!(
        text.contains(&format!("busy host in {0} of {0} steps", r.rounds.len())),
        "{text}"
    );
    // The summary table, long starved verdicts included, does not scroll sideways.
    summary_table_fits(&v, 1280);
    assert!(text.contains("serves at most 8 at once"), "{text}");
    let shot = save("bench-why-first", &page);
    screenshot(&chromium, &shot, 1280, 800, "bench-why-first-1280x800.png");
}

/// Issue 35 point 7: at 400 px no table cell reads a few characters per line (the run summary
/// once printed its values one character per line), the page never scrolls sideways, and the
/// bench summary keeps every column reachable: wrapped, or scrolled inside its own box, never
/// cut. Run pages with a long URL, a why section and starved connections; find-max; the bench
/// pages (3 targets, a busy host, a sweep).
#[test]
fn at_400px_no_value_breaks_per_character_and_every_bench_column_is_reachable() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let opts = RenderOptions::default();
    let mut long = open_run();
    long.config.url =
        "http://checkout.internal.example:8080/api/v2/orders/pending?include=lines,customer".into();
    let pages = [
        ("narrow-run", render_to_string(Format::Html, &long, &opts)),
        (
            "narrow-run-why",
            render_to_string(Format::Html, &run_with_why(), &opts),
        ),
        (
            "narrow-starved",
            render_to_string(Format::Html, &starved_run(), &opts),
        ),
        ("narrow-find-max", html::render_find_max(&find_max(), &opts)),
        ("narrow-bench", html::render_bench(&bench())),
        (
            "narrow-bench-busy",
            html::render_bench(&bench_busy_and_starved()),
        ),
        ("narrow-bench-pool", html::render_bench(&bench_pool())),
        (
            "narrow-bench-1-round",
            html::render_bench(&bench_one_round()),
        ),
    ];
    for (name, page) in &pages {
        let v = inspect(&chromium, name, page, PHONE);
        let page_width = v["page_width"].as_f64().unwrap();
        assert!(
            page_width <= f64::from(PHONE),
            "{name}: the page scrolls sideways ({page_width}px)"
        );
        let broken = v["cells"]["broken"].as_array().unwrap();
        assert!(
            broken.is_empty(),
            "{name}: at {PHONE}px these cells read a few characters per line: {broken:?}"
        );
        assert!(v["cells"]["max_lines"].as_u64().unwrap() >= 1, "{name}");
        tables_fit(&v, PHONE);
        bench_columns_reachable(name, &v);
        if name.starts_with("narrow-bench") {
            titles_fit(&v, PHONE);
            let tables = v["tables"].as_array().unwrap();
            assert!(
                tables.iter().any(|t| t["cls"] == "bench"),
                "{name}: no summary"
            );
        }
    }
}

/// Every column header of a bench summary ends within its box's scrollable width: shown, or
/// reached by scrolling the box sideways, never cut.
fn bench_columns_reachable(name: &str, v: &Value) {
    let tables = v["tables"].as_array().unwrap();
    for t in tables.iter().filter(|t| t["cls"] == "bench") {
        let heads = t["headers"].as_array().unwrap();
        assert!(heads.len() >= 10, "{name}: {t}");
        let reach = t["scroll_width"].as_f64().unwrap() + 0.5;
        for h in heads {
            assert!(
                h["end"].as_f64().unwrap() <= reach,
                "{name}: at {PHONE}px the column {} is cut: {t}",
                h["text"]
            );
        }
    }
}

/// The bench fixture from its first round only: every req/s interval is `n/a (1 round)`.
fn bench_one_round() -> BenchResult {
    let mut r = bench();
    r.rounds.retain(|x| x.round < 1);
    r.recompute();
    r
}

/// Issue 35 point 7: bars from one round draw no confidence interval in the browser (no
/// 2-point stroke over the bars, where the 3-round page has 3 per bar), and the page says n/a.
#[test]
fn bars_from_one_round_show_no_interval_in_the_browser() {
    let Some(chromium) = Chromium::find() else {
        return;
    };
    let strokes = |r: &BenchResult, name: &str, width: u32| {
        let v = inspect(&chromium, name, &html::render_bench(r), width);
        let rps = v["charts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("bench-rps"))
            })
            .cloned()
            .unwrap();
        (
            rps["polylines"].as_u64().unwrap(),
            v["text"].as_str().unwrap().to_string(),
        )
    };
    for width in [LAPTOP, PHONE] {
        let (three, _) = strokes(&bench(), "bench-ci-3", width);
        let (one, text) = strokes(&bench_one_round(), "bench-ci-1", width);
        // 3 targets × 2 levels, each an interval and two caps.
        assert_eq!(three - one, 6 * 3, "at {width}px: {three} strokes vs {one}");
        assert!(text.contains("n/a (1 round)"), "{text}");
    }
}
