//! What the terminal dashboard shows, kept apart from drawing so it can be tested without a
//! terminal: the latest [`Pulse`] of the run, every second closed so far (with its p90 and the
//! last one's latency distribution decoded once, when it arrives), the run's goal, and the
//! labels of its flow steps or mix requests.

use crate::endpoints::Endpoints;
use crate::heading::Heading;
use loadbench_engine::Pulse;
use loadbench_model::human::counted;
use loadbench_model::{Histo, SeriesPoint};
use loadbench_plan::{LoadShape, Plan, Schedule, Stop};
use std::time::Duration;

/// How many bars the latency distribution has.
const BINS: usize = 6;

/// The dashboard's state.
#[derive(Debug)]
pub struct View {
    /// `run` or `find-max`.
    pub command: &'static str,
    /// What runs: the command and the target's URL, or in a bench the target's name and the
    /// step.
    pub heading: Heading,
    /// "closed model, 50 connections" or "open model, at most 1000 connections".
    pub model: String,
    /// When the load stops (a duration or a request count).
    pub stop: Stop,
    /// The warm-up before the measured window.
    pub warmup: Duration,
    schedule: Option<Schedule>,
    /// Time since the load started (warm-up included).
    pub elapsed: Duration,
    /// The latest counters, all workers added up.
    pub now: Pulse,
    /// Every second closed so far, merged over the workers, oldest first.
    pub series: Vec<SeriesPoint>,
    /// The 90th percentile of each second of `series`, µs.
    pub p90_us: Vec<f64>,
    /// The last closed second's latency: `(upper bound ns, count)` per bar.
    pub distribution: Vec<(u64, u64)>,
    /// `q` or Ctrl-C was pressed: the run is ending.
    pub stopping: bool,
    /// A flow's steps or a mix's requests, labelled (`None` for a single-request load).
    pub endpoints: Option<Endpoints>,
}

impl View {
    /// The view of `plan` before its first pulse.
    pub fn new(command: &'static str, plan: &Plan) -> View {
        let (model, schedule) = match &plan.load {
            LoadShape::Closed { .. } => (
                format!(
                    "closed model, {}",
                    counted(u64::from(plan.connections), "connection")
                ),
                None,
            ),
            LoadShape::FindMax { slo, .. } => (format!("find-max search, {}", slo.text), None),
            LoadShape::Open {
                schedule,
                max_connections,
                ..
            } => (
                format!(
                    "open model, at most {}",
                    counted(u64::from(*max_connections), "connection")
                ),
                Some(schedule.clone()),
            ),
        };
        View {
            command,
            heading: Heading::plain(command, &plan.target.url),
            model,
            stop: plan.stop,
            warmup: plan.warmup,
            schedule,
            elapsed: Duration::ZERO,
            now: Pulse::default(),
            series: Vec::new(),
            p90_us: Vec::new(),
            distribution: Vec::new(),
            stopping: false,
            endpoints: Endpoints::of(plan),
        }
    }

    /// Takes a pulse read with `seen` = `self.series.len()`.
    pub fn update(&mut self, mut pulse: Pulse, elapsed: Duration) {
        self.elapsed = elapsed;
        let new = std::mem::take(&mut pulse.series);
        for p in new {
            let h = Histo::from_base64_per_second(&p.hdr).unwrap_or_default();
            self.p90_us.push(h.percentile_ns(90.0) as f64 / 1000.0);
            self.distribution = distribution(&h);
            self.series.push(p);
        }
        self.now = pulse;
    }

    /// Whether the warm-up is still going.
    pub fn warming_up(&self) -> bool {
        self.elapsed < self.warmup
    }

    /// Time into the measured window.
    pub fn measured(&self) -> Duration {
        self.elapsed.saturating_sub(self.warmup)
    }

    /// How far the run has come, 0 to 1.
    pub fn ratio(&self) -> f64 {
        let r = match self.stop {
            Stop::Duration(d) => self.measured().as_secs_f64() / d.as_secs_f64().max(1e-9),
            Stop::Requests(n) => (self.now.requests + self.now.errors.total()) as f64 / n as f64,
        };
        r.clamp(0.0, 1.0)
    }

    /// Time left in a timed run, in the whole seconds the elapsed time is shown in (so the
    /// two always add up to the run's duration).
    pub fn remaining(&self) -> Option<Duration> {
        let whole = Duration::from_secs(self.measured().as_secs());
        match self.stop {
            Stop::Duration(d) => Some(d.saturating_sub(whole)),
            Stop::Requests(_) => None,
        }
    }

    /// The per-step (flow) or per-request (mix) lines, at most `height` of them; none for a
    /// single-request load.
    pub fn endpoint_lines(&self, height: usize) -> Vec<String> {
        self.endpoints
            .as_ref()
            .map(|e| e.lines(&self.now, self.measured(), height))
            .unwrap_or_default()
    }

