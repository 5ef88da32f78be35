//! Scenario files: what `loadbench bench scenario.toml` reads.
//!
//! A scenario names the targets to start (a command with rendered config files, or the built-in
//! reference backend), their limits, how to tell they are ready, and the loads to run against
//! them. Everything is checked here, before any process starts, so that a mistake costs one
//! clear line naming the file, the key and the fix rather than a half-run benchmark.
//! docs/scenarios.md documents every key.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Placeholders that templates, args, env values, URLs and ready checks may use; besides these,
/// `{port:NAME}` is the port of the target called NAME (for load balancers with several backends).
pub const PLACEHOLDERS: [&str; 4] = ["port", "upstream", "dir", "name"];

/// Prefix of the placeholder naming another target's port: `{port:backend-2}`.
pub const PORT_OF: &str = "port:";

const DOCS: &str = "see docs/scenarios.md";

/// A validated scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, used in result file names and reports.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// How many times every load step is repeated.
    #[serde(default = "one")]
    pub rounds: u32,
    /// Pause between rounds (and steps), so that targets settle.
    #[serde(default, deserialize_with = "de_duration")]
    pub cooldown: Duration,
    #[serde(default)]
    pub generator: GeneratorSpec,
    #[serde(rename = "target", default)]
    pub targets: Vec<TargetSpec>,
    #[serde(rename = "load", default)]
    pub loads: Vec<LoadSpec>,
}

/// Where the load generator itself runs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    /// CPUs the generator is pinned to.
    #[serde(default)]
    pub cpuset: Option<CpuSet>,
    /// Worker threads; default: one per CPU in `cpuset` (or per core).
    #[serde(default)]
    pub threads: Option<u32>,
}

/// What a target is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// An external program (`command`, `args`).
    #[default]
    Command,
    /// The built-in reference backend (`loadbench serve`), configured by `[target.upstream]`.
    Upstream,
}

/// One process under test.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    pub name: String,
    #[serde(default)]
    pub kind: TargetKind,
    /// Program to run (kind = "command" only); placeholders allowed.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory; default: the per-run directory `{dir}`.
    #[serde(default)]
    pub workdir: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Loopback port the target listens on: a number, or "auto" for a free one.
    #[serde(default)]
    pub port: PortSpec,
    /// Name of the target this one forwards to; gives `{upstream}` = `127.0.0.1:<its port>`.
    #[serde(default)]
    pub proxy_to: Option<String>,
    /// URL to load; default `http://127.0.0.1:{port}`.
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub config: Vec<ConfigFile>,
    #[serde(default)]
    pub ready: ReadySpec,
    #[serde(default)]
    pub limits: Limits,
    /// Settings of the built-in backend (kind = "upstream" only).
    #[serde(default)]
    pub upstream: Option<UpstreamSpec>,
    /// Signal sent to stop the target: TERM, INT, QUIT, HUP, KILL, USR1, USR2.
    #[serde(default = "sigterm", deserialize_with = "de_signal")]
    pub stop_signal: i32,
    /// How long to wait after the stop signal before killing the process group.
    #[serde(default = "five_seconds", deserialize_with = "de_duration")]
    pub stop_timeout: Duration,
}

/// A loopback port: fixed or allocated per run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PortSpec {
    #[default]
    Auto,
    Fixed(u16),
}

/// A config file rendered from a template into the per-run directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Inline template text.
    #[serde(default)]
    pub template: Option<String>,
    /// Template file, relative to the scenario file.
    #[serde(default)]
    pub template_file: Option<PathBuf>,
    /// Where to write it, relative to the per-run directory.
    pub path: PathBuf,
    /// The template text, from `template` or the contents of `template_file` (filled by load).
    #[serde(skip)]
    pub text: String,
}

/// How to tell that a target is ready; by default a TCP connect to its port.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadySpec {
    /// URL that must answer with a 2xx/3xx status; placeholders allowed.
    #[serde(default)]
    pub http: Option<String>,
    /// `host:port` that must accept a TCP connection; placeholders allowed.
    #[serde(default)]
    pub tcp: Option<String>,
    #[serde(default = "ten_seconds", deserialize_with = "de_duration")]
    pub timeout: Duration,
}

