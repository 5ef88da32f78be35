//! `loadbench compare` of two bench results: for every target × load × level present in both,
//! req/s, p50 and p99 compared with Welch's t-test *across rounds*. Each round is an
//! independent repetition (its own warm-up and window, other targets' rounds between them), so
//! per-round values are the independent samples the test assumes, unlike the per-second values
//! of a single run, which are autocorrelated. The verdicts and the gate (req/s down or p99 up
//! beyond the threshold with p < 0.05) are those of run comparisons (docs/compare.md).

use super::{change_text, verdict, Metric, Verdict, ALPHA};
use crate::markup::markdown::{code, escape_text, table, Align};
use crate::markup::text::aligned;
use loadbench_model::human::{self as units, MISSING};
use loadbench_model::{BenchLoad, BenchResult, BenchRound, Spread, Welch};

/// One metric of one cell, compared.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    /// The load's name in the scenario.
    pub load: String,
    /// The level as shown: `c=10`, `1000/s` or `find-max`.
    pub level: String,
    /// The target's name (for a `together` step's combined entry, the names joined by `+`).
    pub target: String,
    /// Which metric this row compares.
    pub metric: Metric,
    /// Mean of the base's rounds (req/s, or latency in µs); `None` when no round has a value.
    pub base: Option<f64>,
    /// Mean of the new result's rounds (req/s, or latency in µs); `None` when no round has one.
    pub new: Option<f64>,
    /// `(new − base) / base` of the means; `None` when either is missing or the base is zero.
    pub change: Option<f64>,
    /// Welch's t-test on the per-round values (`t > 0`: new is higher).
    pub test: Option<Welch>,
    /// Rounds with a value on each side.
    pub samples: (usize, usize),
    /// What the change amounts to, judged on the threshold and the test.
    pub verdict: Verdict,
}

/// Two bench results compared cell by cell.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchComparison {
    /// How each side is named in the report (usually its file name): base, then new.
    pub names: [String; 2],
    /// The smallest relative change that counts, as a share (0.05 = 5%).
    pub threshold: f64,
    /// One row per metric of every target × load × level present in both results.
    pub rows: Vec<BenchRow>,
    /// What a reader should know before trusting the table (e.g. cells only one side has).
    pub notes: Vec<String>,
    /// When the two results share no target × load × level: one line naming what each holds.
    /// Nothing was compared, so `compare` must not pass: it refuses with this line.
    pub nothing_shared: Option<String>,
}

/// A cell's place, by names (indices may differ between the two files).
type Key = (String, String, String);

impl BenchComparison {
    /// Compares `new` against `base` cell by cell; `names` label them in the report.
    pub fn of(names: [&str; 2], base: &BenchResult, new: &BenchResult, threshold: f64) -> Self {
        let (kb, kn) = (keys(base), keys(new));
        let mut rows = Vec::new();
        for (key, (li, level)) in &kb {
            let Some((_, (nli, nlevel))) = kn.iter().find(|(k, _)| k == key) else {
                continue;
            };
            for m in Metric::ALL {
                let a = per_round(base, *li, *level, &key.2, m);
                let b = per_round(new, *nli, *nlevel, &key.2, m);
                rows.push(row(key, m, &a, &b, threshold));
            }
        }
        let notes = notes(names, base, new, &kb, &kn, &rows);
        BenchComparison {
            names: names.map(String::from),
            threshold,
            nothing_shared: rows.is_empty().then(|| nothing_shared(names, &kb, &kn)),
            rows,
            notes,
        }
    }

    /// The regressions that fail `compare`.
    pub fn failing(&self) -> Vec<&BenchRow> {
        self.rows
            .iter()
            .filter(|r| r.metric.gates() && r.verdict == Verdict::Regression)
            .collect()
    }

    /// The report for a terminal: the two files, an aligned table, the method, the outcome.
    pub fn text(&self) -> String {
        let mut lines = vec![
            format!("base  {}", self.names[0]),
            format!("new   {}", self.names[1]),
            String::new(),
        ];
        let mut rows = vec![HEAD.map(String::from).to_vec()];
        rows.extend(self.rows.iter().map(cells));
        lines.extend(aligned(&rows, &[0, 1, 2, 3, 9]));
        lines.push(String::new());
        lines.push(self.method());
        lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
        lines.push(self.outcome());
        lines.join("\n") + "\n"
    }

    /// The same report as GitHub-flavoured Markdown, for a pull request.
    pub fn markdown(&self) -> String {
        let mut out = String::from("## loadbench compare (bench)\n\n");
        out += &format!(
            "- **base** {}\n- **new** {}\n\n",
            code(&self.names[0]),
            code(&self.names[1])
        );
        let rows: Vec<Vec<String>> = self.rows.iter().map(cells).collect();
        let mut align = vec![Align::Left; 4];
        align.extend([Align::Right; 5]);
        align.push(Align::Left);
        out += &table(&HEAD, &align, &rows);
        out += &format!("\n{}\n", escape_text(&self.method()));
        for n in &self.notes {
            out += &format!("\n> **Note:** {}\n", escape_text(n));
        }
        out + &format!("\n**{}**\n", escape_text(&self.outcome()))
    }

