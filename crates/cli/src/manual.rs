//! `loadbench completions SHELL` (clap_complete) and `loadbench man` (clap_mangen): both are
//! generated from the same clap definition as `--help`, so they cannot drift from it.

use crate::args::Cli;
use crate::UserError;
use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The shells `loadbench completions` knows, as the user types them.
const SHELLS: [(&str, Shell); 5] = [
    ("bash", Shell::Bash),
    ("zsh", Shell::Zsh),
    ("fish", Shell::Fish),
    ("elvish", Shell::Elvish),
    ("powershell", Shell::PowerShell),
];

/// `loadbench completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell, e.g. `loadbench completions bash >
    /// ~/.local/share/bash-completion/completions/loadbench`.
    #[arg(value_name = "SHELL", value_parser = shell)]
    pub shell: Shell,
}

/// `loadbench man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print, e.g. `run` or `agent xxl-job` [default: the page of
    /// `loadbench` itself, which lists the commands].
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,
    /// Write every page instead (loadbench.1, loadbench-run.1, ..., one per command) into this
    /// folder, created if missing, e.g. `--dir /usr/local/share/man/man1`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

fn shell(name: &str) -> Result<Shell, String> {
    SHELLS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, s)| *s)
        .ok_or_else(|| "give bash, zsh, fish, elvish or powershell".to_string())
}

/// The command as the pages and completions show it: no `help` subcommand (`--help` is on
/// every command), bin names set on every subcommand.
fn command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

pub(crate) fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut command(), "loadbench", &mut script);
    to_stdout(&script)
}

pub(crate) fn man(a: ManArgs) -> Result<ExitCode> {
    let root = command();
    if let Some(dir) = a.dir {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut pages = 0;
        write_pages(&root, &dir, &mut pages)?;
        eprintln!("wrote {pages} man pages to {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut cmd = &root;
    for name in &a.command {
        cmd = cmd.find_subcommand(name).ok_or_else(|| {
            let names: Vec<&str> = cmd.get_subcommands().map(clap::Command::get_name).collect();
            UserError(if names.is_empty() {
                format!("`{}` has no command `{name}`: leave it out", full_name(cmd))
            } else {
                format!(
                    "`{}` has no command `{name}`: give one of {}",
                    full_name(cmd),
                    names.join(", ")
                )
            })
        })?;
    }
    let mut page = Vec::new();
    self::page(cmd).render(&mut page)?;
    to_stdout(&page)
}

/// `loadbench`, `loadbench agent`, ...: how the user types this (built) command.
fn full_name(cmd: &clap::Command) -> &str {
    cmd.get_bin_name().unwrap_or("loadbench")
}

/// The page of one command, its footer naming loadbench's version (not the command's name).
fn page(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone()).source(concat!("loadbench ", env!("CARGO_PKG_VERSION")))
}

/// Writes the page of `cmd` and of each of its subcommands into `dir`.
fn write_pages(cmd: &clap::Command, dir: &std::path::Path, pages: &mut usize) -> Result<()> {
    for sub in cmd.get_subcommands() {
        write_pages(sub, dir, pages)?;
    }
    page(cmd)
        .generate_to(dir)
        .with_context(|| format!("cannot write a man page into {}", dir.display()))?;
    *pages += 1;
    Ok(())
}

/// Writes generated text to stdout; a reader that stops early (`| head`) is not an error.
fn to_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e).context("cannot write to stdout"),
    }
}
