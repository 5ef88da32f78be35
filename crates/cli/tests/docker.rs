//! The Dockerfile checked as far as this machine allows (no container engine runs in the test
//! suite): it builds the package that owns the `loadbench` binary the way the README does
//! (`cargo build --release --locked`, which `cargo metadata --locked` proves the committed
//! Cargo.lock allows), copies every workspace member into the build, ships exactly the binary
//! the builder built into a Debian slim image of the builder's release, and is built under the
//! tag that deploy/kubernetes/ runs, as a documented `docker build -t` line says.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One Dockerfile instruction: its keyword (upper case) and its arguments, continuation lines
/// joined.
#[derive(Debug)]
struct Instruction {
    keyword: String,
    args: String,
}

fn instructions(dockerfile: &str) -> Vec<Instruction> {
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in dockerfile.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && current.is_empty()) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(t);
                joined.push(std::mem::take(&mut current));
            }
        }
    }
    joined
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (keyword, args) = l.trim().split_once(char::is_whitespace).unwrap();
            Instruction {
                keyword: keyword.to_uppercase(),
                args: args.split_whitespace().collect::<Vec<_>>().join(" "),
            }
        })
        .collect()
}

/// The Dockerfile's two stages, each as (FROM arguments, the instructions after it): the
/// builder and the final image.
fn stages() -> [(String, Vec<Instruction>); 2] {
    let mut stages: Vec<(String, Vec<Instruction>)> = Vec::new();
    for i in instructions(&read("Dockerfile")) {
        if i.keyword == "FROM" {
            stages.push((i.args, Vec::new()));
        } else {
            stages.last_mut().expect("FROM first").1.push(i);
        }
    }
    stages
        .try_into()
        .unwrap_or_else(|s| panic!("a builder stage and the final image: {s:?}"))
}

/// The builder's image, from `FROM rust:… AS builder`.
fn builder_image(from: &str) -> &str {
    let (image, alias) = from
        .split_once(" AS ")
        .or_else(|| from.split_once(" as "))
        .expect("FROM rust:… AS builder");
    assert_eq!(alias, "builder");
    image
}

/// The workspace's members, from `cargo metadata`.
fn members(meta: &serde_json::Value) -> Vec<&serde_json::Value> {
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            meta["workspace_members"]
                .as_array()
                .unwrap()
                .contains(&p["id"])
        })
        .collect()
}

/// `cargo metadata --locked` of the workspace: fails when Cargo.lock would have to change,
/// exactly as the image's `cargo build --locked` would.
fn metadata() -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--locked", "--offline", "--format-version", "1"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata --locked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Debian's release name in an image tag: `rust:1.95-slim-bookworm`, `debian:bookworm-slim` →
/// `bookworm`.
fn debian_release(image: &str) -> &str {
    const RELEASES: [&str; 4] = ["bullseye", "bookworm", "trixie", "forky"];
    image
        .split(['-', ':'])
        .find(|w| RELEASES.contains(w))
        .unwrap_or_else(|| panic!("{image}: no Debian release in the tag"))
}

#[test]
fn the_builder_is_rust_of_the_workspace_version_building_the_binary_package_locked() {
    let [(builder_from, builder), _] = stages();
    let rust = builder_image(&builder_from)
        .strip_prefix("rust:")
        .expect("the builder is the official rust image");
    let msrv = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    let version = |v: &str| -> Vec<u32> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    let tag_version = rust.split('-').next().unwrap();
    assert!(
        version(tag_version) >= version(&msrv),
        "rust:{tag_version} is older than the workspace's rust-version {msrv}"
    );
    // The package that owns the `loadbench` binary, as cargo sees it.
    let meta = metadata();
    let owner = members(&meta)
        .into_iter()
        .find(|p| {
            p["targets"].as_array().unwrap().iter().any(|t| {
                t["name"] == "loadbench" && t["kind"].as_array().unwrap().contains(&"bin".into())
            })
        })
        .expect("a workspace package builds the loadbench binary");
    let build = format!(
        "cargo build --release --locked -p {}",
        owner["name"].as_str().unwrap()
    );
    let runs: Vec<&str> = builder
        .iter()
        .filter(|i| i.keyword == "RUN")
        .map(|i| i.args.as_str())
        .collect();
    assert!(
        runs.iter()
            .any(|r| r.split(" && ").any(|c| c.trim() == build)),
        "the builder should run `{build}`: {runs:?}"
    );
}

