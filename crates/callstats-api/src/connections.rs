//! The connections the server holds, and which one gives way when it holds as many as its bound
//! (`CALLSTATS_MAX_CONNECTIONS`, kept below the file limit).
//!
//! A connection costs a file whether or not its client ever asks anything. Left alone, a flood
//! of connections that send nothing would fill the bound, and every new connection, a health
//! check's included, would wait in the listen backlog until the idle ones reach their 5 s head
//! timeout. So, as nginx reuses its idle connections when it runs out, a connection that comes
//! in at the bound makes the server close one that is doing nothing: the oldest that has not
//! sent a byte yet, or else the one that has been idle the longest between two requests. A
//! connection whose request is being read or answered is never chosen, and none is closed
//! below the bound.
//!
//! Closing is a read that ends: the connection's reads give end of file, as if its client had
//! closed its side, and actix-http ends it after writing anything it still owes (half-closed
//! connections are allowed). Once the server starts a graceful stop, every connection is closed
//! that way as soon as it is idle, so the stop waits only for the answers being written.
//!
//! `cargo xtask hostile`, 2,000 connections that send nothing under `ulimit -n 1024` (a bound of
//! 896): the slowest `/healthz` 2 ms and a new connection's `/ping` 2 ms, where they waited 5.12 s
//! and 4.11 s in the backlog before. Choosing the one that gives way scans the open connections
//! (only at the bound); a request pays two atomic stores of its phase, nothing seen by `cargo
//! xtask instructions` (52,686 against 52,967 for the build before).

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use actix_rt::net::TcpStream;
use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a connection is doing, in the low two bits of [`Slot::state`]; the rest is when it
/// started doing it (a tick of [`Connections::clock`]).
const FRESH: u64 = 0;
const BUSY: u64 = 1;
const IDLE: u64 = 2;
const PHASE: u64 = 0b11;

/// Why a connection was closed, for `callstats_connections_shed_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Shed {
    /// It had not sent a byte.
    Fresh,
    /// It was idle between two requests.
    Idle,
}

impl Shed {
    const fn label(self) -> &'static str {
        match self {
            Self::Fresh => "fresh",
            Self::Idle => "idle",
        }
    }
}

/// One connection as the registry sees it.
struct Slot {
    /// The phase and the tick it began at.
    state: AtomicU64,
    /// Set when the connection is to be closed: its reads give end of file from then on.
    shed: AtomicBool,
    /// Its reader, woken when it is shed.
    reader: AtomicWaker,
}

/// The open connections, all workers together.
#[derive(Default)]
struct Open {
    slots: HashMap<u64, Arc<Slot>>,
    /// Those not shed: shed ones stay in `slots` until their connection ends.
    live: usize,
    next_id: u64,
}

impl Open {
    /// Closes the connection of `slot`: its pending read, if any, is woken to see end of file.
    /// Only under the registry's lock, so that `live` counts exactly the slots not shed.
    fn shed(&mut self, slot: &Slot) {
        if !slot.shed.swap(true, Ordering::AcqRel) {
            self.live = self.live.saturating_sub(1);
        }
        slot.reader.wake();
    }
}

/// The registry of every connection the server holds.
pub(crate) struct Connections {
    /// Live connections at which a new one makes one give way.
    bound: usize,
    open: Mutex<Open>,
    /// Orders the phases' starts (which connection has been fresh or idle the longest).
    clock: AtomicU64,
    /// Set once the server stops: idle connections are closed at once.
    stopping: AtomicBool,
}

