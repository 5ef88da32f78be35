use super::*;
use crate::evidence::{
    CgroupEvidence, EphemeralPorts, OomKill, PortSockets, TargetExit, TcpCounters,
};

fn kernel(tcp: TcpCounters, sockets: PortSockets) -> KernelEvidence {
    KernelEvidence {
        window_ms: 1000,
        ports: vec![8080],
        tcp,
        sockets,
        ephemeral: EphemeralPorts {
            in_use_peak: 10,
            range_low: 32768,
            range_high: 60999,
        },
        background_retransmits: None,
        host: None,
    }
}

fn kinds(why: &Why) -> Vec<FindingKind> {
    why.findings.iter().map(|f| f.kind).collect()
}

fn single_threaded(top: f64, total: f64) -> TargetEvidence {
    TargetEvidence {
        target: "app".into(),
        threads: 2,
        busiest: vec![ThreadShare {
            name: "lua worker 0".into(),
            tid: 7,
            cores: top,
            runnable: 0.0,
        }],
        cpu_cores: total,
        allowed_cores: 2.0,
        ..Default::default()
    }
}

#[test]
fn a_full_listener_with_overflows_names_the_accept_queue_and_the_slow_connects() {
    let tcp = TcpCounters {
        listen_overflows: 12_400,
        syn_retransmits: 300,
        retransmitted_segments: 700,
        ..Default::default()
    };
    let sockets = PortSockets {
        backlog: 128,
        accept_queue_peak: 129,
        readings: 10,
        ..Default::default()
    };
    let k = kernel(tcp, sockets);
    let why = diagnose(&Inputs {
        kernel: Some(&k),
        connect_max_us: Some(3_020_000.0),
        ..Default::default()
    });
    let f = &why.findings[0];
    assert_eq!(f.kind, FindingKind::AcceptQueueOverflow);
    assert!(f.text.contains("12,400 times (backlog 128"), "{}", f.text);
    assert!(f.text.contains("slowest connect took 3.0 s"), "{}", f.text);
    assert_eq!(f.figures["backlog"], 128.0);
    // The SYN (and SYN-ACK) retries are explained by the overflow, not reported again.
    assert_eq!(kinds(&why), [FindingKind::AcceptQueueOverflow]);
}

#[test]
fn overflows_elsewhere_stay_silent_when_our_listener_never_filled() {
    let tcp = TcpCounters {
        listen_overflows: 50,
        ..Default::default()
    };
    let sockets = PortSockets {
        backlog: 511,
        accept_queue_peak: 3,
        readings: 10,
        ..Default::default()
    };
    let k = kernel(tcp, sockets);
    let why = diagnose(&Inputs {
        kernel: Some(&k),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::NoClearBottleneck]);
    assert!(why.findings[0].text.contains("listen queues"), "{:?}", why);
}

#[test]
fn ports_near_the_range_end_are_reported() {
    let mut k = kernel(TcpCounters::default(), PortSockets::default());
    k.ephemeral.in_use_peak = 27_000;
    let why = diagnose(&Inputs {
        kernel: Some(&k),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::EphemeralPorts]);
    assert!(why.findings[0].text.contains("27,000 of its 28,232"));
}

#[test]
fn a_throttled_cgroup_is_named_with_its_share_of_periods() {
    let mut t = single_threaded(0.3, 0.45);
    t.cgroup = Some(CgroupEvidence {
        nr_periods: 100,
        nr_throttled: 38,
        throttled_usec: 1_200_000,
        ..Default::default()
    });
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::CpuThrottled]);
    assert!(why.findings[0]
        .text
        .contains("in 38% of periods (1.2 s throttled)"));
}

#[test]
fn memory_events_and_a_near_fd_limit_are_reported() {
    let mut t = single_threaded(0.1, 0.1);
    t.cgroup = Some(CgroupEvidence {
        memory_max: 3,
        ..Default::default()
    });
    t.open_fds = 1000;
    t.fd_limit = Some(1024);
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        ..Default::default()
    });
    assert_eq!(
        kinds(&why),
        [FindingKind::FdLimit, FindingKind::MemoryPressure]
    );
}

