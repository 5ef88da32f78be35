//! Resource samples of targets and the generator, as recorded by the harness's sampler, and the
//! questions a bench asks of them: memory at start, peak and trough and CPU per step, and who
//! ran out of CPU (the bottleneck). Pure data and arithmetic; the sampler that reads `/proc`
//! lives in the harness.

use serde::{Deserialize, Serialize};
/// Share of the available cores above which a side counts as saturated in [`Samples::bottleneck`].
pub const SATURATION_SHARE: f64 = 0.9;

/// Errors when summarising a series.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SampleError {
    /// A window was asked for between marks, and this one was never recorded.
    #[error("no mark named `{0}` was recorded")]
    UnknownMark(String),
    /// The closing mark was recorded, but only before the opening one.
    #[error("mark `{to}` does not follow mark `{from}`")]
    MarksOutOfOrder {
        /// The opening mark.
        from: String,
        /// The closing mark, recorded only before `from`.
        to: String,
    },
    /// A summary was asked for a target the sampler never watched.
    #[error("no target named `{0}` was sampled")]
    UnknownTarget(String),
    /// No sample fell inside the window, so there is nothing to summarise.
    #[error("no samples between {from_ms} ms and {to_ms} ms")]
    EmptyWindow {
        /// Start of the window, ms since the sampler started.
        from_ms: u64,
        /// End of the window, ms since the sampler started.
        to_ms: u64,
    },
}

/// One target's resources at one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSample {
    /// The target's name, as in the scenario.
    pub name: String,
    /// CPU time of the whole tree since the previous sample ÷ wall time: 1.0 = one core busy.
    pub cpu_cores: f64,
    /// Sum of resident memory over the tree.
    pub rss_bytes: u64,
    /// Processes in the tree (0 once the target is gone).
    pub processes: u32,
}

/// Everything read at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Milliseconds since the sampler started.
    pub t_ms: u64,
    /// Every sampled target, in the order the sampler was given them.
    pub targets: Vec<TargetSample>,
    /// CPU used by this process (the generator) since the previous sample, in cores.
    pub generator_cpu_cores: f64,
    /// Per host core, busy share (0..=1) since the previous sample: what htop's bars show.
    pub core_busy: Vec<f64>,
    /// Of that busy time, interrupt and softirq time summed over the cores, in cores: the
    /// kernel's packet processing (a fast loopback load's receive path), charged to no process.
    /// Absent when 0 (and in files written before it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub irq_cores: f64,
}

/// A step boundary such as `ready`, `load:start`, `load:end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// What happened: `ready`, `step:3:start`, `step:3:end`, ….
    pub label: String,
    /// When, in milliseconds since the sampler started.
    pub t_ms: u64,
}

/// The recorded series and marks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// The interval between samples at the end of the run: the requested one, doubled once per
    /// downsampling of a full series.
    pub interval_ms: u64,
    /// Every sample, in time order.
    pub samples: Vec<Sample>,
    /// Step boundaries, in the order they were recorded.
    pub marks: Vec<Mark>,
}

/// Per target and step: memory at start, peak and trough; mean and max CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceSummary {
    /// RSS of the last sample at or before the window start (the `ready` state before load);
    /// the first sample in the window when none precedes it.
    pub rss_start_bytes: u64,
    /// Highest RSS sampled in the window, bytes.
    pub rss_peak_bytes: u64,
    /// Lowest RSS sampled in the window, bytes.
    pub rss_trough_bytes: u64,
    /// Mean CPU over the window's samples, in cores (1.0 = one core busy).
    pub cpu_mean_cores: f64,
    /// Highest CPU sample in the window, in cores.
    pub cpu_max_cores: f64,
}

/// Who ran out of CPU during a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// The generator used ≥ [`SATURATION_SHARE`] of its cores while the targets did not: the
    /// measured throughput is the generator's limit, not the target's.
    GeneratorBound,
    /// The targets used ≥ [`SATURATION_SHARE`] of their cores while the generator did not.
    TargetBound,
    /// Neither side saturated, or both did (then CPU does not tell who limited).
    Neither,
}

/// A span of the series, in milliseconds since start: samples with `from_ms < t_ms <= to_ms`
/// cover it (each sample's CPU figure is for the interval ending at its `t_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Start of the span, ms since the sampler started (exclusive).
    pub from_ms: u64,
    /// End of the span, ms since the sampler started (inclusive).
    pub to_ms: u64,
}

