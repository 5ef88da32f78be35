//! HPACK (RFC 7541) for the load engine. Requests: each endpoint's header block is encoded
//! once, before the run, from the HTTP/1.1 request the plan rendered (pseudo-headers from the
//! request line and `Host`, connection-specific headers dropped), as literals without
//! indexing and without Huffman, so every request writes the same bytes. Responses: only
//! `:status` is wanted; [`ResponseDecoder`] keeps the connection's dynamic table in step (sizes
//! and which entries are `:status`) and decodes Huffman-coded strings only as far as that needs
//! (see `huffman.rs`).

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
        let mut block = Vec::new();
        let body_at = encode_http1(bytes, https, &mut block)?;
        Ok(H2Request {
            block,
            body: bytes[body_at..].to_vec(),
        })
    }
}

/// Encodes a rendered HTTP/1.1 request's head as an HTTP/2 header block into `block`
/// (cleared first) with no allocation; returns where its body starts in `bytes`. A request
/// with values is assembled as HTTP/1.1 and encoded here, per request.
pub fn encode_http1(bytes: &[u8], https: bool, block: &mut Vec<u8>) -> Result<usize, String> {
    block.clear();
    let head = Http1Head::parse(bytes)?;
    pseudo_headers(block, head.method, head.path, https, head.authority);
    for (name, value) in head.fields() {
        block.push(0x00);
        integer(block, 7, 0x00, name.len());
        block.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
        string(block, value.as_bytes());
    }
    Ok(head.body_at)
}

/// A rendered HTTP/1.1 request's head as HTTP/2 and HTTP/3 carry it: the request line's
/// method and path, `Host` as the authority, and the other fields either protocol allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Http1Head<'b> {
    pub(crate) method: &'b str,
    pub(crate) path: &'b str,
    pub(crate) authority: Option<&'b str>,
    /// The header lines after the request line.
    lines: &'b str,
    /// Where the body starts.
    pub(crate) body_at: usize,
}

impl<'b> Http1Head<'b> {
    /// `Err` names what is missing; the plan renders every request in the shape read here.
    pub(crate) fn parse(bytes: &'b [u8]) -> Result<Http1Head<'b>, String> {
        let end = memmem::find(bytes, b"\r\n\r\n").ok_or("the request has no end of head")?;
        let head =
            std::str::from_utf8(&bytes[..end]).map_err(|_| "the request head is not UTF-8")?;
        let (first, lines) = head.split_once("\r\n").unwrap_or((head, ""));
        let mut parts = first.split(' ');
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if method.is_empty() || path.is_empty() {
            return Err(format!("the request line '{first}' has no method or path"));
        }
        let mut head = Http1Head {
            method,
            path,
            authority: None,
            lines,
            body_at: end + 4,
        };
        head.authority = head
            .all()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v);
        Ok(head)
    }

