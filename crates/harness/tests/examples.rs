//! The scenario files under `examples/`: every one parses with the expected targets, loads and
//! header. Each is also run end to end by `loadbench bench` with real nginx, HAProxy and Caddy in
//! `crates/cli/tests/bench.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use loadbench_harness::scenario::{Scenario, ScenarioLoad, TargetKind, PORT_OF};
use loadbench_plan::{Body, LoadShape};

/// A closed load's connections, one per level.
fn connections_of(l: &ScenarioLoad) -> Vec<u32> {
    l.levels
        .iter()
        .map(|level| match level {
            LoadShape::Closed { connections } => *connections,
            other => panic!("a closed level, not {other:?}"),
        })
        .collect()
}

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
            "go-ping.toml",
            "openresty.toml",
            "orders.toml",
            "php-mariadb.toml",
            "reverse-proxies.toml",
            "scale-out.toml",
            "six-proxies.toml",
            "spring-boot.toml",
            "zuul.toml",
        ]
    );
}

#[test]
fn six_proxies_puts_every_proxy_under_the_same_limits_before_the_backend() {
    let (file, s) = load("six-proxies.toml");
    assert_header(&file, "seed 004");
    let proxies = ["nginx", "haproxy", "caddy", "traefik", "envoy", "spire"];
    let mut all = vec!["backend"];
    all.extend(proxies);
    assert_eq!(names(&s), all);
    assert_two_core_layout(&s);
    for proxy in proxies {
        let t = s.target(proxy).unwrap();
        assert_eq!(t.proxy_to.as_deref(), Some("backend"), "{proxy}");
        assert_eq!(t.limits.memory, Some(512 << 20), "{proxy}");
    }
    // The three without a Debian package go through their fetch-or-build script.
    for proxy in ["traefik", "envoy", "spire"] {
        let command = s.target(proxy).unwrap().command.clone().unwrap_or_default();
        assert!(
            command.ends_with(&format!("targets/proxies/{proxy}.sh")),
            "{proxy}: {command}"
        );
    }
    assert_eq!(s.loads[0].targets.len(), 7);
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
    assert_eq!((up.serve.body_size, up.serve.threads), (Some(133), Some(1)));
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
    let connections = vec![50, 100, 250];
    assert_eq!(connections_of(l), connections);
    assert_eq!(l.targets, ["nginx", "haproxy", "caddy", "backend"]);
    assert_eq!(l.duration, Duration::from_secs(10));
}

#[test]
fn gateway_overhead_puts_nginx_before_a_200ms_backend() {
    let (file, s) = load("gateway-overhead.toml");
    assert_header(&file, "seed 003");
    assert_eq!(names(&s), ["backend", "gateway"]);
    assert_two_core_layout(&s);
    let up = s.target("backend").unwrap().upstream.as_ref().unwrap();
    assert_eq!(
        up.serve.delay.map(|d| d.to_string()).as_deref(),
        Some("200ms")
    );
    assert_eq!(
        s.target("gateway").unwrap().proxy_to.as_deref(),
        Some("backend")
    );
    assert_eq!(s.rounds, 5);
    let l = &s.loads[0];
    let connections = vec![300];
    assert_eq!(connections_of(l), connections);
    assert_eq!(l.targets, ["gateway", "backend"]);
    assert!(!l.keepalive, "the seed's ab ran without -k");
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
        .map(|l| (l.targets.clone(), connections_of(l), l.together))
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
    assert_eq!(app.kind, TargetKind::Upstream);
    let u = app.upstream.as_ref().unwrap();
    assert_eq!(
        (
            u.serve.max_concurrency,
            u.serve.delay.map(|d| d.to_string())
        ),
        (Some(1), Some("7ms".to_string()))
    );
    let l = &s.loads[0];
    let connections = vec![5, 10, 15, 20];
    assert_eq!(connections_of(l), connections);
    assert_eq!(l.targets, ["app", "backend"]);
}

