//! The scenario files under `examples/`: every one parses with the expected targets and loads,
//! every proxy configuration they render is accepted by the real program (`nginx -t`,
//! `haproxy -c`, `caddy validate`), and every target is started the way `loadbench bench` would
//! start it, in front of the real reference backend, with a few GETs through it on 127.0.0.1.
//!
//! A program that is not installed is skipped with a message on stderr (run `cargo test -- --nocapture`
//! to see it), never silently.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use loadbench_harness::process::{ProcessSpec, Readiness, TargetProcess};
use loadbench_harness::scenario::{
    allocate_ports, render_template, LoadModel, Scenario, TargetKind, TargetSpec, PORT_OF,
};
use loadbench_upstream::{parse_delay, Server, ServerConfig};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn load(name: &str) -> (PathBuf, Scenario) {
    let file = examples_dir().join(name);
    let s = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
    (file, s)
}

fn names(s: &Scenario) -> Vec<&str> {
    s.targets.iter().map(|t| t.name.as_str()).collect()
}

fn cpus(set: &Option<loadbench_harness::scenario::CpuSet>) -> Option<Vec<usize>> {
    set.as_ref().map(|c| c.0.clone())
}

/// Generator on CPU 0 and every target on CPU 1: the 2-core layout every example uses.
fn assert_two_core_layout(s: &Scenario) {
    assert_eq!(cpus(&s.generator.cpuset), Some(vec![0]), "{}", s.name);
    for t in &s.targets {
        assert_eq!(
            cpus(&t.limits.cpuset),
            Some(vec![1]),
            "{} {}",
            s.name,
            t.name
        );
    }
}

/// Every example starts with a comment block naming its seed, packages and run command.
fn assert_header(file: &Path, seed: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let header: String = text
        .lines()
        .take_while(|l| l.starts_with('#') || l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let stem = file.file_name().unwrap().to_str().unwrap();
    assert!(header.contains(seed), "{stem}: header names no {seed}");
    assert!(header.contains("Needs"), "{stem}: header lists no packages");
    let run = format!("loadbench bench examples/{stem}");
    assert!(header.contains(&run), "{stem}: header has no `{run}`");
}

#[test]
fn every_example_parses() {
    let mut found: Vec<String> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            p.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "concurrency-sweep.toml",
            "find-max.toml",
            "gateway-overhead.toml",
            "reverse-proxies.toml",
            "scale-out.toml",
        ]
    );
}

#[test]
fn reverse_proxies_compares_three_proxies_with_the_backend() {
    let (file, s) = load("reverse-proxies.toml");
    assert_header(&file, "seed 004");
    assert_eq!(s.name, "reverse-proxies");
    assert_eq!(s.rounds, 5);
    assert_eq!(names(&s), ["backend", "nginx", "haproxy", "caddy"]);
    assert_two_core_layout(&s);
    let backend = s.target("backend").unwrap();
    assert_eq!(backend.kind, TargetKind::Upstream);
    let up = backend.upstream.as_ref().unwrap();
    assert_eq!((up.body_size, up.threads), (Some(133), Some(1)));
    for proxy in ["nginx", "haproxy", "caddy"] {
        let t = s.target(proxy).unwrap();
        assert_eq!(t.kind, TargetKind::Command);
        assert_eq!(t.proxy_to.as_deref(), Some("backend"), "{proxy}");
        assert_eq!(t.config.len(), 1, "{proxy}");
        assert!(t.ready.http.is_some(), "{proxy} is ready when it proxies");
    }
    assert_eq!(s.target("caddy").unwrap().env["GOMAXPROCS"], "1");
    let nginx = &s.target("nginx").unwrap().config[0].text;
    for line in [
        "daemon off;",
        "worker_processes 1;",
        "access_log off;",
        "keepalive 512;",
    ] {
        assert!(nginx.contains(line), "nginx.conf lacks `{line}`");
    }
    let haproxy = &s.target("haproxy").unwrap().config[0].text;
    assert!(haproxy.contains("nbthread 1") && haproxy.contains("http-reuse always"));
    assert_eq!(s.loads.len(), 1);
    let l = &s.loads[0];
    assert_eq!(l.model, LoadModel::Closed);
    assert_eq!(l.targets, ["nginx", "haproxy", "caddy", "backend"]);
    assert_eq!(l.connections, [50, 100, 250]);
    assert_eq!(l.duration, Duration::from_secs(10));
}

