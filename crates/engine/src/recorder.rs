//! The per-worker recorder: HDR histograms, counters and the per-second series, owned by one
//! worker thread and updated without locks or allocation. Each worker's recorder becomes one
//! [`Stats`], and the workers' stats are merged once at the end.

use loadbench_model::{
    BodySizes, EndpointStats, ErrorCounts, ErrorKind, ErrorReason, ErrorReasons, FlowStats,
    GrpcStats, Histo, Latency, PerConnection, ReopenReason, ReopenReasons, RequestPhases,
    SecondCounts, Series, SeriesPoint, Stats, StatusCounts, TlsStats,
};
use std::time::{Duration, Instant};

/// A send more than this after its intended time counts as late (beyond the send window, in
/// the open model: a request due just after a batch left waits for the next one, on purpose).
pub const LATE: Duration = Duration::from_millis(1);

/// Status codes 100–999 counted in a flat array: no map lookup per response.
const STATUS_SLOTS: usize = 1000;

/// One worker's measurements: histograms, counters and the per-second series of the measured
/// window, turned into [`Stats`] by [`Recorder::finish`].
pub struct Recorder {
    /// Start of the measured window (after warm-up).
    t0: Instant,
    /// End of the current second of the series (`t0` + `second` + 1 s): a time before it
    /// needs no division to place.
    second_end: Instant,
    /// Open model: service time and send lag are recorded apart from latency.
    open: bool,
    /// A send lag above this counts as late: [`LATE`] past the send window.
    late: Duration,
    latency: Histo,
    service: Histo,
    send_lag: Histo,
    /// Open model: the generator's own part of each send lag (see [`Recorder::sent`]).
    generator_delay: Histo,
    connect: Histo,
    /// `https://`: TLS handshakes, after the connect (allocated only for TLS runs).
    tls: Option<Box<TlsStats>>,
    first_byte: Histo,
    /// hey's split of each completed request: write, wait, read.
    write: Histo,
    wait: Histo,
    read: Histo,
    /// Ages of requests that never got an answer (cold path: past the deadline or at the end).
    censored: Histo,
    per_connection: PerConnection,
    waiting: u64,
    stale_retries: u64,
    pipeline_resent: u64,
    stale_closes: u64,
    connect_backoffs: u64,
    backoff_us: u64,
    status: Box<[u64; STATUS_SLOTS]>,
    body: BodySizes,
    keepalive_requests: u64,
    errors: [u64; ErrorKind::ALL.len()],
    reasons: [u64; ErrorReason::ALL.len()],
    reopens: [u64; ReopenReason::ALL.len()],
    requests: u64,
    sent: u64,
    sent_late: u64,
    bytes_read: u64,
    bytes_written: u64,
    connections_opened: u64,
    second: u32,
    second_counts: SecondCounts,
    /// Connects begun in the current second.
    second_connects: u64,
    second_latency: Histo,
    series: Vec<SeriesPoint>,
    /// A gRPC load's answers by `grpc-status`, from its first answer on (`None` otherwise).
    grpc: Option<Box<GrpcTally>>,
    /// A request mix: each request's own counts (empty without a mix).
    endpoints: Vec<EndpointRecorder>,
    /// A flow's iterations (`None` without a flow).
    flow: Option<FlowStats>,
}

/// One request of a mix: what [`EndpointStats`] holds, in the recorder's flat arrays.
struct EndpointRecorder {
    requests: u64,
    status: Box<[u64; STATUS_SLOTS]>,
    errors: [u64; ErrorKind::ALL.len()],
    latency: Histo,
}

impl EndpointRecorder {
    fn new() -> Self {
        EndpointRecorder {
            requests: 0,
            status: Box::new([0; STATUS_SLOTS]),
            errors: [0; ErrorKind::ALL.len()],
            latency: Histo::new(),
        }
    }

    /// Its statistics, labelled by index only (the engine adds method, URL and weight).
    fn finish(self, index: usize) -> EndpointStats {
        EndpointStats {
            index: index as u32,
            requests: self.requests,
            errors: ErrorCounts::from_array(&self.errors),
            status: status_counts(&self.status),
            latency: Latency { hist: self.latency },
            ..Default::default()
        }
    }
}

