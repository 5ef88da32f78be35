//! End-to-end tests of the reference backend: each starts a server on 127.0.0.1:0 and speaks
//! raw HTTP/1.1 over a `std::net::TcpStream`, so the faults are observed exactly as a load
//! generator sees them (RST, EOF, silence, garbage), with no HTTP client in between.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use loadbench_upstream::{
    parse_delay, parse_hiccup, DelaySpec, Hiccup, Server, ServerConfig, Stats, UpstreamError,
};

const TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Number of chunks when the body was chunked.
    chunks: usize,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

pub(crate) fn start(cfg: ServerConfig) -> Server {
    Server::start(cfg).unwrap()
}

pub(crate) fn server() -> Server {
    start(ServerConfig::ephemeral())
}

pub(crate) fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

/// Opens a connection and sends one raw GET with `Connection: close`.
fn send(addr: SocketAddr, method: &str, path: &str) -> TcpStream {
    let mut stream = connect(addr);
    let request = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

fn get(addr: SocketAddr, path: &str) -> Resp {
    read_response(&mut BufReader::new(send(addr, "GET", path)))
}

fn post(addr: SocketAddr, path: &str) -> Resp {
    read_response(&mut BufReader::new(send(addr, "POST", path)))
}

pub(crate) fn read_response(reader: &mut impl BufRead) -> Resp {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        match line.trim_end().split_once(':') {
            Some((name, value)) => headers.push((name.to_string(), value.trim().to_string())),
            None => break,
        }
    }
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
        chunks: 0,
    };
    read_body(reader, &mut resp);
    resp
}

fn read_body(reader: &mut impl BufRead, resp: &mut Resp) {
    if resp.header("transfer-encoding") == Some("chunked") {
        return read_chunks(reader, resp);
    }
    match resp.header("content-length") {
        Some(len) => {
            resp.body.resize(len.parse().unwrap(), 0);
            reader.read_exact(&mut resp.body).unwrap();
        }
        None => drop(reader.read_to_end(&mut resp.body).unwrap()),
    }
}

fn read_chunks(reader: &mut impl BufRead, resp: &mut Resp) {
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let size = usize::from_str_radix(line.trim_end(), 16).unwrap();
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).unwrap();
        assert_eq!(&chunk[size..], b"\r\n", "chunk must end with CRLF");
        if size == 0 {
            return;
        }
        resp.chunks += 1;
        resp.body.extend_from_slice(&chunk[..size]);
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t0 = Instant::now();
    let out = f();
    (out, t0.elapsed())
}

#[test]
fn root_answers_hello_world_as_plain_text() {
    let s = server();
    let resp = get(s.local_addr(), "/");
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello world"));
    assert_eq!(resp.header("content-type"), Some("text/plain"));
}

