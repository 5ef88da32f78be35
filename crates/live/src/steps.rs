//! The find-max step table as the dashboard shows it: one short row per judged step, its
//! recovery wait added when it ends; and the plain lines (`find_max_step_line`, the recovery
//! line) held back while the dashboard covers stderr, printed once it has closed.

use loadbench_model::human::{duration_us, percent, rate_short};
use loadbench_model::{FindMaxStep, Verdict};

/// The steps so far.
#[derive(Debug, Default)]
pub struct Steps {
    /// Step number, the row, the verdict in full.
    rows: Vec<(u32, String, String)>,
    plain: Vec<String>,
}

impl Steps {
    /// A step judged (first call) or its recovery over (second call, same step number).
    pub fn record(&mut self, step: &FindMaxStep) {
        let (text, verdict) = row(step);
        let row = (step.step, text, verdict);
        match self.rows.last_mut() {
            Some(last) if last.0 == step.step => {
                *last = row;
                self.plain
                    .extend(loadbench_report::find_max_recovery_line(step));
            }
            _ => {
                self.rows.push(row);
                self.plain.push(loadbench_report::find_max_step_line(step));
            }
        }
    }

    /// The table's rows, oldest first.
    pub fn rows(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().map(|r| r.1.as_str())
    }

    /// The newest step's number and its verdict in full (`FAIL p99 … ; recovered in 2.41s`).
    pub fn last_verdict(&self) -> Option<(u32, &str)> {
        self.rows.last().map(|r| (r.0, r.2.as_str()))
    }

    /// No step recorded yet.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Steps recorded.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The lines stderr gets without the dashboard, in order.
    pub fn plain_lines(&self) -> &[String] {
        &self.plain
    }
}

/// The table's heading, aligned with [`row`].
pub const HEADING: &str = "step  offered  completed      p99  errors  verdict";

/// `  3   1.20k    1180.0/s   4.51ms   0.00%  pass`, and the verdict alone.
fn row(s: &FindMaxStep) -> (String, String) {
    let p99 = s.p99_us.map_or("-".to_string(), duration_us);
    let verdict = match s.verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::Interrupted => "interrupted".to_string(),
        Verdict::Fail => format!("FAIL {}", s.detail),
    };
    let recovery = s.recovery.as_ref().map_or(String::new(), |r| {
        let waited = duration_us(r.waited_ms as f64 * 1e3);
        match r.recovered {
            true => format!("; recovered in {waited}"),
            false => format!("; not recovered after {waited}"),
        }
    });
    let verdict = format!("{verdict}{recovery}");
    let row = format!(
        "{:>4} {:>8} {:>10} {:>8} {:>7}  {verdict}",
        s.step,
        rate_short(s.target_rate),
        format!("{:.0}/s", s.completed_rate),
        p99,
        percent(s.error_share)
    );
    (row, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_model::{FindMaxResult, Recovery};

    fn fixture() -> Vec<FindMaxStep> {
        let text = include_str!("../../cli/tests/fixtures/find-max.json");
        FindMaxResult::from_json(text).unwrap().steps
    }

    #[test]
    fn a_row_per_step_and_the_recovery_joins_its_row() {
        let mut steps = fixture();
        let mut t = Steps::default();
        for s in &steps {
            t.record(s);
        }
        assert_eq!(t.len(), 4);
        let last = t.rows().last().unwrap().to_string();
        assert!(last.starts_with("   4 "), "{last}");
        assert!(last.contains("FAIL "), "{last}");
        assert!(t.rows().next().unwrap().ends_with("pass"));
        steps[3].recovery = Some(Recovery {
            waited_ms: 2410,
            probes: 9,
            threshold_us: 20_000.0,
            last_probe_us: Some(900.0),
            recovered: true,
        });
        t.record(&steps[3]);
        assert_eq!(t.len(), 4, "the recovery amends step 4's row");
        let last = t.rows().last().unwrap().to_string();
        assert!(last.ends_with("; recovered in 2.41s"), "{last}");
        let (n, verdict) = t.last_verdict().unwrap();
        assert_eq!(n, 4);
        assert!(last.ends_with(verdict), "{last} / {verdict}");
        assert!(verdict.starts_with("FAIL "), "{verdict}");
        let plain = t.plain_lines();
        assert_eq!(
            plain.len(),
            5,
            "four step lines and one recovery line: {plain:?}"
        );
        assert_eq!(plain[0], loadbench_report::find_max_step_line(&steps[0]));
        assert!(
            plain[4].starts_with("after step 4: target recovered"),
            "{}",
            plain[4]
        );
    }
}
