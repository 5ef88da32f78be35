//! What the one worker loop asks of a connection protocol. Two traits, both used through
//! generics only (the worker is monomorphised per protocol: no dynamic call, no allocation):
//! [`Connection`] for what the loop reads of one slot (timers, the live count, the end's
//! accounting), [`Protocol`] for what it asks of them all (start, events, the open model's
//! placement of a due request, the initial pool).

use super::Due;
use crate::ctx::Ctx;
use crate::pacer::Pacer;
use crate::WorkerLimits;
use loadbench_model::Stats;
use std::time::Instant;

/// One connection slot as the worker loop sees it.
pub(crate) trait Connection {
    /// Closed model: when a slot backed off after a failed connect may connect again.
    fn wake_at(&self) -> Instant;
    /// Has a socket (connecting or connected), for the live views' open-connection count.
    fn is_open(&self) -> bool;
    /// Holds a claimed request that has not finished.
    fn busy(&self) -> bool;
    /// Requests this slot completed in the measured window.
    fn completed(&self) -> u32;
    /// Measured requests written and unanswered: what `abandoned` counts at the end.
    fn abandoned(&self) -> u64;
    /// When the slot's oldest unanswered request was due (its own figure at the end).
    fn oldest(&self) -> Option<Instant>;
    /// When the request in flight as the window ended was due, if it was answered (or
    /// failed) only after the end, while its worker caught up: already censored then, it
    /// still left the slot waiting at the end.
    fn answered_late(&self) -> Option<Instant> {
        None
    }
    /// When each other unanswered request was due: censored at its age at the end.
    fn others(&self) -> impl Iterator<Item = Instant> + '_;
    /// The run is over: drops the socket.
    fn shut(&mut self);
}

/// A connection protocol driven by the worker loop: its connection slots (the token of slot
/// `i` is `i`) and what is its own in starting requests and reading responses.
pub(crate) trait Protocol<'a> {
    /// The protocol's connection slot.
    type Conn: Connection;

    /// Every connection slot, by index.
    fn conns(&self) -> &[Self::Conn];
    /// Every connection slot, by index.
    fn conns_mut(&mut self) -> &mut [Self::Conn];
    /// At the end, once every slot is accounted for and shut: frees the slots, so the
    /// result's histograms, built next, reuse their memory instead of adding to the peak
    /// (5,000 slots are about 1.7 MiB).
    fn release(&mut self);
    /// Closed model: slot `i` claims its next request(s) and starts them, connecting first
    /// if it has no connection.
    fn begin(&mut self, ctx: &mut Ctx<'a>, i: usize, now: Instant);
    /// A readiness event for token `i`: slot `i`'s, if it is one (the pacer's timer is not);
    /// `closed`: the peer's FIN (or an error) is queued.
    fn on_event(&mut self, ctx: &mut Ctx<'a>, i: usize, closed: bool);
    /// Open model: slot `i` was put on the retry list (its connection was lost or failed).
    fn lost(&mut self, ctx: &mut Ctx<'a>, pacer: &mut Pacer<'a>, i: usize, now: Instant);
    /// Housekeeping: fails connects and requests past their timeouts.
    fn expire(&mut self, ctx: &mut Ctx<'a>, now: Instant, limits: &WorkerLimits);

    /// Open model: places every due request (see [`Due`]); whether one was left without a
    /// connection (the loop then sleeps until an event or the pool may grow).
    fn send_due(&mut self, due: &mut Due<'_, 'a>) -> bool;
    /// Open model: requests taken back unprocessed (an HTTP/2 GOAWAY) that go again before
    /// the next due one.
    fn requeued(&self) -> usize {
        0
    }
    /// Open model, growing the pool: whether another connect may begin (beside the connect
    /// limit, which the loop checks).
    fn may_connect(&self, ctx: &Ctx<'a>, max: usize) -> bool;
    /// Open model, growing the pool: how many of the waiting requests (oldest first) the
    /// connects in progress will serve.
    fn covered(&self, ctx: &Ctx<'a>) -> u64;
    /// Open model, growing the pool: begins one connect toward at most `max` slots;
    /// whether the pool may grow on (`false`: no slot, or the connect failed at once).
    fn connect_more(&mut self, ctx: &mut Ctx<'a>, max: usize, now: Instant) -> bool;
    /// Open model, the initial pool: one more slot, connecting with no request of its own.
    fn add_to_pool(&mut self, ctx: &mut Ctx<'a>, now: Instant);
    /// Open model: the initial pool has opened (or its connect timeout passed); how many of
    /// its connections can take requests.
    fn pool_opened(&mut self, ctx: &mut Ctx<'a>) -> usize;

    /// When a timer of the protocol's own is next due (QUIC's), for the poll's wait.
    fn next_timer(&self) -> Option<Instant> {
        None
    }
    /// After each poll: the protocol's own timers due by `now`.
    fn on_timers(&mut self, _ctx: &mut Ctx<'a>, _now: Instant) {}

    /// Connections the protocol holds outside its slots (`--ws-idle`): begins a few more;
    /// whether more may begin at once (the loop then polls without waiting). None by default.
    fn open_held(&mut self, _ctx: &mut Ctx<'a>, _now: Instant) -> bool {
        false
    }

    /// At the end: requests the protocol holds outside its slots (none by default).
    fn account_waiting(&mut self, _ctx: &mut Ctx<'a>, _end: Instant) {}
    /// At the end: the protocol's own figures into the worker's statistics.
    fn add_stats(&mut self, _stats: &mut Stats) {}
    /// Whether its reads time each response by the kernel's receive stamp when
    /// `Ctx::stamped` (then the open-model worker may read late, see `Worker::wait`).
    fn stamps_arrivals(&self) -> bool {
        false
    }
}