#[test]
fn json_route_answers_the_fixed_document() {
    let s = server();
    let resp = get(s.local_addr(), "/json");
    assert_eq!(resp.text(), r#"{"message":"OK","status":200,"data":1}"#);
    assert_eq!(resp.header("content-type"), Some("application/json"));
}

#[test]
fn bytes_route_sends_the_requested_size() {
    let s = server();
    let cases = [
        ("0", 0),
        ("100", 100),
        ("1k", 1000),
        ("1KiB", 1024),
        ("1MiB", 1 << 20),
    ];
    for (size, want) in cases {
        let resp = get(s.local_addr(), &format!("/bytes/{size}"));
        assert_eq!(resp.status, 200, "{size}");
        assert_eq!(resp.body.len(), want, "{size}");
        assert_eq!(
            resp.header("content-length"),
            Some(want.to_string().as_str())
        );
    }
}

#[test]
fn bytes_route_refuses_oversized_and_garbage_sizes() {
    let s = server();
    let too_big = get(s.local_addr(), "/bytes/2GiB");
    assert_eq!(too_big.status, 400);
    assert!(
        too_big.text().contains("at most 1GiB"),
        "{}",
        too_big.text()
    );
    let garbage = get(s.local_addr(), "/bytes/lots");
    assert_eq!(garbage.status, 400);
    assert!(
        garbage.text().contains("invalid size"),
        "{}",
        garbage.text()
    );
}

#[test]
fn chunked_route_uses_chunked_framing_in_several_chunks() {
    let s = server();
    let resp = get(s.local_addr(), "/chunked/1000");
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert_eq!(resp.header("content-length"), None);
    assert_eq!(resp.body.len(), 1000);
    assert!(resp.chunks >= 4, "{} chunks", resp.chunks);
}

#[test]
fn status_route_answers_any_code_from_200_to_599() {
    let s = server();
    let teapot = get(s.local_addr(), "/status/418");
    assert_eq!(
        (teapot.status, teapot.text().as_str()),
        (418, "I'm a teapot")
    );
    assert_eq!(get(s.local_addr(), "/status/503").status, 503);
    assert_eq!(get(s.local_addr(), "/status/204").status, 204);
    assert_eq!(get(s.local_addr(), "/status/99").status, 400);
    assert_eq!(get(s.local_addr(), "/status/abc").status, 400);
}

#[test]
fn unknown_paths_are_404() {
    let s = server();
    assert_eq!(get(s.local_addr(), "/nope").status, 404);
    assert_eq!(get(s.local_addr(), "/fault/nope").status, 404);
}

#[test]
fn delays_hold_the_answer_at_least_that_long() {
    let s = server();
    let addr = s.local_addr();
    let cases = [
        ("/delay/200ms", 200),
        ("/json?delay=150ms", 150),
        ("/delay/uniform:100ms..120ms", 100),
        ("/bytes/10?delay=normal%3A100ms,0ms", 100),
    ];
    let handles: Vec<_> = cases
        .into_iter()
        .map(|(path, ms)| std::thread::spawn(move || (path, ms, timed(|| get(addr, path)))))
        .collect();
    for handle in handles {
        let (path, ms, (resp, took)) = handle.join().unwrap();
        assert_eq!(resp.status, 200, "{path}");
        assert!(took >= Duration::from_millis(ms), "{path} took {took:?}");
    }
}

#[test]
fn bad_delays_are_400_with_the_reason() {
    let s = server();
    let resp = get(s.local_addr(), "/delay/soon");
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("invalid delay"), "{}", resp.text());
    assert_eq!(get(s.local_addr(), "/?delay=5parsecs").status, 400);
}

#[test]
fn server_defaults_shape_the_root_route() {
    let cfg = ServerConfig {
        body_size: Some(5000),
        status: Some(203),
        delay: Some(parse_delay("100ms").unwrap()),
        ..ServerConfig::ephemeral()
    };
    let s = start(cfg);
    let (resp, took) = timed(|| get(s.local_addr(), "/"));
    assert_eq!((resp.status, resp.body.len()), (203, 5000));
    assert!(took >= Duration::from_millis(100), "{took:?}");
    let (_, took) = timed(|| get(s.local_addr(), "/json?delay=0"));
    assert!(
        took < Duration::from_millis(100),
        "a query delay overrides: {took:?}"
    );
}

#[test]
fn echo_returns_method_path_headers_and_body_as_json() {
    let s = server();
    let mut stream = connect(s.local_addr());
    let request = "POST /echo?x=1 HTTP/1.1\r\nHost: test\r\nX-Test: a\r\nX-Test: b\r\n\
                   Content-Length: 4\r\nConnection: close\r\n\r\nping";
    stream.write_all(request.as_bytes()).unwrap();
    let resp = read_response(&mut BufReader::new(stream));
    let json = resp.json();
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(json["method"], "POST");
    assert_eq!(json["path"], "/echo");
    assert_eq!(json["query"], "x=1");
    assert_eq!(json["headers"]["x-test"], "a, b");
    assert_eq!(
        (json["body"].as_str(), json["body_len"].as_u64()),
        (Some("ping"), Some(4))
    );
    let kept = s.echoed();
    assert_eq!(kept.len(), 1);
    let e = &kept[0];
    assert_eq!((e.method.as_str(), e.path.as_str()), ("POST", "/echo"));
    assert_eq!(
        (e.query.as_deref(), e.body.as_slice()),
        (Some("x=1"), &b"ping"[..])
    );
    assert_eq!(e.header("X-Test"), ["a", "b"]);
}

