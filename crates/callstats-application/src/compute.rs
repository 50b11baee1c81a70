//! CPU work off the request threads. An answer's statistics, its JSON and its compressed forms
//! are computed on Tokio's blocking threads, at most `threads` at once, so the HTTP workers keep
//! answering health checks, cached answers and held days while a large aggregation runs; work
//! past the bound waits (asynchronously) for a thread.

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::single_flight::join_failure;

/// The bounded pool. Cheap to clone; clones share the bound.
#[derive(Clone)]
pub struct ComputePool {
    permits: Arc<Semaphore>,
}

impl ComputePool {
    /// At most `threads` pieces of work at once (0: one per core).
    #[must_use]
    pub fn new(threads: usize) -> Self {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        } else {
            threads
        };
        Self {
            permits: Arc::new(Semaphore::new(threads)),
        }
    }

    /// Runs `work` on a blocking thread once one of the pool's places is free; the place is
    /// held until the work ends, even if the caller stops waiting. `Err` with the panic's
    /// message when the work panicked.
    pub async fn run<T, F>(&self, work: F) -> Result<T, String>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| "the compute pool is closed".to_owned())?;
        // The work's lines name the request it is done for.
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _place = permit;
            span.in_scope(work)
        })
        .await
        .map_err(join_failure)
    }
}

#[cfg(test)]
mod tests {

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn work_runs_off_the_calling_thread_and_the_caller_keeps_running() {
        let pool = ComputePool::new(1);
        let (signal, wait) = std::sync::mpsc::channel();
        // The work waits for a signal that only the runtime's one thread can send: it arrives
        // only if the work is not on that thread.
        let work = pool.run(move || wait.recv_timeout(Duration::from_secs(10)).is_ok());
        let (received, ()) = tokio::join!(work, async move {
            tokio::task::yield_now().await;
            signal.send(()).unwrap();
        });
        assert_eq!(received, Ok(true));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_the_bound_runs_at_once() {
        let pool = ComputePool::new(2);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let works = (0..8).map(|_| {
            let (running, most) = (Arc::clone(&running), Arc::clone(&most));
            pool.run(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
                running.fetch_sub(1, Ordering::SeqCst);
            })
        });
        for done in futures::future::join_all(works).await {
            done.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_panic_is_an_error_with_its_message() {
        let pool = ComputePool::new(1);
        let failed: Result<(), String> = pool.run(|| panic!("exploded")).await;
        assert_eq!(failed, Err("exploded".to_owned()));
        assert_eq!(pool.run(|| 1).await, Ok(1), "the place is given back");
    }
}
