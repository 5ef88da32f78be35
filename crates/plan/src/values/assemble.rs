//! Assembling a request with values: the engine's hot path. A request's [`Draw`] (its place in
//! the sequence, its random number) is taken when it is claimed; [`Source::assemble`] writes
//! the fixed pieces and each slot's value into the connection's buffer, with no parsing and
//! no allocation once the buffers have grown.

use super::expr::{Filter, NowFormat};
use super::{Compiled, DataSplit, Piece, Resolved, Values};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The golden ratio's 64-bit fraction: the splitmix64 increment.
pub(crate) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's finaliser: a well-mixed 64-bit number from any input.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A number below `n` from the random `x` (Lemire's multiply-shift; `n` > 0).
#[inline]
pub(crate) fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// What one request draws, fixed when it is claimed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Draw {
    /// Its place among this process's requests of the load (0, 1, 2, …).
    pub k: u64,
    /// Its random number (each random slot mixes its own from it).
    pub rand: u64,
}

impl Draw {
    /// A flow step's draw: the iteration's place, and a random number of its own per step.
    #[inline]
    pub fn step(self, i: u16) -> Draw {
        Draw {
            k: self.k,
            rand: mix64(self.rand ^ u64::from(i).wrapping_mul(GOLDEN)),
        }
    }
}

/// A worker's buffers for assembling (reused from request to request).
#[derive(Debug, Default)]
pub struct Scratch {
    body: Vec<u8>,
    value: Vec<u8>,
}

/// One worker's source of values: the load's [`Values`], the process's shared sequence
/// counter, the worker's random numbers and number.
#[derive(Debug)]
pub struct Source<'a> {
    values: &'a Values,
    counter: &'a AtomicU64,
    rng: u64,
    worker: u32,
    scratch: Scratch,
}

impl<'a> Source<'a> {
    /// Worker `worker`'s source; `counter` is shared by every worker of the process.
    pub fn new(values: &'a Values, counter: &'a AtomicU64, worker: u32) -> Source<'a> {
        let shard = u64::from(values.spec.shard.index());
        let rng = mix64(values.seed ^ mix64(shard << 32 | u64::from(worker)));
        Source {
            values,
            counter,
            rng,
            worker,
            scratch: Scratch::default(),
        }
    }

    /// Whether request `endpoint` is assembled per request.
    #[inline]
    pub fn templated(&self, endpoint: u16) -> bool {
        self.values.templated(endpoint)
    }

    /// The next request's draw: its place in the sequence and its random number.
    #[inline]
    pub fn draw(&mut self) -> Draw {
        self.rng = self.rng.wrapping_add(GOLDEN);
        Draw {
            k: self.counter.fetch_add(1, Ordering::Relaxed),
            rand: mix64(self.rng),
        }
    }

    /// The global place of draw `k`: `k·N + i` for shard `i` of `N`.
    #[inline]
    pub fn place(&self, k: u64) -> u64 {
        let s = self.values.spec.shard;
        k * u64::from(s.total()) + u64::from(s.index())
    }

    /// The data file's row of draw `k`.
    #[inline]
    fn row(&self, k: u64) -> usize {
        let v = self.values;
        let s = v.spec.shard;
        let local = k % v.rows_share.max(1);
        let at = match v.spec.data.as_ref().map(|d| d.split) {
            Some(DataSplit::Split) => local * u64::from(s.total()) + u64::from(s.index()),
            _ => local,
        } as usize;
        match &v.order {
            Some(order) => order[at] as usize,
            None => at,
        }
    }

    /// Assembles request `endpoint` (it must be templated) for `draw` on connection `conn`
    /// at the end of `out`.
    pub fn assemble(
        &mut self,
        endpoint: u16,
        draw: Draw,
        conn: u32,
        vars: &[Vec<u8>],
        out: &mut Vec<u8>,
    ) {
        let values = self.values;
        let Some(c) = values.requests[usize::from(endpoint)].as_ref() else {
            return;
        };
        self.assemble_text(c, draw, conn, vars, out);
    }

    /// Assembles a compiled text (a request, a flow's check) at the end of `out`; `vars`: a
    /// flow's captured variables (empty outside a flow).
    pub fn assemble_text(
        &mut self,
        c: &Compiled,
        draw: Draw,
        conn: u32,
        vars: &[Vec<u8>],
        out: &mut Vec<u8>,
    ) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut nth = 0u64;
        let env = Env {
            source: self,
            draw,
            conn,
            vars,
        };
        match &c.body {
            None => env.pieces(c, &c.head, out, &mut scratch.value, &mut nth),
            Some(body) => {
                let mut b = std::mem::take(&mut scratch.body);
                b.clear();
                env.pieces(c, &c.head, out, &mut scratch.value, &mut nth);
                env.pieces(c, body, &mut b, &mut scratch.value, &mut nth);
                out.extend_from_slice(b"Content-Length: ");
                write_u64(out, b.len() as u64);
                out.extend_from_slice(b"\r\n\r\n");
                out.extend_from_slice(&b);
                scratch.body = b;
            }
        }
        self.scratch = scratch;
    }
}

/// What one assembly reads.
struct Env<'s, 'a> {
    source: &'s Source<'a>,
    draw: Draw,
    conn: u32,
    vars: &'s [Vec<u8>],
}

