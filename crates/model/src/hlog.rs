//! The HdrHistogram interval log of a run (`--hlog`, issue 15): one interval per second of the
//! measured window, in the standard text format (`#[StartTime: …]`, `#[BaseTime: …]`, the
//! legend line, then `Tag=…,start,length,max,histogram` lines with V2 + DEFLATE histograms in
//! base64) that HistogramLogAnalyzer and every HdrHistogram library read, so shard timelines
//! can be inspected and merged by existing tools. Built from the result's per-second series,
//! which already holds each second's histogram: no extra recording on the hot path.
//! Values are nanoseconds; the max column is in milliseconds (`MaxValueDivisor` 1e6, a
//! comment the writer puts after the legend). Each second keeps the series' precision (2
//! significant digits, values within 1%).

use crate::result::RunResult;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The interval log of `r`; `window_start` is the wall clock of series second 0 (the
/// measured window's start), written as both StartTime and BaseTime. The tag is `shard-I`
/// for a shard's result, `merged` for a merge of several, else `run`.
pub fn interval_log(r: &RunResult, window_start: SystemTime) -> String {
    let secs = window_start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let mut head = String::new();
    let _ = writeln!(
        head,
        "#[Histogram log of loadbench {}: {} latency, ns]",
        r.loadbench_version, r.config.url
    );
    let _ = writeln!(
        head,
        "#[StartTime: {secs:.3} (seconds since epoch), {}]",
        r.started_at
    );
    let _ = writeln!(head, "#[BaseTime: {secs:.3} (seconds since epoch)]");
    head.push_str("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
    let mut out = head.into_bytes();
    write_intervals(r, &tag_of(r), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// `shard-I`, `merged` or `run`.
fn tag_of(r: &RunResult) -> String {
    match r.shards.as_ref().map(|s| s.shards.as_slice()) {
        Some([one]) => format!("shard-{}", one.index),
        Some(_) => "merged".to_string(),
        None => "run".to_string(),
    }
}

/// One interval per series point: start = its second, length 1 s (the last one as long as
/// what remains of the window).
fn write_intervals(r: &RunResult, tag: &str, out: &mut Vec<u8>) {
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1e6)
        .begin_log_with(out, &mut serializer)
        .expect("writing into memory cannot fail");
    let window = Duration::from_micros(r.stats.elapsed_us);
    for p in &r.stats.series.0 {
        let start = Duration::from_secs(u64::from(p.second));
        let length = window
            .saturating_sub(start)
            .clamp(Duration::from_millis(1), Duration::from_secs(1));
        writer
            .write_histogram(&p.histogram().inner(), start, length, Tag::new(tag))
            .expect("writing into memory cannot fail");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::Histogram;

    const FIXTURE: &str = include_str!("../tests/fixtures/result-v3.json");

    #[test]
    fn the_log_reads_back_with_every_completed_request() {
        let r = RunResult::from_json(FIXTURE).unwrap();
        let at = UNIX_EPOCH + Duration::from_millis(1_795_543_200_250);
        let log = interval_log(&r, at);
        assert!(log.contains("#[StartTime: 1795543200.250 (seconds since epoch), "));
        assert!(log.contains("\n\"StartTimestamp\",\"Interval_Length\""));
        let (mut count, mut intervals, mut base) = (0u64, 0usize, None);
        for entry in IntervalLogIterator::new(log.as_bytes()) {
            match entry.unwrap() {
                LogEntry::BaseTime(t) => base = Some(t),
                LogEntry::Interval(h) => {
                    assert_eq!(h.tag().unwrap().as_str(), "shard-1");
                    assert_eq!(h.start_timestamp(), Duration::from_secs(intervals as u64));
                    let bytes = base64::Engine::decode(
                        &base64::engine::general_purpose::STANDARD,
                        h.encoded_histogram(),
                    )
                    .unwrap();
                    let hist: Histogram<u64> = Deserializer::new()
                        .deserialize(&mut bytes.as_slice())
                        .unwrap();
                    assert!((h.max() - hist.max() as f64 / 1e6).abs() < 1e-3);
                    count += hist.len();
                    intervals += 1;
                }
                LogEntry::StartTime(_) => {}
            }
        }
        assert_eq!(base, Some(Duration::from_millis(1_795_543_200_250)));
        assert_eq!(intervals, r.stats.series.0.len());
        assert_eq!(count, r.stats.requests);
    }
}