#[test]
fn gateway_overhead_puts_nginx_before_a_200ms_backend() {
    let (file, s) = load("gateway-overhead.toml");
    assert_header(&file, "seed 003");
    assert_eq!(names(&s), ["backend", "gateway"]);
    assert_two_core_layout(&s);
    let up = s.target("backend").unwrap().upstream.as_ref().unwrap();
    assert_eq!(up.delay.as_deref(), Some("200ms"));
    assert_eq!(
        s.target("gateway").unwrap().proxy_to.as_deref(),
        Some("backend")
    );
    assert_eq!(s.rounds, 5);
    let l = &s.loads[0];
    assert_eq!(
        (l.model, l.connections.as_slice()),
        (LoadModel::Closed, &[300][..])
    );
    assert_eq!(l.targets, ["gateway", "backend"]);
}

#[test]
fn scale_out_balances_three_backends_by_port_name() {
    let (file, s) = load("scale-out.toml");
    assert_header(&file, "seed 000");
    assert_eq!(
        names(&s),
        ["backend-1", "backend-2", "backend-3", "lb-3", "lb-1"]
    );
    assert_two_core_layout(&s);
    let lb3 = &s.target("lb-3").unwrap().config[0].text;
    for b in ["backend-1", "backend-2", "backend-3"] {
        assert!(lb3.contains(&format!("127.0.0.1:{{{PORT_OF}{b}}}")), "{b}");
        assert_eq!(s.target(b).unwrap().kind, TargetKind::Upstream);
    }
    assert_eq!(
        s.target("lb-1").unwrap().proxy_to.as_deref(),
        Some("backend-1")
    );
    let loads: Vec<_> = s
        .loads
        .iter()
        .map(|l| (l.targets.clone(), l.connections.clone(), l.together))
        .collect();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        loads,
        [
            (v(&["lb-3", "lb-1"]), vec![64, 256, 512], false),
            (v(&["backend-1"]), vec![512], false),
            (v(&["backend-1", "backend-2"]), vec![512], true),
        ]
    );
}

#[test]
fn concurrency_sweep_steps_5_to_20_against_a_serializing_app() {
    let (file, s) = load("concurrency-sweep.toml");
    assert_header(&file, "seed 001");
    assert_eq!(names(&s), ["app", "backend"]);
    assert_two_core_layout(&s);
    let app = s.target("app").unwrap();
    assert_eq!(app.command.as_deref(), Some("loadbench"));
    let args = app.args.join(" ");
    assert!(args.contains("--max-concurrency 1") && args.contains("--delay 7ms"));
    // Every flag must be one `loadbench serve` has (a field of ServeArgs).
    let cli =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src/args.rs"))
            .unwrap();
    let serve_args = &cli[cli.find("pub struct ServeArgs").unwrap()..];
    let serve_args = &serve_args[..serve_args.find("\n}").unwrap()];
    for flag in app.args.iter().filter_map(|a| a.strip_prefix("--")) {
        let field = format!("pub {}:", flag.replace('-', "_"));
        assert!(
            serve_args.contains(&field),
            "loadbench serve has no --{flag}"
        );
    }
    let l = &s.loads[0];
    assert_eq!(l.model, LoadModel::Closed);
    assert_eq!(l.targets, ["app", "backend"]);
    assert_eq!(l.connections, [5, 10, 15, 20]);
}

