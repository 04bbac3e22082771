//! A loopback server whose answers a test scripts, one request per connection, for the
//! tests that hold a preset against the real client library it names: the same server
//! answers the library and stormrig, so what differs is the clients alone.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The head of one request (request line and headers, as text), its body read and dropped.
pub struct Head(pub String);

impl Head {
    /// The request target (path and query).
    pub fn path(&self) -> &str {
        self.0.split_whitespace().nth(1).unwrap_or("/")
    }

    /// The value of header `name` (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.0.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Reads one request's head and its `content-length` body; `None` when the client closed
/// the connection before a whole head.
pub async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Head>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = Head(String::from_utf8_lossy(&buf[..head_end]).to_string());
    let length: usize = head
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(head))
}

/// Answers `status` with `headers` and a JSON `body`, and closes the connection.
pub async fn write_answer(
    mut stream: TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    stream.write_all(out.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

/// Closes the connection with a TCP reset and no answer, as a crashed server's.
pub fn reset(stream: TcpStream) -> std::io::Result<()> {
    // A zero linger makes the close a RST; it does not block the thread (the deprecation's
    // concern is a non-zero linger).
    #[allow(deprecated)]
    stream.set_linger(Some(Duration::ZERO))?;
    drop(stream);
    Ok(())
}
