//! Watching the sockets of some ports for as long as a load runs. One thread per process does
//! the reading for every watch open at the time (a bench step's watch and its round's run
//! watch overlap): one kernel dump of the union of their ports per interval, tallied per
//! watch. A dump walks the kernel's whole socket hash table whatever it returns, so two
//! threads reading the same host would cost twice as much for nothing.

use super::{diag, port_range, read_counters, Tally, NO_SOCKET_WATCH_ENV, SOCKET_INTERVAL};
use loadbench_model::{EphemeralPorts, KernelEvidence, PortSockets, TcpCounters};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// One reading in this many reads every socket on the ports; the others read only their
/// listeners (the accept queue changes fast, the rest slowly). A reading of every socket walks
/// the kernel's whole connection hash table, about a millisecond of CPU under load; reading
/// only listeners skips it. IPv6 is read in a full reading while there are IPv6 sockets on the
/// ports, and checked in every full reading otherwise.
const FULL_EVERY: u64 = 10;

/// One watch's ports and what the readings saw on them.
#[derive(Debug)]
struct Watching {
    id: u64,
    ports: Vec<u16>,
    peak: PortSockets,
    in_use: u64,
}

impl Watching {
    fn add(&mut self, (s, toward): (PortSockets, u64)) {
        self.peak.peak(&s);
        self.in_use = self.in_use.max(toward);
    }
}

/// The watches open in this process, and whether the reading thread runs.
#[derive(Debug, Default)]
struct Shared {
    watches: Vec<Watching>,
    next_id: u64,
    thread_running: bool,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    watches: Vec::new(),
    next_id: 0,
    thread_running: false,
});

fn shared() -> MutexGuard<'static, Shared> {
    SHARED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Watches the kernel from [`KernelWatch::start`] to [`KernelWatch::finish`].
#[derive(Debug)]
pub struct KernelWatch {
    id: u64,
    ports: Vec<u16>,
    started: Instant,
    counters: TcpCounters,
}

impl KernelWatch {
    /// Reads the counters and the sockets of `ports` now, then has them read every
    /// [`SOCKET_INTERVAL`] (every socket once a second, the listeners in between) until
    /// [`KernelWatch::finish`], which reads them all once more.
    pub fn start(ports: Vec<u16>) -> KernelWatch {
        let counters = read_counters();
        if std::env::var_os(NO_SOCKET_WATCH_ENV).is_some() {
            return KernelWatch {
                id: 0,
                ports,
                started: Instant::now(),
                counters,
            };
        }
        let mut watching = Watching {
            id: 0,
            ports: ports.clone(),
            peak: PortSockets::default(),
            in_use: 0,
        };
        if let Some(reading) = super::read_sockets(&ports) {
            watching.add(reading);
        }
        let mut s = shared();
        s.next_id += 1;
        watching.id = s.next_id;
        let id = watching.id;
        s.watches.push(watching);
        if !s.thread_running {
            s.thread_running = std::thread::Builder::new()
                .name("loadbench-kernel".into())
                .spawn(read_while_watched)
                .is_ok();
        }
        KernelWatch {
            id,
            ports,
            started: Instant::now(),
            counters,
        }
    }

    /// Stops watching and returns what the kernel saw: counter deltas and socket peaks.
    pub fn finish(mut self) -> KernelEvidence {
        let counters = read_counters();
        // A last full reading: what the end left behind (connections in TIME-WAIT hold ports).
        // Id 0: the socket watch was off.
        let last = match self.id {
            0 => None,
            _ => super::read_sockets(&self.ports),
        };
        let (sockets, in_use) = {
            let mut s = shared();
            let at = s.watches.iter().position(|w| w.id == self.id);
            at.map(|i| s.watches.swap_remove(i))
                .map_or_else(Default::default, |mut w| {
                    w.add(last.unwrap_or_else(|| Tally::default().finish()));
                    (w.peak, w.in_use)
                })
        };
        let (range_low, range_high) = port_range();
        let window_ms = self.started.elapsed().as_millis() as u64;
        let tcp = counters.since(&self.counters);
        KernelEvidence {
            window_ms,
            background_retransmits: background(&tcp, &counters, window_ms),
            ports: std::mem::take(&mut self.ports),
            tcp,
            sockets,
            ephemeral: EphemeralPorts {
                in_use_peak: in_use,
                range_low,
                range_high,
            },
            host: None,
        }
    }
}

/// The reading thread: every interval, one dump of all the watched ports, added to each watch;
/// it ends when no watch is left.
/// The host's retransmits (SYNs aside) over [`BACKGROUND`] right after the window, the load
/// stopped, scaled to the window: read only when the window counted enough to be judged
/// (`diagnose::RETRANSMITS_MIN`), so a quiet run pays nothing.
fn background(window: &TcpCounters, end: &TcpCounters, window_ms: u64) -> Option<f64> {
    let resent = |c: &TcpCounters| c.retransmitted_segments.saturating_sub(c.syn_retransmits);
    if resent(window) < loadbench_model::diagnose::RETRANSMITS_MIN || window_ms == 0 {
        return None;
    }
    std::thread::sleep(BACKGROUND);
    let after = read_counters().since(end);
    Some(resent(&after) as f64 * window_ms as f64 / BACKGROUND.as_millis() as f64)
}

/// How long the host's background is read after a window that retransmitted.
const BACKGROUND: std::time::Duration = std::time::Duration::from_millis(500);

fn read_while_watched() {
    let mut readings = 0u64;
    let mut ipv6_seen = true;
    loop {
        std::thread::sleep(SOCKET_INTERVAL);
        // The watches of this reading: their ids and ports, tallied as the sockets arrive.
        let watching: Vec<(u64, Vec<u16>)> = {
            let mut s = shared();
            if s.watches.is_empty() {
                s.thread_running = false;
                return;
            }
            s.watches.iter().map(|w| (w.id, w.ports.clone())).collect()
        };
        let mut ports: Vec<u16> = watching.iter().flat_map(|(_, p)| p.clone()).collect();
        ports.sort_unstable();
        ports.dedup();
        readings += 1;
        // The first full reading as the load starts, then one in every FULL_EVERY.
        let full = readings % FULL_EVERY == 1;
        let states = if full {
            diag::ALL_STATES
        } else {
            diag::LISTENERS
        };
        let ipv6 = ipv6_seen || full;
        let mut tallies: Vec<Tally> = watching.iter().map(|_| Tally::default()).collect();
        let Ok(v6) = diag::each_socket(&ports, ipv6, states, |d| {
            for (t, (_, p)) in tallies.iter_mut().zip(&watching) {
                t.add(&d, p);
            }
        }) else {
            continue;
        };
        if full {
            ipv6_seen = v6 > 0;
        }
        let mut s = shared();
        for (t, (id, _)) in tallies.into_iter().zip(&watching) {
            if let Some(w) = s.watches.iter_mut().find(|w| w.id == *id) {
                w.add(t.finish());
            }
        }
    }
}
