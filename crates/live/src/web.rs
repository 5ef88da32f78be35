//! The live web page of `run`, `find-max` and `bench` (`--live-web [ADDR]`): the HTML report
//! itself, served while the command goes. There is one page and one renderer: while a load runs,
//! the page is the report renderer's page of a partial result built from the engine's pulses
//! (the seconds closed so far and the latest counters), sent with an HTTP `Refresh: 1` header so
//! the browser loads it again every second; once the command is done, it is the final report,
//! the bytes `--html` writes, sent without that header, so the browser stops there.
//!
//! Every page carries a status block at the top of `<main>`, between `<!-- live -->` and
//! `<!-- /live -->` (cut those out and the final page is the `--html` file byte for byte): what
//! runs ([`Heading`]: the target's name and the bench step, also the page's title), whether it
//! is live and how far along (`running, 11.8 s of 20 s`, `warming up`, `between steps: starting
//! the next step`, `finished`), the connections open now, and for a flow or a request mix each
//! step's or request's counts and the flow's iterations ([`crate::endpoints`]). Until a load has closed its first
//! second (a step starting, a warm-up) the page is that block alone, never a report of nothing
//! with its "No response completed" error. The page's Content-Security-Policy (no script, no
//! fetch) stays as it is.
//!
//! A plain `std::net` server on its own thread answers one connection at a time; a page is
//! rendered at most once per [`REFRESH`], whatever the number of requests, and never in the
//! engine. Loopback only unless `--live-web-public` is given.

use crate::endpoints::Endpoints;
use crate::heading::Heading;
use loadbench_engine::Pulse;
use loadbench_model::{
    FlowStats, Histo, Latency, RunResult, SavedResult, Series, SeriesPoint, Stats,
};
use loadbench_plan::{Plan, Stop};
use loadbench_report::{Format, RenderOptions};
use loadbench_runner::Live;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How often a live page is rendered at most, and how often the browser reloads it.
const REFRESH: Duration = Duration::from_secs(1);
/// After the run, how long the process waits for a browser that showed a live page to load the
/// final one (it exits as soon as one has).
const LINGER: Duration = Duration::from_secs(5);
/// How long one connection may take to send its request or read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// A listening live page; [`LiveWeb::finish`] turns it into the final report.
pub struct LiveWeb {
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    opts: RenderOptions,
    /// `run`, `find-max`, `bench`.
    command: String,
    page: Mutex<Page>,
    load: Mutex<Option<WebLoad>>,
    /// Live pages served so far.
    live_served: AtomicU64,
    /// The final page has been served at least once.
    final_served: AtomicBool,
}

#[derive(Default)]
struct Page {
    html: Option<String>,
    rendered: Option<Instant>,
    done: bool,
}

