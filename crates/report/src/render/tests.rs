//! Every result kind × every format through [`render`]: each renders and shows the figure that
//! matters (a run's req/s, a search's maximum rate, a bench's median req/s), or answers with the
//! one-line [`Unsupported`] error naming the formats that work.

use super::*;
use crate::fixtures;
use crate::units;
use std::path::Path;

/// The figure a report in a format must show.
type Figure = fn(Format) -> &'static str;

/// The in-crate fixtures, each with the figure every format must show.
fn kinds() -> Vec<(SavedResult, Figure)> {
    vec![
        (fixtures::busy().into(), |_| "3512"),
        (fixtures::find_max().into(), |f| match f {
            Format::Csv => "\n3,bisect,150.00,",
            Format::Json => "\"max_rate\": 150.0",
            _ => "maximum sustainable rate: 150 req/s",
        }),
        (fixtures::bench().into(), |_| "40120"),
    ]
}

/// Checks `rendered` or the error for one kind × format; `figure` must appear in the report.
fn check(result: &SavedResult, format: Format, figure: &str) {
    let what = format!("{} as {format}", result.kind().name());
    match render(result, format, &RenderOptions::default()) {
        Ok(r) => {
            assert!(
                r.text.contains(figure),
                "{what}: no {figure:?} in\n{}",
                r.text
            );
            check_shape(result, format, &r, &what);
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains('\n'), "{what}: {message}");
            assert!(message.starts_with(&format!("{format} is not available")));
            for works in formats_for(result.kind()) {
                assert!(message.contains(works.name()), "{what}: {message}");
            }
        }
    }
}

/// What every report of a format looks like, whatever the kind.
fn check_shape(result: &SavedResult, format: Format, r: &Rendered, what: &str) {
    let files = r.chart_files().unwrap();
    match format {
        Format::Html => {
            assert!(r.text.starts_with("<!DOCTYPE html>"), "{what}");
            assert!(files.iter().any(|f| f.name.ends_with(".svg")), "{what}");
            assert!(files.iter().all(|f| !f.name.contains('/')), "{what}");
        }
        Format::Json => {
            assert_eq!(&SavedResult::from_json(&r.text).unwrap(), result, "{what}");
            assert!(files.is_empty(), "{what}");
        }
        Format::Csv => {
            let widths: Vec<usize> = r.text.lines().map(|l| l.split(',').count()).collect();
            assert!(widths.len() >= 2, "{what}: a header and rows");
            assert!(widths.iter().all(|w| *w == widths[0]), "{what}");
        }
        Format::Text | Format::Markdown => assert!(files.is_empty(), "{what}"),
        Format::Junit => {
            assert!(r.text.starts_with("<?xml version=\"1.0\""), "{what}");
            assert!(r.text.contains("<testcase "), "{what}");
            assert!(files.is_empty(), "{what}");
        }
    }
}

#[test]
fn every_kind_renders_in_every_format_or_says_which_work() {
    for (result, figure) in kinds() {
        for format in Format::ALL {
            check(&result, format, figure(format));
        }
    }
}

/// The results the CLI tests use, saved by the real binary: a run, a search, a bench.
fn saved(name: &str) -> SavedResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/fixtures")
        .join(name);
    SavedResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_saved_fixture_renders_in_every_format() {
    let run = saved("run-open.json");
    let requests = run.as_run().unwrap().stats.requests.to_string();
    let search = saved("find-max.json");
    let max = search.as_find_max().unwrap().max_rate.unwrap();
    let headline = format!("maximum sustainable rate: {} req/s", units::rate_short(max));
    let bench = saved("bench-base.json");
    let rps = bench.as_bench().unwrap().cells[0].requests_per_sec.unwrap();
    let median = format!("{:.0}", rps.median);
    for format in Format::ALL {
        check(&run, format, &requests);
        let figure = match format {
            Format::Csv => format!(",{max:.2},"),
            Format::Json => format!("\"max_rate\": {max:?}"),
            _ => headline.clone(),
        };
        check(&search, format, &figure);
        let figure = match format {
            Format::Json => format!("\"median\": {:?}", rps.median),
            _ => median.clone(),
        };
        check(&bench, format, &figure);
    }
}

