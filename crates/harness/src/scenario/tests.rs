use super::*;
use loadbench_plan::{Body, LoadShape, Schedule};

/// A closed load's levels.
fn closed(connections: &[u32]) -> Vec<LoadShape<Schedule>> {
    connections
        .iter()
        .map(|&connections| LoadShape::Closed { connections })
        .collect()
}
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const FULL: &str = include_str!("../../tests/fixtures/reverse-proxies.toml");

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, Path::new("bench/scn.toml"))
}

/// Asserts a one-line error naming the file, the key and a fix.
fn assert_error(text: &str, key: &str, words: &str) {
    let e = parse(text).unwrap_err().to_string();
    assert!(!e.contains('\n'), "{e}");
    assert!(e.starts_with("bench/scn.toml"), "{e}");
    assert!(e.contains(key), "{e} should name {key}");
    assert!(e.contains("fix:"), "{e}");
    assert!(e.contains(words), "{e} should say {words}");
}

const MINI: &str = "name = \"m\"\n[[target]]\nname = \"a\"\nkind = \"upstream\"\n\
    [[load]]\nmodel = \"closed\"\ntargets = [\"a\"]\nconnections = [1]\n";

#[test]
fn parses_reverse_proxy_comparison() {
    let s = parse(FULL).unwrap();
    assert_eq!(s.name, "reverse-proxies");
    assert_eq!((s.rounds, s.cooldown), (5, Duration::from_secs(5)));
    assert_eq!(s.generator.cpuset, Some(CpuSet(vec![0])));
    let names: Vec<&str> = s.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["backend", "nginx", "haproxy"]);
    let backend = &s.targets[0];
    assert_eq!(
        (backend.kind, backend.port),
        (TargetKind::Upstream, PortSpec::Auto)
    );
    assert_eq!(
        backend.upstream.as_ref().unwrap().serve.body_size,
        Some(133)
    );
    let nginx = &s.targets[1];
    assert_eq!(nginx.command.as_deref(), Some("/usr/sbin/nginx"));
    assert_eq!(nginx.proxy_to.as_deref(), Some("backend"));
    assert_eq!(nginx.stop_signal, libc::SIGQUIT);
    assert_eq!(nginx.config[0].path, PathBuf::from("nginx.conf"));
    assert!(nginx.config[0].text.contains("server {upstream};"));
    assert_eq!(
        nginx.ready.http.as_deref(),
        Some("http://127.0.0.1:{port}/")
    );
    assert_eq!(nginx.ready.timeout, Duration::from_secs(10));
    let limits = Limits {
        cpuset: Some(CpuSet(vec![1])),
        cpus: Some(1.0),
        memory: Some(8 << 30),
    };
    assert_eq!(nginx.limits, limits);
    assert_eq!(s.targets[2].stop_signal, libc::SIGTERM);
    assert_eq!(s.targets[2].ready, ReadySpec::default());
    let load = &s.loads[0];
    assert_eq!(load.levels, closed(&[5, 10, 15, 20]));
    assert_eq!(load.targets, ["nginx", "haproxy", "backend"]);
    assert_eq!(
        (load.duration, load.warmup),
        (Duration::from_secs(10), Duration::from_secs(2))
    );
    assert_eq!(load.request.method, "GET");
    assert_eq!(load.request.headers["accept"], "*/*");
}

#[test]
fn renders_the_nginx_config_with_ports_and_dir() {
    let s = parse(FULL).unwrap();
    let ports = HashMap::from([("backend".to_string(), 4000), ("nginx".to_string(), 4001)]);
    let nginx = &s.targets[1];
    let values = s.placeholders(nginx, &ports, Path::new("/tmp/run"));
    let conf = render_template(&nginx.config[0].text, &values).unwrap();
    assert!(conf.contains("server 127.0.0.1:4000;"));
    assert!(conf.contains("listen 127.0.0.1:4001;"));
    assert!(conf.contains("pid /tmp/run/nginx.pid;"));
    assert!(conf.contains("events { worker_connections 4096; }"));
}

#[test]
fn minimal_scenario_gets_defaults() {
    let s = parse(MINI).unwrap();
    assert_eq!((s.rounds, s.cooldown), (1, Duration::ZERO));
    assert_eq!(s.loads[0].duration, Duration::from_secs(10));
    assert_eq!(s.loads[0].request, RequestSpec::default());
}

#[test]
fn unknown_key_names_line_and_key() {
    let text = FULL.replace("timeout = \"10s\"", "timeout = \"10s\"\ntimout = \"1s\"");
    assert_error(&text, "target[1].ready.timout", "remove the key");
    let e = parse(&text).unwrap_err();
    assert!(e.line.is_some());
}

