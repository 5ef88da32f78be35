//! An incremental HTTP/1.1 response reader for the hot path.
//!
//! A load generator does not need a response's headers or body: it needs to know where the
//! response ends, its status, and whether the connection can be reused. So this reader keeps no
//! headers and copies no bytes. It looks only at `Content-Length`, `Transfer-Encoding` and
//! `Connection`, skips bodies by arithmetic on slice lengths, finds line ends with `memchr`, and
//! carries a few dozen bytes of fixed state across reads so that any split of the input works,
//! down to one byte per read. It never allocates and never panics, whatever the peer sends.

use loadbench_model::ErrorReason;
use memchr::memchr;

/// Largest header (or trailer) block accepted, and the longest chunk-size line.
const MAX_BLOCK: u32 = 64 * 1024;
/// Room for the longest header name we match (`transfer-encoding`) and value token (`keep-alive`).
const TOKEN_CAP: usize = 24;

// Bits of `ResponseParser::flags`.
const HEAD: u16 = 1 << 0;
const STARTED: u16 = 1 << 1;
/// The last segment of an unfinished line ended in `\r`; held back until we know whether `\n` follows.
const CR_PENDING: u16 = 1 << 2;
const HTTP10: u16 = 1 << 3;
const CONN_CLOSE: u16 = 1 << 4;
const CONN_KEEP_ALIVE: u16 = 1 << 5;
const TE_PRESENT: u16 = 1 << 6;
const TE_CHUNKED: u16 = 1 << 7;
const CL_PRESENT: u16 = 1 << 8;
const CLOSE_DELIMITED: u16 = 1 << 9;
const UPGRADED: u16 = 1 << 10;
/// At least one digit of the current number (Content-Length element or chunk size) was seen.
const DIGITS: u16 = 1 << 11;
/// Whitespace followed the digits of the current Content-Length element.
const DIGITS_DONE: u16 = 1 << 12;
/// Whitespace followed the bytes of the current token.
const TOKEN_WS: u16 = 1 << 13;
/// The current token is not one we know (too long, or inner whitespace).
const TOKEN_BAD: u16 = 1 << 14;

/// Whether a response is complete after a [`ResponseParser::feed`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More bytes are needed.
    NeedMore,
    /// The response is complete.
    Complete {
        /// Bytes of the buffer passed to this `feed` call that belonged to the response
        /// (anything after that is not part of it).
        consumed: usize,
    },
}

/// What an end of stream means for the current response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EofOutcome {
    /// The EOF ended a close-delimited body: the response is complete.
    Complete,
    /// No byte of this response had arrived.
    NothingReceived,
    /// Part of a response had arrived; it is incomplete.
    Truncated,
}

/// Why a response is malformed. Once returned, every later `feed` returns it again until `reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The status line is not `HTTP/1.x <3-digit code> [reason]`.
    #[error("malformed status line")]
    StatusLine,
    /// A header line without a name, without a colon, or starting with whitespace (obsolete
    /// line folding).
    #[error("malformed header line")]
    Header,
    /// A Content-Length that is not a decimal number (or a comma list of them), or overflows.
    #[error("invalid content-length")]
    ContentLength,
    /// A chunk-size line that is not hex digits (then optional `;extensions`), overflows, or is
    /// longer than 64 KiB.
    #[error("invalid chunk size")]
    ChunkSize,
    /// A chunk's data is not followed by its line end.
    #[error("invalid chunk framing")]
    ChunkFraming,
    /// The header (or trailer) block is larger than 64 KiB.
    #[error("response headers too large")]
    HeadersTooLarge,
    /// Content-Length values that disagree with each other.
    #[error("conflicting content-length")]
    ConflictingLength,
}

impl ParseError {
    /// The reason the result counts this under (`malformed_response`).
    pub fn reason(self) -> ErrorReason {
        match self {
            ParseError::StatusLine => ErrorReason::BadStatusLine,
            ParseError::Header => ErrorReason::BadHeaderLine,
            ParseError::ContentLength => ErrorReason::BadContentLength,
            ParseError::ChunkSize => ErrorReason::BadChunkSize,
            ParseError::ChunkFraming => ErrorReason::BadChunkFraming,
            ParseError::HeadersTooLarge => ErrorReason::HeadOver64KiB,
            ParseError::ConflictingLength => ErrorReason::ConflictingContentLength,
        }
    }
}

/// Where the reader is within a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Status,
    Headers,
    /// A Content-Length body; `remaining` bytes to go.
    Body,
    ChunkSize,
    /// Chunk data; `remaining` bytes to go.
    ChunkData,
    /// After chunk data: expecting `\r\n` (or a bare `\n`).
    ChunkCr,
    ChunkLf,
    Trailers,
    UntilClose,
    Done,
    Failed(ParseError),
}

/// The header fields that matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    ContentLength,
    TransferEncoding,
    Connection,
}

/// Where the reader is within the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cursor {
    /// Status line: index of the next byte of `HTTP/1.x NNN`.
    Status(u8),
    /// Header or trailer name, before the colon.
    Name,
    /// The value of a field that matters.
    Value(Field),
    /// Chunk size digits.
    Size,
    /// Whitespace after the chunk size digits.
    SizeWs,
    /// The rest of the line does not matter (reason phrase, other values, chunk extensions).
    Skip,
}

