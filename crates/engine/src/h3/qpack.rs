//! QPACK (RFC 9204) for the load engine, without a dynamic table: we announce
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 (the default), so the server may only use the static
//! table and literals, and every field section starts with a Required Insert Count of 0.
//! Requests: each endpoint's field section is encoded once before the run from the HTTP/1.1
//! request the plan rendered (as HTTP/2's, see `h2::hpack`). Responses: only `:status` and
//! `grpc-status` are read; Huffman-coded values are decoded with HPACK's code (the same one).

use crate::h2::hpack::{self, integer, read_integer, read_string, string, Heads, Http1Head};

/// Static table entries (RFC 9204 Appendix A) the encoder uses.
mod index {
    pub(super) const AUTHORITY: usize = 0;
    pub(super) const PATH_ROOT: usize = 1;
    pub(super) const METHOD_GET: usize = 17;
    pub(super) const METHOD_POST: usize = 20;
    pub(super) const SCHEME_HTTP: usize = 22;
    pub(super) const SCHEME_HTTPS: usize = 23;
}

/// The static table's `:status` entries (RFC 9204 Appendix A): index and value. Every other
/// entry's name is neither `:status` nor `grpc-status`.
const STATIC_STATUS: [(usize, u16); 14] = [
    (24, 103),
    (25, 200),
    (26, 304),
    (27, 404),
    (28, 503),
    (63, 100),
    (64, 204),
    (65, 206),
    (66, 302),
    (67, 400),
    (68, 403),
    (69, 421),
    (70, 425),
    (71, 500),
];

/// The static table's size: an index at or past it is an error.
const STATIC_LEN: usize = 99;

/// A field section that cannot be decoded (or refers to a dynamic table we never allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BadSection;

/// Encodes a rendered HTTP/1.1 request's head as a QPACK field section into `block` (cleared
/// first); returns where its body starts in `bytes`.
pub(super) fn encode_http1(
    bytes: &[u8],
    https: bool,
    block: &mut Vec<u8>,
) -> Result<usize, String> {
    block.clear();
    let head = Http1Head::parse(bytes)?;
    // Required Insert Count 0, Delta Base 0: no dynamic table.
    block.extend_from_slice(&[0, 0]);
    match head.method {
        "GET" => indexed(block, index::METHOD_GET),
        "POST" => indexed(block, index::METHOD_POST),
        m => name_ref(block, index::METHOD_GET, m),
    }
    indexed(
        block,
        if https {
            index::SCHEME_HTTPS
        } else {
            index::SCHEME_HTTP
        },
    );
    match head.path {
        "/" => indexed(block, index::PATH_ROOT),
        p => name_ref(block, index::PATH_ROOT, p),
    }
    if let Some(a) = head.authority {
        name_ref(block, index::AUTHORITY, a);
    }
    for (name, value) in head.fields() {
        // A literal with a literal name: `001NH` and the name's length on 3 bits.
        integer(block, 3, 0x20, name.len());
        block.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
        string(block, value.as_bytes());
    }
    Ok(head.body_at)
}

/// An indexed field line of the static table: `11` and the index on 6 bits.
fn indexed(out: &mut Vec<u8>, i: usize) {
    integer(out, 6, 0xc0, i);
}

/// A literal with the static table's name `i`: `0101` and the index on 4 bits, then the value.
fn name_ref(out: &mut Vec<u8>, i: usize, value: &str) {
    integer(out, 4, 0x50, i);
    string(out, value.as_bytes());
}

/// The `:status` and `grpc-status` of a response's field section.
pub(super) fn decode(section: &[u8]) -> Result<Heads, BadSection> {
    let mut at = 0;
    let required = read_integer(section, &mut at, 8).ok_or(BadSection)?;
    let _delta_base = read_integer(section, &mut at, 7).ok_or(BadSection)?;
    if required != 0 {
        return Err(BadSection);
    }
    let mut heads = Heads::default();
    while at < section.len() {
        let b = section[at];
        let (name, value) = if b & 0x80 != 0 {
            // Indexed field line; T (0x40) must say static.
            if b & 0x40 == 0 {
                return Err(BadSection);
            }
            let i = read_integer(section, &mut at, 6).ok_or(BadSection)?;
            (static_name(i)?, Value::Static(i))
        } else if b & 0x40 != 0 {
            // Literal with name reference; T (0x10) must say static.
            if b & 0x10 == 0 {
                return Err(BadSection);
            }
            let i = read_integer(section, &mut at, 4).ok_or(BadSection)?;
            let name = static_name(i)?;
            (
                name,
                Value::Literal(read_string(section, &mut at).ok_or(BadSection)?),
            )
        } else if b & 0x20 != 0 {
            // Literal with literal name: H is 0x08, the length on 3 bits.
            let huffman = b & 0x08 != 0;
            let len = read_integer(section, &mut at, 3).ok_or(BadSection)?;
            let raw = section.get(at..at.checked_add(len).ok_or(BadSection)?);
            let raw = raw.ok_or(BadSection)?;
            at += len;
            let name = literal_name(raw, huffman)?;
            (
                name,
                Value::Literal(read_string(section, &mut at).ok_or(BadSection)?),
            )
        } else {
            // Post-base references: the dynamic table, which we never allowed.
            return Err(BadSection);
        };
        match (name, value) {
            (Name::Status, Value::Static(i)) => heads.status = static_status(i),
            (Name::Status, Value::Literal(v)) => heads.status = Some(literal_status(v)?),
            (Name::Grpc, Value::Literal(v)) => {
                let mut digits = [0u8; 4];
                let n = hpack::text(v, &mut digits).ok_or(BadSection)?;
                heads.grpc = Some(hpack::parse_grpc_status(&digits[..n.min(4)]));
            }
            _ => {}
        }
    }
    Ok(heads)
}