/// A worker's gRPC calls by how they ended, counted without allocating: `codes[c]` for
/// `grpc-status` `c` (0 to 16; the last entry any other value), `no_status` for an answer
/// without one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct GrpcTally {
    /// By code; `[17]`: a value that is no code of the protocol.
    codes: [u64; 18],
    /// Answers without a `grpc-status`.
    no_status: u64,
    /// Response messages received whole, over all the counted answers.
    messages: u64,
    /// Answers with an HTTP status of 200–399 that failed by gRPC (a non-`OK` status, or
    /// none): see `GrpcStats::failed_http_ok`.
    failed_http_ok: u64,
}

impl GrpcTally {
    /// One answer, with its HTTP status and the `grpc-status` it carried, if any.
    #[inline]
    /// Whether the call failed by gRPC alone (its HTTP status said success).
    fn count(&mut self, http: u16, status: Option<u16>) -> bool {
        match status {
            Some(c) => self.codes[usize::from(c).min(17)] += 1,
            None => self.no_status += 1,
        }
        let failed = status != Some(0) && (200..400).contains(&http);
        self.failed_http_ok += u64::from(failed);
        failed
    }

    fn stats(&self) -> GrpcStats {
        let failed = Some(self.failed_http_ok);
        let mut stats = GrpcStats::from_counts(&self.codes, self.no_status, failed);
        stats.messages = self.messages;
        stats
    }
}

fn status_counts(slots: &[u64; STATUS_SLOTS]) -> StatusCounts {
    let mut status = StatusCounts::default();
    for (code, &n) in slots.iter().enumerate().filter(|(_, &n)| n > 0) {
        status.add(code as u16, n);
    }
    status
}

impl Recorder {
    /// An empty recorder whose window starts at `t0`; `open` records service time and send lag
    /// apart from latency (the open model).
    pub fn new(t0: Instant, open: bool) -> Self {
        Recorder {
            t0,
            second_end: t0 + Duration::from_secs(1),
            open,
            late: LATE,
            latency: Histo::new(),
            service: Histo::new(),
            send_lag: Histo::new(),
            generator_delay: Histo::new(),
            connect: Histo::new(),
            tls: None,
            first_byte: Histo::new(),
            write: Histo::new(),
            wait: Histo::new(),
            read: Histo::new(),
            censored: Histo::new(),
            per_connection: PerConnection::default(),
            waiting: 0,
            stale_retries: 0,
            pipeline_resent: 0,
            stale_closes: 0,
            connect_backoffs: 0,
            backoff_us: 0,
            status: Box::new([0; STATUS_SLOTS]),
            body: BodySizes::default(),
            keepalive_requests: 0,
            errors: [0; ErrorKind::ALL.len()],
            reasons: [0; ErrorReason::ALL.len()],
            reopens: [0; ReopenReason::ALL.len()],
            requests: 0,
            sent: 0,
            sent_late: 0,
            bytes_read: 0,
            bytes_written: 0,
            connections_opened: 0,
            second: 0,
            second_counts: SecondCounts::default(),
            second_connects: 0,
            second_latency: Histo::per_second(),
            series: Vec::new(),
            grpc: None,
            endpoints: Vec::new(),
            flow: None,
        }
    }

    /// Keeps per-step statistics for a flow of `steps` steps (a one-step flow too) and the
    /// flow's iterations.
    pub fn with_flow(mut self, steps: usize) -> Self {
        self.endpoints = (0..steps).map(|_| EndpointRecorder::new()).collect();
        self.flow = Some(FlowStats::default());
        self
    }

    /// A flow iteration completed every step; `took` from its first step's start.
    #[inline]
    pub fn flow_completed(&mut self, took: Duration) {
        if let Some(f) = &mut self.flow {
            f.completed += 1;
            f.duration.hist.record_ns(Self::nanos(took));
        }
    }

    /// A flow iteration's first step was claimed in the measured window.
    #[inline]
    pub fn flow_started(&mut self) {
        if let Some(f) = &mut self.flow {
            f.started += 1;
        }
    }

    /// A flow iteration ended at a failed step.
    #[inline]
    pub fn flow_broken(&mut self) {
        if let Some(f) = &mut self.flow {
            f.broken += 1;
        }
    }

    /// Whether requests are counted per request of a mix or step of a flow.
    #[inline]
    pub fn per_endpoint(&self) -> bool {
        !self.endpoints.is_empty()
    }