#[test]
fn find_max_searches_within_a_p99_slo() {
    let (file, s) = load("find-max.toml");
    assert_header(&file, "seed 004");
    assert_eq!(names(&s), ["backend", "nginx"]);
    assert_two_core_layout(&s);
    let l = &s.loads[0];
    let [LoadShape::FindMax {
        slo,
        max_connections,
    }] = &l.levels[..]
    else {
        panic!("one find-max level, not {:?}", l.levels);
    };
    assert_eq!(slo.text, "p99<20ms");
    assert_eq!(*max_connections, 2000);
    assert_eq!(l.targets, ["nginx", "backend"]);
}

#[test]
fn go_ping_sweeps_net_http_and_gin_built_by_the_target_script() {
    let (file, s) = load("go-ping.toml");
    assert_header(&file, "seed 001");
    assert_eq!(names(&s), ["nethttp", "gin"]);
    assert_two_core_layout(&s);
    for (name, framework) in [("nethttp", "nethttp"), ("gin", "gin")] {
        let t = s.target(name).unwrap();
        assert!(t
            .command
            .as_deref()
            .unwrap()
            .ends_with("targets/go-ping/run.sh"));
        assert_eq!(t.args[..2], ["-framework", framework]);
        assert_eq!(t.env["GOMAXPROCS"], "1");
        // The first start builds gin from the Go module proxy: minutes, not the default 30 s.
        assert!(t.ready.timeout >= Duration::from_secs(600), "{name}");
    }
    for f in ["main.go", "go.mod", "go.sum", "build.sh", "run.sh"] {
        assert!(
            examples_dir().join("targets/go-ping").join(f).is_file(),
            "{f}"
        );
    }
    let l = &s.loads[0];
    let connections = vec![5, 10, 15, 20, 100];
    assert_eq!(connections_of(l), connections);
    assert_eq!(l.request.path, "/ping");
}

#[test]
fn openresty_compares_lua_block_file_and_a_proxy_over_three() {
    let (file, s) = load("openresty.toml");
    assert_header(&file, "seed 000");
    assert_header(&file, "seed 001");
    assert_eq!(
        names(&s),
        ["standalone", "lua-1", "lua-2", "lua-3", "proxy-3"]
    );
    assert_two_core_layout(&s);
    let lua = &s.target("standalone").unwrap().config[0].text;
    for line in [
        "ngx_http_lua_module.so",
        "content_by_lua_block { ngx.say(\"ok\") }",
        "content_by_lua_file",
        "worker_processes 1;",
    ] {
        assert!(lua.contains(line), "lua.conf lacks `{line}`");
    }
    let proxy = &s.target("proxy-3").unwrap().config[0].text;
    for b in ["lua-1", "lua-2", "lua-3"] {
        assert!(
            proxy.contains(&format!("127.0.0.1:{{{PORT_OF}{b}}}")),
            "{b}"
        );
    }
    assert!(proxy.contains("keepalive 1024;"));
    let loads: Vec<_> = s
        .loads
        .iter()
        .map(|l| (l.request.path.as_str(), l.targets.clone()))
        .collect();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        loads,
        [
            ("/lua", v(&["standalone"])),
            ("/lua-file", v(&["standalone"])),
            ("/", v(&["proxy-3", "standalone"])),
        ]
    );
}

