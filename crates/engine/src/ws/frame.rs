//! WebSocket framing (RFC 6455, 5.2) as a client speaks it: frames written whole with FIN set
//! and masked (a client must mask every frame), and the server's frame heads read from a
//! buffer as they arrive (a server must not mask).

/// A continuation frame of a fragmented message.
pub const OP_CONTINUATION: u8 = 0x0;
/// A text frame (UTF-8 payload).
pub const OP_TEXT: u8 = 0x1;
/// A binary frame.
pub const OP_BINARY: u8 = 0x2;
/// A close frame: an optional 2-byte code, then an optional reason.
pub const OP_CLOSE: u8 = 0x8;
/// A ping, to answer with a pong carrying the same payload.
pub const OP_PING: u8 = 0x9;
/// A pong.
pub const OP_PONG: u8 = 0xA;

/// Close code of a close frame without one (RFC 6455, 7.4.1: never sent, only reported).
pub const NO_STATUS: u16 = 1005;

/// Appends a whole (FIN) frame of `opcode` with `payload` masked by `mask`.
pub fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    for (i, b) in out[start..].iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// A server's frame of `opcode` (the last of its message when `fin`) with `payload`, not
/// masked: what the tests' servers send and the frame reader reads.
pub fn server_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A server frame's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The last frame of its message.
    pub fin: bool,
    /// The frame's opcode.
    pub opcode: u8,
    /// The payload's length.
    pub len: u64,
    /// The head's own length (2 to 10 bytes: a server frame has no mask).
    pub head_len: usize,
}

impl Head {
    /// A control frame (close, ping, pong).
    pub fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

/// Reads the head of the frame at the start of `buf`: `Ok(None)` until it is all there, an
/// error for a frame a server must not send (masked, reserved bits or opcodes, a fragmented
/// or long control frame).
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, &'static str> {
    let [b0, b1, ..] = *buf else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err("reserved bits set (no extension was agreed)");
    }
    if b1 & 0x80 != 0 {
        return Err("a masked frame from the server");
    }
    let opcode = b0 & 0x0F;
    if !matches!(
        opcode,
        OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG
    ) {
        return Err("a reserved opcode");
    }
    let fin = b0 & 0x80 != 0;
    let (len, head_len) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            // RFC 6455, 5.2: the most significant bit of a 64-bit length must be 0.
            Some(b) if b[0] & 0x80 != 0 => return Err("a 64-bit frame length over 2^63"),
            Some(b) => (u64::from_be_bytes(b.try_into().unwrap_or([0; 8])), 10),
            None => return Ok(None),
        },
        n => (u64::from(n), 2),
    };
    let head = Head {
        fin,
        opcode,
        len,
        head_len,
    };
    if head.is_control() && (!fin || len > 125) {
        return Err("a fragmented or over-long control frame");
    }
    Ok(Some(head))
}

/// The close code of a close frame's payload ([`NO_STATUS`] when it has none).
pub fn close_code(payload: &[u8]) -> u16 {
    match payload {
        [a, b, ..] => u16::from_be_bytes([*a, *b]),
        _ => NO_STATUS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unmask(frame: &[u8]) -> (u8, Vec<u8>) {
        let b1 = frame[1] & 0x7F;
        let (len, at) = match b1 {
            126 => (usize::from(u16::from_be_bytes([frame[2], frame[3]])), 4),
            127 => (
                u64::from_be_bytes(frame[2..10].try_into().unwrap()) as usize,
                10,
            ),
            n => (usize::from(n), 2),
        };
        let mask = &frame[at..at + 4];
        let body = frame[at + 4..at + 4 + len]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i & 3])
            .collect();
        (frame[0], body)
    }

    #[test]
    fn client_frames_are_masked_and_sized_in_all_three_lengths() {
        for len in [0usize, 5, 125, 126, 65_535, 65_536] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::new();
            encode(&mut out, OP_BINARY, &payload, [1, 2, 3, 4]);
            assert_eq!(out[1] & 0x80, 0x80, "masked");
            let (b0, body) = unmask(&out);
            assert_eq!(b0, 0x82);
            assert_eq!(body, payload, "{len}");
        }
    }

    #[test]
    fn server_heads_are_read_when_whole_and_refused_when_illegal() {
        assert_eq!(parse_head(&[0x81]), Ok(None));
        let h = parse_head(&[0x81, 5, b'h']).unwrap().unwrap();
        assert_eq!((h.fin, h.opcode, h.len, h.head_len), (true, OP_TEXT, 5, 2));
        assert_eq!(parse_head(&[0x82, 126, 1]), Ok(None));
        let h = parse_head(&[0x02, 126, 1, 0]).unwrap().unwrap();
        assert_eq!((h.fin, h.len, h.head_len), (false, 256, 4));
        let h = parse_head(&[0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])
            .unwrap()
            .unwrap();
        assert_eq!((h.len, h.head_len), (65_536, 10));
        assert!(parse_head(&[0x81, 0x85]).is_err(), "masked");
        assert!(parse_head(&[0xC1, 1]).is_err(), "rsv1");
        assert!(parse_head(&[0x83, 1]).is_err(), "opcode 3");
        assert!(parse_head(&[0x09, 0]).is_err(), "fragmented ping");
        assert!(parse_head(&[0x89, 126, 0, 200]).is_err(), "long ping");
        let huge = [0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 0];
        assert!(
            parse_head(&huge).is_err(),
            "64-bit length with its top bit set"
        );
        assert_eq!(close_code(&[0x03, 0xE8, b'x']), 1000);
        assert_eq!(close_code(&[]), NO_STATUS);
    }
}