    /// Keeps per-request statistics for a mix of `n` requests (none for fewer than two).
    pub fn with_endpoints(mut self, n: usize) -> Self {
        if n >= 2 {
            self.endpoints = (0..n).map(|_| EndpointRecorder::new()).collect();
        }
        self
    }

    /// Open model: sends wait up to `window` for their batch, so late means [`LATE`] past it.
    pub fn with_window(mut self, window: Duration) -> Self {
        self.late = LATE + window;
        self
    }

    /// The measured window starts `by` later (nothing may have been recorded yet).
    pub fn delay(&mut self, by: Duration) {
        self.t0 += by;
        self.second_end += by;
    }

    /// A complete response to request `endpoint` of the mix (besides [`Recorder::response`]).
    #[inline]
    pub fn endpoint_response(&mut self, endpoint: u16, latency: Duration, status: u16) {
        if let Some(e) = self.endpoints.get_mut(usize::from(endpoint)) {
            e.requests += 1;
            e.status[usize::from(status).min(STATUS_SLOTS - 1)] += 1;
            e.latency.record_ns(Self::nanos(latency));
        }
    }

    /// A failed request `endpoint` of the mix (besides [`Recorder::error`]).
    #[inline]
    pub fn endpoint_error(&mut self, endpoint: u16, kind: ErrorKind) {
        if let Some(e) = self.endpoints.get_mut(usize::from(endpoint)) {
            e.errors[kind.index()] += 1;
        }
    }

    /// Start of the measured window.
    pub fn t0(&self) -> Instant {
        self.t0
    }

    /// Whether `at` lies in the measured window.
    #[inline]
    pub fn measuring(&self, at: Instant) -> bool {
        at >= self.t0
    }

    #[inline]
    fn nanos(d: Duration) -> u64 {
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
    }

    /// A complete response at `now` of a measured request: `latency` from its intended send
    /// time; in the open model also its service time, from its actual send at `sent` (the
    /// same in the closed model).
    #[inline]
    pub fn response(
        &mut self,
        now: Instant,
        latency: Duration,
        sent: Instant,
        status: u16,
        bytes_read: u64,
    ) {
        self.roll(now);
        let ns = Self::nanos(latency);
        self.latency.record_ns(ns);
        self.second_latency.record_ns(ns);
        if self.open {
            let service = now.saturating_duration_since(sent);
            self.service.record_ns(Self::nanos(service));
        }
        self.requests += 1;
        self.second_counts.requests += 1;
        self.second_counts.failed += u64::from(!(200..400).contains(&status));
        self.status[usize::from(status).min(STATUS_SLOTS - 1)] += 1;
        self.add_read(bytes_read);
    }

    /// A measured gRPC call's answer (recorded by [`Recorder::response`] already): counted by
    /// its `grpc-status` (`None`: it had none) with its whole response `messages`; one that
    /// failed by gRPC alone is a failed answer of this second.
    #[inline]
    pub fn grpc_answer(&mut self, http: u16, status: Option<u16>, messages: u32) {
        let tally = self.grpc.get_or_insert_with(Box::default);
        tally.messages += u64::from(messages);
        if tally.count(http, status) {
            self.second_counts.failed += 1;
        }
    }

    /// The body of a measured complete response had `n` payload bytes; `reused`: it came on
    /// a connection that had already answered (ab's Keep-Alive requests).
    #[inline]
    pub fn body(&mut self, n: u64, reused: bool) {
        self.body.add(n);
        self.keepalive_requests += u64::from(reused);
    }

    /// A measured request was sent at `now`; it was due at `intended`, and its connection
    /// (stream, pipeline slot) was free for it from `free` on. Returns when its latency
    /// counts from.
    ///
    /// In the open model the send lag splits in two. Waiting for a connection (`free` after
    /// `intended`: every connection was busy, or a new one was connecting) is the target's
    /// doing and stays in the latency: that is what keeps it free of coordinated omission.
    /// The rest, from when the request was both due and had a connection to when it left
    /// (the send window's batching, the worker busy with other events), is the generator's
    /// own delay: recorded apart as `generator_delay` and taken out of the latency, so a
    /// fast target is not charged with the generator's wait. The whole lag is kept as
    /// `send_lag`, and what counts as sent late is unchanged.
    #[inline]
    pub fn sent(&mut self, now: Instant, intended: Instant, free: Instant) -> Instant {
        self.roll(now);
        self.sent += 1;
        self.second_counts.sent += 1;
        if !self.open {
            return intended;
        }
        let lag = now.saturating_duration_since(intended);
        self.send_lag.record_ns(Self::nanos(lag));
        if lag > self.late {
            self.sent_late += 1;
        }
        let own = now.saturating_duration_since(intended.max(free));
        self.generator_delay.record_ns(Self::nanos(own));
        intended + own
    }