impl Samples {
    /// The window from the first mark `from` to the first mark `to` at or after it.
    pub fn window(&self, from: &str, to: &str) -> Result<Window, SampleError> {
        let start = self.marks.iter().position(|m| m.label == from);
        let start = start.ok_or_else(|| SampleError::UnknownMark(from.into()))?;
        let from_ms = self.marks[start].t_ms;
        let end = self.marks[start..].iter().find(|m| m.label == to);
        match end {
            Some(m) => Ok(Window {
                from_ms,
                to_ms: m.t_ms,
            }),
            None if self.marks.iter().any(|m| m.label == to) => Err(SampleError::MarksOutOfOrder {
                from: from.into(),
                to: to.into(),
            }),
            None => Err(SampleError::UnknownMark(to.into())),
        }
    }

    /// Summarises `target` between two marks (see [`Samples::window`]).
    pub fn summary(
        &self,
        target: &str,
        from: &str,
        to: &str,
    ) -> Result<ResourceSummary, SampleError> {
        self.summary_in(target, self.window(from, to)?)
    }

    /// Summarises `target` over a window.
    pub fn summary_in(&self, target: &str, window: Window) -> Result<ResourceSummary, SampleError> {
        let idx = self.target_index(target)?;
        let inside: Vec<&TargetSample> = self.in_window(window).map(|s| &s.targets[idx]).collect();
        let first = inside.first().ok_or(SampleError::EmptyWindow {
            from_ms: window.from_ms,
            to_ms: window.to_ms,
        })?;
        let before = self.samples.iter().rev().find(|s| s.t_ms <= window.from_ms);
        let cpu: Vec<f64> = inside.iter().map(|t| t.cpu_cores).collect();
        Ok(ResourceSummary {
            rss_start_bytes: before.map_or(first.rss_bytes, |s| s.targets[idx].rss_bytes),
            rss_peak_bytes: inside.iter().map(|t| t.rss_bytes).max().unwrap_or(0),
            rss_trough_bytes: inside.iter().map(|t| t.rss_bytes).min().unwrap_or(0),
            cpu_mean_cores: mean(&cpu),
            cpu_max_cores: cpu.iter().copied().fold(0.0, f64::max),
        })
    }

    /// Decides who was CPU-bound over `window`, from mean CPU use: the generator's against
    /// `generator_cores`, all targets' together against `target_cores`. A side is saturated at
    /// ≥ [`SATURATION_SHARE`] (90 %) of its cores; see [`Bottleneck`] for the outcomes.
    pub fn bottleneck(
        &self,
        generator_cores: f64,
        target_cores: f64,
        window: Window,
    ) -> Bottleneck {
        let generator: Vec<f64> = self
            .in_window(window)
            .map(|s| s.generator_cpu_cores)
            .collect();
        let targets: Vec<f64> = self
            .in_window(window)
            .map(|s| s.targets.iter().map(|t| t.cpu_cores).sum())
            .collect();
        let saturated =
            |used: &[f64], cores: f64| cores > 0.0 && mean(used) >= SATURATION_SHARE * cores;
        match (
            saturated(&generator, generator_cores),
            saturated(&targets, target_cores),
        ) {
            (true, false) => Bottleneck::GeneratorBound,
            (false, true) => Bottleneck::TargetBound,
            _ => Bottleneck::Neither,
        }
    }

    /// The generator's mean CPU (cores) over `window`; 0 without samples.
    pub fn generator_cpu_mean(&self, window: Window) -> f64 {
        let used: Vec<f64> = self
            .in_window(window)
            .map(|s| s.generator_cpu_cores)
            .collect();
        mean(&used)
    }

    /// All targets' mean CPU together (cores) over `window`; 0 without samples.
    pub fn targets_cpu_mean(&self, window: Window) -> f64 {
        let used: Vec<f64> = self
            .in_window(window)
            .map(|s| s.targets.iter().map(|t| t.cpu_cores).sum())
            .collect();
        mean(&used)
    }

    /// Mean CPU (cores) used over `window` by everything but the targets and the generator:
    /// every core's busy share minus ours, never below 0; 0 without samples. Kernel work not
    /// charged to a process (interrupts, some network processing) counts here too.
    pub fn other_cpu_mean(&self, window: Window) -> f64 {
        let other: Vec<f64> = self
            .in_window(window)
            .map(|s| {
                let busy: f64 = s.core_busy.iter().sum();
                let ours: f64 = s.targets.iter().map(|t| t.cpu_cores).sum();
                (busy - s.irq_cores - ours - s.generator_cpu_cores).max(0.0)
            })
            .collect();
        mean(&other)
    }