/// The load running (or the last one), as the page shows it.
struct WebLoad {
    heading: Heading,
    live: Option<Arc<Live>>,
    plan: Plan,
    endpoints: Option<Endpoints>,
    host: loadbench_model::HostInfo,
    started_at: SystemTime,
    started: Instant,
    ended: Option<Duration>,
    now: Pulse,
    series: Vec<SeriesPoint>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The address of `--live-web[=ADDR]`: IP:PORT or an IP alone (a free port); anything but
/// loopback only with `public`.
pub fn parse_addr(text: &str, public: bool) -> Result<SocketAddr, WebError> {
    let addr = text
        .parse::<SocketAddr>()
        .or_else(|_| text.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| {
            WebError(format!(
                "--live-web={text} is not an address: give IP:PORT such as 127.0.0.1:8089"
            ))
        })?;
    if !addr.ip().is_loopback() && !public {
        return Err(WebError(format!(
            "--live-web={text} is not a loopback address and the page shows the target's URL \
             and headers: add --live-web-public to serve it there"
        )));
    }
    Ok(addr)
}

/// A page that cannot be served as asked: one line naming the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WebError(String);

impl LiveWeb {
    /// Listens on `addr` and serves the page of `command` (`run`, `find-max`, `bench`) from a
    /// thread of its own; prints the URL on stderr (and a warning when the address is not
    /// loopback).
    pub fn start(
        addr: SocketAddr,
        opts: RenderOptions,
        command: &str,
    ) -> Result<Arc<LiveWeb>, WebError> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| WebError(format!("--live-web={addr}: cannot listen there: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| WebError(format!("--live-web={addr}: {e}")))?;
        let state = Arc::new(State {
            opts,
            command: command.to_string(),
            ..State::default()
        });
        let serving = Arc::clone(&state);
        std::thread::spawn(move || serve(&listener, &serving));
        let url = format!("http://{bound}/");
        if !bound.ip().is_loopback() {
            eprintln!(
                "warning: the live report at {url} can be reached from other hosts and shows \
                 the target's URL and headers"
            );
        }
        eprintln!("live report: {url}");
        Ok(Arc::new(LiveWeb { state }))
    }

    /// A load starts: the page follows its pulses from now on, under `heading` (in a bench:
    /// the target's name and the step; else the command and the URL).
    pub fn load_started(&self, live: &Arc<Live>, plan: &Plan, heading: Option<Heading>) {
        let heading =
            heading.unwrap_or_else(|| Heading::plain(&self.state.command, &plan.target.url));
        *lock(&self.state.load) = Some(WebLoad {
            heading,
            live: Some(Arc::clone(live)),
            plan: plan.clone(),
            endpoints: Endpoints::of(plan),
            host: loadbench_runner::host::detect(),
            started_at: SystemTime::now(),
            started: Instant::now(),
            ended: None,
            now: Pulse::default(),
            series: Vec::new(),
        });
        self.changed();
    }

    /// The next request renders the page again (a load started or ended).
    fn changed(&self) {
        lock(&self.state.page).rendered = None;
    }

    /// The load has ended: its last pulse is read and kept.
    pub fn load_finished(&self) {
        if let Some(load) = lock(&self.state.load).as_mut() {
            load.read();
            load.live = None;
            load.ended = Some(load.started.elapsed());
        }
        self.changed();
    }

    /// The command is done: from now on the page is `result`'s report, as `--html` writes it.
    pub fn finish(&self, result: &SavedResult) {
        let block = status_block(None, "finished", None, "");
        let html = render(result, &self.state.opts).map(|html| with_block(&html, None, &block));
        let mut page = lock(&self.state.page);
        page.html = html;
        page.done = true;
    }

    /// Waits (at most [`LINGER`]) until a browser that showed a live page has loaded the final
    /// one, so it ends on the final report; returns at once when no live page was served.
    pub fn linger(&self) {
        if self.state.live_served.load(Ordering::Relaxed) == 0 {
            return;
        }
        let until = Instant::now() + LINGER;
        while !self.state.final_served.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl WebLoad {
    /// The latest pulse into the counters and the closed seconds.
    fn read(&mut self) {
        if let Some(live) = &self.live {
            let mut pulse = live.pulse(self.series.len());
            self.series.append(&mut pulse.series);
            self.now = pulse;
        }
    }

    /// What was measured so far as a run result: the counters of the last pulse, the seconds
    /// closed so far, their latencies merged as the latency distribution.
    fn partial(&self) -> RunResult {
        let elapsed = self.ended.unwrap_or_else(|| self.started.elapsed());
        let mut hist = Histo::per_second();
        for p in &self.series {
            hist.merge(&Histo::from_base64_per_second(&p.hdr).unwrap_or_default());
        }
        let latency = Latency { hist };
        let stats = Stats {
            elapsed_us: elapsed.saturating_sub(self.plan.warmup).as_micros() as u64,
            requests: self.now.requests,
            sent: self.now.sent,
            errors: self.now.errors.clone(),
            status: self.now.status.clone(),
            grpc: self.now.grpc.clone(),
            bytes_read: self.series.iter().map(|p| p.bytes_read).sum(),
            bytes_written: self.series.iter().map(|p| p.bytes_written).sum(),
            // The connections open now were opened, at the least (a connect in a second not
            // closed yet is not in the series).
            connections_opened: self
                .series
                .iter()
                .map(|p| p.connects)
                .sum::<u64>()
                .max(self.now.open_connections),
            latency_censored: latency.clone(),
            latency,
            series: Series(self.series.clone()),
            // The iterations so far, so an open flow's target reads in iterations/s. Its
            // duration and the per-step table (whose latency the pulses do not carry) are
            // the final report's; the live block shows the steps' counts.
            flow: self.now.flow.map(|f| FlowStats {
                name: self
                    .endpoints
                    .as_ref()
                    .and_then(|e| e.flow.clone())
                    .unwrap_or_default(),
                steps: self.endpoints.as_ref().map_or(0, |e| e.labels.len() as u32),
                started: f.started,
                completed: f.completed,
                broken: f.broken,
                ..FlowStats::default()
            }),
            ..Stats::default()
        };
        let stamp = |t| humantime::format_rfc3339_millis(t).to_string();
        let mut r = RunResult {
            schema_version: loadbench_model::SCHEMA_VERSION,
            kind: loadbench_model::ResultKind::Run,
            loadbench_version: env!("CARGO_PKG_VERSION").to_string(),
            host: self.host.clone(),
            config: loadbench_runner::run_config(&self.plan),
            started_at: stamp(self.started_at),
            ended_at: stamp(SystemTime::now()),
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
}

/// `result`'s HTML report through the same entry point as `--html`.
fn render(result: &SavedResult, opts: &RenderOptions) -> Option<String> {
    loadbench_report::render(result, Format::Html, opts)
        .ok()
        .map(|r| r.text)
}

/// Accepts connections until the process exits.
fn serve(listener: &TcpListener, state: &State) {
    for stream in listener.incoming().flatten() {
        let _ = answer(stream, state);
    }
}

/// Reads one request and answers it.
fn answer(mut stream: TcpStream, state: &State) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let line = head.lines().next().unwrap_or_default();
    let mut words = line.split(' ');
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let response = match (method, path) {
        ("GET" | "HEAD", "/" | "/index.html") => page_response(state),
        ("GET" | "HEAD", _) => response("404 Not Found", "text/plain", "not found\n", false),
        _ => response("405 Method Not Allowed", "text/plain", "GET only\n", false),
    };
    stream.write_all(&response.head)?;
    if method != "HEAD" {
        stream.write_all(&response.body)?;
    }
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Write)?;
    // Only once it is all sent: the process may exit as soon as this is set.
    if response.done {
        state.final_served.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// The request head, up to the blank line (or [`MAX_HEAD`] bytes).
fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < MAX_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

struct Response {
    head: Vec<u8>,
    body: Vec<u8>,
    /// The final page.
    done: bool,
}

fn response(status: &str, kind: &str, body: &str, refresh: bool) -> Response {
    let refresh = if refresh { "Refresh: 1\r\n" } else { "" };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\n{refresh}Connection: close\r\n\r\n",
        body.len()
    );
    Response {
        head: head.into_bytes(),
        body: body.as_bytes().to_vec(),
        done: false,
    }
}

/// The page as it is now: final, live (refreshing), or a note that no load has started yet.
fn page_response(state: &State) -> Response {
    let (html, done) = current_page(state);
    match (html, done) {
        (Some(html), true) => Response {
            done: true,
            ..response("200 OK", "text/html", &html, false)
        },
        (Some(html), false) => {
            state.live_served.fetch_add(1, Ordering::Relaxed);
            response("200 OK", "text/html", &html, true)
        }
        (None, _) => response(
            "500 Internal Server Error",
            "text/plain",
            "the report could not be rendered\n",
            false,
        ),
    }
}

/// The final page, or the live one rendered again when the last is older than [`REFRESH`] (or
/// a load has started or ended since).
fn current_page(state: &State) -> (Option<String>, bool) {
    let mut page = lock(&state.page);
    let stale = page.rendered.is_none_or(|t| t.elapsed() >= REFRESH);
    if !page.done && stale {
        let html = match lock(&state.load).as_mut() {
            Some(l) => {
                l.read();
                live_page(l, &state.command, &state.opts)
            }
            None => {
                let title = format!("loadbench {}", state.command);
                let block = status_block(None, "starting: no load has started yet", None, "");
                bare_page(&title, &block, "")
            }
        };
        page.html = Some(html);
        page.rendered = Some(Instant::now());
    }
    (page.html.clone(), page.done)
}

/// The page of a load running or just ended: its partial report under the status block, or
/// the block alone while no second of it has closed.
fn live_page(l: &WebLoad, command: &str, opts: &RenderOptions) -> String {
    let block = status_block(
        Some(&l.heading),
        &l.status(command),
        Some(&l.now),
        &l.endpoints_html(),
    );
    let title = l.heading.text();
    let empty = "No second of this load has closed yet: its figures appear here when the \
                 first one does.";
    if l.series.is_empty() {
        return bare_page(&title, &block, empty);
    }
    match render(&SavedResult::from(l.partial()), opts) {
        Some(html) => with_block(&html, Some(&l.heading), &block),
        None => bare_page(&title, &block, empty),
    }
}

impl WebLoad {
    /// Time into the measured window (none while warming up).
    fn measured(&self) -> Duration {
        let elapsed = self.ended.unwrap_or_else(|| self.started.elapsed());
        elapsed.saturating_sub(self.plan.warmup)
    }

    /// A flow's line and the table of its steps (or a mix's requests): counts, rate over the
    /// measured time, errors; empty for a single-request load.
    fn endpoints_html(&self) -> String {
        let Some(e) = &self.endpoints else {
            return String::new();
        };
        let measured = self.measured();
        let mut html = String::new();
        if let Some(line) = e.flow_line(&self.now, measured) {
            html += &format!("<p id=\"live-flow\">{}</p>\n", esc(&line));
        }
        let cell = "style=\"padding:1px 10px;text-align:right\"";
        let label = "style=\"padding:1px 10px;text-align:left\"";
        html += &format!(
            "<table id=\"live-endpoints\" style=\"border-collapse:collapse;margin:4px 0\">\n\
             <caption style=\"text-align:left\">{}</caption>\n<tr><th {label}>{}</th>\
             <th {cell}>requests</th><th {cell}>req/s</th><th {cell}>errors</th></tr>\n",
            esc(&e.title()),
            e.unit()
        );
        for r in e.rows(&self.now, measured) {
            html += &format!(
                "<tr><td {label}>{}</td><td {cell}>{}</td><td {cell}>{}</td><td {cell}>{}</td></tr>\n",
                esc(&r.label),
                r.requests,
                loadbench_model::human::rate(r.per_sec),
                r.errors
            );
        }
        html + "</table>\n"
    }

    /// `running, 11.8 s of 20 s`, `running: warming up, 0.4 s of 2 s`, `between steps: …`.
    fn status(&self, command: &str) -> String {
        if self.ended.is_some() {
            return match command {
                "run" => "finishing: the report follows".to_string(),
                _ => {
                    "between steps: this step has finished; starting the next step (or the report)"
                        .to_string()
                }
            };
        }
        let elapsed = self.started.elapsed();
        let warmup = self.plan.warmup;
        if elapsed < warmup {
            return format!("running: warming up, {} of {}", secs(elapsed), secs(warmup));
        }
        let measured = elapsed - warmup;
        match self.plan.stop {
            Stop::Duration(d) => format!("running, {} of {}", secs(measured.min(d)), secs(d)),
            Stop::Requests(n) => format!(
                "running, {} of {n} requests, {}",
                self.now.requests + self.now.errors.total(),
                secs(measured)
            ),
        }
    }
}

/// `11.8 s`, `20 s`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    match s.fract() == 0.0 {
        true => format!("{s:.0} s"),
        false => format!("{s:.1} s"),
    }
}

/// The block between the live markers: the status, the bench step, the connections open now,
/// then `endpoints` (HTML: a flow's or a mix's table, or nothing).
fn status_block(
    heading: Option<&Heading>,
    status: &str,
    now: Option<&Pulse>,
    endpoints: &str,
) -> String {
    let mut block = format!(
        "<!-- live -->\n<section id=\"live\" style=\"border:1px solid #b9c3cf;\
         background:#f4f6f8;border-radius:6px;padding:4px 12px;margin:8px 0\">\n\
         <p id=\"live-status\"><strong>{}</strong></p>\n",
        esc(status)
    );
    if let Some(step) = heading.and_then(|h| h.step.as_deref()) {
        block += &format!("<p id=\"live-step\">{}</p>\n", esc(step));
    }
    if let Some(now) = now {
        block += &format!(
            "<p id=\"live-connections\">open connections {} · {} responses so far</p>\n",
            now.open_connections, now.requests
        );
    }
    block + endpoints + "</section>\n<!-- /live -->\n"
}

/// A report page with the status `block` at the top of `<main>`; titled `heading` when given.
fn with_block(html: &str, heading: Option<&Heading>, block: &str) -> String {
    let mut html = html.to_string();
    if let Some(h) = heading {
        let text = esc(&h.text());
        replace_element(&mut html, "title", &text);
        replace_element(&mut html, "h1", &text);
    }
    let at = html
        .find("<main>\n")
        .map(|i| i + "<main>\n".len())
        .unwrap_or(0);
    html.insert_str(at, block);
    html
}

/// The first `<tag>…</tag>` gets `inner` as its content.
fn replace_element(html: &mut String, tag: &str, inner: &str) {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    if let Some(start) = html.find(&open).map(|i| i + open.len()) {
        if let Some(len) = html[start..].find(&close) {
            html.replace_range(start..start + len, inner);
        }
    }
}

/// A page of the status block alone (no load yet, or no second closed yet).
fn bare_page(title: &str, block: &str, note: &str) -> String {
    let note = match note.is_empty() {
        true => String::new(),
        false => format!("<p>{}</p>\n", esc(note)),
    };
    let title = esc(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n<title>{title}</title>\n</head>\n\
         <body style=\"font:15px/1.5 system-ui,sans-serif;margin:0\">\n\
         <main style=\"max-width:1100px;margin:0 auto;padding:16px 20px\">\n\
         <h1>{title}</h1>\n{block}{note}</main>\n</body>\n</html>\n"
    )
}

/// Text made safe for HTML content and attribute values.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_the_default_and_anything_else_needs_the_flag() {
        assert_eq!(
            parse_addr("127.0.0.1:0", false).unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            parse_addr("::1", false).unwrap(),
            "[::1]:0".parse().unwrap()
        );
        let refused = parse_addr("0.0.0.0:8089", false).unwrap_err().0;
        assert!(refused.contains("--live-web-public"), "{refused}");
        assert!(parse_addr("0.0.0.0:8089", true).is_ok());
        let bad = parse_addr("localhost:80", false).unwrap_err().0;
        assert!(bad.contains("IP:PORT"), "{bad}");
    }

