//! HPACK (RFC 7541) for the load engine. Requests: each endpoint's header block is encoded
//! once, before the run, from the HTTP/1.1 request the plan rendered (pseudo-headers from the
//! request line and `Host`, connection-specific headers dropped), as literals without
//! indexing and without Huffman, so every request writes the same bytes. Responses: only
//! `:status` is wanted. A block that neither reads nor changes the dynamic table (what nginx
//! sends) is scanned in place without decoding its strings; any other block goes through
//! `loona-hpack`'s decoder, which keeps the connection's dynamic table right.

use memchr::memmem;

/// One endpoint's request in HTTP/2 form, encoded once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Request {
    /// The HPACK header block (pseudo-headers first).
    pub block: Vec<u8>,
    /// The request body (sent as DATA), empty for none.
    pub body: Vec<u8>,
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2), or carries as a pseudo-header (`host`).
const DROPPED: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

impl H2Request {
    /// Re-encodes a rendered HTTP/1.1 request (`https`: the `:scheme`). `Err` names what is
    /// missing; the plan renders every request in the shape read here.
    pub fn from_http1(bytes: &[u8], https: bool) -> Result<H2Request, String> {
        let end = memmem::find(bytes, b"\r\n\r\n").ok_or("the request has no end of head")?;
        let head =
            std::str::from_utf8(&bytes[..end]).map_err(|_| "the request head is not UTF-8")?;
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let mut parts = first.split(' ');
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if method.is_empty() || path.is_empty() {
            return Err(format!("the request line '{first}' has no method or path"));
        }
        let headers: Vec<(String, &str)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim()))
            .collect();
        let authority = headers.iter().find(|(n, _)| n == "host").map(|(_, v)| *v);
        let mut block = Vec::with_capacity(end);
        pseudo_headers(&mut block, method, path, https, authority);
        for (name, value) in &headers {
            let te_ok = name == "te" && value.eq_ignore_ascii_case("trailers");
            if DROPPED.contains(&name.as_str()) || (name == "te" && !te_ok) {
                continue;
            }
            block.push(0x00);
            string(&mut block, name.as_bytes());
            string(&mut block, value.as_bytes());
        }
        Ok(H2Request {
            block,
            body: bytes[end + 4..].to_vec(),
        })
    }
}

/// `:method`, `:scheme`, `:path`, `:authority`: fully indexed where the static table has the
/// value, else a literal with the static table's name.
fn pseudo_headers(
    out: &mut Vec<u8>,
    method: &str,
    path: &str,
    https: bool,
    authority: Option<&str>,
) {
    match method {
        "GET" => out.push(0x82),
        "POST" => out.push(0x83),
        m => literal_indexed_name(out, 2, m.as_bytes()),
    }
    out.push(if https { 0x87 } else { 0x86 });
    match path {
        "/" => out.push(0x84),
        p => literal_indexed_name(out, 4, p.as_bytes()),
    }
    if let Some(a) = authority {
        literal_indexed_name(out, 1, a.as_bytes());
    }
}

/// A literal header field without indexing whose name is static table entry `index`.
fn literal_indexed_name(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    integer(out, 4, 0x00, index);
    string(out, value);
}

/// A string literal without Huffman coding.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 7, 0x00, s.len());
    out.extend_from_slice(s);
}

/// An HPACK integer with an `n`-bit prefix, the first byte's high bits from `flags`.
fn integer(out: &mut Vec<u8>, n: u32, flags: u8, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Reads an integer with an `n`-bit prefix at `b[*at]`, moving `at` past it.
fn read_integer(b: &[u8], at: &mut usize, n: u32) -> Option<usize> {
    let max = (1usize << n) - 1;
    let mut value = usize::from(*b.get(*at)?) & max;
    *at += 1;
    if value < max {
        return Some(value);
    }
    let mut shift = 0;
    loop {
        let byte = *b.get(*at)?;
        *at += 1;
        value = value.checked_add(usize::from(byte & 0x7f).checked_shl(shift)?)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
}

/// A string literal at `at`: its bytes and whether they are Huffman-coded.
fn read_string<'a>(b: &'a [u8], at: &mut usize) -> Option<(&'a [u8], bool)> {
    let huffman = *b.get(*at)? & 0x80 != 0;
    let len = read_integer(b, at, 7)?;
    let s = b.get(*at..at.checked_add(len)?)?;
    *at += len;
    Some((s, huffman))
}

/// The status codes of static table entries 8 to 14.
const STATIC_STATUS: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
/// Entries in the HPACK static table.
const STATIC_LEN: usize = 61;

/// What the in-place scan of a response header block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The block does not touch the dynamic table; its `:status`, if it has one.
    Status(Option<u16>),
    /// The block reads or changes the dynamic table, Huffman-codes `:status`, or is
    /// malformed: the full decoder must take it.
    Full,
}

/// Scans a header block without decoding strings; see [`Scan`].
pub fn scan(block: &[u8]) -> Scan {
    scan_inner(block).unwrap_or(Scan::Full)
}

