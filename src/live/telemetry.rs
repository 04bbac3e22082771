//! What a live run tells the world while it runs and how it lines up with other clocks:
//! the run's identity and start ([`RunMeta`]), each config's figures so far
//! ([`snapshot`], shared with the progress display), Prometheus text on a loopback listener
//! (`--metrics-listen`) and one JSON line per config per second (`--events`).
//!
//! Only live runs carry any of this: the simulator's output depends on nothing but the
//! scenario and seed, so it stays byte-identical run after run.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::clock::Epoch;
use super::driver::ConfigRuntime;
use super::snapshot::{snapshot, Snapshot};
use crate::metrics::{RunMeta, RunResult};
use crate::server::TargetProbe;

/// SHA-256 of a scenario file's bytes, in hex, as `sha256sum` prints it.
pub fn scenario_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// RFC 3339 in UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// A run that starts at `epoch`: a fresh id (its start, to the second, and 32 random bits),
/// this host's name.
pub fn run_meta(epoch: &Epoch, scenario_sha256: Option<String>) -> RunMeta {
    let started_at = rfc3339(epoch.wall);
    let compact: String = humantime::format_rfc3339_seconds(epoch.wall)
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let token = crate::server::proxy::random_token();
    RunMeta {
        id: format!("{compact}-{}", &token[..8]),
        started_at,
        host: gethostname::gethostname().to_string_lossy().into_owned(),
        scenario_sha256,
    }
}

/// Puts the run's identity into its result and the absolute start of each second into its
/// time series.
pub fn stamp(result: &mut RunResult, meta: RunMeta, epoch: &Epoch) {
    for row in &mut result.timeseries {
        row.time = Some(rfc3339(epoch.wall + Duration::from_secs(row.second)));
    }
    result.run = Some(meta);
}

/// Where `--events` lines go.
#[derive(Debug, Clone)]
pub enum EventsTo {
    Stdout,
    /// A file the caller opened (it checked the path is none of the run's inputs, and opened
    /// a FIFO without blocking), named by `path` in messages.
    File {
        path: std::path::PathBuf,
        file: Arc<std::fs::File>,
    },
}

/// Telemetry a run was asked for.
#[derive(Debug, Clone, Default)]
pub struct TelemetryOptions {
    /// Serve Prometheus text here (a loopback address) while the run goes.
    pub metrics_listen: Option<SocketAddr>,
    pub events: Option<EventsTo>,
    /// Push the same text to a Pushgateway while the run goes and at its end.
    pub push: Option<super::push::PushOptions>,
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("--metrics-listen {addr}: only a loopback address is served (127.0.0.1, [::1])")]
    NotLoopback { addr: SocketAddr },
    #[error("--metrics-listen {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Push(#[from] super::push::PushError),
    #[error("--events {path}: {source}")]
    Events {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The running telemetry tasks; [`Telemetry::finish`] ends them.
pub struct Telemetry {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The events writer, which ends with the first failed write, if any.
    events: Option<(String, JoinHandle<Result<(), std::io::Error>>)>,
    /// The pusher, which ends with the final push's failure, if it failed.
    push: Option<JoinHandle<Option<super::push::PushError>>>,
}

/// What the tasks read.
#[derive(Clone)]
struct Sources {
    runtimes: Vec<Arc<ConfigRuntime>>,
    probes: Vec<TargetProbe>,
    meta: Arc<RunMeta>,
    scenario: Arc<str>,
}

impl Sources {
    /// The Prometheus text of every config's figures now.
    fn text(&self) -> String {
        metrics_text(&self.snapshots(), &self.meta, &self.scenario)
    }

    /// Every config's figures now, as metric families.
    fn families(&self) -> Vec<super::exposition::Family> {
        super::exposition::families(&self.snapshots(), &self.meta, &self.scenario)
    }

    fn snapshots(&self) -> Vec<Snapshot> {
        self.runtimes
            .iter()
            .zip(&self.probes)
            .map(|(rt, p)| snapshot(rt, p))
            .collect()
    }
}

impl Telemetry {
    /// Binds the metrics listener and opens the events file, then starts serving and
    /// writing; both end at [`Telemetry::finish`].
    pub async fn start(
        opts: &TelemetryOptions,
        runtimes: &[Arc<ConfigRuntime>],
        probes: Vec<TargetProbe>,
        meta: &RunMeta,
        scenario: &str,
        epoch: Epoch,
    ) -> Result<Telemetry, TelemetryError> {
        let (stop, stopped) = watch::channel(false);
        let sources = Sources {
            runtimes: runtimes.to_vec(),
            probes,
            meta: Arc::new(meta.clone()),
            scenario: scenario.into(),
        };
        let mut tasks = Vec::new();
        if let Some(addr) = opts.metrics_listen {
            if !addr.ip().is_loopback() {
                return Err(TelemetryError::NotLoopback { addr });
            }
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| TelemetryError::Bind { addr, source })?;
            tasks.push(tokio::spawn(serve_metrics(
                listener,
                sources.clone(),
                stopped.clone(),
            )));
        }
        let mut push = None;
        if let Some(p) = &opts.push {
            // A first push before any load: a receiver that is not there is found now.
            let mut pusher = super::push::Pusher::new(p.clone());
            pusher.push(&sources.meta.id, &sources.families()).await?;
            push = Some(tokio::spawn(push_while_running(
                pusher,
                sources.clone(),
                stopped.clone(),
            )));
        }
        let mut events = None;
        if let Some(to) = &opts.events {
            let (name, out): (String, Box<dyn Write + Send>) = match to {
                EventsTo::Stdout => ("-".into(), Box::new(std::io::stdout())),
                EventsTo::File { path, file } => {
                    let name = path.display().to_string();
                    let own = file.try_clone().map_err(|source| TelemetryError::Events {
                        path: name.clone(),
                        source,
                    })?;
                    (name, Box::new(own))
                }
            };
            let task = tokio::spawn(write_events(out, sources.clone(), epoch, stopped.clone()));
            events = Some((name, task));
        }
        Ok(Telemetry {
            stop,
            tasks,
            events,
            push,
        })
    }

    /// Stops serving and writing (the events of the seconds so far are all written); the
    /// events stream's failed write, if one failed, in words naming the stream.
    pub async fn finish(self) -> Option<String> {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        let pushed = match self.push {
            Some(task) => match task.await {
                Ok(None) => None,
                Ok(Some(e)) => Some(format!("{e}; the run's final figures were not pushed")),
                Err(e) => Some(format!("the pusher ended abnormally: {e}")),
            },
            None => None,
        };
        let written = Self::events_end(self.events).await;
        match (written, pushed) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }

    async fn events_end(
        events: Option<(String, JoinHandle<Result<(), std::io::Error>>)>,
    ) -> Option<String> {
        let (name, task) = events?;
        match task.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Some(format!(
                "--events {name}: the reader closed it (broken pipe); the lines after that were lost"
            )),
            Ok(Err(e)) => Some(format!(
                "--events {name}: cannot write: {e}; the lines from then on were lost"
            )),
            Err(e) => Some(format!("--events {name}: the writer ended abnormally: {e}")),
        }
    }
}

