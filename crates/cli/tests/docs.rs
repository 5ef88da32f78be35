//! The docs check (issue 35, point 2): README.md and docs/*.md must agree with the binary.
//!
//! - Every long flag of every command's `--help` is named in README.md or docs/*.md, and every
//!   flag of `loadbench run --help` in the README's `run` options table; every command is in
//!   the README's command table.
//! - No doc sentence says a shipped feature is missing: a sentence with a "missing" phrase
//!   ("not supported", "no equivalent yet", "is planned", a `## Not yet` section, ...) must not
//!   name a flag that `--help` lists, nor a feature whose flag or command the binary has
//!   (HTTP/2, HTTPS, the live web page, ...). The few true limitations of a shipped feature (a
//!   combination the binary refuses) are listed in [`KNOWN_LIMITS`] with the command that
//!   proves them, so that list cannot go stale either.
//!
//! The flags come from the real binary's `--help`, so a new flag fails this test until a doc
//! names it.

use crate::support::{bin, free_port, text};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The repository root (README.md, docs/).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and docs/*.md: (name relative to the root, text).
fn docs() -> Vec<(String, String)> {
    let mut files = vec![root().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    let docs: Vec<(String, String)> = files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root()).unwrap_or(&p).display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    assert!(docs.len() > 5, "README.md and docs/*.md not found");
    docs
}

fn help(path: &[String]) -> String {
    let out = bin().args(path).arg("--help").output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "loadbench {path:?} --help: {stderr}");
    stdout
}

/// Every command of the binary as the words after `loadbench` (`["agent", "xxl-job"]`),
/// found through the `Commands:` sections of `--help`; a command with subcommands is listed
/// too (its own flags are `--help`'s).
fn commands() -> Vec<Vec<String>> {
    fn walk(path: Vec<String>, all: &mut Vec<Vec<String>>) {
        let page = help(&path);
        let subs: Vec<String> = page
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| *n != "help")
            .map(str::to_string)
            .collect();
        for sub in subs {
            let mut p = path.clone();
            p.push(sub);
            walk(p, all);
        }
        if !path.is_empty() {
            all.push(path);
        }
    }
    let mut all = Vec::new();
    walk(Vec::new(), &mut all);
    all.sort();
    all
}

/// The long flags of one command's `--help` (`--rate`), without clap's `--help`/`--version`.
fn long_flags(path: &[String]) -> BTreeSet<String> {
    help(path)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = match l.as_bytes() {
                [b'-', c, b',', b' ', ..] if c.is_ascii_alphanumeric() => &l[4..],
                _ => l,
            };
            l.starts_with("--").then(|| flag_at(l))
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

/// The `--flag` at the start of `s`.
fn flag_at(s: &str) -> String {
    let end = s[2..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .map_or(s.len(), |i| i + 2);
    s[..end].to_string()
}

/// Every `--flag` token in a text (not the middle of a longer word or flag).
fn flag_tokens(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("--") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let flag = flag_at(&text[i..]);
        if flag.len() > 2 && flag.as_bytes()[2].is_ascii_alphanumeric() {
            found.insert(flag);
        }
    }
    found
}

/// The lines of README.md's section under the heading that starts with `heading`.
fn readme_section(heading: &str) -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .collect();
    assert!(!section.is_empty(), "README.md has no {heading:?} section");
    section.join("\n")
}

/// The first cells of a Markdown table's rows.
fn first_cells(section: &str) -> String {
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_flag_of_every_command_is_in_the_readme_or_the_docs() {
    let named: BTreeSet<String> = docs().iter().flat_map(|(_, t)| flag_tokens(t)).collect();
    let mut missing = Vec::new();
    let mut checked = 0;
    for cmd in commands() {
        for flag in long_flags(&cmd) {
            checked += 1;
            if !named.contains(&flag) {
                missing.push(format!("loadbench {} {flag}", cmd.join(" ")));
            }
        }
    }
    assert!(checked > 80, "only {checked} flags found in --help");
    assert!(
        missing.is_empty(),
        "flags in --help that neither README.md nor docs/*.md names:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_run_flag_is_in_the_readme_run_options_table() {
    let table = flag_tokens(&first_cells(&readme_section("### `loadbench run` options")));
    let flags = long_flags(&["run".to_string()]);
    assert!(flags.contains("--rate") && flags.len() > 30, "{flags:?}");
    let missing: Vec<&String> = flags.difference(&table).collect();
    assert!(
        missing.is_empty(),
        "`loadbench run --help` flags missing from the first column of README.md's \
         `loadbench run` options table: {missing:?}"
    );
    let stale: Vec<&String> = table.difference(&flags).collect();
    assert!(
        stale.is_empty(),
        "README.md's `loadbench run` options table names flags `run --help` lacks: {stale:?}"
    );
}

#[test]
fn every_command_is_in_the_readme_command_table() {
    let table = first_cells(&readme_section("## Commands"));
    let all = commands();
    let missing: Vec<String> = all
        .iter()
        // A command with subcommands (`agent`) is named through them.
        .filter(|c| !all.iter().any(|o| o.len() > c.len() && o.starts_with(c)))
        .map(|c| format!("loadbench {}", c.join(" ")))
        .filter(|c| !table.contains(&format!("`{c}")))
        .collect();
    assert!(
        missing.is_empty(),
        "commands missing from README.md's command table: {missing:?}"
    );
}

/// Phrases that say something is missing (lowercase).
const MISSING: &[&str] = &[
    "not supported",
    "unsupported",
    "not yet",
    "no equivalent",
    "not built",
    "still to come",
    "is planned",
    "are planned",
    "not available",
    "does not exist",
    "do not exist",
    "there is no ",
    "no support for",
];

/// Shipped features a doc may name in words, and the command (and flag) that proves the
/// binary has them.
const FEATURES: &[(&str, &[&str], &str)] = &[
    ("HTTP/2", &["http/2", "h2c"], "run --http2"),
    ("HTTPS", &["https", "tls"], "run --cacert"),
    (
        "the open model",
        &["open model", "arrival rate"],
        "run --rate",
    ),
    ("pipelining", &["pipelining"], "run --pipeline"),
    ("Unix sockets", &["unix socket"], "run --unix-socket"),
    (
        "the live web page",
        &["live web", "live page"],
        "run --live-web",
    ),
    (
        "the bench dashboard",
        &["matrix view", "dashboard"],
        "bench --no-live",
    ),
    (
        "distributed load",
        &["distributed load", "distributed run"],
        "run --shard",
    ),
    ("request mixes", &["request mix"], "run --requests-file"),
    ("interval logs", &["interval log"], "run --hlog"),
    (
        "wrk scripts",
        &["lua script", "wrk script", "scripting"],
        "run --script",
    ),
    ("shell completions", &["completion"], "completions"),
    ("man pages", &["man page"], "man"),
];

/// True limitations of shipped features, each with the doc words that state it and a command
/// line the binary refuses (exit 2, "not supported") to prove it.
const KNOWN_LIMITS: &[(&str, &str, &[&str])] = &[(
    "docs/transport.md",
    "`--no-keepalive` in the open model",
    &["run", "URL", "--http2", "--rate", "10", "--no-keepalive"],
)];

/// One claim of a doc: a sentence, a list item's sentence or a table row, with its line.
#[derive(Debug)]
struct Claim {
    line: usize,
    text: String,
    /// Under a heading that says "not yet", "planned", ...
    in_missing_section: bool,
}

/// Splits Markdown into claims: paragraphs and list items joined across lines, then cut into
/// sentences; a table row up to its cell that says something is missing. Fenced code blocks
/// are examples, not claims.
fn claims(doc: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    let mut para: Vec<(usize, &str)> = Vec::new();
    let mut fenced = false;
    let mut missing_section = false;
    let flush = |para: &mut Vec<(usize, &str)>, out: &mut Vec<Claim>, section: bool| {
        if let Some(&(line, _)) = para.first() {
            let joined = para.iter().map(|(_, l)| *l).collect::<Vec<_>>().join(" ");
            for sentence in joined.split(". ").flat_map(|s| s.split("; ")) {
                out.push(Claim {
                    line,
                    text: sentence.to_string(),
                    in_missing_section: section,
                });
            }
        }
        para.clear();
    };
    for (i, line) in doc.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            flush(&mut para, &mut out, missing_section);
            continue;
        }
        if fenced {
            continue;
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with('|') || t.starts_with("- ") {
            flush(&mut para, &mut out, missing_section);
        }
        if t.starts_with('#') {
            missing_section = says_missing(t);
        } else if t.starts_with('|') {
            // A row says what is missing in one cell about the cells before it (their flag,
            // **no equivalent yet**); the cells after it are notes on what there is instead.
            let cells: Vec<&str> = t.trim_matches('|').split('|').map(str::trim).collect();
            let upto = cells.iter().rposition(|c| says_missing(c));
            let cells = upto.map_or(&cells[..], |i| &cells[..=i]);
            out.push(Claim {
                line: n,
                text: cells.join(" | "),
                in_missing_section: missing_section,
            });
        } else if !t.is_empty() {
            para.push((n, t));
        }
    }
    flush(&mut para, &mut out, missing_section);
    out
}

fn says_missing(text: &str) -> bool {
    let lower = text.to_lowercase();
    MISSING.iter().any(|m| lower.contains(m))
}

/// What a claim that says something is missing names among the shipped `flags` and
/// `features` (name, words); empty when it names none.
fn shipped_named_missing(
    claim: &Claim,
    flags: &BTreeSet<String>,
    features: &[(&str, &[&str])],
) -> Vec<String> {
    if !(claim.in_missing_section || says_missing(&claim.text)) {
        return Vec::new();
    }
    let lower = claim.text.to_lowercase();
    let mut named: Vec<String> = flag_tokens(&claim.text)
        .into_iter()
        .filter(|f| flags.contains(f))
        .map(|f| format!("`{f}`"))
        .collect();
    for (name, words) in features {
        if words.iter().any(|w| lower.contains(w)) {
            named.push((*name).to_string());
        }
    }
    named
}

/// Every long flag of the binary, and the features of [`FEATURES`] with the binary's proof
/// checked (a feature whose proof is gone fails: the list must be kept true too).
fn shipped() -> (
    BTreeSet<String>,
    Vec<(&'static str, &'static [&'static str])>,
) {
    let commands = commands();
    let mut flags = BTreeSet::new();
    let mut per_command = BTreeMap::new();
    for cmd in &commands {
        let f = long_flags(cmd);
        flags.extend(f.iter().cloned());
        per_command.insert(cmd.join(" "), f);
    }
    for (name, _, proof) in FEATURES {
        let (cmd, flag) = match proof.split_once(' ') {
            Some((c, f)) => (c, Some(f)),
            None => (*proof, None),
        };
        let has = per_command
            .get(cmd)
            .is_some_and(|f| flag.is_none_or(|flag| f.contains(flag)));
        assert!(has, "{name}: `loadbench {proof}` is gone; update FEATURES");
    }
    let features = FEATURES.iter().map(|(n, w, _)| (*n, *w)).collect();
    (flags, features)
}

#[test]
fn no_doc_says_a_shipped_feature_is_missing() {
    let (flags, features) = shipped();
    let mut wrong = Vec::new();
    let mut limits_seen = BTreeSet::new();
    for (file, doc) in docs() {
        for claim in claims(&doc) {
            let named = shipped_named_missing(&claim, &flags, &features);
            if named.is_empty() {
                continue;
            }
            let known = KNOWN_LIMITS
                .iter()
                .position(|(f, words, _)| *f == file && claim.text.contains(words));
            match known {
                Some(i) => {
                    limits_seen.insert(i);
                }
                None => wrong.push(format!(
                    "{file}:{}: says {} is missing: {:?}",
                    claim.line,
                    named.join(", "),
                    claim.text
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs say shipped features are missing (fix the doc; a true limitation of a shipped \
         feature goes into KNOWN_LIMITS with the command that proves it):\n{}",
        wrong.join("\n")
    );
    for (i, (file, words, args)) in KNOWN_LIMITS.iter().enumerate() {
        assert!(
            limits_seen.contains(&i),
            "KNOWN_LIMITS: {file} no longer says {words:?}; remove the entry"
        );
        let url = format!("http://127.0.0.1:{}/", free_port());
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "URL" { url.as_str() } else { *a })
            .collect();
        let out = bin().args(&args).output().unwrap();
        let (_, stderr) = text(&out);
        assert!(
            out.status.code() == Some(2) && stderr.contains("not supported"),
            "KNOWN_LIMITS: {file} says {words:?} is not supported, but `loadbench {}` \
             is not refused: it is shipped now, fix the doc and remove the entry ({stderr})",
            args.join(" ")
        );
    }
}

/// The check itself: it flags what issue 35 found on 27046c3, and lets true sentences pass.
#[test]
fn the_missing_feature_check_catches_the_sentences_issue_35_found() {
    let (flags, features) = shipped();
    let flagged = |doc: &str| -> Vec<Vec<String>> {
        claims(doc)
            .iter()
            .map(|c| shipped_named_missing(c, &flags, &features))
            .filter(|n| !n.is_empty())
            .collect()
    };
    for (doc, names) in [
        (
            "The planned commands do not exist yet.\nHTTPS and HTTP/2 are not supported yet either.\n",
            &["HTTP/2", "HTTPS"][..],
        ),
        (
            "A Unix socket ([transport.md](transport.md)). There is no HTTP/2 or HTTP/3. Any\n\
             peer flag for HTTP/2 (oha's `--http2`) has **no equivalent yet**.\n",
            &["HTTP/2", "`--http2`"],
        ),
        (
            "## Not yet\n\n`bench` keeps its progress lines for now (the matrix view is\nstill to \
             come), and the live web page (`--live-web`) is not built yet.\n",
            &["the bench dashboard", "the live web page", "`--live-web`"],
        ),
        (
            "| oha | `--http2` | **no equivalent yet** | |\n",
            &["`--http2`"],
        ),
        ("The open model (`--rate`) is planned.\n", &["`--rate`", "the open model"]),
    ] {
        let found: Vec<String> = flagged(doc).concat();
        for name in names {
            assert!(
                found.iter().any(|f| f == name),
                "{name} not flagged in {doc:?}: {found:?}"
            );
        }
    }
    for fine in [
        "HTTP/2 is `--http2`. There is no HTTP/3.\n",
        "| wrk | `-s script.lua` | **no equivalent yet** | no scripting: `--body` |\n",
        "## Not yet\n\nServer push.\n\n## Next\n\n`--http2` works.\n",
        "```\n$ loadbench run --http2 # not supported yet\n```\n",
    ] {
        assert!(flagged(fine).is_empty(), "{fine:?}: {:?}", flagged(fine));
    }
}
