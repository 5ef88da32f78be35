//! HTTP/2 framing (RFC 9113 §4, §6): the 9-byte frame header, the few frames a client writes
//! (preface with SETTINGS, SETTINGS ACK, WINDOW_UPDATE, PING ACK, RST_STREAM, GOAWAY, a
//! request's HEADERS/CONTINUATION and its body's DATA), and an incremental reader that takes
//! any split of the input. DATA payloads are counted, never copied; other frames are collected
//! into one reused buffer, so reading allocates nothing once that buffer has grown to a frame.

/// The client connection preface, sent before our first SETTINGS.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types.
pub mod kind {
    /// Payload bytes of a stream.
    pub const DATA: u8 = 0;
    /// A header block (first fragment).
    pub const HEADERS: u8 = 1;
    /// Stream priority (ignored).
    pub const PRIORITY: u8 = 2;
    /// A stream reset, with an error code.
    pub const RST_STREAM: u8 = 3;
    /// Connection settings, or their acknowledgement.
    pub const SETTINGS: u8 = 4;
    /// Server push (refused: we send ENABLE_PUSH 0).
    pub const PUSH_PROMISE: u8 = 5;
    /// A ping to answer.
    pub const PING: u8 = 6;
    /// The connection is going away.
    pub const GOAWAY: u8 = 7;
    /// More flow-control window.
    pub const WINDOW_UPDATE: u8 = 8;
    /// More of a header block.
    pub const CONTINUATION: u8 = 9;
}

/// Frame flags.
pub mod flag {
    /// DATA/HEADERS: the last frame of the stream's side.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS/PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS/CONTINUATION: the header block ends here.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA/HEADERS: a pad length byte and padding.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: stream dependency and weight (5 bytes).
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers.
pub mod setting {
    /// HPACK dynamic table size the peer's decoder allows.
    pub const HEADER_TABLE_SIZE: u16 = 1;
    /// Server push allowed.
    pub const ENABLE_PUSH: u16 = 2;
    /// Streams the sender allows its peer to open at once.
    pub const MAX_CONCURRENT_STREAMS: u16 = 3;
    /// A new stream's flow-control window.
    pub const INITIAL_WINDOW_SIZE: u16 = 4;
    /// The largest frame payload the sender accepts.
    pub const MAX_FRAME_SIZE: u16 = 5;
}

/// The frame payload every endpoint must accept, and our own limit.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// A flow-control window before any SETTINGS or WINDOW_UPDATE.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest frame payload a peer may allow.
pub const MAX_FRAME_LIMIT: u32 = (1 << 24) - 1;
/// The largest flow-control window.
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Error codes (RFC 9113 §7) we send.
pub mod code {
    /// Graceful.
    pub const NO_ERROR: u32 = 0;
    /// A framing or protocol rule was broken.
    pub const PROTOCOL_ERROR: u32 = 1;
    /// A frame too large.
    pub const FRAME_SIZE_ERROR: u32 = 6;
    /// The stream is no longer wanted (our timeout).
    pub const CANCEL: u32 = 8;
    /// The header block could not be decoded.
    pub const COMPRESSION_ERROR: u32 = 9;
}

/// A frame's 9-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Payload length.
    pub len: u32,
    /// Frame type ([`kind`]).
    pub kind: u8,
    /// Flags ([`flag`]).
    pub flags: u8,
    /// Stream id (0: the connection).
    pub stream: u32,
}

impl Head {
    /// Reads a header from its 9 bytes (the reserved bit of the stream id is ignored).
    pub fn parse(b: &[u8; 9]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
        }
    }

    /// Appends the header's 9 bytes to `out`.
    #[inline]
    pub fn write(self, out: &mut Vec<u8>) {
        let len = self.len.to_be_bytes();
        out.extend_from_slice(&[len[1], len[2], len[3], self.kind, self.flags]);
        out.extend_from_slice(&self.stream.to_be_bytes());
    }
}