    /// The last closed second.
    pub fn last(&self) -> Option<&SeriesPoint> {
        self.series.last()
    }

    /// Open model: requests the schedule calls for in `second`, counted as the saved result
    /// counts them (request k is due when the scheduled count first exceeds k).
    pub fn target(&self, second: u32) -> Option<u64> {
        let s = self.schedule.as_ref()?;
        let due_before = |t: f64| (s.count_until(t) - 1e-9).ceil().max(0.0) as u64;
        let t = f64::from(second);
        Some(due_before(t + 1.0) - due_before(t))
    }
}

/// `BINS` bars spaced evenly on a log scale from the fastest to the slowest response.
fn distribution(h: &Histo) -> Vec<(u64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (h.min_ns().max(1) as f64, h.max_ns().max(1) as f64);
    let step = (hi / lo).powf(1.0 / BINS as f64).max(1.0 + 1e-9);
    let mut bars: Vec<(u64, u64)> = (1..=BINS)
        .map(|i| ((lo * step.powi(i as i32)).ceil() as u64, 0))
        .collect();
    for (upper, n) in h.recorded_buckets() {
        let i = bars.iter().position(|b| upper <= b.0).unwrap_or(BINS - 1);
        bars[i].1 += n;
    }
    bars
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_model::SecondCounts;
    use loadbench_plan::LoadSpec;

    fn point(second: u32, latencies_ms: &[u64]) -> SeriesPoint {
        let mut h = Histo::per_second();
        for &ms in latencies_ms {
            h.record_ns(ms * 1_000_000);
        }
        let n = latencies_ms.len() as u64;
        let counts = SecondCounts {
            requests: n,
            sent: n,
            ..Default::default()
        };
        SeriesPoint::new(second, counts, &h)
    }

    fn plan(spec: &LoadSpec) -> Plan {
        Plan::resolve(spec).unwrap()
    }

    #[test]
    fn update_keeps_every_second_with_its_p90_and_the_last_distribution() {
        let spec = LoadSpec::closed("http://127.0.0.1:9/", 8, Duration::from_secs(10));
        let mut v = View::new("run", &plan(&spec));
        let lat: Vec<u64> = (1..=10).collect();
        let pulse = Pulse {
            requests: 10,
            series: vec![point(0, &lat)],
            ..Default::default()
        };
        v.update(pulse, Duration::from_secs(4));
        assert_eq!(v.series.len(), 1);
        assert!(
            (8_900.0..=9_100.0).contains(&v.p90_us[0]),
            "{}",
            v.p90_us[0]
        );
        assert_eq!(v.distribution.iter().map(|b| b.1).sum::<u64>(), 10);
        assert_eq!(v.distribution.len(), BINS);
        assert_eq!(v.remaining(), Some(Duration::from_secs(6)));
        assert!((v.ratio() - 0.4).abs() < 1e-9);
        assert!(v.now.series.is_empty(), "the series lives in `series` only");
    }

    /// Issue 35 point 8: one connection is said in the singular.
    #[test]
    fn one_connection_is_said_in_the_singular() {
        let one = LoadSpec::closed("http://127.0.0.1:9/", 1, Duration::from_secs(10));
        assert_eq!(
            View::new("run", &plan(&one)).model,
            "closed model, 1 connection"
        );
        let eight = LoadSpec::closed("http://127.0.0.1:9/", 8, Duration::from_secs(10));
        assert_eq!(
            View::new("run", &plan(&eight)).model,
            "closed model, 8 connections"
        );
    }

    #[test]
    fn warmup_is_not_measured_time() {
        let spec = LoadSpec {
            warmup: Duration::from_secs(2),
            ..LoadSpec::closed("http://127.0.0.1:9/", 8, Duration::from_secs(10))
        };
        let mut v = View::new("run", &plan(&spec));
        v.update(Pulse::default(), Duration::from_secs(1));
        assert!(v.warming_up());
        assert_eq!(v.ratio(), 0.0);
        v.update(Pulse::default(), Duration::from_secs(3));
        assert_eq!(v.measured(), Duration::from_secs(1));
    }

    #[test]
    fn open_model_targets_count_as_the_result_counts_them() {
        let spec = LoadSpec::open("http://127.0.0.1:9/", 250.0, Duration::from_secs(4), 100);
        let v = View::new("run", &plan(&spec));
        assert_eq!(v.target(0), Some(250));
        assert_eq!(v.target(3), Some(250));
        assert!(v.model.starts_with("open model"), "{}", v.model);
        let closed = LoadSpec::closed("http://127.0.0.1:9/", 8, Duration::from_secs(10));
        assert_eq!(View::new("run", &plan(&closed)).target(0), None);
    }
}