    /// A measured request sent again on a new connection after its reused connection turned
    /// out dead: counted in `sent` again, but its send lag was recorded the first time.
    #[cold]
    pub fn resent(&mut self, now: Instant) {
        self.roll(now);
        self.sent += 1;
        self.second_counts.sent += 1;
    }

    /// A measured request written (at `sent_at`) into a keep-alive connection the peer had
    /// closed: it never reached the server and will be sent again, so its first send is taken
    /// back, from the second it was counted in (which may have closed since), so that the
    /// per-second `sent` adds up to the total exactly.
    #[cold]
    pub fn stale_retry(&mut self, sent_at: Instant, now: Instant) {
        self.unsend(sent_at, now);
        self.stale_retries += 1;
        self.reopened(ReopenReason::StaleRetry);
    }

    /// `--pipeline`: a measured request written (at `sent_at`) behind one whose connection
    /// closed before answering it; it will be written again on a new connection, so its
    /// first send is taken back, like a stale retry's.
    #[cold]
    pub fn pipeline_resend(&mut self, sent_at: Instant, now: Instant) {
        self.unsend(sent_at, now);
        self.pipeline_resent += 1;
    }

    /// Takes back a measured request's send (at `sent_at`) because the server never processed
    /// it and it will be sent again (a stale keep-alive connection, or an HTTP/2 stream above
    /// a GOAWAY's last stream id), from the second it was counted in.
    #[cold]
    pub fn unsend(&mut self, sent_at: Instant, now: Instant) {
        self.roll(now);
        self.sent = self.sent.saturating_sub(1);
        let second = sent_at.saturating_duration_since(self.t0).as_secs();
        let second = u32::try_from(second).unwrap_or(u32::MAX);
        let counted = if second >= self.second {
            Some(&mut self.second_counts.sent)
        } else {
            let point = self.series.iter_mut().rev().find(|p| p.second == second);
            point.map(|p| &mut p.sent)
        };
        if let Some(sent) = counted {
            *sent = sent.saturating_sub(1);
        }
    }

    /// A connection was closed for `reason` (the server's doing) and a new one will be opened.
    #[cold]
    pub fn reopened(&mut self, reason: ReopenReason) {
        self.reopens[reason.index()] += 1;
    }

    /// An idle keep-alive connection was found closed by the peer and dropped before reuse.
    #[cold]
    pub fn stale_close(&mut self) {
        self.stale_closes += 1;
        self.reopened(ReopenReason::ClosedWhileIdle);
    }

    /// A reconnect was delayed by `wait` after a failed connect (closed model backoff).
    #[cold]
    pub fn backoff(&mut self, wait: Duration) {
        self.connect_backoffs += 1;
        self.backoff_us += u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
    }

    /// A measured request received its first response byte `ttfb` after it was written.
    #[inline]
    pub fn first_byte(&mut self, ttfb: Duration) {
        self.first_byte.record_ns(Self::nanos(ttfb));
    }

    /// A completed measured request's time split as hey does: writing the request, waiting
    /// from its last byte to the response's first, reading the response.
    #[inline]
    pub fn phases(&mut self, write: Duration, wait: Duration, read: Duration) {
        self.write.record_ns(Self::nanos(write));
        self.wait.record_ns(Self::nanos(wait));
        self.read.record_ns(Self::nanos(read));
    }

    /// A measured connection was established, `took` after the connect began.
    #[inline]
    pub fn connected(&mut self, took: Duration) {
        self.connect.record_ns(Self::nanos(took));
        self.connections_opened += 1;
    }

    /// A measured connection finished its TLS handshake, `took` after its TCP connect;
    /// `resumed`: it resumed an earlier session.
    #[cold]
    pub fn handshake(&mut self, took: Duration, resumed: bool) {
        let tls = self.tls.get_or_insert_with(Box::default);
        tls.handshake.hist.record_ns(Self::nanos(took));
        if resumed {
            tls.resumed += 1;
        } else {
            tls.full += 1;
        }
    }