impl Connections {
    /// A registry that keeps at most `bound` connections live (at least one).
    pub(crate) fn new(bound: usize) -> Self {
        Self {
            bound: bound.max(1),
            open: Mutex::new(Open::default()),
            clock: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) << 2
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes in a new connection; at the bound, the one that gives way is closed first.
    pub(crate) fn admit(self: &Arc<Self>, io: TcpStream) -> Tracked {
        let slot = Arc::new(Slot {
            state: AtomicU64::new(self.tick() | FRESH),
            shed: AtomicBool::new(false),
            reader: AtomicWaker::new(),
        });
        let (id, shed) = {
            let mut open = self.lock();
            let shed = if open.live >= self.bound {
                Self::give_way(&mut open)
            } else {
                None
            };
            let id = open.next_id;
            open.next_id = open.next_id.wrapping_add(1);
            open.slots.insert(id, Arc::clone(&slot));
            open.live += 1;
            if self.stopping.load(Ordering::Acquire) {
                open.shed(&slot);
            }
            (id, shed)
        };
        if let Some(reason) = shed {
            metrics::counter!("callstats_connections_shed_total", "reason" => reason.label())
                .increment(1);
        }
        Tracked {
            io,
            slot,
            id,
            connections: Arc::clone(self),
        }
    }

    /// Sheds the connection fresh the longest, or else the one idle the longest.
    fn give_way(open: &mut Open) -> Option<Shed> {
        let mut oldest: Option<((Shed, u64), Arc<Slot>)> = None;
        for slot in open.slots.values() {
            if slot.shed.load(Ordering::Acquire) {
                continue;
            }
            let state = slot.state.load(Ordering::Acquire);
            // Fresh ones first (`Shed` orders them first), each kind the oldest first.
            let rank = match state & PHASE {
                FRESH => (Shed::Fresh, state >> 2),
                IDLE => (Shed::Idle, state >> 2),
                _ => continue,
            };
            if oldest.as_ref().is_none_or(|(best, _)| rank < *best) {
                oldest = Some((rank, Arc::clone(slot)));
            }
        }
        let ((reason, _), slot) = oldest?;
        open.shed(&slot);
        Some(reason)
    }

    /// The server is stopping: idle and fresh connections are closed now, the others once
    /// their answer is written.
    pub(crate) fn stop(&self) {
        let mut open = self.lock();
        self.stopping.store(true, Ordering::Release);
        let idle: Vec<Arc<Slot>> = open
            .slots
            .values()
            .filter(|slot| slot.state.load(Ordering::Acquire) & PHASE != BUSY)
            .cloned()
            .collect();
        for slot in idle {
            open.shed(&slot);
        }
    }

    fn close(&self, id: u64) {
        let mut open = self.lock();
        if let Some(slot) = open.slots.remove(&id)
            && !slot.shed.load(Ordering::Acquire)
        {
            open.live = open.live.saturating_sub(1);
        }
    }

    /// Connections open and not shed.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.lock().live
    }
}

/// A client connection counted in the registry; it leaves it when dropped.
pub(crate) struct Tracked {
    io: TcpStream,
    slot: Arc<Slot>,
    id: u64,
    connections: Arc<Connections>,
}

impl Tracked {
    /// A byte arrived: a request is being read or answered.
    fn busy(&self) {
        let state = self.slot.state.load(Ordering::Relaxed);
        if state & PHASE != BUSY {
            self.slot
                .state
                .store(state & !PHASE | BUSY, Ordering::Release);
        }
    }