/// Issue 35 (9b): a missing key is reported at the table that lacks it, the top level too.
#[test]
fn a_missing_key_names_the_table_that_lacks_it() {
    let no_name = MINI.replacen("name = \"m\"\n", "", 1);
    let e = parse(&no_name).unwrap_err().to_string();
    assert!(
        e.contains("(top level)") && e.contains("missing field `name`"),
        "{e}"
    );
    assert!(!e.contains("target[0]"), "{e}");
    let described = format!("description = \"d\"\n{no_name}");
    let e = parse(&described).unwrap_err().to_string();
    assert!(
        e.contains("(top level)") && !e.contains("description:"),
        "{e}"
    );
    let no_model = MINI.replace("model = \"closed\"\n", "");
    assert_error(&no_model, "load[0]", "missing field `model`");
    let no_kind = MINI.replace("kind = \"upstream\"\n", "");
    let e = parse(&no_kind).unwrap_err().to_string();
    assert!(e.contains("target[0]"), "{e}");
}

/// MINI with `[target.upstream]` holding `line`.
fn with_upstream(line: &str) -> String {
    MINI.replace(
        "kind = \"upstream\"\n",
        &format!("kind = \"upstream\"\n[target.upstream]\n{line}\n"),
    )
}

#[test]
fn upstream_settings_are_read_by_the_backends_own_parsers() {
    let s = parse(&with_upstream(
        "delay = \"uniform:1ms..5ms\"\nhiccup = \"300ms/1s\"\nbody_size = \"4KiB\"\n\
         max_served_conns = 3\nroutes = [\"/json\"]",
    ))
    .unwrap();
    let u = s.targets[0].upstream.as_ref().unwrap();
    let ms = Duration::from_millis;
    let delay = loadbench_upstream::DelaySpec::Uniform {
        low: ms(1),
        high: ms(5),
    };
    let hiccup = loadbench_upstream::Hiccup {
        stall: ms(300),
        every: ms(1000),
    };
    assert_eq!(u.serve.delay, Some(delay));
    assert_eq!(u.serve.hiccup, Some(hiccup));
    assert_eq!(u.serve.body_size, Some(4096));
    assert_eq!(u.serve.max_served_conns, Some(3));
    assert_eq!(u.routes, ["/json"]);
}

#[test]
fn bad_upstream_settings_name_their_key_at_load() {
    let cases = [
        ("max_served_conns = 0", "max_served_conns", "at least 1"),
        ("delay = \"bogus\"", "delay", "invalid delay \"bogus\""),
        ("delay = \"2h\"", "delay", "at most 1h"),
        ("hiccup = \"x\"", "hiccup", "STALL/EVERY"),
        ("hiccup = \"1s/1s\"", "hiccup", "shorter than the period"),
        ("body_size = \"huge\"", "body_size", "invalid size"),
        ("body_size = \"2GiB\"", "body_size", "at most 1GiB"),
        ("threads = 0", "threads", "at least 1"),
        ("max_concurrency = 0", "max_concurrency", "at least 1"),
        ("status = 700", "status", "between 200 and 599"),
        ("fail_rate = 1.5", "fail_rate", "between 0 and 1"),
    ];
    for (line, key, words) in cases {
        let text = with_upstream(line);
        let e = assert_key(&text, &format!("target[0].upstream.{key}"), words);
        assert!(e.to_string().starts_with("bench/scn.toml"), "{e}");
    }
}

#[test]
fn command_target_without_command() {
    let text = MINI.replace("kind = \"upstream\"", "kind = \"command\"");
    assert_error(&text, "target[0].command", "add command =");
}

#[test]
fn upstream_target_with_command() {
    let text = MINI.replace(
        "kind = \"upstream\"",
        "kind = \"upstream\"\ncommand = \"x\"",
    );
    assert_error(&text, "target[0].command", "remove command");
}

#[test]
fn port_clash() {
    let text = FULL
        .replace(
            "kind = \"upstream\"\nport = \"auto\"",
            "kind = \"upstream\"\nport = 8080",
        )
        .replace("name = \"haproxy\"", "name = \"haproxy\"\nport = 8080");
    assert_error(&text, "target[2].port", "distinct ports");
}

#[test]
fn unknown_placeholder() {
    let text = FULL.replace("bind 127.0.0.1:{port}", "bind 127.0.0.1:{prot}");
    assert_error(&text, "target[2].config[0].template", "{prot}");
}

#[test]
fn upstream_placeholder_without_proxy_to() {
    let text = FULL.replace("proxy_to = \"backend\"\nstop_signal", "stop_signal");
    assert_error(&text, "target[1].config[0].template", "proxy_to");
}

#[test]
fn load_naming_missing_target() {
    let text = FULL.replace("\"haproxy\", \"backend\"]", "\"haproxy\", \"envoy\"]");
    assert_error(&text, "load[0].targets", "envoy");
}

#[test]
fn bad_duration() {
    let text = FULL.replace("timeout = \"10s\"", "timeout = \"10 parsecs\"");
    assert_error(&text, "target[1].ready.timeout", "10 parsecs");
}