#[test]
fn one_saturated_thread_makes_the_target_bound_though_cores_idle() {
    let t = single_threaded(0.87, 0.9);
    let cpu = CpuView {
        generator_used: 0.8,
        generator_cores: 2.0,
        targets_used: 0.9,
        target_cores: 2.0,
        other_used: 0.1,
        host_cores: 2.0,
        others_known: false,
    };
    assert_eq!(
        verdict(&cpu, std::slice::from_ref(&t), None),
        Bottleneck::TargetBound
    );
    assert_eq!(verdict(&cpu, &[], None), Bottleneck::Neither);
    // The generator at its limit too (the demo's one generator thread): the thread that never
    // waits for work still limits; without it, both sides full reads "neither".
    let both = CpuView {
        generator_used: 1.0,
        generator_cores: 1.0,
        ..cpu
    };
    assert_eq!(
        verdict(&both, std::slice::from_ref(&t), None),
        Bottleneck::TargetBound
    );
    assert_eq!(verdict(&both, &[], None), Bottleneck::GeneratorBound);
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        cpu: Some(cpu),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::HotThread]);
    let text = &why.findings[0].text;
    assert!(
        text.contains(
            "one thread (lua worker 0) of 'app' at 87% of a core while the target used 0.90 of the 2 cores it may use: it is saturated"
        ),
        "{text}"
    );
}

#[test]
fn busy_threads_spread_over_cores_are_not_one_hot_thread() {
    let t = single_threaded(0.85, 1.7);
    assert!(hot_thread(&t).is_none());
}

#[test]
fn a_busy_host_warns_and_a_quiet_one_does_not() {
    let mut cpu = CpuView {
        generator_used: 0.5,
        generator_cores: 2.0,
        targets_used: 0.3,
        target_cores: 2.0,
        other_used: 0.96,
        host_cores: 2.0,
        others_known: false,
    };
    let why = diagnose(&Inputs {
        cpu: Some(cpu),
        ..Default::default()
    });
    assert_eq!(
        kinds(&why),
        [FindingKind::BusyHost, FindingKind::NoClearBottleneck]
    );
    assert!(why.findings[0].text.contains("0.96 of the host's 2 cores"));
    cpu.other_used = 0.2;
    let quiet = diagnose(&Inputs {
        cpu: Some(cpu),
        ..Default::default()
    });
    assert_eq!(kinds(&quiet), [FindingKind::NoClearBottleneck]);
}

#[test]
fn a_saturated_generator_is_named_with_its_share() {
    let cpu = CpuView {
        generator_used: 0.96,
        generator_cores: 1.0,
        targets_used: 0.4,
        target_cores: 1.0,
        ..Default::default()
    };
    let why = diagnose(&Inputs {
        cpu: Some(cpu),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::GeneratorBound]);
    assert!(why.findings[0]
        .text
        .starts_with("the generator used 96% of its 1 core"));
}

#[test]
fn counts_have_thousands_separators() {
    assert_eq!(count(0), "0");
    assert_eq!(count(999), "999");
    assert_eq!(count(12_400), "12,400");
    assert_eq!(count(1_234_567), "1,234,567");
}

#[test]
fn resets_elsewhere_stay_silent_when_the_load_had_no_failures() {
    let tcp = TcpCounters {
        attempt_fails: 45,
        established_resets: 2,
        ..Default::default()
    };
    let k = kernel(tcp, PortSockets::default());
    let mut inputs = Inputs {
        kernel: Some(&k),
        failed_requests: Some(0),
        ..Default::default()
    };
    assert_eq!(kinds(&diagnose(&inputs)), [FindingKind::NoClearBottleneck]);
    inputs.failed_requests = Some(12);
    let why = diagnose(&inputs);
    assert_eq!(kinds(&why), [FindingKind::Resets]);
    assert!(why.findings[0]
        .text
        .starts_with("47 connections were reset (established 2, failed connects 45"));
}

#[test]
fn retransmits_elsewhere_stay_silent_when_no_request_waited_for_a_timeout_and_on_loopback_blame_this_host(
) {
    let tcp = TcpCounters {
        retransmitted_segments: 600,
        ..Default::default()
    };
    let k = kernel(tcp, PortSockets::default());
    let mut inputs = Inputs {
        kernel: Some(&k),
        latency_max_us: Some(60_000.0),
        ..Default::default()
    };
    assert_eq!(kinds(&diagnose(&inputs)), [FindingKind::NoClearBottleneck]);
    inputs.latency_max_us = Some(410_000.0);
    let remote = diagnose(&inputs);
    assert_eq!(kinds(&remote), [FindingKind::Retransmits]);
    let fix = |why: &Why| why.findings[0].fix.clone().unwrap();
    assert!(fix(&remote).contains("network path"), "{remote:?}");
    // Issue 35 point 8: over loopback no packet crosses a network; the finding says so and
    // points at this host, never at "the network path".
    inputs.loopback = true;
    let why = diagnose(&inputs);
    assert_eq!(kinds(&why), [FindingKind::Retransmits]);
    assert!(
        why.findings[0].text.contains("ran over loopback"),
        "{why:?}"
    );
    assert!(!fix(&why).contains("network"), "{why:?}");
    assert!(fix(&why).contains("this host"), "{why:?}");
}