    fn all(&self) -> impl Iterator<Item = (&'b str, &'b str)> + Clone {
        self.lines
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim(), v.trim()))
    }

    /// The fields besides the pseudo-headers: connection-specific ones and `Host` dropped,
    /// `TE` kept only as `trailers` (RFC 9113 §8.2.2, RFC 9114 §4.2).
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&'b str, &'b str)> {
        self.all().filter(|(name, value)| {
            let is = |h: &str| name.eq_ignore_ascii_case(h);
            let te_ok = is("te") && value.eq_ignore_ascii_case("trailers");
            !(DROPPED.iter().any(|d| is(d)) || (is("te") && !te_ok))
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
pub(crate) fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 7, 0x00, s.len());
    out.extend_from_slice(s);
}

/// An HPACK integer with an `n`-bit prefix, the first byte's high bits from `flags`.
pub(crate) fn integer(out: &mut Vec<u8>, n: u32, flags: u8, value: usize) {
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
pub(crate) fn read_integer(b: &[u8], at: &mut usize, n: u32) -> Option<usize> {
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
pub(crate) fn read_string<'a>(b: &'a [u8], at: &mut usize) -> Option<(&'a [u8], bool)> {
    let huffman = *b.get(*at)? & 0x80 != 0;
    let len = read_integer(b, at, 7)?;
    let s = b.get(*at..at.checked_add(len)?)?;
    *at += len;
    Some((s, huffman))
}

/// The HPACK static table's names (RFC 7541 Appendix A), entries 1 to 61: their lengths count
/// in the dynamic table's size when a literal borrows one.
const STATIC_NAMES: [&str; 61] = [
    ":authority",
    ":method",
    ":method",
    ":path",
    ":path",
    ":scheme",
    ":scheme",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "accept",
    "access-control-allow-origin",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-range",
    "content-type",
    "cookie",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "link",
    "location",
    "max-forwards",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "refresh",
    "retry-after",
    "server",
    "set-cookie",
    "strict-transport-security",
    "transfer-encoding",
    "user-agent",
    "vary",
    "via",
    "www-authenticate",
];
/// The status codes of static table entries 8 to 14.
const STATIC_STATUS: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
/// Entries in the HPACK static table.
const STATIC_LEN: usize = 61;
/// The dynamic table's size limit: HTTP/2's default `SETTINGS_HEADER_TABLE_SIZE`, which the
/// client never changes.
const TABLE_LIMIT: usize = 4096;
/// What RFC 7541 §4.1 adds to an entry's name and value lengths.
const ENTRY_OVERHEAD: usize = 32;

/// A `:status` value: three digits.
pub fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a, b, c] if v.iter().all(u8::is_ascii_digit) => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// A `grpc-status` value: 1 to 3 digits, else [`GRPC_UNREADABLE`].
pub(crate) fn parse_grpc_status(v: &[u8]) -> u16 {
    if v.is_empty() || v.len() > 3 || !v.iter().all(u8::is_ascii_digit) {
        return GRPC_UNREADABLE;
    }
    v.iter().fold(0, |n, d| n * 10 + u16::from(d - b'0'))
}

/// A header block that cannot be decoded: the connection's HPACK table is out of step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadBlock;

/// What a header field (or a dynamic table entry) says about `:status` and `grpc-status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Other,
    Status(u16),
    /// A `:status` whose value is not three digits.
    BadStatus,
    /// A `grpc-status` (a gRPC call's outcome); [`GRPC_UNREADABLE`] when not 1 to 3 digits.
    Grpc(u16),
}

/// A `grpc-status` value that is not a number of 1 to 3 digits.
pub const GRPC_UNREADABLE: u16 = u16::MAX;

/// Which name an entry has, of those the decoder reads the value of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Other,
    Status,
    GrpcStatus,
}

/// What a response header block says: its `:status` and its `grpc-status`, when it has them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heads {
    /// `:status`.
    pub status: Option<u16>,
    /// `grpc-status` (in a gRPC call's trailers, or in the headers of a trailers-only answer).
    pub grpc: Option<u16>,
}

/// A dynamic table entry: only its size and what it says about `:status` are kept.
#[derive(Debug, Clone, Copy)]
struct Entry {
    size: usize,
    name_len: usize,
    name: Name,
    field: Field,
}

/// A connection's response header decoding (RFC 7541): the dynamic table is kept in step with
/// the server's (sizes, and which entries are `:status`), Huffman-coded strings are decoded only
/// as far as the table's size or `:status` needs, and values of other fields are skipped.
#[derive(Debug)]
pub struct ResponseDecoder {
    /// Newest first.
    table: std::collections::VecDeque<Entry>,
    size: usize,
    max: usize,
}

impl Default for ResponseDecoder {
    fn default() -> Self {
        ResponseDecoder {
            table: std::collections::VecDeque::new(),
            size: 0,
            max: TABLE_LIMIT,
        }
    }
}

impl ResponseDecoder {
    /// The `:status` of a complete header block: `Ok(None)` when it has none, `Err` when the
    /// block cannot be decoded (a connection error: the table is out of step from here on).
    pub fn status(&mut self, block: &[u8]) -> Result<Option<u16>, BadBlock> {
        self.decode(block).map(|h| h.status)
    }