#[test]
fn bad_cpuset() {
    let text = FULL.replace("cpuset = \"0\"", "cpuset = \"0-x\"");
    assert_error(&text, "generator.cpuset", "0-1,3");
}

#[test]
fn zero_rounds_and_mismatched_model() {
    assert_error(
        &MINI.replace("name = \"m\"", "name = \"m\"\nrounds = 0"),
        "rounds",
        "rounds = 1",
    );
    assert_error(
        &MINI.replace("\"closed\"", "\"open\""),
        "load[0].model",
        "rate =",
    );
}

#[test]
fn targets_start_after_what_they_depend_on_and_circles_are_errors() {
    let lb = MINI.replace(
        "[[target]]\nname = \"a\"",
        "[[target]]\nname = \"lb\"\ncommand = \"x\"\nargs = [\"{port:a}\"]\nproxy_to = \"a\"\n\n[[target]]\nname = \"a\"",
    );
    let s = parse(&lb).unwrap();
    assert_eq!(s.targets[0].name, "lb");
    assert_eq!(s.start_order(Path::new("t")).unwrap(), [1, 0]);
    let circle = lb.replace("kind = \"upstream\"", "command = \"y\"\nproxy_to = \"lb\"");
    assert_error(&circle, "target[", "circle");
}

#[test]
fn max_connections_is_for_open_loads_only() {
    assert_error(
        &format!("{MINI}max_connections = 10\n"),
        "load[0].max_connections",
        "only for open",
    );
    let open = MINI.replace("connections = [1]", "rate = [100]\nmax_connections = 1500");
    let s = parse(&open.replace("\"closed\"", "\"open\"")).unwrap();
    assert!(matches!(
        s.loads[0].levels[..],
        [LoadShape::Open {
            max_connections: 1500,
            ..
        }]
    ));
}

#[test]
fn port_of_another_target_renders_and_unknown_names_are_errors() {
    let lb = MINI.replace(
        "[[load]]",
        "[[target]]\nname = \"lb\"\ncommand = \"x\"\nargs = [\"{port:b-2}\"]\n\n[[load]]",
    );
    assert_error(&lb, "target[1].args[0]", "name one of the targets");
    let s = parse(&lb.replace("b-2", "lb")).unwrap();
    let ports = HashMap::from([("lb".to_string(), 7001)]);
    let values = s.placeholders(&s.targets[1], &ports, Path::new("/d"));
    assert_eq!(render_template("{port:lb}", &values).unwrap(), "7001");
}

/// A scenario with upstream targets `a` and `b` and these loads (their keys beside `targets`).
fn with_loads(loads: &[&str]) -> String {
    let mut text = String::from(
        "name = \"m\"\n[[target]]\nname = \"a\"\nkind = \"upstream\"\n\
         [[target]]\nname = \"b\"\nkind = \"upstream\"\n",
    );
    for l in loads {
        text.push_str(&format!("\n[[load]]\ntargets = [\"a\"]\n{l}\n"));
    }
    text
}

const CLOSED: &str = "model = \"closed\"\nconnections = [1]";

/// Asserts that `text` fails with exactly `key` on one line saying `words` and a fix, naming no
/// command-line flag.
fn assert_key(text: &str, key: &str, words: &str) -> ScenarioError {
    let e = parse(text).unwrap_err();
    let line = e.to_string();
    assert_eq!(e.key, key, "{line}");
    assert!(!line.contains('\n'), "{line}");
    assert!(line.contains(words), "{line} should say {words}");
    assert!(line.contains("; fix: "), "{line}");
    assert!(
        !line.contains("--") && !line.contains(" -c"),
        "{line} names a flag"
    );
    e
}

#[test]
fn invalid_slo_names_its_load_key_and_line() {
    let text = with_loads(&[CLOSED, CLOSED, "model = \"find-max\"\nslo = \"p99 < fast\""]);
    let e = assert_key(&text, "load[2].slo", "'p99 < fast'");
    assert_eq!(e.line, Some(text.lines().count()));
}

#[test]
fn bad_load_duration_names_its_key() {
    let text = with_loads(&[&format!("{CLOSED}\nduration = \"10 parsecs\"")]);
    assert_key(&text, "load[0].duration", "10 parsecs");
}

#[test]
fn zero_and_absurd_connections_are_refused() {
    let zero = with_loads(&["model = \"closed\"\nconnections = [5, 0]"]);
    assert_key(&zero, "load[0].connections", "above zero");
    let million = with_loads(&["model = \"closed\"\nconnections = [1000000]"]);
    assert_key(&million, "load[0].connections", "65535");
    let negative = with_loads(&["model = \"closed\"\nconnections = [-1]"]);
    assert_key(&negative, "load[0].connections", "-1");
}

