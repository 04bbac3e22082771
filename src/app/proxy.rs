//! `stormrig proxy`: the standalone fault-injecting proxy in front of a real upstream, and
//! `stormrig toxiproxy`: named proxies driven through Toxiproxy's API; both until SIGINT or
//! SIGTERM.

use std::path::Path;

use super::signals::shutdown_signal;
use super::{AppError, Exit};

pub(super) fn proxy(
    listen: std::net::SocketAddr,
    upstream: &str,
    faults: Option<&Path>,
    seed: u64,
    allow_remote: Option<&str>,
    control_token: Option<String>,
) -> Result<Exit, AppError> {
    use crate::server::proxy;
    if let Some(t) = &control_token {
        if t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AppError::bad(
                "--control-token: use at least 16 printable characters without spaces",
            ));
        }
    }
    use std::net::ToSocketAddrs;
    if !listen.ip().is_loopback() {
        return Err(AppError::bad(format!(
            "--listen {listen}: the proxy listens on loopback only (127.0.0.1 or [::1])"
        )));
    }
    let (host, port) = crate::scenario::validate::parse_url(upstream)
        .map_err(|e| AppError::bad(format!("--upstream {upstream}: {e}")))?;
    proxy::check_loopback(&host, allow_remote).map_err(AppError::bad)?;
    // Loopback and numeric hosts are connected to as read, never through a resolver; only a
    // name the user allowed with --allow-remote is looked up.
    let upstream_addr = match crate::scenario::host::Host::parse(&host).literal() {
        Some(ip) => std::net::SocketAddr::new(ip, port),
        None => (host.as_str(), port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                AppError::bad(format!("--upstream {upstream}: resolves to no address"))
            })?,
    };
    let faults = match faults {
        Some(p) => proxy::parse_faults_file(p).map_err(AppError::bad)?,
        None => Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    rt.block_on(async {
        let options = proxy::ProxyOptions {
            control_token,
            ..proxy::ProxyOptions::default()
        };
        let server = proxy::serve_standalone_with(listen, upstream_addr, faults, seed, options)
            .await
            .map_err(AppError::failed)?;
        eprintln!(
            "stormrig proxy: {} -> {upstream_addr}; faults: GET|POST http://{}/_stormrig/faults (JSON), metrics: GET http://{}/_stormrig/metrics, each with `Authorization: Bearer {}`",
            server.addr(),
            server.control_addr(),
            server.control_addr(),
            server.control_token()
        );
        shutdown_signal().await;
        let stats = server.shutdown().await;
        eprintln!(
            "stormrig proxy: {} arrivals, {} forwarded, peak in flight {}",
            stats.arrivals, stats.forwarded, stats.peak_in_flight
        );
        Ok(Exit::Ok)
    })
}

pub(super) fn toxiproxy(
    listen: std::net::SocketAddr,
    config: Option<&Path>,
    seed: u64,
    allow_remote: Option<String>,
) -> Result<Exit, AppError> {
    use crate::server::toxiproxy;
    if !listen.ip().is_loopback() {
        return Err(AppError::bad(format!(
            "--listen {listen}: the API listens on loopback only (127.0.0.1 or [::1])"
        )));
    }
    let populate = match config {
        Some(p) => Some((
            p,
            crate::input::read(p, crate::input::Kind::Scenario)
                .map_err(|e| AppError::bad(e.to_string()))?,
        )),
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    rt.block_on(async {
        let options = toxiproxy::Options { seed, allow_remote };
        let server = toxiproxy::serve(listen, options)
            .await
            .map_err(AppError::failed)?;
        if let Some((path, body)) = populate {
            if let Err(e) = server.populate(&body).await {
                server.shutdown().await;
                return Err(AppError::bad(format!("{}: {e}", path.display())));
            }
        }
        eprintln!(
            "stormrig toxiproxy: API on http://{} (Toxiproxy's routes: /proxies, /populate, /reset, /version)",
            server.addr()
        );
        shutdown_signal().await;
        server.shutdown().await;
        Ok(Exit::Ok)
    })
}
