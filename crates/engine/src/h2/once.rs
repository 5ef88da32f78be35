//! One HTTP/2 request on a connection of its own, blocking, for what must be asked of a server
//! before the load (a gRPC server's reflection service: docs/transport.md, "gRPC"). Not the
//! load's path: it reuses the load's framing and header coding, answers the server's SETTINGS
//! and PINGs, gives back flow-control window as the answer comes, and keeps at most
//! [`MAX_ANSWER`] bytes of body.

use super::frame::{self, flag, kind, Event, FrameError, FrameReader, Head};
use super::hpack::{H2Request, ResponseDecoder};
use crate::tls::TlsClient;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The most answer body kept (a reflection answer of every file a service needs).
pub const MAX_ANSWER: usize = 16 << 20;

/// What the one request got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The `:status`.
    pub status: u16,
    /// The `grpc-status` of the headers or trailers, if any.
    pub grpc_status: Option<u16>,
    /// The body, whole.
    pub body: Vec<u8>,
}

/// Sends `request` (a rendered HTTP/1.1 request, re-encoded as HTTP/2) to `addr` on a new
/// connection (over `tls` when given, which must offer ALPN h2) and reads its whole answer
/// within `timeout`. `Err` says what went wrong in words.
pub fn call_once(
    addr: SocketAddr,
    tls: Option<&TlsClient>,
    request: &[u8],
    timeout: Duration,
) -> Result<Answer, String> {
    let deadline = Instant::now() + timeout;
    let req = H2Request::from_http1(request, tls.is_some())?;
    match tls {
        Some(t) => {
            let mut s = t.probe_stream(addr, timeout)?;
            s.sock.set_read_timeout(Some(timeout)).map_err(io)?;
            exchange(&mut s, &req, deadline)
        }
        None => {
            let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(io)?;
            s.set_read_timeout(Some(timeout)).map_err(io)?;
            exchange(&mut s, &req, deadline)
        }
    }
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// The preface, the request on stream 1, then frames until stream 1 ends.
fn exchange(s: &mut impl ReadWrite, req: &H2Request, deadline: Instant) -> Result<Answer, String> {
    let mut out = frame::PREFACE.to_vec();
    frame::settings(&mut out, &[(frame::setting::ENABLE_PUSH, 0)]);
    let end = req.body.is_empty();
    frame::headers(
        &mut out,
        1,
        &req.block,
        end,
        frame::DEFAULT_MAX_FRAME as usize,
    );
    for (i, chunk) in req
        .body
        .chunks(frame::DEFAULT_MAX_FRAME as usize)
        .enumerate()
    {
        let last = (i + 1) * frame::DEFAULT_MAX_FRAME as usize >= req.body.len();
        frame::data(&mut out, 1, chunk, last);
    }
    s.write_all(&out).map_err(io)?;
    let mut reader = FrameReader::new(frame::DEFAULT_MAX_FRAME);
    let mut payload = Vec::new();
    let mut answer = Reading::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if Instant::now() > deadline {
            return Err("no whole answer in time".into());
        }
        let n = s.read(&mut buf).map_err(io)?;
        if n == 0 {
            return Err("the server closed the connection before answering".into());
        }
        let mut replies = Vec::new();
        let mut got = Vec::new();
        reader
            .feed::<FrameError>(&buf[..n], &mut payload, |e| {
                got.push(match e {
                    Event::Data {
                        stream,
                        flow,
                        bytes,
                        end,
                        ..
                    } => Got::Data(stream, flow, bytes.to_vec(), end),
                    Event::Frame(head, p) => Got::Frame(head, p.to_vec()),
                });
                Ok(())
            })
            .map_err(|e| format!("a broken HTTP/2 frame ({e:?})"))?;
        for g in got {
            if answer.on(g, &mut replies)? {
                s.write_all(&replies).map_err(io)?;
                return answer.done();
            }
        }
        s.write_all(&replies).map_err(io)?;
    }
}

/// What the frame reader gave, owned.
enum Got {
    /// DATA of a stream: its id, the bytes against the windows, the body bytes, END_STREAM.
    Data(u32, u32, Vec<u8>, bool),
    /// Any other frame, whole.
    Frame(Head, Vec<u8>),
}

/// A blocking stream of either kind.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Stream 1's answer so far.
#[derive(Default)]
struct Reading {
    decoder: ResponseDecoder,
    /// A header block until its END_HEADERS.
    block: Vec<u8>,
    status: Option<u16>,
    grpc: Option<u16>,
    body: Vec<u8>,
    /// The block being read ends the stream (trailers, or a bodiless answer).
    ending: bool,
}

impl Reading {
    /// One frame (or DATA chunk); `replies` gets what must be sent back. `Ok(true)` once
    /// stream 1 ended.
    fn on(&mut self, got: Got, replies: &mut Vec<u8>) -> Result<bool, String> {
        let (head, payload) = match got {
            Got::Data(stream, flow, bytes, end) => {
                if stream != 1 {
                    return Ok(false);
                }
                if self.body.len() + bytes.len() > MAX_ANSWER {
                    return Err(format!("an answer over {} MiB", MAX_ANSWER >> 20));
                }
                self.body.extend_from_slice(&bytes);
                if flow > 0 && !end {
                    frame::window_update(replies, 0, flow);
                    frame::window_update(replies, 1, flow);
                }
                return Ok(end);
            }
            Got::Frame(head, payload) => (head, payload),
        };
        match head.kind {
            kind::SETTINGS if head.flags & flag::ACK == 0 => {
                frame::frame(replies, kind::SETTINGS, flag::ACK, 0, &[]);
            }
            kind::PING if head.flags & flag::ACK == 0 => {
                frame::frame(replies, kind::PING, flag::ACK, 0, &payload);
            }
            kind::GOAWAY => return Err("the server sent GOAWAY before answering".into()),
            kind::RST_STREAM if head.stream == 1 => {
                let code = frame::be32(&payload, 0);
                return Err(format!(
                    "the server reset the request (HTTP/2 error code {code})"
                ));
            }
            kind::HEADERS | kind::CONTINUATION if head.stream == 1 => {
                let fragment = if head.kind == kind::HEADERS {
                    frame::headers_fragment(head, &payload).map_err(|e| format!("{e:?}"))?
                } else {
                    &payload
                };
                self.block.extend_from_slice(fragment);
                if head.kind == kind::HEADERS && head.flags & flag::END_STREAM != 0 {
                    self.ending = true;
                }
                if head.flags & flag::END_HEADERS != 0 {
                    let heads = self
                        .decoder
                        .decode(&self.block)
                        .map_err(|_| "a header block that cannot be decoded".to_string())?;
                    self.block.clear();
                    self.status = self.status.or(heads.status);
                    self.grpc = heads.grpc.or(self.grpc);
                }
                return Ok(self.ending && head.flags & flag::END_HEADERS != 0);
            }
            _ => {}
        }
        Ok(false)
    }

    fn done(self) -> Result<Answer, String> {
        let status = self.status.ok_or("an answer without :status")?;
        Ok(Answer {
            status,
            grpc_status: self.grpc,
            body: self.body,
        })
    }
}
