//! Invalid UTF-8 in the text of Query and Parse messages, which PostgreSQL
//! refuses with 22021 ("invalid byte sequence for encoding "UTF8": 0xff").
//!
//! pgwire decodes those strings lossily (invalid bytes become U+FFFD), so
//! the check has to see the raw bytes. [`Utf8Guard`] sits between the
//! socket (after TLS) and pgwire's framing: it hands every byte on
//! unchanged, and notes each Query or Parse whose strings are not UTF-8 in
//! the connection's [`InvalidText`]. The handlers look there before they
//! run a statement and answer 22021 instead of running its lossy text.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::SqlError;

/// SQLSTATE 22021, character_not_in_repertoire.
const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";

/// Query and Parse frames longer than this are handed on unchecked rather
/// than held whole (pgwire refuses most of them anyway).
const MAX_CHECKED_FRAME: usize = 64 << 20;

/// The most read from the client at once.
const READ_CHUNK: usize = 8192;

/// Remembered invalid messages per connection; a client that pipelines more
/// than this many before reading an answer loses the oldest notes.
const MAX_NOTES: usize = 64;

/// The strings `s` as valid UTF-8, or PostgreSQL's 22021 naming the first
/// invalid sequence as PostgreSQL does: its lead byte and the bytes its
/// length implies (`0xe2 0x82 0x27`), whatever they are.
pub(crate) fn check(bytes: &[u8]) -> Result<&str, SqlError> {
    std::str::from_utf8(bytes).map_err(|e| invalid_sequence(&bytes[e.valid_up_to()..]))
}

fn invalid_sequence(at: &[u8]) -> SqlError {
    let lead = at.first().copied().unwrap_or_default();
    let len = match lead {
        b if b & 0xe0 == 0xc0 => 2,
        b if b & 0xf0 == 0xe0 => 3,
        b if b & 0xf8 == 0xf0 => 4,
        _ => 1,
    };
    let shown: Vec<String> = at.iter().take(len).map(|b| format!("0x{b:02x}")).collect();
    SqlError::new(
        CHARACTER_NOT_IN_REPERTOIRE,
        format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            shown.join(" ")
        ),
    )
}

/// One connection's notes of Query/Parse messages whose text was invalid:
/// the text as pgwire will hand it over (lossy), and the error to answer.
#[derive(Default)]
pub(crate) struct InvalidText {
    notes: parking_lot::Mutex<VecDeque<(String, SqlError)>>,
}

impl InvalidText {
    fn note(&self, lossy: String, error: SqlError) {
        let mut notes = self.notes.lock();
        if notes.len() == MAX_NOTES {
            notes.pop_front();
        }
        notes.push_back((lossy, error));
    }

    /// The error for a message whose (lossy) text is `text`, if the guard
    /// found it invalid. Notes before it belong to messages pgwire skipped
    /// (after an error, until Sync) and are dropped with it.
    pub(crate) fn take(&self, text: &str) -> Option<SqlError> {
        let mut notes = self.notes.lock();
        if notes.is_empty() {
            return None;
        }
        let at = notes.iter().position(|(lossy, _)| lossy == text)?;
        let (_, error) = notes.drain(..=at).next_back()?;
        Some(error)
    }
}

/// Where the guard is in the stream of frontend messages.
enum Scan {
    /// At the start of a message.
    Boundary,
    /// Inside a message that needs no check: this many bytes still to pass.
    Skip(usize),
    /// The framing made no sense: pass everything on, pgwire will refuse it.
    Off,
}

/// Reads the client's bytes for pgwire, noting invalid query text on the way.
pub(crate) struct Utf8Guard<IO> {
    inner: IO,
    /// Bytes read from the client and not yet handed on.
    raw: BytesMut,
    /// How many leading bytes of `raw` are checked and may be handed on.
    passable: usize,
    scan: Scan,
    /// Still in the untyped messages before and including StartupMessage.
    startup: bool,
    eof: bool,
    found: Arc<InvalidText>,
}

impl<IO> Utf8Guard<IO> {
    /// `buffered` holds bytes already read from `inner` (by TLS negotiation),
    /// to be handed on first.
    pub(crate) fn new(inner: IO, buffered: BytesMut, found: Arc<InvalidText>) -> Self {
        let mut guard = Utf8Guard {
            inner,
            raw: buffered,
            passable: 0,
            scan: Scan::Boundary,
            startup: true,
            eof: false,
            found,
        };
        guard.advance();
        guard
    }

    /// Gives back the read buffer's memory if it holds nothing.
    pub(crate) fn release_idle_memory(&mut self) {
        if self.raw.is_empty() {
            self.raw = BytesMut::new();
        }
    }