    /// A measured request that produced no complete response.
    #[inline]
    pub fn error(&mut self, now: Instant, kind: ErrorKind, bytes_read: u64) {
        self.roll(now);
        self.errors[kind.index()] += 1;
        self.second_counts.errors += 1;
        self.add_read(bytes_read);
    }

    #[inline]
    fn add_read(&mut self, n: u64) {
        self.bytes_read += n;
        self.second_counts.bytes_read += n;
    }

    /// A request that got no answer in the window, counted at `age` (a lower bound of its
    /// latency) in the censored distribution.
    #[cold]
    pub fn censor(&mut self, age: Duration) {
        self.censored.record_ns(Self::nanos(age));
    }

    /// Open model: a request due `age` ago that was never sent (no connection was free).
    pub fn waited(&mut self, age: Duration) {
        self.censor(age);
        self.waiting += 1;
    }

    /// Open model: `n` requests due about `age` ago (the oldest of them) never sent, at once:
    /// at the end of a run that fell far behind its schedule.
    #[cold]
    pub fn waited_n(&mut self, age: Duration, n: u64) {
        self.censored.record_ns_n(Self::nanos(age), n);
        self.waiting += n;
    }

    /// One connection at the end: its completed requests and, if one is still in flight,
    /// that request's age (which is censored too), or the age at the window's end of the one
    /// answered only after it (censored when it was answered).
    pub fn connection_end(
        &mut self,
        completed: u32,
        in_flight: Option<Duration>,
        answered_late: Option<Duration>,
    ) {
        if let Some(age) = in_flight {
            self.censor(age);
        }
        // A request answered after the window's end was censored then (not again here), and
        // it kept the connection waiting to the end: its age counts as the one in flight.
        let waited = in_flight.max(answered_late);
        let age_us = waited.map(|a| u64::try_from(a.as_micros()).unwrap_or(u64::MAX));
        self.per_connection.add(u64::from(completed), age_us);
    }

    /// Why a measured request failed, below its class (counted besides [`Recorder::error`]).
    #[cold]
    pub fn reason(&mut self, reason: ErrorReason) {
        self.reasons[reason.index()] += 1;
    }

    /// Request bytes written, for a request sent at `at`.
    #[inline]
    pub fn wrote(&mut self, at: Instant, n: u64) {
        self.roll(at);
        self.bytes_written += n;
        self.second_counts.bytes_written += n;
    }

    /// A connect begun at `at`, counted in its second if it is measured. One begun at or past
    /// the window's `end` (the worker had not noticed it yet) counts in the last second, so
    /// the series adds up to every connect of the window.
    pub fn connect_begun(&mut self, at: Instant, end: Option<Instant>) {
        if !self.measuring(at) {
            return;
        }
        let last = end.map(|e| e.checked_sub(Duration::from_nanos(1)).unwrap_or(e));
        self.roll(last.map_or(at, |l| at.min(l)));
        self.second_connects += 1;
    }

    /// Closes every second that has ended by `now`, so quiet seconds appear as zeros.
    pub fn tick(&mut self, now: Instant) {
        self.roll(now);
    }

    #[inline]
    fn roll(&mut self, now: Instant) {
        if now < self.second_end {
            return;
        }
        let sec = now.saturating_duration_since(self.t0).as_secs();
        let sec = u32::try_from(sec).unwrap_or(u32::MAX);
        while self.second < sec {
            self.close_second();
        }
    }

    #[cold]
    fn close_second(&mut self) {
        let mut point = SeriesPoint::new(self.second, self.second_counts, &self.second_latency);
        point.connects = std::mem::take(&mut self.second_connects);
        self.series.push(point);
        self.second_latency.reset();
        self.second_counts = SecondCounts::default();
        self.second += 1;
        self.second_end = self.t0 + Duration::from_secs(u64::from(self.second) + 1);
    }

    /// Requests completed and failed so far, for live progress.
    pub fn progress(&self) -> (u64, u64) {
        (self.requests, self.errors.iter().sum())
    }