    fn method(&self) -> String {
        format!(
            "threshold {}; significant when p < {ALPHA}: Welch's t-test across rounds (each round is one independent sample; base and new show the mean of the rounds) (docs/compare.md)",
            units::percent(self.threshold)
        )
    }

    fn outcome(&self) -> String {
        let list = |v: Verdict| -> Vec<String> {
            let rows = self
                .rows
                .iter()
                .filter(|r| r.metric.gates() && r.verdict == v);
            rows.map(|r| {
                format!(
                    "{} at {} ({}) {} {} ({})",
                    r.target,
                    r.level,
                    r.load,
                    r.metric.label(),
                    change_text(r.change),
                    p_text(r.test)
                )
            })
            .collect()
        };
        super::outcome_line(&list(Verdict::Regression), &list(Verdict::Improvement))
    }
}

const HEAD: [&str; 10] = [
    "load", "level", "target", "metric", "base", "new", "change", "p-value", "rounds", "verdict",
];

fn cells(r: &BenchRow) -> Vec<String> {
    let value = |v: Option<f64>| v.map_or(MISSING.to_string(), |v| r.metric.format(v));
    vec![
        r.load.clone(),
        r.level.clone(),
        r.target.clone(),
        r.metric.label().to_string(),
        value(r.base),
        value(r.new),
        change_text(r.change),
        p_text(r.test),
        format!("{}/{}", r.samples.0, r.samples.1),
        r.verdict.label().to_string(),
    ]
}

fn p_text(test: Option<Welch>) -> String {
    match test {
        None => MISSING.to_string(),
        Some(t) if t.p < 1e-4 => "p < 0.0001".to_string(),
        Some(t) => format!("p = {:.4}", t.p),
    }
}

/// Every (load name, level label, target) with a round, and its indices.
fn keys(r: &BenchResult) -> Vec<(Key, (u32, u32))> {
    let mut out: Vec<(Key, (u32, u32))> = Vec::new();
    for round in r.rounds.iter().filter(|x| !x.combined) {
        let Some(load) = r.loads.get(round.load as usize) else {
            continue;
        };
        let key = key_of(load, round);
        if !out.iter().any(|(k, _)| *k == key) {
            out.push((key, (round.load, round.level)));
        }
    }
    out
}

/// `base.json and new.json share no target × load × level: base.json holds …; new.json holds …`.
fn nothing_shared(names: [&str; 2], kb: &[(Key, (u32, u32))], kn: &[(Key, (u32, u32))]) -> String {
    format!(
        "{} and {} share no target × load × level, so nothing was compared: {} holds {}; {} holds {}; compare two benches of the same loads, levels and targets",
        names[0],
        names[1],
        names[0],
        holdings(kb),
        names[1],
        holdings(kn)
    )
}

/// `direct, nginx at c=50, c=200 (load closed)`, per load; `no finished round` when empty.
fn holdings(keys: &[(Key, (u32, u32))]) -> String {
    let mut loads: Vec<&str> = Vec::new();
    for (k, _) in keys {
        push_new(&mut loads, &k.0);
    }
    let of_load = |load: &str| {
        let mut targets: Vec<&str> = Vec::new();
        let mut levels: Vec<&str> = Vec::new();
        for (k, _) in keys.iter().filter(|(k, _)| k.0 == load) {
            push_new(&mut targets, &k.2);
            push_new(&mut levels, &k.1);
        }
        format!(
            "{} at {} (load {load})",
            targets.join(", "),
            levels.join(", ")
        )
    };
    let list: Vec<String> = loads.iter().map(|l| of_load(l)).collect();
    if list.is_empty() {
        "no finished round".to_string()
    } else {
        list.join("; ")
    }
}

fn push_new<'a>(list: &mut Vec<&'a str>, item: &'a str) {
    if !list.contains(&item) {
        list.push(item);
    }
}

fn key_of(load: &BenchLoad, round: &BenchRound) -> Key {
    (
        load.name.clone(),
        load.level_label(round.level as usize),
        round.target.clone(),
    )
}

/// One value per round that has it: req/s (find-max: the rate that held), or a percentile.
fn per_round(r: &BenchResult, load: u32, level: u32, target: &str, m: Metric) -> Vec<f64> {
    r.rounds_of(load, level, target)
        .filter_map(|round| match m {
            Metric::RequestsPerSec => round.throughput(),
            _ => m.whole_run(round.result.as_ref()?),
        })
        .collect()
}

