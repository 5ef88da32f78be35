//! `--script` on a connection: a script's `request()` builds the request (one, or a batch of
//! pipelined ones, each answered and counted), its `response()` reads each answer and its
//! `delay()` waits before the next request (closed model). None of this runs without a
//! script that defines the hook: the worker's flags (`Ctx::script_*`) decide.

use super::{Conn, Phase};
use crate::ctx::Ctx;
use loadbench_model::ErrorKind;
use loadbench_plan::{split_answer, MAX_KEPT_RESPONSE};
use std::time::{Duration, Instant};

impl Conn {
    /// The script builds the claimed request into `out`. A failed `request()` is the `script`
    /// error class (nothing is sent) and the connection takes the next request on the next
    /// loop turn; returns whether there is a request to send.
    pub(super) fn script_request(&mut self, ctx: &mut Ctx, now: Instant) -> bool {
        let Some(script) = ctx.script.as_mut() else {
            return true;
        };
        self.out.clear();
        let built = script.request(&mut self.out);
        let stopped = script.stopped();
        if stopped {
            ctx.script_stop();
        }
        match built {
            Ok(batch) => {
                self.script_head = Some(batch.head);
                self.batch_len = batch.count.max(1);
                self.batch_left = self.batch_len - 1;
                if self.batch_left > 0 {
                    ctx.claim_more(self.measured, u64::from(self.batch_left));
                }
                true
            }
            Err(_) => {
                self.out.clear();
                self.batch_len = 1;
                self.batch_left = 0;
                if self.measured && ctx.in_window(now) {
                    ctx.recorder.error(now, ErrorKind::Script, 0);
                }
                if ctx.open {
                    self.go_idle(ctx, now);
                } else {
                    self.phase = Phase::Idle;
                    ctx.retry.push(self.token.0);
                }
                false
            }
        }
    }

    /// A batch's requests after the first went out with it: each is a sent request.
    #[cold]
    pub(super) fn batch_sent(&mut self, ctx: &mut Ctx, now: Instant, free: Instant) {
        for _ in 1..self.batch_len {
            ctx.recorder.sent(now, self.intended, free);
        }
    }

    /// A batch failed with `batch_left` answers still to come: each of them fails too.
    #[cold]
    pub(super) fn batch_failed(&mut self, ctx: &mut Ctx, kind: ErrorKind, now: Instant) {
        for _ in 0..self.batch_left {
            ctx.recorder.error(now, kind, 0);
        }
    }

    /// A batch's connection ended with answers still to come: each fails as closed before
    /// its answer (counted when the batch is recorded).
    #[cold]
    pub(super) fn batch_cut(&mut self, ctx: &mut Ctx, records: bool, now: Instant) {
        if records {
            self.batch_failed(ctx, ErrorKind::ClosedBeforeResponseComplete, now);
        }
        self.batch_left = 0;
    }

    /// An answer of a batch that has more to come, complete at `end` of the `n` bytes read:
    /// recorded (after `response()`, if the script reads answers), then the parser starts on
    /// the next answer, whose first bytes may follow in the same read.
    #[cold]
    pub(super) fn batch_answered(&mut self, ctx: &mut Ctx, now: Instant, end: usize, n: usize) {
        if ctx.script_reads {
            let keep = self.kept.len().saturating_sub(n - end);
            self.kept.truncate(keep);
        }
        let verdict = if ctx.script_reads {
            self.script_response(ctx)
        } else {
            Ok(())
        };
        self.read_bytes = self.read_bytes.saturating_sub((n - end) as u64);
        self.record(ctx, now, verdict);
        self.batch_left -= 1;
        self.read_bytes = (n - end) as u64;
        self.kept.clear();
        if ctx.script_reads {
            self.keep(&ctx.buf[end..n]);
        }
        self.parser.reset(self.script_head.unwrap_or(false));
        if end < n {
            self.first_byte(ctx, now);
        }
    }

    /// Keeps answer bytes for `response()` (at most [`MAX_KEPT_RESPONSE`]).
    pub(super) fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_KEPT_RESPONSE.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The script's `response()` on the complete answer kept: `Err` when it failed (the
    /// `script_response` class: the answer came, the script could not take it).
    pub(super) fn script_response(&mut self, ctx: &mut Ctx) -> Result<(), ErrorKind> {
        let Some(script) = ctx.script.as_mut() else {
            return Ok(());
        };
        let mut body = std::mem::take(&mut ctx.answer_body);
        let head = split_answer(&self.kept, &mut body);
        let status = self.parser.status();
        let verdict = script
            .response(status, head, &body)
            .map_err(|_| ErrorKind::ScriptResponse);
        let stopped = script.stopped();
        ctx.answer_body = body;
        if stopped {
            ctx.script_stop();
        }
        verdict
    }

    /// Closed model: the script's `delay()` before the next request; the connection waits
    /// on the worker's backoff list (as a flow's think time does).
    pub(super) fn script_wait(&mut self, ctx: &mut Ctx, now: Instant) {
        let wait = match ctx.script.as_mut().map(|s| s.delay()) {
            Some(Ok(d)) => d,
            _ => Duration::ZERO,
        };
        if wait.is_zero() {
            return self.begin(ctx, now);
        }
        self.phase = Phase::Idle;
        self.wake_at = now + wait;
        ctx.backoff.push(self.token.0);
    }
}