/// Which of the names the decoder reads a field has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Other,
    Status,
    Grpc,
}

/// A field line's value: a static entry's, or a string literal (its bytes, Huffman-coded).
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Static(usize),
    Literal((&'a [u8], bool)),
}

fn static_name(i: usize) -> Result<Name, BadSection> {
    if i >= STATIC_LEN {
        return Err(BadSection);
    }
    Ok(match static_status(i) {
        Some(_) => Name::Status,
        None => Name::Other,
    })
}

fn static_status(i: usize) -> Option<u16> {
    STATIC_STATUS
        .iter()
        .find(|&&(k, _)| k == i)
        .map(|&(_, s)| s)
}

/// A literal name: `:status`, `grpc-status` or another.
fn literal_name(raw: &[u8], huffman: bool) -> Result<Name, BadSection> {
    let mut head = [0u8; 12];
    let n = hpack::text((raw, huffman), &mut head).ok_or(BadSection)?;
    Ok(match &head[..n.min(head.len())] {
        b":status" if n == 7 => Name::Status,
        b"grpc-status" if n == 11 => Name::Grpc,
        _ => Name::Other,
    })
}

/// A literal `:status` value: three digits.
fn literal_status(v: (&[u8], bool)) -> Result<u16, BadSection> {
    let mut digits = [0u8; 4];
    let n = hpack::text(v, &mut digits).ok_or(BadSection)?;
    if n > 3 {
        return Err(BadSection);
    }
    hpack::parse_status(&digits[..n]).ok_or(BadSection)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_encodes_with_static_entries_and_literals() {
        let h1 = b"GET / HTTP/1.1\r\nHost: localhost:8443\r\nUser-Agent: lb\r\nConnection: keep-alive\r\n\r\n";
        let mut block = Vec::new();
        let body_at = encode_http1(h1, true, &mut block).unwrap();
        assert_eq!(body_at, h1.len());
        let mut want = vec![0, 0, 0xc0 | 17, 0xc0 | 23, 0xc0 | 1, 0x50];
        want.push(14);
        want.extend_from_slice(b"localhost:8443");
        // A literal name of 10 bytes: 7 on the 3-bit prefix, then 3.
        want.extend_from_slice(&[0x20 | 7, 3]);
        want.extend_from_slice(b"user-agent");
        want.push(2);
        want.extend_from_slice(b"lb");
        assert_eq!(block, want);
    }

    #[test]
    fn a_long_path_and_an_odd_method_use_name_references() {
        let h1 = b"DELETE /items/12345678901234567890 HTTP/1.1\r\nHost: h\r\n\r\n";
        let mut block = Vec::new();
        encode_http1(h1, false, &mut block).unwrap();
        // :method by name (index 17 on 4 bits: 15 + 2), then the value.
        assert_eq!(&block[2..6], &[0x5f, 0x02, 6, b'D']);
        assert!(block.windows(2).any(|w| w == [0xc0 | 22, 0x51]));
    }

    #[test]
    fn statuses_decode_from_static_entries_and_literals() {
        assert_eq!(decode(&[0, 0, 0xc0 | 25]).unwrap().status, Some(200));
        assert_eq!(decode(&[0, 0, 0xff, 71 - 63]).unwrap().status, Some(500));
        // 418 as a literal with the name of entry 24 (`:status`).
        let lit = [0, 0, 0x5f, 24 - 15, 3, b'4', b'1', b'8'];
        assert_eq!(decode(&lit).unwrap().status, Some(418));
        // A literal name, Huffman-coded value.
        let mut s = vec![0, 0, 0x20 | 7, 0];
        s.extend_from_slice(b":status");
        let code = crate::h2::huffman::tests::encode(b"201");
        s.push(0x80 | code.len() as u8);
        s.extend_from_slice(&code);
        assert_eq!(decode(&s).unwrap().status, Some(201));
    }

    #[test]
    fn grpc_status_and_other_fields_are_read_or_skipped() {
        let mut s = vec![0, 0, 0xc0 | 25, 0x5f, 46 - 15, 4];
        s.extend_from_slice(b"json");
        s.extend_from_slice(&[0x20 | 7, 4]);
        s.extend_from_slice(b"grpc-status");
        s.extend_from_slice(&[2, b'1', b'4']);
        let h = decode(&s).unwrap();
        assert_eq!((h.status, h.grpc), (Some(200), Some(14)));
    }

    #[test]
    fn dynamic_references_and_truncations_are_refused() {
        assert_eq!(decode(&[1, 0, 0xc0 | 25]), Err(BadSection));
        assert_eq!(decode(&[0, 0, 0x80 | 3]), Err(BadSection));
        assert_eq!(decode(&[0, 0, 0x10]), Err(BadSection));
        assert_eq!(decode(&[0, 0, 0xc0 | 63, 0x3f]), Err(BadSection));
        assert_eq!(decode(&[0, 0, 0x51, 5, b'a']), Err(BadSection));
        // Index 99 is past the static table.
        assert_eq!(decode(&[0, 0, 0xff, 99 - 63]), Err(BadSection));
    }
}