    /// The counters a live view shows (no series: see [`Recorder::closed`]), with each
    /// request of a mix's or step of a flow's counts and a flow's iterations; a copy made at
    /// a housekeeping tick, never per request.
    pub fn pulse(&self) -> crate::pulse::Pulse {
        let mut status = StatusCounts::default();
        for (code, &n) in self.status.iter().enumerate().filter(|(_, &n)| n > 0) {
            status.add(code as u16, n);
        }
        crate::pulse::Pulse {
            requests: self.requests,
            sent: self.sent,
            errors: ErrorCounts::from_array(&self.errors),
            status,
            endpoints: self
                .endpoints
                .iter()
                .map(|e| (e.requests, e.errors.iter().sum()))
                .collect(),
            grpc: self.grpc.as_ref().map(|t| t.stats()).unwrap_or_default(),
            flow: self.flow.as_ref().map(|f| crate::pulse::FlowPulse {
                started: f.started,
                completed: f.completed,
                broken: f.broken,
            }),
            ..Default::default()
        }
    }

    /// The seconds closed so far, oldest first.
    pub fn closed(&self) -> &[SeriesPoint] {
        &self.series
    }

    /// Each request of the mix's statistics, by index (none without a mix).
    fn take_endpoints(&mut self) -> Vec<EndpointStats> {
        std::mem::take(&mut self.endpoints)
            .into_iter()
            .enumerate()
            .map(|(i, e)| e.finish(i))
            .collect()
    }

