//! Where a result goes once it exists, for every command alike: the `-o`/`-f` format as a clap
//! value ([`any_format`]: every [`Format`] of the reports, one list of names and one one-line
//! error for all commands), and [`print`] to stdout or [`write`] to a file (atomically, with an
//! HTML page's chart files beside it). `run`, `find-max`, `bench` and `report` all come through
//! here, and here through `loadbench_report::render`, so any result kind prints in any format
//! the same way.

use crate::UserError;
use anyhow::Result;
use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::ValueEnum;
use loadbench_model::SavedResult;
use loadbench_report::{Format, RenderOptions, Rendered};
use loadbench_runner::save;
use std::ffi::OsStr;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// A report [`Format`] as a clap value: its name, aliases and help line are the report's own
/// ([`Format::name`], [`Format::aliases`], [`Format::about`]), in the order of [`Format::ALL`],
/// so a new format needs no change here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OutputFormat(Format);

/// Every format as a clap value.
static FORMATS: [OutputFormat; Format::ALL.len()] = {
    let mut all = [OutputFormat(Format::Text); Format::ALL.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = OutputFormat(Format::ALL[i]);
        i += 1;
    }
    all
};

impl ValueEnum for OutputFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let format = self.0;
        let value = PossibleValue::new(format.name()).aliases(format.aliases().iter().copied());
        Some(match format.about() {
            Some(about) => value.help(about),
            None => value,
        })
    }
}

/// The parser of `-o`/`-f` for `run`, `find-max`, `bench` and `report`: any [`Format`].
pub(crate) fn any_format() -> impl TypedValueParser<Value = Format> {
    FormatParser::<OutputFormat>::new().map(|f| f.0)
}

/// Parses a format flag into `T` (all of [`Format`], or a command's subset of it), with
/// one line naming the choices when the name is wrong, instead of clap's multi-line answer.
#[derive(Debug)]
pub(crate) struct FormatParser<T>(PhantomData<T>);

impl<T> FormatParser<T> {
    pub(crate) fn new() -> Self {
        FormatParser(PhantomData)
    }
}

impl<T> Clone for FormatParser<T> {
    fn clone(&self) -> Self {
        FormatParser::new()
    }
}

impl<T: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for FormatParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        let text = text.trim();
        T::from_str(text, true).map_err(|_| {
            let flag = arg.and_then(|a| a.get_long()).unwrap_or("format");
            clap::Error::raw(
                ErrorKind::InvalidValue,
                unknown::<T>(&format!("--{flag}"), text, cmd.get_name()),
            )
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let values = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value());
        Some(Box::new(values))
    }
}

/// `--format csv is not available for compare: use text or md`, or, for a name no command
/// knows, `--format: unknown format 'xml': choose one of text, json, csv, md, html or junit`.
fn unknown<T: ValueEnum>(flag: &str, text: &str, command: &str) -> String {
    let names: Vec<String> = T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .map(|v| v.get_name().to_string())
        .collect();
    let choices = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    if text.parse::<Format>().is_ok() {
        format!("{flag} {text} is not available for {command}: use {choices}")
    } else {
        format!("{flag}: unknown format '{text}': choose one of {choices}")
    }
}

/// Prints the result in `format` to stdout.
pub(crate) fn print(result: &SavedResult, format: Format, opts: &RenderOptions) -> Result<()> {
    let rendered = render(result, format, opts)?;
    stdout(&rendered.text)
}

/// Writes `text` to stdout. A reader that went away (`| head`, quitting `less`: a broken pipe)
/// ends the output quietly; any other failure (a full disk) is one line, never a panic.
pub(crate) fn stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// Checks before a run that `path` (given with `flag`) can be written: creates its directory
/// as the final write would, then a temporary file beside it, and removes that file again. A
/// run of ten minutes must not end in "cannot write".
pub(crate) fn check_writable(flag: &str, path: Option<&Path>) -> Result<(), UserError> {
    let Some(path) = path else { return Ok(()) };
    let fail = |e: std::io::Error| {
        UserError(format!(
            "{flag} {}: cannot write there ({e}): give a path in a writable directory",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(fail(std::io::Error::other("it is a directory")));
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        // A device or FIFO is written into as it is (opening a FIFO here could block).
        return Ok(());
    }
    let dir = beside(path);
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".loadbench-check.{}.tmp", std::process::id()));
    std::fs::File::create(&probe).map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Writes the result in `format` to `path` atomically and, for HTML, its chart files (SVG, and
/// PNG when the system has a font) beside it; returns the chart files' paths.
pub(crate) fn write(
    path: &Path,
    result: &SavedResult,
    format: Format,
    opts: &RenderOptions,
) -> Result<Vec<PathBuf>> {
    let rendered = render(result, format, opts)?;
    save::write_atomic(path, rendered.text.as_bytes())?;
    let files = rendered
        .chart_files()
        .map_err(|e| anyhow::anyhow!("cannot draw the charts of {}: {e}", path.display()))?;
    let dir = beside(path);
    let mut written = Vec::new();
    for file in files {
        let chart = dir.join(&file.name);
        save::write_atomic(&chart, &file.bytes)?;
        written.push(chart);
    }
    Ok(written)
}

fn render(
    result: &SavedResult,
    format: Format,
    opts: &RenderOptions,
) -> Result<Rendered, UserError> {
    loadbench_report::render(result, format, opts).map_err(|e| UserError(e.to_string()))
}

/// The directory a page's charts go to: the page's own.
fn beside(page: &Path) -> &Path {
    page.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_format_is_a_value_with_its_names_and_help() {
        let values: Vec<PossibleValue> = OutputFormat::value_variants()
            .iter()
            .filter_map(|f| f.to_possible_value())
            .collect();
        let names: Vec<&str> = values.iter().map(|v| v.get_name()).collect();
        assert_eq!(names, ["text", "json", "csv", "md", "html", "junit"]);
        let helps: Vec<Option<String>> = values
            .iter()
            .map(|v| v.get_help().map(|h| h.to_string()))
            .collect();
        assert_eq!(helps[..3], [None, None, None]);
        assert_eq!(
            helps[3].as_deref(),
            Some("Markdown tables, for a pull request")
        );
        for (name, format) in [("markdown", Format::Markdown), ("HTML", Format::Html)] {
            assert_eq!(OutputFormat::from_str(name, true), Ok(OutputFormat(format)));
        }
    }

    #[test]
    fn the_flag_parses_names_and_aliases_into_formats() {
        let cmd = clap::Command::new("report").arg(
            clap::Arg::new("format")
                .long("format")
                .value_parser(any_format()),
        );
        let parse = |v: &str| {
            cmd.clone()
                .try_get_matches_from(["report", "--format", v])
                .map(|m| *m.get_one::<Format>("format").unwrap())
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("markdown"), Ok(Format::Markdown));
        assert_eq!(parse(" csv "), Ok(Format::Csv));
        assert_eq!(
            parse("xml").unwrap_err().trim_end(),
            "error: --format: unknown format 'xml': choose one of text, json, csv, md, html or junit"
        );
    }

    #[test]
    fn wrong_names_are_one_line_naming_the_choices() {
        assert_eq!(
            unknown::<OutputFormat>("--output", "xml", "run"),
            "--output: unknown format 'xml': choose one of text, json, csv, md, html or junit"
        );
    }

    #[test]
    fn charts_go_beside_the_page() {
        assert_eq!(beside(Path::new("page.html")), Path::new("."));
        assert_eq!(beside(Path::new("out/page.html")), Path::new("out"));
    }
}