/// `SavedResult` adds nothing to the JSON: each kind's report is its own renderer's, byte for
/// byte, and what `to_json` writes.
#[test]
fn json_of_any_kind_is_the_kinds_own() {
    let opts = RenderOptions::default();
    for (result, _) in kinds() {
        let text = render(&result, Format::Json, &opts).unwrap().text;
        assert_eq!(text, result.to_json(), "{}", result.kind().name());
    }
    let search = fixtures::find_max();
    let text = render(&search.clone().into(), Format::Json, &opts)
        .unwrap()
        .text;
    assert_eq!(text, crate::find_max_json(&search));
}

#[test]
fn unsupported_is_one_line_naming_what_works() {
    let e = Unsupported {
        kind: ResultKind::FindMax,
        format: Format::Csv,
    };
    assert_eq!(
        e.to_string(),
        "csv is not available for find-max results: use text, json, md, html or junit"
    );
}

#[test]
fn the_page_and_its_chart_files_hold_the_same_charts() {
    let r = render(
        &fixtures::find_max().into(),
        Format::Html,
        &RenderOptions::default(),
    )
    .unwrap();
    let files = r.chart_files().unwrap();
    for svg in files.iter().filter(|f| f.name.ends_with(".svg")) {
        let stem = svg.name.trim_end_matches(".svg");
        assert!(r.text.contains(&format!("data-chart=\"{stem}\"")), "{stem}");
    }
    for png in files.iter().filter(|f| f.name.ends_with(".png")) {
        assert_eq!(&png.bytes[1..4], b"PNG", "{}", png.name);
    }
}

#[test]
fn formats_parse_by_name() {
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>(), Ok(f));
        for alias in f.aliases() {
            assert_eq!(alias.parse::<Format>(), Ok(f), "{alias}");
        }
    }
    assert_eq!(" JSON ".parse::<Format>(), Ok(Format::Json));
    assert_eq!("Markdown".parse::<Format>(), Ok(Format::Markdown));
}

#[test]
fn unknown_format_names_the_choices() {
    let err = "xml".parse::<Format>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown format 'xml': choose one of text, json, csv, md, html, junit"
    );
}

#[test]
fn every_format_renders_the_empty_result() {
    let empty = fixtures::empty();
    for f in Format::ALL {
        assert!(!render_to_string(f, &empty, &RenderOptions::default()).is_empty());
    }
}

/// Issue 35 point 8: a run whose every response arrived in one read (resp read 0, recorded as
/// the histogram's 1 ns floor) shows `< 1µs` in the phase tables of text, Markdown and HTML,
/// never `1ns`.
#[test]
fn a_phase_below_a_microsecond_reads_less_than_one_in_every_format() {
    let mut r = fixtures::busy();
    let mut read = loadbench_model::Latency::default();
    (0..r.stats.phases.count()).for_each(|_| read.hist.record_ns(0));
    r.stats.phases.read = read;
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render(&r.clone().into(), format, &RenderOptions::default())
            .unwrap()
            .text;
        let row = out
            .lines()
            .find(|l| l.contains("resp read"))
            .unwrap_or_else(|| panic!("{format}: no resp read row in\n{out}"));
        // The HTML row spans lines: take it to its end.
        let row = if format == Format::Html {
            let at = out.find("resp read").unwrap();
            &out[at..at + out[at..].find("</tr>").unwrap()]
        } else {
            row
        };
        assert!(!row.contains("1ns"), "{format}: {row}");
        assert!(
            row.contains("&lt; 1µs") || row.contains("< 1µs"),
            "{format}: {row}"
        );
    }
}

/// Issue 35 point 8: counts agree with their nouns where a 1 is likely: one HTTP/2
/// connection with one stream, one request in flight (the HTML's censored note).
#[test]
fn a_count_of_one_takes_the_singular() {
    let mut r = fixtures::busy();
    r.config.connections = 1;
    r.config.http2_streams = Some(1);
    let text = render(&r.clone().into(), Format::Text, &RenderOptions::default())
        .unwrap()
        .text;
    assert!(
        text.contains("HTTP/2 (h2c), 1 connection × 1 stream"),
        "{text}"
    );
    assert!(!text.contains("1 streams"), "{text}");

    r.stats.latency_censored = r.stats.latency.clone();
    r.stats.latency_censored.hist.record_ns(900_000_000);
    r.stats.abandoned = 1;
    let html = render(&r.into(), Format::Html, &RenderOptions::default())
        .unwrap()
        .text;
    assert!(
        html.contains("including the 1 request still in flight"),
        "{html}"
    );
    assert!(
        html.contains("1 request was still in flight when the run ended"),
        "{html}"
    );
}

