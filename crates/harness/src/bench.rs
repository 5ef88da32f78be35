//! The bench matrix: every load × level × round × target of a scenario, run against started
//! targets while the sampler records their CPU and memory, each finished round added to the
//! [`BenchResult`] and handed to the caller (who saves it) before the next begins.
//!
//! Order: for each load and level, round after round, every target in turn (A B C A B C …), so
//! machine drift spreads evenly over the targets (see [`crate::bench_stats::interleave`]). A
//! `together` load runs all its targets at the same time in one step, one engine each; it records
//! one round per target and a combined round whose result is the exact merge of theirs.
//!
//! Every load runs through the runner library ([`loadbench_runner::run`],
//! [`loadbench_runner::find_max::search`]) from the typed [`LoadSpec`] the scenario's load builds
//! for each of its levels ([`ScenarioLoad::spec`]): nothing is turned back into text on the way.

use crate::evidence::{target_evidence, TargetReading};
use crate::generator::GeneratorWatch;
use crate::kmsg::{kills_of, KernelLog};
use crate::sampler::Sampler;
use crate::scenario::{Scenario, ScenarioLoad};
use crate::targets::{Running, Targets};
use loadbench_model::diagnose::{diagnose, judge, CpuView, Inputs};
use loadbench_model::{
    AppliedLimits, BenchLoad, BenchResult, BenchRound, Bottleneck, FindMaxResult, KernelEvidence,
    ResourceSummary, RunResult, Samples, StepEvidence, TargetEvidence, TargetExit, Window,
};
use loadbench_plan::{LoadShape, LoadSpec, Schedule, Stop};
use loadbench_runner::find_max::FindMaxSpec;
use loadbench_runner::kernel::KernelWatch;
use loadbench_runner::{Control, Observer, Quiet};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One step of the matrix: a load level, a round, and the targets loaded together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Index of the load in the scenario.
    pub load: usize,
    /// Index of the level in the load.
    pub level: usize,
    /// Round, from 0.
    pub round: u32,
    /// The targets loaded in this step (several for a `together` load).
    pub targets: Vec<String>,
}

/// The steps of a scenario in the order they run.
pub fn steps(s: &Scenario) -> Vec<Step> {
    let mut steps = Vec::new();
    for (li, l) in s.loads.iter().enumerate() {
        for level in 0..l.levels.len() {
            for round in 0..s.rounds {
                let groups: Vec<Vec<String>> = if l.together {
                    vec![l.targets.clone()]
                } else {
                    l.targets.iter().map(|t| vec![t.clone()]).collect()
                };
                steps.extend(groups.into_iter().map(|targets| Step {
                    load: li,
                    level,
                    round,
                    targets,
                }));
            }
        }
    }
    steps
}

/// The loads as recorded in the result.
pub fn bench_loads(s: &Scenario) -> Vec<BenchLoad> {
    s.loads
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let levels: Vec<loadbench_model::LoadShape> = l
                .levels
                .iter()
                .map(|level| level.map_schedule(Schedule::rate_segments))
                .collect();
            let model = levels.first().map_or("load", |s| s.model_name());
            BenchLoad {
                name: l
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}-{}", model.replace('_', "-"), i + 1)),
                targets: l.targets.clone(),
                together: l.together,
                levels,
                duration_ms: l.duration.as_millis() as u64,
                warmup_ms: l.warmup.as_millis() as u64,
                method: l.request.method.clone(),
                path: l.request.path.clone(),
                keepalive: l.keepalive,
                insecure: l.tls.insecure,
                http2_streams: l.http2,
                pipeline: l.pipeline,
            }
        })
        .collect()
}

/// Everything one matrix run needs.
pub struct Matrix<'a> {
    /// The scenario whose loads run.
    pub scenario: &'a Scenario,
    /// Its started targets.
    pub targets: &'a mut Targets,
    /// Samples the targets' resources; each step marks its start and end.
    pub sampler: &'a Sampler,
    /// Sees every load that runs alone (loads run `together` are quiet).
    pub observer: &'a dyn Observer,
    /// Set to end the current step early and skip the rest.
    pub stop: &'a Arc<AtomicBool>,
    /// Generator worker threads (`None`: one per core).
    pub threads: Option<u32>,
    /// The cores the generator may use (for the bottleneck verdict).
    pub generator_cores: f64,
    /// The cores this process could use before the generator was pinned: what a target
    /// without a CPU set may run on (its own affinity is the one it was started with).
    pub host_cores: f64,
    /// Per load (by identity) and target: the places of the values' sequence its steps took
    /// so far (docs/request-values.md); empty at the start.
    pub places: std::collections::HashMap<(usize, String), u64>,
}