    /// The `:status` and `grpc-status` of a complete header block (see [`Self::status`]).
    pub fn decode(&mut self, block: &[u8]) -> Result<Heads, BadBlock> {
        let mut at = 0;
        let mut heads = Heads::default();
        while at < block.len() {
            match self.field(block, &mut at).ok_or(BadBlock)? {
                Field::Other => {}
                Field::Status(s) => heads.status = Some(s),
                Field::BadStatus => return Err(BadBlock),
                Field::Grpc(code) => heads.grpc = Some(code),
            }
        }
        Ok(heads)
    }

    /// Decodes the representation at `at` (RFC 7541 §6), updating the table.
    fn field(&mut self, b: &[u8], at: &mut usize) -> Option<Field> {
        let first = *b.get(*at)?;
        if first & 0x80 != 0 {
            let index = read_integer(b, at, 7)?;
            return self.indexed(index).map(|e| e.field);
        }
        if first & 0xc0 == 0x40 {
            let index = read_integer(b, at, 6)?;
            let entry = self.literal(b, at, index, true)?;
            self.insert(entry);
            return Some(entry.field);
        }
        if first & 0xe0 == 0x20 {
            let max = read_integer(b, at, 5)?;
            if max > TABLE_LIMIT {
                return None;
            }
            self.max = max;
            self.evict(0);
            return Some(Field::Other);
        }
        // 0000xxxx without indexing, 0001xxxx never indexed.
        let index = read_integer(b, at, 4)?;
        self.literal(b, at, index, false).map(|e| e.field)
    }

    /// Table entry `index` (static from 1, dynamic from 62, newest first).
    fn indexed(&self, index: usize) -> Option<Entry> {
        match index {
            0 => None,
            i if i <= STATIC_LEN => {
                let status = (8..=14).contains(&i);
                Some(Entry {
                    size: 0,
                    name_len: STATIC_NAMES[i - 1].len(),
                    name: if status { Name::Status } else { Name::Other },
                    field: if status {
                        Field::Status(STATIC_STATUS[i - 8])
                    } else {
                        Field::Other
                    },
                })
            }
            i => self.table.get(i - STATIC_LEN - 1).copied(),
        }
    }

    /// A literal field whose name is table entry `index`, or a literal name when 0. Strings are
    /// decoded only where `sized` (the entry goes in the table) or `:status` needs them.
    fn literal(&self, b: &[u8], at: &mut usize, index: usize, sized: bool) -> Option<Entry> {
        let (name_len, name) = if index == 0 {
            let mut head = [0u8; 12];
            let len = text(read_string(b, at)?, &mut head)?;
            let name = match &head[..len.min(12)] {
                b":status" => Name::Status,
                b"grpc-status" => Name::GrpcStatus,
                _ => Name::Other,
            };
            (len, name)
        } else {
            let e = self.indexed(index)?;
            (e.name_len, e.name)
        };
        let value = read_string(b, at)?;
        let (value_len, field) = if name == Name::Status {
            let mut head = [0u8; 4];
            let len = text(value, &mut head)?;
            let status = (len == 3).then(|| parse_status(&head[..3])).flatten();
            (len, status.map_or(Field::BadStatus, Field::Status))
        } else if name == Name::GrpcStatus {
            let mut head = [0u8; 4];
            let len = text(value, &mut head)?;
            (len, Field::Grpc(parse_grpc_status(&head[..len.min(4)])))
        } else if sized {
            (text(value, &mut [])?, Field::Other)
        } else {
            (value.0.len(), Field::Other)
        };
        Some(Entry {
            size: name_len + value_len + ENTRY_OVERHEAD,
            name_len,
            name,
            field,
        })
    }

    /// Adds an entry (RFC 7541 §4.4: evict first; an entry larger than the table empties it).
    fn insert(&mut self, entry: Entry) {
        self.evict(entry.size);
        if entry.size <= self.max {
            self.size += entry.size;
            self.table.push_front(entry);
        }
    }