/// Appends a whole frame.
pub fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    Head {
        len,
        kind,
        flags,
        stream,
    }
    .write(out);
    out.extend_from_slice(payload);
}

/// Appends a SETTINGS frame with `(id, value)` pairs.
pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    let mut payload = Vec::with_capacity(pairs.len() * 6);
    for (id, v) in pairs {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&v.to_be_bytes());
    }
    frame(out, kind::SETTINGS, 0, 0, &payload);
}

/// Appends a WINDOW_UPDATE of `increment` (1 to 2^31-1) for `stream` (0: the connection).
pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame(
        out,
        kind::WINDOW_UPDATE,
        0,
        stream,
        &increment.to_be_bytes(),
    );
}

/// Appends an RST_STREAM with `code`.
pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    frame(out, kind::RST_STREAM, 0, stream, &code.to_be_bytes());
}

/// Appends a GOAWAY: the last stream we processed (none: 0) and `code`.
pub fn goaway(out: &mut Vec<u8>, code: u32) {
    let mut payload = [0u8; 8];
    payload[4..].copy_from_slice(&code.to_be_bytes());
    frame(out, kind::GOAWAY, 0, 0, &payload);
}

/// Appends a request's HEADERS (and CONTINUATIONs when `block` is over `max_frame`);
/// `end_stream`: the request has no body, so HEADERS ends the stream.
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let mut chunks = block.chunks(max_frame.max(1)).peekable();
    let mut ty = kind::HEADERS;
    let end_stream = if end_stream { flag::END_STREAM } else { 0 };
    while let Some(chunk) = chunks.next() {
        let mut flags = if ty == kind::HEADERS { end_stream } else { 0 };
        if chunks.peek().is_none() {
            flags |= flag::END_HEADERS;
        }
        frame(out, ty, flags, stream, chunk);
        ty = kind::CONTINUATION;
    }
}

/// Appends one DATA frame of a request body (`chunk` within the peer's frame size and the
/// flow-control windows); `end`: the body's last frame, with END_STREAM.
#[inline]
pub fn data(out: &mut Vec<u8>, stream: u32, chunk: &[u8], end: bool) {
    let flags = if end { flag::END_STREAM } else { 0 };
    frame(out, kind::DATA, flags, stream, chunk);
}

/// What the reader found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// DATA payload of `stream`: `flow` bytes against the windows, `body` of them the
    /// response body; `end` on the stream's last byte (END_STREAM).
    Data {
        /// The stream.
        stream: u32,
        /// Bytes counted against the flow-control windows (padding included).
        flow: u32,
        /// Body bytes among them.
        body: u32,
        /// Those body bytes (a gRPC call's messages are counted in them).
        bytes: &'a [u8],
        /// The frame carried END_STREAM and this was its last byte.
        end: bool,
    },
    /// Any other frame, whole.
    Frame(Head, &'a [u8]),
}

/// A framing error: the connection cannot be read in step any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A frame longer than our SETTINGS_MAX_FRAME_SIZE (also what HTTP/1.x bytes look like).
    TooLarge,
    /// A padded frame whose padding is longer than the frame.
    BadPadding,
}

/// An incremental frame reader: feed it any slices, it calls back per frame (per chunk for
/// unpadded DATA).
#[derive(Debug)]
pub struct FrameReader {
    head: [u8; 9],
    have: usize,
    cur: Option<Head>,
    left: u32,
    max: u32,
}

impl FrameReader {
    /// A reader accepting payloads up to `max` bytes.
    pub fn new(max: u32) -> Self {
        FrameReader {
            head: [0; 9],
            have: 0,
            cur: None,
            left: 0,
            max,
        }
    }