#[test]
fn zero_and_negative_rates_are_blamed_on_rate() {
    for rate in ["[-5]", "[100, 0]"] {
        let text = with_loads(&[&format!("model = \"open\"\nrate = {rate}")]);
        assert_key(&text, "load[0].rate", "not a rate above zero");
    }
}

#[test]
fn steps_longer_than_a_day_are_refused() {
    let long = with_loads(&[&format!("{CLOSED}\nduration = \"25h\"")]);
    assert_key(&long, "load[0].duration", "longer than a day");
    let warmup = with_loads(&[&format!("{CLOSED}\nwarmup = \"48h\"")]);
    assert_key(&warmup, "load[0].warmup", "longer than a day");
    let huge = with_loads(&[&format!("{CLOSED}\nduration = \"1000000h\"")]);
    assert_key(
        &huge,
        "load[0].duration",
        "'1000000h' is longer than a year",
    );
    let day = with_loads(&[&format!("{CLOSED}\nduration = \"24h\"")]);
    assert_eq!(parse(&day).unwrap().loads[0].duration, MAX_STEP);
}

#[test]
fn zero_max_connections_and_zero_rounds_are_refused() {
    let open = with_loads(&["model = \"open\"\nrate = [10]\nmax_connections = 0"]);
    assert_key(&open, "load[0].max_connections", "above zero");
    let find_max = with_loads(&["model = \"find-max\"\nslo = \"p99<5ms\"\nmax_connections = 0"]);
    assert_key(&find_max, "load[0].max_connections", "above zero");
    let rounds = with_loads(&[CLOSED]).replace("name = \"m\"", "name = \"m\"\nrounds = 0");
    assert_key(&rounds, "rounds", "at least 1");
}

#[test]
fn send_window_and_connect_limit_pace_open_and_find_max_loads() {
    let s = parse(&with_loads(&[
        "model = \"open\"\nrate = [10]\nsend_window = \"0\"\nconnect_limit = 8",
        "model = \"find-max\"\nslo = \"p99<5ms\"\nsend_window = \"5ms\"\nsend_batch = 16",
        "model = \"open\"\nrate = [10]",
    ]))
    .unwrap();
    let pacing: Vec<_> = s.loads.iter().map(|l| l.pacing).collect();
    assert_eq!(pacing[0].send_window, Duration::ZERO);
    assert_eq!(pacing[0].connect_limit, 8);
    assert_eq!(pacing[1].send_window, Duration::from_millis(5));
    assert_eq!(
        (pacing[0].send_batch, pacing[1].send_batch),
        (loadbench_plan::DEFAULT_SEND_BATCH, 16)
    );
    assert_eq!(
        pacing[1].connect_limit,
        loadbench_plan::DEFAULT_CONNECT_LIMIT
    );
    assert_eq!(pacing[2], loadbench_plan::OpenPacing::default());
}

#[test]
fn bad_send_windows_and_connect_limits_name_the_key() {
    let closed = with_loads(&[&format!("{CLOSED}\nsend_window = \"1ms\"")]);
    assert_key(&closed, "load[0].send_window", "only for open and find-max");
    let closed = with_loads(&[&format!("{CLOSED}\nconnect_limit = 4")]);
    assert_key(
        &closed,
        "load[0].connect_limit",
        "only for open and find-max",
    );
    let closed = with_loads(&[&format!("{CLOSED}\nsend_batch = 8")]);
    assert_key(&closed, "load[0].send_batch", "only for open and find-max");
    for batch in [0, loadbench_plan::MAX_SEND_BATCH + 1] {
        let bad = with_loads(&[&format!(
            "model = \"open\"\nrate = [10]\nsend_batch = {batch}"
        )]);
        assert_key(&bad, "load[0].send_batch", "out of range");
    }
    let wide = with_loads(&["model = \"open\"\nrate = [10]\nsend_window = \"1s\""]);
    assert_key(&wide, "load[0].send_window", "longer than 100ms");
    let zero = with_loads(&["model = \"find-max\"\nslo = \"p99<5ms\"\nconnect_limit = 0"]);
    assert_key(&zero, "load[0].connect_limit", "above zero");
    let words = with_loads(&["model = \"open\"\nrate = [10]\nsend_window = \"soon\""]);
    assert!(parse(&words)
        .unwrap_err()
        .to_string()
        .contains("send_window"));
}

#[test]
fn settings_of_another_model_are_refused() {
    let rate = with_loads(&[&format!("{CLOSED}\nrate = [100]")]);
    assert_key(&rate, "load[0].model", "connections = [10, 50]");
    let empty = with_loads(&["model = \"open\"\nrate = []"]);
    assert_key(&empty, "load[0].model", "rate = [1000, 5000]");
    let unknown = with_loads(&["model = \"closd\"\nconnections = [1]"]);
    assert_key(&unknown, "load[0].model", "closd");
}