/// Reads one HTTP/1.1 response at a time from a byte stream, in pieces of any size.
///
/// `body_bytes` counts payload bytes only: chunk-size lines, chunk CRLFs and trailers are framing.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    /// Body bytes still expected in `Phase::Body` or `Phase::ChunkData`.
    remaining: u64,
    content_length: u64,
    /// The number being read: status code, Content-Length element or chunk size.
    acc: u64,
    body_bytes: u64,
    /// Bytes of the current header block, trailer block or chunk-size line.
    block_bytes: u32,
    /// Bytes of the current header name (it may be longer than `token`).
    name_len: u32,
    phase: Phase,
    cursor: Cursor,
    status: u16,
    flags: u16,
    token_len: u8,
    /// Lowercased header name, then the value token being read.
    token: [u8; TOKEN_CAP],
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    /// A parser waiting for the status line of a response to a non-HEAD request.
    pub fn new() -> Self {
        ResponseParser {
            remaining: 0,
            content_length: 0,
            acc: 0,
            body_bytes: 0,
            block_bytes: 0,
            name_len: 0,
            phase: Phase::Status,
            cursor: Cursor::Status(0),
            status: 0,
            flags: 0,
            token_len: 0,
            token: [0; TOKEN_CAP],
        }
    }

    /// Prepares for the next response. `head_request`: the request was HEAD, so no body
    /// follows whatever the headers say.
    pub fn reset(&mut self, head_request: bool) {
        *self = Self::new();
        self.set(HEAD, head_request);
    }

    /// Feeds bytes that arrived on the socket. Any split across calls works, down to one byte
    /// at a time. After `Complete`, further calls return `Complete { consumed: 0 }` until `reset`.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Progress, ParseError> {
        match self.phase {
            Phase::Failed(e) => return Err(e),
            Phase::Done => return Ok(Progress::Complete { consumed: 0 }),
            _ => {}
        }
        if !buf.is_empty() {
            self.flags |= STARTED;
        }
        let mut pos = 0;
        // At a status line's start with nothing held back (a bare CR from the last read is
        // part of the line, which only the byte-wise reader knows).
        if self.phase == Phase::Status && self.cursor == Cursor::Status(0) && !self.has(CR_PENDING)
        {
            if let Some(n) = self.whole_head(buf) {
                pos = n;
                if self.phase == Phase::Done {
                    return Ok(Progress::Complete { consumed: pos });
                }
            }
        }
        while let Some(rest) = buf.get(pos..).filter(|r| !r.is_empty()) {
            match self.step(rest) {
                Ok(n) => pos += n,
                Err(e) => {
                    self.phase = Phase::Failed(e);
                    return Err(e);
                }
            }
            if self.phase == Phase::Done {
                return Ok(Progress::Complete { consumed: pos });
            }
        }
        Ok(Progress::NeedMore)
    }

    /// The peer closed the connection (read returned 0): what that means for this response.
    pub fn on_eof(&mut self) -> EofOutcome {
        if !self.has(STARTED) {
            return EofOutcome::NothingReceived;
        }
        match self.phase {
            Phase::UntilClose => {
                self.phase = Phase::Done;
                EofOutcome::Complete
            }
            Phase::Done => EofOutcome::Complete,
            _ => EofOutcome::Truncated,
        }
    }

    /// The status code of the last status line read: 0 until one is parsed, and back to 0
    /// once an interim (1xx) response ends. After `Complete` it is the final status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the connection may be reused after this response: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`; never after a
    /// close-delimited body or a 101 Switching Protocols.
    pub fn keep_alive(&self) -> bool {
        if self.has(CONN_CLOSE | CLOSE_DELIMITED | UPGRADED) {
            false
        } else if self.has(HTTP10) {
            self.has(CONN_KEEP_ALIVE)
        } else {
            true
        }
    }

    /// Whether the response carried `Connection: close`.
    pub fn connection_close(&self) -> bool {
        self.has(CONN_CLOSE)
    }

    /// True once any byte of the current response has been fed.
    pub fn started(&self) -> bool {
        self.has(STARTED)
    }

    /// Payload bytes seen so far for the current response, excluding chunk framing.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    fn has(&self, bits: u16) -> bool {
        self.flags & bits != 0
    }

    fn set(&mut self, bits: u16, on: bool) {
        if on {
            self.flags |= bits;
        } else {
            self.flags &= !bits;
        }
    }

    /// The fast path for the common case: `buf` holds a whole plain head (status line and
    /// header block, every line ended by CRLF). Reads it in one pass and returns its length,
    /// with the same outcome as the byte-wise reader. Anything that reader would reject, or
    /// that needs its finer rules (folded or listed values, a bare CR or LF, a split line), is
    /// left to it: `None`, with nothing changed.
    fn whole_head(&mut self, buf: &[u8]) -> Option<usize> {
        let mut head = Head::default();
        let mut rest = buf;
        let mut first = true;
        loop {
            let lf = memchr(b'\n', rest)?;
            let (cr, line) = rest.get(..lf)?.split_last()?;
            if *cr != b'\r' {
                return None;
            }
            rest = rest.get(lf + 1..)?;
            if first {
                head.status_line(line)?;
                first = false;
            } else if line.is_empty() {
                break;
            } else {
                head.field(line)?;
            }
        }
        let used = buf.len() - rest.len();
        let used32 = u32::try_from(used).ok()?;
        let total = self.block_bytes.checked_add(used32)?;
        if total > MAX_BLOCK {
            return None;
        }
        if let Some(len) = head.length {
            if self.has(CL_PRESENT) && self.content_length != len {
                return None;
            }
            self.content_length = len;
            self.flags |= CL_PRESENT;
        }
        if let Some(chunked) = head.chunked {
            self.flags |= TE_PRESENT;
            self.set(TE_CHUNKED, chunked);
        }
        self.block_bytes = total;
        self.status = head.status;
        self.flags |= head.flags;
        self.phase = Phase::Headers;
        self.cursor = Cursor::Name;
        self.block_end();
        Some(used)
    }

    /// Consumes a non-empty prefix of non-empty `buf`, returning its length.
    fn step(&mut self, buf: &[u8]) -> Result<usize, ParseError> {
        match self.phase {
            Phase::Status | Phase::Headers | Phase::Trailers | Phase::ChunkSize => self.line(buf),
            Phase::Body => Ok(self.skip_body(buf, Phase::Done)),
            Phase::ChunkData => Ok(self.skip_body(buf, Phase::ChunkCr)),
            Phase::ChunkCr | Phase::ChunkLf => self.chunk_end(buf.first().copied()),
            Phase::UntilClose => {
                self.body_bytes = self.body_bytes.saturating_add(buf.len() as u64);
                Ok(buf.len())
            }
            Phase::Done | Phase::Failed(_) => Ok(buf.len()),
        }
    }

    /// Skips up to `remaining` body bytes in one go; moves to `next` when none remain.
    fn skip_body(&mut self, buf: &[u8], next: Phase) -> usize {
        let n = usize::try_from(self.remaining).map_or(buf.len(), |r| r.min(buf.len()));
        self.remaining -= n as u64;
        self.body_bytes = self.body_bytes.saturating_add(n as u64);
        if self.remaining == 0 {
            self.phase = next;
        }
        n
    }

    fn chunk_end(&mut self, byte: Option<u8>) -> Result<usize, ParseError> {
        match (self.phase, byte) {
            (Phase::ChunkCr, Some(b'\r')) => self.phase = Phase::ChunkLf,
            (_, Some(b'\n')) => self.start_line(Phase::ChunkSize),
            _ => return Err(ParseError::ChunkFraming),
        }
        Ok(1)
    }

    /// Reads the rest of the current line if `buf` holds it, or all of `buf` if not.
    fn line(&mut self, buf: &[u8]) -> Result<usize, ParseError> {
        let (seg, used, ended) = match memchr(b'\n', buf) {
            Some(i) => (buf.get(..i).unwrap_or_default(), i + 1, true),
            None => (buf, buf.len(), false),
        };
        self.count_block(used)?;
        if self.has(CR_PENDING) {
            self.flags &= !CR_PENDING;
            // The held `\r` was line content unless the line ends right here.
            if !(ended && seg.is_empty()) {
                self.segment(b"\r")?;
            }
        }
        let seg = match seg.split_last() {
            Some((b'\r', head)) => {
                self.set(CR_PENDING, !ended);
                head
            }
            _ => seg,
        };
        self.segment(seg)?;
        if ended {
            self.line_end()?;
        }
        Ok(used)
    }

    fn count_block(&mut self, used: usize) -> Result<(), ParseError> {
        let used = u32::try_from(used).unwrap_or(u32::MAX);
        self.block_bytes = self.block_bytes.saturating_add(used);
        if self.block_bytes <= MAX_BLOCK {
            Ok(())
        } else if self.phase == Phase::ChunkSize {
            Err(ParseError::ChunkSize)
        } else {
            Err(ParseError::HeadersTooLarge)
        }
    }

    /// Processes part of a line (without its line ending).
    fn segment(&mut self, seg: &[u8]) -> Result<(), ParseError> {
        match self.cursor {
            Cursor::Status(_) => self.status_segment(seg),
            Cursor::Name => self.name_segment(seg),
            Cursor::Value(field) => self.value_segment(field, seg),
            Cursor::Size | Cursor::SizeWs => self.size_segment(seg),
            Cursor::Skip => Ok(()),
        }
    }

    fn line_end(&mut self) -> Result<(), ParseError> {
        match (self.phase, self.cursor) {
            (Phase::Status, Cursor::Status(12) | Cursor::Skip) => {
                self.start_line(Phase::Headers);
                Ok(())
            }
            (Phase::Status, _) => Err(ParseError::StatusLine),
            (Phase::ChunkSize, _) => self.chunk_size_end(),
            (_, Cursor::Name) if self.name_len == 0 => {
                self.block_end();
                Ok(())
            }
            (_, Cursor::Name) => Err(ParseError::Header),
            (phase, cursor) => {
                if let Cursor::Value(field) = cursor {
                    self.finish_value(field)?;
                }
                self.start_line(phase);
                Ok(())
            }
        }
    }

    /// Enters `phase` at the start of a line, clearing per-line state.
    fn start_line(&mut self, phase: Phase) {
        if phase != self.phase && matches!(phase, Phase::ChunkSize | Phase::Trailers) {
            self.block_bytes = 0;
        }
        self.phase = phase;
        self.cursor = match phase {
            Phase::Status => Cursor::Status(0),
            Phase::ChunkSize => Cursor::Size,
            _ => Cursor::Name,
        };
        self.acc = 0;
        self.name_len = 0;
        self.token_len = 0;
        self.flags &= !(DIGITS | DIGITS_DONE | TOKEN_WS | TOKEN_BAD);
    }

    fn status_segment(&mut self, seg: &[u8]) -> Result<(), ParseError> {
        for &b in seg {
            let Cursor::Status(pos) = self.cursor else {
                break;
            };
            self.cursor = self.status_byte(pos, b).ok_or(ParseError::StatusLine)?;
        }
        Ok(())
    }

    /// Checks byte `pos` of `HTTP/1.x NNN `; past that the reason phrase is skipped.
    fn status_byte(&mut self, pos: u8, b: u8) -> Option<Cursor> {
        let ok = match pos {
            0..=6 => b"HTTP/1.".get(usize::from(pos)) == Some(&b),
            7 | 10 | 11 => b.is_ascii_digit(),
            8 => b == b' ',
            9 => matches!(b, b'1'..=b'9'),
            12 => return (b == b' ').then_some(Cursor::Skip),
            _ => false,
        };
        match pos {
            _ if !ok => return None,
            7 => self.set(HTTP10, b == b'0'),
            9..=11 => self.acc = self.acc * 10 + u64::from(b - b'0'),
            _ => {}
        }
        if pos == 11 {
            self.status = u16::try_from(self.acc).ok()?;
        }
        Some(Cursor::Status(pos + 1))
    }

    fn name_segment(&mut self, seg: &[u8]) -> Result<(), ParseError> {
        if self.name_len == 0 && matches!(seg.first(), Some(b' ' | b'\t')) {
            // Obsolete line folding, or whitespace before a name: rejected like httparse does.
            return Err(ParseError::Header);
        }
        let Some(colon) = memchr(b':', seg) else {
            self.push_name(seg);
            return Ok(());
        };
        let (name, value) = seg.split_at(colon);
        self.push_name(name);
        if self.name_len == 0 {
            return Err(ParseError::Header);
        }
        self.cursor = self.classify().map_or(Cursor::Skip, Cursor::Value);
        self.token_len = 0;
        self.segment(value.get(1..).unwrap_or_default())
    }

    fn push_name(&mut self, name: &[u8]) {
        let start = usize::try_from(self.name_len).unwrap_or(usize::MAX);
        if let Some(room) = self.token.get_mut(start..) {
            for (slot, b) in room.iter_mut().zip(name) {
                *slot = b.to_ascii_lowercase();
            }
        }
        let len = u32::try_from(name.len()).unwrap_or(u32::MAX);
        self.name_len = self.name_len.saturating_add(len);
    }

    fn classify(&self) -> Option<Field> {
        if self.phase == Phase::Trailers {
            return None;
        }
        let len = usize::try_from(self.name_len).ok()?;
        match self.token.get(..len)? {
            b"content-length" => Some(Field::ContentLength),
            b"transfer-encoding" => Some(Field::TransferEncoding),
            b"connection" => Some(Field::Connection),
            _ => None,
        }
    }

    fn value_segment(&mut self, field: Field, seg: &[u8]) -> Result<(), ParseError> {
        for &b in seg {
            match field {
                Field::ContentLength => self.length_byte(b)?,
                _ => self.token_byte(field, b),
            }
        }
        Ok(())
    }

    fn finish_value(&mut self, field: Field) -> Result<(), ParseError> {
        match field {
            Field::ContentLength => self.commit_length(),
            _ => {
                self.finish_token(field);
                Ok(())
            }
        }
    }

    /// Content-Length is `1*DIGIT`, or a comma list of equal values (repeated fields combined).
    fn length_byte(&mut self, b: u8) -> Result<(), ParseError> {
        match b {
            b'0'..=b'9' if !self.has(DIGITS_DONE) => {
                self.acc = self
                    .acc
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(u64::from(b - b'0')))
                    .ok_or(ParseError::ContentLength)?;
                self.flags |= DIGITS;
            }
            b' ' | b'\t' | b'\r' => {
                if self.has(DIGITS) {
                    self.flags |= DIGITS_DONE;
                }
            }
            b',' => self.commit_length()?,
            _ => return Err(ParseError::ContentLength),
        }
        Ok(())
    }

    fn commit_length(&mut self) -> Result<(), ParseError> {
        if !self.has(DIGITS) {
            return Err(ParseError::ContentLength);
        }
        if self.has(CL_PRESENT) && self.content_length != self.acc {
            return Err(ParseError::ConflictingLength);
        }
        self.content_length = self.acc;
        self.acc = 0;
        self.flags = (self.flags | CL_PRESENT) & !(DIGITS | DIGITS_DONE);
        Ok(())
    }

    /// Reads comma-separated tokens, lowercased, without surrounding whitespace.
    fn token_byte(&mut self, field: Field, b: u8) {
        match b {
            b' ' | b'\t' | b'\r' => {
                if self.token_len > 0 {
                    self.flags |= TOKEN_WS;
                }
            }
            b',' => self.finish_token(field),
            _ if self.has(TOKEN_WS | TOKEN_BAD) => self.flags |= TOKEN_BAD,
            _ => match self.token.get_mut(usize::from(self.token_len)) {
                Some(slot) => {
                    *slot = b.to_ascii_lowercase();
                    self.token_len += 1;
                }
                None => self.flags |= TOKEN_BAD,
            },
        }
    }

    fn finish_token(&mut self, field: Field) {
        let bad = self.has(TOKEN_BAD);
        let token = self
            .token
            .get(..usize::from(self.token_len))
            .unwrap_or_default();
        let (empty, chunked) = (token.is_empty() && !bad, !bad && token == b"chunked");
        let (close, keep_alive) = (!bad && token == b"close", !bad && token == b"keep-alive");
        self.token_len = 0;
        self.flags &= !(TOKEN_WS | TOKEN_BAD);
        if empty {
            return; // empty list elements are allowed and mean nothing
        }
        match field {
            Field::TransferEncoding => {
                // Only the last coding decides; codings accumulate across repeated fields.
                self.flags |= TE_PRESENT;
                self.set(TE_CHUNKED, chunked);
            }
            Field::Connection => {
                self.flags |= if close { CONN_CLOSE } else { 0 };
                self.flags |= if keep_alive { CONN_KEEP_ALIVE } else { 0 };
            }
            Field::ContentLength => {}
        }
    }

    /// A chunk size is hex digits, optional whitespace, then optional `;extensions`.
    fn size_segment(&mut self, seg: &[u8]) -> Result<(), ParseError> {
        for &b in seg {
            match (self.cursor, char::from(b).to_digit(16), b) {
                (Cursor::Size, Some(digit), _) => {
                    self.acc = self
                        .acc
                        .checked_mul(16)
                        .and_then(|v| v.checked_add(u64::from(digit)))
                        .ok_or(ParseError::ChunkSize)?;
                    self.flags |= DIGITS;
                }
                (_, _, b' ' | b'\t') if self.has(DIGITS) => self.cursor = Cursor::SizeWs,
                (_, _, b';') if self.has(DIGITS) => {
                    self.cursor = Cursor::Skip;
                    break;
                }
                _ => return Err(ParseError::ChunkSize),
            }
        }
        Ok(())
    }

    fn chunk_size_end(&mut self) -> Result<(), ParseError> {
        if !self.has(DIGITS) {
            return Err(ParseError::ChunkSize);
        }
        let size = self.acc;
        if size == 0 {
            self.start_line(Phase::Trailers);
        } else {
            self.start_line(Phase::ChunkData);
            self.remaining = size;
        }
        Ok(())
    }

    /// The empty line after a header or trailer block: decides what comes next.
    fn block_end(&mut self) {
        if self.phase == Phase::Trailers {
            self.phase = Phase::Done;
            return;
        }
        let status = self.status;
        self.phase = if status == 101 {
            self.flags |= UPGRADED;
            Phase::Done
        } else if (100..200).contains(&status) {
            self.end_interim();
            return;
        } else if self.has(HEAD) || status == 204 || status == 304 {
            Phase::Done
        } else if self.has(TE_PRESENT) {
            // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3).
            self.body_after_codings()
        } else if self.has(CL_PRESENT) && self.content_length > 0 {
            self.remaining = self.content_length;
            Phase::Body
        } else if self.has(CL_PRESENT) {
            Phase::Done
        } else {
            self.flags |= CLOSE_DELIMITED;
            Phase::UntilClose
        };
    }

    fn body_after_codings(&mut self) -> Phase {
        if self.has(TE_CHUNKED) {
            self.start_line(Phase::ChunkSize);
            Phase::ChunkSize
        } else {
            self.flags |= CLOSE_DELIMITED;
            Phase::UntilClose
        }
    }

    /// A 1xx (other than 101) was only a preview: forget its headers and read the next head.
    fn end_interim(&mut self) {
        self.flags &=
            !(HTTP10 | CONN_CLOSE | CONN_KEEP_ALIVE | TE_PRESENT | TE_CHUNKED | CL_PRESENT);
        self.content_length = 0;
        self.status = 0;
        self.start_line(Phase::Status);
    }
}

