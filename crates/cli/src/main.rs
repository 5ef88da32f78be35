//! The `loadbench` binary: parse the command line, dispatch to one subcommand, turn errors into
//! one line and an exit code (2 for a mistake in the input, 1 for anything else).

mod args;
mod host;
mod progress;
mod run;
mod save;

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
    let cli = args::Cli::parse();
    let outcome = match cli.command {
        args::Command::Run(a) => run::run(a),
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
