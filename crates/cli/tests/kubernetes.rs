//! deploy/kubernetes/ checked as far as this machine allows (no cluster here): the manifests
//! parse, the Indexed Job's fields fit together (index from the Job, count, start and run id
//! from its env, results on the claimed volume), and the containers' own commands run locally
//! with the same env against the reference backend: three shard "pods", then the merge Job's
//! shell line. Only the load's size (`-c`, `-d`, `--warmup`) is shrunk and `/results` is a
//! temporary folder.

use crate::support::{bin, loading, tempdir, text};
use loadbench_model::RunResult;
use loadbench_upstream::{Server, ServerConfig};
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

fn manifests(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/kubernetes")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("the manifest parses"))
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The container's env as a map.
fn env_of(container: &Value) -> BTreeMap<String, String> {
    container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// Kubernetes' `$(VAR)` expansion in args.
fn expand(arg: &str, env: &BTreeMap<String, String>) -> String {
    env.iter().fold(arg.to_string(), |a, (k, v)| {
        a.replace(&format!("$({k})"), v)
    })
}

#[test]
fn the_indexed_job_is_consistent_and_its_command_runs_locally() {
    let docs = manifests("shards-job.yaml");
    let (pvc, job) = (
        of_kind(&docs, "PersistentVolumeClaim"),
        of_kind(&docs, "Job"),
    );
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], spec["parallelism"]);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    let env = env_of(container);
    for name in [
        "LOADBENCH_RUN_ID",
        "LOADBENCH_START_AT",
        "LOADBENCH_SHARD_COUNT",
        "LOADBENCH_TARGET",
    ] {
        assert!(env.contains_key(name), "{name} missing");
    }
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(env["LOADBENCH_SHARD_COUNT"], n.to_string());
    let args = strings(&container["args"]);
    assert!(args.contains(&"--shard-from-env".to_string()));
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let at = args.iter().position(|a| a == "--results-dir").unwrap();
    assert_eq!(args[at + 1], mount, "results go to the shared volume");
    let claim = &pod["volumes"][0]["persistentVolumeClaim"]["claimName"];
    assert_eq!(claim, &pvc["metadata"]["name"]);
    assert_eq!(strings(&container["command"]), ["loadbench"]);
    runs_locally(&args, env, mount, n as u32);
}

/// The pods' command with the Job's env, one process per completion index, then the merge
/// Job's shell line.
fn runs_locally(args: &[String], mut env: BTreeMap<String, String>, mount: &str, n: u32) {
    let _busy = loading();
    let server = Server::start(ServerConfig::ephemeral()).expect("backend starts");
    let dir = tempdir("k8s");
    let start = SystemTime::now() + Duration::from_millis(2500);
    env.insert(
        "LOADBENCH_TARGET".into(),
        format!("http://{}/", server.local_addr()),
    );
    env.insert(
        "LOADBENCH_START_AT".into(),
        humantime::format_rfc3339_millis(start).to_string(),
    );
    let args: Vec<String> = shrink(args)
        .iter()
        .map(|a| expand(a, &env).replace(mount, dir.to_str().unwrap()))
        .collect();
    let pods: Vec<_> = (0..n)
        .map(|i| {
            bin()
                .args(&args)
                .envs(&env)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut p in pods {
        assert!(p.wait().unwrap().success(), "a shard pod failed");
    }
    let total = run_merge_job(&dir);
    assert_eq!(total.shards.as_ref().unwrap().shards.len(), n as usize);
    assert!(total.shards.as_ref().unwrap().missing().is_empty());
    // A timed run: requests in flight at the deadline reached the server but are counted as
    // abandoned, not answered (docs/result-schema.md, the accounting identity).
    let (served, s) = (server.stats().route("/"), &total.stats);
    assert!(
        s.requests > 0 && s.requests + s.errors.total() <= served,
        "{served}"
    );
    assert!(served <= s.sent, "{served} served, {} sent", s.sent);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same command with a small load: `-c 6`, `-d 1s`, no warm-up.
fn shrink(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    for (flag, small) in [("-c", "6"), ("-d", "1s"), ("--warmup", "0s")] {
        if let Some(i) = out.iter().position(|a| a == flag) {
            out[i + 1] = small.into();
        }
    }
    out
}

/// merge-job.yaml's container: its shell line with `/results` in `dir` and this build's
/// binary first on PATH; returns the merged result it wrote.
fn run_merge_job(dir: &Path) -> RunResult {
    let docs = manifests("merge-job.yaml");
    let job = of_kind(&docs, "Job");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let command = strings(&container["command"]);
    assert_eq!(command[..2], ["/bin/sh", "-c"]);
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let script = command[2].replace(mount, dir.to_str().unwrap());
    let exe = Path::new(env!("CARGO_BIN_EXE_loadbench")).parent().unwrap();
    let path = format!(
        "{}:{}",
        exe.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("/bin/sh")
        .args(["-c", &script])
        .envs(env_of(container))
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let run_id = &env_of(container)["LOADBENCH_RUN_ID"];
    let merged = std::fs::read_to_string(dir.join(format!("{run_id}-total.json"))).unwrap();
    RunResult::from_json(&merged).unwrap()
}
