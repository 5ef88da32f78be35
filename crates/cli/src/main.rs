//! The `loadbench` binary: parse the command line, dispatch to one subcommand, turn errors into
//! one line and an exit code (2 for a mistake in the input, 1 for anything else).

mod against_history;
mod agent;
mod args;
mod bench;
mod compare_cmd;
mod deliver;
mod demo;
mod dist;
mod find_max;
mod grpc;
mod history_cmd;
mod imports;
mod live;
mod load_flags;
mod manual;
mod output;
mod progress;
mod report_cmd;
mod run;

mod serve;
mod signals;
mod values;

use clap::error::ErrorKind;
use clap::Parser;
use std::process::ExitCode;

/// A mistake in what the user asked for: printed as one line, exit code 2.
#[derive(Debug)]
pub struct UserError(pub String);

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let outcome = match cli.command {
        args::Command::Run(a) => run::run(*a),
        args::Command::Serve(a) => serve::serve(a),
        args::Command::Demo(a) => demo::demo(a.quiet),
        args::Command::FindMax(a) => find_max::find_max(*a),
        args::Command::Bench(a) => bench::bench(a),
        args::Command::Report(a) => report_cmd::report(a),
        args::Command::Compare(a) if a.against_history.is_some() => against_history::compare(&a),
        args::Command::Compare(a) => compare_cmd::compare(a),
        args::Command::History(a) => history_cmd::history(a),
        args::Command::Merge(a) => dist::merge(a),
        args::Command::Agent(args::AgentCommand::XxlJob(a)) => agent::xxl_job(a),
        args::Command::Completions(a) => manual::completions(a),
        args::Command::Man(a) => manual::man(a),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UserError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Help and version print as clap renders them; a usage mistake becomes one line, exit code 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use ErrorKind::{DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion};
    if matches!(
        e.kind(),
        DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    // Our value parsers' messages start with the flag and name the fix (crate::values).
    if let Some(source) = std::error::Error::source(&e).map(ToString::to_string) {
        if e.kind() == ErrorKind::ValueValidation && source.starts_with('-') {
            eprintln!("error: {source}");
            return ExitCode::from(2);
        }
    }
    let rendered = e.render().to_string();
    let mut lines = rendered.lines();
    let mut first = lines
        .next()
        .unwrap_or("error: invalid arguments")
        .to_string();
    // "…were not provided:" lists the missing arguments on the indented lines below it.
    if first.ends_with(':') {
        let items: Vec<&str> = lines
            .take_while(|l| l.starts_with(' '))
            .map(str::trim)
            .collect();
        first = format!("{first} {}", items.join(", "));
    }
    eprintln!("{first}; see `loadbench --help` or `loadbench <command> --help`");
    ExitCode::from(2)
}