fn row(key: &Key, metric: Metric, a: &[f64], b: &[f64], threshold: f64) -> BenchRow {
    let mean = |v: &[f64]| Spread::of(v).map(|s| s.mean);
    let (base, new) = (mean(a), mean(b));
    let change = match (base, new) {
        (Some(b), Some(n)) if b > 0.0 => Some((n - b) / b),
        (Some(b), Some(n)) if b == n => Some(0.0),
        _ => None,
    };
    let test = Welch::test(a, b);
    BenchRow {
        load: key.0.clone(),
        level: key.1.clone(),
        target: key.2.clone(),
        metric,
        base,
        new,
        change,
        test,
        samples: (a.len(), b.len()),
        verdict: verdict(metric, change, test, threshold),
    }
}

fn notes(
    names: [&str; 2],
    base: &BenchResult,
    new: &BenchResult,
    kb: &[(Key, (u32, u32))],
    kn: &[(Key, (u32, u32))],
    rows: &[BenchRow],
) -> Vec<String> {
    let mut notes = Vec::new();
    let only = |a: &[(Key, (u32, u32))], b: &[(Key, (u32, u32))]| -> Vec<String> {
        a.iter()
            .filter(|(k, _)| !b.iter().any(|(o, _)| o == k))
            .map(|(k, _)| format!("{} at {} ({})", k.2, k.1, k.0))
            .collect()
    };
    for (name, list) in [(names[0], only(kb, kn)), (names[1], only(kn, kb))] {
        if !list.is_empty() {
            notes.push(format!("only in {name}, not compared: {}", list.join(", ")));
        }
    }
    for (name, r) in names.iter().zip([base, new]) {
        if r.interrupted {
            notes.push(format!("{name} was interrupted: it holds a partial bench"));
        }
        let bound = r.generator_bound_rounds();
        if bound > 0 {
            notes.push(format!("{name} has {bound} generator-bound rounds: their req/s is loadbench's limit, not the target's"));
        }
    }
    if rows.iter().any(|r| r.verdict == Verdict::Untested) {
        notes.push("untested: a side has fewer than two rounds of a cell; run 3 or more rounds for a useful test".into());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn the_same_bench_has_no_significant_change() {
        let r = fixtures::bench();
        let c = BenchComparison::of(["a", "b"], &r, &r, 0.05);
        assert_eq!(c.rows.len(), 6 * 3);
        assert!(c.failing().is_empty());
        assert!(
            c.rows.iter().all(|r| r.verdict == Verdict::WithinNoise),
            "{:?}",
            c.rows
        );
        assert!(c.text().contains("no significant change"));
    }

    #[test]
    fn a_slower_target_is_a_regression_with_exit_worthy_rows() {
        let base = fixtures::bench();
        let new = fixtures::bench_regressed();
        let c = BenchComparison::of(["base.json", "new.json"], &base, &new, 0.05);
        let failing = c.failing();
        assert!(failing.iter().all(|r| r.target == "nginx"), "{failing:?}");
        assert!(failing
            .iter()
            .any(|r| r.metric == Metric::RequestsPerSec && r.level == "c=50"));
        assert!(failing.iter().any(|r| r.metric == Metric::P99));
        let rps = &failing[0];
        assert_eq!(rps.samples, (3, 3));
        assert!((rps.change.unwrap() + 0.2).abs() < 0.001, "{rps:?}");
        assert!(rps.test.unwrap().p < ALPHA);
        let text = c.text();
        assert!(
            text.contains("regression: nginx at c=50 (closed) req/s -20.00%"),
            "{text}"
        );
        assert!(text.contains("Welch's t-test across rounds"), "{text}");
    }

    #[test]
    fn cells_missing_on_one_side_are_named() {
        let base = fixtures::bench();
        let mut new = fixtures::bench();
        new.rounds.retain(|r| r.target != "haproxy");
        new.recompute();
        let c = BenchComparison::of(["base.json", "new.json"], &base, &new, 0.05);
        assert_eq!(c.rows.len(), 4 * 3);
        assert!(c.notes.iter().any(|n| n.starts_with("only in base.json, not compared: haproxy at c=50 (closed)")), "{:?}", c.notes);
        let md = c.markdown();
        assert!(md.contains("| load | level | target | metric |"), "{md}");
    }

    #[test]
    fn benches_sharing_no_cell_say_what_each_holds() {
        let base = fixtures::bench();
        let mut new = fixtures::bench();
        new.loads[0].name = "open".into();
        new.rounds.retain(|r| r.target == "direct");
        new.recompute();
        let c = BenchComparison::of(["base.json", "new.json"], &base, &new, 0.05);
        assert!(c.rows.is_empty());
        let line = c.nothing_shared.expect("nothing in common is reported");
        assert_eq!(
            line,
            "base.json and new.json share no target × load × level, so nothing was compared: base.json holds direct, nginx, haproxy at c=50, c=200 (load closed); new.json holds direct at c=50, c=200 (load open); compare two benches of the same loads, levels and targets"
        );
        let same = BenchComparison::of(["a", "b"], &base, &base, 0.05);
        assert_eq!(same.nothing_shared, None);
    }
}