#[test]
fn php_mariadb_puts_nginx_and_php_fpm_before_its_own_mariadb() {
    let (file, s) = load("php-mariadb.toml");
    assert_header(&file, "seed 001");
    assert_eq!(names(&s), ["mariadb", "php-fpm", "php", "lua"]);
    assert_two_core_layout(&s);
    let db = s.target("mariadb").unwrap();
    assert!(db
        .command
        .as_deref()
        .unwrap()
        .ends_with("targets/php-mariadb/mariadb.sh"));
    assert_eq!(
        db.args,
        ["{dir}", "{port}"],
        "its own data directory and port"
    );
    let fpm = &s.target("php-fpm").unwrap().config[0].text;
    for line in [
        "daemonize = no",
        "pid = {dir}/php-fpm.pid",
        "listen = 127.0.0.1:{port}",
    ] {
        assert!(fpm.contains(line), "php-fpm.conf lacks `{line}`");
    }
    assert!(fpm.contains(&format!("env[DB_PORT] = {{{PORT_OF}mariadb}}")));
    let nginx = &s.target("php").unwrap().config[0].text;
    assert!(nginx.contains(&format!("fastcgi_pass 127.0.0.1:{{{PORT_OF}php-fpm}};")));
    assert!(examples_dir()
        .join("targets/php-mariadb/index.php")
        .is_file());
    let l = &s.loads[0];
    assert_eq!(l.targets, ["php", "lua"]);
    let connections = vec![10, 100];
    assert_eq!(connections_of(l), connections);
}

#[test]
fn orders_inserts_and_reads_back_through_php_fpm_and_mariadb_in_a_flow() {
    let (file, s) = load("orders.toml");
    assert_header(&file, "seed 000");
    assert_eq!(names(&s), ["mariadb", "php-fpm", "orders"]);
    assert_two_core_layout(&s);
    let db = s.target("mariadb").unwrap();
    assert!(db
        .command
        .as_deref()
        .unwrap()
        .ends_with("targets/php-mariadb/mariadb.sh"));
    assert_eq!(
        db.args,
        ["{dir}", "{port}", "{scenario_dir}/targets/orders/init.sql"]
    );
    let nginx = &s.target("orders").unwrap().config[0].text;
    assert!(nginx.contains("$realpath_root/orders.php"));
    assert!(nginx.contains(&format!("fastcgi_pass 127.0.0.1:{{{PORT_OF}php-fpm}};")));
    for file in ["orders.php", "init.sql", "nginx.conf"] {
        assert!(examples_dir().join("targets/orders").join(file).is_file());
    }
    let [l] = &s.loads[..] else {
        panic!("one load, not {}", s.loads.len())
    };
    assert_eq!(
        (l.name.as_deref(), &l.targets[..]),
        (Some("insert"), &["orders".to_string()][..])
    );
    assert_eq!(connections_of(l), [16]);
    assert_orders_flow(l);
}

/// The orders load's flow: each iteration inserts an order and reads it back, both checked.
fn assert_orders_flow(l: &ScenarioLoad) {
    let flow = l.flow.as_ref().expect("a [load.flow]");
    assert_eq!(flow.name, "order");
    let [create, read] = &flow.steps[..] else {
        panic!("two steps, not {}", flow.steps.len())
    };
    assert_eq!(
        (create.name.as_str(), create.request.method.as_str()),
        ("create", "POST")
    );
    assert_eq!(create.path, "/orders");
    assert_eq!(
        create.request.headers,
        [("Content-Type".to_string(), "application/json".to_string())]
    );
    // The loader keeps the per-request value templates as written; the engine fills them in.
    let Body::Bytes(body) = &create.request.body else {
        panic!("a body: {:?}", create.request.body)
    };
    let body = String::from_utf8_lossy(body);
    for value in [
        "{{seq}}",
        "{{pick(book,pen,lamp)}}",
        "{{int(1,5)}}",
        "{{int(100,9999)}}",
    ] {
        assert!(body.contains(value), "{body}");
    }
    let id = [("/id".to_string(), "{{seq}}".to_string())];
    assert_eq!(
        (&create.status[..], &create.json[..]),
        (&[201][..], &id[..])
    );
    assert_eq!(
        (read.name.as_str(), read.request.method.as_str()),
        ("read", "GET")
    );
    assert_eq!(read.path, "/orders/{{seq}}");
    assert_eq!((&read.status[..], &read.json[..]), (&[200][..], &id[..]));
}