#[test]
fn find_max_searches_within_a_p99_slo() {
    let (file, s) = load("find-max.toml");
    assert_header(&file, "seed 004");
    assert_eq!(names(&s), ["backend", "nginx"]);
    assert_two_core_layout(&s);
    let l = &s.loads[0];
    assert_eq!(l.model, LoadModel::FindMax);
    assert_eq!(l.slo.as_deref(), Some("p99<20ms"));
    assert_eq!(l.targets, ["nginx", "backend"]);
    assert!(l.rate.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Rendering, validating with the real programs, and starting the targets.

/// `command` as a runnable path: as written when it has a `/`, else looked up in PATH.
fn find_program(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Path::new(command).is_file().then(|| command.into());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
}

/// The program's own configuration check, from the target's rendered arguments.
fn check_command(program: &str, args: &[String]) -> Vec<String> {
    let mut args = args.to_vec();
    match program {
        // nginx -t -p DIR -c FILE -e LOG
        "nginx" => args.insert(0, "-t".into()),
        // haproxy -c -f FILE (instead of -db, which would run it)
        "haproxy" => {
            args.retain(|a| a != "-db");
            args.insert(0, "-c".into());
        }
        // caddy validate --config FILE --adapter caddyfile (instead of run)
        "caddy" => args[0] = "validate".into(),
        other => panic!("no configuration check known for {other}"),
    }
    args
}

/// One target of a started scenario.
enum Running {
    Backend(Server),
    Process(TargetProcess),
    Skipped(String),
}

struct Run {
    dir: PathBuf,
    ports: HashMap<String, u16>,
    targets: Vec<(String, Running)>,
}

impl Run {
    fn backend(&self, name: &str) -> &Server {
        match self.targets.iter().find(|(n, _)| n == name) {
            Some((_, Running::Backend(s))) => s,
            _ => panic!("{name} is not a running backend"),
        }
    }

    fn skipped(&self, name: &str) -> Option<&str> {
        self.targets.iter().find_map(|(n, r)| match r {
            Running::Skipped(why) if n == name => Some(why.as_str()),
            _ => None,
        })
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Proxies first (reverse start order), then the backends; the directory last.
        while let Some((_, r)) = self.targets.pop() {
            match r {
                Running::Process(mut p) => {
                    let _ = p.stop();
                }
                Running::Backend(s) => s.shutdown(),
                Running::Skipped(_) => {}
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The targets `t` needs running first: its proxy_to and every `{port:NAME}` it renders.
fn dependencies(t: &TargetSpec) -> HashSet<String> {
    let mut deps: HashSet<String> = t.proxy_to.iter().cloned().collect();
    let mut texts: Vec<&str> = t.config.iter().map(|c| c.text.as_str()).collect();
    texts.extend(t.args.iter().map(String::as_str));
    texts.extend(t.env.values().map(String::as_str));
    for text in texts {
        for used in loadbench_harness::scenario::placeholders_in(text).unwrap() {
            if let Some(name) = used.strip_prefix(PORT_OF) {
                deps.insert(name.to_string());
            }
        }
    }
    deps.remove(&t.name);
    deps
}

/// Starts every target of `file` as `loadbench bench` would: backends in-process (the reference
/// backend), config files rendered into a fresh run directory and checked by the program itself,
/// commands spawned in their own process group and waited on until ready; dependencies first.
fn start(file: &Path) -> Run {
    let s = Scenario::load(file).unwrap_or_else(|e| panic!("{e}"));
    let ports = allocate_ports(&s, file).unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!(
        "loadbench-examples-{}-{}",
        std::process::id(),
        s.name
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut run = Run {
        dir: dir.clone(),
        ports: ports.clone(),
        targets: Vec::new(),
    };
    let mut pending: Vec<&TargetSpec> = s.targets.iter().collect();
    while !pending.is_empty() {
        let started: HashSet<String> = run.targets.iter().map(|(n, _)| n.clone()).collect();
        let i = pending
            .iter()
            .position(|t| dependencies(t).is_subset(&started))
            .expect("a dependency cycle between targets");
        let t = pending.remove(i);
        let running = start_target(&s, t, &ports, &dir);
        run.targets.push((t.name.clone(), running));
    }
    run
}

fn start_target(s: &Scenario, t: &TargetSpec, ports: &HashMap<String, u16>, dir: &Path) -> Running {
    let port = ports[&t.name];
    if t.kind == TargetKind::Upstream {
        let up = t.upstream.clone().unwrap_or_default();
        let cfg = ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            threads: up.threads.map_or(1, |n| n as usize),
            delay: up.delay.as_deref().map(|d| parse_delay(d).unwrap()),
            body_size: up.body_size,
            ..ServerConfig::ephemeral()
        };
        let server = Server::start(cfg).unwrap_or_else(|e| panic!("{}: {e}", t.name));
        for route in &up.routes {
            let (status, _) = get(port, route);
            assert_eq!(status, 200, "{} {route}", t.name);
        }
        return Running::Backend(server);
    }
    let values = s.placeholders(t, ports, dir);
    let render =
        |text: &str| render_template(text, &values).unwrap_or_else(|e| panic!("{}: {e}", t.name));
    let command = render(t.command.as_deref().unwrap());
    let Some(program) = find_program(&command) else {
        let why = format!("`{command}` is not installed");
        eprintln!("SKIPPED target {} of {}: {why}", t.name, s.name);
        return Running::Skipped(why);
    };
    for c in &t.config {
        std::fs::write(dir.join(&c.path), render(&c.text)).unwrap();
    }
    let args: Vec<String> = t.args.iter().map(|a| render(a)).collect();
    let env: Vec<(String, String)> = t.env.iter().map(|(k, v)| (k.clone(), render(v))).collect();
    let base = program.file_name().unwrap().to_string_lossy().into_owned();
    if !t.config.is_empty() {
        let check = check_command(&base, &args);
        let out = Command::new(&program)
            .args(&check)
            .envs(env.iter().cloned())
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} {}: {}\n{}{}",
            program.display(),
            check.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "{}: `{base} {}` accepts the rendered config",
            s.name,
            check.join(" ")
        );
    }
    let mut spec = ProcessSpec::new(
        t.name.clone(),
        program,
        dir.join(format!("{}.stdout", t.name)),
        dir.join(format!("{}.stderr", t.name)),
    )
    .args(args);
    spec.cwd = Some(
        t.workdir
            .as_deref()
            .map_or(dir.to_path_buf(), |w| render(w).into()),
    );
    spec.env = env;
    spec.stop_signal = t.stop_signal;
    spec.stop_timeout = t.stop_timeout;
    let readiness = match (&t.ready.http, &t.ready.tcp) {
        (Some(url), _) => Readiness::Http { url: render(url) },
        (None, Some(addr)) => Readiness::Tcp {
            addr: render(addr).parse().unwrap(),
        },
        (None, None) => Readiness::Tcp {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        },
    };
    let mut p = TargetProcess::spawn(&spec).unwrap_or_else(|e| panic!("{e}"));
    p.wait_ready(&readiness, t.ready.timeout)
        .unwrap_or_else(|e| panic!("{e}"));
    Running::Process(p)
}

/// One `GET path` to 127.0.0.1:port over a fresh connection: the status and the body.
fn get(port: u16, path: &str) -> (u16, Vec<u8>) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).unwrap();
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no end of headers");
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {head}"));
    let body = raw[end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return (status, dechunk(&body));
    }
    (status, body)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = String::from_utf8_lossy(&raw[..eol]).to_string();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
}

/// GETs `/` through each named target (unless skipped) and checks a 200 with `body_len` bytes.
fn get_through(run: &Run, targets: &[&str], body_len: usize) {
    for name in targets {
        if let Some(why) = run.skipped(name) {
            eprintln!("SKIPPED GET through {name}: {why}");
            continue;
        }
        let (status, body) = get(run.ports[*name], "/");
        assert_eq!(status, 200, "GET / through {name}");
        assert_eq!(body.len(), body_len, "body through {name}");
    }
}

#[test]
fn reverse_proxies_serve_the_backend_for_real() {
    let run = start(&examples_dir().join("reverse-proxies.toml"));
    let before = run.backend("backend").stats().total;
    get_through(&run, &["nginx", "haproxy", "caddy", "backend"], 133);
    let proxied = ["nginx", "haproxy", "caddy"]
        .iter()
        .filter(|n| run.skipped(n).is_none())
        .count() as u64;
    assert_eq!(run.backend("backend").stats().total - before, proxied + 1);
}

#[test]
fn gateway_overhead_gateway_waits_for_the_200ms_backend() {
    let run = start(&examples_dir().join("gateway-overhead.toml"));
    for name in ["gateway", "backend"] {
        if let Some(why) = run.skipped(name) {
            eprintln!("SKIPPED GET through {name}: {why}");
            continue;
        }
        let t0 = Instant::now();
        let (status, body) = get(run.ports[name], "/");
        assert_eq!((status, body.len()), (200, 2), "{name}");
        assert!(
            t0.elapsed() >= Duration::from_millis(200),
            "{name} answered before 200 ms"
        );
    }
}

#[test]
fn scale_out_spreads_requests_over_the_three_backends() {
    let run = start(&examples_dir().join("scale-out.toml"));
    get_through(&run, &["lb-1"], "hello world".len());
    let backends = ["backend-1", "backend-2", "backend-3"];
    let before: Vec<u64> = backends
        .iter()
        .map(|b| run.backend(b).stats().total)
        .collect();
    if run.skipped("lb-3").is_none() {
        for _ in 0..6 {
            get_through(&run, &["lb-3"], "hello world".len());
        }
        // Round robin over the three ports named by {port:backend-N}: two requests each.
        for (b, n) in backends.iter().zip(before) {
            assert_eq!(run.backend(b).stats().total - n, 2, "{b}");
        }
    }
}

#[test]
fn concurrency_sweep_targets_answer() {
    let run = start(&examples_dir().join("concurrency-sweep.toml"));
    get_through(&run, &["app", "backend"], 42);
    if run.skipped("app").is_none() {
        // One request at a time, 7 ms each: 5 requests sent at once take at least 35 ms.
        let port = run.ports["app"];
        let t0 = Instant::now();
        let clients: Vec<_> = (0..5)
            .map(|_| std::thread::spawn(move || get(port, "/").0))
            .collect();
        for c in clients {
            assert_eq!(c.join().unwrap(), 200);
        }
        assert!(
            t0.elapsed() >= Duration::from_millis(35),
            "{:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn find_max_nginx_serves_the_backend() {
    let run = start(&examples_dir().join("find-max.toml"));
    get_through(&run, &["nginx", "backend"], 133);
}