#[test]
fn lost_pushes_are_one_line_in_the_text_and_markdown_of_a_search_and_a_bench() {
    let pushed = |lost| loadbench_model::RemoteWriteCounts {
        url: "http://127.0.0.1:9090/api/v1/write".into(),
        pushes: 7,
        sent: 7 - lost,
        lost,
    };
    let line = "remote write: 2 of 7 pushes to http://127.0.0.1:9090/api/v1/write were lost";
    let mut search = fixtures::find_max();
    let mut bench = fixtures::bench();
    for (lost, times) in [(0, 0), (2, 1)] {
        search.remote_write = Some(pushed(lost));
        bench.remote_write = Some(pushed(lost));
        let kinds: [SavedResult; 2] = [search.clone().into(), bench.clone().into()];
        for result in &kinds {
            for format in [Format::Text, Format::Markdown] {
                let text = render(result, format, &RenderOptions::default())
                    .unwrap()
                    .text;
                let what = format!("{} as {format}", result.kind().name());
                assert_eq!(text.matches(line).count(), times, "{what}:\n{text}");
            }
        }
    }
}

/// The bench fixture with a generator delay in its first cell's three rounds: p50 of 20, 30
/// and 40 µs (median 30), p99 of 200, 300 and 400 µs (median 300).
fn bench_with_generator_delay() -> loadbench_model::BenchResult {
    let mut b = fixtures::bench();
    let first = (
        b.rounds[0].target.clone(),
        b.rounds[0].load,
        b.rounds[0].level,
    );
    let mut k = 0u64;
    for round in b.rounds.iter_mut() {
        let ours = (round.target.clone(), round.load, round.level) == first;
        let Some(run) = round.result.as_mut().filter(|_| ours) else {
            continue;
        };
        k += 1;
        let mut own = loadbench_model::Latency::default();
        own.hist.record_ns_n(k * 10_000 + 10_000, 98);
        own.hist.record_ns_n(k * 100_000 + 100_000, 2);
        run.stats.generator_delay = own;
    }
    assert_eq!(k, 3, "the fixture's first cell has three rounds");
    b.recompute();
    b
}

/// Issue 36: a bench of an open load shows the generator's own delay, the median over the
/// rounds of each round's p50 and p99, in every report.
#[test]
fn a_bench_shows_the_generator_s_delay_median_of_the_rounds_in_every_format() {
    let b = bench_with_generator_delay();
    let first = &b.rounds[0];
    let cell = b.cells.iter().find(|c| c.target == first.target).unwrap();
    let medians: Vec<f64> = cell
        .generator_delay_us
        .iter()
        .map(|c| c.stats.median)
        .collect();
    assert_eq!(medians.len(), 2);
    assert!((medians[0] - 30.0).abs() < 0.1, "{medians:?}");
    assert!((medians[1] - 300.0).abs() < 1.0, "{medians:?}");
    let want = format!(
        "{} at {}: p50 {}, p99 {}",
        first.target,
        b.loads[first.load as usize].level_label(first.level as usize),
        units::duration_us(medians[0]),
        units::duration_us(medians[1])
    );
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render_bench(format, &b);
        let title = match format {
            Format::Html => "generator&#39;s own delay in sending",
            _ => "generator's own delay in sending",
        };
        assert!(out.contains(title), "{format}: {out}");
        assert!(out.contains(&want), "{format}: no {want:?} in\n{out}");
    }
    // Only the first cell has one: one line, not one per cell.
    let text = render_bench(Format::Text, &b);
    assert_eq!(text.matches(": p50 ").count(), 1, "{text}");
}

