//! WebSocket (`ws://` and `wss://` URLs, RFC 6455) as a protocol of the one worker loop,
//! beside HTTP/1.1 and HTTP/2: each connection (over TLS for `wss://`, the handshake first)
//! opens with an HTTP/1.1 upgrade (its `Sec-WebSocket-Key`
//! answered by the right `Sec-WebSocket-Accept`, a `Sec-WebSocket-Protocol` the server chose
//! checked against the offered ones), then each request is one message (the body, a text
//! frame when it is UTF-8, else binary; masked as a client must) and its answer the next
//! whole message the server sends: the round trip is the request's latency. Pings are
//! answered with pongs, close frames are answered and counted by code (`loadbench_model::WsStats`).
//!
//! Files: `frame.rs` (the framing), `conn.rs` (`WsConn`: one connection slot), `proto.rs`
//! (`WebSocket`, the protocol). Closed model (`-c`) and open model (`--rate`), one message in
//! flight per connection.

pub mod frame;

mod conn;
mod proto;

pub(crate) use proto::WebSocket;

use base64::Engine as _;
use loadbench_plan::{Plan, WsMatch};
use sha1::{Digest, Sha1};

/// The GUID of RFC 6455, 1.3, appended to the key before hashing.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The largest upgrade answer read (its head; a longer one is malformed).
pub(crate) const MAX_HEAD: usize = 64 << 10;

/// The most unsent bytes a connection queues pongs behind (see `WsConn::frames`).
pub(crate) const PONG_BACKLOG: usize = 64 << 10;

/// What every connection of a WebSocket run sends: its upgrade request (less the key) and
/// the message.
#[derive(Debug)]
pub struct WsSetup {
    /// The upgrade request up to its `Sec-WebSocket-Key` line (each connection adds its own
    /// key and the blank line).
    head: Vec<u8>,
    /// The message's payload (`--body`, `--body-file`).
    message: Vec<u8>,
    /// The message goes as a text frame (its payload is UTF-8), else as a binary one.
    text: bool,
    /// The subprotocols offered (a `Sec-WebSocket-Protocol` header given with -H).
    offered: Option<String>,
    /// The URL, for messages.
    url: String,
    /// `--ws-match`: where a message's id is (`None`: the answer is the next message).
    pub(crate) matcher: Option<WsMatch>,
    /// `--ws-match` with the fixed message: its id (with values, each message's own).
    pub(crate) want: Option<serde_json::Value>,
}

/// Headers the upgrade sets itself: the user's are left out.
const OWN_HEADERS: [&str; 5] = [
    "upgrade",
    "connection",
    "sec-websocket-key",
    "sec-websocket-version",
    "content-length",
];

impl WsSetup {
    /// The upgrade request and the message of `plan` (a `ws://` target).
    pub fn new(plan: &Plan) -> WsSetup {
        let t = &plan.target;
        let req = &plan.request;
        let mut head = format!("GET {} HTTP/1.1\r\n", t.path);
        let name = |h: &str| {
            h.split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        };
        if !req.headers.iter().any(|h| name(h) == "host") {
            head.push_str(&format!("Host: {}\r\n", t.authority));
        }
        head.push_str("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n");
        let mut offered = None;
        for h in &req.headers {
            let n = name(h);
            if OWN_HEADERS.contains(&n.as_str()) {
                continue;
            }
            if n == "sec-websocket-protocol" {
                offered = h.split_once(':').map(|(_, v)| v.trim().to_string());
            }
            head.push_str(h);
            head.push_str("\r\n");
        }
        let body = &req.bytes[req.bytes.len() - req.body_len as usize..];
        let templated = plan.values.as_ref().is_some_and(|v| v.templated(0));
        let matcher = plan.ws_match.clone();
        // Checked when the plan resolved: the fixed message has its id.
        let want = matcher
            .as_ref()
            .filter(|_| !templated)
            .and_then(|m| m.value_of(body).ok());
        WsSetup {
            head: head.into_bytes(),
            text: std::str::from_utf8(body).is_ok(),
            message: body.to_vec(),
            offered,
            url: t.url.clone(),
            matcher,
            want,
        }
    }

    /// Appends the upgrade request with `key` to `out`.
    pub fn handshake(&self, key: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(b"Sec-WebSocket-Key: ");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\r\n\r\n");
    }

    /// Appends the message as one masked frame to `out`.
    pub fn message(&self, mask: [u8; 4], out: &mut Vec<u8>) {
        self.frame(&self.message, mask, out);
    }

    /// Appends `payload` (a message assembled with per-request values) as one masked frame
    /// to `out`: text when the message as written is UTF-8, as for the fixed one.
    pub fn frame(&self, payload: &[u8], mask: [u8; 4], out: &mut Vec<u8>) {
        let op = if self.text {
            frame::OP_TEXT
        } else {
            frame::OP_BINARY
        };
        frame::encode(out, op, payload, mask);
    }
}

