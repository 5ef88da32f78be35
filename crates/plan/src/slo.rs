//! SLOs as people write them (`p99<50ms,p99.9<=200ms,mean<10ms`), parsed once into the model's
//! typed [`Slo`]. Messages name neither a flag nor a key: the CLI prefixes `--slo`, the
//! scenario loader the file and key.

use loadbench_model::{Gate, GateMetric, GateOp, Gates, Slo, SloCondition, SloOp, SloStat};
use loadbench_units as units;

/// Parses comma-separated conditions, all of which must hold.
pub fn parse_slo(text: &str) -> Result<Slo, String> {
    let conditions = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_condition)
        .collect::<Result<Vec<_>, _>>()?;
    if conditions.is_empty() {
        return Err("is empty: give conditions such as 'p99<50ms'".into());
    }
    Ok(Slo {
        text: text.trim().to_string(),
        conditions,
    })
}

fn parse_condition(item: &str) -> Result<SloCondition, String> {
    let bad = |why: &str| format!("'{item}' {why}");
    let not_a_condition = || {
        bad("is not a condition: write pNN<DURATION, pNN<=DURATION or mean<DURATION, such as 'p99<50ms,p99.9<200ms'")
    };
    let (lhs, op, rhs) = match item.split_once("<=") {
        Some((l, r)) => (l, SloOp::Le, r),
        None => match item.split_once('<') {
            Some((l, r)) => (l, SloOp::Lt, r),
            None => return Err(not_a_condition()),
        },
    };
    let stat = parse_stat(&lhs.trim().to_ascii_lowercase())
        .ok_or_else(not_a_condition)?
        .map_err(&bad)?;
    let rhs = rhs.trim();
    // A limit needs its unit: `p99<50` is far more often a typo than 50 seconds.
    let limit = units::duration(rhs)
        .ok()
        .filter(|_| rhs.parse::<f64>().is_err())
        .ok_or_else(|| {
            bad("has no valid duration limit: give one with a unit, such as 50ms or 1s")
        })?;
    if limit.is_zero() {
        return Err(bad(
            "has a zero limit: give a positive duration such as 50ms",
        ));
    }
    Ok(SloCondition {
        text: item.to_string(),
        stat,
        op,
        limit_us: limit.as_secs_f64() * 1e6,
    })
}

/// Parses gates (`--slo` of `run` and `bench`, `slo = ...` in a scenario): comma-separated
/// `METRIC OP LIMIT` with OP one of `<`, `<=`, `>`, `>=`, all of which must pass. METRIC is
/// `pNN` or `mean` (a duration limit, as find-max's SLO), `errors` (a share with `%`, such as
/// `0.1%`, or a count without), `rps` (requests per second) or `A/B` (bench: req/s of target A
/// over target B, a plain number).
pub fn parse_gates(text: &str) -> Result<Gates, String> {
    let gates = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_gate)
        .collect::<Result<Vec<_>, _>>()?;
    if gates.is_empty() {
        return Err("is empty: give gates such as 'p99<50ms,errors<0.1%,rps>1000'".into());
    }
    Ok(Gates {
        text: text.trim().to_string(),
        gates,
    })
}

fn parse_gate(item: &str) -> Result<Gate, String> {
    let bad = |why: &str| format!("'{item}' {why}");
    let at = item.find(['<', '>']).ok_or_else(|| {
        bad("is not a gate: write METRIC<LIMIT or METRIC>LIMIT, such as 'p99<50ms', 'errors<0.1%', 'rps>1000' or 'nginx/direct>0.9'")
    })?;
    let (lhs, rest) = item.split_at(at);
    let (op, rhs) = match (rest.as_bytes()[0], rest.get(1..2)) {
        (b'<', Some("=")) => (GateOp::Le, &rest[2..]),
        (b'<', _) => (GateOp::Lt, &rest[1..]),
        (_, Some("=")) => (GateOp::Ge, &rest[2..]),
        _ => (GateOp::Gt, &rest[1..]),
    };
    let (lhs, rhs) = (lhs.trim(), rhs.trim());
    let (metric, limit) = parse_metric(lhs, rhs).map_err(|why| bad(&why))?;
    Ok(Gate {
        text: item.to_string(),
        metric,
        op,
        limit,
    })
}