impl Env<'_, '_> {
    #[inline]
    fn pieces(
        &self,
        c: &Compiled,
        pieces: &[Piece],
        out: &mut Vec<u8>,
        tmp: &mut Vec<u8>,
        nth: &mut u64,
    ) {
        for p in pieces {
            match *p {
                Piece::Lit(a, b) => out.extend_from_slice(&c.lits[a as usize..b as usize]),
                Piece::Slot(i) => {
                    let (value, filters) = &c.slots[usize::from(i)];
                    if filters.is_empty() {
                        self.value(c, value, out, nth);
                    } else {
                        tmp.clear();
                        self.value(c, value, tmp, nth);
                        filter(tmp, filters, out);
                    }
                }
            }
        }
    }

    /// The next random number of this request (its `nth` random slot).
    #[inline]
    fn random(&self, nth: &mut u64) -> u64 {
        *nth += 1;
        mix64(self.draw.rand.wrapping_add(nth.wrapping_mul(GOLDEN)))
    }

    fn value(&self, c: &Compiled, v: &Resolved, out: &mut Vec<u8>, nth: &mut u64) {
        match v {
            Resolved::Seq { start, step } => {
                let place = self.source.place(self.draw.k) as i64;
                write_i64(out, start.wrapping_add(step.wrapping_mul(place)));
            }
            Resolved::Int { min, span } => {
                let x = self.random(nth);
                let off = if *span == 0 { x } else { below(x, *span) };
                write_i64(out, min.wrapping_add(off as i64));
            }
            Resolved::Pick(items) => {
                let (a, b) = items[below(self.random(nth), items.len() as u64) as usize];
                out.extend_from_slice(&c.lits[a as usize..b as usize]);
            }
            Resolved::Uuid => {
                let (hi, lo) = (self.random(nth), self.random(nth));
                uuid(out, hi, lo);
            }
            Resolved::Now(f) => now(out, *f),
            Resolved::Shard => write_u64(out, self.source.values.spec.shard.index().into()),
            Resolved::Worker => write_u64(out, self.source.worker.into()),
            Resolved::Conn => write_u64(out, self.conn.into()),
            Resolved::Row(col) => {
                if let Some(data) = &self.source.values.data {
                    out.extend_from_slice(data.cell(self.source.row(self.draw.k), *col));
                }
            }
            Resolved::Text(a, b) => out.extend_from_slice(&c.lits[*a as usize..*b as usize]),
            Resolved::Var(i) => {
                if let Some(v) = self.vars.get(*i) {
                    out.extend_from_slice(v);
                }
            }
        }
    }
}

/// Writes `text` through `filters` into `out`.
fn filter(text: &mut Vec<u8>, filters: &[Filter], out: &mut Vec<u8>) {
    let mut cur = std::mem::take(text);
    for (i, f) in filters.iter().enumerate() {
        let last = i + 1 == filters.len();
        let mut next = Vec::new();
        let dst = if last { &mut *out } else { &mut next };
        match f {
            Filter::Url => {
                for &b in &cur {
                    if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                        dst.push(b);
                    } else {
                        dst.push(b'%');
                        dst.push(HEX[usize::from(b >> 4)]);
                        dst.push(HEX[usize::from(b & 15)]);
                    }
                }
            }
            Filter::Json => {
                for &b in &cur {
                    match b {
                        b'"' => dst.extend_from_slice(b"\\\""),
                        b'\\' => dst.extend_from_slice(b"\\\\"),
                        b'\n' => dst.extend_from_slice(b"\\n"),
                        b'\r' => dst.extend_from_slice(b"\\r"),
                        b'\t' => dst.extend_from_slice(b"\\t"),
                        0..=0x1f => {
                            dst.extend_from_slice(b"\\u00");
                            dst.push(HEX[usize::from(b >> 4)]);
                            dst.push(HEX[usize::from(b & 15)]);
                        }
                        _ => dst.push(b),
                    }
                }
            }
        }
        if !last {
            cur = next;
        }
    }
    cur.clear();
    *text = cur;
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

#[inline]
fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

#[inline]
fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// A version 4 (random) UUID, lower-case hex, from two random numbers.
fn uuid(out: &mut Vec<u8>, hi: u64, lo: u64) {
    let hi = (hi & !0xF000) | 0x4000;
    let lo = (lo & !(0xC000 << 48)) | (0x8000 << 48);
    let bytes: [u8; 16] = ((u128::from(hi) << 64) | u128::from(lo)).to_be_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[usize::from(b >> 4)].to_ascii_lowercase());
        out.push(HEX[usize::from(b & 15)].to_ascii_lowercase());
    }
}

/// The wall-clock time in format `f`.
fn now(out: &mut Vec<u8>, f: NowFormat) {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    match f {
        NowFormat::Millis => write_u64(out, t.as_millis() as u64),
        NowFormat::Seconds => write_u64(out, t.as_secs()),
        NowFormat::Rfc3339 => rfc3339(out, t.as_millis() as u64),
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for `ms` milliseconds since the epoch (UTC; the civil date from
/// the day count by the usual era arithmetic).
pub(crate) fn rfc3339(out: &mut Vec<u8>, ms: u64) {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let sod = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        ms % 1000
    );
}