impl Default for ReadySpec {
    fn default() -> Self {
        Self {
            http: None,
            tcp: None,
            timeout: ten_seconds(),
        }
    }
}

/// Resource limits, like docker's `--cpuset-cpus`, `--cpus` and `--memory`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default)]
    pub cpuset: Option<CpuSet>,
    /// CPU quota in cores (1.5 = one and a half cores of time per period).
    #[serde(default)]
    pub cpus: Option<f64>,
    /// Memory limit in bytes (written as `512MiB`, `8GiB`, ...).
    #[serde(default, deserialize_with = "de_opt_size")]
    pub memory: Option<u64>,
}

/// Settings of the built-in reference backend.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    /// Paths the backend must answer (checked at readiness); default `["/"]`.
    #[serde(default)]
    pub routes: Vec<String>,
    /// Delay before every answer, e.g. `1ms`, `uniform:1ms..5ms` (passed to `serve --delay`).
    #[serde(default)]
    pub delay: Option<String>,
    /// Body size of `/`.
    #[serde(default, deserialize_with = "de_opt_size")]
    pub body_size: Option<u64>,
    #[serde(default)]
    pub threads: Option<u32>,
    /// Serve at most this many requests at once; more wait in line (a known capacity).
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// Status code of `/` instead of 200.
    #[serde(default)]
    pub status: Option<u16>,
    /// Share of answers replaced by a 500, e.g. 0.01.
    #[serde(default)]
    pub fail_rate: Option<f64>,
    /// Periodic stalls like a GC pause, `STALL/EVERY`, e.g. `500ms/1s`.
    #[serde(default)]
    pub hiccup: Option<String>,
    /// Keep working on requests whose client has gone (`serve --keep-abandoned`).
    #[serde(default)]
    pub keep_abandoned: bool,
    /// Serve at most this many connections at once (`serve --max-served-conns`).
    #[serde(default)]
    pub max_served_conns: Option<u32>,
}

/// How load is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadModel {
    Closed,
    Open,
    FindMax,
}

/// One row of the matrix: a model with its levels, against some targets.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    #[serde(default)]
    pub name: Option<String>,
    pub model: LoadModel,
    /// Targets loaded one after another (or all at once with `together = true`).
    pub targets: Vec<String>,
    #[serde(default)]
    pub together: bool,
    /// Closed model: connection counts, one step each.
    #[serde(default)]
    pub connections: Vec<u32>,
    /// Open model: request rates per second, one step each.
    #[serde(default)]
    pub rate: Vec<f64>,
    /// find-max: the objective, e.g. `p99<50ms`, parsed when the file loads.
    #[serde(default, deserialize_with = "de_opt_slo")]
    pub slo: Option<loadbench_model::Slo>,
    /// Open and find-max: the most connections (requests in flight) the generator opens.
    #[serde(default)]
    pub max_connections: Option<u32>,
    #[serde(default = "ten_seconds", deserialize_with = "de_duration")]
    pub duration: Duration,
    #[serde(default, deserialize_with = "de_duration")]
    pub warmup: Duration,
    #[serde(default)]
    pub request: RequestSpec,
}

/// The request sent by a load.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    #[serde(default = "get")]
    pub method: String,
    #[serde(default = "slash")]
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
}

impl Default for RequestSpec {
    fn default() -> Self {
        Self {
            method: get(),
            path: slash(),
            headers: BTreeMap::new(),
            body: None,
        }
    }
}

/// A sorted, duplicate-free CPU list, written like `0-1,3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet(pub Vec<usize>);

/// One user mistake in a scenario file, displayed as one line: file, key, problem, fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// Key path such as `target[1].ready.timeout`.
    pub key: String,
    pub problem: String,
    pub fix: String,
}

/// A placeholder problem in a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem} on line {line}")]
pub struct TemplateError {
    pub line: usize,
    pub problem: String,
}

