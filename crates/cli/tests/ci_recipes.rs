//! deploy/ci/: the GitHub Actions workflow and the GitLab CI job of docs/ci.md, parsed as YAML
//! and their shell commands run here as the runner runs them (in order, one shell, stopping at
//! the first failing command), with this build's `loadbench` on PATH. What differs from a CI
//! runner, and only that: the load is shrunk (`-d 20s --warmup 2s` → `-d 1s --warmup 0s`), the
//! port is a free one, the runs meant to pass get `p99<5s` for the recipe's `p99<50ms` and the
//! history comparison `--threshold 1000%` (one-second runs on a loaded test machine spread too
//! much for either; the gate itself is tested as written, against a service slowed past it),
//! and the steps that are the CI system's own
//! (`uses:` actions for the cache, the artifacts and the test summary; installing loadbench) are
//! checked for what they name, not run.

use crate::gates::{valid_junit, xpath};
use crate::support::{bin, loading, tempdir, text};
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A recipe as the runner sees it: its variables, the install command it runs first, its
/// shell commands in order and the files it keeps as artifacts.
struct Recipe {
    /// `GITHUB_REF_NAME` or `CI_COMMIT_REF_NAME`: the branch variable the runner sets.
    branch_var: &'static str,
    env: BTreeMap<String, String>,
    install: String,
    commands: Vec<String>,
    artifacts: Vec<String>,
    junit: String,
}