#[test]
fn one_level_needs_no_list() {
    let s = parse(&with_loads(&[
        "model = \"closed\"\nconnections = 10",
        "model = \"open\"\nrate = 100",
    ]))
    .unwrap();
    assert_eq!(s.loads[0].levels, closed(&[10]));
    let open = LoadShape::Open {
        schedule: Schedule::constant(100.0, Duration::from_secs(10)),
        max_connections: loadbench_plan::DEFAULT_MAX_CONNECTIONS,
    };
    assert_eq!(s.loads[1].levels, [open]);
}

#[test]
fn keepalive_is_on_unless_a_load_turns_it_off() {
    let s = parse(MINI).unwrap();
    assert!(s.loads[0].keepalive);
    let s = parse(&format!("{MINI}keepalive = false\n")).unwrap();
    assert!(!s.loads[0].keepalive);
    assert_key(
        &format!("{MINI}keepalive = \"no\"\n"),
        "load[0].keepalive",
        "bool",
    );
}

#[test]
fn pipeline_is_one_unless_a_keepalive_load_sets_it_closed_or_open() {
    assert_eq!(parse(MINI).unwrap().loads[0].pipeline, 1);
    let s = parse(&format!("{MINI}pipeline = 16\n")).unwrap();
    assert_eq!(s.loads[0].pipeline, 16);
    for (extra, words) in [
        ("pipeline = 0\n", "give 1 to 1024"),
        ("pipeline = 8\nkeepalive = false\n", "needs keep-alive"),
    ] {
        let e = parse(&format!("{MINI}{extra}")).unwrap_err().to_string();
        assert!(e.contains("load[0].pipeline") && e.contains(words), "{e}");
    }
    let open = MINI.replace(
        "model = \"closed\"\ntargets = [\"a\"]\nconnections = [1]",
        "model = \"open\"\ntargets = [\"a\"]\nrate = [10]\nmax_connections = 4",
    );
    let s = parse(&format!("{open}pipeline = 8\n")).unwrap();
    assert_eq!(s.loads[0].pipeline, 8);
}

#[test]
fn source_addrs_spread_a_loads_connections() {
    assert!(parse(MINI).unwrap().loads[0].source_addrs.is_empty());
    let s = parse(&format!("{MINI}source_addrs = \"127.0.0.2-127.0.0.4\"\n")).unwrap();
    assert_eq!(s.loads[0].source_addrs.len(), 3);
    assert_key(
        &format!("{MINI}source_addrs = \"127.0.0.9-127.0.0.2\"\n"),
        "load[0].source_addrs",
        "empty range",
    );
}

/// Issue 11: source addresses that cannot reach a load's target are refused when the file is
/// loaded (naming the key), not when the step runs after the targets started.
#[test]
fn source_addrs_that_cannot_reach_the_target_are_refused_on_load() {
    let v6 = MINI.replace(
        "kind = \"upstream\"\n",
        "kind = \"upstream\"\nurl = \"http://[::1]:{port}/\"\n",
    );
    assert!(parse(&v6).is_ok());
    let text = format!("{v6}source_addrs = \"127.0.0.2-127.0.0.4\"\n");
    assert_error(
        &text,
        "load[0].source_addrs",
        "127.0.0.2 is IPv4 but the target is IPv6",
    );
    assert_error(&text, "load[0].source_addrs", "give IPv6 source addresses");
    let v4 = format!("{MINI}source_addrs = \"::1\"\n");
    assert_error(
        &v4,
        "load[0].source_addrs",
        "::1 is IPv6 but the target is IPv4",
    );
    let remote = MINI.replace(
        "kind = \"upstream\"\n",
        "kind = \"upstream\"\nurl = \"http://192.0.2.7:{port}/\"\n",
    );
    let text = format!("{remote}source_addrs = \"127.0.0.2\"\n");
    assert_error(
        &text,
        "load[0].source_addrs",
        "loopback source 127.0.0.2 cannot reach",
    );
    let ok = format!("{v6}source_addrs = \"::1\"\n");
    assert!(parse(&ok).is_ok());
}

#[test]
fn scenario_dir_is_the_absolute_folder_of_the_scenario_file() {
    let s = parse(MINI).unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(s.dir, cwd.join("bench"));
    let values = s.placeholders(&s.targets[0], &HashMap::new(), Path::new("/run/a"));
    assert_eq!(
        values["scenario_dir"],
        cwd.join("bench").display().to_string()
    );
    assert_eq!(values["dir"], "/run/a");
    let bare = Scenario::parse(MINI, Path::new("scn.toml")).unwrap();
    assert_eq!(bare.dir, cwd);
}

#[test]
fn readiness_waits_thirty_seconds_by_default() {
    let s = parse(MINI).unwrap();
    assert_eq!(s.targets[0].ready.timeout, Duration::from_secs(30));
    assert_eq!(ReadySpec::default().timeout, Duration::from_secs(30));
}

