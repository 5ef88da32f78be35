//! Response bodies without per-request copies: static bytes, slices of one static filler buffer
//! (for `/bytes`, `/chunked` and sized `/`), and a paced body for `/fault/slow`. hyper frames a
//! body with an exact size hint with `Content-Length` and any other with chunked encoding.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

const FILLER_LEN: usize = 64 * 1024;
static FILLER: [u8; FILLER_LEN] = [b'x'; FILLER_LEN];

/// Frames of a slow body are spaced about this far apart.
const SLOW_TICK: Duration = Duration::from_millis(50);

/// The body of every response this server produces.
#[derive(Debug)]
pub(crate) struct ResponseBody {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Once(Option<Bytes>),
    Filler {
        left: u64,
        frame: u64,
        sized: bool,
    },
    Slow(Box<Slow>),
    /// A gRPC answer (boxed: the common answers stay small).
    Grpc(Box<Grpc>),
}

/// A gRPC answer: `message` `left` more times, then `trailers`.
#[derive(Debug)]
struct Grpc {
    message: Bytes,
    left: u64,
    trailers: Option<hyper::HeaderMap>,
}

#[derive(Debug)]
struct Slow {
    left: u64,
    step: u64,
    bps: u64,
    sleep: Pin<Box<Sleep>>,
    /// Whether `sleep` already holds the deadline of the next frame.
    armed: bool,
}

/// `n <= 64 KiB` filler bytes, sharing the static buffer.
fn filler_bytes(n: u64) -> Bytes {
    Bytes::from_static(&FILLER[..n as usize])
}

impl ResponseBody {
    pub(crate) fn from_static(bytes: &'static [u8]) -> Self {
        Self::once(Bytes::from_static(bytes))
    }

    pub(crate) fn once(bytes: Bytes) -> Self {
        Self {
            kind: Kind::Once(Some(bytes)),
        }
    }

    /// `len` bytes with a `Content-Length`, in frames of up to 64 KiB.
    pub(crate) fn sized(len: u64) -> Self {
        if len <= FILLER_LEN as u64 {
            return Self::once(filler_bytes(len));
        }
        Self::filler(len, FILLER_LEN as u64, true)
    }

    /// `len` bytes sent chunked, in at least four chunks when `len >= 4`.
    pub(crate) fn chunked(len: u64) -> Self {
        let frame = len.div_ceil(4).clamp(1, FILLER_LEN as u64);
        Self::filler(len, frame, false)
    }

    /// `len` bytes paced at `bps` bytes per second, with a `Content-Length`.
    pub(crate) fn slow(len: u64, bps: u64) -> Self {
        let bps = bps.max(1);
        let step = (bps * SLOW_TICK.as_millis() as u64 / 1000).clamp(1, FILLER_LEN as u64);
        let sleep = Box::pin(tokio::time::sleep_until(Instant::now()));
        let slow = Slow {
            left: len,
            step,
            bps,
            sleep,
            armed: false,
        };
        Self {
            kind: Kind::Slow(Box::new(slow)),
        }
    }

    /// A gRPC answer: `message` (framed) `count` times, then the trailers.
    pub(crate) fn grpc(message: Bytes, count: u64, trailers: hyper::HeaderMap) -> Self {
        Self {
            kind: Kind::Grpc(Box::new(Grpc {
                message,
                left: count,
                trailers: Some(trailers),
            })),
        }
    }

    fn filler(left: u64, frame: u64, sized: bool) -> Self {
        Self {
            kind: Kind::Filler { left, frame, sized },
        }
    }
}

impl Slow {
    /// Waits until the next frame is due, then schedules the one after it.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let len = self.step.min(self.left);
        if !self.armed {
            let pause = Duration::from_secs_f64(len as f64 / self.bps as f64);
            let due = self.sleep.deadline() + pause;
            self.sleep.as_mut().reset(due);
            self.armed = true;
        }
        std::task::ready!(self.sleep.as_mut().poll(cx));
        self.armed = false;
        self.left -= len;
        Poll::Ready(Some(filler_bytes(len)))
    }
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let data = match &mut self.get_mut().kind {
            Kind::Once(bytes) => bytes.take(),
            Kind::Grpc(g) => {
                if g.left > 0 {
                    g.left -= 1;
                    return Poll::Ready(Some(Ok(Frame::data(g.message.clone()))));
                }
                return Poll::Ready(g.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            Kind::Filler { left, frame, .. } => {
                let len = (*left).min(*frame);
                *left -= len;
                (len > 0).then(|| filler_bytes(len))
            }
            Kind::Slow(slow) => std::task::ready!(slow.poll_next(cx)),
        };
        Poll::Ready(data.map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Once(bytes) => bytes.is_none(),
            Kind::Filler { left, .. } => *left == 0,
            Kind::Slow(slow) => slow.left == 0,
            Kind::Grpc(g) => g.left == 0 && g.trailers.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Once(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Filler {
                left, sized: true, ..
            } => SizeHint::with_exact(*left),
            Kind::Filler { .. } | Kind::Grpc(_) => SizeHint::default(),
            Kind::Slow(slow) => SizeHint::with_exact(slow.left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body as _;

    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    fn drain(mut body: ResponseBody) -> Vec<usize> {
        let waker = std::task::Waker::from(std::sync::Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut frames = Vec::new();
        while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) {
            frames.push(frame.into_data().unwrap().len());
        }
        frames
    }

    #[test]
    fn sized_bodies_have_exact_hints_and_total_length() {
        let body = ResponseBody::sized(200_000);
        assert_eq!(body.size_hint().exact(), Some(200_000));
        assert_eq!(drain(body).iter().sum::<usize>(), 200_000);
    }

    #[test]
    fn chunked_bodies_have_no_exact_hint_and_several_frames() {
        let body = ResponseBody::chunked(100);
        assert_eq!(body.size_hint().exact(), None);
        assert_eq!(drain(body), vec![25, 25, 25, 25]);
        assert!(drain(ResponseBody::chunked(0)).is_empty());
    }
}
