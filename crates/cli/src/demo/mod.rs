//! `loadbench demo`: the zero-setup first run. Runs the bundled quickstart scenario
//! (quickstart.toml) through the bench harness: the reference backend started as
//! `loadbench serve`, loaded directly and, when nginx is installed, through nginx; two routes,
//! three rounds each. Prints the comparison and leaves the run folder under `results/`.

use anyhow::Result;
use loadbench_harness::run::RunOptions;
use loadbench_harness::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const QUICKSTART: &str = include_str!("quickstart.toml");

pub(crate) fn demo(quiet: bool) -> Result<ExitCode> {
    let nginx = find_nginx();
    match &nginx {
        Some(p) => eprintln!(
            "demo: the reference backend, direct and behind nginx ({})",
            p.display()
        ),
        None => {
            eprintln!("demo: the reference backend (install nginx to compare it behind a proxy)")
        }
    }
    let mut outcome = run(nginx.as_deref(), quiet);
    if let (Err(e), Some(_)) = (&outcome, &nginx) {
        if stopped() {
            return Err(anyhow::anyhow!("{e:#}"));
        }
        // nginx is only a comparison: a demo that fails because of it goes on without it.
        eprintln!("demo: nginx could not be used ({e:#}); going on with the backend alone");
        outcome = run(None, quiet);
    }
    let (result, in_place) = outcome?;
    let saved = loadbench_model::SavedResult::from(result.clone());
    let text = loadbench_report::Format::Text;
    crate::output::print(&saved, text, &Default::default())?;
    crate::output::stdout(&format!(
        "\nrun folder: {} (report.html: open it in a browser; result.json: docs/result-schema.md)\n",
        Path::new(&result.run_dir).display()
    ))?;
    Ok(crate::bench::exit_code(&result, in_place))
}

/// Runs the quickstart (with nginx when given) through the bench harness.
fn run(nginx: Option<&Path>, quiet: bool) -> Result<(loadbench_model::BenchResult, bool)> {
    let text = scenario_text(nginx);
    let file = PathBuf::from("quickstart.toml");
    let scenario = Scenario::parse(&text, &file).map_err(|e| crate::UserError(e.to_string()))?;
    let opts = RunOptions {
        file,
        text: Some(text),
        results: PathBuf::from("results"),
        upstream_exe: std::env::current_exe()?,
    };
    crate::bench::run(
        &scenario,
        &opts,
        crate::progress::Shown::live(quiet, false, "bench"),
    )
}

fn stopped() -> bool {
    crate::signals::stop_flag().is_ok_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
}

/// The quickstart with nginx's path filled in, or without the nginx target.
fn scenario_text(nginx: Option<&Path>) -> String {
    match nginx {
        Some(p) => QUICKSTART
            .replace("@NGINX@", &p.display().to_string())
            .replace("] #NGINX-TARGETS", ", \"nginx\"]"),
        None => {
            let start = QUICKSTART.find("#NGINX-BEGIN").unwrap_or(0);
            let end = QUICKSTART
                .find("#NGINX-END")
                .map_or(start, |e| e + "#NGINX-END".len());
            format!("{}{}", &QUICKSTART[..start], &QUICKSTART[end..]).replace(" #NGINX-TARGETS", "")
        }
    }
}

/// nginx on PATH or in the sbin directories Debian installs it to.
fn find_nginx() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_harness::scenario::Scenario;

    #[test]
    fn quickstart_parses_with_and_without_nginx() {
        let with = Scenario::parse(
            &scenario_text(Some(Path::new("/usr/sbin/nginx"))),
            Path::new("q"),
        )
        .unwrap();
        assert_eq!(with.targets.len(), 2);
        assert_eq!(with.loads[0].targets, ["direct", "nginx"]);
        assert_eq!(with.targets[1].command.as_deref(), Some("/usr/sbin/nginx"));
        let without = Scenario::parse(&scenario_text(None), Path::new("q")).unwrap();
        assert_eq!(without.targets.len(), 1);
        assert_eq!(without.loads[1].targets, ["direct"]);
        assert_eq!(without.loads[1].request.path, "/delay/20ms");
    }
}
