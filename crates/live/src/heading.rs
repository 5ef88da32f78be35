//! What a running load is called on the dashboard and the live page: for `run` and `find-max`
//! the command and the target's URL; in a bench the scenario, the target's name (its URL is a
//! port chosen at random for a `kind = "upstream"` target) and the step: the load, its level
//! label (`c=50`, `1000/s`), the round, and the step's place in the matrix. [`BenchSteps`]
//! follows a bench's steps in the harness's order to name the one running.

use loadbench_harness::bench::{bench_loads, steps, Step};
use loadbench_harness::scenario::Scenario;
use loadbench_model::BenchLoad;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The name of the load running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// `run`, `find-max`, or `bench NAME`.
    pub command: String,
    /// The target: its name in a bench, else its URL.
    pub target: String,
    /// In a bench: `closed c=50, round 1 of 3 (step 4 of 12)`.
    pub step: Option<String>,
}

impl Heading {
    /// `run` or `find-max` against `url`.
    pub fn plain(command: &str, url: &str) -> Heading {
        Heading {
            command: command.to_string(),
            target: url.to_string(),
            step: None,
        }
    }

    /// `loadbench bench web: up, closed c=2, round 1 of 2 (step 1 of 4)`.
    pub fn text(&self) -> String {
        let step = self
            .step
            .as_ref()
            .map_or(String::new(), |s| format!(", {s}"));
        format!("loadbench {}: {}{step}", self.command, self.target)
    }
}

/// A bench's steps in the order they run, and how many have finished.
#[derive(Debug)]
pub struct BenchSteps {
    name: String,
    steps: Vec<Step>,
    loads: Vec<BenchLoad>,
    rounds: u32,
    done: AtomicUsize,
}

impl BenchSteps {
    /// Every step of `s`, none finished.
    pub fn new(s: &Scenario) -> BenchSteps {
        BenchSteps {
            name: s.name.clone(),
            steps: steps(s),
            loads: bench_loads(s),
            rounds: s.rounds,
            done: AtomicUsize::new(0),
        }
    }

    /// `done` steps have finished.
    pub fn finished(&self, done: usize) {
        self.done.store(done, Ordering::Relaxed);
    }

    /// The step running (the first not finished) as the metrics' labels ([`crate::metrics`]):
    /// the target(s), the load's name, its level label and the round (from 1).
    pub fn running_labels(&self) -> Option<Vec<(String, String)>> {
        let step = self.steps.get(self.done.load(Ordering::Relaxed))?;
        let load = self.loads.get(step.load)?;
        Some(vec![
            ("target".into(), step.targets.join("+")),
            ("load".into(), load.name.clone()),
            ("level".into(), load.level_label(step.level)),
            ("round".into(), (step.round + 1).to_string()),
        ])
    }

    /// The heading of the step running (the first not finished), if any is left.
    pub fn running(&self) -> Option<Heading> {
        let i = self.done.load(Ordering::Relaxed);
        let step = self.steps.get(i)?;
        let load = self.loads.get(step.load)?;
        Some(Heading {
            command: format!("bench {}", self.name),
            target: step.targets.join(" + "),
            step: Some(format!(
                "{} {}, round {} of {} (step {} of {})",
                load.name,
                load.level_label(step.level),
                step.round + 1,
                self.rounds,
                i + 1,
                self.steps.len()
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_running_step_names_the_target_load_level_and_round() {
        let text = r#"
name = "web"
rounds = 2
[[target]]
name = "up"
kind = "upstream"
[[target]]
name = "nginx"
kind = "upstream"
[[load]]
name = "closed"
model = "closed"
targets = ["up", "nginx"]
connections = [50, 100]
duration = "1s"
[[load]]
model = "open"
targets = ["up"]
rate = [1000]
duration = "1s"
"#;
        let s = Scenario::parse(text, Path::new("web.toml")).unwrap();
        let b = BenchSteps::new(&s);
        let first = b.running().unwrap();
        assert_eq!(
            first.text(),
            "loadbench bench web: up, closed c=50, round 1 of 2 (step 1 of 10)"
        );
        b.finished(1);
        assert_eq!(b.running().unwrap().target, "nginx");
        b.finished(5);
        assert_eq!(
            b.running().unwrap().step.as_deref(),
            Some("closed c=100, round 1 of 2 (step 6 of 10)")
        );
        b.finished(9);
        let open = b.running().unwrap();
        assert!(
            open.step
                .as_deref()
                .unwrap()
                .starts_with("open-2 1000/s, round 2 of 2"),
            "{open:?}"
        );
        b.finished(10);
        assert_eq!(b.running(), None);
        assert_eq!(
            Heading::plain("run", "http://127.0.0.1:1/").text(),
            "loadbench run: http://127.0.0.1:1/"
        );
    }
}
