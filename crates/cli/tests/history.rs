//! The history (docs/history.md) end to end, against the reference backend: 30 short runs
//! appended with `--history` (8 of them by writer processes started at once, 2 inside a git
//! repository), `loadbench history` listing all 30 (and filters), the trend table, and the
//! trend page drawn in headless Chromium with a dot per run; `compare --against-history`
//! flagging each of 5 runs against a backend slowed by 20 ms and none of 5 against the
//! unchanged one (p50 with a large effect: latency, never req/s of a tiny run, so a loaded
//! 2-core machine gives no false alarm); and bad input (a non-SQLite file, a newer schema, a
//! directory, a malformed or orphan `--label`): one line, exit 2, no request sent, the
//! database byte for byte and mtime as it was. A scenario's `history = …` files each bench
//! with its cells; a find-max search is filed with the rate that held; `history show` gives a
//! kept result back.

use crate::live_web::{chromium, dump_dom};
use crate::support::{bin, have, loading, tempdir, text};
use loadbench_upstream::{parse_delay, Server, ServerConfig};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The reference backend on `listen` (a free port when `None`), each answer `delay` late.
fn backend(listen: Option<SocketAddr>, delay: Option<&str>) -> Server {
    let mut cfg = ServerConfig {
        delay: delay.map(|d| parse_delay(d).unwrap()),
        ..ServerConfig::ephemeral()
    };
    if let Some(addr) = listen {
        cfg.listen = addr;
    }
    Server::start(cfg).expect("reference backend starts")
}

