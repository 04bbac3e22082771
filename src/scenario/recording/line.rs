//! One request of an access log as its parsers read it, whatever the format, and the
//! request line they share (a leaf: the nginx and proxy parsers both use it).

use super::{at, RecordingError};

/// One parsed line: the instant (for combined, its second), request target, and who sent
/// it and how it ended (for folding retries).
pub struct Line<'a> {
    pub t: i128,
    pub path: &'a str,
    pub client: String,
    pub status: u16,
    pub key: Option<String>,
}

/// The path of a request line `METHOD target PROTOCOL` (nginx logs `-` for a connection
/// that sent none, which is no request to replay).
pub fn request_path(n: usize, request: &str) -> Result<&str, RecordingError> {
    let mut parts = request.split(' ');
    match (parts.next(), parts.next()) {
        (Some(m), Some(p)) if !m.is_empty() && p.starts_with('/') => Ok(p),
        _ => Err(at(
            n,
            "request",
            format!("`{request}` is not a request line such as `GET /api/orders HTTP/1.1`"),
        )),
    }
}
