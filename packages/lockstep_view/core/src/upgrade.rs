//! The WebSocket version of an upgrade request, checked before tungstenite reads the request: tungstenite
//! drops a connection that asks for any version but 13 without answering, where RFC 6455 (4.2.2) says to
//! answer `426 Upgrade Required` with `Sec-WebSocket-Version: 13`, so the client learns what to speak. The
//! request head is read here (at most [`MAX_HEAD`] bytes), checked, and handed on to tungstenite with the
//! bytes already read ([`Rewind`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

/// The largest request head read (bytes); a longer one is dropped.
pub const MAX_HEAD: usize = 16 * 1024;
/// The WebSocket protocol version of RFC 6455, the only one there is.
pub const VERSION: &str = "13";

/// A stream that first gives back the bytes already read from it.
pub struct Rewind<S> {
    head: Vec<u8>,
    read: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read < self.head.len() {
            let n = buf.remaining().min(self.head.len() - self.read);
            let start = self.read;
            buf.put_slice(&self.head[start..start + n]);
            self.read += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The `Sec-WebSocket-Version` of a request head (header names are case-insensitive), trimmed.
pub fn version_of(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    text.split("\r\n").skip(1).find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("sec-websocket-version")
            .then(|| value.trim().to_owned())
    })
}

/// Read the request head from `stream`; `None` when the connection is answered here (a version other than
/// 13: 426) or dropped (closed, or a head over [`MAX_HEAD`]), else the stream with the head to read again.
pub async fn check_version<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) -> Option<Rewind<S>> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return None;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let version = version_of(&head);
    if version.as_deref() == Some(VERSION) {
        return Some(Rewind {
            head,
            read: 0,
            inner: stream,
        });
    }
    let shown: String = version
        .unwrap_or_else(|| "none".into())
        .chars()
        .take(20)
        .collect();
    let body = format!("WebSocket version {shown} is not supported: this server speaks version {VERSION}\n");
    let answer = format!(
        "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: {VERSION}\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_header_in_any_case() {
        let head = b"GET / HTTP/1.1\r\nHost: x\r\nsec-websocket-VERSION:  13 \r\n\r\n";
        assert_eq!(version_of(head).as_deref(), Some("13"));
        assert_eq!(version_of(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"), None);
    }
}