/// The bench CSV: each round's own p50 and p99 of the generator's delay, empty for the others.
#[test]
fn a_bench_csv_has_each_round_s_generator_delay() {
    let b = bench_with_generator_delay();
    let csv = render_bench(Format::Csv, &b);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (p50, p99) = (col("generator_delay_p50_us"), col("generator_delay_p99_us"));
    let mut seen = Vec::new();
    for line in csv.lines().skip(1).take(b.rounds.len()) {
        let f: Vec<&str> = line.split(',').collect();
        if f[p50].is_empty() {
            assert!(f[p99].is_empty(), "{line}");
        } else {
            seen.push((
                f[p50].parse::<f64>().unwrap(),
                f[p99].parse::<f64>().unwrap(),
            ));
        }
    }
    assert_eq!(seen.len(), 3, "{csv}");
    for (i, (a, z)) in seen.iter().enumerate() {
        let k = i as f64 + 1.0;
        assert!((a - (k * 10.0 + 10.0)).abs() < 0.1, "{seen:?}");
        assert!((z - (k * 100.0 + 100.0)).abs() < 1.0, "{seen:?}");
    }
}

/// Issue 41: a WebSocket run's upgrades, pings answered and close frames by code are in
/// every run format with the same numbers as the text report's `WebSocket` line.
#[test]
fn websocket_counts_and_close_codes_are_in_every_run_format() {
    let r: SavedResult = fixtures::websocket().into();
    let out = |format| render(&r, format, &RenderOptions::default()).unwrap().text;
    let text = out(Format::Text);
    let line = text.lines().find(|l| l.contains("WebSocket")).unwrap();
    assert!(
        line.ends_with("4 upgraded, 12 pings answered; close frames by code: 1000 ×3, 4000 ×2"),
        "{line}"
    );

    let md = out(Format::Markdown);
    let section = &md[md.find("### WebSocket").expect("a WebSocket section")..];
    assert!(
        section
            .contains("4 connections upgraded, 12 pings answered, 5 close frames from the server."),
        "{section}"
    );
    assert!(
        section.contains("| 1000 | normal closure | 3 | 60.00% |"),
        "{section}"
    );
    assert!(
        section.contains("| 4000 | application code | 2 | 40.00% |"),
        "{section}"
    );

    let html = out(Format::Html);
    for row in [
        "<th scope=\"row\">Connections upgraded</th><td>4</td>",
        "<th scope=\"row\">Pings answered</th><td>12</td>",
        "<th scope=\"row\">Close frames from the server</th><td>5</td>",
        "<th scope=\"row\">1000</th><td>normal closure</td><td>3</td>",
        "<th scope=\"row\">4000</th><td>application code</td><td>2</td>",
    ] {
        assert!(html.contains(row), "no {row:?} in the page");
    }

    let csv = out(Format::Csv);
    assert_eq!(
        csv_cells(&csv, ["ws_upgrades", "ws_pings", "ws_closes"]),
        ["4", "12", "5"]
    );
    assert_eq!(
        csv_table(&csv, "ws_close_code,"),
        "ws_close_code,meaning,closes\n1000,normal closure,3\n4000,application code,2\n"
    );

    let json: serde_json::Value = serde_json::from_str(&out(Format::Json)).unwrap();
    let ws = &json["stats"]["ws"];
    assert_eq!(ws["close_codes"], serde_json::json!({"1000": 3, "4000": 2}));
    assert_eq!(
        (ws["upgrades"].as_u64(), ws["pings"].as_u64()),
        (Some(4), Some(12))
    );
}

/// An HTTP run has no WebSocket figures (empty CSV cells, no section); a WebSocket run whose
/// server sent no close says 0, with no close code table.
#[test]
fn websocket_figures_only_for_websocket_runs_and_no_close_table_without_closes() {
    let http: SavedResult = fixtures::busy().into();
    for format in [Format::Text, Format::Markdown, Format::Html, Format::Csv] {
        let out = render(&http, format, &RenderOptions::default())
            .unwrap()
            .text;
        assert!(
            !out.contains("WebSocket") && !out.contains("ws_close_code"),
            "{format}"
        );
    }
    let csv = render(&http, Format::Csv, &RenderOptions::default())
        .unwrap()
        .text;
    assert!(csv.lines().nth(1).unwrap().contains(",,,,,2026-"), "{csv}");

    let mut quiet = fixtures::websocket();
    quiet.stats.ws.close_codes.clear();
    let quiet: SavedResult = quiet.into();
    let out = |format| {
        render(&quiet, format, &RenderOptions::default())
            .unwrap()
            .text
    };
    let md = out(Format::Markdown);
    assert!(
        md.contains("4 connections upgraded, 12 pings answered, 0 close frames from the server."),
        "{md}"
    );
    assert!(!md.contains("| close code |"), "{md}");
    assert!(out(Format::Text).contains("close frames by code: none"));
    assert!(out(Format::Html).contains("<h3>Close codes</h3>\n<p class=\"muted\">none</p>"));
    let csv = out(Format::Csv);
    assert!(!csv.contains("ws_close_code"), "{csv}");
    assert!(
        csv.lines().nth(1).unwrap().contains(",4,12,0,,,,,,,,2026-"),
        "{csv}"
    );
}