#[test]
fn a_load_may_list_weighted_requests() {
    let text = with_loads(&[&format!(
        "{CLOSED}\n[[load.requests]]\npath = \"/json\"\nweight = 3\n\
         [[load.requests]]\nmethod = \"POST\"\npath = \"/echo\"\nbody = \"{{}}\"\n\
         headers = {{ \"X-A\" = \"1\" }}\n"
    )]);
    let s = parse(&text).unwrap();
    let r = &s.loads[0].requests;
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].path.as_str(), r[0].weight, r[0].method.as_str()),
        ("/json", 3, "GET")
    );
    assert_eq!((r[1].method.as_str(), r[1].weight), ("POST", 1));
    assert_eq!(r[1].request().body.as_deref(), Some("{}"));
    assert_eq!(r[1].headers.get("X-A").map(String::as_str), Some("1"));
    assert!(parse(MINI).unwrap().loads[0].requests.is_empty());
}

#[test]
fn a_mix_beside_a_request_or_with_a_zero_weight_is_refused() {
    let both = with_loads(&[&format!(
        "{CLOSED}\n[load.request]\npath = \"/a\"\n[[load.requests]]\npath = \"/b\"\n"
    )]);
    assert_key(&both, "load[0].requests", "beside [load.request]");
    let zero = with_loads(&[&format!(
        "{CLOSED}\n[[load.requests]]\npath = \"/b\"\nweight = 0\n"
    )]);
    assert_key(&zero, "load[0].requests", "weight 0 of /b");
    let unknown = with_loads(&[&format!(
        "{CLOSED}\n[[load.requests]]\npath = \"/b\"\nshare = 2\n"
    )]);
    assert!(parse(&unknown).unwrap_err().to_string().contains("share"));
}

#[test]
fn a_loads_tls_options_are_read_with_cacert_relative_to_the_file() {
    let s = parse(MINI).unwrap();
    let default = crate::scenario::LoadTls {
        insecure: false,
        cacert: None,
        client: None,
        resume: true,
        http3: false,
    };
    assert_eq!(s.loads[0].tls, default);
    let text = format!("{MINI}insecure = true\ncacert = \"certs/ca.pem\"\ntls_resume = false\n");
    let s = parse(&text).unwrap();
    let tls = &s.loads[0].tls;
    assert!(tls.insecure && !tls.resume);
    assert_eq!(tls.cacert.as_deref(), Some(Path::new("bench/certs/ca.pem")));
}

#[test]
fn http3_is_read_with_its_streams_and_refused_beside_http2() {
    let s = parse(&format!("{MINI}http3 = true\nstreams = 4\n")).unwrap();
    assert!(s.loads[0].tls.http3);
    assert_eq!(s.loads[0].http2, Some(4), "streams per connection");
    let load = &s.loads[0];
    let spec = load.spec(&load.levels[0], "https://127.0.0.1:8443");
    assert!(
        spec.transport.http3 && !spec.transport.http2,
        "{:?}",
        spec.transport
    );
    assert_eq!(spec.transport.streams, Some(4));
    assert_error(
        &format!("{MINI}http3 = true\nhttp2 = true\n"),
        "load[0].http3",
        "give one of them",
    );
}

#[test]
fn http2_and_streams_are_read_and_checked_like_the_flags() {
    assert_eq!(parse(MINI).unwrap().loads[0].http2, None);
    let s = parse(&format!("{MINI}http2 = true\n")).unwrap();
    assert_eq!(s.loads[0].http2, Some(1));
    let s = parse(&format!("{MINI}http2 = true\nstreams = 8\n")).unwrap();
    assert_eq!(s.loads[0].http2, Some(8));
    let s = parse(&format!("{MINI}http2 = true\nkeepalive = false\n")).unwrap();
    assert_eq!(s.loads[0].http2, Some(1), "one request per connection");
    for (extra, key, words) in [
        ("streams = 4\n", "load[0].streams", "add http2 = true"),
        (
            "http2 = true\nstreams = 0\n",
            "load[0].streams",
            "give 1 to 10000",
        ),
        (
            "http2 = true\npipeline = 4\n",
            "load[0].pipeline",
            "streams = N instead",
        ),
        (
            "http2 = true\nstreams = 4\nkeepalive = false\n",
            "load[0].streams",
            "one request per connection",
        ),
    ] {
        assert_error(&format!("{MINI}{extra}"), key, words);
    }
    let open = MINI.replace(
        "model = \"closed\"\ntargets = [\"a\"]\nconnections = [1]",
        "model = \"open\"\ntargets = [\"a\"]\nrate = [10]\nmax_connections = 4",
    );
    // The open model opens streams, then connections: accepted with keep-alive.
    let s = parse(&format!("{open}http2 = true\nstreams = 8\n")).unwrap();
    assert_eq!(s.loads[0].http2, Some(8));
    assert_error(
        &format!("{open}http2 = true\nkeepalive = false\n"),
        "load[0].http2",
        "closed loads only",
    );
}