    /// Passes on a write's outcome. Bytes that went out after a request came in make the
    /// connection idle until the next one (a pipelined request already read counts as idle;
    /// shedding it only ends the connection after its answer).
    fn written(&self, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if matches!(written, Poll::Ready(Ok(n)) if n > 0)
            && self.slot.state.load(Ordering::Relaxed) & PHASE == BUSY
        {
            self.slot
                .state
                .store(self.connections.tick() | IDLE, Ordering::Release);
            if self.connections.stopping.load(Ordering::Acquire) {
                self.connections.lock().shed(&self.slot);
            }
        }
        written
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.connections.close(self.id);
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.slot.shed.load(Ordering::Acquire) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Pending => {
                this.slot.reader.register(cx.waker());
                // Shed between the check above and the registration: end now.
                if this.slot.shed.load(Ordering::Acquire) {
                    return Poll::Ready(Ok(()));
                }
                Poll::Pending
            }
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                this.busy();
                Poll::Ready(Ok(()))
            }
            ready => ready,
        }
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        this.written(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.written(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use actix_rt::net::TcpListener;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// A connected pair: the client's end, and the server's end admitted to `connections`.
    async fn connect(
        listener: &TcpListener,
        connections: &Arc<Connections>,
    ) -> (TcpStream, Tracked) {
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, connections.admit(server))
    }

    /// Whether the server's end now reads end of file without waiting.
    async fn reads_end(tracked: &mut Tracked) -> bool {
        let mut buffer = [0_u8; 16];
        poll_fn(|cx| {
            let mut read = ReadBuf::new(&mut buffer);
            Poll::Ready(match Pin::new(&mut *tracked).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => read.filled().is_empty(),
                _ => false,
            })
        })
        .await
    }

    /// A request read and answered over `tracked`.
    async fn serve_one(client: &mut TcpStream, tracked: &mut Tracked) {
        client.write_all(b"GET").await.unwrap();
        let mut buffer = [0_u8; 3];
        tracked.read_exact(&mut buffer).await.unwrap();
        tracked.write_all(b"200").await.unwrap();
    }

    #[tokio::test]
    async fn below_the_bound_nothing_is_shed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let connections = Arc::new(Connections::new(3));
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(connect(&listener, &connections).await);
        }
        assert_eq!(connections.live(), 3);
        for (_, tracked) in &mut held {
            assert!(!reads_end(tracked).await);
        }
        drop(held.pop());
        assert_eq!(connections.live(), 2);
    }

    /// A request read over `tracked` and not answered yet.
    async fn read_one(client: &mut TcpStream, tracked: &mut Tracked) {
        client.write_all(b"GET").await.unwrap();
        let mut buffer = [0_u8; 3];
        tracked.read_exact(&mut buffer).await.unwrap();
    }

    /// A connection idle after one answer, one whose request was read and not answered, and
    /// one that sent nothing, in that order; and their clients.
    struct Three {
        clients: [TcpStream; 3],
        idle: Tracked,
        busy: Tracked,
        silent: Tracked,
    }

    /// A listener, and a registry of `bound` connections.
    async fn registry(bound: usize) -> (TcpListener, Arc<Connections>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        (listener, Arc::new(Connections::new(bound)))
    }

    async fn three(listener: &TcpListener, connections: &Arc<Connections>) -> Three {
        let (mut idle_client, mut idle) = connect(listener, connections).await;
        serve_one(&mut idle_client, &mut idle).await;
        let (mut busy_client, mut busy) = connect(listener, connections).await;
        read_one(&mut busy_client, &mut busy).await;
        let (silent_client, silent) = connect(listener, connections).await;
        Three {
            clients: [idle_client, busy_client, silent_client],
            idle,
            busy,
            silent,
        }
    }

    #[tokio::test]
    async fn at_the_bound_the_oldest_silent_connection_gives_way_then_the_longest_idle() {
        let (listener, connections) = registry(3).await;
        let Three {
            clients,
            mut idle,
            mut busy,
            mut silent,
        } = three(&listener, &connections).await;

        // At the bound: the connection that sent nothing gives way, though the idle one is
        // older.
        let (mut newer_client, mut newer) = connect(&listener, &connections).await;
        assert!(reads_end(&mut silent).await);
        assert!(!reads_end(&mut idle).await);
        assert!(!reads_end(&mut busy).await);
        assert!(!reads_end(&mut newer).await);
        assert_eq!(connections.live(), 3);
        drop(silent);

        // The newer one asks: now the idle one is the only one doing nothing, and it goes.
        read_one(&mut newer_client, &mut newer).await;
        let (mut last_client, mut last) = connect(&listener, &connections).await;
        assert!(reads_end(&mut idle).await);
        assert!(!reads_end(&mut busy).await);
        assert!(!reads_end(&mut newer).await);
        assert!(!reads_end(&mut last).await);
        drop(idle);

        // Every other one is being answered: none gives way, the new one is taken past the
        // bound (actix's own bound then holds the rest in the backlog).
        read_one(&mut last_client, &mut last).await;
        let (_past_client, mut past) = connect(&listener, &connections).await;
        assert_eq!(connections.live(), 4);
        assert!(!reads_end(&mut busy).await);
        assert!(!reads_end(&mut newer).await);
        assert!(!reads_end(&mut past).await);
        let shed = connections.lock().slots.len();
        assert_eq!(shed, 4, "the shed connections leave when they end");
        drop(clients);
    }

    #[tokio::test]
    async fn a_stop_closes_what_is_idle_now_and_the_rest_once_answered() {
        let (listener, connections) = registry(10).await;
        let mut held = three(&listener, &connections).await;

        connections.stop();
        assert_eq!(connections.live(), 1, "only the one being answered");
        assert!(reads_end(&mut held.idle).await);
        assert!(reads_end(&mut held.silent).await);
        assert!(!reads_end(&mut held.busy).await);
        held.busy.write_all(b"200").await.unwrap();
        assert!(
            reads_end(&mut held.busy).await,
            "closed once its answer was written"
        );
        assert_eq!(connections.live(), 0);
        let (_late_client, mut late) = connect(&listener, &connections).await;
        assert_eq!(connections.live(), 0);
        assert!(
            reads_end(&mut late).await,
            "taken in after the stop: closed at once"
        );
        drop(held);
    }
}