impl Matrix<'_> {
    /// Runs every step, adding its rounds to `result` and calling `saved` after each; stops
    /// early (keeping what finished) when `stop` is set.
    pub fn run(
        &mut self,
        result: &mut BenchResult,
        saved: &mut dyn FnMut(&BenchResult, &[BenchRound]),
    ) {
        let all = steps(self.scenario);
        for (n, step) in all.iter().enumerate() {
            if self.stop.load(Ordering::Relaxed) {
                result.interrupted = true;
                break;
            }
            if n > 0 {
                self.cooldown();
            }
            let (rounds, samples) = self.step(n as u32 + 1, step, &mut result.warnings);
            result.rounds.extend(rounds.iter().cloned());
            result.steps_done += 1;
            result.resources = samples;
            result.recompute();
            saved(result, &rounds);
        }
        if self.stop.load(Ordering::Relaxed) {
            result.interrupted = true;
        }
    }

    fn cooldown(&self) {
        let until = Instant::now() + self.scenario.cooldown;
        while Instant::now() < until && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20).min(self.scenario.cooldown));
        }
    }

    /// Runs one step; returns its rounds and the resource series up to its end.
    fn step(
        &mut self,
        n: u32,
        step: &Step,
        warnings: &mut Vec<String>,
    ) -> (Vec<BenchRound>, Samples) {
        let load = &self.scenario.loads[step.load];
        let level = &load.levels[step.level];
        let dead: Vec<String> = self.targets.exited();
        let (start, end) = (format!("step:{n}:start"), format!("step:{n}:end"));
        let watch = self.watch(&step.targets);
        self.sampler.mark(&start);
        let outcomes: Vec<Outcome> = if let Some(d) = step.targets.iter().find(|t| dead.contains(t))
        {
            let e = format!("target '{d}' is no longer running (see its log under logs/)");
            step.targets
                .iter()
                .map(|_| Outcome::Failed(e.clone()))
                .collect()
        } else {
            self.load(load, level, &step.targets)
        };
        self.sampler.mark(&end);
        let mut evidence = self.evidence(watch);
        // A target whose main process ended during the step: how, for its finding.
        for t in evidence.1.iter_mut().filter(|t| !dead.contains(&t.target)) {
            t.exited = self.targets.exit_status(&t.target).map(|s| {
                use std::os::unix::process::ExitStatusExt;
                TargetExit {
                    code: s.code(),
                    signal: s.signal(),
                }
            });
        }
        let samples = self.sampler.snapshot();
        let window = measured_window(&samples, &start, &end, load.warmup);
        let mut rounds: Vec<BenchRound> = step
            .targets
            .iter()
            .zip(outcomes)
            .map(|(t, o)| {
                let mut r = self.round(n, step, t, o, &samples, window);
                self.explain(&mut r, &evidence, &samples);
                r
            })
            .collect();
        for r in rounds.iter().filter(|r| r.error.is_some()) {
            warnings.push(format!(
                "step {n}, target '{}': {}",
                r.target,
                r.error.as_deref().unwrap_or_default()
            ));
        }
        if step.targets.len() > 1 {
            rounds.extend(combined(n, step, &rounds, &samples, window));
        }
        (rounds, samples)
    }

    fn load(
        &mut self,
        load: &ScenarioLoad,
        level: &LoadShape<Schedule>,
        targets: &[String],
    ) -> Vec<Outcome> {
        // Each target's sequence goes on from the load's earlier steps (rounds and levels):
        // its ids stay unique in a database that lives through the bench.
        let key = |t: &String| (std::ptr::from_ref(load) as usize, t.clone());
        let mut specs: Vec<LoadSpec> = targets.iter().map(|t| self.spec(load, level, t)).collect();
        for (spec, t) in specs.iter_mut().zip(targets) {
            spec.values.first = self.places.get(&key(t)).copied().unwrap_or(0);
        }
        let outcomes = self.load_specs(level, &specs);
        for (o, t) in outcomes.iter().zip(targets) {
            *self.places.entry(key(t)).or_insert(0) += o.places();
        }
        outcomes
    }

    /// Runs the specs of one step: a find-max search each, one load alone, or all together.
    fn load_specs(&self, level: &LoadShape<Schedule>, specs: &[LoadSpec]) -> Vec<Outcome> {
        if let LoadShape::FindMax { .. } = level {
            return specs.iter().map(|s| self.find_max(s.clone())).collect();
        }
        if let [spec] = specs {
            return vec![self.run_one(spec, self.observer)];
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = specs
                .iter()
                .map(|spec| scope.spawn(|| self.run_one(spec, &Quiet)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Outcome::Failed("the load thread failed".into()))
                })
                .collect()
        })
    }

    /// The load a profile of `target` runs: its last closed or open load at that load's last
    /// level (a find-max search has no level of its own), as (load, level, spec).
    pub(crate) fn profile_load(&self, target: &str) -> Option<(usize, usize, LoadSpec)> {
        let (li, load) = self
            .scenario
            .loads
            .iter()
            .enumerate()
            .rev()
            .find(|(_, l)| {
                l.targets.iter().any(|t| t == target)
                    && !matches!(l.levels.first(), Some(LoadShape::FindMax { .. }))
            })?;
        let level = load.levels.len().checked_sub(1)?;
        Some((li, level, self.spec(load, &load.levels[level], target)))
    }

    /// Runs `spec` and keeps nothing of it (the profile's load); the error when it failed.
    pub(crate) fn run_unmeasured(&self, spec: &LoadSpec) -> Result<(), String> {
        loadbench_runner::run(spec, self.control(&Quiet))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn control<'b>(&'b self, observer: &'b dyn Observer) -> Control<'b> {
        Control {
            stop: self.stop,
            observer,
        }
    }

    fn run_one(&self, spec: &LoadSpec, observer: &dyn Observer) -> Outcome {
        match loadbench_runner::run(spec, self.control(observer)) {
            Ok(run) => Outcome::Run(Box::new(run)),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// The search of a find-max level's spec: its SLO and cap, each step as long as the
    /// load's `duration`, paced as the load says.
    fn find_max(&self, base: LoadSpec) -> Outcome {
        let LoadShape::FindMax {
            slo,
            max_connections,
        } = base.load.clone()
        else {
            return Outcome::Failed("not a find-max load".into());
        };
        let spec = FindMaxSpec {
            step_duration: match base.stop {
                Stop::Duration(d) => d,
                Stop::Requests(_) => Duration::from_secs(10),
            },
            max_connections,
            pacing: base.pacing,
            ..FindMaxSpec::new(base, slo)
        };
        match loadbench_runner::find_max::search(&spec, self.control(self.observer)) {
            Ok(f) => Outcome::FindMax(Box::new(f)),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// The typed load of one target at one level.
    fn spec(&self, load: &ScenarioLoad, level: &LoadShape<Schedule>, target: &str) -> LoadSpec {
        let base = self
            .targets
            .get(target)
            .map(|r| r.info.url.clone())
            .unwrap_or_default();
        LoadSpec {
            threads: self.threads,
            ..load.spec(level, &base)
        }
    }

    fn round(
        &self,
        n: u32,
        step: &Step,
        target: &str,
        outcome: Outcome,
        samples: &Samples,
        window: Window,
    ) -> BenchRound {
        let resources = samples.summary_in(target, window).ok().map(|mut r| {
            let at_start = samples.window(&format!("step:{n}:start"), &format!("step:{n}:end"));
            if let Some(rss) = at_start
                .ok()
                .and_then(|w| samples.rss_at(target, w.from_ms))
            {
                r.rss_start_bytes = rss;
            }
            r
        });
        let (result, find_max, error) = match outcome {
            Outcome::Run(r) => (Some(*r), None, None),
            Outcome::FindMax(f) => (None, Some(*f), None),
            Outcome::Failed(e) => (None, None, Some(e)),
        };
        BenchRound {
            step: n,
            load: step.load as u32,
            level: step.level as u32,
            round: step.round,
            target: target.to_string(),
            combined: false,
            window,
            result,
            find_max,
            resources,
            generator_cpu_mean_cores: samples.generator_cpu_mean(window),
            bottleneck: samples.bottleneck(self.generator_cores, self.target_cores(), window),
            evidence: None,
            why: Default::default(),
            error,
        }
    }

    /// Starts watching the kernel (the step's ports) and reads each target's counters.
    fn watch(&self, names: &[String]) -> StepWatch {
        let running: Vec<&Running> = names.iter().filter_map(|t| self.targets.get(t)).collect();
        StepWatch {
            kernel: KernelWatch::start(running.iter().map(|r| r.info.port).collect()),
            targets: running.iter().map(|r| reading(r)).collect(),
            generator: GeneratorWatch::start(),
            log: KernelLog::open(),
        }
    }

    /// The step's evidence: the kernel's, and each target's and the generator's between the
    /// two readings.
    fn evidence(&self, mut watch: StepWatch) -> Facts {
        let kills = watch.log.kills();
        let targets = watch
            .targets
            .iter()
            .filter_map(|(name, start)| {
                let r = self.targets.get(name)?;
                let end = reading(r).1;
                let mut e = target_evidence(name, start, &end, r.info.limits.cores);
                let main = r.process.pid();
                let pids: HashSet<u32> = start.tids().chain(end.tids()).chain([main]).collect();
                e.oom_killed = kills_of(&watch.log, &kills, &pids, main, &r.cgroup_dirs());
                Some(e)
            })
            .collect();
        let generator = watch.generator.finish(self.generator_cores);
        (watch.kernel.finish(), targets, generator)
    }

    /// Records the round's evidence, its verdict (a saturated thread counts) and its findings.
    fn explain(&self, r: &mut BenchRound, (kernel, targets, generator): &Facts, samples: &Samples) {
        let own: Vec<TargetEvidence> = targets
            .iter()
            .filter(|t| t.target == r.target)
            .cloned()
            .collect();
        let cpu = CpuView {
            generator_used: r.generator_cpu_mean_cores,
            generator_cores: self.generator_cores,
            targets_used: samples.targets_cpu_mean(r.window),
            target_cores: self.target_cores(),
            other_used: samples.other_cpu_mean(r.window),
            host_cores: samples.host_cores() as f64,
            others_known: true,
        };
        let of_run = r.measured_run().map(Inputs::of_run).unwrap_or_default();
        r.why = diagnose(&Inputs {
            kernel: Some(kernel),
            targets: &own,
            generator: Some(generator),
            cpu: Some(cpu),
            ..of_run
        });
        // One judgement: the verdict is the strongest finding's side.
        r.bottleneck = judge(&r.why);
        r.evidence = Some(StepEvidence {
            kernel: Some(kernel.clone()),
            targets: own,
            generator: Some(generator.clone()),
            other_cpu_cores: cpu.other_used,
            host_cores: cpu.host_cores,
            target_cores: cpu.target_cores,
        });
    }

    /// Cores all targets together may use: the union of their CPU sets (the host's cores when
    /// any target is unpinned), capped by the sum of their quotas when every target has one.
    fn target_cores(&self) -> f64 {
        let limits: Vec<&AppliedLimits> = self
            .targets
            .running
            .iter()
            .map(|r| &r.info.limits)
            .collect();
        let cores = if limits.iter().all(|l| l.cpuset.is_some()) {
            let mut cpus: Vec<usize> = limits
                .iter()
                .flat_map(|l| l.cpuset.iter().flatten().copied())
                .collect();
            cpus.sort_unstable();
            cpus.dedup();
            cpus.len() as f64
        } else {
            // Not this thread's affinity: once the generator is pinned, that is its CPU set.
            self.host_cores
        };
        let quotas: Option<f64> = limits.iter().map(|l| l.cpu_quota_cores).sum();
        quotas.map_or(cores, |q| cores.min(q))
    }
}

/// What a step watches from its start to its end.
struct StepWatch {
    kernel: KernelWatch,
    targets: Vec<(String, TargetReading)>,
    /// This process's own threads: the generator's.
    generator: GeneratorWatch,
    /// The kernel log from the step's start: OOM kills.
    log: KernelLog,
}

/// A step's evidence: the kernel's, each target's, the generator's.
type Facts = (KernelEvidence, Vec<TargetEvidence>, TargetEvidence);

/// A target's name and its counters now.
fn reading(r: &Running) -> (String, TargetReading) {
    let reading = TargetReading::take(r.process.pid(), &r.cgroup_dirs());
    (r.info.name.clone(), reading)
}

enum Outcome {
    Run(Box<RunResult>),
    FindMax(Box<FindMaxResult>),
    Failed(String),
}

impl Outcome {
    /// The places of the values' sequence it took (0 without values).
    fn places(&self) -> u64 {
        let of = |r: &RunResult| r.config.values.as_ref().map_or(0, |v| v.places);
        match self {
            Outcome::Run(r) => of(r),
            Outcome::FindMax(f) => f.steps.iter().map(|s| of(&s.run)).sum(),
            Outcome::Failed(_) => 0,
        }
    }
}

/// The step's window without its warm-up (the resources of the measured part).
fn measured_window(samples: &Samples, start: &str, end: &str, warmup: Duration) -> Window {
    let w = samples.window(start, end).unwrap_or(Window {
        from_ms: 0,
        to_ms: 0,
    });
    Window {
        from_ms: (w.from_ms + warmup.as_millis() as u64).min(w.to_ms),
        to_ms: w.to_ms,
    }
}

/// The combined round of a `together` step: the exact merge of the targets' results.
fn combined(
    n: u32,
    step: &Step,
    rounds: &[BenchRound],
    samples: &Samples,
    window: Window,
) -> Option<BenchRound> {
    let mut runs = rounds.iter().filter_map(|r| r.result.as_ref());
    let mut merged: RunResult = runs.next()?.clone();
    for r in runs {
        merged.stats.merge(&r.stats);
    }
    merged.config.url = step.targets.join(" + ");
    merged.finalize();
    Some(BenchRound {
        step: n,
        load: step.load as u32,
        level: step.level as u32,
        round: step.round,
        target: step.targets.join("+"),
        combined: true,
        window,
        result: Some(merged),
        find_max: None,
        resources: None::<ResourceSummary>,
        generator_cpu_mean_cores: samples.generator_cpu_mean(window),
        bottleneck: rounds.first().map_or(Bottleneck::Neither, |r| r.bottleneck),
        evidence: None,
        why: Default::default(),
        error: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const TWO: &str = r#"
name = "two"
rounds = 2
[[target]]
name = "a"
kind = "upstream"
[[target]]
name = "b"
kind = "upstream"
[[load]]
model = "closed"
targets = ["a", "b"]
connections = [1, 4]
[[load]]
model = "open"
targets = ["a", "b"]
together = true
rate = [100]
"#;

    #[test]
    fn steps_interleave_targets_within_rounds_and_together_is_one_step() {
        let s = Scenario::parse(TWO, Path::new("two.toml")).unwrap();
        let order: Vec<(usize, usize, u32, String)> = steps(&s)
            .into_iter()
            .map(|st| (st.load, st.level, st.round, st.targets.join("+")))
            .collect();
        let expect = [
            (0, 0, 0, "a"),
            (0, 0, 0, "b"),
            (0, 0, 1, "a"),
            (0, 0, 1, "b"),
            (0, 1, 0, "a"),
            (0, 1, 0, "b"),
            (0, 1, 1, "a"),
            (0, 1, 1, "b"),
            (1, 0, 0, "a+b"),
            (1, 0, 1, "a+b"),
        ];
        let expect: Vec<(usize, usize, u32, String)> = expect
            .iter()
            .map(|&(l, v, r, t)| (l, v, r, t.to_string()))
            .collect();
        assert_eq!(order, expect);
    }

    #[test]
    fn loads_record_levels_and_names() {
        let s = Scenario::parse(TWO, Path::new("two.toml")).unwrap();
        let loads = bench_loads(&s);
        let closed = |connections| loadbench_model::LoadShape::Closed { connections };
        assert_eq!(loads[0].levels, [closed(1), closed(4)]);
        assert_eq!(loads[0].name, "closed-1");
        assert_eq!(loads[1].name, "open-2");
        assert_eq!(loads[1].model_name(), "open");
        assert!(loads[1].together);
        assert_eq!(loads[0].level_label(1), "c=4");
        assert_eq!(loads[1].level_label(0), "100/s");
    }
}
