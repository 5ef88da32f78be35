//! SLOs as people write them (`p99<50ms,p99.9<=200ms,mean<10ms`), parsed once into the model's
//! typed [`Slo`]. Messages name neither a flag nor a key: the CLI prefixes `--slo`, the
//! scenario loader the file and key.

use loadbench_model::{Slo, SloCondition, SloOp, SloStat};
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
}
