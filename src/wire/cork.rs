//! The server's output held back until the client is owed an answer, as
//! PostgreSQL holds it: the replies to Parse, Bind, Describe, Execute and
//! Close wait for the Sync (or Flush) that ends the batch, so a prepared
//! statement's ParseComplete, BindComplete, rows, CommandComplete and
//! ReadyForQuery leave in one write and wake the client once.
//!
//! pgwire flushes after many of its messages (`send`), and each flush of a
//! TCP socket with TCP_NODELAY is a segment of its own. [`Corked`] sits
//! under pgwire's framing and turns those flushes into nothing while the
//! connection is corked; the message loop (`wire::socket`) corks for the
//! messages PostgreSQL answers lazily and uncorks for the rest. Output past
//! [`WRITE_THROUGH`] is written anyway (a large result streams in pieces of
//! about that size, as PostgreSQL's 8 KB send buffer does), so memory stays
//! bounded whatever a statement returns.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Held output beyond this is written even while corked.
const WRITE_THROUGH: usize = 64 * 1024;

/// A buffer grown past this by one large answer is given back once it has
/// been written, so a connection does not keep its largest answer's size.
const KEEP_CAPACITY: usize = 16 * 1024;

/// Output written to `inner` only when flushed while not corked (or when
/// more than [`WRITE_THROUGH`] is held).
pub(crate) struct Corked<IO> {
    inner: IO,
    held: Vec<u8>,
    /// How much of `held` has reached `inner`.
    sent: usize,
    corked: bool,
}

impl<IO> Corked<IO> {
    pub(crate) fn new(inner: IO) -> Self {
        Corked {
            inner,
            held: Vec::new(),
            sent: 0,
            corked: false,
        }
    }

    /// While corked, flushes hold the output back.
    pub(crate) fn set_corked(&mut self, corked: bool) {
        self.corked = corked;
    }

    pub(crate) fn get_mut(&mut self) -> &mut IO {
        &mut self.inner
    }

    /// Gives back the buffer's memory if nothing is held (an idle
    /// connection keeps no output buffer).
    pub(crate) fn release_idle_memory(&mut self) {
        if self.held.is_empty() {
            self.held = Vec::new();
        }
    }
}

impl<IO: AsyncWrite + Unpin> Corked<IO> {
    /// Writes everything held to `inner`.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.held.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.held.clear();
        self.sent = 0;
        if self.held.capacity() > KEEP_CAPACITY {
            self.held = Vec::new();
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Corked<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Corked<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.held.len() >= WRITE_THROUGH {
            ready!(this.poll_write_held(cx))?;
        }
        this.held.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.corked && this.held.len() < WRITE_THROUGH {
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Counts the writes that reach the inner stream.
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.writes.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn corked_flushes_hold_output_until_an_uncorked_flush() {
        let mut out = Corked::new(Recorder::default());
        out.set_corked(true);
        out.write_all(b"parse-complete").await.unwrap();
        out.flush().await.unwrap();
        out.write_all(b"bind-complete").await.unwrap();
        out.flush().await.unwrap();
        assert!(out.get_mut().writes.is_empty());
        out.set_corked(false);
        out.write_all(b"ready").await.unwrap();
        out.flush().await.unwrap();
        assert_eq!(
            out.get_mut().writes,
            vec![b"parse-completebind-completeready".to_vec()]
        );
    }

    #[tokio::test]
    async fn a_large_answer_is_written_while_corked_and_its_buffer_given_back() {
        let mut out = Corked::new(Recorder::default());
        out.set_corked(true);
        let row = vec![7u8; 1000];
        for _ in 0..200 {
            out.write_all(&row).await.unwrap();
            out.flush().await.unwrap();
        }
        let written: usize = out.get_mut().writes.iter().map(Vec::len).sum();
        assert!(written >= 128 * 1000, "only {written} bytes written");
        assert!(out.held.len() < WRITE_THROUGH);
        out.set_corked(false);
        out.flush().await.unwrap();
        let written: usize = out.get_mut().writes.iter().map(Vec::len).sum();
        assert_eq!(written, 200 * 1000);
        assert!(out.held.capacity() <= KEEP_CAPACITY);
        out.release_idle_memory();
        assert_eq!(out.held.capacity(), 0);
    }

    #[tokio::test]
    async fn reads_pass_through() {
        let mut out = Corked::new(&b"abc"[..]);
        let mut got = String::new();
        out.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "abc");
    }
}
