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
//! `template.rs` placeholders and rendering, `ports.rs` the ports of a run, and `error.rs` the
//! one-line [`ScenarioError`] (with toml's errors mapped to a line and key path).

mod de;
mod error;
mod model;
mod ports;
mod template;
mod validate;

pub use de::{parse_duration, parse_size};
pub use error::ScenarioError;
pub use model::{
    ConfigFile, CpuSet, GeneratorSpec, Limits, LoadModel, LoadSpec, PortSpec, ReadySpec,
    RequestSpec, TargetKind, TargetSpec, UpstreamSpec,
};
pub use ports::allocate_ports;
pub use template::{placeholders_in, render_template, TemplateError, PLACEHOLDERS, PORT_OF};
pub use validate::dependencies;

use error::toml_error;
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// A validated scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, used in result file names and reports.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// How many times every load step is repeated.
    #[serde(default = "model::one")]
    pub rounds: u32,
    /// Pause between rounds (and steps), so that targets settle.
    #[serde(default, deserialize_with = "de::duration")]
    pub cooldown: Duration,
    #[serde(default)]
    pub generator: GeneratorSpec,
    #[serde(rename = "target", default)]
    pub targets: Vec<TargetSpec>,
    #[serde(rename = "load", default)]
    pub loads: Vec<LoadSpec>,
}

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ScenarioError::new(
                path,
                "(file)",
                format!("cannot read it: {e}"),
                "check the path",
            )
        })?;
        Scenario::parse(&text, path)
    }

    /// Parses and validates scenario text; `file` names it in errors and anchors `template_file`.
    pub fn parse(text: &str, file: &Path) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
        s.validate(file)?;
        Ok(s)
    }

    /// The target called `name`.
    pub fn target(&self, name: &str) -> Option<&TargetSpec> {
        self.targets.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests;