    /// Evicts the oldest entries until `room` more fits within the table's size.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.table.pop_back() {
                Some(old) => self.size -= old.size,
                None => break,
            }
        }
    }
}

/// A string literal's decoded length, its first bytes written to `head`.
pub(crate) fn text((raw, huffman): (&[u8], bool), head: &mut [u8]) -> Option<usize> {
    if huffman {
        return super::huffman::decode(raw, head);
    }
    let n = raw.len().min(head.len());
    head[..n].copy_from_slice(&raw[..n]);
    Some(raw.len())
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
    fn grpc_status_is_read_from_literals_the_dynamic_table_and_huffman_values() {
        let mut d = ResponseDecoder::default();
        // Trailers: grpc-status: 5 as a new name, indexed (it becomes dynamic entry 62).
        let mut b = vec![0x40, 11];
        b.extend_from_slice(b"grpc-status");
        b.extend_from_slice(&[1, b'5']);
        let want = |status, grpc| Ok(Heads { status, grpc });
        assert_eq!(d.decode(&b), want(None, Some(5)));
        // The same field again, by its index.
        assert_eq!(d.decode(&[0xbe]), want(None, Some(5)));
        // A trailers-only answer: :status 200, then entry 62's name with "16", then a
        // Huffman-coded "0" (five zero bits and the padding: 0x07) under the same name.
        let only = [0x88, 0x0f, 47, 2, b'1', b'6'];
        assert_eq!(d.decode(&only), want(Some(200), Some(16)));
        assert_eq!(d.decode(&[0x0f, 47, 0x81, 0x07]), want(None, Some(0)));
        assert_eq!(
            d.decode(&[0x0f, 47, 1, b'x']),
            want(None, Some(GRPC_UNREADABLE))
        );
        assert_eq!(d.status(&[0x88]), Ok(Some(200)));
    }

    #[test]
    fn static_literal_and_huffman_statuses_decode() {
        let mut d = ResponseDecoder::default();
        assert_eq!(d.status(&[0x8d]), Ok(Some(404)));
        // :status 201 as a literal with the static name, then server: nginx (name 54, 4-bit
        // prefix 15 + 39).
        let mut b = vec![0x08, 3, b'2', b'0', b'1', 0x0f, 39, 5];
        b.extend_from_slice(b"nginx");
        assert_eq!(d.status(&b), Ok(Some(201)));
        // RFC 7541 C.6.1: "302" Huffman-coded is 64 02.
        assert_eq!(d.status(&[0x08, 0x82, 0x64, 0x02]), Ok(Some(302)));
        assert_eq!(
            d.status(&[0x0f, 39, 0x82, 0x64, 0x02]),
            Ok(None),
            "server: 302"
        );
        assert_eq!(d.status(&[0xbe]), Err(BadBlock), "no entry 62 yet");
        assert_eq!(
            d.status(&[0x08, 2, b'2', b'0']),
            Err(BadBlock),
            "two digits"
        );
        // A literal name, Huffman-coded, that is :status.
        let name = super::super::huffman::tests::encode(b":status");
        let mut b = vec![0x00, 0x80 | name.len() as u8];
        b.extend_from_slice(&name);
        b.extend_from_slice(&[3, b'2', b'0', b'7']);
        assert_eq!(d.status(&b), Ok(Some(207)));
    }

    #[test]
    fn the_static_names_are_the_rfcs() {
        for (i, name) in STATIC_NAMES.iter().enumerate() {
            let block = [0x80 | (i as u8 + 1)];
            assert_eq!(decoded(&block)[0].0, *name, "static entry {}", i + 1);
        }
    }

    #[test]
    fn nginx_style_blocks_keep_the_table_within_its_size() {
        // What nginx sends: :status indexed, server and date with incremental indexing and
        // Huffman-coded values, over and over: the table evicts and stays within 4096 bytes.
        let huff = super::super::huffman::tests::encode;
        let mut d = ResponseDecoder::default();
        for i in 0..500 {
            let nginx = huff(b"nginx");
            let mut b = vec![0x88, 0x40 | 54, 0x80 | nginx.len() as u8];
            b.extend_from_slice(&nginx);
            let date =
                huff(format!("Wed, 25 Nov 2026 03:{:02}:{:02} GMT", i / 60, i % 60).as_bytes());
            b.extend_from_slice(&[0x40 | 33, 0x80 | date.len() as u8]);
            b.extend_from_slice(&date);
            assert_eq!(d.status(&b), Ok(Some(200)));
            assert!(d.size <= TABLE_LIMIT);
        }
        // server (6 + 5 + 32) and date (4 + 29 + 32) entries: 4096 / 108 pairs fit.
        assert_eq!(d.size, d.table.iter().map(|e| e.size).sum::<usize>());
        assert_eq!(d.table.len(), 2 * (4096 / 108) + 1);
    }

    /// A small deterministic generator for the cross-check.
    fn next(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// One random block for the cross-check: each representation, Huffman or not, table
    /// references, long entries that evict, size updates. `true` when it reads the table.
    fn random_block(seed: &mut u64) -> (Vec<u8>, bool) {
        let huff = super::super::huffman::tests::encode;
        let mut b = Vec::new();
        let r = next(seed);
        let code = format!("{}", 100 + r % 500);
        let value = |v: &[u8], h: bool, b: &mut Vec<u8>| {
            let bytes = if h { huff(v) } else { v.to_vec() };
            integer(b, 7, if h { 0x80 } else { 0 }, bytes.len());
            b.extend_from_slice(&bytes);
        };
        match r % 6 {
            0 => integer(&mut b, 7, 0x80, 62 + (next(seed) % 6) as usize),
            1 => {
                integer(&mut b, 6, 0x40, 8);
                value(code.as_bytes(), r & 64 != 0, &mut b);
            }
            2 => {
                b.push(0x40);
                value(b":status", r & 64 != 0, &mut b);
                value(code.as_bytes(), r & 128 != 0, &mut b);
            }
            3 => {
                let long = "v".repeat((next(seed) % 700) as usize);
                integer(&mut b, 6, 0x40, 54);
                value(long.as_bytes(), r & 64 != 0, &mut b);
                b.push(0x88);
            }
            4 => {
                integer(&mut b, 5, 0x20, (next(seed) % 4097) as usize);
                b.push(0x88);
            }
            _ => {
                integer(&mut b, 4, 0x10, 8);
                value(code.as_bytes(), r & 64 != 0, &mut b);
            }
        }
        (b, r.is_multiple_of(6))
    }

    #[test]
    fn the_table_stays_in_step_with_an_independent_decoder() {
        // Random blocks mixing every representation; loona-hpack's decoder (a full decoder)
        // and ours must agree on each block's :status, or both refuse it.
        let (mut ours, mut theirs) = (ResponseDecoder::default(), loona_hpack::Decoder::new());
        theirs.set_max_allowed_table_size(4096);
        let mut seed = 0x2545_f491_4f6c_dd1d;
        let (mut agreed, mut from_table) = (0, 0);
        for round in 0..3000 {
            let (b, reads_table) = random_block(&mut seed);
            let mut status = None;
            let theirs_result = theirs.decode_with_cb(&b, |n, v| {
                if &*n == b":status" {
                    status = parse_status(&v);
                }
            });
            match (ours.status(&b), theirs_result) {
                (Ok(s), Ok(())) => {
                    assert_eq!(s, status, "round {round}: {b:02x?}");
                    agreed += 1;
                    from_table += usize::from(reads_table && s.is_some());
                }
                (Err(_), Err(_)) => {
                    // Both refuse an index past the table: a connection would end here.
                    ours = ResponseDecoder::default();
                    theirs = loona_hpack::Decoder::new();
                    theirs.set_max_allowed_table_size(4096);
                }
                (o, t) => panic!("round {round}: ours {o:?}, theirs {t:?}, block {b:02x?}"),
            }
        }
        assert!(
            agreed > 2000 && from_table > 100,
            "{agreed} agreed, {from_table} from the table"
        );
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