#[test]
fn the_build_gets_every_workspace_member_and_dockerignore_keeps_them() {
    let [(_, builder), _] = stages();
    let copied: Vec<String> = builder
        .iter()
        .filter(|i| i.keyword == "COPY")
        .flat_map(|i| {
            let parts: Vec<&str> = i.args.split(' ').collect();
            parts[..parts.len() - 1]
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    // .cargo: the linker driver a local release build uses (glibc static, hot code together).
    for needed in ["Cargo.toml", "Cargo.lock", ".cargo"] {
        assert!(copied.iter().any(|c| c == needed), "{needed} is not copied");
    }
    let meta = metadata();
    let root_dir = root();
    for member in members(&meta) {
        let manifest = Path::new(member["manifest_path"].as_str().unwrap());
        let rel = manifest.strip_prefix(&root_dir).unwrap();
        assert!(
            copied.iter().any(|c| rel.starts_with(c)),
            "{} is not copied into the build",
            rel.display()
        );
    }
    let ignore = read(".dockerignore");
    let ignored: Vec<&str> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for c in &copied {
        assert!(!ignored.contains(&c.as_str()), ".dockerignore drops {c}");
    }
    for heavy in ["**/target", ".git"] {
        assert!(
            ignored.contains(&heavy),
            ".dockerignore should drop {heavy}"
        );
    }
}

#[test]
fn the_final_image_is_slim_debian_of_the_builders_release_with_the_built_binary() {
    let [(builder_from, builder), (final_from, last)] = stages();
    // Debian slim of the builder's release: the same glibc the binary was linked against.
    assert!(
        final_from.starts_with("debian:") && final_from.contains("-slim"),
        "the final image should be debian:…-slim, not {final_from}"
    );
    assert_eq!(
        debian_release(&final_from),
        debian_release(builder_image(&builder_from))
    );
    let workdir = builder
        .iter()
        .rev()
        .find(|i| i.keyword == "WORKDIR")
        .map(|i| i.args.clone())
        .expect("the builder sets a WORKDIR");
    let built = format!("{workdir}/target/release/loadbench");
    let copy = last
        .iter()
        .find(|i| i.keyword == "COPY" && i.args.starts_with("--from=builder "))
        .expect("the final image copies from the builder");
    let parts: Vec<&str> = copy.args.split(' ').collect();
    assert_eq!(parts[1], built, "the final image should copy {built}");
    assert_eq!(
        parts[2], "/usr/local/bin/loadbench",
        "on PATH as `loadbench`"
    );
    let entry = last
        .iter()
        .find(|i| i.keyword == "ENTRYPOINT")
        .expect("an ENTRYPOINT");
    assert_eq!(entry.args, r#"["loadbench"]"#);
}

#[test]
fn the_image_the_kubernetes_manifests_run_is_the_one_the_docs_build() {
    let version = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    let mut docs = read("README.md");
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push_str(&std::fs::read_to_string(p).unwrap());
        }
    }
    let built: Vec<&str> = docs
        .lines()
        .filter_map(|l| l.split("docker build -t ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert!(
        !built.is_empty(),
        "no `docker build -t TAG .` line in the docs"
    );
    let mut images = Vec::new();
    for e in std::fs::read_dir(root().join("deploy/kubernetes")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        images.extend(
            text.lines()
                .filter_map(|l| l.trim().strip_prefix("image: "))
                .map(|i| i.trim().to_string()),
        );
    }
    assert!(images.len() >= 2, "{images:?}");
    for image in &images {
        assert!(
            built.contains(&image.as_str()),
            "deploy/kubernetes runs {image}, which no documented `docker build -t` makes \
             ({built:?})"
        );
        assert_eq!(
            image.split(':').nth(1),
            Some(version.as_str()),
            "{image}: the tag should be the workspace version {version}"
        );
    }
    let dockerfile = read("Dockerfile");
    assert!(
        dockerfile.contains(&format!("docker build -t {}", images[0])),
        "the Dockerfile's header should say how to build {}",
        images[0]
    );
}