/// The `Sec-WebSocket-Accept` a server must answer `key` with.
pub fn accept_key(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

/// A fresh `Sec-WebSocket-Key`: 16 bytes of `rng`, base64.
pub fn new_key(rng: &mut Rng) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The masks and keys of a worker: xorshift64*, seeded per worker from the clock.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from the clock and `salt` (never zero).
    pub fn new(salt: u64) -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng((t ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A frame's masking key.
    pub fn mask(&mut self) -> [u8; 4] {
        (self.next_u64() as u32).to_le_bytes()
    }
}

/// Checks the server's answer to the upgrade (`head`: through the blank line) against the
/// `accept` key and the offered subprotocols; the problem, in words, if it is not an upgrade.
pub fn check_upgrade(head: &[u8], accept: &str, offered: Option<&str>) -> Result<(), String> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !version.starts_with("HTTP/1.") || code.len() != 3 {
        return Err(format!("answered '{status_line}', not HTTP/1.1"));
    }
    if code != "101" {
        return Err(format!(
            "answered '{status_line}' instead of 101 Switching Protocols"
        ));
    }
    let mut got_accept = None;
    let mut upgrade = false;
    let mut protocol = None;
    for line in lines.take_while(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "upgrade" => upgrade = value.eq_ignore_ascii_case("websocket"),
            "sec-websocket-accept" => got_accept = Some(value.to_string()),
            "sec-websocket-protocol" => protocol = Some(value.to_string()),
            _ => {}
        }
    }
    if !upgrade {
        return Err("answered 101 without 'Upgrade: websocket'".into());
    }
    if got_accept.as_deref() != Some(accept) {
        return Err(format!(
            "answered 101 with Sec-WebSocket-Accept {:?}, expected {accept:?}",
            got_accept.unwrap_or_default()
        ));
    }
    if let Some(p) = protocol {
        let ok = offered.is_some_and(|o| o.split(',').any(|x| x.trim() == p));
        if !ok {
            return Err(format!(
                "chose the subprotocol '{p}', which was not offered (-H 'Sec-WebSocket-Protocol: …')"
            ));
        }
    }
    Ok(())
}

/// The preflight: one blocking upgrade on `sock`; `Err` is one line naming the fix.
pub fn probe<S: std::io::Read + std::io::Write>(
    mut sock: S,
    setup: &WsSetup,
) -> Result<(), String> {
    let key = new_key(&mut Rng::new(0));
    let mut req = Vec::new();
    setup.handshake(&key, &mut req);
    let url = &setup.url;
    let failed = |e: std::io::Error| {
        format!("{url}: the WebSocket upgrade failed ({e}): check that the server speaks WebSocket at this URL")
    };
    sock.write_all(&req).map_err(failed)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(at) = memchr::memmem::find(&head, b"\r\n\r\n") {
            break at + 4;
        }
        if head.len() > MAX_HEAD {
            return Err(format!("{url}: the answer to the WebSocket upgrade has no end of its head within 64 KiB: check the URL"));
        }
        match sock.read(&mut buf) {
            Ok(0) => {
                return Err(format!("{url}: the server closed the connection instead of answering the WebSocket upgrade: check that it speaks WebSocket at this URL"))
            }
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) => return Err(failed(e)),
        }
    };
    check_upgrade(&head[..end], &accept_key(&key), setup.offered.as_deref()).map_err(|why| {
        format!("{url}: the server {why} to the WebSocket upgrade: point the URL at the server's WebSocket endpoint (its path), or use http:// for plain HTTP")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_key_is_rfc_6455s_example() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        let key = new_key(&mut Rng::new(7));
        assert_eq!(key.len(), 24);
    }

    #[test]
    fn upgrade_answers_are_checked() {
        let accept = accept_key("k");
        let ok = format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n");
        assert!(check_upgrade(ok.as_bytes(), &accept, None).is_ok());
        let e = check_upgrade(b"HTTP/1.1 200 OK\r\n\r\n", &accept, None).unwrap_err();
        assert!(e.contains("'HTTP/1.1 200 OK' instead of 101"), "{e}");
        let wrong = ok.replace(&accept, "nope");
        assert!(check_upgrade(wrong.as_bytes(), &accept, None).is_err());
        let chat = ok.replace("\r\n\r\n", "\r\nSec-WebSocket-Protocol: chat\r\n\r\n");
        assert!(check_upgrade(chat.as_bytes(), &accept, None).is_err());
        assert!(check_upgrade(chat.as_bytes(), &accept, Some("superchat, chat")).is_ok());
    }
}
