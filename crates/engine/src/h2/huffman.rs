//! HPACK's Huffman code (RFC 7541 Appendix B), decoding only: the response decoder needs each
//! Huffman-coded string's decoded length (for the dynamic table's size) and, for `:status`, its
//! first bytes. The code is canonical, so its 257 code lengths define it; a 512-entry table built
//! at compile time resolves every code of up to 9 bits (the printable characters but a few) in
//! one look-up, and longer codes follow the canonical rule. A general-purpose decoder that built
//! a map per string cost 80% of the HTTP/2 client's CPU against nginx, which Huffman-codes every
//! response's `server` and `date`.

/// The code length of each symbol, 0 to 255 and EOS (256), from RFC 7541 Appendix B.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;
const MAX_LEN: usize = 30;
/// Bits the fast table resolves at once.
const FAST_BITS: u32 = 9;

/// The canonical code: per length, its first code, how many codes it has and where its symbols
/// start in `sorted`; plus the fast table (`symbol << 4 | length`, 0 for codes longer than
/// `FAST_BITS`).
struct Code {
    first: [u32; MAX_LEN + 1],
    count: [u16; MAX_LEN + 1],
    offset: [u16; MAX_LEN + 1],
    sorted: [u16; 257],
    fast: [u16; 1 << FAST_BITS],
}

const CODE: Code = build();

/// Builds the canonical code from `LENGTHS` (at compile time).
const fn build() -> Code {
    let mut c = Code {
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        sorted: [0; 257],
        fast: [0; 1 << FAST_BITS],
    };
    let mut s = 0;
    while s < 257 {
        c.count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let (mut code, mut at, mut len) = (0u32, 0u16, 1);
    while len <= MAX_LEN {
        code <<= 1;
        c.first[len] = code;
        c.offset[len] = at;
        code += c.count[len] as u32;
        at += c.count[len];
        len += 1;
    }
    let mut placed = c.offset;
    s = 0;
    while s < 257 {
        let l = LENGTHS[s] as usize;
        let rank = placed[l] - c.offset[l];
        c.sorted[placed[l] as usize] = s as u16;
        placed[l] += 1;
        if l as u32 <= FAST_BITS {
            // Every 9-bit pattern that starts with this code resolves to it.
            let start = (c.first[l] + rank as u32) << (FAST_BITS - l as u32);
            let mut i = 0;
            while i < 1 << (FAST_BITS - l as u32) {
                c.fast[(start + i) as usize] = (s as u16) << 4 | l as u16;
                i += 1;
            }
        }
        s += 1;
    }
    c
}

/// A Huffman-coded string decoded: its length, and its first bytes (up to `out`'s size).
/// `None` when the string is not valid HPACK Huffman (EOS inside, padding longer than 7 bits or
/// not all ones, a code that does not exist).
pub(super) fn decode(raw: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut bits = Bits {
        raw,
        at: 0,
        acc: 0,
        n: 0,
    };
    let mut len = 0;
    loop {
        bits.refill();
        if bits.n == 0 || bits.is_padding() {
            return Some(len);
        }
        let symbol = bits.next_symbol()?;
        if let Some(slot) = out.get_mut(len) {
            *slot = symbol;
        }
        len += 1;
    }
}

/// A bit reader: `acc`'s low `n` bits are the next bits of `raw` before `at`, oldest highest.
struct Bits<'a> {
    raw: &'a [u8],
    at: usize,
    acc: u64,
    n: u32,
}

