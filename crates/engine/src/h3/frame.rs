//! HTTP/3 framing (RFC 9114 §7): each frame is a type and a length (QUIC variable-length
//! integers, RFC 9000 §16), then its payload. The reader takes a stream's bytes as they come,
//! split anywhere, and hands each frame's payload on as it arrives, so a DATA frame of any
//! size is counted without being kept.

/// Frame types.
pub(super) mod kind {
    pub(crate) const DATA: u64 = 0x0;
    pub(crate) const HEADERS: u64 = 0x1;
    pub(crate) const SETTINGS: u64 = 0x4;
    pub(crate) const PUSH_PROMISE: u64 = 0x5;
    pub(crate) const GOAWAY: u64 = 0x7;
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub(super) mod uni {
    pub(crate) const CONTROL: u64 = 0x0;
}

/// HTTP/3 error codes (RFC 9114 §8.1) we send.
pub(super) mod code {
    pub(crate) const NO_ERROR: u64 = 0x100;
    pub(crate) const REQUEST_CANCELLED: u64 = 0x10c;
}

/// Appends `v` as a QUIC variable-length integer (values up to 2^62 − 1).
pub(super) fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// A variable-length integer at the start of `b`: its value and length; `None` when `b`
/// holds only part of it.
pub(super) fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

/// Appends a frame of type `kind` with `payload`.
pub(super) fn frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    put_varint(out, kind);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// What the reader hands on.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    /// A frame of `kind` begins, its payload `len` bytes long.
    Start { kind: u64, len: u64 },
    /// Payload bytes of the current frame (`end`: its last ones).
    Payload { bytes: &'a [u8], end: bool },
}

/// A stream's frames as its bytes come.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FrameReader {
    /// A frame head (type and length) read so far: at most two 8-byte integers.
    head: [u8; 16],
    have: u8,
    /// Payload bytes of the current frame still to come; `None` between frames.
    left: Option<u64>,
}

impl FrameReader {
    /// Feeds `data`; `each` gets every piece in order (an `Err` from it stops the feed).
    pub(super) fn feed<E>(
        &mut self,
        mut data: &[u8],
        mut each: impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        while !data.is_empty() {
            match self.left {
                Some(left) => {
                    let n = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let rest = left - n as u64;
                    self.left = (rest > 0).then_some(rest);
                    each(Piece::Payload {
                        bytes: &data[..n],
                        end: rest == 0,
                    })?;
                    data = &data[n..];
                }
                None => {
                    let have = usize::from(self.have);
                    let take = data.len().min(self.head.len() - have);
                    self.head[have..have + take].copy_from_slice(&data[..take]);
                    let filled = have + take;
                    let Some((kind, a)) = varint(&self.head[..filled]) else {
                        self.have = filled as u8;
                        data = &data[take..];
                        continue;
                    };
                    let Some((len, b)) = varint(&self.head[a..filled]) else {
                        self.have = filled as u8;
                        data = &data[take..];
                        continue;
                    };
                    // What of `data` the head took; the rest is payload or the next frame.
                    let used = a + b - have;
                    data = &data[used..];
                    self.have = 0;
                    self.left = (len > 0).then_some(len);
                    each(Piece::Start { kind, len })?;
                    if len == 0 {
                        each(Piece::Payload {
                            bytes: &[],
                            end: true,
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Between frames: no frame (or frame head) is partly read.
    pub(super) fn at_boundary(&self) -> bool {
        self.left.is_none() && self.have == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [
            0,
            63,
            64,
            16383,
            16384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(varint(&b), Some((v, b.len())), "{v}");
            assert_eq!(varint(&b[..b.len() - 1]), None);
        }
        // RFC 9000 §A.1's examples.
        assert_eq!(varint(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
        assert_eq!(varint(&[0x7b, 0xbd]), Some((15_293, 2)));
    }

    fn pieces(stream: &[u8], split: usize) -> Vec<(u64, Vec<u8>)> {
        let mut r = FrameReader::default();
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        for part in stream.chunks(split) {
            r.feed::<()>(part, |p| {
                match p {
                    Piece::Start { kind, .. } => out.push((kind, Vec::new())),
                    Piece::Payload { bytes, .. } => out.last_mut().unwrap().1.extend(bytes),
                }
                Ok(())
            })
            .unwrap();
        }
        assert!(r.at_boundary());
        out
    }

    #[test]
    fn frames_read_the_same_at_every_split() {
        let mut s = Vec::new();
        frame(&mut s, kind::HEADERS, &[0, 0, 0xd9]);
        frame(&mut s, kind::DATA, &[7u8; 300]);
        frame(&mut s, 0x21, &[]);
        frame(&mut s, kind::DATA, b"end");
        let want = vec![
            (kind::HEADERS, vec![0, 0, 0xd9]),
            (kind::DATA, vec![7u8; 300]),
            (0x21, vec![]),
            (kind::DATA, b"end".to_vec()),
        ];
        for split in 1..=s.len() {
            assert_eq!(pieces(&s, split), want, "split {split}");
        }
    }
}
