//! Scenario files: what `loadbench bench scenario.toml` reads.
//!
//! A scenario names the targets to start (a command with rendered config files, or the built-in
//! reference backend), their limits, how to tell they are ready, and the loads to run against
//! them. Everything is checked here, before any process starts, so that a mistake costs one
//! clear line naming the file, the key and the fix rather than a half-run benchmark.
//! docs/scenarios.md documents every key.
//!
//! Layout: `model.rs` holds the types serde reads, `de.rs` the values serde cannot read alone
//! (durations, sizes, signals, CPU lists, ports, SLOs), `validate.rs` the checks across values,
//! `load.rs` each `[[load]]` (as written, then typed and checked),
//! `template.rs` placeholders and rendering, `ports.rs` the ports of a run, and `error.rs` the
//! one-line [`ScenarioError`] (with toml's errors mapped to a line and key path).

mod de;
mod error;
mod load;
mod model;
mod ports;
mod spec;
mod template;
mod validate;

pub use de::{parse_duration, parse_size};
pub use error::ScenarioError;
pub use load::{MAX_CONNECTIONS, MAX_STEP};
pub use model::{
    ConfigFile, CpuSet, GeneratorSpec, Limits, LoadTls, MixRequest, PortSpec, ReadySpec,
    RequestSpec, ScenarioLoad, TargetKind, TargetSpec, UpstreamSpec,
};
pub use ports::allocate_ports;
pub use template::{placeholders_in, render_template, TemplateError, PLACEHOLDERS, PORT_OF};
pub use validate::dependencies;

use error::toml_error;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A validated scenario file: every value checked, every load typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Short name, used in result file names and reports.
    pub name: String,
    /// Free text shown in reports.
    pub description: Option<String>,
    /// How many times every load step is repeated.
    pub rounds: u32,
    /// Pause between rounds (and steps), so that targets settle.
    pub cooldown: Duration,
    /// Where the load generator runs.
    pub generator: GeneratorSpec,
    /// The processes under test (`[[target]]`).
    pub targets: Vec<TargetSpec>,
    /// The loads to run (`[[load]]`), in order.
    pub loads: Vec<ScenarioLoad>,
    /// The folder of the scenario file, absolute: `{scenario_dir}`, and where targets run.
    pub dir: PathBuf,
    /// Gates on every cell (`bench --slo`), beside the loads' and targets' own `slo`; set by
    /// the command line after loading, checked with [`Scenario::check_ratios`].
    pub gates: Vec<loadbench_model::Gate>,
    /// `--slo-allow-unjudged`: a gate that cannot be judged does not fail the bench.
    pub allow_unjudged: bool,
    /// `history = "…"`: the history database the result is appended to (docs/history.md),
    /// relative to the scenario's folder; `""` for the default path.
    pub history: Option<PathBuf>,
}

/// A scenario file as written, read by serde; [`ScenarioFile::validate`] makes it a [`Scenario`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default = "model::one")]
    rounds: u32,
    #[serde(default, deserialize_with = "de::duration")]
    cooldown: Duration,
    #[serde(default)]
    generator: GeneratorSpec,
    #[serde(rename = "target", default)]
    targets: Vec<TargetSpec>,
    #[serde(rename = "load", default)]
    loads: Vec<load::LoadFile>,
    #[serde(default)]
    history: Option<PathBuf>,
}

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = loadbench_plan::InputFile::SCENARIO
            .read_to_string(path)
            .map_err(|e| ScenarioError::new(path, "(file)", e.problem, &e.fix))?;
        Scenario::parse(&text, path)
    }

    /// Parses and validates scenario text; `file` names it in errors and anchors `template_file`.
    pub fn parse(text: &str, file: &Path) -> Result<Scenario, ScenarioError> {
        let written: ScenarioFile = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
        written.validate(file)
    }

    /// The target called `name`.
    pub fn target(&self, name: &str) -> Option<&TargetSpec> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// Every gate of the bench: `gates` on every cell, each load's and each target's `slo`.
    pub fn bench_gates(&self) -> loadbench_model::BenchGates {
        let list =
            |g: &Option<loadbench_model::Gates>| g.as_ref().map_or(Vec::new(), |g| g.gates.clone());
        loadbench_model::BenchGates {
            all: self.gates.clone(),
            loads: self.loads.iter().map(|l| list(&l.gates)).collect(),
            targets: self
                .targets
                .iter()
                .map(|t| (t.name.clone(), list(&t.slo)))
                .filter(|(_, g)| !g.is_empty())
                .collect(),
        }
    }

    /// Each ratio gate among `gates` names two targets of the scenario that one of `loads`
    /// runs both of; else a one-line problem and its fix.
    pub fn check_ratios<'a>(
        &self,
        gates: impl IntoIterator<Item = &'a loadbench_model::Gate>,
        loads: &[&ScenarioLoad],
    ) -> Result<(), String> {
        for g in gates {
            let loadbench_model::GateMetric::Ratio {
                numerator,
                denominator,
            } = &g.metric
            else {
                continue;
            };
            let names: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
            if let Some(unknown) = [numerator, denominator]
                .into_iter()
                .find(|n| !names.contains(&n.as_str()))
            {
                return Err(format!(
                    "'{}' names the target '{unknown}', which the scenario does not have: use two of {}",
                    g.text,
                    names.join(", ")
                ));
            }
            let both = |l: &&ScenarioLoad| {
                l.targets.contains(numerator) && l.targets.contains(denominator)
            };
            if !loads.iter().any(both) {
                return Err(format!(
                    "'{}' compares {numerator} and {denominator}, but no load runs both: add both to a load's targets",
                    g.text
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