fn scan_inner(b: &[u8]) -> Option<Scan> {
    let mut at = 0;
    let mut status = None;
    while at < b.len() {
        let first = b[at];
        if first & 0x80 != 0 {
            let index = read_integer(b, &mut at, 7)?;
            if index == 0 || index > STATIC_LEN {
                return Some(Scan::Full);
            }
            if (8..=14).contains(&index) {
                status = Some(STATIC_STATUS[index - 8]);
            }
            continue;
        }
        if first & 0xe0 != 0 {
            // 01xxxxxx: indexed into the table; 001xxxxx: a table size update.
            return Some(Scan::Full);
        }
        let index = read_integer(b, &mut at, 4)?;
        let is_status = match index {
            0 => {
                let (name, huffman) = read_string(b, &mut at)?;
                if huffman {
                    return Some(Scan::Full);
                }
                name == b":status"
            }
            i if i > STATIC_LEN => return Some(Scan::Full),
            i => (8..=14).contains(&i),
        };
        let (value, huffman) = read_string(b, &mut at)?;
        if is_status {
            if huffman {
                return Some(Scan::Full);
            }
            status = Some(parse_status(value)?);
        }
    }
    Some(Scan::Status(status))
}

/// A `:status` value: three digits.
pub fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a, b, c] if v.iter().all(u8::is_ascii_digit) => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// A header block that cannot be decoded: the connection's HPACK table is out of step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadBlock;

/// A connection's response header decoding: the in-place scan, else the full decoder with
/// the connection's dynamic table.
pub struct ResponseDecoder {
    full: loona_hpack::Decoder<'static>,
}

impl std::fmt::Debug for ResponseDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseDecoder")
    }
}

impl Default for ResponseDecoder {
    fn default() -> Self {
        let mut full = loona_hpack::Decoder::new();
        full.set_max_allowed_table_size(4096);
        ResponseDecoder { full }
    }
}

impl ResponseDecoder {
    /// The `:status` of a complete header block: `Ok(None)` when it has none, `Err` when the
    /// block cannot be decoded (a connection error: the table is out of step from here on).
    pub fn status(&mut self, block: &[u8]) -> Result<Option<u16>, BadBlock> {
        if let Scan::Status(s) = scan(block) {
            return Ok(s);
        }
        let mut status = None;
        let mut bad = false;
        self.full
            .decode_with_cb(block, |name, value| {
                if &*name == b":status" {
                    status = parse_status(&value);
                    bad |= status.is_none();
                }
            })
            .map_err(|_| BadBlock)?;
        if bad {
            return Err(BadBlock);
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(block: &[u8]) -> Vec<(String, String)> {
        loona_hpack::Decoder::new()
            .decode(block)
            .unwrap()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    #[test]
    fn a_rendered_request_becomes_pseudo_headers_and_its_own_headers() {
        let h1 = b"PUT /a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: lb\r\nConnection: close\r\nX-Long: v\r\nContent-Length: 3\r\n\r\nabc";
        let r = H2Request::from_http1(h1, true).unwrap();
        let want = [
            (":method", "PUT"),
            (":scheme", "https"),
            (":path", "/a?b=1"),
            (":authority", "example.com:8080"),
            ("user-agent", "lb"),
            ("x-long", "v"),
            ("content-length", "3"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(decoded(&r.block), want);
        assert_eq!(r.body, b"abc");
        let get = H2Request::from_http1(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", false).unwrap();
        assert_eq!(&get.block[..3], &[0x82, 0x86, 0x84]);
    }

    #[test]
    fn long_values_use_multi_byte_integers() {
        let value = "x".repeat(300);
        let h1 = format!("GET / HTTP/1.1\r\nHost: h\r\nX-A: {value}\r\n\r\n");
        let r = H2Request::from_http1(h1.as_bytes(), false).unwrap();
        assert_eq!(decoded(&r.block)[4].1, value);
    }

    #[test]
    fn static_and_literal_statuses_scan_in_place() {
        assert_eq!(scan(&[0x8d]), Scan::Status(Some(404)));
        // :status 201 as a literal with the static name, then server: nginx (name 54, 4-bit
        // prefix 15 + 39).
        let mut b = vec![0x08, 3, b'2', b'0', b'1', 0x0f, 39, 5];
        b.extend_from_slice(b"nginx");
        assert_eq!(scan(&b), Scan::Status(Some(201)));
        assert_eq!(scan(&[0xbe]), Scan::Full, "dynamic table entry 62");
        assert_eq!(
            scan(&[0x48, 3, b'2', b'0', b'0']),
            Scan::Full,
            "incremental indexing"
        );
        assert_eq!(scan(&[0x08, 0x83, 1, 2, 3]), Scan::Full, "Huffman :status");
    }

    #[test]
    fn the_full_decoder_keeps_the_dynamic_table_across_blocks() {
        let mut d = ResponseDecoder::default();
        // :status 202 with incremental indexing (becomes entry 62), then a block reading it.
        assert_eq!(d.status(&[0x48, 3, b'2', b'0', b'2']), Ok(Some(202)));
        assert_eq!(d.status(&[0xbe]), Ok(Some(202)));
        // The same block encoded by a real encoder, Huffman included.
        let mut enc = loona_hpack::Encoder::new();
        let block = enc.encode([(&b":status"[..], &b"503"[..]), (&b"server"[..], &b"x"[..])]);
        assert_eq!(ResponseDecoder::default().status(&block), Ok(Some(503)));
        assert_eq!(d.status(&[0xff, 0xff, 0xff]), Err(BadBlock));
        assert_eq!(d.status(&[0x88, 0x0f]), Err(BadBlock), "truncated");
    }
}
