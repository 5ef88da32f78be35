//! Starting a scenario's targets: ports, rendered config files, limits, readiness, and stopping
//! them again. Targets start in dependency order (backends before the proxies in front of them)
//! and stop in reverse. Each runs in its own process group with a parent-death signal and is
//! killed on drop, so none outlives loadbench ([`crate::process`]).
//!
//! Files, under the run folder: `targets/<name>/` is `{dir}` of the target (its rendered config
//! files and whatever it writes there); `logs/<name>.stdout.log` and `.stderr.log` its output.

use crate::limits::{self, Applied, CgroupGuard};
use crate::process::{ProcessError, ProcessSpec, Readiness, TargetProcess};
use crate::scenario::{
    allocate_ports, render_template, Scenario, ScenarioError, TargetKind, TargetSpec,
};
use loadbench_model::{AppliedLimits, BenchTarget};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What [`Targets::start`] needs besides the scenario.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The scenario file (named in errors).
    pub file: PathBuf,
    /// The run folder.
    pub run_dir: PathBuf,
    /// The `loadbench` executable, started as `loadbench serve` for `kind = "upstream"` targets.
    pub upstream_exe: PathBuf,
    /// Cores of the host (for targets without a CPU set or quota).
    pub host_cores: usize,
}

/// One started target.
#[derive(Debug)]
pub struct Running {
    /// What the result records of it: name, URL, port, limits applied, logs.
    pub info: BenchTarget,
    /// The target's index in the scenario.
    pub index: usize,
    /// The running process (its group is stopped on drop).
    pub process: TargetProcess,
    /// Kept alive for as long as the target runs; drop removes the cgroup.
    cgroup: Option<CgroupGuard>,
}

/// The scenario's running targets; dropping it stops them (in reverse start order).
#[derive(Debug, Default)]
pub struct Targets {
    /// In start order.
    pub running: Vec<Running>,
    /// One line per limit that could not be enforced.
    pub warnings: Vec<String>,
}

impl Running {
    /// The directories of the target's cgroup (empty when it has none).
    pub fn cgroup_dirs(&self) -> Vec<std::path::PathBuf> {
        self.cgroup
            .as_ref()
            .map_or_else(Vec::new, |g| g.dirs().to_vec())
    }
}

impl Targets {
    /// Starts every target of `s` in dependency order and waits until each is ready. On any
    /// failure the targets started so far are stopped and the error names the target's key in
    /// the scenario file and the fix.
    pub fn start(s: &Scenario, opts: &StartOptions) -> Result<Targets, ScenarioError> {
        let ports = allocate_ports(s, &opts.file)?;
        let mut targets = Targets::default();
        for i in s.start_order(&opts.file)? {
            let t = &s.targets[i];
            let running = start_one(s, t, i, &ports, opts, &mut targets.warnings)?;
            targets.running.push(running);
        }
        Ok(targets)
    }

    /// The running target called `name`.
    pub fn get(&self, name: &str) -> Option<&Running> {
        self.running.iter().find(|r| r.info.name == name)
    }

    /// (name, pid) of every target, for the sampler.
    pub fn roots(&self) -> Vec<(String, u32)> {
        self.running
            .iter()
            .map(|r| (r.info.name.clone(), r.process.pid()))
            .collect()
    }

    /// How the named target's main process ended, if it has.
    pub fn exit_status(&mut self, name: &str) -> Option<std::process::ExitStatus> {
        self.running
            .iter_mut()
            .find(|r| r.info.name == name)
            .and_then(|r| r.process.exit_status())
    }

    /// Names of targets whose main process has exited.
    pub fn exited(&mut self) -> Vec<String> {
        self.running
            .iter_mut()
            .filter_map(|r| (!r.process.is_running()).then(|| r.info.name.clone()))
            .collect()
    }

    /// Stops every target in reverse start order (stop signal, then kill after its timeout).
    pub fn stop(&mut self) {
        while let Some(mut r) = self.running.pop() {
            let _ = r.process.stop();
            drop(r.cgroup.take());
        }
    }
}

impl Drop for Targets {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One target being started: its key in the scenario, its folder, its placeholder values.
struct Starting<'a> {
    t: &'a TargetSpec,
    opts: &'a StartOptions,
    key: String,
    dir: PathBuf,
    /// The scenario file's folder: the working directory unless `workdir` says otherwise.
    scenario_dir: PathBuf,
    values: HashMap<String, String>,
}