/// A short closed run, `loadbench run URL -c 2 -n 100 -q -o json ARGS`, in `dir`.
fn short_run(dir: &Path, url: &str, args: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.current_dir(dir)
        .args(["run", url, "-c", "2", "-n", "100", "-q", "-o", "json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {:?}", text(out));
}

/// `loadbench ARGS` run in `dir`.
fn loadbench(dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("loadbench runs")
}

/// The data rows of `history`'s list: lines between the header and the `N runs in …` line.
fn listed(out: &Output) -> Vec<String> {
    let (stdout, _) = text(out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() >= 2, "{stdout}");
    assert!(lines[0].starts_with("id  "), "{stdout}");
    lines[1..lines.len() - 1]
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A git repository with one commit on branch `trunk`, or `None` without git.
fn git_repo(dir: &Path) -> Option<String> {
    if !have("git") {
        return None;
    }
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {:?}", text(&out));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    git(&["init", "-q"]);
    git(&["checkout", "-q", "-b", "trunk"]);
    git(&["commit", "-q", "--allow-empty", "-m", "first"]);
    Some(git(&["rev-parse", "HEAD"]))
}

#[test]
fn thirty_runs_are_listed_and_charted() {
    let _machine = loading();
    let server = backend(None, None);
    let url = format!("http://{}/", server.local_addr());
    let dir = tempdir("history-thirty");
    let db = dir.join("h.sqlite");
    let commit = append_thirty(&dir, &url, &db);
    check_list(&dir, &url, &db, commit.as_deref());
    check_show(&dir, &url, &db);
    check_database(&db);
    check_trend(&dir, &url, &db);
}

/// 30 runs into `db`: 2 in a git repository (its commit returned, without git `None`), 20
/// one after another, 8 at once.
fn append_thirty(dir: &Path, url: &str, db: &Path) -> Option<String> {
    let db_arg = format!("--history={}", db.display());
    // 2 runs inside a git repository: filed under its commit and branch.
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let commit = git_repo(&repo);
    for _ in 0..2 {
        let out = short_run(&repo, url, &[&db_arg, "--label", "batch=git"])
            .output()
            .unwrap();
        ok(&out, "run in the repository");
    }
    // 20 one after another, outside any repository.
    for i in 0..20 {
        let out = short_run(dir, url, &[&db_arg, "--label", "batch=serial"])
            .output()
            .unwrap();
        ok(&out, &format!("serial run {i}"));
    }
    // 8 writer processes at once.
    let children: Vec<_> = (0..8)
        .map(|_| {
            short_run(dir, url, &[&db_arg, "--label", "batch=parallel"])
                .spawn()
                .expect("loadbench starts")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        ok(&out, &format!("parallel writer {i}"));
    }
    commit
}

/// `history` lists all 30, in order, and its filters pick the right ones.
fn check_list(dir: &Path, url: &str, db: &Path, commit: Option<&str>) {
    let dbs = db.display().to_string();
    let all = listed(&loadbench(dir, &["history", "--db", &dbs]));
    assert_eq!(all.len(), 30, "{all:#?}");
    let ids: Vec<u32> = all
        .iter()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        ids,
        (1..=30).collect::<Vec<_>>(),
        "every row kept, in order"
    );
    assert!(all
        .iter()
        .all(|l| l.contains(url) && l.contains("closed c=2")));
    let parallel = listed(&loadbench(
        dir,
        &["history", "--db", &dbs, "--label", "batch=parallel"],
    ));
    assert_eq!(parallel.len(), 8);
    let last = listed(&loadbench(dir, &["history", "--db", &dbs, "--last", "5"]));
    assert_eq!(
        last.first().map(|l| l.split_whitespace().next()),
        Some(Some("26"))
    );
    assert_eq!(last.len(), 5);
    if let Some(commit) = commit {
        let filter = format!("commit={commit}");
        let in_git = listed(&loadbench(
            dir,
            &["history", "--db", &dbs, "--label", &filter],
        ));
        assert_eq!(in_git.len(), 2, "{in_git:#?}");
        assert!(
            in_git.iter().all(|l| l.contains("branch=trunk")),
            "{in_git:#?}"
        );
        let none = listed(&loadbench(
            dir,
            &[
                "history",
                "--db",
                &dbs,
                "--label",
                "branch=trunk",
                "--label",
                "batch=serial",
            ],
        ));
        assert!(
            none.is_empty(),
            "runs outside the repository have no branch: {none:#?}"
        );
    }
}

/// A kept run's whole result, as `report` and `compare` read it; an unknown id is refused.
fn check_show(dir: &Path, url: &str, db: &Path) {
    let dbs = db.display().to_string();
    let shown = loadbench(dir, &["history", "show", "26", "--db", &dbs]);
    ok(&shown, "history show");
    let r = loadbench_model::RunResult::from_json(&text(&shown).0).expect("a run result");
    assert_eq!(r.config.url, url);
    assert_eq!(r.stats.requests + r.stats.errors.total(), 100);
    let missing = loadbench(dir, &["history", "show", "31", "--db", &dbs]);
    assert_eq!(missing.status.code(), Some(2), "{:?}", text(&missing));
}

/// The database: 30 rows, WAL, intact.
fn check_database(db: &Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 30);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

/// The trend table: one series of 30 runs; the trend page, as headless Chromium has it: a dot
/// per run in each chart (and one in the legend's swatch).
fn check_trend(dir: &Path, url: &str, db: &Path) {
    let dbs = db.display().to_string();
    let trend = loadbench(dir, &["history", "trend", "--db", &dbs]);
    ok(&trend, "history trend");
    let (table, _) = text(&trend);
    assert!(
        table.starts_with(&format!("{url} × closed c=2 (30 runs)")),
        "{table}"
    );
    let page = dir.join("trend.html");
    let pages = page.display().to_string();
    ok(
        &loadbench(dir, &["history", "html", "--db", &dbs, "-o", &pages]),
        "history html",
    );
    let Some(browser) = chromium() else {
        return;
    };
    let dom = dump_dom(&browser, &format!("file://{pages}"));
    for chart in ["rps", "p50", "p99", "errors"] {
        let wide = wide_svg(&dom, &format!("trend-1-{chart}"));
        assert_eq!(wide.matches("<circle").count(), 31, "{chart}");
    }
    let lastfive = dir.join("last5.html");
    let lastfive = lastfive.display().to_string();
    ok(
        &loadbench(
            dir,
            &[
                "history", "html", "--db", &dbs, "--last", "5", "-o", &lastfive,
            ],
        ),
        "history html --last 5",
    );
    let dom = dump_dom(&browser, &format!("file://{lastfive}"));
    assert_eq!(wide_svg(&dom, "trend-1-p50").matches("<circle").count(), 6);
}

/// The wide drawing of chart `name` in a page's DOM.
fn wide_svg<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = dom
        .find(&format!("id=\"chart-{name}\""))
        .unwrap_or_else(|| panic!("chart {name} in the page: {dom:.3000}"));
    let rest = &dom[start..];
    let end = rest
        .find("class=\"compact\"")
        .expect("a compact drawing follows");
    let wide = &rest[..end];
    assert!(wide.contains("<svg"), "{wide:.2000}");
    wide
}

/// `compare --against-history` of a fresh run saved to `save`: its exit code and output.
fn judged(dir: &Path, url: &str, db: &str, save: &Path) -> (Option<i32>, String, String) {
    let save_s = save.display().to_string();
    ok(
        &short_run(dir, url, &["--save", &save_s]).output().unwrap(),
        "run",
    );
    let out = against_main(dir, db, save, &[]);
    let (stdout, stderr) = text(&out);
    (out.status.code(), stdout, stderr)
}

/// `compare --against-history branch=main --last 10 --metrics p50 --threshold 500%
/// --ignore-host ARGS SAVED`.
fn against_main(dir: &Path, db: &str, saved: &Path, args: &[&str]) -> Output {
    let saved = saved.display().to_string();
    let mut all = vec![
        "compare",
        "--against-history",
        "branch=main",
        "--last",
        "10",
        "--db",
        db,
        "--metrics",
        "p50",
        "--threshold",
        "500%",
        "--ignore-host",
    ];
    all.extend(args);
    all.push(&saved);
    loadbench(dir, &all)
}

#[test]
fn a_slowed_backend_is_flagged_against_history_and_an_unchanged_one_is_not() {
    let _machine = loading();
    let server = backend(None, None);
    let addr = server.local_addr();
    let url = format!("http://{addr}/");
    let dir = tempdir("history-compare");
    let db = dir.join("h.sqlite").display().to_string();
    let db_arg = format!("--history={db}");
    for i in 0..10 {
        let out = short_run(&dir, &url, &[&db_arg, "--label", "branch=main"])
            .output()
            .unwrap();
        ok(&out, &format!("history run {i}"));
    }
    for i in 0..5 {
        let (code, stdout, stderr) = judged(&dir, &url, &db, &dir.join(format!("same-{i}.json")));
        assert_eq!(
            code,
            Some(0),
            "unchanged run {i} flagged:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains("within spread"), "{stdout}");
    }
    // Too few matching runs: said, no verdict.
    let out = loadbench(
        &dir,
        &[
            "compare",
            "--against-history",
            "branch=other",
            "--db",
            &db,
            "--ignore-host",
            &dir.join("same-0.json").display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{:?}", text(&out));
    assert!(
        text(&out).1.contains("too few runs in the history"),
        "{:?}",
        text(&out)
    );
    // The same address, now 20 ms slower per request.
    server.shutdown();
    let slow = restart(addr, "20ms");
    for i in 0..5 {
        let (code, stdout, stderr) = judged(&dir, &url, &db, &dir.join(format!("slow-{i}.json")));
        assert_eq!(
            code,
            Some(1),
            "slowed run {i} not flagged:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains("regression"), "{stdout}");
    }
    // The same verdict as Markdown, for a pull request.
    let md = against_main(&dir, &db, &dir.join("slow-0.json"), &["-f", "md"]);
    assert_eq!(md.status.code(), Some(1), "{:?}", text(&md));
    let (table, _) = text(&md);
    assert!(table.contains("| target | load | metric |"), "{table}");
    assert!(table.contains("| regression |"), "{table}");
    drop(slow);
}

/// The backend again on `addr` (just freed), answering `delay` late.
fn restart(addr: SocketAddr, delay: &str) -> Server {
    let start = Instant::now();
    loop {
        let cfg = ServerConfig {
            listen: addr,
            delay: Some(parse_delay(delay).unwrap()),
            ..ServerConfig::ephemeral()
        };
        match Server::start(cfg) {
            Ok(s) => return s,
            Err(e) if start.elapsed() < Duration::from_secs(10) => {
                eprintln!("{addr} not free yet: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("the backend cannot listen on {addr} again: {e}"),
        }
    }
}

/// A file's bytes and mtime, to show it untouched.
fn snapshot(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().modified().unwrap(),
    )
}

#[test]
fn bad_history_input_is_one_line_and_exit_2_before_any_load() {
    let server = backend(None, None);
    let url = format!("http://{}/", server.local_addr());
    let dir = tempdir("history-bad");
    let notdb = dir.join("notes.sqlite");
    std::fs::write(&notdb, "these are notes, not a database\n").unwrap();
    // A database from a newer loadbench: written by this one, then its version raised.
    let newer = dir.join("newer.sqlite");
    let newer_arg = format!("--history={}", newer.display());
    ok(
        &short_run(&dir, &url, &[&newer_arg]).output().unwrap(),
        "first run",
    );
    let conn = rusqlite::Connection::open(&newer).unwrap();
    conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA user_version = 99")
        .unwrap();
    drop(conn);
    let good = dir.join("good.sqlite");
    let good_json = dir.join("good.json").display().to_string();
    ok(
        &short_run(
            &dir,
            &url,
            &[
                &format!("--history={}", good.display()),
                "--save",
                &good_json,
            ],
        )
        .output()
        .unwrap(),
        "good run",
    );
    let files = BadFiles {
        notdb,
        newer,
        good,
        good_json,
    };
    bad_runs(&server, &url, &dir, &files);
    bad_reads(&dir, &files);
}

/// The files of the bad-input test.
struct BadFiles {
    /// Text, not SQLite.
    notdb: PathBuf,
    /// Schema version 99.
    newer: PathBuf,
    /// A good history.
    good: PathBuf,
    /// A result saved by a run.
    good_json: String,
}

/// `run` with a bad history or label: one line, exit 2, no request, no result, file untouched.
fn bad_runs(server: &Server, url: &str, dir: &Path, f: &BadFiles) {
    let (notdb, newer, good) = (&f.notdb, &f.newer, &f.good);
    let newer_arg = format!("--history={}", newer.display());
    let save = dir.join("saved.json");
    let save_s = save.display().to_string();
    let cases: Vec<(Vec<String>, Option<&PathBuf>, &str)> = vec![
        (
            vec![format!("--history={}", notdb.display())],
            Some(notdb),
            "is not a SQLite database",
        ),
        (
            vec![newer_arg.clone()],
            Some(newer),
            "has schema version 99, newer than",
        ),
        (
            vec![format!("--history={}", dir.display())],
            None,
            "it is a directory",
        ),
        (
            vec![
                format!("--history={}", good.display()),
                "--label".into(),
                "no-equals".into(),
            ],
            Some(good),
            "--label 'no-equals' is not key=value",
        ),
        (vec!["--label".into(), "a=b".into()], None, "add --history"),
    ];
    for (args, file, says) in cases {
        let before = file.map(|f| snapshot(f));
        let sent = server.stats().total;
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--save", &save_s]);
        let out = short_run(dir, url, &all).output().unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            server.stats().total,
            sent,
            "{args:?}: no request may be sent"
        );
        assert!(!save.exists(), "{args:?}: no result");
        if let (Some(f), Some(b)) = (file, before) {
            assert!(snapshot(f) == b, "{args:?}: {} changed", f.display());
        }
    }
}

/// Reading commands refuse the same files the same way, and never create a database.
fn bad_reads(dir: &Path, f: &BadFiles) {
    let good_json = &f.good_json;
    for db in [&f.notdb, &f.newer] {
        let before = snapshot(db);
        let dbs = db.display().to_string();
        for args in [
            vec!["history", "--db", &dbs],
            vec!["history", "trend", "--db", &dbs],
            vec![
                "compare",
                "--against-history",
                "branch=main",
                "--db",
                &dbs,
                good_json,
            ],
        ] {
            let out = loadbench(dir, &args);
            let (_, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
        assert!(snapshot(db) == before, "{} changed", db.display());
    }
    let out = loadbench(dir, &["history", "--db", "missing.sqlite"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !dir.join("missing.sqlite").exists(),
        "reading never creates a database"
    );
}

#[test]
fn a_scenario_with_history_files_each_bench_and_its_cells() {
    let _machine = loading();
    let dir = tempdir("history-bench");
    let file = dir.join("hist.toml");
    std::fs::write(
        &file,
        "name = \"hist\"\nrounds = 2\nhistory = \"h.sqlite\"\n\
         [[target]]\nname = \"backend\"\nkind = \"upstream\"\n\
         [[load]]\nname = \"sweep\"\nmodel = \"closed\"\ntargets = [\"backend\"]\nconnections = [1, 2]\n",
    )
    .unwrap();
    let saved = three_benches(&dir, &file);
    let db = dir.join("h.sqlite").display().to_string();
    let benches = listed(&loadbench(
        &dir,
        &["history", "--db", &db, "--kind", "bench"],
    ));
    assert_eq!(benches.len(), 3, "{benches:#?}");
    assert!(
        benches
            .iter()
            .all(|l| l.contains(" bench ") && l.contains(" hist ")),
        "{benches:#?}"
    );
    let conn = rusqlite::Connection::open(dir.join("h.sqlite")).unwrap();
    let cells: i64 = conn
        .query_row("SELECT count(*) FROM cells", [], |r| r.get(0))
        .unwrap();
    assert_eq!(cells, 6, "2 levels × 3 benches");
    drop(conn);
    let trend = loadbench(
        &dir,
        &["history", "trend", "--db", &db, "--target", "backend"],
    );
    ok(&trend, "history trend");
    let (table, _) = text(&trend);
    for series in [
        "backend × sweep c=1 (3 runs)",
        "backend × sweep c=2 (3 runs)",
    ] {
        assert!(table.contains(series), "{table}");
    }
    // The last bench against the history: itself left out, 2 runs remain, too few for a verdict.
    let last = saved[2].display().to_string();
    let out = loadbench(
        &dir,
        &[
            "compare",
            "--against-history",
            "",
            "--db",
            &db,
            "--ignore-host",
            &last,
        ],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("backend × sweep c=1: 2 matching"),
        "{stderr}"
    );
}

/// `loadbench bench FILE` three times (300 ms steps, no warm-up or cooldown); their result.json.
fn three_benches(dir: &Path, file: &Path) -> Vec<PathBuf> {
    let mut saved = Vec::new();
    for i in 0..3 {
        let results = dir.join(format!("results-{i}"));
        let out = bin()
            .current_dir(dir)
            .arg("bench")
            .arg(file)
            .arg("--results")
            .arg(&results)
            .args([
                "--duration",
                "300ms",
                "--warmup",
                "0s",
                "--cooldown",
                "0s",
                "-q",
                "-o",
                "json",
            ])
            .output()
            .unwrap();
        ok(&out, &format!("bench {i}"));
        let folder = std::fs::read_dir(&results)
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        saved.push(folder.join("result.json"));
    }
    saved
}

#[test]
fn a_find_max_search_is_filed_with_the_rate_that_held() {
    let _machine = loading();
    let server = backend(None, None);
    let url = format!("http://{}/", server.local_addr());
    let dir = tempdir("history-find-max");
    let db = dir.join("h.sqlite").display().to_string();
    let history = format!("--history={db}");
    let save = dir.join("fm.json");
    let out = bin()
        .current_dir(&dir)
        .args([
            "find-max",
            &url,
            "--slo",
            "p99<2s",
            "--start-rate",
            "20",
            "--max-rate",
            "40",
        ])
        .args([
            "--step-duration",
            "500ms",
            "--warmup",
            "0s",
            "-q",
            "-o",
            "json",
        ])
        .args([history.as_str(), "--label", "suite=fm", "--save"])
        .arg(&save)
        .output()
        .unwrap();
    // A busy machine may stop the search at 20/s (the generator fell behind): the row must
    // hold whatever rate held.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{:?}", text(&out));
    let saved = std::fs::read_to_string(&save).unwrap();
    let r = loadbench_model::FindMaxResult::from_json(&saved).unwrap();
    let held = r
        .max_rate
        .map_or_else(|| " - ".to_string(), |m| format!(" {m:.2} "));
    let rows = listed(&loadbench(
        &dir,
        &["history", "--db", &db, "--kind", "find-max"],
    ));
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let row = &rows[0];
    assert!(
        row.contains(" find-max ") && row.contains("find-max p99<2s"),
        "{row}"
    );
    assert!(
        row.contains(&held),
        "the highest rate that held, {held}: {row}"
    );
    assert!(row.contains("suite=fm"), "{row}");
}
