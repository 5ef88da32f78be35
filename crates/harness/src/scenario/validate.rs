//! Checks that span several values of a scenario, made before any process starts: distinct
//! names and ports, each target's command, templates and placeholders, and the start order (no
//! dependency circles). Each load is checked and typed by `load.rs`.

use super::{
    placeholders_in, ConfigFile, Limits, PortSpec, Scenario, ScenarioError, ScenarioFile,
    TargetKind, TargetSpec, PORT_OF,
};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

impl ScenarioFile {
    /// Checks the file as written and types its loads: the validated [`Scenario`].
    pub(super) fn validate(self, file: &Path) -> Result<Scenario, ScenarioError> {
        self.check_counts(file)?;
        let mut s = Scenario {
            name: self.name,
            description: self.description,
            rounds: self.rounds,
            cooldown: self.cooldown,
            generator: self.generator,
            targets: self.targets,
            loads: Vec::new(),
            dir: folder_of(file),
            gates: Vec::new(),
            allow_unjudged: false,
            history: None,
        };
        s.history = self.history.map(|h| match h.as_os_str().is_empty() {
            true => h,
            false => s.dir.join(h),
        });
        s.check_names_and_ports(file)?;
        let base = s.dir.clone();
        let names: HashSet<String> = s.targets.iter().map(|t| t.name.clone()).collect();
        for (i, t) in s.targets.iter_mut().enumerate() {
            check_target(t, &format!("target[{i}]"), &names, &base, file)?;
        }
        s.loads = (self.loads.into_iter().enumerate())
            .map(|(i, l)| l.resolve(&format!("load[{i}]"), &names, file))
            .collect::<Result<_, _>>()?;
        s.start_order(file)?;
        s.check_source_addrs(file)?;
        s.check_protocols(file)?;
        s.check_gate_ratios(file)?;
        Ok(s)
    }

    fn check_counts(&self, file: &Path) -> Result<(), ScenarioError> {
        let err = |key: &str, problem: &str, fix: &str| ScenarioError::new(file, key, problem, fix);
        if self.rounds == 0 {
            return Err(err(
                "rounds",
                "must be at least 1",
                "set rounds = 1 or more",
            ));
        }
        if self.targets.is_empty() {
            return Err(err("target", "no targets", "add a [[target]] table"));
        }
        if self.loads.is_empty() {
            return Err(err("load", "no loads", "add a [[load]] table"));
        }
        Ok(())
    }
}

impl Scenario {
    /// A load's or a target's ratio gates name targets of the file that the load (for a
    /// target: some load) runs.
    fn check_gate_ratios(&self, file: &Path) -> Result<(), ScenarioError> {
        let fix = "give TARGET/TARGET>RATIO with two targets a load runs (docs/gates.md)";
        for (i, l) in self.loads.iter().enumerate() {
            let gates = l.gates.iter().flat_map(|g| &g.gates);
            self.check_ratios(gates, &[l])
                .map_err(|e| ScenarioError::new(file, format!("load[{i}].slo"), e, fix))?;
        }
        let all: Vec<&super::ScenarioLoad> = self.loads.iter().collect();
        for (i, t) in self.targets.iter().enumerate() {
            let gates = t.slo.iter().flat_map(|g| &g.gates);
            self.check_ratios(gates, &all)
                .map_err(|e| ScenarioError::new(file, format!("target[{i}].slo"), e, fix))?;
        }
        Ok(())
    }

    /// The targets `load` runs, in the file's order.
    fn targets_of<'a>(
        &'a self,
        load: &'a super::ScenarioLoad,
    ) -> impl Iterator<Item = &'a TargetSpec> + 'a {
        self.targets
            .iter()
            .filter(|t| load.targets.contains(&t.name))
    }

    /// What a load cannot be combined with given the URL scheme of a target it runs (a
    /// WebSocket URL with `http2` or `pipeline`, a `grpc://` one without a message the plan can
    /// send…): the plan's own line, here and not when the step starts after the targets.
    fn check_protocols(&self, file: &Path) -> Result<(), ScenarioError> {
        for (i, load) in self.loads.iter().enumerate() {
            let Some(level) = load.levels.first() else {
                continue;
            };
            for t in self.targets_of(load) {
                let Some(url) = &t.url else { continue };
                if let Err(e) = load.spec(level, url).check_protocol() {
                    let problem = format!("with target '{}' ({url}): {e}", t.name);
                    let fix = "change the load, or give the target another URL (docs/scenarios.md)";
                    return Err(ScenarioError::new(file, format!("load[{i}]"), problem, fix));
                }
            }
        }
        Ok(())
    }

    /// Each load's `source_addrs` can reach each of its targets whose URL names an address:
    /// of the target's family, and loopback sources only for a loopback target. Caught here,
    /// not when the step runs after the targets started.
    fn check_source_addrs(&self, file: &Path) -> Result<(), ScenarioError> {
        for (i, load) in self.loads.iter().enumerate() {
            let Some(&first) = load.source_addrs.first() else {
                continue;
            };
            for t in self.targets_of(load) {
                let Some(ip) = target_ip(t) else { continue };
                if let Some((problem, fix)) = unreachable_from(&load.source_addrs, first, ip) {
                    let problem = format!("{problem} (target '{}' is at {ip})", t.name);
                    let key = format!("load[{i}].source_addrs");
                    return Err(ScenarioError::new(file, key, problem, &fix));
                }
            }
        }
        Ok(())
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
    if let Some(u) = &t.upstream {
        u.serve
            .check()
            .map_err(|e| err(&format!("upstream.{}", e.key), e.problem, e.fix))?;
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
        (None, Some(p)) => loadbench_plan::InputFile::TEMPLATE
            .read_to_string(&base.join(p))
            .map_err(|e| {
                let fix = format!("{} (relative to the scenario file)", e.fix);
                ScenarioError::new(file, format!("{key}.template_file"), e.problem, &fix)
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

/// The folder holding `file`, absolute (a relative one would mean another folder to a target
/// whose working directory differs from loadbench's).
fn folder_of(file: &Path) -> PathBuf {
    let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = parent.unwrap_or(Path::new("."));
    std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf())
}

/// The address in a target's URL (default `http://127.0.0.1:{port}`), when it is an IP literal.
fn target_ip(t: &TargetSpec) -> Option<std::net::IpAddr> {
    let url = t.url.as_deref().unwrap_or("http://127.0.0.1:{port}");
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.parse().ok()
}

/// Why connections from `sources` cannot reach `target`, and the fix; `None` when they can.
fn unreachable_from(
    sources: &[std::net::IpAddr],
    first: std::net::IpAddr,
    target: std::net::IpAddr,
) -> Option<(String, String)> {
    let family = |ip: std::net::IpAddr| if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    if let Some(a) = sources.iter().find(|a| a.is_ipv4() != target.is_ipv4()) {
        let problem = format!("{a} is {} but the target is {}", family(*a), family(target));
        let fix = format!(
            "give {} source addresses, or remove source_addrs",
            family(target)
        );
        return Some((problem, fix));
    }
    if first.is_loopback() && !target.is_loopback() {
        let problem = format!("loopback source {first} cannot reach a non-loopback target");
        let fix =
            "use addresses of this host's interface toward the target, or remove source_addrs";
        return Some((problem, fix.to_string()));
    }
    None
}
