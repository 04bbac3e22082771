//! SIGINT and SIGTERM: awaited by the commands that run on tokio, turned into a flag for
//! the simulator, which runs without it.

use super::AppError;

/// A flag that SIGINT or SIGTERM turns true, for work that runs without tokio (the
/// simulator). The handlers are in place when this returns, so a signal from then on stops
/// the work (which writes partial reports) instead of killing the process.
pub(super) fn signal_flag() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, AppError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(AppError::failed)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let set = std::sync::Arc::clone(&flag);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(async move {
                let mut stopped = Box::pin(shutdown_signal());
                // Polled once, the handlers are registered; then say so and wait.
                let already = poll_once(stopped.as_mut()).await;
                let _ = ready_tx.send(());
                if !already {
                    stopped.await;
                }
                set.store(true, Ordering::SeqCst);
            })
        })
        .map_err(AppError::failed)?;
    let _ = ready_rx.recv();
    Ok(flag)
}

/// Polls `fut` once (to run its set-up) without waiting for it; true if it completed.
async fn poll_once<F: std::future::Future + Unpin>(mut fut: F) -> bool {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::pin::Pin::new(&mut fut).poll(cx).is_ready())
    })
    .await
}

/// Waits for SIGINT or SIGTERM.
pub(super) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