/// A 1-core host reads "1 core", not "1 cores".
#[test]
fn one_core_is_said_in_the_singular() {
    assert_eq!(cores_text(1.0), "1 core");
    assert_eq!(cores_text(2.0), "2 cores");
    assert_eq!(cores_text(0.5), "0.50 cores");
}

#[test]
fn retransmits_at_the_hosts_background_blame_nothing() {
    // A busy host: 600 retransmits in the window, 250 over as long at its background; some
    // request took 410 ms (on a busy host one always does).
    let tcp = TcpCounters {
        retransmitted_segments: 600,
        ..Default::default()
    };
    let mut k = kernel(tcp, PortSockets::default());
    k.background_retransmits = Some(250.0);
    let inputs = Inputs {
        kernel: Some(&k),
        latency_max_us: Some(410_000.0),
        ..Default::default()
    };
    assert_eq!(kinds(&diagnose(&inputs)), [FindingKind::NoClearBottleneck]);
    // Well above it (3× + 10), they are the load's.
    let quiet = KernelEvidence {
        background_retransmits: Some(20.0),
        ..k.clone()
    };
    let why = diagnose(&Inputs {
        kernel: Some(&quiet),
        ..inputs
    });
    assert_eq!(kinds(&why), [FindingKind::Retransmits]);
    let f = &why.findings[0];
    assert_eq!(f.figures["background_retransmits"], 20.0);
    assert!(
        f.text.contains("against 20 at the host's background"),
        "{}",
        f.text
    );
}

#[test]
fn a_saturated_thread_is_not_the_limit_when_no_core_was_left_to_use() {
    // Under a half-core quota, the busy thread waits for the quota, not for a second thread.
    let mut t = single_threaded(0.39, 0.45);
    t.busiest[0].runnable = 1.0;
    t.allowed_cores = 0.5;
    assert!(hot_thread(&t).is_none());
    t.allowed_cores = 1.0;
    assert_eq!(hot_thread(&t).map(|h| h.tid), Some(7));
}

/// The generator's threads as the harness records them: one worker, the process's others idle.
fn generator_threads(cores: f64, runnable: f64) -> TargetEvidence {
    TargetEvidence {
        target: "generator".into(),
        threads: 4,
        busiest: vec![
            ThreadShare {
                name: "loadbench".into(),
                tid: 11,
                cores,
                runnable,
            },
            ThreadShare {
                name: "lb-sampler".into(),
                tid: 12,
                cores: 0.01,
                runnable: 0.01,
            },
        ],
        cpu_cores: cores + 0.01,
        allowed_cores: 1.0,
        ..Default::default()
    }
}

#[test]
fn a_saturated_generator_thread_makes_the_generator_bound_on_a_shared_core() {
    // Pinned to a core it shared with busy neighbours: 70% of a core by CPU share alone reads
    // "neither", but its one thread never waited for the network (runnable 98%).
    let cpu = CpuView {
        generator_used: 0.7,
        generator_cores: 1.0,
        targets_used: 0.6,
        target_cores: 2.0,
        other_used: 0.1,
        host_cores: 2.0,
        others_known: false,
    };
    assert_eq!(verdict(&cpu, &[], None), Bottleneck::Neither);
    let g = generator_threads(0.7, 0.98);
    assert_eq!(verdict(&cpu, &[], Some(&g)), Bottleneck::GeneratorBound);
    let why = diagnose(&Inputs {
        cpu: Some(cpu),
        generator: Some(&g),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::GeneratorBound]);
    let f = &why.findings[0];
    assert_eq!(
        f.text,
        "the generator used 70% of its 1 core; its busiest thread (loadbench) was on a CPU 70% and runnable 98% of the time (it waited for a CPU 28% of the time: something else shares its core): these numbers are loadbench's limit, not the target's"
    );
    assert!((f.figures["generator_thread_waiting"] - 0.28).abs() < 1e-9);
    // Runnable only 80% yet off a CPU 30% of it: still a shared core, still the limit.
    let shared = generator_threads(0.5, 0.8);
    assert_eq!(
        verdict(&cpu, &[], Some(&shared)),
        Bottleneck::GeneratorBound
    );
    // A thread that waits for the network and gets a CPU whenever it wants one is not.
    let idle = generator_threads(0.3, 0.35);
    assert_eq!(verdict(&cpu, &[], Some(&idle)), Bottleneck::Neither);
    // An open load that kept its schedule: the thread's waits for a CPU (a light load on a busy
    // host) delayed sends without limiting them, so its threads do not make it the limit.
    let light = generator_threads(0.01, 0.54);
    let of = |kept_schedule| {
        kinds(&diagnose(&Inputs {
            cpu: Some(cpu),
            generator: Some(&light),
            kept_schedule,
            ..Default::default()
        }))
    };
    assert_eq!(of(false), [FindingKind::GeneratorBound]);
    assert!(
        !of(true).contains(&FindingKind::GeneratorBound),
        "{:?}",
        of(true)
    );
    assert_eq!(f.figures["generator_thread_runnable"], 0.98);
    assert_eq!(f.figures["generator_thread_cores"], 0.7);
    assert_eq!(f.figures["generator_threads"], 4.0);
    assert!(why.looked_at.contains(&"generator threads".to_string()));
}

