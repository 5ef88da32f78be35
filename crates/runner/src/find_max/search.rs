//! The search's logic alone: exponential while steps pass, then bisection between the highest
//! pass and the lowest fail, to a precision, within a step budget. It knows nothing of running
//! steps, so it is tested on a simulated target.

use loadbench_model::{FailReason, SearchParams, SearchPhase, StopReason, Verdict};

/// The search: exponential while steps pass, then bisection. Knows nothing of running steps.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    start: f64,
    max: f64,
    precision: f64,
    max_steps: u32,
    done: u32,
    /// The highest rate that passed.
    pub(crate) pass: Option<f64>,
    /// The lowest rate that failed on the target's account (not the generator's).
    pub(crate) fail: Option<f64>,
    pub(crate) stopped: Option<StopReason>,
}

impl Search {
    pub(crate) fn new(p: &SearchParams) -> Search {
        Search {
            start: p.start_rate,
            max: p.max_rate,
            precision: p.precision,
            max_steps: p.max_steps,
            done: 0,
            pass: None,
            fail: None,
            stopped: None,
        }
    }

    /// The next rate to try, or why the search is over (which is then recorded).
    pub(crate) fn next(&mut self) -> Result<(f64, SearchPhase), StopReason> {
        let next = self.propose();
        if let Err(reason) = next {
            self.stop(reason);
        }
        next
    }

    fn propose(&self) -> Result<(f64, SearchPhase), StopReason> {
        if let Some(reason) = self.stopped {
            return Err(reason);
        }
        let next = match (self.pass, self.fail) {
            (None, None) => (self.start, SearchPhase::Exponential),
            (Some(_), Some(_)) if self.narrow_enough() => return Err(StopReason::Precision),
            (Some(p), None) => ((p * 2.0).min(self.max), SearchPhase::Exponential),
            (Some(p), Some(f)) => (round_rate((p + f) / 2.0), SearchPhase::Bisect),
            (None, Some(_)) => return Err(StopReason::NoRateHeld),
        };
        if self.done >= self.max_steps {
            return Err(StopReason::MaxSteps);
        }
        Ok(next)
    }

    /// Within the precision, or so close that the midpoint rounds onto an end.
    fn narrow_enough(&self) -> bool {
        let (Some(p), Some(f)) = (self.pass, self.fail) else {
            return false;
        };
        let mid = round_rate((p + f) / 2.0);
        (f - p) / p < self.precision || mid <= p || mid >= f
    }

    pub(crate) fn record(&mut self, rate: f64, verdict: Verdict, reason: Option<FailReason>) {
        self.done += 1;
        match (verdict, reason) {
            (Verdict::Pass, _) => {
                self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
                if rate >= self.max {
                    self.stop(StopReason::MaxRatePassed);
                }
            }
            (Verdict::Fail, Some(FailReason::Generator)) => self.stop(StopReason::Generator),
            (Verdict::Fail, _) => self.fail = Some(self.fail.map_or(rate, |f| f.min(rate))),
            (Verdict::Interrupted, _) => self.stop(StopReason::Interrupted),
        }
    }

    pub(crate) fn stop(&mut self, reason: StopReason) {
        self.stopped.get_or_insert(reason);
    }

    pub(crate) fn precision_reached(&self) -> Option<f64> {
        self.pass.zip(self.fail).map(|(p, f)| (f - p) / p)
    }
}

/// Midpoints in whole requests per second (hundredths below 10/s): figures people can retype.
fn round_rate(r: f64) -> f64 {
    if r >= 10.0 {
        r.round()
    } else {
        (r * 100.0).round() / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(start: f64, max: f64, max_steps: u32) -> SearchParams {
        SearchParams {
            start_rate: start,
            max_rate: max,
            precision: 0.05,
            max_steps,
            step_duration_ms: 1_000,
            warmup_ms: 0,
            threads: 1,
            recovery_timeout_ms: 0,
        }
    }

    /// Runs the search against a target that holds exactly `capacity`.
    fn simulate(p: &SearchParams, capacity: f64) -> (Search, Vec<f64>) {
        let mut s = Search::new(p);
        let mut rates = Vec::new();
        while let Ok((rate, _)) = s.next() {
            rates.push(rate);
            let verdict = if rate <= capacity {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            s.record(
                rate,
                verdict,
                Some(FailReason::Slo).filter(|_| verdict == Verdict::Fail),
            );
        }
        (s, rates)
    }

    #[test]
    fn doubles_then_bisects_to_within_the_precision() {
        let (s, rates) = simulate(&params(50.0, 1e6, 20), 400.0);
        assert_eq!(&rates[..5], &[50.0, 100.0, 200.0, 400.0, 800.0]);
        assert_eq!(rates[5], 600.0);
        assert_eq!(s.stopped, Some(StopReason::Precision));
        assert_eq!(s.pass, Some(400.0));
        assert!(s.precision_reached().unwrap() < 0.05);
    }

    #[test]
    fn stops_when_the_max_rate_passes() {
        let (s, rates) = simulate(&params(100.0, 300.0, 20), 1e9);
        assert_eq!(rates, vec![100.0, 200.0, 300.0]);
        assert_eq!(s.stopped, Some(StopReason::MaxRatePassed));
        assert_eq!(s.precision_reached(), None);
    }

    #[test]
    fn stops_at_max_steps_and_when_nothing_held() {
        let (s, rates) = simulate(&params(100.0, 1e6, 3), 1e9);
        assert_eq!(rates.len(), 3);
        assert_eq!(s.stopped, Some(StopReason::MaxSteps));
        let (s, rates) = simulate(&params(100.0, 1e6, 20), 10.0);
        assert_eq!(rates, vec![100.0]);
        assert_eq!(s.stopped, Some(StopReason::NoRateHeld));
        assert_eq!(s.pass, None);
    }

    #[test]
    fn a_generator_limit_ends_the_search_without_a_target_failure() {
        let mut s = Search::new(&params(100.0, 1e6, 20));
        s.next().unwrap();
        s.record(100.0, Verdict::Pass, None);
        s.next().unwrap();
        s.record(200.0, Verdict::Fail, Some(FailReason::Generator));
        assert!(s.next().is_err());
        assert_eq!(s.stopped, Some(StopReason::Generator));
        assert_eq!((s.pass, s.fail), (Some(100.0), None));
    }
}