/// What [`ResponseParser::whole_head`] read, applied only once the whole head is known good.
#[derive(Default)]
struct Head {
    status: u16,
    /// `HTTP10`, `CONN_CLOSE`, `CONN_KEEP_ALIVE`.
    flags: u16,
    length: Option<u64>,
    /// The last Transfer-Encoding's coding is `chunked` (`None`: no such field).
    chunked: Option<bool>,
}

impl Head {
    /// `HTTP/1.x NNN`, then nothing or a space and any reason phrase.
    fn status_line(&mut self, line: &[u8]) -> Option<()> {
        let (version, rest) = line.split_first_chunk::<12>()?;
        let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor, b' ', d1 @ b'1'..=b'9', d2, d3] =
            *version
        else {
            return None;
        };
        if !(minor.is_ascii_digit() && d2.is_ascii_digit() && d3.is_ascii_digit()) {
            return None;
        }
        if rest.first().is_some_and(|&b| b != b' ') {
            return None;
        }
        if minor == b'0' {
            self.flags |= HTTP10;
        }
        self.status = u16::from(d1 - b'0') * 100 + u16::from(d2 - b'0') * 10 + u16::from(d3 - b'0');
        Some(())
    }

    /// One `name: value` line; only the three fields that matter are looked at.
    fn field(&mut self, line: &[u8]) -> Option<()> {
        let colon = memchr(b':', line)?;
        let (name, value) = (line.get(..colon)?, line.get(colon + 1..)?);
        if matches!(name.first(), None | Some(b' ' | b'\t')) {
            return None;
        }
        let matters = matches!(name.len(), 10 | 14 | 17);
        if !matters {
            return Some(());
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            let digits = single_token(value)?;
            if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let n = digits
                .iter()
                .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
            if self.length.is_some_and(|l| l != n) {
                return None;
            }
            self.length = Some(n);
        } else if name.eq_ignore_ascii_case(b"connection") {
            let token = single_token(value)?;
            if token.eq_ignore_ascii_case(b"close") {
                self.flags |= CONN_CLOSE;
            } else if token.eq_ignore_ascii_case(b"keep-alive") {
                self.flags |= CONN_KEEP_ALIVE;
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let token = single_token(value)?;
            if !token.is_empty() {
                self.chunked = Some(token.eq_ignore_ascii_case(b"chunked"));
            }
        }
        Some(())
    }
}