#[test]
fn echo_keeps_only_its_first_requests() {
    let s = server();
    let mut stream = connect(s.local_addr());
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let n = loadbench_upstream::ECHOED_KEPT + 3;
    for i in 0..n {
        let request = format!("GET /echo?i={i} HTTP/1.1\r\nHost: test\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        assert_eq!(read_response(&mut reader).json()["query"], format!("i={i}"));
    }
    let kept = s.echoed();
    assert_eq!(kept.len(), loadbench_upstream::ECHOED_KEPT);
    assert_eq!(kept[0].query.as_deref(), Some("i=0"));
    let last = format!("i={}", loadbench_upstream::ECHOED_KEPT - 1);
    assert_eq!(kept.last().unwrap().query.as_deref(), Some(last.as_str()));
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let s = server();
    let mut stream = connect(s.local_addr());
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    for i in 0..100 {
        let path = if i % 2 == 0 { "/" } else { "/json" };
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        assert_eq!(read_response(&mut reader).status, 200);
    }
    assert_eq!(s.stats().total, 100);
}

#[test]
fn fault_reset_yields_connection_reset() {
    let s = server();
    let mut stream = send(s.local_addr(), "GET", "/fault/reset");
    let err = stream.read(&mut [0; 64]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
}

#[test]
fn fault_close_yields_eof_without_a_byte() {
    let s = server();
    let mut stream = send(s.local_addr(), "GET", "/fault/close");
    let mut got = Vec::new();
    assert_eq!(stream.read_to_end(&mut got).unwrap(), 0);
}

#[test]
fn fault_stall_sends_nothing() {
    let s = server();
    let mut stream = send(s.local_addr(), "GET", "/fault/stall");
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let err = stream.read(&mut [0; 64]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    drop(stream);
    let (_, took) = timed(|| s.shutdown());
    assert!(
        took < Duration::from_secs(2),
        "a stall must not hold shutdown: {took:?}"
    );
}

/// The kernel's state of the loopback TCP socket `local_port -> remote_port`, if it exists.
fn tcp_state(local_port: u16, remote_port: u16) -> Option<u8> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port = |addr: &str| u16::from_str_radix(addr.split(':').nth(1)?, 16).ok();
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let ports = (port(fields[1])?, port(fields[2])?);
        let state = u8::from_str_radix(fields[3], 16).ok()?;
        (ports == (local_port, remote_port)).then_some(state)
    })
}

#[test]
fn fault_stall_releases_the_socket_when_the_client_leaves() {
    const CLOSE_WAIT: u8 = 0x08;
    let s = server();
    let stream = send(s.local_addr(), "GET", "/fault/stall");
    let client_port = stream.local_addr().unwrap().port();
    std::thread::sleep(Duration::from_millis(100));
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(3);
    while tcp_state(s.local_addr().port(), client_port) == Some(CLOSE_WAIT) {
        assert!(
            Instant::now() < deadline,
            "the stalled socket was never closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn fault_malformed_sends_an_invalid_status_line_then_closes() {
    let s = server();
    let mut stream = send(s.local_addr(), "GET", "/fault/malformed");
    let mut got = Vec::new();
    stream.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"HTTX/9 abc\r\n\r\n");
}

#[test]
fn fault_short_promises_100_bytes_and_sends_10() {
    let s = server();
    let mut stream = send(s.local_addr(), "GET", "/fault/short");
    let mut got = Vec::new();
    stream.read_to_end(&mut got).unwrap();
    let text = String::from_utf8(got).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("content-length: 100"),
        "{head}"
    );
    assert_eq!(body.len(), 10);
}