#[test]
fn one_generator_thread_at_a_full_core_is_the_limit_though_the_others_idle() {
    // Two worker threads on two cores: one full, one idle (its connections finished early).
    let cpu = CpuView {
        generator_used: 1.0,
        generator_cores: 2.0,
        targets_used: 0.5,
        target_cores: 2.0,
        ..Default::default()
    };
    let mut g = generator_threads(0.97, 0.0);
    g.allowed_cores = 2.0;
    assert_eq!(verdict(&cpu, &[], Some(&g)), Bottleneck::GeneratorBound);
    // The same process waiting for the target: neither rule fires.
    let waiting = generator_threads(0.4, 0.45);
    assert_eq!(verdict(&cpu, &[], Some(&waiting)), Bottleneck::Neither);
    let why = diagnose(&Inputs {
        cpu: Some(cpu),
        generator: Some(&waiting),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::NoClearBottleneck]);
}

#[test]
fn a_saturated_target_thread_still_wins_over_a_saturated_generator_thread() {
    // The demo's case: both sides' single threads full; the target's never waits for work.
    let t = single_threaded(0.87, 0.9);
    let g = generator_threads(0.9, 0.99);
    let cpu = CpuView {
        generator_used: 0.9,
        generator_cores: 2.0,
        targets_used: 0.9,
        target_cores: 2.0,
        ..Default::default()
    };
    assert_eq!(
        verdict(&cpu, std::slice::from_ref(&t), Some(&g)),
        Bottleneck::TargetBound
    );
}

/// 24 of 32 connections starved over 4 s by a server serving 8, 50 ms per request.
fn starved_by_a_limit() -> Starvation {
    Starvation {
        starved: 24,
        connections: 32,
        window_us: 4_000_000,
        served: 8,
        in_service: 7.9,
        rate: 158.0,
        mean_service_us: 50_000.0,
        served_median: 80,
    }
}

#[test]
fn starved_connections_behind_a_limit_are_a_connection_limit_and_the_target_is_the_limit() {
    let why = diagnose(&Inputs {
        starvation: Some(starved_by_a_limit()),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::ConnectionLimit]);
    let f = &why.findings[0];
    assert_eq!(f.figures["pool_size"], 7.9);
    assert_eq!(f.figures["served"], 8.0);
    assert!(
        f.text
            .starts_with("the target serves about 8 connections at once: 24 of 32"),
        "{}",
        f.text
    );
    assert!(f.fix.as_deref().unwrap().contains("send at most 8 at once"));
    assert_eq!(judge(&why), Bottleneck::TargetBound);
}

#[test]
fn starved_connections_behind_an_overflowing_accept_queue_are_the_queues() {
    let tcp = TcpCounters {
        listen_overflows: 900,
        syn_retransmits: 400,
        ..Default::default()
    };
    let sockets = PortSockets {
        backlog: 1,
        accept_queue_peak: 2,
        readings: 10,
        ..Default::default()
    };
    let k = kernel(tcp, sockets);
    let s = Starvation {
        starved: 184,
        connections: 200,
        served: 16,
        ..starved_by_a_limit()
    };
    let why = diagnose(&Inputs {
        kernel: Some(&k),
        starvation: Some(s),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::AcceptQueueOverflow]);
    let f = &why.findings[0];
    assert_eq!(f.figures["starved"], 184.0);
    assert!(f
        .text
        .ends_with("184 of 200 connections were still waiting to be served at the end"));
    assert_eq!(s.cause_in(&why), StarvedCause::AcceptQueue);
    assert!(s
        .explain(StarvedCause::AcceptQueue)
        .contains("not a connection limit"));
}