    /// Marks as passable every complete message (or part of a message that
    /// needs no check) at the front of `raw`.
    fn advance(&mut self) {
        loop {
            let rest = &self.raw[self.passable..];
            match self.scan {
                Scan::Off => {
                    self.passable = self.raw.len();
                    return;
                }
                Scan::Skip(n) => {
                    let k = n.min(rest.len());
                    self.passable += k;
                    if k < n {
                        self.scan = Scan::Skip(n - k);
                        return;
                    }
                    self.scan = Scan::Boundary;
                }
                Scan::Boundary if self.startup => {
                    // Untyped: length, then a request code.
                    if rest.len() < 8 {
                        return;
                    }
                    let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
                    let code = i32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
                    // SSLRequest and GSSENCRequest are followed by another
                    // untyped message; anything else is the startup itself.
                    const SSL_REQUEST: i32 = 80877103;
                    const GSSENC_REQUEST: i32 = 80877104;
                    self.startup = code == SSL_REQUEST || code == GSSENC_REQUEST;
                    self.scan = match usize::try_from(len) {
                        Ok(len) if len >= 8 => Scan::Skip(len),
                        _ => Scan::Off,
                    };
                }
                Scan::Boundary => {
                    if rest.len() < 5 {
                        return;
                    }
                    let kind = rest[0];
                    let len = i32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]);
                    let Some(total) = usize::try_from(len).ok().filter(|&l| l >= 4).map(|l| l + 1)
                    else {
                        self.scan = Scan::Off;
                        continue;
                    };
                    let checked = matches!(kind, b'Q' | b'P') && total <= MAX_CHECKED_FRAME;
                    if !checked {
                        self.scan = Scan::Skip(total);
                        continue;
                    }
                    if rest.len() < total {
                        // Hold the message until it is whole.
                        return;
                    }
                    self.check_message(kind, total);
                    self.passable += total;
                }
            }
        }
    }

    /// Query: the query string. Parse: the statement name, then the query.
    fn check_message(&self, kind: u8, total: usize) {
        let body = &self.raw[self.passable + 5..self.passable + total];
        let mut fields = body.split(|&b| b == 0);
        let (name, query) = match kind {
            b'P' => (fields.next(), fields.next()),
            _ => (None, fields.next()),
        };
        let query = query.unwrap_or_default();
        let invalid = [name.unwrap_or_default(), query]
            .into_iter()
            .find_map(|s| check(s).err());
        if let Some(error) = invalid {
            let lossy = String::from_utf8_lossy(query).into_owned();
            self.found.note(lossy, error);
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Utf8Guard<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.passable > 0 {
                let n = this.passable.min(buf.remaining());
                buf.put_slice(&this.raw[..n]);
                this.raw.advance(n);
                this.passable -= n;
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // A message cut short: hand on what there is, then the end.
                this.passable = this.raw.len();
                if this.passable == 0 {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            // Read into the stack, not `raw`: a connection waiting for its
            // client then holds no read buffer of its own.
            let mut chunk = [0u8; READ_CHUNK];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            } else {
                this.raw.extend_from_slice(read.filled());
                this.advance();
            }
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Utf8Guard<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn startup() -> Vec<u8> {
        let params = b"user\0u\0\0";
        let mut out = (params.len() as i32 + 8).to_be_bytes().to_vec();
        out.extend_from_slice(&196608i32.to_be_bytes());
        out.extend_from_slice(params);
        out
    }

    #[test]
    fn errors_name_the_sequence_as_postgres_does() {
        // Messages as PostgreSQL 15 words them for the same bytes.
        for (bytes, shown) in [
            (&b"SELECT '\xc3\x28 x'"[..], "0xc3 0x28"),
            (b"SELECT 'ok\xff'", "0xff"),
            (b"SELECT '\xe2\x82'", "0xe2 0x82 0x27"),
            (b"SELECT '\xf0\x9f\x98'", "0xf0 0x9f 0x98 0x27"),
            (b"\xe2\x82", "0xe2 0x82"),
        ] {
            let e = check(bytes).unwrap_err();
            assert_eq!(e.code, CHARACTER_NOT_IN_REPERTOIRE);
            assert_eq!(
                e.message,
                format!("invalid byte sequence for encoding \"UTF8\": {shown}")
            );
        }
        assert_eq!(check("héllo ✓".as_bytes()).unwrap(), "héllo ✓");
    }

    /// Every byte is handed on unchanged, in one read or one byte at a time,
    /// and exactly the invalid Query and Parse messages are noted.
    #[tokio::test]
    async fn passes_bytes_through_and_notes_invalid_text() {
        let mut stream = startup();
        stream.extend(msg(b'Q', b"SELECT 1\0"));
        stream.extend(msg(b'Q', b"SELECT '\xff'\0"));
        stream.extend(msg(b'B', b"\0\0\0\0\0\x01\0\0\0\x01\xff\0\0"));
        stream.extend(msg(b'P', b"s\0SELECT '\xc3\x28'\0\0\0"));
        stream.extend(msg(b'P', b"\xff\0SELECT 2\0\0\0"));
        stream.extend(msg(b'S', b""));
        for chunk in [stream.len(), 1, 7] {
            let found = Arc::new(InvalidText::default());
            let (mut client, server) = tokio::io::duplex(16);
            let mut guard = Utf8Guard::new(server, BytesMut::new(), found.clone());
            let sent = stream.clone();
            let writer = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                for part in sent.chunks(chunk) {
                    client.write_all(part).await.unwrap();
                }
            });
            let mut got = Vec::new();
            guard.read_to_end(&mut got).await.unwrap();
            writer.await.unwrap();
            assert_eq!(got, stream, "chunks of {chunk}");
            assert!(found.take("SELECT 1").is_none());
            let e = found
                .take("SELECT '\u{fffd}'")
                .expect("invalid query noted");
            assert!(e.message.ends_with(": 0xff"), "{}", e.message);
            let e = found
                .take("SELECT '\u{fffd}('")
                .expect("invalid parse noted");
            assert!(e.message.ends_with(": 0xc3 0x28"), "{}", e.message);
            // An invalid statement name is an error too (on the query's text).
            assert!(found.take("SELECT 2").is_some());
            assert!(found.notes.lock().is_empty());
        }
    }

    #[test]
    fn a_note_is_matched_past_skipped_messages() {
        let found = InvalidText::default();
        let e = || check(b"\xff").unwrap_err();
        found.note("a".into(), e());
        found.note("b".into(), e());
        assert!(found.take("c").is_none());
        assert!(found.take("b").is_some());
        assert!(
            found.take("a").is_none(),
            "a stale note goes with a later match"
        );
    }
}