/// Issue 41: a gRPC run's calls by `grpc-status` are in every run format with the same
/// numbers as the text report's `gRPC status` line.
#[test]
fn grpc_statuses_are_in_every_run_format() {
    let r: SavedResult = fixtures::grpc().into();
    let out = |format| render(&r, format, &RenderOptions::default()).unwrap().text;
    let text = out(Format::Text);
    assert!(
        text.contains("OK 900, DEADLINE_EXCEEDED 30, NOT_FOUND 60, OTHER 4, no grpc-status 6"),
        "{text}"
    );

    let md = out(Format::Markdown);
    let section = &md[md.find("### gRPC status").expect("a gRPC section")..];
    for row in [
        "| 0 | OK | 900 |",
        "| 4 | DEADLINE_EXCEEDED | 30 |",
        "| 5 | NOT_FOUND | 60 |",
        "|  | OTHER | 4 |",
        "|  | no grpc-status | 6 |",
    ] {
        assert!(section.contains(row), "no {row:?} in {section}");
    }
    assert!(section.contains("| 90.00% |"), "{section}");
    // The busy fixture measured 10 s: 4500 messages are 450/s.
    let messages = "4500 messages received, 4.50 per call, 450.00/s";
    assert!(text.contains(messages), "{text}");
    assert!(section.contains(&format!("Response messages: {messages}.")));

    let html = out(Format::Html);
    for row in [
        "<tr><th scope=\"row\">OK</th><td>0</td><td>900</td></tr>",
        "<tr class=\"bad\"><th scope=\"row\">DEADLINE_EXCEEDED</th><td>4</td><td>30</td></tr>",
        "<tr class=\"bad\"><th scope=\"row\">NOT_FOUND</th><td>5</td><td>60</td></tr>",
        "<tr class=\"bad\"><th scope=\"row\">OTHER</th><td></td><td>4</td></tr>",
        "<tr><th scope=\"row\">no grpc-status</th><td></td><td>6</td></tr>",
        "<th scope=\"row\">Response messages</th><td>4500 messages received",
    ] {
        assert!(html.contains(row), "no {row:?} in the page");
    }

    let csv = out(Format::Csv);
    assert_eq!(
        csv_cells(
            &csv,
            ["grpc_ok", "grpc_failed", "grpc_no_status", "grpc_messages"]
        ),
        ["900", "94", "6", "4500"]
    );
    assert_eq!(
        csv_table(&csv, "grpc_code,"),
        "grpc_code,grpc_status,calls\n0,OK,900\n4,DEADLINE_EXCEEDED,30\n5,NOT_FOUND,60\n,OTHER,4\n,no grpc-status,6\n"
    );

    let json: serde_json::Value = serde_json::from_str(&out(Format::Json)).unwrap();
    let grpc = &json["stats"]["grpc"];
    assert_eq!(
        grpc["calls"],
        serde_json::json!({"OK": 900, "NOT_FOUND": 60, "DEADLINE_EXCEEDED": 30, "OTHER": 4})
    );
    assert_eq!(grpc["no_status"].as_u64(), Some(6));
    assert_eq!(grpc["messages"].as_u64(), Some(4500));
}

/// Other runs have no gRPC figures (empty CSV cells, no section or table).
#[test]
fn grpc_figures_only_for_grpc_runs() {
    let http: SavedResult = fixtures::busy().into();
    for format in [Format::Text, Format::Markdown, Format::Html, Format::Csv] {
        let out = render(&http, format, &RenderOptions::default())
            .unwrap()
            .text;
        assert!(
            !out.contains("gRPC status") && !out.contains("grpc_code"),
            "{format}: {out}"
        );
    }
}