fn yaml(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/ci")
        .join(name);
    serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap_or_else(|| panic!("not a list: {v:?}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn vars(v: &Value) -> BTreeMap<String, String> {
    v.as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
        .collect()
}

fn github() -> Recipe {
    let doc = yaml("github-actions.yml");
    let job = &doc["jobs"]["load-test"];
    let steps = job["steps"].as_sequence().unwrap();
    let named = |name: &str| {
        steps
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no step {name}"))
    };
    // The CI system's own steps: the history cache, the artifacts, the JUnit summary.
    let cache = named("Restore the run history");
    assert!(cache["uses"]
        .as_str()
        .unwrap()
        .starts_with("actions/cache@"));
    assert_eq!(cache["with"]["path"], ".loadbench");
    let kept = named("Keep the reports");
    assert!(kept["uses"]
        .as_str()
        .unwrap()
        .starts_with("actions/upload-artifact@"));
    assert_eq!(kept["if"], "always()");
    let summary = named("Test summary");
    let install = named("Install loadbench")["run"]
        .as_str()
        .unwrap()
        .to_string();
    let commands = steps
        .iter()
        .filter(|s| s["name"] != "Install loadbench")
        .filter_map(|s| s["run"].as_str().map(String::from))
        .collect();
    Recipe {
        branch_var: "GITHUB_REF_NAME",
        env: vars(&job["env"]),
        install,
        commands,
        artifacts: kept["with"]["path"]
            .as_str()
            .unwrap()
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
        junit: summary["with"]["report_paths"].as_str().unwrap().into(),
    }
}

fn gitlab() -> Recipe {
    let doc = yaml("gitlab-ci.yml");
    let job = &doc["load-test"];
    assert_eq!(strings(&job["cache"]["paths"]), [".loadbench/"]);
    assert_eq!(job["artifacts"]["when"], "always");
    let install = strings(&job["before_script"]).join("\n");
    Recipe {
        branch_var: "CI_COMMIT_REF_NAME",
        env: vars(&job["variables"]),
        install,
        commands: strings(&job["script"]),
        artifacts: strings(&job["artifacts"]["paths"]),
        junit: job["artifacts"]["reports"]["junit"]
            .as_str()
            .unwrap()
            .into(),
    }
}

/// What one execution of a recipe's commands gave.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Recipe {
    /// The commands as one shell script, the load shrunk (each replacement must apply: a
    /// recipe that no longer has the text fails here), and either the service slowed by
    /// `delay` against the recipe's gates or, without, the p99 gate loosened for this machine.
    fn script(&self, delay: Option<&str>) -> String {
        let mut script = self.commands.join("\n");
        let mut shrink = |from: &str, to: &str| {
            assert!(
                script.contains(from),
                "{from:?} not in the recipe:\n{script}"
            );
            script = script.replace(from, to);
        };
        shrink("-d 20s --warmup 2s", "-d 1s --warmup 0s");
        shrink("--last 10", "--last 10 --threshold 1000%");
        match delay {
            Some(delay) => shrink(
                "loadbench serve --listen 127.0.0.1:$PORT",
                &format!("loadbench serve --listen 127.0.0.1:$PORT --delay {delay}"),
            ),
            None => shrink("--slo 'p99<50ms,", "--slo 'p99<5s,"),
        }
        // The runner ends the job's background service with the job; so does this.
        format!("set -e\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n{script}\n")
    }

    /// Runs the commands in `dir` on branch `main` with the service on `port` (one port for
    /// every run of a test: the history matches runs by their URL), as the runner would.
    fn execute(&self, dir: &Path, port: u16, delay: Option<&str>) -> Ran {
        let exe = PathBuf::from(env!("CARGO_BIN_EXE_loadbench"));
        let path = format!(
            "{}:{}",
            exe.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(self.script(delay)).current_dir(dir);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd
            .env("PORT", port.to_string())
            .env("PATH", path)
            .env(self.branch_var, "main")
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        Ran {
            code: out.status.code(),
            stdout,
            stderr,
        }
    }

    fn history(&self, dir: &Path) -> PathBuf {
        dir.join(&self.env["HISTORY"])
    }
}

/// How many runs the history at `db` holds with label `branch=main`.
fn runs_on_main(db: &Path) -> u64 {
    let out = bin()
        .args(["history", "--label", "branch=main", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    last.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"))
}

/// The checks every passing execution must meet: exit 0, every artifact written, the JUnit
/// file valid with one passing case per gate, the run filed under `branch=main`.
fn passed(recipe: &Recipe, dir: &Path, ran: &Ran, runs: u64) {
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    for file in &recipe.artifacts {
        assert!(dir.join(file).is_file(), "artifact {file} missing");
    }
    let junit = dir.join(&recipe.junit);
    if valid_junit(&junit) {
        assert_eq!(xpath(&junit, "count(//testcase)"), "2");
        assert_eq!(xpath(&junit, "count(//failure)"), "0");
    }
    assert_eq!(runs_on_main(&recipe.history(dir)), runs);
}

/// A service slowed past the recipe's p99 gate fails the job with exit 4 at the load step,
/// the JUnit file naming the gate, and the comparison never runs.
fn slowed_fails_the_gate(recipe: &Recipe, dir: &Path, port: u16) {
    let ran = recipe.execute(dir, port, Some("100ms"));
    assert_eq!(ran.code, Some(4), "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("gate failed: p99<50ms"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stdout.contains("95% interval"), "{}", ran.stdout);
    let junit = dir.join(&recipe.junit);
    if valid_junit(&junit) {
        assert_eq!(xpath(&junit, "count(//failure)"), "1");
        assert!(xpath(&junit, "string(//testcase[failure]/@name)").contains("p99<50ms"));
    }
}

#[test]
fn the_github_workflow_gates_keeps_its_history_and_judges_against_main() {
    let _guard = loading();
    let recipe = github();
    assert!(recipe.install.contains("cargo install --locked --git"));
    assert_eq!(recipe.junit, "junit.xml");
    let dir = tempdir("ci-github");
    let port = crate::support::free_port();
    // Three runs build the history of main; each one's comparison has too few runs before it.
    for n in 1..=3 {
        let ran = recipe.execute(&dir, port, None);
        passed(&recipe, &dir, &ran, n);
        assert!(ran.stderr.contains("not judged (exit 3)"), "{}", ran.stderr);
    }
    // The fourth is judged against the three before it (or not judged, saying so, when this
    // machine was busy during it).
    let ran = recipe.execute(&dir, port, None);
    passed(&recipe, &dir, &ran, 4);
    let judged = ran.stdout.contains("95% interval") && ran.stdout.contains("within spread");
    let busy = ran.stderr.contains("measured on a busy host");
    assert!(judged || busy, "{}\n{}", ran.stdout, ran.stderr);
    if judged {
        let rows = ran.stdout.lines().filter(|l| l.contains("within spread"));
        assert_eq!(
            rows.count(),
            3,
            "rps, p50 and p99 each judged: {}",
            ran.stdout
        );
    }
    slowed_fails_the_gate(&recipe, &dir, port);
}

#[test]
fn the_gitlab_job_gates_keeps_its_history_and_reports_junit() {
    let _guard = loading();
    let recipe = gitlab();
    assert!(recipe.install.contains("cargo install --locked --git"));
    assert_eq!(recipe.junit, "junit.xml");
    let dir = tempdir("ci-gitlab");
    let port = crate::support::free_port();
    let ran = recipe.execute(&dir, port, None);
    passed(&recipe, &dir, &ran, 1);
    assert!(ran.stderr.contains("not judged (exit 3)"), "{}", ran.stderr);
    slowed_fails_the_gate(&recipe, &dir, port);
}