/// The Prometheus text exposition (0.0.4) of every config's figures so far.
pub fn metrics_text(snaps: &[Snapshot], meta: &RunMeta, scenario: &str) -> String {
    super::exposition::text(&super::exposition::families(snaps, meta, scenario))
}

/// Pushes every `every` until the run stops, then once more with the final figures. A push
/// that fails while the run goes is tried again at the next tick; the final one's failure
/// is the result.
async fn push_while_running(
    mut pusher: super::push::Pusher,
    sources: Sources,
    stopped: watch::Receiver<bool>,
) -> Option<super::push::PushError> {
    let mut tick = tokio::time::interval(pusher.every());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let _ = pusher.push(&sources.meta.id, &sources.families()).await;
            }
            _ = crate::server::shutdown_signal(stopped.clone()) => break,
        }
    }
    pusher
        .push(&sources.meta.id, &sources.families())
        .await
        .err()
}

async fn serve_metrics(listener: TcpListener, sources: Sources, stopped: watch::Receiver<bool>) {
    loop {
        let stream = tokio::select! {
            stream = crate::server::next_connection(&listener) => stream,
            _ = crate::server::shutdown_signal(stopped.clone()) => return,
        };
        let sources = sources.clone();
        let stop = stopped.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let sources = sources.clone();
                async move {
                    let (status, body) = if req.uri().path() == "/metrics" {
                        let text = sources.text();
                        (StatusCode::OK, text)
                    } else {
                        (
                            StatusCode::NOT_FOUND,
                            "stormrig serves GET /metrics\n".to_string(),
                        )
                    };
                    let mut r = Response::new(Full::new(Bytes::from(body)));
                    *r.status_mut() = status;
                    r.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static(
                            "text/plain; version=0.0.4; charset=utf-8",
                        ),
                    );
                    Ok::<_, std::convert::Infallible>(r)
                }
            });
            let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = crate::server::shutdown_signal(stop.clone()) => {}
            }
        });
    }
}

/// One `--events` line.
#[derive(Serialize)]
struct Event<'a> {
    time: String,
    run: &'a str,
    second: u64,
    #[serde(flatten)]
    figures: &'a Snapshot,
}

/// Writes one line per config at the end of every second of the run, and flushes it; when
/// the run ends inside a second, that second's line carries the final figures and the
/// moment they were read. The first failed write (a full disk, a closed pipe) ends the
/// stream, not the run, and is returned: the run's exit code must say lines were lost.
async fn write_events(
    mut out: Box<dyn Write + Send>,
    sources: Sources,
    epoch: Epoch,
    stopped: watch::Receiver<bool>,
) -> Result<(), std::io::Error> {
    for second in 1u64.. {
        let end = Duration::from_secs(second);
        let last = tokio::select! {
            // A second that ended as the run did is written as a whole one.
            biased;
            _ = tokio::time::sleep_until(epoch.at(end)) => false,
            _ = crate::server::shutdown_signal(stopped.clone()) => true,
        };
        let at = if last { epoch.elapsed() } else { end };
        if last && at <= end.saturating_sub(Duration::from_secs(1)) {
            return Ok(()); // nothing of this second ran
        }
        let time = rfc3339(epoch.wall + at);
        let mut lines = Vec::new();
        for s in sources.snapshots() {
            let e = Event {
                time: time.clone(),
                run: &sources.meta.id,
                second,
                figures: &s,
            };
            if serde_json::to_writer(&mut lines, &e).is_ok() {
                lines.push(b'\n');
            }
        }
        out.write_all(&lines).and_then(|()| out.flush())?;
        if last {
            return Ok(());
        }
    }
    Ok(())
}