fn one() -> u32 {
    1
}
fn sigterm() -> i32 {
    libc::SIGTERM
}
fn five_seconds() -> Duration {
    Duration::from_secs(5)
}
fn ten_seconds() -> Duration {
    Duration::from_secs(10)
}
fn get() -> String {
    "GET".into()
}
fn slash() -> String {
    "/".into()
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}: {}; fix: {}", self.key, self.problem, self.fix)
    }
}

impl ScenarioError {
    /// An error about `key` in `file`; also for runtime failures (exits at once, never ready).
    pub fn new(file: &Path, key: impl Into<String>, problem: impl Into<String>, fix: &str) -> Self {
        Self {
            file: file.to_path_buf(),
            line: None,
            key: key.into(),
            problem: one_line(&problem.into()),
            fix: fix.to_string(),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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

    fn validate(&mut self, file: &Path) -> Result<(), ScenarioError> {
        let err =
            |key: String, problem: String, fix: &str| ScenarioError::new(file, key, problem, fix);
        if self.rounds == 0 {
            return Err(err(
                "rounds".into(),
                "must be at least 1".into(),
                "set rounds = 1 or more",
            ));
        }
        if self.targets.is_empty() {
            return Err(err(
                "target".into(),
                "no targets".into(),
                "add a [[target]] table",
            ));
        }
        if self.loads.is_empty() {
            return Err(err(
                "load".into(),
                "no loads".into(),
                "add a [[load]] table",
            ));
        }
        self.check_names_and_ports(file)?;
        let base = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let names: HashSet<String> = self.targets.iter().map(|t| t.name.clone()).collect();
        for (i, t) in self.targets.iter_mut().enumerate() {
            check_target(t, &format!("target[{i}]"), &names, &base, file)?;
        }
        for (i, l) in self.loads.iter().enumerate() {
            check_load(l, &format!("load[{i}]"), &names, file)?;
        }
        self.start_order(file).map(|_| ())
    }

    fn check_names_and_ports(&self, file: &Path) -> Result<(), ScenarioError> {
        let mut names = HashSet::new();
        let mut ports: HashMap<u16, usize> = HashMap::new();
        for (i, t) in self.targets.iter().enumerate() {
            if t.name.is_empty() || !names.insert(t.name.as_str()) {
                let fix = "give every target a distinct, non-empty name";
                let problem = format!("name '{}' is empty or used twice", t.name);
                return Err(ScenarioError::new(
                    file,
                    format!("target[{i}].name"),
                    problem,
                    fix,
                ));
            }
            if let PortSpec::Fixed(p) = t.port {
                if let Some(j) = ports.insert(p, i) {
                    let problem = format!("port {p} is also used by target[{j}]");
                    let fix = "use distinct ports, or port = \"auto\" for a free one";
                    return Err(ScenarioError::new(
                        file,
                        format!("target[{i}].port"),
                        problem,
                        fix,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Target indices in the order they start: every target after those it depends on
    /// ([`dependencies`]), otherwise in file order.
    pub fn start_order(&self, file: &Path) -> Result<Vec<usize>, ScenarioError> {
        let deps: Vec<Vec<String>> = self.targets.iter().map(dependencies).collect();
        let mut order: Vec<usize> = Vec::new();
        while order.len() < self.targets.len() {
            let ready = (0..self.targets.len()).find(|&i| {
                !order.contains(&i)
                    && deps[i].iter().all(|d| {
                        order.iter().any(|&j| self.targets[j].name == *d)
                            || self.target(d).is_none()
                    })
            });
            match ready {
                Some(i) => order.push(i),
                None => {
                    let i = (0..self.targets.len()).find(|i| !order.contains(i));
                    let i = i.unwrap_or(0);
                    return Err(ScenarioError::new(
                        file,
                        format!("target[{i}]"),
                        "targets depend on each other in a circle (proxy_to or {port:NAME})",
                        "let backends not refer to the proxies in front of them",
                    ));
                }
            }
        }
        Ok(order)
    }

    /// The target called `name`.
    pub fn target(&self, name: &str) -> Option<&TargetSpec> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// Placeholder values for target `t`, given the ports of this run and its directory.
    pub fn placeholders(
        &self,
        t: &TargetSpec,
        ports: &HashMap<String, u16>,
        dir: &Path,
    ) -> HashMap<String, String> {
        let mut map = HashMap::new();
        map.insert("name".into(), t.name.clone());
        map.insert("dir".into(), dir.display().to_string());
        if let Some(p) = ports.get(&t.name) {
            map.insert("port".into(), p.to_string());
        }
        if let Some(p) = t.proxy_to.as_ref().and_then(|u| ports.get(u)) {
            map.insert("upstream".into(), format!("127.0.0.1:{p}"));
        }
        for (name, p) in ports {
            map.insert(format!("{PORT_OF}{name}"), p.to_string());
        }
        map
    }
}

fn check_target(
    t: &mut TargetSpec,
    key: &str,
    names: &HashSet<String>,
    base: &Path,
    file: &Path,
) -> Result<(), ScenarioError> {
    let err = |k: &str, problem: String, fix: &str| {
        ScenarioError::new(file, format!("{key}.{k}"), problem, fix)
    };
    match (t.kind, &t.command) {
        (TargetKind::Command, None) => {
            let fix = "add command = \"/usr/sbin/nginx\" (or the program), or kind = \"upstream\"";
            return Err(err("command", "missing for a command target".into(), fix));
        }
        (TargetKind::Upstream, Some(_)) => {
            let fix = "remove command, or set kind = \"command\"";
            return Err(err(
                "command",
                "not allowed for kind = \"upstream\"".into(),
                fix,
            ));
        }
        (TargetKind::Command, _) if t.upstream.is_some() => {
            let fix = "remove [target.upstream], or set kind = \"upstream\"";
            return Err(err("upstream", "only for kind = \"upstream\"".into(), fix));
        }
        _ => {}
    }
    if let Some(p) = &t.proxy_to {
        if !names.contains(p) || *p == t.name {
            let fix = "name another [[target]] of this file";
            return Err(err("proxy_to", format!("'{p}' is not another target"), fix));
        }
    }
    if t.ready.http.is_some() && t.ready.tcp.is_some() {
        let fix = "keep only one of ready.http and ready.tcp";
        return Err(err("ready", "both http and tcp are set".into(), fix));
    }
    check_limits(&t.limits, &format!("{key}.limits"), file)?;
    for (i, c) in t.config.iter_mut().enumerate() {
        load_template(c, &format!("{key}.config[{i}]"), base, file)?;
    }
    check_placeholders(t, key, names, file)
}

fn check_limits(l: &Limits, key: &str, file: &Path) -> Result<(), ScenarioError> {
    if let Some(c) = l.cpus {
        if !(c.is_finite() && c > 0.0) {
            let fix = "use a positive number of cores, such as 1 or 1.5";
            return Err(ScenarioError::new(
                file,
                format!("{key}.cpus"),
                format!("{c} is not a CPU quota"),
                fix,
            ));
        }
    }
    Ok(())
}

fn load_template(
    c: &mut ConfigFile,
    key: &str,
    base: &Path,
    file: &Path,
) -> Result<(), ScenarioError> {
    let fix = "set exactly one of template = \"...\" and template_file = \"path\"";
    c.text = match (&c.template, &c.template_file) {
        (Some(t), None) => t.clone(),
        (None, Some(p)) => std::fs::read_to_string(base.join(p)).map_err(|e| {
            let problem = format!("cannot read {}: {e}", base.join(p).display());
            ScenarioError::new(
                file,
                format!("{key}.template_file"),
                problem,
                "check the path (relative to the scenario file)",
            )
        })?,
        _ => return Err(ScenarioError::new(file, key, "needs one template", fix)),
    };
    if c.path.is_absolute()
        || c.path
            .components()
            .any(|p| p == std::path::Component::ParentDir)
    {
        let fix = "use a relative path such as \"nginx.conf\"; it is written under {dir}";
        return Err(ScenarioError::new(
            file,
            format!("{key}.path"),
            "must stay inside the run directory",
            fix,
        ));
    }
    Ok(())
}

/// The targets `t` needs running before it starts: its `proxy_to` and every `{port:NAME}`.
pub fn dependencies(t: &TargetSpec) -> Vec<String> {
    let mut deps: Vec<String> = t.proxy_to.iter().cloned().collect();
    for (_, text) in rendered_texts(t) {
        for name in placeholders_in(text).unwrap_or_default() {
            if let Some(other) = name.strip_prefix(PORT_OF) {
                if other != t.name && !deps.iter().any(|d| d == other) {
                    deps.push(other.to_string());
                }
            }
        }
    }
    deps
}

/// Every text of a target that is rendered, with its key.
fn rendered_texts(t: &TargetSpec) -> Vec<(String, &str)> {
    let mut texts: Vec<(String, &str)> = Vec::new();
    texts.extend(
        t.command
            .iter()
            .map(|c| ("command".to_string(), c.as_str())),
    );
    texts.extend(
        t.args
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("args[{i}]"), a.as_str())),
    );
    texts.extend(
        t.workdir
            .iter()
            .map(|w| ("workdir".to_string(), w.as_str())),
    );
    texts.extend(t.env.iter().map(|(k, v)| (format!("env.{k}"), v.as_str())));
    texts.extend(t.url.iter().map(|u| ("url".to_string(), u.as_str())));
    texts.extend(
        t.ready
            .http
            .iter()
            .map(|u| ("ready.http".to_string(), u.as_str())),
    );
    texts.extend(
        t.ready
            .tcp
            .iter()
            .map(|u| ("ready.tcp".to_string(), u.as_str())),
    );
    for (i, c) in t.config.iter().enumerate() {
        let k = if c.template.is_some() {
            "template"
        } else {
            "template_file"
        };
        texts.push((format!("config[{i}].{k}"), c.text.as_str()));
    }
    texts
}

/// Every text that gets rendered must use known placeholders, and `{upstream}` needs `proxy_to`.
fn check_placeholders(
    t: &TargetSpec,
    key: &str,
    names: &HashSet<String>,
    file: &Path,
) -> Result<(), ScenarioError> {
    for (k, text) in rendered_texts(t) {
        let used = placeholders_in(text).map_err(|e| {
            let fix = "use {port}, {port:TARGET}, {upstream}, {dir} or {name}; write {{ and }} for literal braces";
            ScenarioError::new(file, format!("{key}.{k}"), e.to_string(), fix)
        })?;
        if let Some(other) = used
            .iter()
            .filter_map(|u| u.strip_prefix(PORT_OF))
            .find(|n| !names.contains(*n))
        {
            let mut known: Vec<&str> = names.iter().map(String::as_str).collect();
            known.sort_unstable();
            let fix = format!("name one of the targets: {}", known.join(", "));
            return Err(ScenarioError::new(
                file,
                format!("{key}.{k}"),
                format!("{{port:{other}}} names no target"),
                &fix,
            ));
        }
        if used.iter().any(|u| u == "upstream") && t.proxy_to.is_none() {
            let fix = "add proxy_to = \"<backend target name>\" to this target";
            return Err(ScenarioError::new(
                file,
                format!("{key}.{k}"),
                "uses {upstream} but the target has no proxy_to",
                fix,
            ));
        }
    }
    Ok(())
}

fn check_load(
    l: &LoadSpec,
    key: &str,
    names: &HashSet<String>,
    file: &Path,
) -> Result<(), ScenarioError> {
    let err = |k: &str, problem: String, fix: &str| {
        ScenarioError::new(file, format!("{key}.{k}"), problem, fix)
    };
    if l.targets.is_empty() {
        return Err(err(
            "targets",
            "is empty".into(),
            "list target names, e.g. targets = [\"nginx\"]",
        ));
    }
    if let Some(t) = l.targets.iter().find(|t| !names.contains(*t)) {
        let mut known: Vec<&str> = names.iter().map(String::as_str).collect();
        known.sort_unstable();
        let fix = format!("use one of: {}", known.join(", "));
        return Err(err("targets", format!("no target named '{t}'"), &fix));
    }
    let (levels, other) = match l.model {
        LoadModel::Closed => (
            !l.connections.is_empty(),
            !l.rate.is_empty() || l.slo.is_some(),
        ),
        LoadModel::Open => (
            !l.rate.is_empty(),
            !l.connections.is_empty() || l.slo.is_some(),
        ),
        LoadModel::FindMax => (
            l.slo.is_some(),
            !l.rate.is_empty() || !l.connections.is_empty(),
        ),
    };
    let fix = match l.model {
        LoadModel::Closed => "closed loads take connections = [10, 50] (and no rate or slo)",
        LoadModel::Open => "open loads take rate = [1000, 5000] (and no connections or slo)",
        LoadModel::FindMax => {
            "find-max loads take slo = \"p99<50ms\" (and no rate or connections; cap them with max_connections)"
        }
    };
    if !levels || other {
        return Err(err(
            "model",
            "its settings do not match the model".into(),
            fix,
        ));
    }
    if l.max_connections.is_some() && l.model == LoadModel::Closed {
        return Err(err(
            "max_connections",
            "only for open and find-max loads".into(),
            "closed loads set their connections with connections = [...]",
        ));
    }
    if l.max_connections == Some(0) {
        return Err(err(
            "max_connections",
            "must be above zero".into(),
            "use e.g. max_connections = 1500",
        ));
    }
    if l.connections.contains(&0) || l.rate.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(err(
            "connections",
            "levels must be above zero".into(),
            "remove zero or negative levels",
        ));
    }
    if l.duration.is_zero() {
        return Err(err(
            "duration",
            "must be longer than zero".into(),
            "use e.g. duration = \"10s\"",
        ));
    }
    Ok(())
}

/// Maps toml's error (message + byte span) to one line with the line number and key path.
fn toml_error(file: &Path, text: &str, e: &toml::de::Error) -> ScenarioError {
    let start = e.span().map_or(0, |s| s.start).min(text.len());
    let line = text[..start].matches('\n').count() + 1;
    let key = key_path_at(text, line);
    let msg = one_line(e.message());
    let fix = if msg.starts_with("unknown field") {
        "remove the key or correct its spelling (every key is listed in docs/scenarios.md)"
    } else if msg.starts_with("missing field") {
        "add the missing key (see docs/scenarios.md)"
    } else {
        DOCS
    };
    ScenarioError {
        line: Some(line),
        ..ScenarioError::new(file, key, msg, fix)
    }
}

/// The dotted key path (`target[1].ready.timeout`) of the key on `line` (1-based), found from the
/// table headers above it; good enough for errors in files written with `[table]` headers.
fn key_path_at(text: &str, line: usize) -> String {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut table = String::new();
    let mut key = String::new();
    for l in text.lines().take(line) {
        let l = l.trim();
        if let Some(h) = l.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            let h = h.trim().to_string();
            counts.retain(|k, _| !k.starts_with(&format!("{h}.")));
            let n = *counts.entry(h.clone()).and_modify(|n| *n += 1).or_insert(0);
            table = format!("{}[{n}]", index_parents(&h, &counts));
            key.clear();
        } else if let Some(h) = l.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = index_parents(h.trim(), &counts);
            key.clear();
        } else if let Some((k, _)) = l.split_once('=') {
            key = k.trim().trim_matches('"').to_string();
        }
    }
    match (table.is_empty(), key.is_empty()) {
        (true, true) => "(top level)".into(),
        (true, false) => key,
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    }
}

/// `target.ready` → `target[1].ready` when `target` is an array of tables seen twice.
fn index_parents(header: &str, counts: &HashMap<String, usize>) -> String {
    let parts: Vec<&str> = header.split('.').collect();
    let mut out = Vec::new();
    for i in 0..parts.len() {
        let prefix = parts[..=i].join(".");
        match counts.get(&prefix) {
            Some(n) if i + 1 < parts.len() => out.push(format!("{}[{n}]", parts[i])),
            _ => out.push(parts[i].to_string()),
        }
    }
    out.join(".")
}

/// Replaces `{name}` placeholders by their values; `{{` and `}}` stand for `{` and `}`. Braces that
/// do not enclose a placeholder name (`events { ... }`) are kept, so config files read naturally.
pub fn render_template(
    text: &str,
    values: &HashMap<String, String>,
) -> Result<String, TemplateError> {
    scan(text, |name| values.get(name).cloned())
}

/// The placeholder names a text uses; an error for names that are not in [`PLACEHOLDERS`].
pub fn placeholders_in(text: &str) -> Result<Vec<String>, TemplateError> {
    let mut used = Vec::new();
    scan(text, |name| {
        used.push(name.to_string());
        let known = PLACEHOLDERS.contains(&name) || name.strip_prefix(PORT_OF).is_some();
        known.then(String::new)
    })?;
    Ok(used)
}

fn scan(
    text: &str,
    mut value: impl FnMut(&str) -> Option<String>,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let Some(name) = placeholder_name(tail) {
            let line = text[..text.len() - tail.len()].matches('\n').count() + 1;
            let v = value(name).ok_or_else(|| TemplateError {
                line,
                problem: format!("unknown or unset placeholder {{{name}}}"),
            })?;
            out.push_str(&v);
            rest = &tail[name.len() + 2..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `name` if `tail` starts with `{name}` and name is lowercase letters, digits or `_`, or
/// `port:` followed by a target name (letters, digits, `_`, `-`, `.`).
fn placeholder_name(tail: &str) -> Option<&str> {
    let body = tail.strip_prefix('{')?;
    let end = body.find('}')?;
    let name = &body[..end];
    let ok = match name.strip_prefix(PORT_OF) {
        Some(target) => {
            !target.is_empty()
                && target
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        }
        None => {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }
    };
    ok.then_some(name)
}

/// Picks free loopback ports for every `port = "auto"` target and returns all targets' ports.
/// The listeners stay open until all are picked, so the ports differ from each other and from the
/// fixed ones; a fixed port that is already taken is reported as a clash.
pub fn allocate_ports(s: &Scenario, file: &Path) -> Result<HashMap<String, u16>, ScenarioError> {
    let mut held = Vec::new();
    let mut ports = HashMap::new();
    for (i, t) in s.targets.iter().enumerate() {
        let want = match t.port {
            PortSpec::Auto => 0,
            PortSpec::Fixed(p) => p,
        };
        let l = TcpListener::bind(("127.0.0.1", want)).map_err(|e| {
            let fix = "stop whatever uses it, or set port = \"auto\"";
            ScenarioError::new(
                file,
                format!("target[{i}].port"),
                format!("port {want} is not free: {e}"),
                fix,
            )
        })?;
        let port = l.local_addr().map(|a| a.port()).unwrap_or(want);
        ports.insert(t.name.clone(), port);
        held.push(l);
    }
    Ok(ports)
}

impl std::str::FromStr for CpuSet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{s}' is not a CPU list; write it like 0-1,3");
        let mut cpus = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b > 4095 {
                return Err(bad());
            }
            cpus.extend(a..=b);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet(cpus))
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            let sep = if first { "" } else { "," };
            if i == j {
                write!(f, "{sep}{}", self.0[i])?;
            } else {
                write!(f, "{sep}{}-{}", self.0[i], self.0[j])?;
            }
            first = false;
            i = j + 1;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for PortSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PortSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a port number 1-65535 or \"auto\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PortSpec, E> {
                match u16::try_from(v) {
                    Ok(p) if p > 0 => Ok(PortSpec::Fixed(p)),
                    _ => Err(E::custom(format!(
                        "port {v} is out of range; use 1-65535 or \"auto\""
                    ))),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortSpec, E> {
                match v {
                    "auto" => Ok(PortSpec::Auto),
                    _ => Err(E::custom(format!(
                        "port '{v}' is not a number; use 1-65535 or \"auto\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses `10s`, `1m30s`, `250ms` or a bare number of seconds (the shared rule of
/// [`loadbench_plan::units`]).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    loadbench_plan::units::duration(text).map_err(|e| e.to_string())
}

/// Parses sizes such as `512MiB`, `8GiB`, `1.5G`, `4096` (bytes); k/M/G are powers of 1000.
pub fn parse_size(text: &str) -> Result<u64, String> {
    loadbench_plan::units::size(text).map_err(|e| e.to_string())
}

fn de_opt_slo<'de, D: Deserializer<'de>>(d: D) -> Result<Option<loadbench_model::Slo>, D::Error> {
    loadbench_plan::parse_slo(&String::deserialize(d)?)
        .map(Some)
        .map_err(|e| de::Error::custom(format!("slo {e}")))
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    parse_duration(&String::deserialize(d)?).map_err(de::Error::custom)
}

fn de_opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    parse_size(&String::deserialize(d)?)
        .map(Some)
        .map_err(de::Error::custom)
}

fn de_signal<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let s = String::deserialize(d)?;
    let name = s.trim().to_ascii_uppercase();
    match name.strip_prefix("SIG").unwrap_or(&name) {
        "TERM" => Ok(libc::SIGTERM),
        "INT" => Ok(libc::SIGINT),
        "QUIT" => Ok(libc::SIGQUIT),
        "HUP" => Ok(libc::SIGHUP),
        "KILL" => Ok(libc::SIGKILL),
        "USR1" => Ok(libc::SIGUSR1),
        "USR2" => Ok(libc::SIGUSR2),
        _ => Err(de::Error::custom(format!(
            "'{s}' is not a stop signal; use TERM, INT, QUIT, HUP, KILL, USR1 or USR2"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = include_str!("../tests/fixtures/reverse-proxies.toml");

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
        assert_eq!(backend.upstream.as_ref().unwrap().body_size, Some(133));
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
        assert_eq!(load.model, LoadModel::Closed);
        assert_eq!(load.targets, ["nginx", "haproxy", "backend"]);
        assert_eq!(load.connections, [5, 10, 15, 20]);
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
    fn template_substitutes_and_escapes() {
        let values = HashMap::from([
            ("port".to_string(), "8080".to_string()),
            ("name".to_string(), "n".to_string()),
        ]);
        let out = render_template("{{port}} {port} {name} { x } }}{{ {}", &values).unwrap();
        assert_eq!(out, "{port} 8080 n { x } }{ {}");
    }

    #[test]
    fn template_reports_unknown_placeholder_with_line() {
        let e = render_template("a\n{dir}", &HashMap::new()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("{dir}"));
        assert_eq!(
            placeholders_in("{port}{{x}}{upstream}").unwrap(),
            ["port", "upstream"]
        );
        assert!(placeholders_in("{nope}").is_err());
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
        assert_eq!(s.loads[0].max_connections, Some(1500));
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

    #[test]
    fn units_parse() {
        assert_eq!("0-1,3".parse::<CpuSet>().unwrap(), CpuSet(vec![0, 1, 3]));
        assert_eq!(CpuSet(vec![0, 1, 3, 5, 6]).to_string(), "0-1,3,5-6");
        assert!("3-1".parse::<CpuSet>().is_err());
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("1.5k").unwrap(), 1500);
        assert!(parse_size("8 gallons").is_err());
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    }

    #[test]
    fn allocates_distinct_free_ports() {
        let s = parse(FULL).unwrap();
        let ports = allocate_ports(&s, Path::new("scn.toml")).unwrap();
        let distinct: HashSet<u16> = ports.values().copied().collect();
        assert_eq!((ports.len(), distinct.len()), (3, 3));
        assert!(distinct.iter().all(|p| *p > 0));
    }
}