    /// The host's cores, as the samples saw them (0 without samples).
    pub fn host_cores(&self) -> usize {
        self.samples.first().map_or(0, |s| s.core_busy.len())
    }

    /// RSS of `target` at the last sample at or before `t_ms` (its first sample when none is).
    pub fn rss_at(&self, target: &str, t_ms: u64) -> Option<u64> {
        let idx = self.target_index(target).ok()?;
        let before = self.samples.iter().rev().find(|s| s.t_ms <= t_ms);
        before
            .or(self.samples.first())
            .map(|s| s.targets[idx].rss_bytes)
    }

    /// The samples whose interval ends inside `window`. When none does but one sample's
    /// interval spans the whole window (the sampler was held up through a short round on a busy
    /// host), that one: the window's figures are then its average over a longer span, which is
    /// nearer the truth than none. Samples are in time order, each covering the time since the
    /// one before it.
    fn in_window(&self, window: Window) -> impl Iterator<Item = &Sample> {
        let start = self.samples.partition_point(|s| s.t_ms <= window.from_ms);
        let end = self.samples.partition_point(|s| s.t_ms <= window.to_ms);
        let end = if start == end && start > 0 {
            (end + 1).min(self.samples.len())
        } else {
            end
        };
        self.samples[start..end].iter()
    }

    fn target_index(&self, target: &str) -> Result<usize, SampleError> {
        let first = self.samples.first();
        first
            .and_then(|s| s.targets.iter().position(|t| t.name == target))
            .ok_or_else(|| SampleError::UnknownTarget(target.into()))
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// For serde: a figure of 0 is not written.
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_target(t_ms: u64, cpu_cores: f64, rss_bytes: u64) -> Sample {
        Sample {
            t_ms,
            targets: vec![TargetSample {
                name: "proxy".into(),
                cpu_cores,
                rss_bytes,
                processes: 1,
            }],
            generator_cpu_cores: 0.5,
            core_busy: vec![0.5, 0.5],
            irq_cores: 0.0,
        }
    }

    #[test]
    fn a_round_the_sampler_stalled_through_takes_the_sample_that_spans_it() {
        // Samples every 100 ms, then none from 500 to 2300 ms: a round from 600 to 1600 ms has
        // no sample ending inside it, and the one ending at 2300 covers it all.
        let s = Samples {
            interval_ms: 100,
            samples: vec![
                one_target(400, 0.1, 10),
                one_target(500, 0.2, 20),
                one_target(2300, 0.6, 30),
                one_target(2400, 0.9, 40),
            ],
            marks: Vec::new(),
        };
        let round = Window {
            from_ms: 600,
            to_ms: 1600,
        };
        let r = s.summary_in("proxy", round).unwrap();
        assert_eq!((r.rss_start_bytes, r.rss_peak_bytes), (20, 30));
        assert!((r.cpu_mean_cores - 0.6).abs() < 1e-9, "{r:?}");
        // A window with samples inside still uses only those.
        let r = s
            .summary_in(
                "proxy",
                Window {
                    from_ms: 350,
                    to_ms: 500,
                },
            )
            .unwrap();
        assert_eq!((r.rss_trough_bytes, r.rss_peak_bytes), (10, 20));
        // Past the last sample, or before the first, nothing spans the window.
        for (from_ms, to_ms) in [(2500, 2600), (0, 300)] {
            let w = Window { from_ms, to_ms };
            assert!(s.summary_in("proxy", w).is_err(), "{w:?}");
        }
    }

    #[test]
    fn other_processes_cpu_leaves_out_ours_and_the_kernels_interrupt_time() {
        let sample = |t_ms, irq_cores| Sample {
            t_ms,
            targets: vec![TargetSample {
                name: "proxy".into(),
                cpu_cores: 0.6,
                rss_bytes: 1,
                processes: 1,
            }],
            generator_cpu_cores: 0.7,
            core_busy: vec![0.9, 1.0],
            irq_cores,
        };
        let s = Samples {
            interval_ms: 100,
            samples: vec![sample(100, 0.5), sample(200, 0.1)],
            marks: Vec::new(),
        };
        let w = Window {
            from_ms: 0,
            to_ms: 200,
        };
        // 1.9 busy - 0.6 target - 0.7 generator - the softirq time (0.5, then 0.1).
        assert!(
            (s.other_cpu_mean(w) - 0.3).abs() < 1e-9,
            "{}",
            s.other_cpu_mean(w)
        );
    }
}