/// The cells of a run CSV's row under the columns `names`.
fn csv_cells<const N: usize>(csv: &str, names: [&str; N]) -> [String; N] {
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    names.map(|name| {
        let at = head.iter().position(|h| *h == name);
        row[at.unwrap_or_else(|| panic!("no {name} column"))].to_string()
    })
}

/// The rest of a CSV from the table after a blank line whose header starts with `head`.
fn csv_table<'a>(csv: &'a str, head: &str) -> &'a str {
    let at = csv.find(&format!("\n\n{head}"));
    &csv[at.unwrap_or_else(|| panic!("no {head} table: {csv}")) + 2..]
}

/// `--ws-idle`: the idle connections' counts (requested, opened, failed by class, closed early
/// by code, held) are in every run format, apart from the active connections' figures.
#[test]
fn idle_websocket_connections_are_in_every_run_format() {
    let r: SavedResult = fixtures::websocket_idle().into();
    let out = |format| render(&r, format, &RenderOptions::default()).unwrap().text;
    let said = "50 requested: 48 opened, 2 failed to open (connect refused ×2), 1 closed early by the server (1001 ×1), 47 held to the end";
    let text = out(Format::Text);
    let line = text.lines().find(|l| l.contains("WebSocket idle")).unwrap();
    assert!(line.ends_with(said), "{line}");
    assert!(
        text.contains("4 upgraded, 12 pings answered"),
        "the active ones' own"
    );
    assert!(out(Format::Markdown).contains(&format!("Idle connections (`--ws-idle`): {said}.")));
    assert!(out(Format::Html).contains(said));
    let csv = out(Format::Csv);
    let table = &csv[csv.find("ws_idle,connections").expect("an idle table")..];
    for row in [
        "requested,50",
        "opened,48",
        "failed_to_open,2",
        "failed_connect_refused,2",
        "closed_early,1",
        "closed_early_1001,1",
        "held,47",
    ] {
        assert!(table.lines().any(|l| l == row), "{row}: {table}");
    }
    let plain: SavedResult = fixtures::websocket().into();
    let csv = render(&plain, Format::Csv, &RenderOptions::default())
        .unwrap()
        .text;
    assert!(
        !csv.contains("ws_idle"),
        "no idle table without --ws-idle: {csv}"
    );
}

/// `--ws-match`: the unmatched messages (count, bytes, over 64 KiB) are in every run format
/// and the JSON; a WebSocket run without it has empty CSV cells for them.
#[test]
fn ws_match_counts_are_in_every_run_format() {
    let r: SavedResult = fixtures::websocket_matched().into();
    let out = |format| render(&r, format, &RenderOptions::default()).unwrap().text;
    let said = "answers matched by JSON field id; 40 unmatched messages (1200 bytes), 1 over 64 KiB (not read)";
    let text = out(Format::Text);
    let line = text.lines().find(|l| l.contains("--ws-match")).unwrap();
    assert!(line.ends_with(said), "{line}");
    assert!(out(Format::Markdown).contains(&format!("With `--ws-match`: {said}.")));
    assert!(out(Format::Html).contains(said));
    let csv = out(Format::Csv);
    assert_eq!(
        csv_cells(
            &csv,
            [
                "ws_unmatched",
                "ws_unmatched_bytes",
                "ws_unmatched_too_large"
            ]
        ),
        ["40", "1200", "1"]
    );
    let json: serde_json::Value = serde_json::from_str(&out(Format::Json)).unwrap();
    assert_eq!(json["config"]["ws_match"], "id");
    let ws = &json["stats"]["ws"];
    assert_eq!(
        (
            ws["unmatched"].as_u64(),
            ws["unmatched_bytes"].as_u64(),
            ws["unmatched_too_large"].as_u64()
        ),
        (Some(40), Some(1200), Some(1))
    );
    let plain: SavedResult = fixtures::websocket().into();
    let csv = render(&plain, Format::Csv, &RenderOptions::default())
        .unwrap()
        .text;
    assert_eq!(
        csv_cells(&csv, ["ws_unmatched", "ws_unmatched_bytes"]),
        ["", ""]
    );
    let text = render(&plain, Format::Text, &RenderOptions::default())
        .unwrap()
        .text;
    assert!(!text.contains("--ws-match"), "{text}");
}