impl Bits<'_> {
    fn refill(&mut self) {
        while self.n <= 56 && self.at < self.raw.len() {
            self.acc = self.acc << 8 | u64::from(self.raw[self.at]);
            self.at += 1;
            self.n += 8;
        }
    }

    /// The input is read and what is left is at most 7 bits of ones (EOS's prefix).
    fn is_padding(&self) -> bool {
        let ones = |n: u32| (1u64 << n) - 1;
        self.at == self.raw.len() && self.n <= 7 && self.acc & ones(self.n) == ones(self.n)
    }

    /// The top `len` of the `n` bits (`len <= n`).
    fn peek(&self, len: u32) -> u32 {
        ((self.acc >> (self.n - len)) & ((1u64 << len) - 1)) as u32
    }

    /// Decodes one symbol; `None` at EOS, a code that does not exist or runs past the input.
    fn next_symbol(&mut self) -> Option<u8> {
        let top = if self.n >= FAST_BITS {
            self.peek(FAST_BITS)
        } else {
            // Past the end, pad with ones: no code of up to 7 bits is all ones.
            let short = FAST_BITS - self.n;
            ((self.acc << short) as u32 | ((1 << short) - 1)) & ((1 << FAST_BITS) - 1)
        };
        let fast = CODE.fast[top as usize];
        if fast != 0 {
            let len = u32::from(fast & 0xf);
            if len > self.n {
                return None;
            }
            self.n -= len;
            return Some((fast >> 4) as u8);
        }
        self.slow_symbol()
    }

    /// A code longer than `FAST_BITS`, by the canonical rule: the first length whose code
    /// range holds the top bits.
    fn slow_symbol(&mut self) -> Option<u8> {
        for len in FAST_BITS as usize + 1..=MAX_LEN {
            if len as u32 > self.n {
                return None;
            }
            let code = self.peek(len as u32);
            let rank = code.wrapping_sub(CODE.first[len]);
            if rank < u32::from(CODE.count[len]) {
                let symbol = CODE.sorted[usize::from(CODE.offset[len]) + rank as usize];
                self.n -= len as u32;
                return (symbol != EOS).then_some(symbol as u8);
            }
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Our encoder for the tests: the canonical code's bits for each byte, padded with ones.
    pub(crate) fn encode(s: &[u8]) -> Vec<u8> {
        let (mut acc, mut n, mut out) = (0u64, 0u32, Vec::new());
        for &b in s {
            let len = u32::from(LENGTHS[b as usize]);
            let rank = CODE.sorted[usize::from(CODE.offset[len as usize])..]
                .iter()
                .position(|&x| x == u16::from(b))
                .unwrap() as u32;
            acc = acc << len | u64::from(CODE.first[len as usize] + rank);
            n += len;
            while n >= 8 {
                out.push((acc >> (n - 8)) as u8);
                n -= 8;
            }
        }
        if n > 0 {
            out.push(((acc << (8 - n)) | ((1 << (8 - n)) - 1)) as u8);
        }
        out
    }

    fn decoded(raw: &[u8]) -> Option<Vec<u8>> {
        let mut out = vec![0; 256];
        let len = decode(raw, &mut out)?;
        out.truncate(len);
        Some(out)
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_rfcs_examples_decode() {
        // RFC 7541 C.4.1, C.4.2, C.6.1: Huffman-coded strings and what they say.
        let cases = [
            ("f1e3c2e5f23a6ba0ab90f4ff", "www.example.com"),
            ("a8eb10649cbf", "no-cache"),
            ("6402", "302"),
            ("aec3771a4b", "private"),
            (
                "d07abe941054d444a8200595040b8166e082a62d1bff",
                "Mon, 21 Oct 2013 20:13:21 GMT",
            ),
            (
                "9d29ad171863c78f0b97c8e9ae82ae43d3",
                "https://www.example.com",
            ),
        ];
        for (raw, text) in cases {
            assert_eq!(decoded(&hex(raw)).unwrap(), text.as_bytes(), "{raw}");
            assert_eq!(encode(text.as_bytes()), hex(raw), "{text}");
        }
    }

    #[test]
    fn every_byte_round_trips_and_the_code_is_the_rfcs() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encode(&all)).unwrap(), all);
        // Spot checks against Appendix B's codes.
        for (sym, code, len) in [(0u8, 0x1ff8u32, 13u32), (b'0', 0, 5), (b' ', 0x14, 6)] {
            assert_eq!(encode(&[sym]).len(), (len as usize).div_ceil(8));
            let first = CODE.first[len as usize];
            let rank = CODE.sorted[CODE.offset[len as usize] as usize..]
                .iter()
                .position(|&x| x == u16::from(sym))
                .unwrap() as u32;
            assert_eq!(first + rank, code, "symbol {sym}");
        }
        // EOS is 30 ones.
        assert_eq!(
            CODE.first[30] + u32::from(CODE.count[30]) - 1,
            (1 << 30) - 1
        );
    }

    #[test]
    fn only_a_short_all_ones_padding_ends_a_string() {
        assert_eq!(decoded(&[]).unwrap(), b"");
        // '0' is 00000: the 3 padding bits are ones.
        assert_eq!(decoded(&[0b0000_0111]).unwrap(), b"0");
        assert_eq!(decoded(&[0b0000_0101]), None, "padding not all ones");
        // A full byte of ones is padding longer than 7 bits.
        assert_eq!(decoded(&[0b0000_0111, 0xff]), None);
        // EOS coded inside the string.
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn the_output_keeps_the_first_bytes_and_counts_them_all() {
        let mut out = [0u8; 3];
        assert_eq!(decode(&encode(b"200 OK"), &mut out), Some(6));
        assert_eq!(&out, b"200");
    }
}
