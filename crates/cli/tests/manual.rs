//! `loadbench completions SHELL` and `loadbench man` (issue 35, point 10): the scripts load in
//! their shell and complete the real subcommands and flags; the man pages are valid roff with
//! the usual sections, one per command.

use crate::support::{bin, tempdir, text};
use std::process::Command;

/// The subcommands of `loadbench`, as `loadbench --help` lists them.
fn subcommands() -> Vec<String> {
    let out = bin().arg("--help").output().unwrap();
    let (stdout, _) = text(&out);
    let names: Vec<String> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(
        names.len() >= 10 && names.iter().any(|n| n == "find-max"),
        "{stdout}"
    );
    names
}

fn ok_stdout(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "loadbench {args:?}: {stderr}");
    stdout
}

/// Runs the bash completion function on `line` (the cursor at its end) and returns the
/// candidates bash would offer.
fn bash_complete(script: &std::path::Path, line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split(' ').collect();
    let cword = words.len() - 1;
    let prog = format!(
        "source '{}'\n\
         COMP_WORDS=({})\nCOMP_CWORD={cword}\nCOMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\n\
         _loadbench loadbench '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
        words[cword],
        words[cword.saturating_sub(1)],
    );
    let out = Command::new("bash").arg("-c").arg(prog).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "bash: {stderr}");
    stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completion_loads_and_completes_subcommands_and_flags() {
    let script = ok_stdout(&["completions", "bash"]);
    for sub in subcommands() {
        assert!(script.contains(&sub), "no {sub} in the bash script");
    }
    assert!(script.contains("--rate"), "no --rate in the bash script");
    let dir = tempdir("completions");
    let file = dir.join("loadbench.bash");
    std::fs::write(&file, &script).unwrap();
    let registered = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && complete -p loadbench",
            file.display()
        ))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&registered);
    assert!(
        stdout.contains("-F _loadbench loadbench"),
        "{stdout}{stderr}"
    );
    assert_eq!(bash_complete(&file, "loadbench fi"), ["find-max"]);
    let rate = bash_complete(&file, "loadbench run --ra");
    assert!(rate.iter().any(|c| c == "--rate"), "{rate:?}");
    assert!(rate.iter().any(|c| c == "--ramp"), "{rate:?}");
    let serve = bash_complete(&file, "loadbench serve --ra");
    assert!(serve.is_empty(), "serve has no --ra… flag: {serve:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_shell_gets_a_script_naming_the_commands_and_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell", "ZSH"] {
        let script = ok_stdout(&["completions", shell]);
        for word in ["loadbench", "find-max", "xxl-job", "completions", "--rate"] {
            assert!(script.contains(word), "{shell}: no {word:?}");
        }
    }
    // Each shell's own syntax: different generators, not one script five times.
    assert!(ok_stdout(&["completions", "zsh"]).starts_with("#compdef loadbench"));
    assert!(ok_stdout(&["completions", "fish"]).contains("complete -c loadbench"));
    assert!(ok_stdout(&["completions", "powershell"]).contains("Register-ArgumentCompleter"));
}

#[test]
fn an_unknown_shell_is_one_line_naming_the_shells_and_exit_2() {
    for args in [&["completions", "tcsh"][..], &["completions"]] {
        let out = bin().args(args).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    let out = bin().args(["completions", "tcsh"]).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("'tcsh'") && stderr.contains("bash, zsh, fish, elvish or powershell"),
        "{stderr}"
    );
}

/// Renders a roff page with groff, which fails or warns on broken roff; the rendered text.
fn groff(page: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-Wbreak"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("groff runs (Debian package groff-base, a dependency of man-db)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "groff failed: {stderr}");
    assert!(stderr.is_empty(), "groff warns: {stderr}");
    stdout
}

#[test]
fn the_man_page_is_roff_with_its_sections_and_every_command() {
    let page = ok_stdout(&["man"]);
    assert!(page.contains(".TH loadbench 1"), "{page}");
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS"] {
        assert!(page.contains(&format!(".SH {section}")), "no {section}");
    }
    let shown = groff(&page);
    for sub in subcommands() {
        assert!(
            shown.contains(&format!("loadbench-{sub}(1)")),
            "the page does not list {sub}:\n{shown}"
        );
    }
    let run = ok_stdout(&["man", "run"]);
    groff(&run);
    for flag in ["rate", "pipeline", "shard-from-env"] {
        let roff = format!("\\fB\\-\\-{}\\fR", flag.replace('-', "\\-"));
        assert!(run.contains(&roff), "loadbench man run: no {roff}");
    }
    let xxl = ok_stdout(&["man", "agent", "xxl-job"]);
    assert!(xxl.contains(".TH loadbench-agent-xxl-job 1"), "{xxl}");
}

#[test]
fn man_dir_writes_one_page_per_command() {
    let dir = tempdir("man");
    let out = bin()
        .args(["man", "--dir"])
        .arg(dir.join("man1"))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let mut written: Vec<String> = std::fs::read_dir(dir.join("man1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = subcommands()
        .iter()
        .map(|s| format!("loadbench-{s}.1"))
        .chain([
            "loadbench.1".into(),
            "loadbench-agent-xxl-job.1".into(),
            "loadbench-history-trend.1".into(),
            "loadbench-history-html.1".into(),
            "loadbench-history-show.1".into(),
        ])
        .collect();
    expected.sort();
    assert_eq!(written, expected);
    assert!(
        stderr.contains(&format!("wrote {} man pages", expected.len())),
        "{stderr}"
    );
    let run = std::fs::read_to_string(dir.join("man1/loadbench-run.1")).unwrap();
    assert_eq!(run, ok_stdout(&["man", "run"]), "--dir and stdout differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn man_of_an_unknown_command_is_one_line_and_exit_2() {
    for (args, says) in [
        (&["man", "runn"][..], "give one of run, serve"),
        (
            &["man", "run", "fast"],
            "`loadbench run` has no command `fast`",
        ),
        (&["man", "run", "--dir", "x"], "cannot be used with"),
    ] {
        let out = bin().args(args).output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