#[test]
fn slow_answers_on_a_busy_host_are_not_a_connection_limit() {
    // 11 of 32 served, each a request or two, requests taking seconds.
    let slow = Starvation {
        starved: 21,
        served: 11,
        in_service: 10.5,
        rate: 5.0,
        mean_service_us: 2_100_000.0,
        served_median: 1,
        ..starved_by_a_limit()
    };
    assert_eq!(slow.cause(false), StarvedCause::SlowAnswers);
    let why = diagnose(&Inputs {
        starvation: Some(slow),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::NoClearBottleneck]);
    let said = slow.explain(slow.cause_in(&why));
    assert!(
        said.contains("answers were slow") && !said.contains("serves at most"),
        "{said}"
    );
}

#[test]
fn one_judgement_a_throttled_target_is_target_bound_whatever_its_cpu_share() {
    let t = TargetEvidence {
        target: "nginx".into(),
        cpu_cores: 0.3,
        allowed_cores: 0.5,
        cgroup: Some(CgroupEvidence {
            nr_periods: 100,
            nr_throttled: 60,
            throttled_usec: 900_000,
            ..Default::default()
        }),
        ..Default::default()
    };
    // CPU shares alone say neither side is saturated (0.3 of 2 host cores counted).
    let cpu = CpuView {
        generator_used: 0.4,
        generator_cores: 2.0,
        targets_used: 0.3,
        target_cores: 2.0,
        host_cores: 2.0,
        ..Default::default()
    };
    let targets = [t];
    assert_eq!(verdict(&cpu, &targets, None), Bottleneck::Neither);
    let why = diagnose(&Inputs {
        targets: &targets,
        cpu: Some(cpu),
        ..Default::default()
    });
    assert_eq!(why.findings[0].kind, FindingKind::CpuThrottled);
    assert_eq!(judge(&why), Bottleneck::TargetBound);
}

#[test]
fn a_fixed_wait_with_idle_cpus_sets_the_rate_and_blames_no_side() {
    let cpu = CpuView {
        generator_used: 0.05,
        generator_cores: 2.0,
        targets_used: 0.02,
        target_cores: 2.0,
        host_cores: 2.0,
        ..Default::default()
    };
    let little = Little {
        requests_per_sec: 318.0,
        mean_latency_us: 50_300.0,
        mean_service_us: 50_300.0,
    };
    let inputs = Inputs {
        cpu: Some(cpu),
        little: Some(little),
        closed_connections: Some(16),
        ..Default::default()
    };
    let why = diagnose(&inputs);
    assert_eq!(kinds(&why), [FindingKind::LatencyBound]);
    let f = &why.findings[0];
    assert!(f.text.starts_with("the wait sets the rate"), "{}", f.text);
    assert!(
        f.text.contains("16 connections ÷ 50.30ms = 318 req/s"),
        "{}",
        f.text
    );
    assert_eq!(judge(&why), Bottleneck::Neither);
    // A fast target (0.3 ms) is no wait; a busy one is CPU, not a wait.
    let fast = Little {
        mean_service_us: 300.0,
        ..little
    };
    let why = diagnose(&Inputs {
        little: Some(fast),
        ..inputs
    });
    assert_eq!(kinds(&why), [FindingKind::NoClearBottleneck]);
    let busy = CpuView {
        targets_used: 1.9,
        ..cpu
    };
    let why = diagnose(&Inputs {
        cpu: Some(busy),
        ..inputs
    });
    assert!(!kinds(&why).contains(&FindingKind::LatencyBound));
}