#[test]
fn fault_slow_paces_the_body() {
    let s = server();
    let (resp, took) = timed(|| get(s.local_addr(), "/fault/slow?bps=2000&size=1000"));
    assert_eq!((resp.status, resp.body.len()), (200, 1000));
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn stats_count_by_route_pattern_and_reset() {
    let s = server();
    let addr = s.local_addr();
    for path in [
        "/",
        "/",
        "/json",
        "/bytes/10",
        "/bytes/20",
        "/status/404",
        "/nope",
    ] {
        get(addr, path);
    }
    drop(send(addr, "GET", "/fault/close").read(&mut [0; 8]));
    let json = get(addr, "/stats").json();
    assert_eq!(json["total"], 8);
    let routes = &json["routes"];
    assert_eq!(
        (routes["/"].as_u64(), routes["/json"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (routes["/bytes"].as_u64(), routes["/status"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(routes["/fault/close"], 1);
    assert_eq!(routes["unmatched"], 1);
    assert_eq!(s.stats().route("/bytes"), 2);
    assert_eq!(post(addr, "/stats/reset").json()["total"], 8);
    assert_eq!(get(addr, "/stats").json()["total"], 0);
    assert_eq!(get(addr, "/stats/reset").status, 405);
}

fn count_500s(s: &Server, n: usize) -> usize {
    let mut stream = connect(s.local_addr());
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let request = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";
    (0..n)
        .filter(|_| {
            stream.write_all(request).unwrap();
            read_response(&mut reader).status == 500
        })
        .count()
}

#[test]
fn fail_rate_one_fails_every_ordinary_answer() {
    let s = start(ServerConfig {
        fail_rate: 1.0,
        ..ServerConfig::ephemeral()
    });
    assert_eq!(count_500s(&s, 50), 50);
    assert_eq!(get(s.local_addr(), "/stats").status, 200);
}

#[test]
fn fail_rate_one_half_fails_about_half() {
    let s = start(ServerConfig {
        fail_rate: 0.5,
        ..ServerConfig::ephemeral()
    });
    let failed = count_500s(&s, 400);
    assert!((160..=240).contains(&failed), "{failed} of 400");
}

#[test]
fn busy_address_gives_one_clear_line() {
    let first = server();
    let cfg = ServerConfig {
        listen: first.local_addr(),
        ..ServerConfig::ephemeral()
    };
    let err = Server::start(cfg).unwrap_err();
    assert!(matches!(err, UpstreamError::AddrInUse(_)), "{err:?}");
    let want = format!(
        "address {} is already in use: pick another with --listen",
        first.local_addr()
    );
    assert_eq!(err.to_string(), want);
}

#[test]
fn invalid_options_are_refused() {
    let cases = [
        ServerConfig {
            fail_rate: 1.5,
            ..ServerConfig::ephemeral()
        },
        ServerConfig {
            threads: 0,
            ..ServerConfig::ephemeral()
        },
        ServerConfig {
            status: Some(99),
            ..ServerConfig::ephemeral()
        },
    ];
    for cfg in cases {
        let err = Server::start(cfg).unwrap_err();
        assert!(matches!(err, UpstreamError::InvalidConfig(_)), "{err:?}");
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn invalid_limits_and_hiccups_are_refused() {
    let stall_too_long = Hiccup {
        every: ms(100),
        stall: ms(100),
    };
    let cases = [
        ServerConfig {
            max_concurrency: Some(0),
            ..ServerConfig::ephemeral()
        },
        ServerConfig {
            hiccup: Some(stall_too_long),
            ..ServerConfig::ephemeral()
        },
    ];
    for cfg in cases {
        let err = Server::start(cfg).unwrap_err();
        assert!(matches!(err, UpstreamError::InvalidConfig(_)), "{err:?}");
    }
}

#[test]
fn parse_hiccup_accepts_stall_slash_period_only() {
    let h = parse_hiccup("500ms/1s").unwrap();
    assert_eq!(
        h,
        Hiccup {
            stall: ms(500),
            every: ms(1000)
        }
    );
    assert_eq!(h.to_string(), "500ms/1s");
    assert_eq!(parse_hiccup("1.5s/1m").unwrap().stall, ms(1500));
    for bad in [
        "500ms",
        "1s/500ms",
        "1s/1s",
        "0/1s",
        "500/1s",
        "x/1s",
        "500ms/1s/2s",
        "",
    ] {
        let err = parse_hiccup(bad).unwrap_err();
        assert!(
            matches!(err, UpstreamError::InvalidHiccup { .. }),
            "{bad}: {err:?}"
        );
        assert!(
            err.to_string().starts_with("invalid hiccup"),
            "{bad}: {err}"
        );
    }
    let err = parse_hiccup("1s/500ms").unwrap_err().to_string();
    assert!(err.contains("shorter than the period"), "{err}");
}

/// Sends one `GET` per thread, all at once; returns each status and when it arrived.
fn burst(addr: SocketAddr, path: &'static str, n: usize, t0: Instant) -> Vec<(u16, Duration)> {
    let clients: Vec<_> = (0..n)
        .map(|_| std::thread::spawn(move || (get(addr, path).status, t0.elapsed())))
        .collect();
    clients.into_iter().map(|c| c.join().unwrap()).collect()
}

#[test]
fn concurrency_limit_serves_in_waves_and_never_exceeds_the_limit() {
    serves_in_waves(false);
}

#[test]
fn concurrency_limit_keeps_its_capacity_when_abandoned_work_is_kept() {
    let s = serves_in_waves(true);
    assert_eq!(s.stats().abandoned_completed, 0, "every client waited");
}

/// Eight clients at once against 2 slots of 50ms: answered in waves of two (capacity 2 / 50ms).
fn serves_in_waves(keep_abandoned: bool) -> Server {
    let s = start(ServerConfig {
        threads: 2,
        max_concurrency: Some(2),
        delay: Some(parse_delay("50ms").unwrap()),
        keep_abandoned,
        ..ServerConfig::ephemeral()
    });
    let addr = s.local_addr();
    let t0 = Instant::now();
    let (answers, peak, stats_took, fault_took) = std::thread::scope(|scope| {
        let clients = scope.spawn(|| burst(addr, "/", 8, t0));
        let sampler = scope.spawn(|| {
            let mut peak = 0;
            while t0.elapsed() < ms(300) {
                peak = peak.max(s.stats().in_service);
                std::thread::sleep(ms(1));
            }
            peak
        });
        // While the queue is full, `/stats` and faults still answer at once.
        std::thread::sleep(ms(20));
        let (stats, stats_took) = timed(|| get(addr, "/stats"));
        assert_eq!(stats.json()["in_service"], 2);
        // `?delay=0`: the server-wide delay applies to faults too, the limit does not.
        let fault = || send(addr, "GET", "/fault/close?delay=0").read(&mut [0; 8]);
        let (eof, fault_took) = timed(fault);
        assert_eq!(eof.unwrap(), 0);
        let answers = clients.join().unwrap();
        (answers, sampler.join().unwrap(), stats_took, fault_took)
    });
    assert!(stats_took < ms(40), "/stats waited: {stats_took:?}");
    assert!(fault_took < ms(40), "a fault waited: {fault_took:?}");
    assert!(
        answers.iter().all(|&(status, _)| status == 200),
        "{answers:?}"
    );
    let mut times: Vec<Duration> = answers.iter().map(|&(_, t)| t).collect();
    times.sort();
    // Two slots of 50ms each: the k-th answer cannot come before wave k/2 ends.
    for (k, &t) in times.iter().enumerate() {
        let wave_end = ms(50 * (k as u64 / 2 + 1));
        assert!(t >= wave_end, "answer {k} after {t:?}: {times:?}");
    }
    assert!(times[7] >= ms(200) && times[7] < ms(1000), "{times:?}");
    assert_eq!(peak, 2, "in service at most 2, and 2 while saturated");
    assert_eq!((s.stats().in_service, s.stats().queued), (0, 0));
    assert_eq!(s.stats().route("/"), 8);
    s
}

/// Polls the server's statistics until `ready` holds; fails after `TIMEOUT`.
fn wait_for(s: &Server, what: &str, ready: impl Fn(&Stats) -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !ready(&s.stats()) {
        assert!(Instant::now() < deadline, "never {what}: {:?}", s.stats());
        std::thread::sleep(ms(2));
    }
}

const SLOW: Duration = Duration::from_millis(100);

/// 2 slots of `SLOW`: six clients send `/`, each on its own connection, and all close their
/// connection after about 50ms, unanswered (2 in service, 4 in line). Then a seventh asks.
/// Returns its latency, when it was answered (since the six were sent), and the statistics.
fn seventh_after_six_left(keep_abandoned: bool) -> (Duration, Duration, Stats) {
    let s = start(ServerConfig {
        threads: 2,
        max_concurrency: Some(2),
        delay: Some(DelaySpec::Fixed(SLOW)),
        keep_abandoned,
        ..ServerConfig::ephemeral()
    });
    let addr = s.local_addr();
    let t0 = Instant::now();
    let clients: Vec<TcpStream> = (0..6).map(|_| send(addr, "GET", "/")).collect();
    wait_for(&s, "2 in service and 4 in line", |st| {
        (st.in_service, st.queued) == (2, 4)
    });
    std::thread::sleep((t0 + ms(50)).saturating_duration_since(Instant::now()));
    drop(clients);
    let (resp, took) = timed(|| get(addr, "/"));
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello world"));
    (took, t0.elapsed(), s.stats())
}

#[test]
fn kept_abandoned_work_is_a_backlog_the_next_request_waits_for() {
    let (took, answered, stats) = seventh_after_six_left(true);
    // The six keep their places: three rounds of SLOW, then the seventh's own service, all
    // counted from before the six were sent.
    assert!(
        answered >= 4 * SLOW,
        "answered after {answered:?} ({took:?})"
    );
    assert_eq!(
        (stats.abandoned_completed, stats.route("/")),
        (6, 7),
        "{stats:?}"
    );
    assert_eq!((stats.in_service, stats.queued), (0, 0), "{stats:?}");
}

#[test]
fn abandoned_work_is_dropped_by_default() {
    let (took, _, stats) = seventh_after_six_left(false);
    // Served in about SLOW: the six left no backlog (which would take 3 × SLOW).
    assert!(took >= SLOW && took < SLOW * 5 / 2, "{took:?}");
    assert_eq!(
        (stats.abandoned_completed, stats.route("/")),
        (0, 7),
        "{stats:?}"
    );
}

/// Where `at` falls in the current period of `every` counted from `epoch`.
fn phase(epoch: Instant, at: Instant, every: Duration) -> Duration {
    let nanos = at.duration_since(epoch).as_nanos() % every.as_nanos();
    Duration::from_nanos(nanos as u64)
}

#[test]
fn hiccup_stalls_only_requests_inside_the_windows() {
    let s = start(ServerConfig {
        threads: 2,
        hiccup: Some(parse_hiccup("300ms/1s").unwrap()),
        ..ServerConfig::ephemeral()
    });
    let (addr, epoch) = (s.local_addr(), s.started_at());
    // Faults and `/stats` are not held by the first window, which opens at server start.
    let (eof, took) = timed(|| send(addr, "GET", "/fault/close").read(&mut [0; 8]));
    assert!(eof.unwrap() == 0 && took < ms(100), "{took:?}");
    let (stats, took) = timed(|| get(addr, "/stats"));
    assert!(stats.status == 200 && took < ms(100), "{took:?}");
    // An open-model client: one new request every 20ms for 2.1s, each on its own connection.
    let clients: Vec<_> = (0..105u32)
        .map(|i| {
            let due = epoch + ms(20) * i;
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            std::thread::spawn(move || {
                let sent = Instant::now();
                let resp = get(addr, "/json");
                (resp.status, sent, sent.elapsed())
            })
        })
        .collect();
    let (mut stalled, mut free) = (0, 0);
    for client in clients {
        let (status, sent, took) = client.join().unwrap();
        assert_eq!(status, 200);
        let p = phase(epoch, sent, ms(1000));
        // Too close to a window edge to tell which side the server saw.
        if p < ms(5) || (ms(290)..ms(310)).contains(&p) || p > ms(995) {
            continue;
        }
        if p < ms(300) {
            stalled += 1;
            let left = ms(300) - p;
            assert!(
                took + ms(2) >= left && took < left + ms(80),
                "sent at phase {p:?}, {left:?} before the window ends, answered after {took:?}"
            );
        } else {
            free += 1;
            assert!(
                took < ms(80),
                "sent at phase {p:?}, outside the windows: {took:?}"
            );
        }
    }
    assert!(
        stalled >= 25 && free >= 60,
        "{stalled} stalled, {free} free"
    );
}

#[test]
fn hiccup_query_uses_the_server_clock_windows() {
    let s = server();
    let (addr, epoch) = (s.local_addr(), s.started_at());
    let every = ms(400);
    let at_phase = |want: Duration| {
        let now = Instant::now();
        let p = phase(epoch, now, every);
        let wait = if p <= want {
            want - p
        } else {
            every - p + want
        };
        std::thread::sleep(wait);
    };
    at_phase(ms(50));
    let stalled = std::thread::spawn(move || timed(|| get(addr, "/json?hiccup=200ms/400ms")));
    let (plain, plain_took) = timed(|| get(addr, "/json"));
    let (resp, took) = stalled.join().unwrap();
    assert_eq!((resp.status, plain.status), (200, 200));
    assert!(took >= ms(140) && took < ms(260), "{took:?}");
    assert!(
        plain_took < ms(50),
        "no hiccup without the query: {plain_took:?}"
    );
    at_phase(ms(250));
    let (resp, took) = timed(|| get(addr, "/delay/10ms?hiccup=200ms/400ms"));
    assert!(
        resp.status == 200 && took < ms(100),
        "outside a window: {took:?}"
    );
    let bad = get(addr, "/?hiccup=1s");
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("invalid hiccup"), "{}", bad.text());
}

#[test]
fn shutdown_finishes_in_flight_requests_then_refuses_connections() {
    let s = start(ServerConfig {
        threads: 2,
        ..ServerConfig::ephemeral()
    });
    let addr = s.local_addr();
    let client = std::thread::spawn(move || get(addr, "/delay/300ms"));
    std::thread::sleep(Duration::from_millis(100));
    s.shutdown();
    assert_eq!(client.join().unwrap().text(), "hello world");
    assert!(TcpStream::connect(addr).is_err());
}

/// Sends a keep-alive GET on `stream` and reads its response (status line to body).
fn keepalive_get(stream: &mut TcpStream) -> std::io::Result<u16> {
    stream.write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    reader.read_exact(&mut vec![0; length])?;
    Ok(status)
}

#[test]
fn max_served_conns_leaves_later_connections_waiting_until_one_closes() {
    let s = start(ServerConfig {
        threads: 2,
        max_served_conns: Some(2),
        ..ServerConfig::ephemeral()
    });
    let addr = s.local_addr();
    let (mut a, mut b, mut c) = (connect(addr), connect(addr), connect(addr));
    assert_eq!(keepalive_get(&mut a).unwrap(), 200);
    assert_eq!(keepalive_get(&mut b).unwrap(), 200);
    // The third connection is accepted by the kernel, but no worker reads its request.
    c.set_read_timeout(Some(ms(300))).unwrap();
    let starved = keepalive_get(&mut c).unwrap_err();
    assert!(
        matches!(starved.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{starved:?}"
    );
    // Served connections keep being served.
    assert_eq!(keepalive_get(&mut a).unwrap(), 200);
    drop(a);
    // Once one closes, its worker takes the waiting connection and answers what it sent.
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut reader = BufReader::new(&mut c);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line:?}");
    assert_eq!(keepalive_get(&mut b).unwrap(), 200);
}

#[test]
fn max_served_conns_of_zero_is_rejected() {
    let bad = Server::start(ServerConfig {
        max_served_conns: Some(0),
        ..ServerConfig::ephemeral()
    });
    assert!(
        matches!(bad, Err(UpstreamError::InvalidConfig(_))),
        "{bad:?}"
    );
}