impl Starting<'_> {
    fn io_err(&self, what: &str, e: std::io::Error) -> ScenarioError {
        ScenarioError::new(
            &self.opts.file,
            &self.key,
            format!("cannot {what}: {e}"),
            "check that the results folder is writable",
        )
    }

    /// Renders the template `text` of the key `k` (below the target's key).
    fn render(&self, k: &str, text: &str) -> Result<String, ScenarioError> {
        render_template(text, &self.values).map_err(|e| {
            ScenarioError::new(
                &self.opts.file,
                format!("{}.{k}", self.key),
                e.to_string(),
                "see the placeholders in docs/scenarios.md",
            )
        })
    }

    /// Writes the rendered config files; returns their paths relative to the run folder.
    fn write_configs(&self) -> Result<Vec<String>, ScenarioError> {
        let mut configs = Vec::new();
        for (i, c) in self.t.config.iter().enumerate() {
            let text = self.render(&format!("config[{i}]"), &c.text)?;
            let path = self.dir.join(&c.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| self.io_err("create a config folder", e))?;
            }
            std::fs::write(&path, text).map_err(|e| self.io_err("write a config file", e))?;
            configs.push(relative(&self.opts.run_dir, &path));
        }
        Ok(configs)
    }

    /// The process to start: command line, logs, working directory, environment, stop.
    fn process_spec(&self, port: u16) -> Result<ProcessSpec, ScenarioError> {
        let (t, opts) = (self.t, self.opts);
        let render = |k: &str, text: &str| self.render(k, text);
        let (command, args) = command_line(t, port, opts, &render)?;
        let logs = opts.run_dir.join("logs");
        let mut spec = ProcessSpec::new(
            &t.name,
            &command,
            logs.join(format!("{}.stdout.log", t.name)),
            logs.join(format!("{}.stderr.log", t.name)),
        )
        .args(args);
        spec.cwd = Some(match &t.workdir {
            Some(w) => PathBuf::from(self.render("workdir", w)?),
            None => self.scenario_dir.clone(),
        });
        for (k, v) in &t.env {
            spec.env
                .push((k.clone(), self.render(&format!("env.{k}"), v)?));
        }
        spec.stop_signal = t.stop_signal;
        spec.stop_timeout = t.stop_timeout;
        Ok(spec)
    }
}

fn start_one(
    s: &Scenario,
    t: &TargetSpec,
    index: usize,
    ports: &HashMap<String, u16>,
    opts: &StartOptions,
    warnings: &mut Vec<String>,
) -> Result<Running, ScenarioError> {
    let dir = opts.run_dir.join("targets").join(&t.name);
    let starting = Starting {
        t,
        opts,
        key: format!("target[{index}]"),
        values: s.placeholders(t, ports, &dir),
        dir,
        scenario_dir: s.dir.clone(),
    };
    std::fs::create_dir_all(&starting.dir)
        .map_err(|e| starting.io_err("create the target's folder", e))?;
    let configs = starting.write_configs()?;
    let port = ports[&t.name];
    let spec = starting.process_spec(port)?;
    let url = match &t.url {
        Some(u) => starting.render("url", u)?,
        None => format!("http://127.0.0.1:{port}"),
    };
    let render = |k: &str, text: &str| starting.render(k, text);
    let readiness = readiness(t, port, &url, &render).map_err(|e| ScenarioError {
        file: opts.file.clone(),
        key: format!("{}.{}", starting.key, e.key),
        ..e
    })?;
    let started = Instant::now();
    let (process, cgroup, applied) = launch(t, &spec, &readiness, opts, &starting.key)?;
    warnings.extend(applied.warnings.iter().cloned());
    Ok(Running {
        info: BenchTarget {
            name: t.name.clone(),
            kind: match t.kind {
                TargetKind::Command => "command".into(),
                TargetKind::Upstream => "upstream".into(),
            },
            command: spec_line(&spec),
            url,
            port,
            proxy_to: t.proxy_to.clone(),
            limits: applied_limits(&applied, opts.host_cores),
            ready_ms: started.elapsed().as_millis() as u64,
            stdout_log: relative(&opts.run_dir, &spec.stdout_path),
            stderr_log: relative(&opts.run_dir, &spec.stderr_path),
            configs,
            profile: None,
        },
        index,
        process,
        cgroup,
    })
}