#[test]
fn a_target_killed_for_memory_died_and_the_memory_finding_names_only_what_moved() {
    // cgroup v1 with both limits set: the limit counters stay at 0 at an OOM kill.
    let mut t = single_threaded(0.1, 0.1);
    t.cgroup = Some(CgroupEvidence {
        oom_kills: 1,
        ..Default::default()
    });
    t.exited = Some(TargetExit {
        code: None,
        signal: Some(9),
    });
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        ..Default::default()
    });
    assert_eq!(
        kinds(&why),
        [FindingKind::TargetDied, FindingKind::MemoryPressure]
    );
    let died = &why.findings[0];
    assert!(
        died.text.starts_with("'app' died during the step (killed by SIGKILL): the kernel's OOM killer killed 1 process of its cgroup"),
        "{}",
        died.text
    );
    assert_eq!(died.figures["oom_kills"], 1.0);
    assert_eq!(
        why.findings[1].text,
        "'app' hit its cgroup's memory limit: 1 OOM kills"
    );
    assert_eq!(judge(&why), Bottleneck::TargetBound);
    assert!(!died.figures.contains_key("died_at_secs"));
    // An exit of its own: no OOM named, the log is the place to look.
    t.cgroup = None;
    t.exited = Some(TargetExit {
        code: Some(3),
        signal: None,
    });
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        ..Default::default()
    });
    assert_eq!(kinds(&why), [FindingKind::TargetDied]);
    assert!(
        why.findings[0].text.contains("(exit code 3);"),
        "{}",
        why.findings[0].text
    );
}

#[test]
fn the_kernel_logs_oom_kills_say_when_the_target_died_and_count_what_the_cgroup_missed() {
    let mut t = single_threaded(0.1, 0.1);
    t.cgroup = Some(CgroupEvidence::default());
    t.exited = Some(TargetExit {
        code: None,
        signal: Some(9),
    });
    // The kernel log's lines (as a v1 kernel wrote them in this project's OOM test) say when,
    // and count the kills the cgroup's counter missed (0 here).
    t.oom_killed = vec![
        OomKill {
            pid: 4597,
            comm: "tail".into(),
            at_secs: 2.51,
            main: false,
            line: "Memory cgroup out of memory: Killed process 4597 (tail) total-vm:67616kB, anon-rss:64640kB, file-rss:1596kB".into(),
        },
        OomKill {
            pid: 4590,
            comm: "loadbench".into(),
            at_secs: 2.63,
            main: true,
            line: "Memory cgroup out of memory: Killed process 4590 (loadbench) total-vm:90000kB, anon-rss:4000kB".into(),
        },
    ];
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        ..Default::default()
    });
    let died = &why.findings[0];
    assert_eq!(
        died.text,
        "'app' died 2.6 s into the step (killed by SIGKILL): the kernel's OOM killer killed 2 processes of its cgroup at its memory limit (kernel log: \"Memory cgroup out of memory: Killed process 4590 (loadbench) total-vm:90000kB\"); the figures from then on are of a target that was not running, and later steps fail until it is restarted"
    );
    assert_eq!(
        (
            died.figures["oom_kills"],
            died.figures["logged_oom_kills"],
            died.figures["died_at_secs"]
        ),
        (2.0, 2.0, 2.63)
    );
    // A kill the log alone saw, outside any cgroup: the host ran out of memory.
    t.cgroup = None;
    t.oom_killed.truncate(1);
    t.oom_killed[0].line = "Out of memory: Killed process 4597 (tail) total-vm:67616kB".into();
    let why = diagnose(&Inputs {
        targets: std::slice::from_ref(&t),
        ..Default::default()
    });
    assert!(
        why.findings[0].text.starts_with("'app' died 2.5 s into the step (killed by SIGKILL): the kernel's OOM killer killed 1 process of it: the host ran out of memory"),
        "{}",
        why.findings[0].text
    );
}

#[test]
fn a_run_judges_a_busy_host_only_when_the_others_are_known() {
    // `run`: no targets judged (target_cores 0); the host's other processes used a core.
    let mut cpu = CpuView {
        generator_used: 0.2,
        generator_cores: 2.0,
        other_used: 1.0,
        host_cores: 2.0,
        others_known: true,
        ..CpuView::default()
    };
    let kinds = |cpu: CpuView| -> Vec<FindingKind> {
        diagnose(&Inputs {
            cpu: Some(cpu),
            ..Inputs::default()
        })
        .findings
        .iter()
        .map(|f| f.kind)
        .collect()
    };
    assert!(kinds(cpu).contains(&FindingKind::BusyHost));
    // A loopback target whose process was not found: its CPU is among the others'.
    cpu.others_known = false;
    assert!(!kinds(cpu).contains(&FindingKind::BusyHost));
    // Known, but under half a core: not busy.
    cpu.others_known = true;
    cpu.other_used = 0.4;
    assert!(!kinds(cpu).contains(&FindingKind::BusyHost));
}
