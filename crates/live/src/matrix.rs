//! The bench matrix as the dashboard shows it under the running load: one row per target with,
//! for each load, each level under its label (`closed c=50: ##  c=100: >.`, `open 1000/s: ..`)
//! and a cell per round (`#` done, `>` running, `.` left), and each running target's
//! CPU cores and memory from the sampler's newest sample, beside its limits. The steps run in
//! the harness's order ([`loadbench_harness::bench::steps`]), so the steps finished so far say
//! which cells are done and the next one is running.

use loadbench_harness::bench::{bench_loads, steps, Step};
use loadbench_harness::sampler::LatestSample;
use loadbench_harness::scenario::{Limits, Scenario};
use loadbench_model::human::bytes;
use loadbench_model::{BenchLoad, Sample};

/// What the bench has run and is running.
#[derive(Debug)]
pub struct Matrix {
    steps: Vec<Step>,
    loads: Vec<BenchLoad>,
    targets: Vec<(String, Limits)>,
    done: usize,
    latest: Option<LatestSample>,
}

impl Matrix {
    /// Every step of `s` not run yet, with the latest resource sample.
    pub fn new(s: &Scenario, latest: &LatestSample) -> Matrix {
        Matrix {
            steps: steps(s),
            loads: bench_loads(s),
            targets: s
                .targets
                .iter()
                .map(|t| (t.name.clone(), t.limits.clone()))
                .collect(),
            done: 0,
            latest: Some(latest.clone()),
        }
    }

    /// `done` steps have finished.
    pub fn finished(&mut self, done: usize) {
        self.done = done;
    }

    fn running(&self) -> Option<&Step> {
        self.steps.get(self.done)
    }

    /// The panel's lines: the counts, a row per target, the running targets' resources.
    pub fn lines(&self) -> Vec<String> {
        let running = usize::from(self.running().is_some());
        let left = self.steps.len() - self.done - running;
        let mut lines = vec![format!(
            "steps: {} done, {running} running, {left} left   (# done  > running  . left)",
            self.done
        )];
        let width = self.targets.iter().map(|t| t.0.len()).max().unwrap_or(0);
        for (name, _) in &self.targets {
            lines.push(format!("{name:<width$} {}", self.row(name)));
        }
        let sample = self.latest.as_ref().and_then(LatestSample::get);
        for t in self.running().map_or(&[][..], |s| &s.targets[..]) {
            lines.push(self.resources(t, sample.as_ref()));
        }
        lines
    }

    /// `closed c=2: ##  c=4: >.  open 1000/s: ..` for one target.
    fn row(&self, target: &str) -> String {
        let cells = |load: usize, level: usize| -> String {
            let mine = self.steps.iter().enumerate().filter(|(_, s)| {
                s.load == load && s.level == level && s.targets.iter().any(|t| t == target)
            });
            mine.map(|(i, _)| self.cell(i)).collect()
        };
        let mut parts = Vec::new();
        for (l, load) in self.loads.iter().enumerate() {
            let levels: Vec<String> = (0..load.levels.len())
                .map(|level| (level, cells(l, level)))
                .filter(|(_, c)| !c.is_empty())
                .map(|(level, c)| format!("{}: {c}", load.level_label(level)))
                .collect();
            if !levels.is_empty() {
                parts.push(format!("{} {}", load.name, levels.join("  ")));
            }
        }
        parts.join("   ")
    }

    fn cell(&self, step: usize) -> char {
        match step.cmp(&self.done) {
            std::cmp::Ordering::Less => '#',
            std::cmp::Ordering::Equal => '>',
            std::cmp::Ordering::Greater => '.',
        }
    }

    /// `nginx: CPU 0.93 cores of 1.00, memory 12.5MiB of 256.0MiB`.
    fn resources(&self, target: &str, sample: Option<&Sample>) -> String {
        let limits = self.targets.iter().find(|t| t.0 == target).map(|t| &t.1);
        let of = |limit: Option<String>| limit.map_or(String::new(), |l| format!(" of {l}"));
        let cpu_limit = of(limits.and_then(|l| l.cpus).map(|c| format!("{c:.2}")));
        let mem_limit = of(limits.and_then(|l| l.memory).map(|m| bytes(m as f64)));
        match sample.and_then(|s| s.targets.iter().find(|t| t.name == target)) {
            Some(t) => format!(
                "{target}: CPU {:.2} cores{cpu_limit}, memory {}{mem_limit}",
                t.cpu_cores,
                bytes(t.rss_bytes as f64)
            ),
            None => format!("{target}: not sampled yet"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const SCENARIO: &str = r#"
name = "m"
rounds = 2
[[target]]
name = "a"
kind = "upstream"
limits = { cpus = 1.5, memory = "256MiB" }
[[target]]
name = "bb"
kind = "upstream"
[[load]]
name = "closed"
model = "closed"
targets = ["a", "bb"]
connections = [2, 4]
duration = "1s"
"#;

    #[test]
    fn cells_are_done_running_or_left_in_step_order() {
        let s = Scenario::parse(SCENARIO, Path::new("m.toml")).unwrap();
        let mut m = Matrix::new(&s, &LatestSample::default());
        m.finished(1);
        let lines = m.lines();
        assert_eq!(
            lines[0].split("   ").next(),
            Some("steps: 1 done, 1 running, 6 left")
        );
        assert_eq!(lines[1], "a  closed c=2: #.  c=4: ..", "{lines:?}");
        assert_eq!(lines[2], "bb closed c=2: >.  c=4: ..", "{lines:?}");
        assert!(lines[3].ends_with(": not sampled yet"), "{lines:?}");
        m.finished(6);
        assert_eq!(m.lines()[1], "a  closed c=2: ##  c=4: #>");
        assert_eq!(m.lines()[2], "bb closed c=2: ##  c=4: #.");
        m.finished(8);
        assert!(m.lines()[0].starts_with("steps: 8 done, 0 running, 0 left"));
    }

    #[test]
    fn a_running_target_shows_its_cpu_and_memory_beside_its_limits() {
        let s = Scenario::parse(SCENARIO, Path::new("m.toml")).unwrap();
        let m = Matrix::new(&s, &LatestSample::default());
        let sample = Sample {
            t_ms: 1,
            targets: vec![loadbench_model::TargetSample {
                name: "a".into(),
                cpu_cores: 0.5,
                rss_bytes: 1 << 20,
                processes: 1,
            }],
            generator_cpu_cores: 0.0,
            core_busy: vec![],
            irq_cores: 0.0,
        };
        assert_eq!(
            m.resources("a", Some(&sample)),
            "a: CPU 0.50 cores of 1.50, memory 1.00MiB of 256.00MiB"
        );
    }
}
