//! HTTP/2 for the load engine (`--http2`, `--streams N`): our own framing ([`frame`]), the
//! requests' header blocks encoded once and the responses' `:status` read with HPACK
//! ([`hpack`]), a connection that carries several streams ([`conn`]) and HTTP/2 as a protocol
//! of the one worker loop (`proto.rs`: where a due request goes, the streams' figures). It
//! sits beside the HTTP/1.1 path (`conn.rs`, `http1.rs`) and shares the worker loop, its
//! context, the transport and the recorder with it, so both record the same statistics the
//! same way.

pub mod conn;
pub mod frame;
pub mod hpack;
pub(crate) mod huffman;
pub mod once;
mod proto;

pub(crate) use proto::{Http2, StreamConn};

use hpack::H2Request;
use loadbench_model::{H2Stats, ProtocolCounts};
use loadbench_plan::Draw;

/// The run's HTTP/2 requests, encoded once (shared by all workers).
#[derive(Debug, Clone)]
pub struct H2Setup {
    /// Each endpoint's request (one without a mix), by the mix's index.
    pub requests: Vec<H2Request>,
    /// Requests in flight per connection (`--streams`).
    pub streams: u32,
    /// A `grpc://` load: each answer's `grpc-status` is counted (by the recorder).
    pub grpc: bool,
    /// `--http3`: the requests are QPACK field sections, the connections HTTP/3's.
    pub http3: bool,
}

impl H2Setup {
    /// Encodes every request of the plan; `Err` is one line.
    pub fn new(plan: &loadbench_plan::Plan, streams: u32) -> Result<H2Setup, String> {
        let https = plan.target.tls;
        let http3 = plan.tls.as_ref().is_some_and(|t| t.http3);
        let encode = |bytes: &[u8]| match http3 {
            true => crate::h3::request(bytes, https),
            false => H2Request::from_http1(bytes, https),
        };
        let requests = if plan.mix.is_empty() {
            vec![encode(&plan.request.bytes)?]
        } else {
            plan.mix
                .iter()
                .map(|e| encode(&e.request.bytes))
                .collect::<Result<_, _>>()?
        };
        Ok(H2Setup {
            requests,
            streams,
            grpc: plan.target.grpc,
            http3,
        })
    }
}

/// Counts a gRPC call's response messages as its body's bytes come, split anywhere: each is
/// a 5-byte prefix (the compressed flag, the length in 4 bytes big endian), then the message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GrpcMessages {
    /// Prefix bytes of the current message seen (0 to 5).
    head: u8,
    /// Its length as read from the prefix so far; once read, the bytes still to come.
    left: u32,
    /// Messages received whole.
    pub whole: u32,
}

impl GrpcMessages {
    /// The next body bytes.
    #[inline]
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            if self.head < 5 {
                self.left = if self.head == 0 {
                    0
                } else {
                    (self.left << 8) | u32::from(b)
                };
                self.head += 1;
                bytes = rest;
            } else {
                let take = bytes.len().min(self.left as usize);
                self.left -= take as u32;
                bytes = &bytes[take..];
            }
            if self.head == 5 && self.left == 0 {
                self.whole = self.whole.saturating_add(1);
                self.head = 0;
            }
        }
    }
}

/// What a worker's HTTP/2 connections share besides the worker context: the requests, and
/// the HTTP/2 figures the recorder does not keep.
#[derive(Debug)]
pub struct Shared<'a> {
    /// Each endpoint's request.
    pub requests: &'a [H2Request],
    /// Streams in flight, the server's limit, GOAWAYs.
    pub stats: H2Stats,
    /// Connections by protocol (all h2 here).
    pub protocols: ProtocolCounts,
    /// Open model: requests a GOAWAY took back unprocessed (intended time, request), to be
    /// sent again before the next due one.
    pub requeue: Vec<(std::time::Instant, Req)>,
    /// A request with values assembled as HTTP/1.1 (then encoded into `block`).
    pub scratch: Vec<u8>,
    /// A request with values: its header block.
    pub block: Vec<u8>,
}

/// Which request a stream carries: the mix's index, and its values' draw when it is
/// assembled per request (kept, so a request a GOAWAY took back carries the same values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Req {
    /// Which request of the mix (0 without one).
    pub endpoint: u16,
    /// Its values' draw (`None`: fixed bytes).
    pub draw: Option<Draw>,
}

impl Req {
    /// A newly claimed request: the mix's pick and, with values, its draw.
    #[inline]
    pub(crate) fn claim(ctx: &mut crate::ctx::Ctx) -> Req {
        let endpoint = ctx.pick();
        Req {
            endpoint,
            draw: ctx.draw(endpoint),
        }
    }
}

impl<'a> Shared<'a> {
    /// For one worker.
    pub fn new(setup: &'a H2Setup) -> Self {
        Shared {
            requests: &setup.requests,
            stats: H2Stats::default(),
            protocols: ProtocolCounts::default(),
            requeue: Vec::new(),
            scratch: Vec::new(),
            block: Vec::new(),
        }
    }

    /// A server announced SETTINGS_MAX_CONCURRENT_STREAMS `n`: the lowest is kept.
    pub fn server_max_streams(&mut self, n: u32) {
        let cur = &mut self.stats.server_max_streams;
        *cur = if *cur == 0 {
            n.max(1)
        } else {
            (*cur).min(n.max(1))
        };
    }
}

/// Preflight for h2c: sends the preface and an empty SETTINGS on a blocking connection (read
/// timeout set by the caller) and wants the server's SETTINGS back. `Err` is the one line.
pub fn probe_h2c<S: std::io::Read + std::io::Write>(
    mut sock: S,
    target: &str,
) -> Result<(), String> {
    let refuse = |got: String| {
        format!(
            "the server at {target} did not answer HTTP/2 with prior knowledge (h2c; got {got}): enable h2c on the server (nginx: listen PORT http2), use an https:// URL for h2 over TLS, or leave --http2 out"
        )
    };
    let mut hello = frame::PREFACE.to_vec();
    frame::settings(&mut hello, &[]);
    sock.write_all(&hello)
        .map_err(|e| refuse(format!("a write error: {e}")))?;
    let mut head = [0u8; 9];
    let mut have = 0;
    while have < head.len() {
        match sock.read(&mut head[have..]) {
            Ok(0) => return Err(refuse("a closed connection".into())),
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(refuse(format!("no answer: {e}"))),
        }
    }
    let h = frame::Head::parse(&head);
    if h.kind == frame::kind::SETTINGS && h.stream == 0 && h.flags & frame::flag::ACK == 0 {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&head);
    let shown = if head.starts_with(b"HTTP/") {
        format!("'{}'", text.trim_end())
    } else {
        format!("a frame of type {} instead of SETTINGS", h.kind)
    };
    Err(refuse(shown))
}

#[cfg(test)]
mod tests {
    use super::GrpcMessages;

    /// Three messages (5, 0 and 300 bytes) count 3 however the body is split.
    #[test]
    fn grpc_messages_count_whole_at_every_split() {
        let mut body = Vec::new();
        for len in [5u32, 0, 300] {
            body.push(0);
            body.extend_from_slice(&len.to_be_bytes());
            body.extend(std::iter::repeat_n(7u8, len as usize));
        }
        for split in 1..body.len() {
            let mut m = GrpcMessages::default();
            for piece in body.chunks(split) {
                m.feed(piece);
            }
            assert_eq!(m.whole, 3, "split {split}");
        }
        // A message cut short is not counted.
        let mut m = GrpcMessages::default();
        m.feed(&body[..body.len() - 1]);
        assert_eq!(m.whole, 2);
    }
}