/// Starts the process inside its limits and waits until it is ready.
fn launch(
    t: &TargetSpec,
    spec: &ProcessSpec,
    readiness: &Readiness,
    opts: &StartOptions,
    key: &str,
) -> Result<(TargetProcess, Option<CgroupGuard>, Applied), ScenarioError> {
    let (cgroup, mut applied) = limits::prepare(&t.name, &t.limits);
    let cpus = applied.cpuset.clone();
    let mut process = TargetProcess::spawn_with(spec, |cmd| {
        limits::join_in_child(cmd, cgroup.as_ref(), cpus.as_deref())
    })
    .map_err(|e| process_error(opts, key, t, e))?;
    limits::apply_to_pid(&t.name, cgroup.as_ref(), &mut applied, process.pid());
    process
        .wait_ready(readiness, t.ready.timeout)
        .map_err(|e| process_error(opts, key, t, e))?;
    Ok((process, cgroup, applied))
}

/// The program and arguments: the scenario's command, or `loadbench serve` for the backend.
fn command_line(
    t: &TargetSpec,
    port: u16,
    opts: &StartOptions,
    render: &dyn Fn(&str, &str) -> Result<String, ScenarioError>,
) -> Result<(PathBuf, Vec<String>), ScenarioError> {
    if t.kind == TargetKind::Upstream {
        let mut args = vec![
            "serve".to_string(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
        ];
        if let Some(u) = &t.upstream {
            args.extend(u.serve.to_args());
        }
        return Ok((opts.upstream_exe.clone(), args));
    }
    let command = render("command", t.command.as_deref().unwrap_or_default())?;
    let args = t
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| render(&format!("args[{i}]"), a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((PathBuf::from(command), args))
}

/// The readiness check: `ready.http`, `ready.tcp`, the backend's first route, or a TCP connect.
fn readiness(
    t: &TargetSpec,
    port: u16,
    url: &str,
    render: &dyn Fn(&str, &str) -> Result<String, ScenarioError>,
) -> Result<Readiness, ScenarioError> {
    if let Some(u) = &t.ready.http {
        return Ok(Readiness::Http {
            url: render("ready.http", u)?,
        });
    }
    if let Some(a) = &t.ready.tcp {
        let text = render("ready.tcp", a)?;
        return match text.parse::<SocketAddr>() {
            Ok(addr) => Ok(Readiness::Tcp { addr }),
            Err(_) => Err(ScenarioError::new(
                Path::new(""),
                "ready.tcp",
                format!("'{text}' is not an address"),
                "write it as 127.0.0.1:{port}",
            )),
        };
    }
    if t.kind == TargetKind::Upstream {
        let route = t
            .upstream
            .as_ref()
            .and_then(|u| u.routes.first().cloned())
            .unwrap_or_else(|| "/".into());
        // A `ws://` URL (WebSocket loads) is the same server's plain HTTP for the check.
        let base = url.trim_end_matches('/');
        let base = match base.strip_prefix("ws://") {
            Some(rest) => format!("http://{rest}"),
            None => base.to_string(),
        };
        return Ok(Readiness::HttpAnswer {
            url: format!("{base}{route}"),
        });
    }
    Ok(Readiness::Tcp {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
    })
}

/// A target that cannot start or never gets ready: one line with the key, the cause, the tail
/// of its stderr and the fix.
fn process_error(opts: &StartOptions, key: &str, t: &TargetSpec, e: ProcessError) -> ScenarioError {
    let one_line = |s: &str| {
        s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let (k, problem, fix) = match &e {
        ProcessError::Spawn {
            command, source, ..
        } => (
            "command",
            format!("cannot start `{command}`: {source}"),
            "install the program or correct the command (a full path works best)".into(),
        ),
        ProcessError::ExitedEarly {
            status,
            stderr_tail,
            ..
        } => (
            "command",
            format!(
                "'{}' exited at once ({status}); its stderr: {}",
                t.name,
                one_line(stderr_tail)
            ),
            "run the command by hand with the rendered config (under targets/) to see why".into(),
        ),
        ProcessError::NotReady {
            check,
            timeout,
            last_status,
            stderr_tail,
            ..
        } => (
            "ready",
            format!(
                "'{}' was not ready after {timeout:?} ({check} never succeeded{}); its stderr: {}",
                t.name,
                crate::process::last_status_note(*last_status),
                one_line(stderr_tail)
            ),
            match last_status {
                Some(_) => format!(
                    "make {key}.ready.http a URL that answers 2xx/3xx once '{}' is ready",
                    t.name
                ),
                None => slow_start_fix(key, &t.name, *timeout),
            },
        ),
        _ => ("", one_line(&e.to_string()), "see the message".into()),
    };
    let key = if k.is_empty() {
        key.to_string()
    } else {
        format!("{key}.{k}")
    };
    ScenarioError::new(&opts.file, key, problem, &fix)
}

/// The fix for a target not ready after `timeout`: the check may be wrong, or the start slow.
/// `key` is the target's (`target[2]`).
fn slow_start_fix(key: &str, name: &str, timeout: Duration) -> String {
    let longer = (timeout * 4).as_secs().max(60);
    format!(
        "check that it listens on {{port}} (or set ready.http / ready.tcp); if it starts slowly \
         (a JVM on a busy core), raise {key}.ready.timeout: add timeout = \"{longer}s\" under \
         the [target.ready] of '{name}'"
    )
}

fn applied_limits(a: &Applied, host_cores: usize) -> AppliedLimits {
    let set_cores = a.cpuset.as_ref().map_or(host_cores, Vec::len) as f64;
    AppliedLimits {
        cpuset: a.cpuset.clone(),
        cpu_quota_cores: a.cpu_quota_cores,
        memory_bytes: a.memory_bytes,
        cgroup: a.cgroup.as_ref().map(|p| p.display().to_string()),
        cores: a.cpu_quota_cores.map_or(set_cores, |q| q.min(set_cores)),
    }
}

fn spec_line(spec: &ProcessSpec) -> String {
    std::iter::once(spec.command.display().to_string())
        .chain(spec.args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_options_become_serve_flags() {
        let text = "name = \"m\"\n[[target]]\nname = \"a\"\nkind = \"upstream\"\n\
            [target.upstream]\nmax_concurrency = 2\nkeep_abandoned = true\n\
            [[load]]\nmodel = \"closed\"\ntargets = [\"a\"]\nconnections = [1]\n";
        let file = Path::new("s.toml");
        let s = Scenario::parse(text, file).unwrap();
        let opts = StartOptions {
            file: file.into(),
            run_dir: PathBuf::new(),
            upstream_exe: PathBuf::from("loadbench"),
            host_cores: 1,
        };
        let plain = |_: &str, t: &str| Ok(t.to_string());
        let (exe, args) = command_line(&s.targets[0], 8080, &opts, &plain).unwrap();
        assert_eq!(exe, opts.upstream_exe);
        assert_eq!(
            args,
            [
                "serve",
                "--listen",
                "127.0.0.1:8080",
                "--max-concurrency",
                "2",
                "--keep-abandoned"
            ]
        );
        let without = Scenario::parse(&text.replace("keep_abandoned = true\n", ""), file);
        let (_, args) = command_line(&without.unwrap().targets[0], 8080, &opts, &plain).unwrap();
        assert!(!args.iter().any(|a| a == "--keep-abandoned"), "{args:?}");
    }

    /// A backend loaded over WebSocket (`url = "ws://…"`) is checked over plain HTTP.
    #[test]
    fn a_ws_backend_is_ready_when_its_first_route_answers_over_http() {
        let text = "name = \"m\"\n[[target]]\nname = \"a\"\nkind = \"upstream\"\n\
            url = \"ws://127.0.0.1:{port}\"\n\
            [[load]]\nmodel = \"closed\"\ntargets = [\"a\"]\nconnections = [1]\n";
        let s = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let plain = |_: &str, t: &str| Ok(t.to_string());
        let ready = readiness(&s.targets[0], 8080, "ws://127.0.0.1:8080", &plain).unwrap();
        assert_eq!(ready.to_string(), "HTTP GET http://127.0.0.1:8080/");
    }
}