#[test]
fn a_client_certificate_needs_its_key_and_both_are_relative_to_the_file() {
    let text = format!("{MINI}cert = \"certs/client.pem\"\nkey = \"certs/client.key\"\n");
    let s = parse(&text).unwrap();
    let (cert, key) = s.loads[0].tls.client.clone().unwrap();
    assert_eq!(cert, Path::new("bench/certs/client.pem"));
    assert_eq!(key, Path::new("bench/certs/client.key"));
    assert_error(
        &format!("{MINI}cert = \"c.pem\"\n"),
        "load[0].cert",
        "add key",
    );
    assert_error(
        &format!("{MINI}key = \"c.key\"\n"),
        "load[0].key",
        "add cert",
    );
}

#[test]
fn a_closed_or_open_loads_slo_and_a_targets_slo_are_gates() {
    let mut text = with_loads(&[
        &format!("{CLOSED}\nslo = \"p99<50ms,errors<1%,rps>10\""),
        "model = \"open\"\nrate = [10]\nslo = \"errors<=3\"",
        "model = \"find-max\"\nslo = \"p99<5ms\"",
    ]);
    text = text.replacen(
        "name = \"b\"\nkind = \"upstream\"\n",
        "name = \"b\"\nkind = \"upstream\"\nslo = \"mean<1s\"\n",
        1,
    );
    let s = parse(&text).unwrap();
    let texts = |i: usize| s.loads[i].gates.as_ref().map(|g| g.text.clone());
    assert_eq!(texts(0).as_deref(), Some("p99<50ms,errors<1%,rps>10"));
    assert_eq!(s.loads[0].gates.as_ref().unwrap().gates.len(), 3);
    assert_eq!(texts(1).as_deref(), Some("errors<=3"));
    // A find-max load's slo stays its search's.
    assert_eq!(texts(2), None);
    assert!(matches!(s.loads[2].levels[0], LoadShape::FindMax { .. }));
    let g = s.bench_gates();
    assert_eq!((g.all.len(), g.loads[0].len(), g.loads[2].len()), (0, 3, 0));
    assert_eq!(g.targets["b"][0].text, "mean<1s");
    assert!(!g.targets.contains_key("a"));
}

#[test]
fn gate_mistakes_in_a_scenario_name_their_key() {
    let e = assert_key(
        &with_loads(&[&format!("{CLOSED}\nslo = \"latency<5ms\"")]),
        "load[0].slo",
        "unknown metric 'latency'",
    );
    assert!(e.line.is_some());
    assert_key(
        &with_loads(&["model = \"find-max\"\nslo = \"errors<1%\""]),
        "load[0].slo",
        "not a latency SLO",
    );
    assert_key(
        &with_loads(&[&format!("{CLOSED}\nslo = \"a/ghost>0.9\"")]),
        "load[0].slo",
        "'ghost', which the scenario does not have",
    );
    // Both targets exist, but the load runs only a.
    assert_key(
        &with_loads(&[&format!("{CLOSED}\nslo = \"a/b>0.9\"")]),
        "load[0].slo",
        "no load runs both",
    );
}