/// The JVM targets: each started by run.sh with its Maven project, ready on an HTTP route, with a
/// start-up timeout long enough for a first Maven build.
fn assert_jvm_target(s: &Scenario, name: &str, project: &str) {
    let t = s.target(name).unwrap();
    let command = t.command.as_deref().unwrap_or_default();
    assert!(command.ends_with("targets/spring-boot/run.sh"), "{name}");
    assert!(t.args[0].ends_with(&format!("targets/{project}")), "{name}");
    assert!(t.ready.http.is_some(), "{name}");
    assert!(t.ready.timeout >= Duration::from_secs(120), "{name}");
}

#[test]
fn spring_boot_warms_up_then_compares_instances_keep_alive_and_backlog() {
    let (file, s) = load("spring-boot.toml");
    assert_header(&file, "seed 002");
    assert_header(&file, "seed 000");
    let targets = ["app", "app-2", "app-keepalive", "app-backlog"];
    assert_eq!(names(&s), targets);
    assert_two_core_layout(&s);
    for t in targets {
        assert_jvm_target(&s, t, "spring-boot");
    }
    let args = |t: &str| s.target(t).unwrap().args.join(" ");
    assert!(args("app-keepalive").contains("--server.tomcat.max-keep-alive-requests=60000"));
    assert!(args("app-keepalive").contains("--server.tomcat.keep-alive-timeout=60s"));
    assert!(args("app-backlog").contains("--server.tomcat.accept-count=1024"));
    // The first load warms every JVM up at once; every load warms up again before measuring.
    assert_eq!(s.loads[0].targets, targets);
    assert!(s.loads[0].together);
    assert!(s.loads.iter().all(|l| l.warmup >= Duration::from_secs(10)));
    let two = &s.loads[2];
    assert_eq!(two.targets, ["app", "app-2"]);
    assert!(
        two.together,
        "the two instances are loaded at the same time"
    );
    let backlog = &s.loads[4];
    assert_eq!(connections_of(backlog), [512]);
    assert!(
        !backlog.keepalive,
        "a new connection per request keeps the listen queue busy"
    );
}

#[test]
fn zuul_compares_200_and_1000_threads_and_spring_cloud_gateway_with_the_200ms_backend() {
    let (file, s) = load("zuul.toml");
    assert_header(&file, "seed 003");
    assert_eq!(names(&s), ["backend", "zuul-200", "zuul-1000", "scg"]);
    assert_two_core_layout(&s);
    let up = s.target("backend").unwrap().upstream.as_ref().unwrap();
    assert_eq!(
        up.serve.delay.map(|d| d.to_string()).as_deref(),
        Some("200ms")
    );
    for t in ["zuul-200", "zuul-1000"] {
        assert_jvm_target(&s, t, "zuul");
        assert_eq!(s.target(t).unwrap().proxy_to.as_deref(), Some("backend"));
    }
    let seed = s.target("zuul-1000").unwrap().args.join(" ");
    assert!(seed.contains("--server.tomcat.threads.max=1000"), "{seed}");
    // Spring Cloud Gateway's pool to the backend is sized like Zuul's, so it is not the limit.
    assert_jvm_target(&s, "scg", "spring-cloud-gateway");
    let scg = s.target("scg").unwrap();
    assert_eq!(scg.proxy_to.as_deref(), Some("backend"));
    let pool = scg.args.join(" ");
    assert!(pool.contains("httpclient.pool.type=fixed"), "{pool}");
    assert!(
        pool.contains("httpclient.pool.max-connections=1000"),
        "{pool}"
    );
    assert_eq!(s.loads[0].targets, ["zuul-200", "zuul-1000", "scg"]);
    let l = &s.loads[1];
    assert_eq!(connections_of(l), [300]);
    assert_eq!(l.targets, ["zuul-200", "zuul-1000", "scg", "backend"]);
    assert!(!l.keepalive, "the seed's ab ran without -k");
}
