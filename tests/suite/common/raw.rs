//! A bare protocol client for what tokio-postgres does not show: command
//! tags, notices, the ReadyForQuery status byte, ParameterStatus, text
//! parameters in the extended protocol, SSLRequest answers.

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// An ErrorResponse or NoticeResponse: field code -> value.
pub type Fields = BTreeMap<char, String>;

/// One backend message, decoded as far as tests need.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    Tag(String),
    Columns(Vec<(String, u32)>),
    Row(Vec<Option<String>>),
    Notice(Fields),
    Error(Fields),
    Parameter(String, String),
    ParameterTypes(Vec<u32>),
    Ready(char),
    EmptyQuery,
    PortalSuspended,
    Other(char),
}

/// Everything up to and including ReadyForQuery.
#[derive(Debug, Default)]
pub struct Reply {
    pub messages: Vec<Msg>,
}

impl Reply {
    pub fn tags(&self) -> Vec<&str> {
        self.messages
            .iter()
            .filter_map(|m| match m {
                Msg::Tag(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// (SQLSTATE, message) of each notice.
    pub fn notices(&self) -> Vec<(String, String)> {
        self.fields(|m| match m {
            Msg::Notice(f) => Some(f),
            _ => None,
        })
    }

    /// (SQLSTATE, message) of each error.
    pub fn errors(&self) -> Vec<(String, String)> {
        self.fields(|m| match m {
            Msg::Error(f) => Some(f),
            _ => None,
        })
    }

    /// Field `key` of the first ErrorResponse (`W`: CONTEXT).
    pub fn error_field(&self, key: char) -> Option<String> {
        self.messages.iter().find_map(|m| match m {
            Msg::Error(f) => f.get(&key).cloned(),
            _ => None,
        })
    }

    fn fields(&self, pick: impl Fn(&Msg) -> Option<&Fields>) -> Vec<(String, String)> {
        self.messages
            .iter()
            .filter_map(pick)
            .map(|f| (f[&'C'].clone(), f[&'M'].clone()))
            .collect()
    }

    pub fn rows(&self) -> Vec<Vec<Option<String>>> {
        self.messages
            .iter()
            .filter_map(|m| match m {
                Msg::Row(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    /// The first column of the first row.
    pub fn value(&self) -> String {
        self.rows()[0][0].clone().expect("not NULL")
    }

    pub fn columns(&self) -> Vec<(String, u32)> {
        self.messages
            .iter()
            .find_map(|m| match m {
                Msg::Columns(c) => Some(c.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    pub fn parameters(&self) -> BTreeMap<String, String> {
        self.messages
            .iter()
            .filter_map(|m| match m {
                Msg::Parameter(k, v) => Some((k.clone(), v.clone())),
                _ => None,
            })
            .collect()
    }

    /// The ReadyForQuery transaction status: 'I', 'T' or 'E'.
    pub fn status(&self) -> char {
        match self.messages.last() {
            Some(Msg::Ready(s)) => *s,
            other => panic!("no ReadyForQuery at the end: {other:?}"),
        }
    }
}

pub struct RawClient<S> {
    stream: S,
    buf: BytesMut,
}

/// The 8-byte SSLRequest / GSSENCRequest packets.
pub const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
pub const GSSENC_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30];

/// Sends `request` on a new connection and returns the one-byte answer.
pub async fn negotiation_answer(addr: std::net::SocketAddr, request: [u8; 8]) -> u8 {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&request).await.unwrap();
    stream.read_u8().await.unwrap()
}

impl RawClient<TcpStream> {
    /// Connects and starts up as `user` (trust auth).
    pub async fn connect(addr: std::net::SocketAddr, user: &str) -> (Self, Reply) {
        let stream = TcpStream::connect(addr).await.unwrap();
        RawClient::start(stream, user).await
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> RawClient<S> {
    /// Sends the startup packet on `stream` and reads to ReadyForQuery.
    pub async fn start(stream: S, user: &str) -> (Self, Reply) {
        let mut client = RawClient {
            stream,
            buf: BytesMut::new(),
        };
        let mut body = BytesMut::new();
        body.put_i32(196608); // protocol 3.0
        for (k, v) in [
            ("user", user),
            ("database", "keyclaim"),
            ("application_name", "raw"),
        ] {
            put_cstr(&mut body, k);
            put_cstr(&mut body, v);
        }
        body.put_u8(0);
        let mut packet = BytesMut::new();
        packet.put_i32(body.len() as i32 + 4);
        packet.put(body);
        client.stream.write_all(&packet).await.unwrap();
        let reply = client.read_until_ready().await;
        (client, reply)
    }

    /// A simple query.
    pub async fn query(&mut self, sql: &str) -> Reply {
        let mut body = BytesMut::new();
        put_cstr(&mut body, sql);
        self.send(b'Q', &body).await;
        self.read_until_ready().await
    }

    /// Parse (no declared types), Describe statement, Sync: what a driver
    /// sends to learn a statement's parameters and result columns.
    pub async fn describe(&mut self, sql: &str) -> Reply {
        let mut parse = BytesMut::new();
        put_cstr(&mut parse, "");
        put_cstr(&mut parse, sql);
        parse.put_i16(0);
        self.send(b'P', &parse).await;
        let mut describe = BytesMut::new();
        describe.put_u8(b'S');
        put_cstr(&mut describe, "");
        self.send(b'D', &describe).await;
        self.send(b'S', &[]).await;
        self.read_until_ready().await
    }

    /// Parse (no declared types), Bind with text parameters and text
    /// results, Describe portal, Execute, Sync.
    pub async fn extended(&mut self, sql: &str, params: &[Option<&str>]) -> Reply {
        let mut parse = BytesMut::new();
        put_cstr(&mut parse, "");
        put_cstr(&mut parse, sql);
        parse.put_i16(0);
        self.send(b'P', &parse).await;

        let mut bind = BytesMut::new();
        put_cstr(&mut bind, "");
        put_cstr(&mut bind, "");
        bind.put_i16(0); // all parameters in text
        bind.put_i16(params.len() as i16);
        for p in params {
            match p {
                Some(v) => {
                    bind.put_i32(v.len() as i32);
                    bind.put_slice(v.as_bytes());
                }
                None => bind.put_i32(-1),
            }
        }
        bind.put_i16(0); // all results in text
        self.send(b'B', &bind).await;

        let mut describe = BytesMut::new();
        describe.put_u8(b'P');
        put_cstr(&mut describe, "");
        self.send(b'D', &describe).await;

        let mut execute = BytesMut::new();
        put_cstr(&mut execute, "");
        execute.put_i32(0);
        self.send(b'E', &execute).await;
        self.send(b'S', &[]).await;
        self.read_until_ready().await
    }

    pub async fn send(&mut self, kind: u8, body: &[u8]) {
        let mut packet = BytesMut::with_capacity(body.len() + 5);
        packet.put_u8(kind);
        packet.put_i32(body.len() as i32 + 4);
        packet.put_slice(body);
        self.stream.write_all(&packet).await.unwrap();
    }

    /// Reads messages until ReadyForQuery (or the connection closes).
    pub async fn read_until_ready(&mut self) -> Reply {
        let mut reply = Reply::default();
        while let Some(msg) = self.read_message().await {
            let ready = matches!(msg, Msg::Ready(_));
            reply.messages.push(msg);
            if ready {
                break;
            }
        }
        reply
    }

    pub async fn read_message(&mut self) -> Option<Msg> {
        while self.buf.len() < 5 || self.buf.len() < 1 + frame_len(&self.buf) {
            if self.stream.read_buf(&mut self.buf).await.ok()? == 0 {
                return None;
            }
        }
        let kind = self.buf.get_u8() as char;
        let len = self.buf.get_i32() as usize - 4;
        let mut body = self.buf.split_to(len);
        Some(match kind {
            'C' => Msg::Tag(get_cstr(&mut body)),
            'T' => {
                let n = body.get_i16();
                Msg::Columns(
                    (0..n)
                        .map(|_| {
                            let name = get_cstr(&mut body);
                            body.advance(6);
                            let oid = body.get_u32();
                            body.advance(8);
                            (name, oid)
                        })
                        .collect(),
                )
            }
            'D' => {
                let n = body.get_i16();
                Msg::Row(
                    (0..n)
                        .map(|_| match body.get_i32() {
                            -1 => None,
                            len => {
                                let v = body.split_to(len as usize);
                                Some(String::from_utf8_lossy(&v).into_owned())
                            }
                        })
                        .collect(),
                )
            }
            'N' | 'E' => {
                let mut fields = Fields::new();
                while body[0] != 0 {
                    let code = body.get_u8() as char;
                    fields.insert(code, get_cstr(&mut body));
                }
                if kind == 'N' {
                    Msg::Notice(fields)
                } else {
                    Msg::Error(fields)
                }
            }
            'S' => {
                let k = get_cstr(&mut body);
                Msg::Parameter(k, get_cstr(&mut body))
            }
            't' => {
                let n = body.get_i16();
                Msg::ParameterTypes((0..n).map(|_| body.get_u32()).collect())
            }
            'Z' => Msg::Ready(body.get_u8() as char),
            'I' => Msg::EmptyQuery,
            's' => Msg::PortalSuspended,
            other => Msg::Other(other),
        })
    }
}

fn frame_len(buf: &[u8]) -> usize {
    u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize
}

fn put_cstr(buf: &mut BytesMut, s: &str) {
    buf.put_slice(s.as_bytes());
    buf.put_u8(0);
}

fn get_cstr(buf: &mut BytesMut) -> String {
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let s = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.advance((end + 1).min(buf.len()));
    s
}