/// The metric and its limit in the metric's unit; the problem (without the gate) otherwise.
fn parse_metric(lhs: &str, rhs: &str) -> Result<(GateMetric, f64), String> {
    let number = |what: &str| {
        rhs.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("has no valid limit: give {what}"))
    };
    Ok(match lhs.to_ascii_lowercase().as_str() {
        "errors" if rhs.ends_with('%') => (
            GateMetric::ErrorShare,
            units::share(rhs).map_err(|e| e.to_string())?,
        ),
        "errors" => {
            let n = number("a share such as 0.1% or a whole count such as 10")?;
            if n.fract() != 0.0 {
                return Err(
                    "has a fractional count: give a share with % (0.1%) or a whole count (10)"
                        .into(),
                );
            }
            (GateMetric::ErrorCount, n)
        }
        "rps" => (
            GateMetric::Rps,
            number("requests per second, such as 1000")?,
        ),
        _ if lhs.contains('/') => {
            let (a, b) = lhs.split_once('/').unwrap_or_default();
            let (a, b) = (a.trim(), b.trim());
            if a.is_empty() || b.is_empty() || b.contains('/') || a == b {
                return Err("is not a ratio of two targets: write TARGET/TARGET>0.9, such as 'nginx/direct>0.9'".into());
            }
            let metric = GateMetric::Ratio {
                numerator: a.to_string(),
                denominator: b.to_string(),
            };
            (metric, number("a ratio such as 0.9")?)
        }
        low => {
            let stat = parse_stat(low)
                .ok_or_else(|| format!("names an unknown metric '{lhs}': use pNN (p99, p99.9), mean, errors, rps or TARGET/TARGET (bench)"))?
                .map_err(str::to_string)?;
            let limit = units::duration(rhs)
                .ok()
                .filter(|_| rhs.parse::<f64>().is_err())
                .ok_or("has no valid duration limit: give one with a unit, such as 50ms or 1s")?;
            (GateMetric::Latency(stat), limit.as_secs_f64() * 1e6)
        }
    })
}

/// `mean` or `pNN`; `None` when it is neither, `Some(Err)` for a percentile out of range.
fn parse_stat(lhs: &str) -> Option<Result<SloStat, &'static str>> {
    if lhs == "mean" {
        return Some(Ok(SloStat::Mean));
    }
    let p: f64 = lhs.strip_prefix('p')?.parse().ok()?;
    Some(if p > 0.0 && p <= 100.0 {
        Ok(SloStat::Percentile { percentile: p })
    } else {
        Err("names a percentile outside (0, 100]: use one such as p50, p99 or p99.9")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_conditions_parse_as_typed() {
        let slo = parse_slo("p50<10ms, p99.9<=200ms,mean<1s").unwrap();
        let c = &slo.conditions;
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].stat, SloStat::Percentile { percentile: 50.0 });
        assert_eq!((c[0].op, c[0].limit_us), (SloOp::Lt, 10_000.0));
        assert_eq!(c[1].stat, SloStat::Percentile { percentile: 99.9 });
        assert_eq!((c[1].op, c[1].limit_us), (SloOp::Le, 200_000.0));
        assert_eq!((c[2].stat, c[2].limit_us), (SloStat::Mean, 1e6));
        assert_eq!(c[1].text, "p99.9<=200ms");
    }

    #[test]
    fn slo_mistakes_name_the_fix() {
        for (bad, needle) in [
            ("p99>50ms", "is not a condition"),
            ("99<50ms", "is not a condition"),
            ("p101<50ms", "outside (0, 100]"),
            ("p99<50", "with a unit"),
            ("p99<fast", "with a unit"),
            ("p99<0ms", "zero limit"),
            (" , ", "is empty"),
        ] {
            let e = parse_slo(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn gates_parse_as_typed() {
        let g = parse_gates("p99<10ms, mean<=1s,errors<0.1%,errors<=3,rps>=5000,nginx/direct>0.9")
            .unwrap();
        let g = &g.gates;
        assert_eq!(g.len(), 6);
        assert_eq!(
            g[0].metric,
            GateMetric::Latency(SloStat::Percentile { percentile: 99.0 })
        );
        assert_eq!((g[0].op, g[0].limit), (GateOp::Lt, 10_000.0));
        assert_eq!((g[1].op, g[1].limit), (GateOp::Le, 1e6));
        assert_eq!(g[1].metric, GateMetric::Latency(SloStat::Mean));
        assert_eq!(g[2].metric, GateMetric::ErrorShare);
        assert!((g[2].limit - 0.001).abs() < 1e-12);
        assert_eq!(
            (g[3].metric.clone(), g[3].op, g[3].limit),
            (GateMetric::ErrorCount, GateOp::Le, 3.0)
        );
        assert_eq!(
            (g[4].metric.clone(), g[4].op, g[4].limit),
            (GateMetric::Rps, GateOp::Ge, 5000.0)
        );
        assert_eq!(
            g[5].metric,
            GateMetric::Ratio {
                numerator: "nginx".into(),
                denominator: "direct".into()
            }
        );
        assert_eq!((g[5].op, g[5].limit), (GateOp::Gt, 0.9));
        assert_eq!(g[5].text, "nginx/direct>0.9");
    }

    #[test]
    fn gate_mistakes_name_the_fix() {
        for (bad, needle) in [
            ("p99=50ms", "is not a gate"),
            ("latency<50ms", "unknown metric 'latency'"),
            ("p101<50ms", "outside (0, 100]"),
            ("p99<50", "with a unit"),
            ("errors<2.5", "fractional count"),
            ("errors<150%", "is not a share"),
            ("rps>fast", "requests per second"),
            ("a/a>1", "ratio of two targets"),
            ("/b>1", "ratio of two targets"),
            ("a/b>x", "a ratio such as"),
            (" , ", "is empty"),
        ] {
            let e = parse_gates(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
