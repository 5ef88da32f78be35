//! A byte stream with bytes already read from it put back in front: a TLS connection cannot
//! be peeked, so its first bytes are read to tell a `GET /ws` request apart (`h2.rs`), and
//! whichever server takes it (the WebSocket echo, hyper) reads them again first.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `first` (from `at` on), then `inner`; writes go to `inner`.
pub(crate) struct Rewind<S> {
    first: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Rewind<S> {
    pub(crate) fn new(first: Vec<u8>, inner: S) -> Rewind<S> {
        Rewind {
            first,
            at: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let left = &this.first[this.at..];
        if left.is_empty() {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let n = left.len().min(buf.remaining());
        buf.put_slice(&left[..n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_bytes_put_back_come_first_then_the_stream() {
        let inner: &[u8] = b" /ws HTTP/1.1";
        let mut s = Rewind::new(b"GET".to_vec(), inner);
        let mut all = String::new();
        s.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "GET /ws HTTP/1.1");
    }
}
