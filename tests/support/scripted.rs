//! A loopback server whose answers a test scripts, one request per connection, for the
//! tests that hold a preset against the real client library it names: the same server
//! answers the library and stormrig, so what differs is the clients alone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// One timeline per call, the call named by its path (`/CLIENT/CALL/...`): the server the
// clients that make many calls at once are compared on.

/// What the server answers to one attempt.
#[derive(Clone, Debug)]
pub enum Answer {
    /// A status with extra headers.
    Status(u16, Vec<(&'static str, &'static str)>),
    /// A status with `Retry-After` an HTTP-date this far ahead of the moment it is sent.
    DateAhead(u16, Duration),
    /// Close the connection with a TCP reset, no answer.
    Reset,
}

/// What the server saw of one call (keyed by `CLIENT/CALL`): arrival instants, and for
/// HTTP-date hints how far ahead each sent date was.
#[derive(Default, Debug)]
pub struct Seen {
    pub arrivals: Vec<Instant>,
    pub date_ahead: Vec<f64>,
}

pub type Log = Arc<Mutex<BTreeMap<String, Seen>>>;

/// The loopback server: one request per connection (`Connection: close`), answered by the
/// call's timeline.
pub async fn serve(listener: TcpListener, log: Log, timelines: Arc<BTreeMap<String, Vec<Answer>>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let (log, timelines) = (log.clone(), timelines.clone());
        tokio::spawn(async move {
            let _ = answer(stream, log, timelines).await;
        });
    }
}

/// Starts the per-call timeline server on loopback on `rt`: its base URL and its log.
pub fn start(
    rt: &tokio::runtime::Runtime,
    timelines: BTreeMap<String, Vec<Answer>>,
) -> (String, Log) {
    let log: Log = Arc::default();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    rt.spawn(serve(listener, log.clone(), Arc::new(timelines)));
    (base, log)
}

async fn answer(
    mut stream: TcpStream,
    log: Log,
    timelines: Arc<BTreeMap<String, Vec<Answer>>>,
) -> std::io::Result<()> {
    let Some(head) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let arrived = Instant::now();
    let mut parts = head.path().trim_start_matches('/').split('/');
    let key = format!(
        "{}/{}",
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("")
    );
    let case = key.split('/').nth(1).unwrap_or("").to_string();
    let attempt = {
        let mut log = log.lock().unwrap();
        let seen = log.entry(key.clone()).or_default();
        seen.arrivals.push(arrived);
        seen.arrivals.len()
    };
    let planned = timelines
        .get(&case)
        .and_then(|t| t.get(attempt - 1))
        .cloned();
    let (status, headers) = match planned {
        None => (200, vec![]),
        Some(Answer::Reset) => return reset(stream),
        Some(Answer::Status(code, h)) => (
            code,
            h.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        Some(Answer::DateAhead(code, ahead)) => {
            let now = SystemTime::now();
            let date = httpdate::fmt_http_date(now + ahead);
            // The date has whole seconds: what it really asks for is measured from now.
            let at = httpdate::parse_http_date(&date).unwrap();
            let ahead = at.duration_since(now).unwrap_or_default().as_secs_f64();
            log.lock()
                .unwrap()
                .get_mut(&key)
                .unwrap()
                .date_ahead
                .push(ahead);
            (code, vec![("retry-after".to_string(), date)])
        }
    };
    let body: &[u8] = if status == 200 {
        b"{}"
    } else {
        br#"{"error":{"message":"conformance test","type":"test"}}"#
    };
    write_answer(stream, status, &headers, body).await
}

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
