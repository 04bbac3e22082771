//! Independent tasks spread over threads, results in task order: the simulator's configs,
//! a sweep's points. Each task is deterministic on its own, so the assembled output is the
//! same byte for byte whatever the thread count or the order the threads finished in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f(0..tasks)` on `jobs` threads (0 = every core) and returns the results in task
/// order, whatever order the threads finished in. One job runs on the calling thread (its
/// CPU time is the caller's, as `bench sim` measures it).
pub fn parallel<T: Send>(tasks: usize, jobs: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    if jobs == 1 || tasks <= 1 {
        return (0..tasks).map(f).collect();
    }
    let jobs = if jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        jobs
    }
    .min(tasks.max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..tasks).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= tasks {
                    break;
                }
                let r = f(i);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every task ran"))
        .collect()
}