#[test]
fn a_loads_script_is_read_relative_to_the_file_and_checked_at_load() {
    let dir = std::env::temp_dir().join(format!("lb-scn-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ok.lua"), "wrk.method = 'POST'\n").unwrap();
    std::fs::write(dir.join("bad.lua"), "wrk.method = \n").unwrap();
    let file = dir.join("scn.toml");
    let with = |line: &str| format!("{MINI}{line}\n");
    let s = Scenario::parse(
        &with("script = \"ok.lua\"\nscript_args = [\"a\", \"b\"]"),
        &file,
    )
    .unwrap();
    let spec = s.loads[0].script.clone().unwrap();
    assert_eq!(spec.path, dir.join("ok.lua"));
    assert_eq!(spec.args, ["a", "b"]);
    let err = |line: &str| Scenario::parse(&with(line), &file).unwrap_err().to_string();
    let e = err("script = \"bad.lua\"");
    assert!(
        e.contains("load[0].script") && e.contains("bad.lua:2:"),
        "{e}"
    );
    let e = err("script = \"missing.lua\"");
    assert!(
        e.contains("load[0].script") && e.contains("missing.lua"),
        "{e}"
    );
    let e = err("script_args = [\"a\"]");
    assert!(e.contains("load[0].script_args"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a WebSocket or gRPC target cannot be combined with is refused when the file loads,
/// before any target starts, with the plan's own line and the load's key.
#[test]
fn protocol_clashes_are_refused_when_the_file_loads() {
    let ws = "name = \"w\"\n[[target]]\nname = \"echo\"\nkind = \"upstream\"\n\
        url = \"ws://127.0.0.1:{port}\"\n[[load]]\nmodel = \"closed\"\ntargets = [\"echo\"]\n\
        connections = [1]\n";
    assert!(parse(ws).is_ok(), "a plain WebSocket load loads");
    assert_error(
        &format!("{ws}pipeline = 4\n"),
        "load[0]",
        "--pipeline cannot be used",
    );
    assert_error(
        &format!("{ws}http2 = true\n"),
        "load[0]",
        "--http2 cannot be used",
    );
    assert_error(
        &format!("{ws}keepalive = false\n"),
        "load[0]",
        "--no-keepalive",
    );
    let grpc = ws.replace("ws://", "grpc://");
    assert_error(&grpc, "load[0]", "one framed protobuf message");
    // An HTTP target of the same load is not a WebSocket one: pipelining is fine there.
    let http = ws.replace("ws://", "http://");
    assert!(parse(&format!("{http}pipeline = 4\n")).is_ok());
}

/// A `grpc://` target's load names its call with `proto` (relative to the scenario file) and
/// `grpc_method`, its `body` the JSON message: read and encoded when the file loads, so the
/// step's request is the framed message to the method's path; mistakes are one line naming
/// the key.
#[test]
fn a_grpc_load_reads_its_call_from_the_proto_when_the_file_loads() {
    let dir = std::env::temp_dir().join(format!("lb-scn-grpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let proto = "syntax = \"proto3\";\npackage t;\nmessage Req { string name = 1; }\n\
        service S { rpc Do (Req) returns (Req); }\n";
    std::fs::write(dir.join("t.proto"), proto).unwrap();
    let file = dir.join("scn.toml");
    let text = |request: &str| {
        format!(
            "name = \"g\"\n[[target]]\nname = \"g\"\nkind = \"upstream\"\n\
             url = \"grpc://127.0.0.1:{{port}}\"\n[[load]]\nmodel = \"closed\"\n\
             targets = [\"g\"]\nconnections = [1]\n[load.request]\n{request}"
        )
    };
    let ok = text("proto = \"t.proto\"\ngrpc_method = \"t.S/Do\"\nbody = '{\"name\": \"x\"}'\n");
    let s = Scenario::parse(&ok, &file).unwrap();
    let load = &s.loads[0];
    let spec = load.spec(&load.levels[0], "grpc://127.0.0.1:9");
    assert_eq!(spec.url, "grpc://127.0.0.1:9/t.S/Do");
    assert_eq!(spec.request.method, "POST");
    // Field 1, length 1, "x", behind the 5-byte gRPC prefix.
    let framed = vec![0, 0, 0, 0, 3, 0x0a, 1, b'x'];
    assert_eq!(spec.request.body, Body::Bytes(framed));
    let error = |request: &str| {
        Scenario::parse(&text(request), &file)
            .unwrap_err()
            .to_string()
    };
    let e = error("proto = \"t.proto\"\ngrpc_method = \"t.S/Nope\"\n");
    assert!(
        e.contains("load[0].request") && e.contains("has no method Nope"),
        "{e}"
    );
    let e = error("grpc_method = \"t.S/Do\"\n");
    assert!(
        e.contains("load[0].request.grpc_method") && e.contains("proto ="),
        "{e}"
    );
    let e = error("proto = \"t.proto\"\ngrpc_method = \"t.S/Do\"\nbody = '{\"nope\": 1}'\n");
    assert!(e.contains("does not match t.Req"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ws_match` is `--ws-match` in a scenario: the step's spec carries it, a fixed body without
/// the field and a target that is not WebSocket are refused when the file loads.
#[test]
fn ws_match_in_a_scenario_is_checked_when_the_file_loads() {
    let ws = "name = \"w\"\n[[target]]\nname = \"echo\"\nkind = \"upstream\"\n\
        url = \"ws://127.0.0.1:{port}\"\n[[load]]\nmodel = \"closed\"\ntargets = [\"echo\"]\n\
        connections = [1]\nws_match = \"id\"\n";
    let ok = format!("{ws}[load.request]\nbody = '{{\"id\": 1}}'\n");
    let s = parse(&ok).unwrap();
    let load = &s.loads[0];
    let spec = load.spec(&load.levels[0], "ws://127.0.0.1:9");
    assert_eq!(spec.transport.ws_match.as_deref(), Some("id"));
    let valued = format!("{ws}[load.request]\nbody = '{{\"id\": {{{{seq}}}}}}'\n");
    assert!(
        parse(&valued).is_ok(),
        "with values the plan checks the first message"
    );
    let without = format!("{ws}[load.request]\nbody = '{{\"other\": 1}}'\n");
    assert_error(&without, "load[0].ws_match", "has no");
    let http = ok.replace("ws://", "http://");
    assert_error(&http, "load[0]", "--ws-match id matches WebSocket answers");
}