    /// Reads `input`, calling `on` for each event; `payload` is the collection buffer (kept
    /// by the caller so it can be reused). Stops at the first error `on` returns.
    pub fn feed<E: From<FrameError>>(
        &mut self,
        mut input: &[u8],
        payload: &mut Vec<u8>,
        mut on: impl FnMut(Event<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        loop {
            let head = match self.cur {
                Some(h) => h,
                None => {
                    let take = (9 - self.have).min(input.len());
                    self.head[self.have..self.have + take].copy_from_slice(&input[..take]);
                    self.have += take;
                    input = &input[take..];
                    if self.have < 9 {
                        return Ok(());
                    }
                    self.have = 0;
                    let h = Head::parse(&self.head);
                    if h.len > self.max {
                        return Err(FrameError::TooLarge.into());
                    }
                    self.cur = Some(h);
                    self.left = h.len;
                    payload.clear();
                    h
                }
            };
            let take = (self.left as usize).min(input.len());
            let (chunk, rest) = input.split_at(take);
            input = rest;
            self.left -= take as u32;
            let last = self.left == 0;
            if head.kind == kind::DATA && head.flags & flag::PADDED == 0 {
                if take > 0 || last {
                    let end = last && head.flags & flag::END_STREAM != 0;
                    let n = take as u32;
                    on(Event::Data {
                        stream: head.stream,
                        flow: n,
                        body: n,
                        bytes: chunk,
                        end,
                    })?;
                }
            } else {
                payload.extend_from_slice(chunk);
                if last {
                    emit_collected(head, payload, &mut on)?;
                }
            }
            if last {
                self.cur = None;
            } else {
                return Ok(());
            }
        }
    }
}

/// A whole collected frame: padded DATA is turned into its body count, the rest is handed on.
fn emit_collected<E: From<FrameError>>(
    head: Head,
    payload: &[u8],
    on: &mut impl FnMut(Event<'_>) -> Result<(), E>,
) -> Result<(), E> {
    if head.kind != kind::DATA {
        return on(Event::Frame(head, payload));
    }
    let pad = usize::from(payload.first().copied().unwrap_or(0));
    let body = payload
        .len()
        .checked_sub(1 + pad)
        .ok_or(FrameError::BadPadding)?;
    on(Event::Data {
        stream: head.stream,
        flow: head.len,
        body: body as u32,
        bytes: &payload[1..1 + body],
        end: head.flags & flag::END_STREAM != 0,
    })
}

/// The fragment of a header block in a HEADERS frame's payload: without padding and priority.
pub fn headers_fragment(head: Head, payload: &[u8]) -> Result<&[u8], FrameError> {
    let mut p = payload;
    let mut pad = 0usize;
    if head.flags & flag::PADDED != 0 {
        pad = usize::from(*p.first().ok_or(FrameError::BadPadding)?);
        p = &p[1..];
    }
    if head.flags & flag::PRIORITY != 0 {
        p = p.get(5..).ok_or(FrameError::BadPadding)?;
    }
    let end = p.len().checked_sub(pad).ok_or(FrameError::BadPadding)?;
    Ok(&p[..end])
}

/// A 4-byte big-endian number at `at` (0 when the payload is short).
pub fn be32(payload: &[u8], at: usize) -> u32 {
    payload
        .get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a reader reports for `input` fed in pieces of `split` bytes, a stream's DATA
    /// added up until its end.
    fn read_all(input: &[u8], split: usize) -> Vec<(u8, u32, u32, Vec<u8>, bool)> {
        let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
        let mut buf = Vec::new();
        let mut out: Vec<(u8, u32, u32, Vec<u8>, bool)> = Vec::new();
        for piece in input.chunks(split) {
            r.feed::<FrameError>(piece, &mut buf, |e| {
                match e {
                    Event::Data {
                        stream,
                        body,
                        bytes,
                        end,
                        ..
                    } => match out.last_mut() {
                        Some(last) if last.0 == kind::DATA && last.1 == stream && !last.4 => {
                            last.2 += body;
                            last.3.extend_from_slice(bytes);
                            last.4 = end;
                        }
                        _ => out.push((kind::DATA, stream, body, bytes.to_vec(), end)),
                    },
                    Event::Frame(h, p) => out.push((h.kind, h.stream, h.len, p.to_vec(), false)),
                }
                Ok(())
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn frames_read_the_same_at_every_split() {
        let mut wire = Vec::new();
        settings(&mut wire, &[(setting::MAX_CONCURRENT_STREAMS, 2)]);
        frame(&mut wire, kind::HEADERS, flag::END_HEADERS, 1, &[0x88]);
        frame(&mut wire, kind::DATA, 0, 1, &[7u8; 100]);
        frame(
            &mut wire,
            kind::DATA,
            flag::END_STREAM | flag::PADDED,
            1,
            &[3, 1, 2, 0, 0, 0],
        );
        frame(&mut wire, kind::DATA, flag::END_STREAM, 3, &[]);
        window_update(&mut wire, 0, 1000);
        let whole = read_all(&wire, wire.len());
        for split in 1..wire.len() {
            assert_eq!(read_all(&wire, split), whole, "split {split}");
        }
        assert_eq!(whole[0].0, kind::SETTINGS);
        assert_eq!(&whole[0].3, &[0, 3, 0, 0, 0, 2]);
        assert_eq!(whole[1].3, vec![0x88]);
        // Stream 1's two DATA frames (the second padded): 100 + 2 body bytes, then its end.
        assert_eq!((whole[2].2, whole[2].4), (102, true), "padding is not body");
        assert_eq!(whole[2].3[..100], [7u8; 100]);
        assert_eq!(whole[2].3[100..], [1, 2]);
        assert_eq!((whole[3].1, whole[3].2, whole[3].4), (3, 0, true));
        assert_eq!(be32(&whole[4].3, 0), 1000);
    }

    #[test]
    fn http1_bytes_are_a_frame_too_large_not_a_panic() {
        let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
        let got =
            r.feed::<FrameError>(b"HTTP/1.1 400 Bad Request\r\n", &mut Vec::new(), |_| Ok(()));
        assert_eq!(got, Err(FrameError::TooLarge));
    }

    #[test]
    fn a_request_splits_its_block_and_body_by_the_frame_limit() {
        let mut out = Vec::new();
        headers(&mut out, 5, &[1u8; 10], false, 4);
        for (i, chunk) in [2u8; 7].chunks(4).enumerate() {
            data(&mut out, 5, chunk, i == 1);
        }
        let frames = read_all(&out, out.len());
        let kinds: Vec<u8> = frames.iter().map(|f| f.0).collect();
        assert_eq!(
            kinds,
            [
                kind::HEADERS,
                kind::CONTINUATION,
                kind::CONTINUATION,
                kind::DATA
            ]
        );
        assert!(frames.iter().all(|f| f.1 == 5));
        assert_eq!((frames[3].2, frames[3].4), (7, true));
        let first = Head::parse(out[..9].try_into().unwrap());
        assert_eq!(
            first.flags, 0,
            "a request with a body does not end at its HEADERS"
        );
        let mut bodyless = Vec::new();
        headers(&mut bodyless, 1, &[0x82], true, 16_384);
        let h = Head::parse(bodyless[..9].try_into().unwrap());
        assert_eq!(h.flags, flag::END_STREAM | flag::END_HEADERS);
    }

    #[test]
    fn header_fragments_lose_padding_and_priority() {
        let h = Head {
            len: 0,
            kind: kind::HEADERS,
            flags: flag::PADDED | flag::PRIORITY,
            stream: 1,
        };
        let p = [2, 0, 0, 0, 0, 16, 0x88, 0x89, 0, 0];
        assert_eq!(headers_fragment(h, &p), Ok(&[0x88u8, 0x89][..]));
        assert_eq!(
            headers_fragment(h, &[9, 0, 0, 0, 0, 0]),
            Err(FrameError::BadPadding)
        );
    }
}