/// A value without surrounding whitespace (space, tab, CR), if it is one token: no inner
/// whitespace or comma (lists go to the byte-wise reader).
fn single_token(value: &[u8]) -> Option<&[u8]> {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
    let start = value.iter().position(|b| !ws(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ws(b)).map_or(start, |i| i + 1);
    let token = value.get(start..end)?;
    if token.iter().any(|&b| ws(&b) || b == b',') {
        return None;
    }
    Some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// How feeding a whole input ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum End {
        /// `feed` returned `Complete`; total bytes consumed over all calls.
        Complete(usize),
        /// All input was fed without completing; then `on_eof` said this.
        Eof(EofOutcome),
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Outcome {
        end: Result<End, ParseError>,
        status: u16,
        keep_alive: bool,
        body_bytes: u64,
    }

    fn run<'a>(pieces: impl IntoIterator<Item = &'a [u8]>, head: bool) -> Outcome {
        let mut p = ResponseParser::new();
        p.reset(head);
        let mut fed = 0;
        let end = (|| {
            for piece in pieces {
                match p.feed(piece)? {
                    Progress::Complete { consumed } => {
                        assert!(consumed <= piece.len());
                        return Ok(End::Complete(fed + consumed));
                    }
                    Progress::NeedMore => fed += piece.len(),
                }
            }
            Ok(End::Eof(p.on_eof()))
        })();
        Outcome {
            end,
            status: p.status(),
            keep_alive: p.keep_alive(),
            body_bytes: p.body_bytes(),
        }
    }

    fn whole(data: &[u8], head: bool) -> Outcome {
        run([data], head)
    }

    /// Asserts that every split into two and three pieces, and one byte at a time, end alike.
    fn assert_split_invariant(data: &[u8], head: bool, expected: Outcome) {
        assert_eq!(whole(data, head), expected, "whole");
        for i in 0..=data.len() {
            let (a, b) = data.split_at(i);
            assert_eq!(run([a, b], head), expected, "split at {i}");
            for j in i..=data.len() {
                let pieces = [&data[..i], &data[i..j], &data[j..]];
                assert_eq!(run(pieces, head), expected, "split at {i} and {j}");
            }
        }
        assert_eq!(run(data.chunks(1), head), expected, "byte by byte");
    }

    struct Case {
        name: &'static str,
        bytes: &'static [u8],
        head: bool,
        status: u16,
        keep_alive: bool,
        body: u64,
        /// The body ends at EOF rather than by framing.
        close_delimited: bool,
    }

    const NEXT: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";

    fn case(
        name: &'static str,
        bytes: &'static [u8],
        status: u16,
        keep_alive: bool,
        body: u64,
    ) -> Case {
        Case {
            name,
            bytes,
            head: false,
            status,
            keep_alive,
            body,
            close_delimited: false,
        }
    }

    // why: a table of two dozen representative responses; split, the cases would only scatter.
    #[allow(clippy::too_many_lines)]
    fn cases() -> Vec<Case> {
        vec![
            case("content-length", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello", 200, true, 5),
            case("zero content-length", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, true, 0),
            case(
                "chunked with extensions and trailers",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                  5;name=value\r\nhello\r\nA ; a=b;c\r\n0123456789\r\n0;last\r\nX-Trailer: t\r\nChecksum: abc\r\n\r\n",
                200,
                true,
                15,
            ),
            case("empty chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 200, true, 0),
            case(
                "chunked wins over content-length",
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                200,
                true,
                3,
            ),
            case("204 with content-length", b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", 204, true, 0),
            case("304 with content-length", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", 304, true, 0),
            case("no reason phrase", b"HTTP/1.1 204\r\n\r\n", 204, true, 0),
            case(
                "100-continue then 200",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                200,
                true,
                2,
            ),
            case(
                "103 early hints then chunked",
                b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\nConnection: close\r\n\r\n\
                  HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                200,
                true,
                2,
            ),
            case(
                "101 switching protocols",
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
                101,
                false,
                0,
            ),
            case("http/1.0 without keep-alive", b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc", 200, false, 3),
            case(
                "http/1.0 with keep-alive",
                b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 3\r\n\r\nabc",
                200,
                true,
                3,
            ),
            case(
                "connection close",
                b"HTTP/1.1 200 OK\r\nConnection: keep-alive, CLOSE\r\nContent-Length: 2\r\n\r\nhi",
                200,
                false,
                2,
            ),
            case(
                "mixed-case names and whitespace",
                b"HTTP/1.1 404 Not Found\r\ncOnTeNt-LeNgTh:\t  4 \t\r\nCONNECTION:   keep-alive  \r\n\r\nnope",
                404,
                true,
                4,
            ),
            case(
                "repeated equal content-length",
                b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok",
                200,
                true,
                2,
            ),
            case(
                "bare lf line endings",
                b"HTTP/1.1 200 OK\nContent-Length: 3\nX-A: b\n\nabc",
                200,
                true,
                3,
            ),
            case(
                "bare lf chunked",
                b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\nT: 1\n\n",
                200,
                true,
                3,
            ),
            case(
                "long unknown header name and colon in value",
                b"HTTP/1.1 500 Internal Server Error\r\nX-A-Very-Long-Header-Name-Indeed: a:b:c\r\nContent-Length: 1\r\n\r\n!",
                500,
                true,
                1,
            ),
            Case { head: true, ..case("head with content-length", b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", 200, true, 0) },
            Case {
                head: true,
                ..case("head with chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 200, true, 0)
            },
            Case {
                close_delimited: true,
                ..case("close-delimited", b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nall of this\r\n\r\nis body", 200, false, 22)
            },
            Case {
                close_delimited: true,
                ..case("http/1.0 close-delimited", b"HTTP/1.0 200 OK\r\n\r\nbody", 200, false, 4)
            },
            Case {
                close_delimited: true,
                ..case(
                    "transfer-encoding not ending in chunked",
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 2\r\n\r\nabcdef",
                    200,
                    false,
                    6,
                )
            },
        ]
    }

    #[test]
    fn representative_responses_end_alike_at_every_split() {
        for c in cases() {
            let mut data = c.bytes.to_vec();
            let end = if c.close_delimited {
                End::Eof(EofOutcome::Complete)
            } else {
                data.extend_from_slice(NEXT);
                End::Complete(c.bytes.len())
            };
            let expected = Outcome {
                end: Ok(end),
                status: c.status,
                keep_alive: c.keep_alive,
                body_bytes: c.body,
            };
            eprintln!("case: {}", c.name);
            assert_split_invariant(&data, c.head, expected);
        }
    }

    #[test]
    fn back_to_back_responses_are_read_one_at_a_time() {
        let first = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let data = [&first[..], NEXT].concat();
        let mut p = ResponseParser::new();
        assert_eq!(
            p.feed(&data),
            Ok(Progress::Complete {
                consumed: first.len()
            })
        );
        assert_eq!(
            p.feed(&data[first.len()..]),
            Ok(Progress::Complete { consumed: 0 }),
            "done until reset"
        );
        p.reset(false);
        assert!(!p.started());
        assert_eq!((p.status(), p.body_bytes()), (0, 0));
        assert_eq!(
            p.feed(&data[first.len()..]),
            Ok(Progress::Complete {
                consumed: NEXT.len()
            })
        );
        assert_eq!((p.status(), p.body_bytes()), (200, 1));
    }

    #[test]
    fn interim_response_does_not_complete_alone() {
        let mut p = ResponseParser::new();
        assert_eq!(
            p.feed(b"HTTP/1.1 100 Continue\r\n\r\n"),
            Ok(Progress::NeedMore)
        );
        assert_eq!(p.status(), 0, "an interim status is not final");
        assert_eq!(p.on_eof(), EofOutcome::Truncated);
    }

    fn assert_error(data: &[u8], error: ParseError) {
        let mut expected = whole(data, false);
        assert_eq!(
            expected.end,
            Err(error),
            "{}",
            String::from_utf8_lossy(data)
        );
        if data.len() <= 300 {
            assert_split_invariant(data, false, expected);
        } else {
            expected.end = run(data.chunks(1), false).end;
            assert_eq!(expected.end, Err(error), "byte by byte");
        }
    }

    #[test]
    fn malformed_status_lines_are_rejected() {
        for bad in [
            &b"HTTP/2 200 OK\r\n\r\n"[..],
            b"FOO\r\n\r\n",
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 099 Low\r\n\r\n",
            b"HTTP/1.1 1000 High\r\n\r\n",
            b"HTTP/1.1 20\r\n\r\n",
            b"HTTP/1.1  200 OK\r\n\r\n",
            b"HTTP/1.x 200 OK\r\n\r\n",
            b"http/1.1 200 OK\r\n\r\n",
            b"\r\nHTTP/1.1 200 OK\r\n\r\n",
        ] {
            assert_error(bad, ParseError::StatusLine);
        }
    }

    #[test]
    fn header_errors_are_rejected() {
        assert_error(
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            ParseError::Header,
        );
        assert_error(
            b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
            ParseError::Header,
        );
        assert_error(
            b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
            ParseError::Header,
        );
        let trailer =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n";
        assert_error(trailer, ParseError::Header);
    }

    #[test]
    fn content_length_errors_are_rejected() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        ] {
            assert_error(bad, ParseError::ContentLength);
        }
    }

    #[test]
    fn bare_cr_inside_a_line_is_whitespace_not_dropped() {
        // A bare CR split from what follows must not vanish (RFC 9112 §2.2: treat it as SP).
        assert_error(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r2\r\n\r\n",
            ParseError::ContentLength,
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r1\r\n";
        assert_error(chunked, ParseError::ChunkSize);
        let name = b"HTTP/1.1 200 OK\r\nContent-Length\r: 1\r\n\r\nx";
        let out = whole(name, false);
        assert_eq!(
            (out.end, out.body_bytes),
            (Ok(End::Eof(EofOutcome::Complete)), 1)
        );
        assert_split_invariant(name, false, out);
    }

    #[test]
    fn largest_content_length_is_accepted() {
        let data = b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nabc";
        let out = whole(data, false);
        assert_eq!(
            (out.end, out.body_bytes),
            (Ok(End::Eof(EofOutcome::Truncated)), 3)
        );
    }

    #[test]
    fn conflicting_content_lengths_are_rejected() {
        assert_error(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            ParseError::ConflictingLength,
        );
        assert_error(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
            ParseError::ConflictingLength,
        );
    }

    #[test]
    fn chunk_errors_are_rejected() {
        let chunked = |rest: &[u8]| {
            [
                &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
                rest,
            ]
            .concat()
        };
        assert_error(&chunked(b"xyz\r\n"), ParseError::ChunkSize);
        assert_error(&chunked(b"\r\n"), ParseError::ChunkSize);
        assert_error(&chunked(b";ext\r\n"), ParseError::ChunkSize);
        assert_error(&chunked(b" 5\r\nhello\r\n"), ParseError::ChunkSize);
        assert_error(&chunked(b"5 5\r\nhello\r\n"), ParseError::ChunkSize);
        assert_error(&chunked(b"10000000000000000\r\n"), ParseError::ChunkSize);
        assert_error(
            &chunked(b"3\r\nabcX\r\n0\r\n\r\n"),
            ParseError::ChunkFraming,
        );
        assert_error(&chunked(b"3\r\nabc\rX0\r\n\r\n"), ParseError::ChunkFraming);
    }

    #[test]
    fn largest_chunk_size_is_accepted() {
        let data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFffffFFFFffff\r\nabc";
        let out = whole(data, false);
        assert_eq!(
            (out.end, out.body_bytes),
            (Ok(End::Eof(EofOutcome::Truncated)), 3)
        );
    }

    #[test]
    fn headers_over_64k_are_rejected() {
        let mut data = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        data.resize(70 * 1024, b'a');
        data.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        assert_error(&data, ParseError::HeadersTooLarge);
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        while many.len() <= 64 * 1024 {
            many.extend_from_slice(b"X-Header: value\r\n");
        }
        many.extend_from_slice(b"\r\n");
        assert_error(&many, ParseError::HeadersTooLarge);
    }

    #[test]
    fn headers_just_under_64k_are_accepted() {
        let mut data = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        data.resize(64 * 1024 - 4, b'a');
        data.extend_from_slice(b"\r\n\r\n");
        assert_eq!(data.len(), 64 * 1024);
        assert_eq!(whole(&data, true).end, Ok(End::Complete(data.len())));
    }

    #[test]
    fn errors_stick_until_reset() {
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(b"FOO"), Err(ParseError::StatusLine));
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\n\r\n"),
            Err(ParseError::StatusLine)
        );
        p.reset(false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
            Ok(Progress::Complete { consumed: 38 })
        );
    }

    #[test]
    fn eof_before_any_byte_is_nothing_received() {
        let mut p = ResponseParser::new();
        assert_eq!(p.feed(b""), Ok(Progress::NeedMore));
        assert!(!p.started());
        assert_eq!(p.on_eof(), EofOutcome::NothingReceived);
    }

    #[test]
    fn eof_mid_response_is_truncated() {
        for partial in [
            &b"H"[..],
            b"HTTP/1.1 200 OK\r\nContent-Le",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
        ] {
            let mut p = ResponseParser::new();
            assert_eq!(p.feed(partial), Ok(Progress::NeedMore));
            assert!(p.started());
            assert_eq!(
                p.on_eof(),
                EofOutcome::Truncated,
                "{}",
                String::from_utf8_lossy(partial)
            );
        }
    }

    #[test]
    fn eof_ends_close_delimited_body() {
        let mut p = ResponseParser::new();
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\n\r\nsome"),
            Ok(Progress::NeedMore)
        );
        assert_eq!(p.feed(b" body"), Ok(Progress::NeedMore));
        assert_eq!(p.on_eof(), EofOutcome::Complete);
        assert_eq!(
            (p.status(), p.keep_alive(), p.body_bytes()),
            (200, false, 9)
        );
    }

    #[test]
    fn parser_state_is_small() {
        assert!(
            std::mem::size_of::<ResponseParser>() <= 128,
            "{}",
            std::mem::size_of::<ResponseParser>()
        );
    }

    #[test]
    fn errors_display_in_lower_case() {
        assert_eq!(
            ParseError::ChunkFraming.to_string(),
            "invalid chunk framing"
        );
        assert_eq!(
            ParseError::HeadersTooLarge.to_string(),
            "response headers too large"
        );
    }

    // ---- property tests ----

    /// A valid response, and what reading it must report.
    #[derive(Debug, Clone)]
    struct Generated {
        bytes: Vec<u8>,
        head: bool,
        expected: Outcome,
    }

    #[derive(Debug, Clone)]
    enum Body {
        Length(usize),
        Chunked {
            sizes: Vec<usize>,
            ext: bool,
            trailers: usize,
        },
        Close(usize),
    }

    fn body_strategy() -> impl Strategy<Value = Body> {
        prop_oneof![
            (0usize..300).prop_map(Body::Length),
            (
                prop::collection::vec(1usize..100, 0..5),
                any::<bool>(),
                0usize..3
            )
                .prop_map(|(sizes, ext, trailers)| Body::Chunked {
                    sizes,
                    ext,
                    trailers
                }),
            (0usize..300).prop_map(Body::Close),
        ]
    }

    /// Varies the case of ASCII letters by the bits of `mask`.
    fn mixed_case(name: &str, mask: u64) -> String {
        name.chars()
            .enumerate()
            .map(|(i, c)| {
                if (mask >> (i % 64)) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    }

    prop_compose! {
        fn response()(
            http10 in any::<bool>(),
            status in prop::sample::select(vec![200u16, 201, 204, 301, 304, 404, 500, 503]),
            interim in prop::option::of(prop::sample::select(vec![100u16, 102, 103])),
            head in any::<bool>(),
            connection in prop::option::of(prop::sample::select(vec!["close", "keep-alive", "Keep-Alive, Upgrade", "upgrade"])),
            extra in prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,40}", "[ -~]{0,40}"), 0..4),
            body in body_strategy(),
            mask in any::<u64>(),
            crlf in any::<bool>(),
            ows in 0usize..3,
        ) -> Generated {
            let eol = if crlf { "\r\n" } else { "\n" };
            let sp = " ".repeat(ows);
            let mut text = String::new();
            if let Some(code) = interim {
                text += &format!("HTTP/1.1 {code} Interim{eol}{}:{sp}close{eol}{eol}", mixed_case("connection", mask));
            }
            text += &format!("HTTP/1.{} {status} Some Reason{eol}", if http10 { 0 } else { 1 });
            for (name, value) in &extra {
                text += &format!("X-{name}: {value}{eol}");
            }
            if let Some(c) = connection {
                text += &format!("{}:{sp}{c}{sp}{eol}", mixed_case("connection", mask));
            }
            let no_body = head || status == 204 || status == 304;
            let mut payload = String::new();
            let body_len = match &body {
                Body::Length(n) => {
                    text += &format!("{}:{sp}{n}{eol}{eol}", mixed_case("content-length", mask));
                    payload = "b".repeat(*n);
                    *n
                }
                Body::Chunked { sizes, ext, trailers } => {
                    text += &format!("{}:{sp}chunked{eol}{eol}", mixed_case("transfer-encoding", mask));
                    for n in sizes {
                        let e = if *ext { ";x=y" } else { "" };
                        payload += &format!("{n:X}{e}{eol}{}{eol}", "c".repeat(*n));
                    }
                    payload += &format!("0{eol}");
                    for t in 0..*trailers {
                        payload += &format!("T-{t}: v{eol}");
                    }
                    payload += eol;
                    sizes.iter().sum()
                }
                Body::Close(n) => {
                    text += eol;
                    payload = "d".repeat(*n);
                    *n
                }
            };
            if !no_body {
                text += &payload;
            }
            let close_delimited = !no_body && matches!(body, Body::Close(_));
            let conn_close = connection == Some("close");
            let keep_alive = !close_delimited && !conn_close && (!http10 || connection.is_some_and(|c| c.to_ascii_lowercase().contains("keep-alive")));
            let end = if close_delimited { End::Eof(EofOutcome::Complete) } else { End::Complete(text.len()) };
            let body_bytes = if no_body { 0 } else { body_len as u64 };
            Generated { bytes: text.into_bytes(), head, expected: Outcome { end: Ok(end), status, keep_alive, body_bytes } }
        }
    }

    /// Cuts `data` at the given points (taken modulo its length, sorted).
    fn pieces<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        cuts.sort_unstable();
        let mut out = Vec::new();
        let mut start = 0;
        for c in cuts {
            out.push(&data[start..c]);
            start = c;
        }
        out.push(&data[start..]);
        out
    }

    /// Bytes that look like HTTP often enough to reach deep states.
    fn http_ish() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            prop::sample::select(vec![
                &b"HTTP/1.1 "[..],
                b"HTTP/1.0 ",
                b"200",
                b"100",
                b"204",
                b" OK",
                b"\r\n",
                b"\n",
                b"\r",
                b":",
                b" ",
                b"Content-Length",
                b"Transfer-Encoding",
                b"Connection",
                b"chunked",
                b"close",
                b",",
                b"0",
                b"5",
                b"ffffffff",
                b";",
                b"hello",
            ])
            .prop_map(<[u8]>::to_vec),
            prop::collection::vec(any::<u8>(), 0..4),
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn random_splits_of_valid_responses_do_not_change_the_outcome(
            r in response(),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut data = r.bytes.clone();
            data.extend_from_slice(NEXT);
            let input = if matches!(r.expected.end, Ok(End::Eof(_))) { &r.bytes[..] } else { &data[..] };
            prop_assert_eq!(whole(input, r.head), r.expected);
            prop_assert_eq!(run(pieces(input, &cuts), r.head), r.expected);
        }

        #[test]
        fn random_garbage_never_panics_and_splits_agree(
            data in prop_oneof![prop::collection::vec(any::<u8>(), 0..512), http_ish()],
            cuts in prop::collection::vec(any::<usize>(), 0..8),
            head in any::<bool>(),
        ) {
            let expected = whole(&data, head);
            prop_assert_eq!(run(pieces(&data, &cuts), head), expected);
        }

        #[test]
        fn the_whole_head_fast_path_agrees_with_byte_wise_reading(
            data in prop_oneof![
                response().prop_map(|r| r.bytes),
                // What a first read may leave behind before a whole head (a held CR, ...).
                (prop::sample::select(vec![&b"\r"[..], b"\n", b" ", b"\r\n", b"H"]), response())
                    .prop_map(|(prefix, r)| [prefix, &r.bytes[..]].concat()),
                http_ish(),
                (response(), prop::collection::vec((any::<usize>(), any::<u8>()), 1..3)).prop_map(
                    |(r, edits)| {
                        let mut data = r.bytes;
                        for (at, byte) in edits {
                            if !data.is_empty() {
                                let i = at % data.len();
                                data[i] = byte;
                            }
                        }
                        data
                    }
                ),
            ],
            head in any::<bool>(),
        ) {
            // One byte per feed never holds a whole head, so only the byte-wise reader runs.
            let expected = run(data.chunks(1), head);
            prop_assert_eq!(whole(&data, head), expected);
            // One byte, then the rest whole: the fast path after state left by a first read.
            let (first, rest) = data.split_at(data.len().min(1));
            prop_assert_eq!(run([first, rest], head), expected);
        }

        #[test]
        fn mutated_valid_responses_never_panic_and_splits_agree(
            r in response(),
            edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut data = r.bytes;
            for (at, byte) in edits {
                if !data.is_empty() {
                    let i = at % data.len();
                    data[i] = byte;
                }
            }
            let expected = whole(&data, r.head);
            prop_assert_eq!(run(pieces(&data, &cuts), r.head), expected);
        }
    }
}

#[cfg(test)]
mod interim_split_tests {
    use super::*;

    /// The fast path takes a typical whole head (nginx's) and leaves what needs the byte-wise
    /// rules to it, changing nothing then.
    #[test]
    fn whole_heads_take_the_fast_path_and_odd_ones_do_not() {
        let nginx = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Wed, 25 Nov 2026 09:00:00 GMT\r\n\
            Content-Type: text/plain\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\nhello world";
        let head_len = nginx.len() - 11;
        let mut p = ResponseParser::new();
        assert_eq!(p.whole_head(nginx), Some(head_len));
        assert_eq!((p.status(), p.remaining, p.keep_alive()), (200, 11, true));
        assert_eq!(p.phase, Phase::Body);
        let odd: [&[u8]; 6] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nx",
            b"HTTP/1.1 200 OK\nContent-Length: 1\r\n\r\nx",
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n folded\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
            b"HTTP/1.1 200\rOK\r\n\r\n",
        ];
        for data in odd {
            let mut p = ResponseParser::new();
            assert_eq!(
                p.whole_head(data),
                None,
                "{}",
                String::from_utf8_lossy(data)
            );
            assert_eq!((p.phase, p.flags, p.status), (Phase::Status, 0, 0));
        }
    }

    /// A bare CR held back from an earlier read is part of the status line: the head that
    /// follows whole must not be taken by the fast path as if the CR had not come.
    #[test]
    fn a_held_cr_before_a_whole_head_reads_as_the_byte_wise_reader_does() {
        let data = b"\rHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut whole = ResponseParser::new();
        let expected = whole.feed(data);
        let mut split = ResponseParser::new();
        assert!(matches!(split.feed(&data[..1]), Ok(Progress::NeedMore)));
        assert_eq!(split.feed(&data[1..]), expected);
        assert_eq!(expected, Err(ParseError::StatusLine));
    }

    /// Regression (hostile matrix): a 100 Continue that arrives in its own read, with the
    /// final response in a later one, completes with the final status.
    #[test]
    fn interim_then_final_response_in_separate_reads_completes() {
        let mut p = ResponseParser::new();
        p.reset(false);
        let first = p.feed(b"HTTP/1.1 100 Continue\r\n\r\n");
        assert!(matches!(first, Ok(Progress::NeedMore)), "{first:?}");
        let second = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        assert!(
            matches!(second, Ok(Progress::Complete { .. })),
            "{second:?}"
        );
        assert_eq!(p.status(), 200);
    }
}
