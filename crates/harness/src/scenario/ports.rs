//! Loopback ports of a run: fixed ones checked to be free, `"auto"` ones picked free, all
//! distinct, before any target starts.

use super::{PortSpec, Scenario, ScenarioError};
use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const FULL: &str = include_str!("../../tests/fixtures/reverse-proxies.toml");

    #[test]
    fn allocates_distinct_free_ports() {
        let s = Scenario::parse(FULL, Path::new("bench/scn.toml")).unwrap();
        let ports = allocate_ports(&s, Path::new("scn.toml")).unwrap();
        let distinct: HashSet<u16> = ports.values().copied().collect();
        assert_eq!((ports.len(), distinct.len()), (3, 3));
        assert!(distinct.iter().all(|p| *p > 0));
    }
}
