//! The servers' log writer: request threads append their lines to one shared buffer, and a
//! thread of its own writes the buffer out in batches.
//!
//! Unlike a queue with a message per line (tracing-appender), a line costs its writer a copy
//! under an uncontended lock and nothing else: the writer thread is woken once per batch (when
//! the buffer stops being empty, or grows past [`WAKE_AT`]), not once per line, so a server
//! under load does not pay a thread wake-up and a context switch for every request it logs.
//!
//! Measured (`cargo xtask load`, cached /operators against the bare baseline, info level, a
//! line per request, two runs each): 0.87 and 0.81 with this writer, 0.74 and 0.71 with
//! tracing-appender's lossless non-blocking writer (the 0.71 with a 64 KiB buffer before
//! stderr, so the cost is the per-line wake-up, not the write); 0.92 with the line switched
//! off. Hand code kept for those 0.07 to 0.16.
//!
//! No line is dropped: past [`MAX_PENDING`] bytes, a request thread waits until the writer has
//! taken the buffer. Lines appear at most [`GATHER`] after they are written, and everything
//! pending is written when the [`LogGuard`] is dropped.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long the writer thread lets lines gather after the first one of a batch.
const GATHER: Duration = Duration::from_millis(10);
/// Pending bytes that wake the writer thread before [`GATHER`] is over.
const WAKE_AT: usize = 256 * 1024;
/// Pending bytes past which request threads wait for the writer (backpressure, not loss).
const MAX_PENDING: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    stopping: bool,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// Signalled when the buffer stops being empty, grows past [`WAKE_AT`], or on stop.
    filled: Condvar,
    /// Signalled when the writer has taken the buffer.
    drained: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A thread that panicked while appending left at worst a partial line: keep logging.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The [`MakeWriter`] handed to the subscriber: every write appends to the shared buffer.
#[derive(Clone)]
pub struct BatchWriter {
    shared: Arc<Shared>,
}

/// Stops the writer thread when dropped, after it has written everything pending.
#[must_use = "dropping the guard stops the log writer"]
pub struct LogGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the writer thread over `sink`.
pub fn spawn<W: Write + Send + 'static>(sink: W) -> io::Result<(BatchWriter, LogGuard)> {
    let shared = Arc::new(Shared::default());
    let thread = std::thread::Builder::new()
        .name("callstats-log".to_owned())
        .spawn({
            let shared = Arc::clone(&shared);
            move || write_batches(&shared, sink)
        })?;
    Ok((
        BatchWriter {
            shared: Arc::clone(&shared),
        },
        LogGuard {
            shared,
            thread: Some(thread),
        },
    ))
}

fn write_batches<W: Write>(shared: &Shared, mut sink: W) {
    let mut batch = Vec::new();
    loop {
        let mut pending = shared.lock();
        while pending.bytes.is_empty() && !pending.stopping {
            pending = shared
                .filled
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if !pending.stopping {
            pending = shared
                .filled
                .wait_timeout_while(pending, GATHER, |p| p.bytes.len() < WAKE_AT && !p.stopping)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        std::mem::swap(&mut pending.bytes, &mut batch);
        let stopping = pending.stopping;
        drop(pending);
        shared.drained.notify_all();
        // Nowhere to report a failing stderr: the lines are dropped, the server goes on.
        let _ = sink.write_all(&batch).and_then(|()| sink.flush());
        batch.clear();
        if batch.capacity() > MAX_PENDING {
            batch = Vec::new();
        }
        if stopping && shared.lock().bytes.is_empty() {
            return;
        }
    }
}

impl Write for &BatchWriter {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        let mut pending = self.shared.lock();
        while pending.bytes.len() >= MAX_PENDING && !pending.stopping {
            pending = self
                .shared
                .drained
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let before = pending.bytes.len();
        pending.bytes.extend_from_slice(line);
        let after = pending.bytes.len();
        drop(pending);
        if before == 0 || (before < WAKE_AT && after >= WAKE_AT) {
            self.shared.filled.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchWriter {
    type Writer = &'a Self;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.filled.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    /// A sink the test can read while the writer thread owns it.
    #[derive(Clone, Default)]
    struct Sink {
        bytes: Arc<Mutex<Vec<u8>>>,
        writes: Arc<Mutex<usize>>,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.bytes.lock().unwrap().extend_from_slice(buf);
            *self.writes.lock().unwrap() += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_of_every_thread_is_written_whole_and_in_each_threads_order() {
        let sink = Sink::default();
        let (writer, guard) = spawn(sink.clone()).unwrap();
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let writer = writer.clone();
                scope.spawn(move || {
                    for n in 0..20_000 {
                        let line = format!("thread {thread} line {n}\n");
                        (&writer).write_all(line.as_bytes()).unwrap();
                    }
                });
            }
        });
        drop(guard);
        let text = String::from_utf8(sink.bytes.lock().unwrap().clone()).unwrap();
        let mut next = [0_usize; 4];
        for line in text.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            let (thread, n): (usize, usize) =
                (words[1].parse().unwrap(), words[3].parse().unwrap());
            assert_eq!(n, next[thread], "{line}");
            next[thread] += 1;
        }
        assert_eq!(next, [20_000; 4]);
        // Batched: far fewer writes to the sink than lines.
        assert!(*sink.writes.lock().unwrap() < 80_000 / 10);
    }

    #[test]
    fn a_line_reaches_the_sink_without_waiting_for_the_guard() {
        let sink = Sink::default();
        let (writer, _guard) = spawn(sink.clone()).unwrap();
        (&writer).write_all(b"ready\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while sink.bytes.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the line was never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(*sink.bytes.lock().unwrap(), b"ready\n");
    }

    #[test]
    fn a_writer_past_the_bound_waits_for_the_writer_thread_instead_of_dropping_lines() {
        let sink = Sink::default();
        let (writer, guard) = spawn(sink.clone()).unwrap();
        let line = vec![b'x'; 64 * 1024];
        let lines = 3 * MAX_PENDING / line.len();
        for _ in 0..lines {
            (&writer).write_all(&line).unwrap();
            assert!(writer.shared.lock().bytes.len() <= MAX_PENDING + line.len());
        }
        drop(guard);
        assert_eq!(sink.bytes.lock().unwrap().len(), lines * line.len());
    }
}