    #[test]
    fn a_live_page_refreshes_and_the_final_one_does_not() {
        let live = String::from_utf8(response("200 OK", "text/html", "x", true).head).unwrap();
        let done = String::from_utf8(response("200 OK", "text/html", "x", false).head).unwrap();
        assert!(live.contains("\r\nRefresh: 1\r\n"));
        assert!(!done.contains("Refresh"));
        assert!(done.contains("Content-Length: 1\r\n"));
    }

    #[test]
    fn the_status_block_tops_the_report_and_the_heading_titles_it() {
        let report = "<html><head><title>loadbench: GET http://127.0.0.1:4/</title></head>\
                      <body>\n<main>\n<header>\n<h1>loadbench run</h1>\n</header></main>";
        let heading = Heading {
            command: "bench web".into(),
            target: "up".into(),
            step: Some("closed c=2, round 1 of 2 (step 1 of 4)".into()),
        };
        let now = Pulse {
            open_connections: 64,
            requests: 7,
            ..Pulse::default()
        };
        let block = status_block(Some(&heading), "running, 1.5 s of 20 s", Some(&now), "");
        let page = with_block(report, Some(&heading), &block);
        let title = "loadbench bench web: up, closed c=2, round 1 of 2 (step 1 of 4)";
        assert!(page.contains(&format!("<title>{title}</title>")), "{page}");
        assert!(page.contains(&format!("<h1>{title}</h1>")), "{page}");
        assert!(!page.contains("loadbench run"), "{page}");
        assert!(page.contains("<main>\n<!-- live -->\n"), "{page}");
        assert!(page.contains("<strong>running, 1.5 s of 20 s</strong>"));
        assert!(page.contains("open connections 64 · 7 responses so far"));
        let finished = with_block(report, None, &status_block(None, "finished", None, ""));
        let start = finished.find("<!-- live -->").unwrap();
        let end = finished.find("<!-- /live -->\n").unwrap() + "<!-- /live -->\n".len();
        let cut = format!("{}{}", &finished[..start], &finished[end..]);
        assert_eq!(
            cut, report,
            "cut out, the block leaves the report as it was"
        );
    }

    #[test]
    fn a_page_without_figures_is_the_block_alone_and_raises_no_error() {
        let block = status_block(None, "between steps: starting the next step", None, "");
        let page = bare_page("loadbench bench web: <up>", &block, "none closed yet");
        assert!(page.contains("<title>loadbench bench web: &lt;up&gt;</title>"));
        assert!(page.contains("between steps"));
        assert!(page.contains("Content-Security-Policy"));
        assert!(!page.contains("Error"), "{page}");
        assert_eq!(secs(Duration::from_millis(11_840)), "11.8 s");
        assert_eq!(secs(Duration::from_secs(20)), "20 s");
    }
}