    /// Ends recording at `end` and returns the measurement.
    // why: one line per field of `Stats`, moved out of the recorder; split up, the literal
    // would only be scattered.
    #[allow(clippy::too_many_lines)]
    pub fn finish(mut self, end: Instant, abandoned: u64) -> Stats {
        self.roll(end);
        let partial = end.saturating_duration_since(self.t0).subsec_nanos() > 0;
        if partial || self.second_counts != SecondCounts::default() || self.second_connects > 0 {
            self.close_second();
        }
        self.censored.merge(&self.latency);
        let endpoints = self.take_endpoints();
        let elapsed = end.saturating_duration_since(self.t0).as_micros();
        Stats {
            elapsed_us: u64::try_from(elapsed).unwrap_or(u64::MAX),
            requests: self.requests,
            errors: ErrorCounts::from_array(&self.errors),
            error_reasons: ErrorReasons::from_array(&self.reasons),
            status: status_counts(&self.status),
            body: self.body,
            keepalive_requests: self.keepalive_requests,
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            connections_opened: self.connections_opened,
            sent: self.sent,
            scheduled: None,
            sent_late: self.sent_late,
            abandoned,
            waiting: self.waiting,
            stale_retries: self.stale_retries,
            pipeline_resent: self.pipeline_resent,
            stale_closes: self.stale_closes,
            reopen_reasons: ReopenReasons::from_array(&self.reopens),
            connect_backoffs: self.connect_backoffs,
            backoff_us: self.backoff_us,
            // Filled in by the worker, which owns the clocks.
            generator: Default::default(),
            pool: Default::default(),
            latency_censored: Latency {
                hist: self.censored,
            },
            per_connection: self.per_connection,
            service: Latency {
                hist: if self.open {
                    self.service
                } else {
                    self.latency.clone()
                },
            },
            send_lag: Latency {
                hist: self.send_lag,
            },
            generator_delay: Latency {
                hist: self.generator_delay,
            },
            latency: Latency { hist: self.latency },
            connect: Latency { hist: self.connect },
            tls: self.tls.map(|t| *t).unwrap_or_default(),
            protocols: Default::default(), // filled in by the HTTP/2 worker, as `h2`
            h2: Default::default(),
            ws: Default::default(),
            grpc: self.grpc.map(|t| t.stats()).unwrap_or_default(),
            first_byte: Latency {
                hist: self.first_byte,
            },
            phases: RequestPhases {
                write: Latency { hist: self.write },
                wait: Latency { hist: self.wait },
                read: Latency { hist: self.read },
            },
            endpoints,
            flow: self.flow,
            series: Series(self.series),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 11: a request sent late in one second and retried (dead keep-alive connection)
    /// in the next counts as sent once, in the second it was finally sent.
    #[test]
    fn a_stale_retry_across_a_second_boundary_is_sent_once_in_its_final_second() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut r = Recorder::new(t0, false);
        r.sent(at(100), at(100), at(100));
        r.sent(at(900), at(900), at(900));
        r.stale_retry(at(900), at(1100));
        r.resent(at(1100));
        let s = r.finish(at(1500), 0);
        let sent: Vec<u64> = s.series.0.iter().map(|p| p.sent).collect();
        assert_eq!(sent, vec![1, 1]);
        assert_eq!(s.sent, 2);
        assert_eq!(s.stale_retries, 1);
    }

    /// Issue 36: the open model's send lag splits into the wait for a connection (the
    /// target's, kept in the latency) and the generator's own delay (taken out of it).
    #[test]
    fn the_generator_s_own_delay_is_recorded_apart_and_waiting_for_a_connection_is_not() {
        let t0 = Instant::now();
        let at = |us| t0 + Duration::from_micros(us);
        let mut r = Recorder::new(t0, true);
        // Due at 100 µs on a connection idle since 0, sent at 700 µs (a send window): the
        // 600 µs are the generator's, latency counts from 700.
        assert_eq!(r.sent(at(700), at(100), at(0)), at(700));
        // Due at 1000 µs, every connection busy until 1500 (the target's), sent at 1510:
        // 10 µs are the generator's, latency counts from 1010.
        assert_eq!(r.sent(at(1510), at(1000), at(1500)), at(1010));
        // Due and sent at once on a connection free since before.
        assert_eq!(r.sent(at(2000), at(2000), at(1900)), at(2000));
        let s = r.finish(at(3000), 0);
        let own = &s.generator_delay.hist;
        assert_eq!(own.len(), 3);
        assert_eq!((own.max_ns() + 500) / 1000, 600);
        assert!(own.min_ns() <= 1_000, "the third had no delay");
        // The whole lag stays in send_lag: 600, 510 and 0 µs.
        assert_eq!((s.send_lag.hist.max_ns() + 500) / 1000, 600);
        assert!((s.send_lag.hist.percentile_ns(50.0) / 1000).abs_diff(510) <= 1);
        // The closed model has no split: latency counts from the intended (= sent) time.
        let mut closed = Recorder::new(t0, false);
        assert_eq!(closed.sent(at(700), at(100), at(0)), at(100));
    }

    #[test]
    fn seconds_roll_over_and_quiet_seconds_are_zero() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0, false);
        r.response(
            t0 + Duration::from_millis(100),
            Duration::from_micros(50),
            t0 + Duration::from_millis(100) - Duration::from_micros(50),
            200,
            10,
        );
        r.response(
            t0 + Duration::from_millis(2500),
            Duration::from_micros(70),
            t0 + Duration::from_millis(2500) - Duration::from_micros(70),
            404,
            10,
        );
        r.error(t0 + Duration::from_millis(2600), ErrorKind::Reset, 0);
        let s = r.finish(t0 + Duration::from_millis(2700), 1);
        let reqs: Vec<u64> = s.series.0.iter().map(|p| p.requests).collect();
        assert_eq!(reqs, vec![1, 0, 1]);
        assert_eq!(s.series.0[2].errors, 1);
        assert_eq!(s.requests, 2);
        assert_eq!(s.status.0.get(&404), Some(&1));
        assert_eq!(s.errors.get(ErrorKind::Reset), 1);
        assert_eq!(s.bytes_read, 20);
        assert_eq!(s.abandoned, 1);
        assert_eq!(s.elapsed_us, 2_700_000);
    }

    #[test]
    fn a_pulse_carries_each_step_and_the_flow_iterations() {
        let t0 = Instant::now();
        let at = t0 + Duration::from_millis(10);
        let mut r = Recorder::new(t0, false).with_flow(2);
        r.flow_started();
        r.response(at, Duration::from_micros(40), at, 200, 10);
        r.endpoint_response(0, Duration::from_micros(40), 200);
        r.error(at, ErrorKind::CheckFailed, 0);
        r.endpoint_error(1, ErrorKind::CheckFailed);
        r.flow_broken();
        r.flow_started();
        r.endpoint_response(0, Duration::from_micros(40), 200);
        r.endpoint_response(1, Duration::from_micros(40), 200);
        r.flow_completed(Duration::from_millis(1));
        let p = r.pulse();
        assert_eq!(p.endpoints, vec![(2, 0), (1, 1)]);
        let flow = p.flow.unwrap();
        assert_eq!((flow.started, flow.completed, flow.broken), (2, 1, 1));
        let plain = Recorder::new(t0, false).with_endpoints(1).pulse();
        assert!(plain.endpoints.is_empty() && plain.flow.is_none());
        let mix = Recorder::new(t0, false).with_endpoints(3).pulse();
        assert_eq!(mix.endpoints, vec![(0, 0); 3]);
        assert!(mix.flow.is_none());
    }
}
